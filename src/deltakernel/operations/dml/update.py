"""UPDATE (deltalake's `DeltaTable.update`, delta-spark's UpdateCommand semantics).

1. Plan the SET list (:func:`plan_assignments`: target columns resolved by `assignments.SetTargets`, shared
   with Spark's UPDATE; SQL expressions parsed and type-checked on an empty batch) and the predicate
   (`touched_rows.plan_predicate`): bad input raises before anything is written.
2. Candidate files: partition pruning + stats skipping; a partition-only predicate is decided exactly on
   each file's partition values. The matching physical rows are found reading only the predicate's
   columns (`touched_rows.find_touched_rows`; NULL = not matched).
3. New values: each expression is evaluated on the *old* rows with the kernel's SQL evaluator and cast
   to the column's type (strictly unless `error_on_type_mismatch=False`, then a value that does not fit
   becomes NULL); generated columns not set explicitly are recomputed and every rule of the table
   (NOT NULL, CHECK, invariants, generated columns) is enforced on the updated rows
   (`write/enforcement.Enforcer`). Updated rows are written through the ordinary file writer, so an updated
   partition column moves the row to its partition.
4. Then either
   - deletion vectors (`dv_writer.deletion_vectors_writable`): the old rows are marked deleted in their
     files' DVs (one DV file for the operation), the updated rows go to new files; or
   - copy-on-write: each touched file is rewritten with its copied rows and its updated rows (in the
     original row order).
   Change data: the old rows as `update_preimage`, the new ones as `update_postimage`. Row tracking:
   updated rows keep their row id (materialized column) and get this commit as their row commit version
   (materialized version NULL -> the new file's defaultRowCommitVersion); copied rows keep both.
5. One transaction commits it with the read set DELETE records. Nothing matched -> no commit.
"""

from __future__ import annotations

import datetime as dt
import decimal
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Union

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import (
    InvalidFilterError,
    InvalidNewValueError,
    InvalidUpdatesError,
    SchemaError,
)
from ...kernel import row_tracking as rt
from ...kernel.arrow_build import broadcast
from ...kernel.expressions.sql import SqlExpr, parse_sql, referenced_columns
from ...kernel.log.actions import Metadata
from ...kernel.scan.scan import Scan
from ...kernel.schema.arrow import to_arrow_schema, to_arrow_type
from ...kernel.schema.types import StructField, StructType, schema_to_json
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage
from ..commit_options import CommitProperties, PostCommitHookProperties
from ..files.change_data import ChangeDataWriter
from ..files.dml_output import DataFileOutput
from ..write.enforcement import GENERATION_EXPRESSION, Enforcer, cast_for_column
from .assignments import SetTargets
from .commit import FileChangeMetrics, ms_since, run_and_commit
from .dv_writer import DeletionVectorWriter, deletion_vectors_writable
from .rewrite import FILE_COLUMNS, PIECE_ROWS, live_pieces, remove_action, row_tracking_configuration
from .touched_rows import (
    DmlPredicate,
    TouchedFile,
    candidate_files,
    find_touched_rows,
    partition_matches,
    plan_predicate,
    prefetch,
)

_COLUMNS = [*FILE_COLUMNS, "modification_time"]
#: one SET value: a parsed SQL expression (`updates`) or a Python literal (`new_values`) as an Arrow scalar
Assignment = Union[SqlExpr, pa.Scalar]


@dataclass
class UpdateMetrics(FileChangeMetrics):
    num_updated_rows: int = 0

    ROW_COUNTER: ClassVar[tuple[str, str]] = ("num_updated_rows", "numUpdatedRows")


# ----------------------------------------------------------------------------- the SET list
def _literal(column: str, value: Any) -> pa.Scalar:
    """A `new_values` Python value as an Arrow scalar (cast to the column type later)."""
    if value is None:
        return pa.scalar(None, pa.null())
    if isinstance(value, (bool, int, float, str, bytes, dt.date, dt.datetime, decimal.Decimal, list, dict)):
        try:
            return pa.scalar(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise SchemaError(f"new value for column {column!r} ({value!r}) has no Arrow type: {e}") from e
    raise InvalidNewValueError(
        f"Invalid datatype provided in new_values, only int, float, bool, list, str or datetime or accepted "
        f"(deltakernel also accepts None, bytes, date, Decimal and dict); column {column!r} got "
        f"{type(value).__name__}")


def plan_assignments(snapshot: Snapshot, updates: Mapping[str, str] | None,
                     new_values: Mapping[str, Any] | None) -> dict[str, Assignment]:
    """`{table column name: value}`; raises (a DeltaError) for a wrong argument, an unknown or duplicated
    column, an identity column, an SQL syntax error or an expression that cannot be stored in its column."""
    # deltalake's exception types and messages (users match on them); InvalidFilterError is a ValueError
    if updates is not None and new_values is not None:
        raise InvalidFilterError("Passing updates and new_values at same time is not allowed, pick one.")
    if updates is None and new_values is None:
        raise InvalidFilterError("Either updates or new_values need to be passed to update the table.")
    if updates is not None and isinstance(updates, Mapping) and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in updates.items()):
        raise InvalidUpdatesError(f"The values of the updates parameter must all be SQL strings. Got {updates}. "
                                  "Did you mean to use the new_values parameter?")
    given = updates if updates is not None else new_values
    if not isinstance(given, Mapping) or not given:
        raise InvalidFilterError(f"update needs a non-empty mapping of column -> value, got {given!r}")
    schema = snapshot.schema
    targets = SetTargets(schema, quotes='`"')  # deltalake quotes names as "fooBar"
    out: dict[str, Assignment] = {}
    for key, value in given.items():
        if not isinstance(key, str):
            raise SchemaError(f"update target must be a column name (str), got {key!r}")
        field = targets.resolve(key)
        if updates is not None:
            if not isinstance(value, str):
                raise InvalidFilterError(f"updates values must be SQL text; column {key!r} got {value!r} "
                                         "(use new_values= for Python values)")
            out[field.name] = parse_sql(value)
        else:
            out[field.name] = _literal(key, value)
    # type check without data: unknown columns in the expressions, non-castable results
    arrow = to_arrow_schema(schema, include_metadata=False)
    empty = pa.table([pa.nulls(0, f.type) for f in arrow], schema=arrow)
    for name, value in out.items():
        _value(name, value, empty, to_arrow_type(schema.field(name).type), strict=True)
    return out


def _value(name: str, value: Assignment, rows: pa.Table, target: pa.DataType, *, strict: bool) -> pa.Array:
    """The new values of column `name` for `rows` (the old rows), as `target`."""
    from ...sqleval import Evaluator

    out = value if isinstance(value, pa.Scalar) else Evaluator(rows).eval(value)
    if isinstance(out, pa.Scalar):  # a constant: broadcast in C++ (no Python list of n values)
        out = broadcast(out, rows.num_rows)
    return cast_for_column(out, target, name, strict=strict, what="UPDATE")


class _Updater:
    """Applies the SET list to old rows: values cast, generated columns recomputed, table rules enforced."""

    def __init__(self, metadata: Metadata, protocol: Any, assignments: dict[str, Assignment], strict: bool) -> None:
        self.schema = metadata.schema
        self.assignments = assignments
        self.strict = strict
        self.targets = {n: to_arrow_type(self.schema.field(n).type) for n in assignments}
        # generated columns not set explicitly are recomputed from the new values (the enforcer fills
        # absent generated columns); identity columns are never filled (UPDATE cannot set them anyway)
        self.regenerate = [f.name for f in self.schema.fields
                           if GENERATION_EXPRESSION in f.metadata and f.name not in assignments]
        fields = tuple(StructField(f.name, f.type, f.nullable,
                                   {k: v for k, v in f.metadata.items() if not k.startswith("delta.identity.")})
                       for f in self.schema.fields)
        self.enforcer = Enforcer(replace(metadata, schema_string=schema_to_json(StructType(fields))), protocol)
        #: columns whose values may differ between an old row and its update
        self.changed = {*assignments, *(self.regenerate if self.enforcer.needed else ()), rt.ROW_COMMIT_VERSION}
        self.arrow = to_arrow_schema(self.schema, include_metadata=False)

    def unread_columns(self) -> set[str]:
        """Assigned columns that no assignment reads: their old values are never needed (unless change data
        records pre-images), so merge-on-read does not decode them."""
        read: set[str] = set()
        for value in self.assignments.values():
            if not isinstance(value, pa.Scalar):
                read |= {path[0].lower() for path in referenced_columns(value)}
        return {n for n in self.assignments if n.lower() not in read}

    def apply(self, old: pa.Table) -> pa.Table:
        """The updated rows of `old` (logical columns, in schema order; columns of `unread_columns` may be
        missing from `old`)."""
        for name in self.assignments:
            if name not in old.schema.names:  # not read: overwritten below, never looked at
                old = old.append_column(self.arrow.field(name), pa.nulls(old.num_rows, self.arrow.field(name).type))
        logical = old.select([f.name for f in self.schema.fields])
        new = logical
        for name, value in self.assignments.items():
            arr = _value(name, value, logical, self.targets[name], strict=self.strict)
            i = new.schema.get_field_index(name)
            new = new.set_column(i, new.schema.field(i), arr)
        if self.enforcer.needed:
            if self.regenerate:
                new = new.drop_columns(self.regenerate)
            new = self.enforcer.prepare(new)
            new = new.select([f.name for f in self.schema.fields])
        return new.cast(self.arrow) if new.schema != self.arrow else new


# ----------------------------------------------------------------------------- writing updated rows
def _with_new_versions(updated: pa.Table, old: pa.Table) -> pa.Table:
    """Updated rows keep the old `_row_id`; their `_row_commit_version` is NULL (= the new file's version)."""
    return updated.append_column(rt.ROW_ID, old.column(rt.ROW_ID)).append_column(
        rt.ROW_COMMIT_VERSION, pa.nulls(old.num_rows, pa.int64()))


def _scatter(data: pa.Table, mask: pa.Array, updated: pa.Table, changed: Collection[str]) -> pa.Table:
    """`data` with its masked rows replaced, in order, by `updated`'s rows. Only the `changed` columns
    differ between the old and the updated rows: the others are kept as they are (no copy)."""
    cols = []
    for i, f in enumerate(data.schema):
        col = data.column(i)
        if f.name in changed:
            new = updated.column(f.name)
            new = new.cast(f.type) if new.type != f.type else new
            try:
                col = pc.replace_with_mask(col, mask, new.combine_chunks())
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # nested types: a take instead
                n = data.num_rows
                sel = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
                idx = np.arange(n, dtype=np.int64)
                idx[sel] = n + np.arange(int(sel.sum()), dtype=np.int64)
                col = pa.chunked_array([*col.chunks, *new.chunks], f.type).take(_int64s(idx))
        cols.append(col)
    return pa.table(cols, schema=data.schema)


def _int64s(values: npt.NDArray[np.int64]) -> pa.Array:
    """numpy int64 -> Arrow without pa.array (whose first use imports pandas)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


# ----------------------------------------------------------------------------- the operation
class _Update:
    """One UPDATE: collects actions into `txn`, remembers the files it wrote for `abort`."""

    def __init__(self, storage: Storage, snapshot: Snapshot, pred: DmlPredicate, assignments: dict[str, Assignment],
                 txn: KernelTransaction, writer_properties: Any, strict: bool) -> None:
        self.storage = storage
        self.snapshot = snapshot
        self.pred = pred
        self.assignments = assignments
        self.txn = txn
        self.writer_properties = writer_properties
        self.strict = strict
        self.now = int(time.time() * 1000)
        self.metrics = UpdateMetrics()
        self.cdc: ChangeDataWriter | None = None
        self.output: DataFileOutput | None = None
        self.dv_writer: DeletionVectorWriter | None = None

    def run(self) -> None:
        start = time.monotonic()
        files = candidate_files(self.snapshot, self.pred, self.txn)
        pred = self.pred
        if pred.partition_only and pred.sql is not None:  # decided exactly on partition values
            files = files.filter(partition_matches(self.snapshot, pred, files))
            pred = plan_predicate(None, self.snapshot)
        rows = files.select(_COLUMNS).to_pylist()
        self.txn.read_files([r["path"] for r in rows])
        touched = find_touched_rows(self.snapshot, pred, rows)
        first = next(touched, None)
        if first is None:
            self.metrics.scan_time_ms = ms_since(start)
            return
        configuration = row_tracking_configuration(self.txn)
        md = self.txn.metadata
        self.output = DataFileOutput(self.snapshot, self.storage, md.schema, md.partition_columns, configuration,
                                     self.writer_properties)
        self.cdc = ChangeDataWriter.for_commit(self.storage, md, self.snapshot.column_mapping_mode, configuration,
                                               self.writer_properties)
        updater = _Updater(md, self.snapshot.protocol, self.assignments, self.strict)

        def all_touched() -> Iterator[TouchedFile]:
            yield first
            yield from touched

        if deletion_vectors_writable(self.snapshot):
            self._with_deletion_vectors(all_touched(), updater, start)
        else:
            self._copy_on_write(all_touched(), updater, start)
        m = self.metrics
        m.num_added_files += len(self.output.adds)
        m.num_added_bytes += sum(int(a.get("size") or 0) for a in self.output.adds)
        self.txn.add_files(self.output.adds)
        if self.output.row_tracking:
            self.txn.set_commit_tag("delta.rowTracking.preserved", "true")
        if self.cdc is not None:
            m.num_added_change_files = self.cdc.commit_into(self.txn)

    def _changed(self, old: pa.Table, new: pa.Table) -> None:
        if self.cdc is not None:
            self.cdc.add(old, "update_preimage")
            self.cdc.add(new, "update_postimage")

    def _remove(self, row: dict[str, Any]) -> None:
        self.txn.remove_files([remove_action(row, self.now)])
        self.metrics.count_removed(row)

    # ------------------------------------------------------------------ merge-on-read
    def _with_deletion_vectors(self, touched: Iterator[TouchedFile], updater: _Updater, start: float) -> None:
        assert self.output is not None
        output = self.output
        unread = updater.unread_columns() if self.cdc is None else set()
        scan = Scan(self.snapshot, columns=[f.name for f in self.snapshot.schema.fields if f.name not in unread],
                    row_tracking=output.row_tracking)
        self.dv_writer = dv_writer = DeletionVectorWriter(self.storage, self.txn.metadata.configuration)
        kept: list[TouchedFile] = []
        m = self.metrics

        def work(t: TouchedFile) -> tuple[TouchedFile, pa.Table, pa.Table]:
            """On a prefetch thread (overlapping the writer): read, pick the matched rows, update them."""
            physical = scan.read_file({**t.file, "deletion_vector": None})  # physical rows: DV indexes
            old = physical.take(_int64s(t.matched.astype(np.int64)))
            return t, old, updater.apply(old)

        def batches() -> Iterator[pa.RecordBatch]:
            for t, old, new in prefetch(work, touched):
                self._changed(old, new)
                m.num_updated_rows += old.num_rows
                if t.all_deleted:
                    self._remove(t.file)
                else:
                    dv_writer.add(t.deleted())
                    kept.append(t)
                if output.row_tracking:
                    new = _with_new_versions(new, old)
                yield from output.materialize(new).to_batches()

        output.write(batches())
        m.scan_time_ms = ms_since(start)
        write_start = time.monotonic()
        replaced = dv_writer.commit_into(self.txn, [t.file for t in kept], self.now)
        m.num_deletion_vectors_added += len(kept)
        m.num_deletion_vectors_updated += replaced
        m.num_deletion_vectors_removed += replaced
        m.rewrite_time_ms = ms_since(write_start)

    # ------------------------------------------------------------------ copy-on-write
    def _copy_on_write(self, touched: Iterator[TouchedFile], updater: _Updater, start: float) -> None:
        assert self.output is not None
        output = self.output
        scan = Scan(self.snapshot, row_tracking=output.row_tracking)
        m = self.metrics

        def pieces() -> Iterator[pa.Table]:
            """Each touched file streamed in pieces, its matched rows updated in place (copied and updated rows
            in the original order); removes and change data recorded on the way. (Producing the pieces on a
            helper thread ahead of the writer measured no faster: the writer encodes on its own threads.)"""
            for t in touched:
                mask_all = t.live_mask()  # found already: no second evaluation
                self._remove(t.file)
                # no `release_rows` here: each release costs ~5 ms, UPDATE 0.93x -> 1.18x deltalake's time
                # for 0.95x -> 0.83x its peak RSS (docs/benchmark-history.md, session 19)
                for offset, piece in live_pieces(t.file["path"], scan.read_file_pieces(t.file, PIECE_ROWS),
                                                 t.live_rows):
                    mask = mask_all.slice(offset, piece.num_rows)
                    old = piece.filter(mask)
                    m.num_copied_rows += piece.num_rows - old.num_rows
                    if old.num_rows == 0:
                        yield output.materialize(piece)
                        continue
                    new = updater.apply(old)
                    self._changed(old, new)
                    m.num_updated_rows += old.num_rows
                    written = _with_new_versions(new, old) if output.row_tracking else new
                    yield output.materialize(_scatter(piece, mask, written, updater.changed))

        def batches() -> Iterator[pa.RecordBatch]:
            for content in pieces():
                yield from content.to_batches()

        write_start = time.monotonic()
        output.write(batches())
        output.finish()
        m.scan_time_ms = ms_since(start)
        m.rewrite_time_ms = ms_since(write_start)

    def abort(self) -> None:
        """Delete every file this UPDATE wrote (only when its commit is known absent)."""
        for part in (self.output, self.cdc, self.dv_writer):
            if part is not None:
                part.abort()


def update(storage: Storage, snapshot: Snapshot, updates: Mapping[str, str] | None = None,
           new_values: Mapping[str, Any] | None = None, predicate: str | None = None, *,
           writer_properties: Any = None, error_on_type_mismatch: bool = True,
           commit_properties: CommitProperties | None = None,
           post_commithook_properties: PostCommitHookProperties | None = None,
           recorded_predicate: str | None = None) -> tuple[dict[str, int], int | None]:
    """Set the columns of `updates` / `new_values` on the rows matching `predicate` (all rows when None);
    returns (metrics, committed version or None when no row matched). The table is unchanged on error.
    `recorded_predicate`: the caller's spelling of `predicate` for commitInfo (deltalake's `"fooBar"`)."""
    start = time.monotonic()
    assignments = plan_assignments(snapshot, updates, new_values)
    pred = plan_predicate(predicate, snapshot)
    txn = KernelTransaction(storage, snapshot, operation="UPDATE",
                            operation_parameters={"predicate": recorded_predicate or predicate}
                            if predicate is not None else {})
    op = _Update(storage, snapshot, pred, assignments, txn, writer_properties, strict=error_on_type_mismatch)
    return run_and_commit(op, txn, start, commit_properties, post_commithook_properties)


__all__ = ["UpdateMetrics", "plan_assignments", "update"]
