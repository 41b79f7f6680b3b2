"""A write's data: input batches conformed to the table (names, constraints, types, replaceWhere) and
written as Parquet data files through the one file writer (`operations/files/parquet_writer.py`).

Batches stream through: each is renamed to the table's spelling, completed and checked by the constraint
enforcer (defaults, generated and identity columns, NOT NULL, CHECK), cast to the table's Arrow schema and
checked against a replaceWhere predicate, then handed to the file writer. Spark's write tasks run the same
conforming step on the executors (`conform_batches`), so both engines write identical files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConstraintViolationError, SchemaError
from ...kernel.expressions.sql import SqlExpr, parse_sql
from ...kernel.log.action_types import AddAction
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.schema.evolution import schema_has_type
from ...kernel.schema.types import StructType
from ...sqleval import evaluate
from ...storage import Storage
from ..files import parquet_writer
from ..files.shredding import check_forced, shredding_enabled
from .enforcement import Enforcer


def match_columns(batch: pa.RecordBatch, schema: StructType) -> pa.RecordBatch:
    """Rename input columns to the table's spelling (Delta names are case-insensitive)."""
    names = [schema.field(n).name if schema.has(n) else n for n in batch.schema.names]
    return batch.rename_columns(names) if names != batch.schema.names else batch


def cast_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """The batch in the table's Arrow schema: columns in order, missing ones null, types cast safely
    (SchemaError names the column that cannot be cast); every field nullable (enforcement ran before)."""
    cols = []
    for f in target:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            cols.append(pa.nulls(batch.num_rows, f.type))
            continue
        col = batch.column(idx)
        if col.type != f.type:
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaError(f"column {f.name!r}: cannot write {col.type} into {f.type}: {e}") from e
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema([pa.field(f.name, f.type, True) for f in target]))


def enforcer_for(metadata: Metadata, protocol: Protocol) -> Enforcer | None:
    """The table's write-time rules, or None when it has none (the common case costs nothing per batch)."""
    enforcer = Enforcer(metadata, protocol)
    return enforcer if enforcer.needed else None


def check_replace_where(batch: pa.RecordBatch, expr: SqlExpr, text: str) -> None:
    """replaceWhere: every written row must satisfy the predicate (delta-spark's rule), else nothing commits."""
    ok = evaluate(expr, batch)
    bad = pc.invert(pc.fill_null(ok, False))
    if pc.any(bad).as_py():
        row = batch.filter(bad).slice(0, 1).to_pylist()[0]
        raise ConstraintViolationError(  # deltalake's words first (the count is of this batch)
            f"Invalid data found: {int(pc.sum(bad).as_py())} rows failed validation check. "
            f"replaceWhere: written data does not satisfy the predicate {text!r}; e.g. row {row}"
        )


@dataclass
class Conformed:
    """Input batches conformed to a table; `rows` counts what has been yielded so far."""

    batches: Iterator[pa.RecordBatch]
    enforcer: Enforcer | None
    rows: int = 0


def conform_batches(batches: Iterator[pa.RecordBatch], metadata: Metadata, protocol: Protocol,
                    predicate: str | None, *, evolve_hint: str = "pass schema_mode='merge'") -> Conformed:
    """Rename, enforce, cast and check `batches` for a table with `metadata` (lazily, one batch at a time).
    `evolve_hint`: how the caller's users add columns (deltalake: schema_mode; Spark: mergeSchema)."""
    schema = metadata.schema
    target = to_arrow_schema(schema, include_metadata=False)
    enforcer = enforcer_for(metadata, protocol)
    sql_pred = parse_sql(predicate) if predicate is not None else None
    out = Conformed(iter(()), enforcer)

    def gen() -> Iterator[pa.RecordBatch]:
        for raw in batches:
            batch = match_columns(raw, schema)
            extra = [n for n in batch.schema.names if not schema.has(n)]
            if extra:
                raise SchemaError(f"data has column(s) {extra} not in the table schema; {evolve_hint} to add them")
            if enforcer is not None:
                batch = enforcer.prepare(batch)
            batch = cast_batch(batch, target)
            if sql_pred is not None:
                check_replace_where(batch, sql_pred, predicate or "")
            out.rows += batch.num_rows
            yield batch

    out.batches = gen()
    return out


def write_data(storage: Storage, batches: Iterator[pa.RecordBatch], metadata: Metadata, protocol: Protocol, *,
               predicate: str | None = None, target_file_size: int | None = None, writer_properties: Any = None,
               max_rows_per_file: int | None = None, progress: Callable[[int, int], None] | None = None,
               evolve_hint: str = "pass schema_mode='merge'", variant_shredding_schema: Any = None,
               shred_variants: bool = True) -> tuple[list[AddAction], int, dict[str, int]]:
    """Conform `batches` and write them as data files: (add actions, rows written, identity high-water marks).
    The embedded write and Spark's write tasks both come here. `target_file_size` None: `delta.targetFileSize`,
    else the writer's default (resolved by the writer). Variants are shredded when the table allows it
    (`files/shredding.py`) and `shred_variants` (the engine's own switch) is on, to `variant_shredding_schema`
    (Spark DDL) when given, else to the schema inferred per file."""
    conformed = conform_batches(batches, metadata, protocol, predicate, evolve_hint=evolve_hint)
    conf = metadata.configuration
    if schema_has_type(metadata.schema, "variant"):
        check_forced(variant_shredding_schema, conf, protocol)
    adds = parquet_writer.write_data_files(
        storage,
        conformed.batches,
        schema=metadata.schema,
        partition_columns=list(metadata.partition_columns),
        column_mapping_mode=conf.get("delta.columnMapping.mode", "none"),
        configuration=conf,
        target_file_size=target_file_size,
        writer_properties=writer_properties,
        max_rows_per_file=max_rows_per_file,
        progress=progress,
        variant_shredding=shred_variants and shredding_enabled(conf, protocol),
        variant_shapes=variant_shredding_schema,
    )
    enforcer = conformed.enforcer
    marks = enforcer.identity_updates() if enforcer is not None else {}
    return adds, conformed.rows, marks


__all__ = ["Conformed", "cast_batch", "check_replace_where", "conform_batches", "enforcer_for", "match_columns",
           "write_data"]
