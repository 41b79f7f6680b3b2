"""Which rows a DML predicate matches: the shared first step of DELETE (and UPDATE / MERGE next).

A SQL predicate (Spark SQL text) is planned once (:func:`plan_predicate`): parsed, checked against the
schema (unknown columns and syntax errors raise before anything is written), turned into a *pruning*
kernel predicate (the translatable top-level conjuncts: may match a superset, which is all file
skipping needs) and classified as partition-only or not.

:func:`find_touched_rows` then reads, per candidate file, only the columns the predicate needs, with
the file's deletion vector *not* applied, evaluates the predicate with Spark SQL semantics (NULL = not
matched) and returns the physical row indexes that match and are not already deleted. Physical
indexes are what deletion vectors store, and working on them keeps "already deleted" rows out of the
counts without a second read. No per-row Python: masks -> `pc.indices_nonzero` -> numpy.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError, InvalidPredicateTypeError
from ...kernel.arrow_build import arrow_to_np, bool_to_arrow, scalar
from ...kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from ...kernel.expressions import predicate as ex
from ...kernel.expressions.sql import SqlExpr, conjuncts, parse_sql, referenced_columns, to_predicate
from ...kernel.scan.partition_values import partition_columns_table
from ...kernel.scan.scan import Scan
from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.snapshot import Snapshot
from ...sqleval import evaluate

_EMPTY = np.empty(0, dtype=np.uint64)
_T = TypeVar("_T")
_R = TypeVar("_R")


_FALSE = scalar(False)  # an Arrow scalar: a Python literal in a compute call makes pyarrow import pandas


def prefetch(fn: Callable[[_T], _R], items: Iterable[_T], in_flight: int = 2) -> Iterator[_R]:
    """`map(fn, items)` in order, with up to `in_flight` calls running ahead on threads (file reads
    overlap the caller's writing; at most `in_flight` results are held)."""
    in_flight = max(1, in_flight)
    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        queue: deque[Future[_R]] = deque()
        for item in items:
            queue.append(pool.submit(fn, item))
            if len(queue) > in_flight:
                yield queue.popleft().result()
        while queue:
            yield queue.popleft().result()


@dataclass(frozen=True)
class DmlPredicate:
    """A planned DML predicate. `sql` None means "every row"."""

    text: str | None
    sql: SqlExpr | None
    #: the exact kernel predicate, or None when some part has no exact kernel form
    exact: ex.Expr | None
    #: a kernel predicate implied by `sql` (translatable conjuncts) for partition pruning, stats skipping
    #: and the conflict read set; None = no pruning possible
    pruning: ex.Expr | None
    #: top-level logical column names the predicate reads
    columns: tuple[str, ...]
    partition_only: bool


def plan_predicate(text: str | None, snapshot: Snapshot, parsed: SqlExpr | None = None) -> DmlPredicate:
    """Parse and check `text` against the table; raises InvalidFilterError (a DeltaError) when invalid.
    `parsed`: `text` already parsed (and normalized, e.g. Spark's analyzed casts folded) by the caller."""
    if text is None:
        return DmlPredicate(None, None, None, None, (), True)
    if not isinstance(text, str):  # deltalake's TypeError; InvalidPredicateTypeError is an InvalidFilterError too
        raise InvalidPredicateTypeError(f"a DML predicate must be a non-empty SQL string, got {text!r} "
                                        f"('{type(text).__name__}' object is not an instance of 'str')")
    if not text.strip():
        raise InvalidFilterError(f"a DML predicate must be a non-empty SQL string, got {text!r}")
    sql = parsed if parsed is not None else parse_sql(text)
    schema = snapshot.schema
    exact = to_predicate(sql, schema)  # InvalidFilterError on an unknown column
    parts: list[ex.Expr] = []
    for c in conjuncts(sql):
        p = to_predicate(c, schema)
        if p is not None:
            parts.append(p)
    pruning = exact if exact is not None else (ex.And(*parts) if len(parts) > 1 else parts[0] if parts else None)
    names: list[str] = []
    for path in referenced_columns(sql):
        name = schema.field(path[0]).name
        if name not in names:
            names.append(name)
    # the type check needs no data: evaluate on an empty table of the schema (a non-boolean predicate
    # must fail even when no file would be read)
    arrow = to_arrow_schema(schema, include_metadata=False)
    empty = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in arrow], schema=arrow)
    as_mask(evaluate(sql, empty), text)
    parts_lower = {p.lower() for p in snapshot.partition_columns}
    partition_only = all(n.lower() in parts_lower for n in names)
    return DmlPredicate(text, sql, exact, pruning, tuple(sorted(names)), partition_only)


def candidate_files(snapshot: Snapshot, pred: DmlPredicate, txn: Any) -> pa.Table:
    """Live files that may hold matching rows (partition pruning + stats skipping on `pred.pruning`); the
    transaction records what was read (the pruning predicate, or the whole table) for conflict checks."""
    if pred.pruning is None:
        txn.read_whole_table()
        return snapshot.files
    txn.read_predicate(pred.pruning)
    return Scan(snapshot, predicate=pred.pruning).plan()


def as_mask(result: pa.Array | pa.ChunkedArray, text: str | None) -> pa.Array:
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if pa.types.is_null(result.type):
        return pa.array(np.zeros(len(result), dtype=bool))
    if not pa.types.is_boolean(result.type):
        raise InvalidFilterError(f"Cannot create filter with non-boolean predicate: predicate {text!r} is of type "
                                 f"{result.type}, not boolean")
    return pc.fill_null(result, _FALSE)


def partition_matches(snapshot: Snapshot, pred: DmlPredicate, files: pa.Table) -> pa.Array:
    """Exact per-file mask of a partition-only predicate (SQL semantics on the typed partition values)."""
    if pred.sql is None or files.num_rows == 0:
        return pa.array(np.ones(files.num_rows, dtype=bool))
    cols = partition_columns_table(files.column("partition_values"), list(snapshot.partition_fields),
                                   snapshot.column_mapping_mode, paths=files.column("path"))
    table = pa.table(cols) if cols else pa.table({"__n": pa.nulls(files.num_rows)}).drop_columns(["__n"])
    return as_mask(evaluate(pred.sql, table), pred.text)


def existing_deleted(snapshot: Snapshot, file: Mapping[str, Any]) -> npt.NDArray[np.uint64]:
    """Sorted physical row indexes the file's current deletion vector deletes (empty without one)."""
    dv = file.get("deletion_vector")
    if not dv:
        return _EMPTY
    return read_deletion_vector(snapshot.storage, DeletionVectorDescriptor.from_dict(dv))


@dataclass
class TouchedFile:
    """A live file with rows matched: `matched` (sorted uint64, physical) excludes rows already deleted."""

    file: dict[str, Any]
    matched: npt.NDArray[np.uint64]
    existing: npt.NDArray[np.uint64]
    num_rows: int  # physical rows in the file

    @property
    def all_deleted(self) -> bool:
        """Every row of the file is deleted once `matched` is."""
        return int(self.matched.size + self.existing.size) >= self.num_rows

    @property
    def live_rows(self) -> int:
        """Rows a read of the file returns (its old deletion vector applied)."""
        return self.num_rows - int(self.existing.size)

    def live_mask(self) -> pa.Array:
        """`matched` as a mask over the file's live rows, so a rewrite does not evaluate the predicate again."""
        values = np.zeros(self.live_rows, dtype=np.bool_)
        values[live_positions(self.matched, self.existing)] = True
        return bool_to_arrow(values)

    def deleted(self) -> npt.NDArray[np.uint64]:
        """The file's new deleted set (existing DV union matched), sorted."""
        if not self.existing.size:
            return self.matched
        out: npt.NDArray[np.uint64] = np.union1d(self.existing, self.matched).astype(np.uint64)
        return out


def live_positions(physical: npt.NDArray[np.uint64], existing: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Positions among the live rows (what a DV-applied read returns) of rows at `physical` positions, none of
    them in the sorted `existing` deleted set."""
    idx = physical.astype(np.int64)
    return idx - np.searchsorted(existing, physical) if existing.size else idx


def physical_task(file: Mapping[str, Any]) -> dict[str, Any]:
    """A scan task for the file's *physical* rows (its deletion vector not applied)."""
    return {"path": file["path"], "partition_values": file.get("partition_values") or {},
            "deletion_vector": None, "size": file.get("size")}


def find_touched_rows(snapshot: Snapshot, pred: DmlPredicate, files: Sequence[dict[str, Any]],
                      in_flight: int = 4) -> Iterator[TouchedFile]:
    """Files of `files` (file-table rows) with rows `pred` matches, in order; files without are skipped."""
    scan = Scan(snapshot, columns=list(pred.columns))

    def work(file: dict[str, Any]) -> TouchedFile:
        data = scan.read_file(physical_task(file))
        n = data.num_rows
        if pred.sql is None:
            idx = np.arange(n, dtype=np.uint64)
        else:
            mask = as_mask(evaluate(pred.sql, data), pred.text) if n else pa.array([], pa.bool_())
            idx = arrow_to_np(pc.indices_nonzero(mask)).astype(np.uint64)
        existing = existing_deleted(snapshot, file)
        if existing.size and idx.size:
            idx = idx[~np.isin(idx, existing, assume_unique=True)]
        return TouchedFile(file, idx, existing, n)

    for touched in prefetch(work, files, in_flight):
        if touched.matched.size:
            yield touched


__all__ = ["DmlPredicate", "TouchedFile", "as_mask", "candidate_files", "existing_deleted", "find_touched_rows",
           "partition_matches", "physical_task", "plan_predicate", "prefetch"]
