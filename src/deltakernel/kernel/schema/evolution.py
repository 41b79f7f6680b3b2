"""Schema evolution for writers: merging an incoming schema into the table's (nested fields too), the
type-widening rules (PROTOCOL.md "Type Widening"), the `delta.typeChanges` history, and column-mapping id /
physical-name assignment for new fields.

One merge (:func:`merge_schemas`) serves `write_deltalake(schema_mode="merge")` and MERGE with
`merge_schema=True`; they differ only in what happens to a type the table cannot take (`implicit_casts`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from ...errors import SchemaError
from .types import ArrayType, DataType, DecimalType, MapType, PrimitiveType, StructField, StructType

CM_ID = "delta.columnMapping.id"
CM_NAME = "delta.columnMapping.physicalName"
TYPE_CHANGES = "delta.typeChanges"
#: metadata keys that belong to the table a field lives in; never copied from incoming data
_TABLE_OWNED_KEYS = (CM_ID, CM_NAME, "delta.columnMapping.nested.ids", "parquet.field.nested.ids", TYPE_CHANGES)

_INT_ORDER = ["byte", "short", "integer", "long"]
_INT_DIGITS = {"byte": 3, "short": 5, "integer": 10, "long": 20}


def is_widening(old: DataType, new: DataType) -> bool:
    """Type changes the typeWidening feature allows (PROTOCOL.md "Type Widening"): what readers must
    be able to read and what ALTER may apply."""
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
        digits = _INT_DIGITS.get(old.name)
        return digits is not None and new.precision - new.scale >= digits
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale >= old.scale and (new.precision - new.scale) >= (old.precision - old.scale)
    return False


def is_evolution_widening(old: DataType, new: DataType, *, iceberg_compat: bool = False,
                          partition_column: bool = False) -> bool:
    """The widenings schema evolution applies by itself (writes with schema_mode="merge", MERGE with
    merge_schema=True), as delta-spark's `TypeWidening.isTypeChangeSupportedForSchemaEvolution`: integer
    widening, float -> double, decimal -> wider decimal, date -> timestamp_ntz. Integer -> double and
    integer -> decimal are valid type changes (readers handle them) but are never applied implicitly.
    With Iceberg compatibility on, only the changes Iceberg V2 allows (no date -> timestamp_ntz, no decimal
    scale increase), as the protocol's writer requirements say. A partition column never goes from date to
    timestamp_ntz: its existing partition values (`2024-01-01`) are not timestamp_ntz serializations, and
    readers such as delta-kernel-rs refuse them."""
    if old == new or not is_widening(old, new):
        return old == new
    if isinstance(old, PrimitiveType) and isinstance(new, PrimitiveType):
        if old.name in _INT_ORDER and new.name in _INT_ORDER:
            return True
        if (old.name, new.name) == ("float", "double"):
            return True
        if (old.name, new.name) == ("date", "timestamp_ntz"):
            return not iceberg_compat and not partition_column
        return False
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return not iceberg_compat or new.scale == old.scale
    return False


def type_change_entry(old: DataType, new: DataType, field_path: str | None = None) -> dict[str, Any]:
    """One `delta.typeChanges` item (PROTOCOL.md "Type Change Metadata")."""
    entry: dict[str, Any] = {"fromType": old.to_json(), "toType": new.to_json()}
    if field_path:
        entry["fieldPath"] = field_path
    return entry


class _Opts:
    __slots__ = ("allow_widening", "iceberg_compat", "implicit_casts", "partition_columns")

    def __init__(self, allow_widening: bool, implicit_casts: bool, iceberg_compat: bool,
                 partition_columns: frozenset[str]) -> None:
        self.allow_widening = allow_widening
        self.implicit_casts = implicit_casts
        self.iceberg_compat = iceberg_compat
        self.partition_columns = partition_columns


def _merge_type(old: DataType, new: DataType, path: str, rel: str, opts: _Opts,
                changes: list[dict[str, Any]]) -> DataType:
    """`old` merged with `new`. Type changes of `old` itself or of array elements / map keys / values
    below it (not inside nested structs, whose fields record their own) go to `changes`, with `rel` (the
    path from the nearest struct field: "", "element", "key", "value.element", ...) as their fieldPath."""
    if isinstance(old, StructType) and isinstance(new, StructType):
        return _merge_struct(old, new, path + ".", opts)
    if isinstance(old, ArrayType) and isinstance(new, ArrayType):
        sub = f"{rel}.element" if rel else "element"
        return ArrayType(_merge_type(old.element_type, new.element_type, path + ".element", sub, opts, changes),
                         old.contains_null or new.contains_null)
    if isinstance(old, MapType) and isinstance(new, MapType):
        k = f"{rel}.key" if rel else "key"
        v = f"{rel}.value" if rel else "value"
        return MapType(_merge_type(old.key_type, new.key_type, path + ".key", k, opts, changes),
                       _merge_type(old.value_type, new.value_type, path + ".value", v, opts, changes),
                       old.value_contains_null or new.value_contains_null)
    if old == new or new == PrimitiveType("void"):
        return old  # NULL-typed data fits any column
    if opts.allow_widening and is_evolution_widening(old, new, iceberg_compat=opts.iceberg_compat,
                                                     partition_column=path.lower() in opts.partition_columns):
        changes.append(type_change_entry(old, new, rel or None))
        return new
    if is_widening(new, old) or opts.implicit_casts:
        return old  # narrower data into a wider column (or MERGE's implicit cast): values are cast on write
    if opts.allow_widening and is_widening(old, new):
        hint = (" (delta-spark applies this type change only explicitly, not through schema evolution; "
                "cast the data or widen the column first)")
    elif is_widening(old, new):
        hint = " (enable delta.enableTypeWidening for widening type changes)"
    else:
        hint = ""
    raise SchemaError(f"cannot merge column {path!r}: table type {old.to_json()} vs data type {new.to_json()}{hint}")


def _without_table_keys(f: StructField) -> StructField:
    """An incoming new field without metadata owned by another table (column-mapping ids, type history)."""
    md = {k: v for k, v in f.metadata.items() if k not in _TABLE_OWNED_KEYS}
    return replace(f, type=_strip_type(f.type), metadata=md)


def _strip_type(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(tuple(_without_table_keys(f) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_strip_type(t.element_type), t.contains_null)
    if isinstance(t, MapType):
        return MapType(_strip_type(t.key_type), _strip_type(t.value_type), t.value_contains_null)
    return t


def _merge_struct(table: StructType, incoming: StructType, prefix: str, opts: _Opts) -> StructType:
    out: list[StructField] = []
    incoming_by_lower = {f.name.lower(): f for f in incoming.fields}
    for f in table.fields:
        g = incoming_by_lower.pop(f.name.lower(), None)
        if g is None:
            out.append(f)
            continue
        changes: list[dict[str, Any]] = []
        new_type = _merge_type(f.type, g.type, prefix + f.name, "", opts, changes)
        md = f.metadata
        if changes:
            md = dict(md)
            md[TYPE_CHANGES] = [*list(md.get(TYPE_CHANGES) or []), *changes]
        out.append(replace(f, type=new_type, metadata=md))
    for g in incoming.fields:
        if g.name.lower() in incoming_by_lower and g.type != PrimitiveType("void"):
            out.append(replace(_without_table_keys(g), nullable=True))
    return StructType(tuple(out))


def merge_schemas(table: StructType, incoming: StructType, *, allow_widening: bool = False,
                  implicit_casts: bool = False, iceberg_compat: bool = False,
                  partition_columns: Iterable[str] = ()) -> StructType:
    """The table schema with the incoming schema's new fields appended (nullable, at the end of their
    struct, nested ones too: structs, and structs inside arrays and map keys / values) and, with
    `allow_widening` (the table has `delta.enableTypeWidening=true`), types widened where schema evolution
    may (:func:`is_evolution_widening`), each change appended to the field's `delta.typeChanges`.

    Names match case-insensitively; the table's spelling, nullability and metadata are kept. A type the
    table cannot take raises SchemaError (writes) or, with `implicit_casts` (MERGE, as delta-spark's
    `allowImplicitConversions`), keeps the table's type: the values are cast to it when written. Data of a
    narrower type than the column's always keeps the column's type. NULL-typed incoming fields add nothing."""
    parts = frozenset(p.lower() for p in partition_columns)
    return _merge_struct(table, incoming, "", _Opts(allow_widening, implicit_casts, iceberg_compat, parts))


def type_changes(table: StructType, merged: StructType) -> list[str]:
    """Dotted paths of the fields whose `delta.typeChanges` grew between `table` and `merged`."""
    out: list[str] = []

    def walk(old: DataType, new: DataType, path: str) -> None:
        if isinstance(old, StructType) and isinstance(new, StructType):
            prev = {f.name.lower(): f for f in old.fields}
            for f in new.fields:
                p = prev.get(f.name.lower())
                if p is None:
                    continue
                name = f"{path}.{f.name}" if path else f.name
                if len(f.metadata.get(TYPE_CHANGES) or []) > len(p.metadata.get(TYPE_CHANGES) or []):
                    out.append(name)
                walk(p.type, f.type, name)
        elif isinstance(old, ArrayType) and isinstance(new, ArrayType):
            walk(old.element_type, new.element_type, path + ".element")
        elif isinstance(old, MapType) and isinstance(new, MapType):
            walk(old.key_type, new.key_type, path + ".key")
            walk(old.value_type, new.value_type, path + ".value")

    walk(table, merged, "")
    return out


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
