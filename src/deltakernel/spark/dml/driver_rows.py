"""A small upsert's written rows picked and written by the driver: no Spark write job (MERGE, deletion vectors).

Why: with deletion vectors, a MERGE whose written rows are copies of source rows (`UPDATE SET *` of every
column, `INSERT *`) writes, per source row, one row per target row it updates (its pair's clause) or, in no
pair, one row of its first NOT MATCHED clause that holds (`MergePlan.source_rows`). On Spark that is a job of
its own after the deletion-vector job (the cached source read, each row's clauses looked up in an Arrow UDF,
Spark's Parquet writer with its staging directory and the footers read back by the driver), whose work for a
small source is tiny next to its fixed cost. When the source is small - Spark's own size estimate at most
`COLLECT_SOURCE_BYTES`, the default broadcast-join threshold: such a source goes through the driver for the
broadcast join anyway - the job that materializes the source (and observes its stats) also returns the columns
the clauses copy, the NOT MATCHED conditions and the row id (`columns`); the deletion-vector job returns every
pair's `(source row id, clause)` as before; the driver picks the rows (`rows`) and writes them with the kernel's
file writer (`write`, the files the `mapInArrow` write path writes). One Spark job fewer.

Only where the copy is exact: every value a plain source column of exactly the target column's Spark type (no
cast, nothing Spark's analyzer must value), no table rule, change data, row tracking or generated identity
(`merge.py` checks those), and the write path left to deltakernel (`auto`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ...kernel.log.actions import Metadata
from ...kernel.schema.arrow import to_arrow_schema
from .frame import Target, quote
from .merge_plan import SID, MergePlan
from .output import Written, cast_table, write_task_files, written_from
from .pair_clauses import lookup, sorted_pairs

# sources Spark estimates at most this large are read to the driver (Spark's default broadcast-join threshold)
COLLECT_SOURCE_BYTES = 10 * 1024 * 1024
_COPY = "__dk_s"


@dataclass(frozen=True)
class DriverRows:
    """What the source-materializing job returns (`columns`, over the source) for the driver to pick rows from."""

    columns: list[Any]


def plan_driver_rows(plan: MergePlan) -> DriverRows | None:
    """The columns to read with the source when every written value is an exact copy of a source column (see
    module docstring), else None. Driver-only: no Spark analysis, the source's schema is known already."""
    from pyspark.sql import functions as F

    if plan.by_source or not plan.updates:
        return None
    writers = plan.updates + plan.inserts
    n = len(plan.schema.fields)
    if any(not plan.clauses[i].all_columns for i in writers) or any(len(plan.values[i]) != n for i in plan.updates):
        return None
    s_types = {f.name: f.dataType for f in plan.source.schema.fields}
    used: set[int] = set()
    for i in writers:
        for name, value in plan.values[i].items():
            if not isinstance(value, str) or not value.startswith(_COPY):
                return None
            j = int(value[len(_COPY):])
            found, wanted = s_types.get(plan.s_names[j]), plan.spark_schema[name].dataType
            if found is None or not _plain(wanted) or found.simpleString() != wanted.simpleString():
                return None  # Spark would cast (its semantics, not Arrow's), or a type Arrow carries its own way
            used.add(j)
    columns = [F.col(SID)] + [F.col(quote(plan.s_names[j])).alias(f"{_COPY}{j}") for j in sorted(used)]
    return DriverRows(columns + plan.insert_conditions())


def _plain(t: Any) -> bool:
    """Types whose Arrow form from Spark's `toArrow` casts exactly to the table's Arrow schema (no variant,
    geospatial, interval or user-defined types)."""
    from pyspark.sql import types as T

    if isinstance(t, T.StructType):
        return all(_plain(f.dataType) for f in t.fields)
    if isinstance(t, T.ArrayType):
        return _plain(t.elementType)
    if isinstance(t, T.MapType):
        return _plain(t.keyType) and _plain(t.valueType)
    return type(t) in (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType,
                       T.DoubleType, T.DecimalType, T.StringType, T.BinaryType, T.DateType, T.TimestampType,
                       T.TimestampNTZType)


def rows(plan: MergePlan, source: pa.Table, pairs: pa.Table | None, target: pa.Schema) -> pa.Table:
    """The rows to write (`pick`) for `plan`'s clauses."""
    return pick(plan.updates, plan.inserts, plan.values, source, pairs, target)


def pick(updates: list[int], inserts: list[int], values: list[dict[str, Any]], source: pa.Table,
         pairs: pa.Table | None, target: pa.Schema) -> pa.Table:
    """The rows to write: per pair `(sid, a)` of an updating clause its source row, and each source row in no
    pair under its first NOT MATCHED clause whose condition `__dk_c<i>` holds (NULL does not); a clause's
    column is the source copy `values[clause][column]` names, NULL when none. In the table's Arrow schema."""
    sid = source.column(SID).combine_chunks()
    n = source.num_rows
    if pairs is not None and pairs.num_rows:
        keys, pair_clauses = sorted_pairs(pairs)
        lists = lookup(keys, pair_clauses, sid)
        counts = np.diff(lists.offsets.to_numpy())
        parent = np.repeat(np.arange(n, dtype=np.int64), counts)
        clause = lists.values.to_numpy(zero_copy_only=False)
    else:
        counts, parent, clause = np.zeros(n, np.int64), np.empty(0, np.int64), np.empty(0, np.int32)
    picks = [(i, parent[clause == i]) for i in updates]
    free = counts == 0
    for i in inserts:
        holds = source.column(f"__dk_c{i}").combine_chunks().fill_null(False).to_numpy(zero_copy_only=False)
        hit = free & holds.astype(np.bool_)
        picks.append((i, np.flatnonzero(hit)))
        free &= ~hit
    parts = []
    for i, index in picks:
        if index.size == 0:
            continue
        taken = source.take(pa.array(index))
        copies = values[i]
        cols = [taken.column(copies[f.name]) if f.name in copies else pa.nulls(index.size, f.type) for f in target]
        parts.append(cast_table(pa.Table.from_arrays(cols, names=target.names), target))
    if not parts:
        return pa.schema([f.with_nullable(True) for f in target]).empty_table()
    return pa.concat_tables(parts)


def write(target: Target, metadata: Metadata, table: pa.Table) -> Written:
    """`table` (the table's logical columns) written as data files by the kernel's writer on the driver."""
    if table.num_rows == 0:
        return Written()
    mode = metadata.configuration.get("delta.columnMapping.mode", "none") or "none"
    out = write_task_files(target.storage, metadata, None, mode, None, iter(table.to_batches()),
                           lambda: table.num_rows)
    return written_from(pa.Table.from_batches([out]))


def arrow_schema(metadata: Metadata) -> pa.Schema:
    return to_arrow_schema(metadata.schema, include_metadata=False)


__all__ = ["COLLECT_SOURCE_BYTES", "DriverRows", "arrow_schema", "pick", "plan_driver_rows", "rows", "write"]
