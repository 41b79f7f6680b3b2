"""Schema evolution for writers: merging an incoming schema into the table's, widening rules, and
column-mapping id / physical-name assignment for new fields."""

from __future__ import annotations

import uuid
from dataclasses import replace

from ...errors import SchemaError
from .types import ArrayType, DataType, DecimalType, MapType, PrimitiveType, StructField, StructType

CM_ID = "delta.columnMapping.id"
CM_NAME = "delta.columnMapping.physicalName"

_INT_ORDER = ["byte", "short", "integer", "long"]


def is_widening(old: DataType, new: DataType) -> bool:
    """Type changes the typeWidening feature allows (PROTOCOL.md "Type Widening")."""
    if old == new:
        return True
    if isinstance(old, PrimitiveType) and isinstance(new, PrimitiveType):
        o, n = old.name, new.name
        if o in _INT_ORDER and n in _INT_ORDER:
            return _INT_ORDER.index(o) < _INT_ORDER.index(n)
        if o == "float" and n == "double":
            return True
        if o in ("byte", "short", "integer") and n == "double":
            return True
        if o == "date" and n == "timestamp_ntz":
            return True
        return False
    if isinstance(old, PrimitiveType) and isinstance(new, DecimalType):
        digits = {"byte": 3, "short": 5, "integer": 10, "long": 20}.get(old.name)
        return digits is not None and new.precision - new.scale >= digits
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale >= old.scale and (new.precision - new.scale) >= (old.precision - old.scale)
    return False


def _type_change_metadata(f: StructField, new_type: DataType) -> dict[str, object]:
    md = dict(f.metadata)
    changes = list(md.get("delta.typeChanges") or [])
    changes.append({"fromType": f.type.to_json(), "toType": new_type.to_json()})
    md["delta.typeChanges"] = changes
    return md


def merge_types(old: DataType, new: DataType, path: str, allow_widening: bool) -> DataType:
    if isinstance(old, StructType) and isinstance(new, StructType):
        return merge_schemas(old, new, allow_widening=allow_widening, _prefix=path + ".")
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        return ArrayType(merge_types(old.element_type, new.element_type, path + ".element", allow_widening),
                         old.contains_null or new.contains_null)
    if isinstance(old, MapType) and isinstance(new, MapType):
        return MapType(merge_types(old.key_type, new.key_type, path + ".key", allow_widening),
                       merge_types(old.value_type, new.value_type, path + ".value", allow_widening),
                       old.value_contains_null or new.value_contains_null)
    if old == new:
        return old
    if is_widening(new, old):
        return old  # narrower data into a wider column: cast on write
    if allow_widening and is_widening(old, new):
        return new
    raise SchemaError(
        f"cannot merge column {path!r}: table type {old.to_json()} vs data type {new.to_json()}"
        + ("" if allow_widening else " (enable delta.enableTypeWidening for widening type changes)")
    )


def merge_schemas(table: StructType, incoming: StructType, *, allow_widening: bool = False,
                  _prefix: str = "") -> StructType:
    """The table schema with the incoming schema's new fields appended (nested too) and types widened."""
    out: list[StructField] = []
    incoming_by_lower = {f.name.lower(): f for f in incoming.fields}
    for f in table.fields:
        g = incoming_by_lower.pop(f.name.lower(), None)
        if g is None:
            out.append(f)
            continue
        new_type = merge_types(f.type, g.type, _prefix + f.name, allow_widening)
        md = f.metadata
        if not isinstance(f.type, (StructType, ArrayType, MapType)) and new_type != f.type:
            md = _type_change_metadata(f, new_type)
        out.append(replace(f, type=new_type, metadata=md))
    for g in incoming.fields:
        if g.name.lower() in incoming_by_lower:
            out.append(replace(g, nullable=True))
    return StructType(tuple(out))


def max_column_id(schema: StructType) -> int:
    best = 0

    def walk(t: DataType) -> None:
        nonlocal best
        if isinstance(t, StructType):
            for f in t.fields:
                fid = f.metadata.get(CM_ID)
                if fid is not None:
                    best = max(best, int(fid))
                walk(f.type)
        elif isinstance(t, ArrayType):
            walk(t.element_type)
        elif isinstance(t, MapType):
            walk(t.key_type)
            walk(t.value_type)

    walk(schema)
    return best


def assign_column_mapping(schema: StructType, max_id: int, *, physical_from_logical: bool = False
                          ) -> tuple[StructType, int]:
    """Give every field without one a column-mapping id and physical name (nested too)."""
    counter = max_id

    def field(f: StructField) -> StructField:
        nonlocal counter
        md = dict(f.metadata)
        if CM_ID not in md:
            counter += 1
            md[CM_ID] = counter
        if CM_NAME not in md:
            md[CM_NAME] = f.name if physical_from_logical else f"col-{uuid.uuid4()}"
        return replace(f, type=typ(f.type), metadata=md)

    def typ(t: DataType) -> DataType:
        if isinstance(t, StructType):
            return StructType(tuple(field(f) for f in t.fields))
        if isinstance(t, ArrayType):
            return ArrayType(typ(t.element_type), t.contains_null)
        if isinstance(t, MapType):
            return MapType(typ(t.key_type), typ(t.value_type), t.value_contains_null)
        return t

    out = typ(schema)
    assert isinstance(out, StructType)
    return out, counter


def schema_has_type(schema: DataType, name: str) -> bool:
    if isinstance(schema, PrimitiveType):
        return schema.name == name
    if isinstance(schema, StructType):
        return any(schema_has_type(f.type, name) for f in schema.fields)
    if isinstance(schema, ArrayType):
        return schema_has_type(schema.element_type, name)
    if isinstance(schema, MapType):
        return schema_has_type(schema.key_type, name) or schema_has_type(schema.value_type, name)
    return False


def fields_with_metadata(schema: StructType, key: str) -> list[StructField]:
    out: list[StructField] = []

    def walk(t: DataType) -> None:
        if isinstance(t, StructType):
            for f in t.fields:
                if key in f.metadata:
                    out.append(f)
                walk(f.type)

    walk(schema)
    return out


def check_unique_names(schema: DataType, path: str = "") -> None:
    """Column names are case-insensitive in Delta (PROTOCOL.md "Schema Serialization Format"): `id` and `ID`
    in one struct would be one column to Spark and two to Parquet. Raise SchemaError naming both."""
    if isinstance(schema, StructType):
        seen: dict[str, str] = {}
        for f in schema.fields:
            low = f.name.lower()
            if low in seen:
                where = f" in {path!r}" if path else ""
                raise SchemaError(
                    f"duplicate column names{where}: {seen[low]!r} and {f.name!r} (Delta column names are "
                    "case-insensitive and must be unique)"
                )
            seen[low] = f.name
            check_unique_names(f.type, f"{path}.{f.name}" if path else f.name)
    elif isinstance(schema, ArrayType):
        check_unique_names(schema.element_type, f"{path}.element")
    elif isinstance(schema, MapType):
        check_unique_names(schema.key_type, f"{path}.key")
        check_unique_names(schema.value_type, f"{path}.value")


def added_fields(table: StructType, merged: StructType, path: str = "") -> list[tuple[str, StructField]]:
    """(dotted path, field) of every field in `merged` that `table` does not have, nested ones too."""
    out: list[tuple[str, StructField]] = []
    old = {f.name.lower(): f for f in table.fields}
    for f in merged.fields:
        name = f"{path}.{f.name}" if path else f.name
        prev = old.get(f.name.lower())
        if prev is None:
            out.append((name, f))
        elif isinstance(prev.type, StructType) and isinstance(f.type, StructType):
            out.extend(added_fields(prev.type, f.type, name))
    return out
