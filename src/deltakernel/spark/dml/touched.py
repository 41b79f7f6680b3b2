"""Which files a DML touches, and their new deletion vectors, computed by Spark on the executors.

`match_counts`: matched rows per file id (a `groupBy`), one small row per touched file for the driver.

`write_deletion_vectors` (merge-on-read): the matched `(file id, physical row index)` pairs are shuffled by
file (`repartition(n, fid)` + sort by fid, so each file's rows are contiguous and in one task). Each task
unions a file's rows with its existing DV (read on the executor), serializes the RoaringBitmapArray and
queues it in one `DeletionVectorWriter`; at the end of the task all its bitmaps go into ONE DV file in
Delta's format (offsets per DV), written with put-if-absent. The task returns, per file, only the
descriptor (path, offset, size, cardinality) and the number of newly deleted rows; files whose every row
is now deleted come back marked `full` (the driver removes them, no bitmap written). Memory per task: one
file's row indexes plus the serialized bitmaps of its files. MERGE hands in its pairs with their clause:
the task deletes the rows of updating / deleting clauses and also returns, per file, the rows updated and
deleted and the most pairs of one target row (a duplicate match), so no separate classification job runs.
`write_deletion_vectors_and_pairs` (MERGE whose written rows come from the source alone) also returns every
pair's `(source row id, clause)`: the write looks them up in its own tasks (`pair_clauses.py`) instead of
joining the pairs again, so the pairs are neither kept on the executors nor broadcast in a job of their own.
A task with more than `PAIRS_LIMIT` pairs returns an overflow marker instead (the caller recomputes them).
`deletion_vectors_on_driver` (the same MERGE, few pairs): the scan tasks return their pairs with file and row
(an overflow marker past the source's row count) and the driver runs the DV task's code (`_dv_rows`) on them:
the shuffle by file and the DV job's tasks cost more than the driver's work on tens of thousands of pairs.

Why on executors: the matched rows of a large DELETE do not fit the driver, and a bitmap per file is
exactly the unit a task can finish alone. A retried task writes a new DV file under a new UUID; only the
attempt Spark accepted is reported, the other file is an orphan VACUUM removes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...kernel.deletion_vectors import DeletionVectorDescriptor
from ...kernel.paths import resolve_file
from ...operations.dml.dv_writer import DeletionVectorWriter, dv_add_action
from ...operations.dml.rewrite import FILE_COLUMNS, remove_action
from ..common.task_errors import marked, task_errors
from ..kinds.session import Shared
from .frame import FID, ROW, Target, executor_storage, existing_deleted

DV_RESULT = "fid int, deleted long, full boolean, dv string, upd long, del long, n long"
_DV_SCHEMA = pa.schema([("fid", pa.int32()), ("deleted", pa.int64()), ("full", pa.bool_()), ("dv", pa.string()),
                        ("upd", pa.int64()), ("del", pa.int64()), ("n", pa.int64())])
# with the pairs: file rows have sid / a NULL, pair rows fid NULL; an overflow marker has fid and sid NULL
DV_PAIRS_RESULT = DV_RESULT + ", sid long, a int"
_DV_PAIRS_SCHEMA = _DV_SCHEMA.append(pa.field("sid", pa.int64())).append(pa.field("a", pa.int32()))
# the pairs as scan tasks return them to the driver (`deletion_vectors_on_driver`); fid NULL: overflow
FETCHED = "fid int, row long, a int, sid long"
_FETCHED_SCHEMA = pa.schema([("fid", pa.int32()), ("row", pa.int64()), ("a", pa.int32()), ("sid", pa.int64())])
PAIRS_LIMIT = 2_000_000  # pairs the DV tasks return to the driver (12 bytes each), split evenly between them
PAIRS_PER_TASK_MIN = 10_000  # ... but never fewer per task
FILE_ROW_COLUMNS = [*FILE_COLUMNS, "modification_time"]


def to_arrow(df: Any) -> pa.Table:
    """A small result frame on the driver as Arrow (pyspark >= 4: no per-row Python objects)."""
    to = getattr(df, "toArrow", None)
    if to is not None:
        return to()
    rows = [r.asDict() for r in df.collect()]  # pragma: no cover - pyspark 3
    return pa.Table.from_pylist(rows)  # pragma: no cover


def shuffle_partitions(spark: Any, files: int) -> int:
    """Tasks for a per-file job: Spark's shuffle partitions, never more than the files."""
    try:
        n = int(spark.conf.get("spark.sql.shuffle.partitions", "200"))
    except (TypeError, ValueError):
        n = 200
    return max(1, min(files, n))


def match_counts(frame: Any, condition: Any) -> pa.Table:
    """`(fid, count)` of the rows `condition` matches (all rows when None), per file with a match."""
    from pyspark.sql import functions as F

    matched = frame.where(condition) if condition is not None else frame
    out = to_arrow(matched.groupBy(FID).agg(F.count(F.lit(1)).alias("count")))
    return out.sort_by(FID) if out.num_rows else pa.table({FID: pa.array([], pa.int32()),
                                                           "count": pa.array([], pa.int64())})


def num_records(files: pa.Table) -> pa.Array:
    """Physical rows per file from the stats' `numRecords` (null when absent), without a JSON parse per file."""
    stats = files.column("stats").combine_chunks()
    found = pc.extract_regex(stats, r'"numRecords"\s*:\s*(?P<n>\d+)').field("n")
    found = pc.if_else(pc.greater(pc.utf8_length(found), 0), found, pa.scalar(None, pa.string()))  # no match: ''
    return pc.cast(found, pa.int64())


# ----------------------------------------------------------------------------- the executor task
@dataclass(frozen=True)
class DvPlan:
    """What every DV task needs (`session.Shared`): the table, its configuration (random prefixes) and, per file
    id, the path, the current DV and numRecords."""

    uri: str
    storage_options: dict[str, str] | None
    configuration: dict[str, str]
    files: pa.Table  # path, deletion_vector, num_records; row i = file id i
    # MERGE: (updating, deleting) clause ids. The input's third column is each pair's clause; a file's rows
    # of these clauses are deleted, and the task also counts them and the most pairs of one target row
    clauses: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    # MERGE: the input's fourth column is each pair's source row id; return (sid, clause) of every pair
    pairs_limit: int | None = None


@dataclass
class _DvBuilder:
    plan: DvPlan
    storage: Any
    writer: DeletionVectorWriter
    # fid, new rows, full, writer index (-1: none), (updated, deleted, most pairs of one row) for MERGE
    found: list[tuple[int, int, bool, int, tuple[int, int, int]]] = field(default_factory=list)

    def finish(self, fid: int, parts: list[np.ndarray], clauses: list[np.ndarray] | None = None) -> None:
        rows = np.concatenate(parts).astype(np.uint64)
        counts = (0, 0, 1)
        if clauses is not None and self.plan.clauses is not None:
            rows, counts = self._merge_rows(rows, np.concatenate(clauses))
        matched = np.unique(rows)
        dv = self.plan.files.column("deletion_vector")[fid].as_py()
        existing = existing_deleted(self.storage, dv) if matched.size else matched
        new = np.setdiff1d(matched, existing, assume_unique=True) if existing.size else matched
        if new.size == 0:
            if counts[2] > 1:  # no row changes here, but the driver must see the duplicate match
                self.found.append((fid, 0, False, -1, counts))
            return
        union = np.union1d(existing, new).astype(np.uint64) if existing.size else new
        if union.size >= self._physical_rows(fid):
            self.found.append((fid, int(new.size), True, -1, counts))
        else:
            self.found.append((fid, int(new.size), False, self.writer.add(union), counts))

    def _merge_rows(self, rows: np.ndarray, clause: np.ndarray) -> tuple[np.ndarray, tuple[int, int, int]]:
        """MERGE pairs of one file: the rows an updating or deleting clause changes, and (rows updated, rows
        deleted, most pairs of one target row that a clause acts on)."""
        assert self.plan.clauses is not None
        updating, deleting = self.plan.clauses
        upd = np.isin(clause, np.asarray(updating, dtype=clause.dtype))
        dele = np.isin(clause, np.asarray(deleting, dtype=clause.dtype))
        acted = rows[upd | dele]  # delta-spark counts only the pairs a clause acts on as duplicate matches
        most = int(np.unique(acted, return_counts=True)[1].max()) if acted.size else 0
        counts = (int(np.unique(rows[upd]).size), int(np.unique(rows[dele]).size), most)
        return rows[upd | dele], counts

    def _physical_rows(self, fid: int) -> int:
        n = self.plan.files.column("num_records")[fid].as_py()
        if n is not None:
            return int(n)
        storage, key = resolve_file(self.storage, self.plan.files.column("path")[fid].as_py())
        return int(pq.ParquetFile(storage.open_input_file(key)).metadata.num_rows)

    def result(self) -> pa.RecordBatch:
        descriptors = self.writer.write()
        schema = _DV_SCHEMA if self.plan.pairs_limit is None else _DV_PAIRS_SCHEMA
        cols: list[list[Any]] = [[] for _ in schema]
        for fid, n, is_full, index, (upd, dele, most) in self.found:
            dv = None if index < 0 else json.dumps(descriptors[index].to_dict(), separators=(",", ":"))
            for col, v in zip(cols, (fid, n, is_full, dv, upd, dele, most, None, None)):
                col.append(v)
        return pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema)], schema=schema)


def _pairs_batch(sids: list[np.ndarray], clauses: list[np.ndarray], limit: int) -> pa.RecordBatch:
    """The task's pairs as `(sid, a)` rows (the other columns NULL), or one overflow marker row."""
    sid = np.concatenate(sids) if sids else np.empty(0, np.int64)
    a = np.concatenate(clauses) if clauses else np.empty(0, np.int32)
    if sid.size > limit:
        sid, a = np.empty(0, np.int64), np.empty(0, np.int32)
        arrays = [pa.nulls(1, f.type) for f in _DV_PAIRS_SCHEMA]  # fid and sid NULL: overflow
    else:
        arrays = [pa.nulls(sid.size, f.type) for f in _DV_SCHEMA]
        arrays += [pa.array(sid.astype(np.int64, copy=False)), pa.array(a.astype(np.int32, copy=False))]
    return pa.RecordBatch.from_arrays(arrays, schema=_DV_PAIRS_SCHEMA)


def _dv_rows(plan: DvPlan, batches: Iterator[pa.RecordBatch]) -> tuple[pa.RecordBatch, pa.RecordBatch | None]:
    """The DV work over `batches` of `(fid, row[, clause[, sid]])` sorted by file id (a file's rows contiguous):
    the per-file result and, with `plan.pairs_limit`, the pairs' batch. A task's body, or the driver's."""
    storage = executor_storage(plan.uri, plan.storage_options)
    builder = _DvBuilder(plan, storage, DeletionVectorWriter(storage, plan.configuration))
    current: int | None = None
    merge = plan.clauses is not None
    parts: list[np.ndarray] = []
    clauses: list[np.ndarray] = []
    pair_sids: list[np.ndarray] = []
    pair_clauses: list[np.ndarray] = []
    for batch in batches:
        if batch.num_rows == 0:
            continue
        fids = batch.column(0).to_numpy(zero_copy_only=False)
        rows = batch.column(1).to_numpy(zero_copy_only=False)
        which = batch.column(2).to_numpy(zero_copy_only=False) if merge else None
        if plan.pairs_limit is not None and which is not None:
            pair_sids.append(batch.column(3).to_numpy(zero_copy_only=False))
            pair_clauses.append(which)
        cuts = np.flatnonzero(fids[1:] != fids[:-1]) + 1
        for start, end in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(fids)]))):
            fid = int(fids[start])
            if fid != current:
                if current is not None:
                    builder.finish(current, parts, clauses if merge else None)
                current, parts, clauses = fid, [], []
            parts.append(rows[start:end])
            if which is not None:
                clauses.append(which[start:end])
    if current is not None:
        builder.finish(current, parts, clauses if merge else None)
    out = builder.result()
    pairs = _pairs_batch(pair_sids, pair_clauses, plan.pairs_limit) if plan.pairs_limit is not None else None
    return out, pairs


def _dv_task(bc: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with marked():
            out, pairs = _dv_rows(bc.value, batches)
        yield out
        if pairs is not None:
            yield pairs
    return run


def write_deletion_vectors(target: Target, files: pa.Table, matched: Any, configuration: dict[str, str],
                           clauses: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> pa.Table:
    """Run the DV job over `matched` (a target frame filtered to the matched rows, existing DVs not applied);
    returns `(fid, deleted, full, dv, upd, del, n)` sorted by fid, one row per file with newly deleted rows.
    MERGE passes its pairs `(fid, row, clause)` and `clauses` (updating, deleting clause ids): the rows of
    those clauses are deleted, `upd` / `del` count them per file and `n` is the most pairs of one target row
    (files whose only news is n > 1 come back too, with nothing deleted)."""
    out = _dv_job(target, files, matched, configuration, clauses, None)
    return out.sort_by("fid") if out.num_rows else out


def write_deletion_vectors_and_pairs(
        target: Target, files: pa.Table, matched: Any, configuration: dict[str, str],
        clauses: tuple[tuple[int, ...], tuple[int, ...]]) -> tuple[pa.Table, pa.Table | None]:
    """`write_deletion_vectors` for MERGE pairs `(fid, row, clause, sid)`, returning also every pair's
    `(sid, a)` (None when a task had more than its share of `PAIRS_LIMIT` pairs: the caller computes them
    again)."""
    out = _dv_job(target, files, matched, configuration, clauses, PAIRS_LIMIT)
    fid, sid = out.column("fid"), out.column("sid")
    rows = out.filter(pc.is_valid(fid)).select(_DV_SCHEMA.names)
    overflow = bool(pc.any(pc.and_(pc.is_null(fid), pc.is_null(sid))).as_py()) if out.num_rows else False
    pairs = None if overflow else out.filter(pc.is_valid(sid)).select(["sid", "a"])
    return (rows.sort_by("fid") if rows.num_rows else rows), pairs


def _fetched_type() -> Any:
    """`FETCHED` as a Spark type (a DDL string is parsed by the JVM: an analyze request on Spark Connect)."""
    from pyspark.sql import types as T

    return T.StructType([T.StructField(f.name, T.IntegerType() if f.type == pa.int32() else T.LongType())
                         for f in _FETCHED_SCHEMA])


def _fetch_task(limit: int) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """A scan task's pairs as they are, or one overflow row (fid NULL) past `limit` of them."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        kept: list[pa.RecordBatch] = []
        n = 0
        for batch in batches:  # read to the end either way
            n += batch.num_rows
            if n <= limit and batch.num_rows:
                kept.append(pa.RecordBatch.from_arrays(
                    [c.cast(f.type) for c, f in zip(batch.columns, _FETCHED_SCHEMA)], schema=_FETCHED_SCHEMA))
        if n > limit:
            yield pa.RecordBatch.from_arrays([pa.nulls(1, f.type) for f in _FETCHED_SCHEMA], schema=_FETCHED_SCHEMA)
            return
        yield from kept
    return run


def deletion_vectors_on_driver(
        target: Target, files: pa.Table, matched: Any, configuration: dict[str, str],
        clauses: tuple[tuple[int, ...], tuple[int, ...]], source_rows: int) -> tuple[pa.Table, pa.Table] | None:
    """`write_deletion_vectors_and_pairs` in one job for few pairs: the scan tasks return the MERGE pairs
    `(fid, row, clause, sid)` themselves (no shuffle by file, no DV job) and the driver builds and writes the
    DVs exactly as a DV task does (`_dv_rows`). None when a scan task had more pairs than the source has rows
    (a source row matching many target rows; never more than `PAIRS_LIMIT`): the caller runs the DV job."""
    per_task = min(PAIRS_LIMIT, max(PAIRS_PER_TASK_MIN, source_rows))
    with task_errors():
        fetched = to_arrow(matched.mapInArrow(_fetch_task(per_task), _fetched_type()))  # `matched`: those 4 columns
    if fetched.num_rows and fetched.column("fid").null_count:
        return None
    info = pa.table({"path": files.column("path"), "deletion_vector": files.column("deletion_vector"),
                     "num_records": num_records(files)})
    plan = DvPlan(target.uri, target.storage_options, dict(configuration), info.combine_chunks(), clauses, None)
    ordered = fetched.sort_by("fid") if fetched.num_rows else fetched
    out, _ = _dv_rows(plan, iter(ordered.to_batches()))
    rows = pa.Table.from_batches([out])
    return (rows.sort_by("fid") if rows.num_rows else rows), fetched.select(["sid", "a"])


def _dv_job(target: Target, files: pa.Table, matched: Any, configuration: dict[str, str],
            clauses: tuple[tuple[int, ...], tuple[int, ...]] | None, pairs_limit: int | None) -> pa.Table:
    spark = target.spark
    info = pa.table({"path": files.column("path"), "deletion_vector": files.column("deletion_vector"),
                     "num_records": num_records(files)})
    tasks = shuffle_partitions(spark, files.num_rows)
    per_task = None if pairs_limit is None else max(PAIRS_PER_TASK_MIN, pairs_limit // tasks)
    plan = DvPlan(target.uri, target.storage_options, dict(configuration), info.combine_chunks(), clauses, per_task)
    bc = Shared(spark, plan)
    try:
        cols = [FID, ROW] if clauses is None else [FID, ROW, *matched.columns[2:4 if pairs_limit is not None else 3]]
        pairs = matched.select(*cols).repartition(tasks, FID).sortWithinPartitions(FID)
        with task_errors():
            out = to_arrow(pairs.mapInArrow(_dv_task(bc), DV_RESULT if pairs_limit is None else DV_PAIRS_RESULT))
    finally:
        bc.destroy()
    return out


@dataclass
class DvOutcome:
    """What the DV job changed: rows newly deleted, files removed, DVs added/replaced, DV files written."""

    deleted_rows: int = 0
    removed: list[dict[str, Any]] = field(default_factory=list)  # file-table rows of files fully deleted
    replaced: int = 0  # partly deleted files that had a DV already
    added: int = 0  # partly deleted files (each gets a new DV)
    dv_keys: set[str] = field(default_factory=set)


def commit_deletion_vectors(txn: Any, files: pa.Table, result: pa.Table, now: int) -> DvOutcome:
    """Record the DV job's result in `txn`: a remove for every touched file, an add (same path, new DV,
    row-tracking fields kept) for the partly deleted ones. One action pair per touched file."""
    out = DvOutcome()
    if result.num_rows:
        result = result.filter(pc.greater(result.column("deleted"), 0))  # MERGE's duplicate-only rows
    if result.num_rows == 0:
        return out
    rows = files.take(result.column("fid")).select(FILE_ROW_COLUMNS).to_pylist()
    deleted = result.column("deleted").to_pylist()
    full = result.column("full").to_pylist()
    dvs = result.column("dv").to_pylist()
    out.deleted_rows = int(pc.sum(result.column("deleted")).as_py() or 0)
    removes, adds = [], []
    for row, _n, is_full, dv in zip(rows, deleted, full, dvs):
        removes.append(remove_action(row, now))
        if is_full:
            out.removed.append(row)
            continue
        descriptor = DeletionVectorDescriptor.from_dict(json.loads(dv))
        out.dv_keys.add(descriptor.relative_key())
        adds.append(dv_add_action(row, descriptor))
        out.added += 1
        out.replaced += 1 if row.get("deletion_vector") else 0
    txn.remove_files(removes)
    txn.add_files(adds)
    return out


__all__ = ["PAIRS_LIMIT", "DvOutcome", "commit_deletion_vectors", "deletion_vectors_on_driver", "match_counts",
           "num_records", "shuffle_partitions", "to_arrow", "write_deletion_vectors",
           "write_deletion_vectors_and_pairs"]
