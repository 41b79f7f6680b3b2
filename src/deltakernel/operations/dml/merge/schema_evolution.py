"""MERGE with `merge_schema=True`: the target schema evolved by the source, as delta-spark's
ResolveDeltaMergeInto does it (docs/decisions.md, "MERGE schema evolution").

1. The *migration schema* is the source schema kept to the columns some MATCHED UPDATE / NOT MATCHED INSERT
   clause assigns: every source column for `*_all` clauses (minus their `except_cols`), the assigned
   column's name for explicit ones (`{"s": "source.s"}` brings source column `s`, nested fields and all).
   Source columns no clause writes are not added (delta-spark and deltalake 1.6.6 alike).
2. It is merged into the table schema by the same `merge_schemas` writes use (`schema_mode="merge"`):
   new columns and new nested struct fields (also inside arrays and map keys/values) appended, nullable,
   matched case-insensitively; with `delta.enableTypeWidening=true`, a wider source type widens the column
   (the changes schema evolution may apply, `is_evolution_widening`) and is recorded in
   `delta.typeChanges`. Other type differences keep the table's type: values are cast on write
   (`error_on_type_mismatch` decides what a failed cast does), delta-spark's implicit conversions.
3. Column mapping: new fields (nested too) get ids and physical names, `maxColumnId` moves; the protocol
   is raised for what the new schema needs.

:func:`update_star_struct` is UPDATE SET *'s value for a struct column under schema evolution (target-only
nested fields keep the target's values, delta-spark's leaf-level expansion).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import DeltaError
from ....kernel.arrow_build import bool_to_arrow
from ....kernel.log.actions import Metadata
from ....kernel.schema.arrow import from_arrow_schema
from ....kernel.schema.evolution import assign_column_mapping, check_unique_names, max_column_id, merge_schemas
from ....kernel.schema.types import ArrayType, DataType, MapType, StructField, StructType, schema_to_json
from ....kernel.transaction.transaction import Transaction as KernelTransaction
from ...write.enforcement import cast_for_column
from .plan import MATCHED_UPDATE, NOT_MATCHED_INSERT, Clause


def _assigned_name(key: str, target_alias: str) -> str | None:
    """The top-level column an assignment key (`x`, `` `x` ``, `target.x`) names; None for anything else
    (nested targets, unparsable keys: resolving the clauses reports those)."""
    from ....kernel.expressions.sql import Col, parse_sql

    try:
        node = parse_sql(key) if key.strip() else None
    except (DeltaError, ValueError):
        return None
    if not isinstance(node, Col):
        return None
    path = node.path
    if len(path) == 2 and path[0].lower() == target_alias.lower():
        path = path[1:]
    return path[0] if len(path) == 1 else None


def migration_schema(source: pa.Schema, clauses: Iterable[Clause], target_alias: str = "target") -> pa.Schema:
    """The source columns the MERGE writes into the target (what schema evolution may add or widen)."""
    wanted: set[str] = set()
    for c in clauses:
        if c.kind not in (MATCHED_UPDATE, NOT_MATCHED_INSERT):
            continue  # NOT MATCHED BY SOURCE clauses cannot read the source; deletes assign nothing
        if c.all_columns:
            excluded = {x.lower() for x in c.except_cols}
            wanted.update(n.lower() for n in source.names if n.lower() not in excluded)
        elif isinstance(c.updates_text, dict):
            for key in c.updates_text:
                name = _assigned_name(str(key), target_alias)
                if name is not None:
                    wanted.add(name.lower())
    return pa.schema([f for f in source if f.name.lower() in wanted])


def _plain(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(tuple(StructField(f.name, _plain(f.type), f.nullable, {}) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_plain(t.element_type), t.contains_null)
    if isinstance(t, MapType):
        return MapType(_plain(t.key_type), _plain(t.value_type), t.value_contains_null)
    return t


def evolved_metadata(metadata: Metadata, source: pa.Schema, clauses: Iterable[Clause],
                     target_alias: str = "target") -> Metadata | None:
    """The table metadata after MERGE schema evolution, or None when the schema does not change."""
    from ...write.plan import schema_merge_options

    incoming = _plain(from_arrow_schema(migration_schema(source, clauses, target_alias)))
    assert isinstance(incoming, StructType)
    check_unique_names(incoming)  # nested fields spelled twice (`a` and `A`) are one column to Delta
    schema = metadata.schema
    # the source's Arrow field metadata (comments, another table's column mapping, constraints) is not
    # table metadata: `_plain` dropped it
    merged = merge_schemas(schema, incoming, implicit_casts=True, partition_columns=metadata.partition_columns,
                           **schema_merge_options(dict(metadata.configuration)))
    if merged == schema and schema_to_json(merged) == schema_to_json(schema):
        return None
    configuration = dict(metadata.configuration)
    if configuration.get("delta.columnMapping.mode", "none") in ("name", "id"):
        start = int(configuration.get("delta.columnMapping.maxColumnId", "0"))
        merged, new_max = assign_column_mapping(merged, max(start, max_column_id(merged)))
        configuration["delta.columnMapping.maxColumnId"] = str(new_max)
    return Metadata(metadata.id, schema_to_json(merged), metadata.partition_columns, configuration,
                    metadata.name, metadata.description, metadata.format, metadata.created_time)


def evolve_schema(txn: KernelTransaction, source: pa.Schema, clauses: Iterable[Clause],
                  target_alias: str | None = None) -> None:
    """merge_schema=True: put the evolved metadata (and the protocol it needs) into `txn`."""
    from ...write.plan import protocol_for, required_features

    md = evolved_metadata(txn.metadata, source, clauses, target_alias or "target")
    if md is None:
        return
    txn.update_metadata(md)
    protocol = protocol_for(required_features(md.schema, dict(md.configuration)), txn.protocol)
    if protocol != txn.protocol:
        txn.update_protocol(protocol)


# ----------------------------------------------------------------------------- UPDATE SET * on structs
def _children(arr: pa.Array) -> list[pa.Array]:
    """A struct array's children with the parent's NULLs applied (a NULL struct has NULL fields)."""
    return list(arr.flatten())


def update_star_struct(source: pa.Array | pa.ChunkedArray, target: pa.Array | pa.ChunkedArray,
                       dtype: pa.DataType, column: str, *, strict: bool, what: str = "MERGE") -> pa.Array:
    """UPDATE SET * into struct column `column` (Arrow type `dtype`, the evolved table type) with schema
    evolution, as delta-spark expands it to leaf-level assignments: a field the source struct has takes the
    source's value (nested structs recursively), a field only the target has keeps the target's value.
    The result is NULL where the source struct is NULL and every target-only field is NULL too (delta-spark's
    preserveNullSourceStructs); a NULL source struct over a target with target-only values keeps those
    values with NULL source fields. Arrays and maps are assigned whole (cast by name)."""
    if isinstance(source, pa.ChunkedArray):
        source = source.combine_chunks()
    if isinstance(target, pa.ChunkedArray):
        target = target.combine_chunks()
    if not (pa.types.is_struct(dtype) and pa.types.is_struct(source.type)):
        return cast_for_column(source, dtype, column, strict=strict, what=what)
    target = cast_for_column(target, dtype, column, strict=True, what=what)
    out, _ = _merge_struct(source, target, dtype, column, strict, what)
    return out


def _merge_struct(source: pa.Array, target: pa.Array, dtype: pa.StructType, column: str, strict: bool,
                  what: str) -> tuple[pa.Array, pa.Array]:
    """(merged struct, mask of rows whose target-only leaves are all NULL)."""
    n = len(source)
    src_children = {f.name.lower(): (f, c) for f, c in zip(source.type, _children(source))}
    tgt_children = _children(target)
    children: list[pa.Array] = []
    target_only_null: Any = bool_to_arrow(np.ones(n, dtype=bool))
    for i, f in enumerate(dtype):
        found = src_children.get(f.name.lower())
        name = f"{column}.{f.name}"
        if found is None:
            children.append(tgt_children[i])
            target_only_null = pc.and_(target_only_null, pc.is_null(tgt_children[i]))
        elif pa.types.is_struct(f.type) and pa.types.is_struct(found[0].type):
            child, nested_null = _merge_struct(found[1], tgt_children[i], f.type, name, strict, what)
            children.append(child)
            target_only_null = pc.and_(target_only_null, nested_null)
        else:
            children.append(cast_for_column(found[1], f.type, name, strict=strict, what=what))
    null = pc.and_(pc.is_null(source), target_only_null)
    mask = null if pc.any(null).as_py() else None
    return pa.StructArray.from_arrays(children, fields=list(dtype), mask=mask), target_only_null


__all__ = ["evolve_schema", "evolved_metadata", "migration_schema", "update_star_struct"]
