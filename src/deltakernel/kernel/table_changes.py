"""Change data feed over a version range (PROTOCOL.md "Change Data Files", "Add CDC File").

Per commit version: when the commit has `cdc` actions, its changes are exactly the rows of those
files (which carry `_change_type`); otherwise rows of `add` actions with dataChange are inserts and
rows of `remove` actions with dataChange are deletes. A file removed and re-added in the same commit
with a different deletion vector contributes only the rows whose DV state changed. Every version in
the range must have `delta.enableChangeDataFeed` on in the metadata in effect at that version.

Output: the table's logical columns (schema at the end version), then `_change_type`,
`_commit_version`, `_commit_timestamp`. Files are read through :class:`Scan` (column mapping, type
widening, partition values, deletion vectors), several at a time, streamed in version order.
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import ChangeDataFeedNotEnabledError, DeltaError, InvalidFilterError, SchemaError, VersionNotFoundError
from ..storage.base import ObjectMeta, Storage
from .deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from .log.actions import Metadata, Protocol
from .log.replay import physical_partition_names, read_commits
from .log.segment import LogTail, list_commits
from .protocol.features import check_read_supported
from .scan.scan import Scan
from .schema.arrow import to_arrow_schema
from .schema.column_mapping import column_mapping_mode
from .schema.types import PrimitiveType, StructField, StructType
from .snapshot import Snapshot, SnapshotView

CDF_PROPERTY = "delta.enableChangeDataFeed"
ICT_PROPERTY = "delta.enableInCommitTimestamps"
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
#: deltalake 1.6.6 returns `timestamp[ms]` without a time zone (values are UTC epoch milliseconds)
COMMIT_TIMESTAMP_TYPE = pa.timestamp("ms")
META_FIELDS = [
    pa.field(CHANGE_TYPE, pa.string()),
    pa.field(COMMIT_VERSION, pa.int64()),
    pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE),
]
_MAX_IN_FLIGHT = 4



@dataclass
class _Task:
    """One file to read for the feed; `kind` is cdc, insert, delete or dv_change (re-added file)."""

    version: int
    timestamp_ms: int
    kind: str
    path: str
    partition_values: dict[str, Any]
    size: int | None
    deletion_vector: dict[str, Any] | None = None
    removed_dv: dict[str, Any] | None = None  # dv_change: the DV of the remove action


@dataclass
class _VersionInfo:
    timestamp_ms: int
    tasks: list[_Task] = field(default_factory=list)


def _cdf_enabled(md: Metadata) -> bool:
    return str(md.configuration.get(CDF_PROPERTY, "false")).strip().lower() == "true"


def between(
    storage: Storage,
    starting_version: int | None = None,
    ending_version: int | None = None,
    starting_timestamp: str | dt.datetime | None = None,
    ending_timestamp: str | dt.datetime | None = None,
    allow_out_of_range: bool = False,
    ict_enablement_version: int | None = None,
    log_tail: LogTail | None = None,
) -> TableChanges:
    """The feed between versions or timestamps, resolved as deltalake's `load_cdf` does: a start timestamp ->
    the first commit at or after it (after the latest commit: VersionNotFoundError, or an empty feed with
    `allow_out_of_range`); an end timestamp -> the last commit at or before it (before the first commit: an
    empty feed). `ict_enablement_version`: as of the latest snapshot (loaded when not given). `log_tail`: a
    catalog-managed table's ratified commits (kernel/log/segment.py `LogTail`)."""
    from .log.time_travel import commit_timestamps, parse_timestamp, version_at_timestamp

    start = 0 if starting_version is None else int(starting_version)
    end = ending_version
    if starting_timestamp is not None or ending_timestamp is not None:
        if ict_enablement_version is None:
            ict_enablement_version = Snapshot.load(storage, log_tail=log_tail).ict_enablement_version
        ts = commit_timestamps(storage, ict_enablement_version, log_tail=log_tail)
        past_end = max(ts) + 1 if ts else 0
        if starting_timestamp is not None:
            start_ms = parse_timestamp(starting_timestamp)
            later = [v for v, t in ts.items() if t >= start_ms]
            if not later and not allow_out_of_range:
                raise VersionNotFoundError(
                    f"no commit at or after {starting_timestamp} in {storage.root_uri}: the latest commit is "
                    "older (pass allow_out_of_range=True for an empty result)"
                )
            start = min(later) if later else past_end
        if ending_timestamp is not None:
            end_ms = parse_timestamp(ending_timestamp)
            if ts and end_ms < min(ts.values()):  # before the first commit: no changes (deltalake)
                start, end, allow_out_of_range = past_end, None, True
            else:
                end = version_at_timestamp(ts, end_ms)
        if end is not None and start > end and allow_out_of_range:
            start, end = past_end, None
    return TableChanges(storage, start, end, allow_out_of_range=allow_out_of_range, log_tail=log_tail)


class TableChanges:
    """The change data feed of versions [starting_version, ending_version] (end: latest when None)."""

    def __init__(
        self,
        storage: Storage,
        starting_version: int = 0,
        ending_version: int | None = None,
        allow_out_of_range: bool = False,
        max_workers: int = _MAX_IN_FLIGHT,
        log_tail: LogTail | None = None,
    ) -> None:
        self.storage = storage
        self.max_workers = max(1, max_workers)
        start = int(starting_version)
        if start < 0:
            raise VersionNotFoundError(f"invalid starting version {start}: versions start at 0")
        if ending_version is not None and int(ending_version) < start:
            raise DeltaError(f"Invalid table version: {start} (invalid version range: start version {start} "
                             f"is greater than end version {ending_version})")
        commits = list_commits(storage, log_tail)  # a catalog's ratified commits overlaid (segment.py)
        if not commits:
            Snapshot.load(storage, log_tail=log_tail)  # raises the usual "not a Delta table" error
            raise VersionNotFoundError(f"{storage.root_uri} has no commit files: no change data to read")
        latest = max(commits)
        end = latest if ending_version is None else min(int(ending_version), latest)  # clamped like deltalake
        self.start_version = start
        self.empty = start > latest
        if self.empty:
            if not allow_out_of_range:
                raise VersionNotFoundError(
                    f"Invalid table version: {start} (starting version {start} is after the latest version "
                    f"{latest} of {storage.root_uri})"
                )
            end = latest
        self.end_version = end
        missing = [v for v in range(start, end + 1) if v not in commits]
        if missing and not self.empty:
            raise VersionNotFoundError(
                f"change data for version(s) {missing[:10]} of {storage.root_uri} is not available: the "
                "commit files were cleaned up"
            )
        first = end if self.empty else start
        base = Snapshot.load(storage, first, log_tail=log_tail)  # metadata and protocol in effect at the start version
        self._versions: dict[int, _VersionInfo] = {}
        metadata, protocol = base.metadata, base.protocol
        if not self.empty:
            metadata, protocol = self._plan(base, [commits[v] for v in range(start, end + 1)])
        self.metadata = metadata
        self.protocol = protocol
        self.schema: StructType = metadata.schema
        self.partition_columns = list(metadata.partition_columns)
        self.mode = column_mapping_mode(metadata.configuration, protocol)

    # ------------------------------------------------------------------ planning (log only)
    def _plan(self, base: Snapshot, metas: list[ObjectMeta]) -> tuple[Metadata, Protocol]:
        hint = physical_partition_names(base.metadata.to_json())
        batch = read_commits(self.storage, metas, hint)
        metadata, protocol = base.metadata, base.protocol
        by_version: dict[int, list[dict[str, Any]]] = {}
        for version, obj in batch.rare:
            by_version.setdefault(version, []).append(obj)
        for meta in metas:
            v = int(meta.key.rsplit("/", 1)[-1][:20])
            info: dict[str, Any] = {}
            for obj in by_version.get(v, []):
                if isinstance(obj.get("metaData"), dict) and v != base.version:
                    metadata = Metadata.from_json(obj["metaData"])
                if isinstance(obj.get("protocol"), dict) and v != base.version:
                    protocol = Protocol.from_json(obj["protocol"])
                    check_read_supported(protocol)
                if isinstance(obj.get("commitInfo"), dict) and not info:
                    info = obj["commitInfo"]
            if not _cdf_enabled(metadata):
                raise ChangeDataFeedNotEnabledError(
                    f"change data feed is not enabled at version {v} of {self.storage.root_uri} "
                    f"(requested {self.start_version}..{self._end_of(metas)}); "
                    f"set {CDF_PROPERTY}=true before the changes to read "
                    f"(Reading a table version: {v} that does not have change data enabled)"
                )
            self._versions[v] = _VersionInfo(self._timestamp(v, info, metadata, meta))
        self._collect_tasks(batch)
        return metadata, protocol

    @staticmethod
    def _end_of(metas: list[ObjectMeta]) -> int:
        return int(metas[-1].key.rsplit("/", 1)[-1][:20])

    @staticmethod
    def _timestamp(version: int, info: dict[str, Any], md: Metadata, meta: ObjectMeta) -> int:
        """In-commit timestamp when enabled, else commitInfo.timestamp (as deltalake), else file mtime."""
        ict_on = str(md.configuration.get(ICT_PROPERTY, "false")).lower() == "true"
        for key in (("inCommitTimestamp", "timestamp") if ict_on else ("timestamp",)):
            value = info.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return int(value)
        return int(meta.last_modified_ms)

    def _collect_tasks(self, batch: Any) -> None:
        cdcs = batch.cdcs
        cdc_versions = set(batch.cdc_versions)
        if cdcs is not None and cdcs.num_rows:
            for row in cdcs.select(["_version", "path", "partition_values", "size"]).to_pylist():
                v = row["_version"]
                self._versions[v].tasks.append(
                    _Task(v, self._versions[v].timestamp_ms, "cdc", row["path"], row["partition_values"] or {},
                          row["size"])
                )
        cols = ["_version", "_order", "path", "partition_values", "size", "deletion_vector"]

        def changed(t: pa.Table) -> list[dict[str, Any]]:
            if t.num_rows == 0:
                return []
            keep = pc.fill_null(t.column("data_change"), True)
            rows = t.filter(keep).select(cols).to_pylist()
            return [r for r in rows if r["_version"] not in cdc_versions]

        adds, removes = changed(batch.adds), changed(batch.removes)
        removed = {(r["_version"], r["path"]): r for r in removes}
        paired: set[int] = set()  # _order of removes consumed by a re-add of the same file
        planned: list[tuple[int, _Task]] = []
        for row in adds:
            v = row["_version"]
            rem = removed.get((v, row["path"]))
            task = _Task(v, self._versions[v].timestamp_ms, "insert", row["path"], row["partition_values"] or {},
                         row["size"], row["deletion_vector"])
            if rem is not None and rem["_order"] not in paired:
                paired.add(rem["_order"])
                task.kind, task.removed_dv = "dv_change", rem["deletion_vector"]
            planned.append((row["_order"], task))
        for row in removes:
            if row["_order"] in paired:
                continue
            v = row["_version"]
            planned.append((row["_order"], _Task(v, self._versions[v].timestamp_ms, "delete", row["path"],
                                                 row["partition_values"] or {}, row["size"],
                                                 row["deletion_vector"])))
        for _, task in sorted(planned, key=lambda p: p[0]):
            self._versions[task.version].tasks.append(task)

    # ------------------------------------------------------------------ output
    @property
    def arrow_schema(self) -> pa.Schema:
        """Logical table columns, then the three change columns."""
        return pa.schema([*to_arrow_schema(self.schema, include_metadata=False), *META_FIELDS])

    def _output_schema(self, columns: Sequence[str] | None) -> pa.Schema:
        full = self.arrow_schema
        if columns is None:
            return full
        fields = []
        for c in columns:
            idx = _find(full, c)
            if idx is None:
                raise SchemaError(f"no column {c!r} in the change data feed (columns: {full.names})")
            fields.append(full.field(idx))
        return pa.schema(fields)

    def tasks(self) -> list[_Task]:
        """The planned file reads, in version and log order."""
        return [t for v in sorted(self._versions) for t in self._versions[v].tasks]

    def to_reader(
        self,
        columns: Sequence[str] | None = None,
        predicate: Any = None,
        row_filter: pc.Expression | None = None,
        sql_predicate: str | None = None,
    ) -> pa.RecordBatchReader:
        """Stream the changes; `predicate` (kernel expression), `row_filter` and `sql_predicate` AND-ed."""
        out_schema = self._output_schema(columns)
        flt = self._filter(predicate, row_filter, sql_predicate)
        return pa.RecordBatchReader.from_batches(out_schema, self._batches(out_schema, flt))

    def to_table(self, **kwargs: Any) -> pa.Table:
        return self.to_reader(**kwargs).read_all()

    def _filter(self, predicate: Any, row_filter: pc.Expression | None, sql: str | None) -> pc.Expression | None:
        exprs: list[pc.Expression] = []
        if predicate is not None:
            from .expressions.predicate import to_pyarrow

            exprs.append(to_pyarrow(predicate, self.schema))
        if row_filter is not None:
            exprs.append(row_filter)
        if sql is not None and sql.strip():
            exprs.append(parse_sql_predicate(sql, self.arrow_schema))
        if not exprs:
            return None
        out = exprs[0]
        for e in exprs[1:]:
            out = out & e
        return out

    def _data_columns(self, out_schema: pa.Schema, flt: pc.Expression | None) -> list[str]:
        """Logical data columns to read: all when filtering (cheap and safe), else those selected."""
        names = self.schema.names
        if flt is not None:
            return list(names)
        wanted = [n for n in names if n in out_schema.names]
        return wanted or names[:1]  # at least one column, so row counts survive

    def _batches(self, out_schema: pa.Schema, flt: pc.Expression | None) -> Iterator[pa.RecordBatch]:
        tasks = [] if self.empty else self.tasks()
        if not tasks:
            return
        data_cols = self._data_columns(out_schema, flt)
        partition_cols = [c for c in self.partition_columns if self.schema.has(c)]
        view = SnapshotView(self.storage, self.end_version, self.schema, partition_cols, self.mode)
        cdc_schema = StructType((*self.schema.fields, StructField(CHANGE_TYPE, PrimitiveType("string"))))
        cdc_view = SnapshotView(self.storage, self.end_version, cdc_schema, partition_cols, self.mode)
        scans = {
            "data": Scan(view, columns=data_cols),  # type: ignore[arg-type]
            "cdc": Scan(cdc_view, columns=[*data_cols, CHANGE_TYPE]),  # type: ignore[arg-type]
        }
        full = pa.schema([*to_arrow_schema(StructType(tuple(self.schema.field(c) for c in data_cols)),
                                           include_metadata=False), *META_FIELDS])

        def run(task: _Task) -> pa.Table:
            table = self._read_task(task, scans, full)
            if flt is not None and table.num_rows:
                try:
                    table = table.filter(flt)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
                    raise InvalidFilterError(f"cannot apply change data feed filter {flt}: {e}") from e
            return table.select(out_schema.names).cast(out_schema)

        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            queue: deque[Future[pa.Table]] = deque()
            it = iter(tasks)
            for task in it:
                queue.append(pool.submit(run, task))
                if len(queue) >= self.max_workers:
                    break
            while queue:
                table = queue.popleft().result()
                nxt = next(it, None)
                if nxt is not None:
                    queue.append(pool.submit(run, nxt))
                yield from table.to_batches()

    def _read_task(self, task: _Task, scans: dict[str, Scan], full: pa.Schema) -> pa.Table:
        file_task = {"path": task.path, "partition_values": task.partition_values, "size": task.size,
                     "deletion_vector": task.deletion_vector}
        if task.kind == "cdc":
            data = scans["cdc"].read_file({**file_task, "deletion_vector": None})
            change = data.column(CHANGE_TYPE)
            data = data.drop_columns([CHANGE_TYPE])
            return self._with_meta(data, change, task, full)
        if task.kind in ("insert", "delete"):
            data = scans["data"].read_file(file_task)
            change = pa.repeat(pa.scalar(task.kind), data.num_rows)
            return self._with_meta(data, change, task, full)
        # dv_change: the same file removed and re-added with another DV in one commit
        data = scans["data"].read_file({**file_task, "deletion_vector": None})
        now = self._deleted_rows(task.deletion_vector)
        before = self._deleted_rows(task.removed_dv)
        newly_deleted = np.setdiff1d(now, before, assume_unique=True)
        restored = np.setdiff1d(before, now, assume_unique=True)
        for rows in (newly_deleted, restored):
            if rows.size and int(rows.max()) >= data.num_rows:
                raise DeltaError(f"deletion vector of {task.path} deletes row {int(rows.max())} but the file "
                                 f"has {data.num_rows} rows")
        parts = []
        for rows, kind in ((newly_deleted, "delete"), (restored, "insert")):
            if rows.size:
                sub = data.take(pa.array(rows.astype(np.int64)))
                parts.append(self._with_meta(sub, pa.repeat(pa.scalar(kind), sub.num_rows), task, full))
        return pa.concat_tables(parts) if parts else full.empty_table()

    def _deleted_rows(self, dv: dict[str, Any] | None) -> np.ndarray:
        if not dv:
            return np.array([], dtype=np.uint64)
        return read_deletion_vector(self.storage, DeletionVectorDescriptor.from_dict(dv))

    @staticmethod
    def _with_meta(data: pa.Table, change: Any, task: _Task, full: pa.Schema) -> pa.Table:
        n = data.num_rows
        cols = [data.column(i) for i in range(data.num_columns)]
        cols += [
            pc.cast(change, pa.string()),
            pa.repeat(pa.scalar(task.version, pa.int64()), n),
            pa.repeat(pa.scalar(task.timestamp_ms, pa.int64()), n).cast(COMMIT_TIMESTAMP_TYPE),
        ]
        return pa.Table.from_arrays(cols, schema=full)


def _find(schema: pa.Schema, name: str) -> int | None:
    idx = schema.get_field_index(name)
    if idx >= 0:
        return int(idx)
    lower = [n.lower() for n in schema.names]
    return lower.index(name.lower()) if name.lower() in lower else None


# ----------------------------------------------------------------------------- SQL predicates
def parse_sql_predicate(text: str, schema: pa.Schema) -> pc.Expression:
    """A SQL boolean expression (deltalake's `load_cdf(predicate=...)`) as a pyarrow filter over `schema`.

    Parsed by `expressions/sql` with double quotes as identifiers (deltalake/DataFusion style); literals are
    typed by the column they are compared with.
    """
    from .expressions.sql import to_pyarrow_filter
    from .schema.arrow import from_arrow_schema

    return to_pyarrow_filter(text, from_arrow_schema(schema), double_quoted_identifiers=True)


__all__ = ["COMMIT_TIMESTAMP_TYPE", "ChangeDataFeedNotEnabledError", "TableChanges", "parse_sql_predicate"]
