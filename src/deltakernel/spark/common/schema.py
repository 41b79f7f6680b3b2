"""Delta <-> Spark schemas (and Arrow tables Spark accepts), Spark-readable paths, options.

Delta's schema string is Spark's `StructType.json()` format, so conversion goes through JSON: exact for
every type both sides share (timestamp_ntz, variant, nested types), with the metadata we choose to keep.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...errors import DeltaError
from ...kernel.schema.collations import COLLATIONS_KEY
from ...kernel.schema.column_mapping import ID_KEY
from ...kernel.schema.geospatial import parse_geo_type
from ...kernel.schema.types import StructType, parse_schema_string, schema_to_json
from ...storage import Storage
from ...storage.local import LocalStorage

_GLOB = re.compile(r"([\[\]{}*?\\])")


def _strip(obj: Any, field_ids: bool) -> Any:
    """A type's JSON without Delta metadata but column comments; with `field_ids`, fields carry Spark's
    `parquet.field.id`."""
    if isinstance(obj, dict):
        t = obj.get("type")
        if t == "struct":
            fields = []
            for f in obj["fields"]:
                meta: dict[str, Any] = {}
                if "comment" in (f.get("metadata") or {}):  # column comments show in Spark's schema
                    meta["comment"] = f["metadata"]["comment"]
                if COLLATIONS_KEY in (f.get("metadata") or {}):  # Spark's own key: collated StringType
                    meta[COLLATIONS_KEY] = f["metadata"][COLLATIONS_KEY]
                if field_ids and ID_KEY in (f.get("metadata") or {}):
                    meta["parquet.field.id"] = int(f["metadata"][ID_KEY])
                fields.append({"name": f["name"], "type": _strip(f["type"], field_ids),
                               "nullable": f.get("nullable", True), "metadata": meta})
            return {"type": "struct", "fields": fields}
        if t == "array":
            return {**obj, "elementType": _strip(obj["elementType"], field_ids)}
        if t == "map":
            return {**obj, "keyType": _strip(obj["keyType"], field_ids),
                    "valueType": _strip(obj["valueType"], field_ids)}
    if isinstance(obj, str) and parse_geo_type(obj) is not None:
        return "binary"  # geometry/geography reach Spark as their WKB bytes (docs/decisions.md)
    return obj


def to_spark_schema(schema: StructType, field_ids: bool = False) -> Any:
    """A pyspark StructType for a Delta schema (Delta metadata dropped)."""
    from pyspark.sql.types import StructType as SparkStruct

    return SparkStruct.fromJson(_strip(json.loads(schema_to_json(schema)), field_ids))


def to_spark_type(schema: StructType, name: str) -> Any:
    return to_spark_schema(schema)[schema.field(name).name].dataType


def from_spark_schema(spark_schema: Any) -> StructType:
    """A Delta StructType for a pyspark StructType (column comments etc. kept as field metadata)."""
    return parse_schema_string(spark_schema.json())


def catalog_schema_json(schema: StructType) -> str:
    """The schema Spark's catalog shows: the table's columns with comments, no Delta metadata."""
    return str(to_spark_schema(schema).json())


def spark_compatible(table: pa.Table) -> pa.Table:
    """Arrow -> Spark conversion wants plain string/binary (no views or large types)."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t, True))
    return table.cast(pa.schema(fields)) if [f.type for f in fields] != table.schema.types else table


def spark_path(storage: Storage, key: str) -> str:
    """A path Spark's Hadoop filesystem layer reads for a storage key (glob characters escaped)."""
    if isinstance(storage, LocalStorage):
        raw = "file://" + storage.full_uri(key)
    else:
        raw = f"{storage.root_uri.rstrip('/')}/{key}"
        if raw.startswith("s3://"):
            raw = "s3a://" + raw[len("s3://"):]
    return _GLOB.sub(r"\\\1", raw)


def table_uri(path: str) -> str:
    """Spark-style table locations (`file:/x`, `s3a://`) as deltakernel storage URIs."""
    if path.startswith("file:"):
        import urllib.parse

        return urllib.parse.unquote(urllib.parse.urlparse(path).path)
    return path


class Options(dict):  # type: ignore[type-arg]
    """Case-insensitive string options, as Spark treats data source options."""

    def __init__(self, raw: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        for k, v in (raw or {}).items():
            if v is not None:
                self[k] = v

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key.lower(), _to_str(value))

    def __getitem__(self, key: str) -> Any:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)

    def flag(self, key: str) -> bool:
        return str(self.get(key, "false")).strip().lower() == "true"

    def int(self, key: str) -> int | None:
        v = self.get(key)
        return int(v) if v is not None and str(v).strip() != "" else None


def table_path(opts: Options) -> str:
    """The table URI of a data source's `path` option (required)."""
    path = opts.get("path")
    if not path:
        raise DeltaError("a Delta table path is needed: load(path) or OPTIONS (path '...')")
    return table_uri(str(path))


def storage_options(opts: Options) -> dict[str, str] | None:
    """Object-store credentials passed as options with deltalake's upper-case names (AWS_*, AZURE_*...), and a
    Unity Catalog's URL and token (`uc://` tables opened in Spark's workers: streaming/routing.py)."""
    from ...unity.config import is_uc_option

    picked = {k.upper(): v for k, v in opts.items()
              if k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_")) or is_uc_option(k)}
    return picked or None


def _to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["Options", "catalog_schema_json", "from_spark_schema", "spark_compatible", "spark_path", "storage_options",
           "table_path", "table_uri", "to_spark_schema", "to_spark_type"]
