"""Column mapping (PROTOCOL.md "Column Mapping"): logical (display) names vs physical names and field ids.

In `name` mode data files, partition values and statistics use the physical names; in `id` mode Parquet
columns are resolved by field id (the `delta.columnMapping.id` metadata, written as Parquet `field_id`).
"""

from __future__ import annotations

from typing import Any, Literal

import pyarrow as pa

from ...errors import SchemaError
from .arrow import to_arrow_field
from .types import ArrayType, DataType, MapType, StructField, StructType

ColumnMappingMode = Literal["none", "name", "id"]

MODE_KEY = "delta.columnMapping.mode"
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
ID_KEY = "delta.columnMapping.id"
PARQUET_FIELD_ID = b"PARQUET:field_id"


def _protocol_supports_column_mapping(protocol: Any) -> bool:
    """Reader version 2, or 3 with `columnMapping` in readerFeatures (duck-typed: any Protocol shape)."""
    version = _attr(protocol, "min_reader_version", "minReaderVersion")
    if version is None:
        return True
    version = int(version)
    if version == 2:
        return True
    if version >= 3:
        features = _attr(protocol, "reader_features", "readerFeatures") or ()
        return "columnMapping" in features
    return False


def _attr(obj: Any, *names: str) -> Any:
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


def column_mapping_mode(configuration: dict[str, str] | None, protocol: Any = None) -> ColumnMappingMode:
    """The table's mapping mode; with a protocol given, the property only counts if the protocol allows it."""
    raw = (configuration or {}).get(MODE_KEY)
    if raw is None:
        return "none"
    mode = str(raw).strip().lower()
    if mode not in ("none", "name", "id"):
        raise SchemaError(f"invalid {MODE_KEY}: {raw!r} (expected none, name or id)")
    if protocol is not None and not _protocol_supports_column_mapping(protocol):
        return "none"
    return mode  # type: ignore[return-value]


def physical_name(field: StructField, mode: str) -> str:
    """The column name used in data files / partition values / stats for this field."""
    if mode == "none":
        return field.name
    name = field.metadata.get(PHYSICAL_NAME_KEY)
    return str(name) if name else field.name


def field_id(field: StructField) -> int | None:
    """The column-mapping id (`delta.columnMapping.id`), or None."""
    value = field.metadata.get(ID_KEY)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError) as e:
        raise SchemaError(f"invalid {ID_KEY} on column {field.name!r}: {value!r}") from e


def _physical_type(dtype: DataType, mode: str) -> DataType:
    if isinstance(dtype, StructType):
        return to_physical_schema(dtype, mode)
    if isinstance(dtype, ArrayType):
        return ArrayType(_physical_type(dtype.element_type, mode), dtype.contains_null)
    if isinstance(dtype, MapType):
        return MapType(
            _physical_type(dtype.key_type, mode),
            _physical_type(dtype.value_type, mode),
            dtype.value_contains_null,
        )
    return dtype


def to_physical_schema(logical: StructType, mode: str) -> StructType:
    """The schema as stored in data files: every struct field (nested too) renamed; metadata/ids kept."""
    if mode == "none":
        return logical
    return StructType(
        tuple(
            StructField(physical_name(f, mode), _physical_type(f.type, mode), f.nullable, dict(f.metadata))
            for f in logical.fields
        )
    )


def _with_field_ids(arrow_field: pa.Field, delta_field: StructField | None) -> pa.Field:
    """Attach PARQUET:field_id (from the Delta field) and recurse into nested struct fields."""
    dtype = delta_field.type if delta_field is not None else None
    new_type = _type_with_ids(arrow_field.type, dtype)
    meta = dict(arrow_field.metadata or {})
    fid = field_id(delta_field) if delta_field is not None else None
    if fid is not None:
        meta[PARQUET_FIELD_ID] = str(fid).encode()
    return pa.field(arrow_field.name, new_type, nullable=arrow_field.nullable, metadata=meta or None)


def _type_with_ids(t: pa.DataType, dtype: DataType | None) -> pa.DataType:
    if isinstance(dtype, StructType) and pa.types.is_struct(t):
        return pa.struct([_with_field_ids(t.field(i), dtype.fields[i]) for i in range(t.num_fields)])
    if isinstance(dtype, ArrayType) and pa.types.is_list(t):
        vf = t.value_field
        return pa.list_(vf.with_type(_type_with_ids(vf.type, dtype.element_type)))
    if isinstance(dtype, MapType) and pa.types.is_map(t):
        kf, itf = t.key_field, t.item_field
        return pa.map_(
            kf.with_type(_type_with_ids(kf.type, dtype.key_type)),
            itf.with_type(_type_with_ids(itf.type, dtype.value_type)),
        )
    return t


def to_physical_arrow_schema(logical: StructType, mode: str) -> pa.Schema:
    """Arrow schema for writing/reading data files: physical names plus `PARQUET:field_id` where ids exist."""
    physical = to_physical_schema(logical, mode)
    fields = []
    for f in physical.fields:
        af = to_arrow_field(f)
        fields.append(_with_field_ids(af, f) if mode != "none" else af)
    return pa.schema(fields)


def logical_to_physical_names(schema: StructType, mode: str) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Logical path -> physical path for every struct-nested column (leaves and intermediate structs).

    Only struct nesting forms paths (like stats and partition values); arrays/maps end a path.
    """
    out: dict[tuple[str, ...], tuple[str, ...]] = {}

    def walk(struct: StructType, lpath: tuple[str, ...], ppath: tuple[str, ...]) -> None:
        for f in struct.fields:
            lp, pp = (*lpath, f.name), (*ppath, physical_name(f, mode))
            out[lp] = pp
            if isinstance(f.type, StructType):
                walk(f.type, lp, pp)

    walk(schema, (), ())
    return out
