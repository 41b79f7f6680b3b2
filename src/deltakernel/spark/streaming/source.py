"""`spark.readStream.format("delta")`: the Delta streaming source (Spark 4's `DataSourceStreamReader`).

Spark keeps one `DeltaStreamReader` per query alive in a Python process on the driver; it plans offsets and
batches with a `LogWalk` (log_walk.py). Each batch's files go to executors as `InputPartition`s (paths, partition
values, deletion vectors), where `read` turns every file into Arrow batches through the kernel's `Scan.read_file`
(deletion vectors, column mapping, type widening) - Spark takes the Arrow batches as they are. Admission control
uses Spark's read limits: `maxFilesPerTrigger` (default 1000) and `maxBytesPerTrigger` as the default limit,
every file at once for `Trigger.Once` (Spark passes ReadAllAvailable), and `Trigger.AvailableNow` reads the
versions present when the query starts, in batches of the default limit.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)

from ..common.schema import Options, storage_options, table_path
from .offsets import (
    BASE_INDEX,
    DEFAULT_MAX_FILES,
    UNRESOLVED,
    Budget,
    SourceOffset,
    SourceOptions,
    StreamingSourceError,
)

_log = logging.getLogger(__name__)
PARTITION_BYTES = 128 * 1024 * 1024
PARTITION_FILES = 64
MIN_PARTITIONS = 2  # a batch of a few files still uses two tasks (local[2]-sized clusters read in parallel)


class DeltaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming source of one query; see the module docstring. Cheap to build: executors build one too."""

    def __init__(self, opts: Options, schema: Any) -> None:
        self.opts = opts
        self.spark_schema = schema
        self.options = SourceOptions.parse(opts)
        self._walk: Any = None
        self._resolved: tuple[int, bool] | None = None
        self._until: int | None = None

    # ------------------------------------------------------------------ driver side
    def _log(self) -> Any:
        if self._walk is None:
            from ...storage import storage_for_uri
            from .log_walk import LogWalk

            storage = storage_for_uri(table_path(self.opts), storage_options(self.opts))
            self._walk = LogWalk(storage, self.options)
        return self._walk

    def initialOffset(self) -> dict[str, Any]:
        walk = self._log()
        o = self.options
        if o.starting_version is not None:
            latest = walk.latest_version()
            if o.starting_version > latest:
                raise StreamingSourceError(
                    f"startingVersion {o.starting_version} does not exist in {walk.uri}: the latest version is "
                    f"{latest}")
            return SourceOffset(walk.table_id, o.starting_version, BASE_INDEX, False).to_json()
        if o.starting_timestamp is not None:
            return SourceOffset(walk.table_id, self._version_at(o.starting_timestamp), BASE_INDEX, False).to_json()
        return SourceOffset(walk.table_id, UNRESOLVED, BASE_INDEX, not o.starting_latest).to_json()

    def _version_at(self, text: str) -> int:
        """The first version committed at or after the timestamp (the next version when none is yet)."""
        from ...kernel.log.time_travel import commit_timestamps, parse_timestamp

        walk = self._log()
        try:
            target = parse_timestamp(text)
        except Exception as e:
            raise StreamingSourceError(f"invalid startingTimestamp {text!r}: {e}") from e
        stamps = commit_timestamps(walk.storage, walk.latest_snapshot.ict_enablement_version)
        later = [v for v, ts in stamps.items() if ts >= target]
        return min(later) if later else (max(stamps) + 1 if stamps else 0)

    def _position(self, raw: dict[str, Any], end: SourceOffset | None = None) -> SourceOffset:
        """Where a batch starting at `raw` starts: an unresolved first offset resolves once per query run
        (or is read from the first batch's end offset)."""
        walk = self._log()
        off = SourceOffset.from_json(raw, walk.table_id)
        if not off.unresolved:
            return off.without_start()
        if end is not None and end.start is not None:
            self._resolved = end.start
        if self._resolved is None:
            if off.initial:  # the initial snapshot: the table as it is now
                self._resolved = (walk.latest_version(), True)
            else:  # startingVersion=latest: only what comes after the current version
                self._resolved = (walk.latest_version() + 1, False)
        version, snapshot = self._resolved
        return SourceOffset(walk.table_id, version, BASE_INDEX, snapshot)

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_files is None and o.max_bytes is not None:
            return ReadMaxBytes(o.max_bytes)
        return ReadMaxFiles(o.max_files or DEFAULT_MAX_FILES)

    def _budget(self, limit: ReadLimit) -> Budget | None:
        if isinstance(limit, ReadAllAvailable) or limit is None:
            return None
        o = self.options
        if isinstance(limit, ReadMaxFiles):
            return Budget(limit.max_files, o.max_bytes)
        if isinstance(limit, ReadMaxBytes):
            return Budget(o.max_files, limit.max_bytes)
        return Budget(o.max_files or DEFAULT_MAX_FILES, o.max_bytes)

    def prepareForTriggerAvailableNow(self) -> None:
        self._until = self._log().latest_version()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        from ..common.task_errors import marked

        with marked():
            first = SourceOffset.from_json(start, self._log().table_id)
            pos = self._position(start)
            end = self._log().advance(pos, self._budget(limit), self._until)
            if end.key() == pos.key() and end.initial == pos.initial:
                if first.unresolved and not pos.initial:
                    # startingVersion=latest and nothing new yet: still end the first batch (empty) at the
                    # resolved position, so Spark records where the stream starts; else a restart would resolve
                    # `latest` again and skip the commits made in between (delta-spark records it too)
                    return SourceOffset(pos.reservoir_id, pos.version, pos.index, False,
                                        (pos.version, pos.initial)).to_json()
                return start
            if first.unresolved:
                end = SourceOffset(end.reservoir_id, end.version, end.index, end.initial, (pos.version, pos.initial))
            return end.to_json()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        walk = self._walk
        if walk is None:
            return None
        return SourceOffset(walk.table_id, walk.latest_version() + 1, BASE_INDEX, False).to_json()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        from ..common.task_errors import marked

        with marked():
            walk = self._log()
            stop = SourceOffset.from_json(end, walk.table_id)
            pos = self._position(start, stop)
            pieces = walk.between(pos, stop.without_start())
            return _partitions(walk, self.opts, pieces)

    def commit(self, end: dict[str, Any]) -> None:
        if self._walk is not None:
            off = SourceOffset.from_json(end, self._walk.table_id)
            self._walk.evict_before(off.version)

    # ------------------------------------------------------------------ executors
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from ..common.task_errors import marked

        with marked():
            yield from _read(partition.value, self.spark_schema)


def _header(walk: Any, opts: Options) -> dict[str, Any]:
    from ...kernel.schema.column_mapping import column_mapping_mode

    md = walk.metadata
    storage = walk.storage
    options = storage_options(opts)
    if getattr(storage, "catalog", None) is not None:  # a catalog's table (uc://): tasks read files at its
        options = dict(getattr(storage, "storage_options", None) or {})  # location with the vended credentials
    return {"uri": storage.root_uri, "storage_options": options,
            "metadata": md.to_json(), "mode": column_mapping_mode(md.configuration, walk.protocol),
            "version": walk.listed_version}


def _partitions(walk: Any, opts: Options, pieces: list[tuple[str, Any]]) -> list[InputPartition]:
    """Pack the batch's files into tasks: ~PARTITION_BYTES or PARTITION_FILES each, at least MIN_PARTITIONS."""
    header = _header(walk, opts)
    tasks: list[dict[str, Any]] = []
    for kind, piece in pieces:
        if kind == "files":
            tasks.extend({"kind": "file", **t} for t in piece.to_pylist())
        elif kind == "snapshot":
            version, ts, files = piece
            extra = {"cdf_version": version, "cdf_ts": ts} if walk.options.read_change_feed else {}
            tasks.extend({"kind": "file", **t, **extra} for t in files.to_pylist())
        else:
            ch = walk.changes(piece)
            tasks.append({"kind": "cdf", "version": piece, "size": ch.change_bytes, "files": ch.change_files})
    if not tasks:
        return []
    total = sum(int(t.get("size") or 0) for t in tasks)
    n_groups = max(min(MIN_PARTITIONS, len(tasks)), -(-total // PARTITION_BYTES), -(-len(tasks) // PARTITION_FILES))
    per_group = max(1, -(-total // n_groups))
    groups: list[list[dict[str, Any]]] = [[]]
    size = 0
    for t in tasks:
        if groups[-1] and size >= per_group and len(groups) < n_groups:
            groups.append([])
            size = 0
        groups[-1].append(t)
        size += max(1, int(t.get("size") or 0))
    return [InputPartition({"header": header, "tasks": g}) for g in groups if g]


def _read(value: dict[str, Any], spark_schema: Any) -> Iterator[pa.RecordBatch]:
    from pyspark.sql.pandas.types import to_arrow_schema

    from ...kernel.log.actions import Metadata
    from ...kernel.scan.scan import Scan
    from ..writing.task_payloads import LiteSnapshot

    target = to_arrow_schema(spark_schema, timezone="UTC")
    h = value["header"]
    md = Metadata.from_json(h["metadata"])
    from ...kernel.schema.types import schema_to_json

    snap = LiteSnapshot(h["uri"], h["storage_options"], schema_to_json(md.schema), h["mode"],
                        list(md.partition_columns), h["version"])
    scan = Scan(snap)  # type: ignore[arg-type]
    for task in value["tasks"]:
        if task["kind"] == "cdf":
            yield from _read_changes(snap.storage, int(task["version"]), target)
            continue
        table = scan.read_file(task)
        if "cdf_version" in task:
            table = _as_inserts(table, int(task["cdf_version"]), int(task["cdf_ts"]))
        for batch in table.to_batches():
            yield conform_by_name(batch, target)


def _as_inserts(table: pa.Table, version: int, ts: int) -> pa.Table:
    """Initial-snapshot rows of a change feed stream: inserts at the snapshot's version."""
    from ...kernel.arrow_build import broadcast, int_scalar, str_scalar

    n = table.num_rows
    table = table.append_column("_change_type", broadcast(str_scalar("insert"), n))
    table = table.append_column("_commit_version", broadcast(int_scalar(version), n))
    return table.append_column("_commit_timestamp", broadcast(int_scalar(ts), n).cast(pa.timestamp("ms")))


def _read_changes(storage: Any, version: int, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    from ...kernel.table_changes import TableChanges

    for batch in TableChanges(storage, version, version).to_reader():
        yield conform_by_name(batch, target)


def conform_by_name(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """`batch` as Spark's schema: columns by name (case-insensitive), missing ones null, types cast."""
    if batch.schema == target:
        return batch
    index = {n.lower(): i for i, n in enumerate(batch.schema.names)}
    cols = []
    for f in target:
        i = index.get(f.name.lower())
        cols.append(pa.nulls(batch.num_rows, f.type) if i is None else batch.column(i).cast(f.type))
    return pa.RecordBatch.from_arrays(cols, schema=target)


__all__ = ["DeltaStreamReader", "conform_by_name"]
