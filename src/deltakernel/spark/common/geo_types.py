"""Delta geometry / geography columns as Spark's own `GeometryType` / `GeographyType` (pyspark >= 4.3).

Why a module of its own: whether a Delta `geometry(<crs>)` column reaches Spark as its type or as its WKB bytes
depends on the pyspark release, the session (Spark keeps its geospatial types behind
`spark.sql.geospatial.enabled`) and the CRS (Spark names only a few: `OGC:CRS84`, `EPSG:3857`, `SRID:0`);
reads, writes and tests ask that one question here.

- Reads keep the Parquet scan in binary (what every deltakernel-written and delta-spark-written file holds, with
  or without Parquet's GEOMETRY logical type) and turn the top-level columns into Spark values in the scan's
  Project (`st_geomfromwkb(wkb, srid)` / `st_geogfromwkb(wkb)`): the same on classic and Connect, no reader
  conf, and DML jobs - which read the same files without that Project - keep moving bytes.
- Writes take Spark's Arrow form of a geospatial value (`struct<srid: int32, wkb: binary>`, pyspark's
  `to_arrow_type`) back to the WKB column the kernel writer stores (`wkb_batches`), so Spark geometry columns
  are written as the protocol's types with the Parquet logical type and bounding-box statistics.
docs/decisions.md, "Spark's geometry and geography types".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.schema.geospatial import GeoType, parse_geo_type
from ...kernel.schema.types import DataType, StructType

#: Spark's switch for its geospatial types and ST functions, and its value when unset (Spark 4.3's default)
GEOSPATIAL_CONF = "spark.sql.geospatial.enabled"
GEOSPATIAL_DEFAULT = "true"
#: the first pyspark whose Spark reads and writes geospatial columns end to end (4.1 has the types, its Parquet
#: writer none; delta-spark enables its own geospatial support on 4.2+; 4.3 is the release tested here)
MIN_PYSPARK = (4, 3)


def pyspark_version() -> tuple[int, int]:
    import pyspark

    major, minor = [*pyspark.__version__.split("."), "0"][:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def pyspark_has_geo_types() -> bool:
    """This pyspark release has the types and a Spark that reads and writes them (MIN_PYSPARK)."""
    if pyspark_version() < MIN_PYSPARK:
        return False
    import pyspark.sql.types as T

    return hasattr(T, "GeometryType") and hasattr(T, "GeographyType")


def spark_type_json(geo: GeoType) -> str:
    """Spark's JSON name for a Delta geospatial type (Spark spells the algorithm in capitals)."""
    if geo.is_geography:
        return f"geography({geo.crs}, {(geo.algorithm or 'spherical').upper()})"
    return f"geometry({geo.crs})"


def spark_geo_type(geo: GeoType) -> Any | None:
    """The pyspark type for a Delta geospatial type, or None when this pyspark has none for it (an older
    release, or a CRS / algorithm Spark does not name: such columns stay binary)."""
    if not pyspark_has_geo_types():
        return None
    from pyspark.sql.types import StructType as SparkStruct

    field = {"name": "g", "type": spark_type_json(geo), "nullable": True, "metadata": {}}
    try:
        return SparkStruct.fromJson({"type": "struct", "fields": [field]}).fields[0].dataType
    except Exception:  # IllegalArgumentException (ST_INVALID_CRS_VALUE, ...), parse errors
        return None


def top_level_geo(schema: StructType) -> dict[str, GeoType]:
    """The top-level geospatial columns of a Delta schema that this pyspark can show as its types."""
    out: dict[str, GeoType] = {}
    for f in schema.fields:
        geo = parse_geo_type(f.type)
        if geo is not None and spark_geo_type(geo) is not None:
            out[f.name] = geo
    return out


def session_geo_types(spark: Any, schema: StructType) -> dict[str, GeoType]:
    """The columns a read of `schema` in `spark` shows as Spark geospatial types: none unless the table has such
    columns (no conf is asked otherwise: no round trip on Connect) and the session enables Spark's geospatial
    types (`spark.sql.geospatial.enabled`, on by default in Spark 4.3)."""
    if not any(parse_geo_type(f.type) is not None for f in schema.fields):
        return {}
    cols = top_level_geo(schema)
    if not cols:
        return {}
    from .confs import get_confs

    value = get_confs(spark, [GEOSPATIAL_CONF])[GEOSPATIAL_CONF]
    return cols if (value or GEOSPATIAL_DEFAULT).strip().lower() == "true" else {}


def from_wkb(col: Any, geo: GeoType) -> Any:
    """A WKB binary Column as Spark's geometry / geography value of the column's type."""
    from pyspark.sql import functions as F

    if geo.is_geography:
        return F.st_geogfromwkb(col)  # Spark's geography has one SRID (4326: OGC:CRS84)
    dtype = spark_geo_type(geo)
    if dtype is None:  # callers pass only the columns `top_level_geo` kept
        raise ValueError(f"Spark has no type for {geo.type_name()}")
    return F.st_geomfromwkb(col, int(dtype.srid))


def spark_schema_with_geo(spark_schema: Any, cols: dict[str, GeoType]) -> Any:
    """`spark_schema` (a pyspark StructType) with the named top-level columns as Spark geospatial types."""
    if not cols:
        return spark_schema
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    fields = []
    for f in spark_schema.fields:
        dtype = spark_geo_type(cols[f.name]) if f.name in cols else None
        fields.append(SparkField(f.name, dtype, f.nullable, f.metadata) if dtype is not None else f)
    return SparkStruct(fields)


# ----------------------------------------------------------------------------- writes
def _is_spark_geo_struct(t: pa.DataType) -> bool:
    """pyspark's Arrow form of a geospatial value: struct<srid: int32, wkb: binary>."""
    if not pa.types.is_struct(t) or t.num_fields != 2:
        return False
    names = {t.field(i).name: t.field(i).type for i in range(t.num_fields)}
    return names.get("srid") == pa.int32() and names.get("wkb") in (pa.binary(), pa.large_binary())


def _has_geo(dtype: DataType) -> bool:
    if parse_geo_type(dtype) is not None:
        return True
    return isinstance(dtype, StructType) and any(_has_geo(f.type) for f in dtype.fields)


def _wkb_column(arr: pa.Array, dtype: DataType) -> pa.Array:
    """`arr` with Spark geospatial structs at the schema's geospatial leaves (through structs) as WKB binary."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_wkb_column(c, dtype) for c in arr.chunks],
                                type=_wkb_type(arr.type, dtype))
    if parse_geo_type(dtype) is not None:
        if not _is_spark_geo_struct(arr.type):
            return arr
        wkb = arr.field("wkb")
        if arr.null_count:  # the struct's own validity (a null geometry has a null struct)
            wkb = pc.if_else(arr.is_valid(), wkb, pa.nulls(len(arr), wkb.type))
        return wkb
    if isinstance(dtype, StructType) and pa.types.is_struct(arr.type) and _has_geo(dtype):
        children, fields = [], []
        for i in range(arr.type.num_fields):
            f = arr.type.field(i)
            sub = dtype.field(f.name).type if dtype.has(f.name) else None
            child = arr.field(i)
            if sub is not None:
                child = _wkb_column(child, sub)
            children.append(child)
            fields.append(pa.field(f.name, child.type, f.nullable, f.metadata))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=fields, mask=mask)
    return arr


def _wkb_type(t: pa.DataType, dtype: DataType) -> pa.DataType:
    if parse_geo_type(dtype) is not None:
        return t.field("wkb").type if _is_spark_geo_struct(t) else t
    if isinstance(dtype, StructType) and pa.types.is_struct(t) and _has_geo(dtype):
        return pa.struct([pa.field(t.field(i).name,
                                   _wkb_type(t.field(i).type, dtype.field(t.field(i).name).type)
                                   if dtype.has(t.field(i).name) else t.field(i).type,
                                   t.field(i).nullable, t.field(i).metadata) for i in range(t.num_fields)])
    return t


def wkb_batches(batches: Iterator[pa.RecordBatch], schema: StructType) -> Iterator[pa.RecordBatch]:
    """Spark's geospatial values (Arrow structs) as the WKB columns of the table's geospatial columns; batches
    of tables without such columns pass untouched."""
    if not _has_geo(schema):
        yield from batches
        return
    for batch in batches:
        cols, fields = [], []
        for i, f in enumerate(batch.schema):
            col = batch.column(i)
            if schema.has(f.name):
                col = _wkb_column(col, schema.field(f.name).type)
            cols.append(col)
            fields.append(pa.field(f.name, col.type, f.nullable, f.metadata if col.type == f.type else None))
        yield pa.RecordBatch.from_arrays(cols, schema=pa.schema(fields, metadata=batch.schema.metadata))


__all__ = ["GEOSPATIAL_CONF", "MIN_PYSPARK", "from_wkb", "pyspark_has_geo_types", "pyspark_version",
           "session_geo_types", "spark_geo_type", "spark_schema_with_geo", "spark_type_json", "top_level_geo",
           "wkb_batches"]
