"""Scan planning and execution: which files to read, and how to turn each into logical Arrow data.

Planning prunes files with partition values and per-file statistics (never dropping a file that could
match). Execution reads each Parquet file by physical column names (or field ids), drops rows deleted
by the file's deletion vector by *physical row index* before any filter, conforms the data to the
logical schema (column mapping, missing columns, type widening), adds the partition columns from the
log, and finally applies the row filter.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import CorruptLogError, DeltaError, InvalidFilterError, MissingFileError, ObjectNotFoundError
from .. import row_tracking as rt
from ..deletion_vectors import DeletionVectorDescriptor, deleted_mask, read_deletion_vector
from ..paths import resolve_file
from ..schema.arrow import to_arrow_schema
from ..schema.column_mapping import PARQUET_FIELD_ID, field_id, physical_name
from ..schema.geospatial import parse_geo_type
from ..schema.reconcile import conform_table
from ..schema.types import StructField, StructType
from ..snapshot import Snapshot
from .page_index import read_pruned
from .row_groups import row_groups_to_read, rows_all_match

DEFAULT_BATCH_SIZE = 131_072
log = logging.getLogger("deltakernel")


_THREADED_READ_BYTES = 8 * 1024 * 1024


def _threaded(task: dict[str, Any]) -> bool:
    """Decode a file's columns on Arrow's threads only when it is big: for small files the task hand-off costs
    more than it saves (1,000 files of 100 kB on 3 reader threads: 0.23 s single-threaded, 0.29 s threaded),
    and callers already read several files at once. Local files are not pre-buffered either (one coalesced
    read helps object stores, not the page cache)."""
    size = task.get("size")
    return size is None or int(size) >= _THREADED_READ_BYTES


@dataclass
class _OpenFile:
    """A data file opened for reading: the physical columns to read and its deleted rows (sorted)."""

    pf: pq.ParquetFile
    uri: str
    columns: list[str]
    hidden: list[str]
    data_fields: list[StructField]
    deleted: npt.NDArray[np.uint64] | None
    source: Any = None  # the opened file (page_index.py reads byte ranges of it)


@dataclass
class ScanMetrics:
    files_total: int = 0
    files_skipped: int = 0  # by partition pruning or statistics
    files_scanned: int = 0
    rows_deleted_by_dv: int = 0
    row_groups_skipped: int = 0  # inside the files read, by their footer statistics (row_groups.py)


def _default_workers() -> int:
    return max(2, min(8, (os.cpu_count() or 2) * 2))


def _check_geo_predicate(expr: Any, schema: StructType) -> None:
    """`deltakernel.geo.intersects` applies to geometry columns only (geography edges are geodesics)."""
    from ..expressions.predicate import GeoIntersects

    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, GeoIntersects):
            dtype: Any = schema
            for part in e.column.path:
                dtype = dtype.field(part).type if isinstance(dtype, StructType) else None
            geo = parse_geo_type(dtype) if dtype is not None else None
            if geo is None or geo.is_geography:
                raise InvalidFilterError(
                    f"intersects({'.'.join(e.column.path)!r}) needs a geometry column, not {_type_name(dtype)}")
        stack.extend(getattr(e, "children", ()))
        if hasattr(e, "child"):
            stack.append(e.child)


def _type_name(dtype: Any) -> str:
    return str(dtype.to_json()) if hasattr(dtype, "to_json") and not isinstance(dtype, StructType) else "a struct"


class Scan:
    """One planned read of a snapshot. Build with :class:`ScanBuilder` or directly."""

    def __init__(
        self,
        snapshot: Snapshot,
        columns: Sequence[str] | None = None,
        predicate: Any = None,
        row_filter: pc.Expression | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_workers: int | None = None,
        progress: Callable[[int, int], None] | None = None,
        row_tracking: bool = False,
    ) -> None:
        self.snapshot = snapshot
        self.schema = snapshot.schema
        self.mode = snapshot.column_mapping_mode
        self.predicate = predicate  # kernel expression (deltakernel.kernel.expressions.predicate.model) or None
        _check_geo_predicate(predicate, self.schema)
        self.row_filter = row_filter
        self.batch_size = batch_size
        self.max_workers = max_workers or _default_workers()
        self.progress = progress
        self.metrics = ScanMetrics()
        if columns is None:
            self.columns = list(self.schema.names)
        else:
            self.columns = [self.schema.field(c).name for c in columns]  # raises SchemaError for unknown
        # columns needed to evaluate the row filter but not requested
        needed = list(self.columns)
        for name in self._filter_columns():
            if name not in needed:
                needed.append(name)
        self._read_columns = needed
        self._partition_set = {c.lower() for c in snapshot.partition_columns}
        self._planned: pa.Table | None = None
        # row tracking: append `_row_id` / `_row_commit_version` (stable ids, PROTOCOL.md "Row Tracking")
        self.row_tracking = row_tracking
        self._materialized: tuple[str | None, str | None] = (None, None)
        if row_tracking:
            rt.check_readable(snapshot.protocol, snapshot.configuration, list(self.schema.names),
                              snapshot.storage.root_uri)
            self._materialized = rt.materialized_names(snapshot.configuration)

    # ------------------------------------------------------------------ schema
    def _filter_columns(self) -> list[str]:
        names: list[str] = []
        if self.predicate is not None:
            from ..expressions.predicate import referenced_columns

            for path in referenced_columns(self.predicate):
                names.append(self.schema.field(path[0]).name)
        return names

    @property
    def arrow_schema(self) -> pa.Schema:
        fields = [self.schema.field(c) for c in self.columns]
        schema = to_arrow_schema(StructType(tuple(fields)), include_metadata=False)
        if self.row_tracking:
            schema = pa.schema([*schema, *rt.METADATA_FIELDS])
        return schema

    def _is_partition(self, name: str) -> bool:
        return name.lower() in self._partition_set

    # ------------------------------------------------------------------ planning
    def plan(self) -> pa.Table:
        """The file table rows this scan reads (after partition pruning and stats skipping)."""
        if self._planned is not None:
            return self._planned
        files = self.snapshot.files
        self.metrics.files_total = files.num_rows
        if self.predicate is not None and files.num_rows:
            from .skipping import file_skipping_mask

            keep = file_skipping_mask(self.snapshot, files, self.predicate)
            files = files.filter(keep)
        self.metrics.files_skipped = self.metrics.files_total - files.num_rows
        self.metrics.files_scanned = files.num_rows
        log.debug("scan of %s v%d: %d files, %d skipped", self.snapshot.storage.root_uri, self.snapshot.version,
                  self.metrics.files_total, self.metrics.files_skipped)
        self._planned = files
        return files

    # ------------------------------------------------------------------ execution
    def _tasks(self) -> list[dict[str, Any]]:
        files = self.plan()
        cols = ["path", "partition_values", "deletion_vector", "size"]
        if self.row_tracking:
            cols += ["base_row_id", "default_row_commit_version"]
        tasks: list[dict[str, Any]] = files.select(cols).to_pylist()
        return tasks

    def _output_filter(self, exact: bool = False) -> pc.Expression | None:
        """The row filter: the predicate (unless `exact`: every row is known to match it) and the extra filter."""
        exprs = []
        if self.predicate is not None and not exact:
            from ..expressions.predicate import to_pyarrow

            exprs.append(to_pyarrow(self.predicate))
        if self.row_filter is not None:
            exprs.append(self.row_filter)
        if not exprs:
            return None
        out = exprs[0]
        for e in exprs[1:]:
            out = out & e
        return out

    def _open_file(self, task: dict[str, Any]) -> _OpenFile:
        """Open a task's Parquet file and plan which physical columns to read."""
        table_storage = self.snapshot.storage
        storage, key = resolve_file(table_storage, task["path"])  # absolute paths may leave the table root
        uri = storage.full_uri(key)
        try:
            source = storage.open_input_file(key)
            pf = pq.ParquetFile(source, coerce_int96_timestamp_unit="us", pre_buffer=not storage.sequential_reads)
        except (ObjectNotFoundError, FileNotFoundError) as e:
            raise MissingFileError(
                f"data file {uri} referenced by the Delta log (version {self.snapshot.version}) does not exist"
            ) from e
        except (pa.ArrowInvalid, OSError) as e:
            raise CorruptLogError(f"data file {uri} is not readable Parquet: {e}") from e
        data_fields = [self.schema.field(c) for c in self._read_columns if not self._is_partition(c)]
        file_cols = self._file_columns(pf.schema_arrow, data_fields)
        hidden = [n for n in self._materialized if n is not None and n in pf.schema_arrow.names
                  and n not in file_cols] if self.row_tracking else []
        deleted: npt.NDArray[np.uint64] | None = None
        if task.get("deletion_vector"):
            dv = DeletionVectorDescriptor.from_dict(task["deletion_vector"])
            deleted = read_deletion_vector(table_storage, dv)
            num_rows = pf.metadata.num_rows
            if deleted.size and int(deleted[-1]) >= num_rows:
                raise DeltaError(f"deletion vector of {uri} deletes row {int(deleted[-1])} but the file has "
                                 f"{num_rows} rows")
        return _OpenFile(pf, uri, file_cols + hidden, hidden, data_fields, deleted, source)

    def read_file(self, task: dict[str, Any]) -> pa.Table:
        """One file as logical Arrow data, deletion vector applied, filter applied. With a predicate, only the
        row groups whose footer statistics may match are read (row_groups.py)."""
        f = self._open_file(task)
        groups = row_groups_to_read(f.pf, self.predicate, self.schema, self.mode, self._partition_set)
        if groups is not None:
            self.metrics.row_groups_skipped += f.pf.metadata.num_row_groups - len(groups)
        if f.deleted is not None or self.row_tracking:
            if groups is not None:  # deletion vectors and row ids count physical rows: runs of row groups
                return self._read_runs(f, task, groups)
        elif self.predicate is not None and groups != [] and self._local_reads(task):
            pruned = read_pruned(f.pf, f.source, f.columns, groups, self.predicate, self.schema, self.mode,
                                 self._partition_set)
            if pruned is not None:  # only the pages that may match (page_index.py)
                return self._piece(f, task, pruned, 0)
        exact = self.row_filter is None and rows_all_match(f.pf, groups, self.predicate, self.schema, self.mode,
                                                           self._partition_set)
        try:
            if groups is None:
                table = f.pf.read(columns=f.columns, use_threads=_threaded(task))
            elif groups:
                table = f.pf.read_row_groups(groups, columns=f.columns, use_threads=_threaded(task))
            else:
                table = f.pf.schema_arrow.empty_table().select(f.columns)
        except (pa.ArrowInvalid, OSError) as e:
            raise CorruptLogError(f"data file {f.uri} could not be read: {e}") from e
        return self._piece(f, task, table, 0, exact)

    def _local_reads(self, task: dict[str, Any]) -> bool:
        """Page-index pruning reads a few byte ranges per column: cheap on a local disk, a request each on an object
        store (where one pre-buffered read of the row group costs less latency); local files only, for now."""
        storage, _ = resolve_file(self.snapshot.storage, task["path"])
        return bool(storage.sequential_reads)

    def _read_runs(self, f: _OpenFile, task: dict[str, Any], groups: list[int]) -> pa.Table:
        """The kept row groups of a file, each run of adjacent ones read and made logical at its first physical
        row (what a deletion vector and row ids index)."""
        meta = f.pf.metadata
        starts = np.concatenate([[0], np.cumsum([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])])
        runs: list[list[int]] = []
        for g in groups:
            if runs and g == runs[-1][-1] + 1:
                runs[-1].append(g)
            else:
                runs.append([g])
        pieces = []
        for run in runs or [[]]:
            try:
                table = (f.pf.read_row_groups(run, columns=f.columns, use_threads=_threaded(task)) if run
                         else f.pf.schema_arrow.empty_table().select(f.columns))
            except (pa.ArrowInvalid, OSError) as e:
                raise CorruptLogError(f"data file {f.uri} could not be read: {e}") from e
            pieces.append(self._piece(f, task, table, int(starts[run[0]]) if run else 0))
        return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]

    def read_file_pieces(self, task: dict[str, Any], rows: int = DEFAULT_BATCH_SIZE) -> Iterator[pa.Table]:
        """One file as :meth:`read_file` returns it, in pieces of about `rows` physical rows, in order (so a
        rewrite holds a few batches of a file, not all of it). Every piece is yielded, also empty ones."""
        f = self._open_file(task)
        offset = 0
        try:
            for batch in f.pf.iter_batches(batch_size=max(1, rows), columns=f.columns, use_threads=False):
                table = pa.Table.from_batches([batch])
                yield self._piece(f, task, table, offset)
                offset += table.num_rows
        except (pa.ArrowInvalid, OSError) as e:
            raise CorruptLogError(f"data file {f.uri} could not be read: {e}") from e

    def _piece(self, f: _OpenFile, task: dict[str, Any], table: pa.Table, offset: int, exact: bool = False
               ) -> pa.Table:
        """Physical rows [offset, offset + n) of a file -> logical rows (DV, row tracking, conform, filter; `exact`:
        the footer statistics proved every row matches the predicate, only `row_filter` is applied)."""
        num_rows = table.num_rows
        if self.row_tracking:  # the physical row index is taken before the deletion vector drops rows
            table = table.append_column("__row_index", rt.physical_row_index(num_rows, offset))
        if f.deleted is not None and f.deleted.size:
            keep = deleted_mask(f.deleted, offset, num_rows)
            if not keep.all():
                table = table.filter(pa.array(keep))
                self.metrics.rows_deleted_by_dv += num_rows - table.num_rows
        extra: list[pa.Array] = []
        if self.row_tracking:
            extra = self._row_tracking_columns(table, task)
            table = table.drop_columns([*f.hidden, "__row_index"])
        if f.data_fields:
            conformed = conform_table(table, StructType(tuple(f.data_fields)), self.mode, source=f.uri)
        else:  # only partition columns requested: keep the row count
            conformed = pa.table({"__rows": pa.nulls(table.num_rows, pa.null())})
        return self._finish(conformed, task, extra, exact)

    def _row_tracking_columns(self, table: pa.Table, task: dict[str, Any]) -> list[pa.Array]:
        """Stable `_row_id` and `_row_commit_version` of the rows read (materialized value, else default)."""
        id_col, version_col = self._materialized
        names = table.schema.names
        index = table.column("__row_index").combine_chunks()
        mat_id = table.column(id_col) if id_col is not None and id_col in names else None
        mat_version = table.column(version_col) if version_col is not None and version_col in names else None
        return [
            rt.stable_row_ids(index, mat_id, task.get("base_row_id"), task["path"]),
            rt.stable_commit_versions(table.num_rows, mat_version, task.get("default_row_commit_version"),
                                      task["path"]),
        ]

    def _file_columns(self, file_schema: pa.Schema, fields: list[StructField]) -> list[str]:
        present = set(file_schema.names)
        by_id: dict[int, str] = {}
        if self.mode == "id":
            for f in file_schema:
                raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
                if raw is not None:
                    by_id[int(raw)] = f.name
        lower = {n.lower(): n for n in file_schema.names}
        out: list[str] = []
        for lf in fields:
            name: str | None = None
            if self.mode == "id":
                fid = field_id(lf)
                if fid is not None and fid in by_id:
                    name = by_id[fid]
            if name is None:
                pn = physical_name(lf, self.mode)
                name = pn if pn in present else lower.get(pn.lower())
            if name is not None and name not in out:
                out.append(name)
        return out

    def _finish(self, data: pa.Table, task: dict[str, Any], extra: Sequence[pa.Array] = (), exact: bool = False
                ) -> pa.Table:
        n = data.num_rows
        columns: list[pa.Array | pa.ChunkedArray] = []
        names: list[str] = []
        pv = task.get("partition_values") or {}
        for name in self._read_columns:
            f = self.schema.field(name)
            if self._is_partition(name):
                columns.append(self._partition_column(f, pv, n, task.get("path")))
            else:
                columns.append(data.column(f.name))
            names.append(f.name)
        for field, arr in zip(rt.METADATA_FIELDS, extra):
            columns.append(arr)
            names.append(field.name)
        table = pa.table(columns, names=names) if names else pa.table({"__rows": pa.nulls(n)}).drop_columns(["__rows"])
        flt = self._output_filter(exact)
        if flt is not None and table.num_rows:
            try:
                table = table.filter(flt)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as e:
                raise InvalidFilterError(f"cannot apply filter {flt}: {e}") from e
        if len(self._read_columns) != len(self.columns):
            keep = [self.schema.field(c).name for c in self.columns]
            table = table.select(keep + [f.name for f in rt.METADATA_FIELDS[:len(extra)]])
        # field metadata counts: variant / GeoArrow tags must survive (a round trip writes `variant`, not a struct)
        target = self.arrow_schema
        if table.schema.equals(target, check_metadata=True):
            return table
        if table.schema == target:  # same types, only field metadata differs: relabel, no cast
            return pa.Table.from_arrays(table.columns, schema=target)
        return table.cast(target)

    def _partition_column(self, f: StructField, pv: dict[str, Any], n: int, path: str | None = None) -> pa.Array:
        from ..schema.arrow import to_arrow_type
        from .partition_values import parse_partition_value

        raw = pv.get(physical_name(f, self.mode))
        if raw is None and physical_name(f, self.mode) not in pv:
            raw = pv.get(f.name)
        value = parse_partition_value(raw, f.type, column=f.name, path=path)
        typ = to_arrow_type(f.type)
        return pa.repeat(pa.scalar(value, typ), n) if value is not None else pa.nulls(n, typ)

    def to_batches(self, max_in_flight: int | None = None) -> Iterator[pa.RecordBatch]:
        """Stream record batches; at most `max_in_flight` files are held in memory at once."""
        for table in self._iter_tables(max_in_flight or min(self.max_workers, 4)):
            yield from table.to_batches(max_chunksize=self.batch_size)

    def _iter_tables(self, in_flight: int) -> Iterator[pa.Table]:
        tasks = self._tasks()
        done = 0
        if not tasks:
            return
        for table in read_in_order(self.read_file, tasks, in_flight):
            done += 1
            if self.progress is not None:
                self.progress(done, len(tasks))
            yield table

    def to_table(self) -> pa.Table:
        tables = list(self._iter_tables(self.max_workers))
        if not tables:
            return self.arrow_schema.empty_table()
        return pa.concat_tables(tables)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.arrow_schema, self.to_batches())

    def count(self) -> int:
        """Row count; uses log statistics when no filter is set and no file lacks them."""
        if self.predicate is None and self.row_filter is None:
            n = _count_from_stats(self.plan())
            if n is not None:
                return n
        return sum(t.num_rows for t in self._iter_tables(self.max_workers))


def read_in_order(
    read: Callable[[dict[str, Any]], pa.Table], tasks: Sequence[dict[str, Any]], in_flight: int
) -> Iterator[pa.Table]:
    """Read files on a small thread pool, yielding in task order with at most `in_flight` files held (one file:
    read on the caller's thread, no pool to start - a selective read often keeps one file)."""
    if len(tasks) == 1:
        yield read(tasks[0])
        return
    in_flight = max(1, min(in_flight, len(tasks)))
    with ThreadPoolExecutor(max_workers=in_flight) as pool:
        queue: deque[Future[pa.Table]] = deque()
        it = iter(tasks)
        for task in it:
            queue.append(pool.submit(read, task))
            if len(queue) >= in_flight:
                break
        while queue:
            table = queue.popleft().result()
            nxt = next(it, None)
            if nxt is not None:
                queue.append(pool.submit(read, nxt))
            yield table


def _count_from_stats(files: pa.Table) -> int | None:
    if files.num_rows == 0:
        return 0
    stats = files.column("stats")
    if stats.null_count:
        return None
    nums = pc.extract_regex(stats, r'"numRecords"\s*:\s*(?P<n>\d+)')
    if nums.null_count:
        return None
    records = pc.sum(pc.struct_field(nums, [0]).cast(pa.int64())).as_py() or 0
    dv = files.column("deletion_vector")
    deleted = 0
    if dv.null_count != len(dv):
        deleted = pc.sum(pc.struct_field(dv, "cardinality")).as_py() or 0
    return int(records - deleted)


__all__ = ["Scan", "ScanMetrics", "np"]
