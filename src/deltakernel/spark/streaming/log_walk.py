"""What the Delta streaming source delivers: the initial snapshot's files, then each commit's data changes.

`LogWalk` lives in Spark's long-running source process on the driver. It lists the log incrementally, reads
new commits in chunks with the kernel's vectorized commit reader (`read_commits`), and keeps per version
only what a micro-batch needs: the data-changing add actions in log order (the offset `index` counts them),
their sizes (admission control), and whether the commit can be streamed at all. It answers two questions:
`advance` (how far the next batch may go within a budget) and `between` (the files of a batch). Versions
behind the last committed offset are dropped, so memory is bounded by what the next batches read.

delta-spark's rules for commits that are not plain appends (documented options, same names):
- removes with `dataChange=true` and no adds (DELETE of whole files/partitions): error unless `ignoreDeletes`;
- removes and adds (UPDATE, MERGE, overwrite, DVs): error unless `skipChangeCommits` (the commit is skipped)
  or the deprecated `ignoreChanges` (its adds are delivered again);
- `dataChange=false` actions (OPTIMIZE, ...) are never delivered;
- a schema the stream's read schema cannot hold (a new, dropped or retyped column, other partition columns):
  error naming the version; a restart picks up the new schema (older commits then read through it);
- `readChangeFeed`: every commit is delivered as change rows (no error for deletes or updates).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.log.replay import physical_partition_names, read_commits
from ...kernel.protocol.features import check_read_supported
from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.schema.types import StructType
from ...kernel.snapshot import Snapshot
from ...storage.base import ObjectMeta, Storage
from .offsets import BASE_INDEX, Budget, SourceOffset, SourceOptions, StreamingSourceError

_log = logging.getLogger(__name__)
_COMMIT = re.compile(r"^_delta_log/(\d{20})\.json$")
FILE_COLUMNS = ["path", "size", "partition_values", "deletion_vector"]
READ_CHUNK = 64  # commit files read per call of the kernel's commit reader


@dataclass
class VersionChanges:
    """One commit as the source sees it."""

    version: int
    files: pa.Table  # the add actions it delivers, in log order (FILE_COLUMNS); the offset index is the row
    timestamp_ms: int
    change_files: int = 0  # readChangeFeed: files the change rows come from (admission)
    change_bytes: int = 0
    error: str | None = None  # why the stream cannot pass this commit (raised when it gets there)

    @property
    def count(self) -> int:
        return self.files.num_rows


def _sizes(table: pa.Table) -> list[int]:
    return [int(s or 0) for s in table.column("size").to_pylist()]


def _admit(sizes: list[int], budget: Budget | None) -> int:
    """How many of `sizes` (in order) a batch takes: all without a budget, else while both budgets last."""
    if budget is None:
        return len(sizes)
    n = 0
    for size in sizes:  # stops at the budget: at most maxFilesPerTrigger iterations per batch
        if budget.exhausted():
            break
        budget.take(1, size)
        n += 1
    return n


def schema_readable(read: StructType, new: StructType) -> bool:
    """Can data written with `new` be read as `read`? Every column of `new` is in `read` with its type."""
    have = {f.name.lower(): f for f in to_arrow_schema(read, include_metadata=False)}
    for f in to_arrow_schema(new, include_metadata=False):
        mine = have.get(f.name.lower())
        if mine is None or mine.type != f.type:
            return False
    return True


class LogWalk:
    """The source's view of one table's log (driver side); see the module docstring."""

    def __init__(self, storage: Storage, options: SourceOptions, snapshot: Snapshot | None = None) -> None:
        self.storage = storage
        self.options = options
        snap = snapshot if snapshot is not None else Snapshot.load(storage)
        check_read_supported(snap.protocol)
        #: the metadata the stream reads with (its schema is the query's schema)
        self.metadata: Metadata = snap.metadata
        self.protocol: Protocol = snap.protocol
        self.table_id = snap.metadata.id
        self._hint = physical_partition_names(snap.metadata.to_json())
        self._commits: dict[int, ObjectMeta] = {}
        self._listed_to = -1  # versions <= this were listed
        self._changes: dict[int, VersionChanges] = {}
        self._snapshots: dict[int, tuple[pa.Table, int]] = {}  # version -> (files in delivery order, ts)
        #: the table's latest snapshot when the walk started
        self.latest_snapshot = snap

    @property
    def uri(self) -> str:
        return self.storage.root_uri

    # ------------------------------------------------------------------ listing
    def refresh(self, from_version: int = 0) -> int:
        """List commits newer than those known (from `from_version` on the first call); the latest version."""
        if self._listed_to < 0:
            self._listed_to = from_version - 1
        start = self._listed_to + 1
        after = None if start == 0 else f"_delta_log/{start - 1:020d}.~"
        for meta in self.storage.list_from("_delta_log/", start_after=after):
            m = _COMMIT.match(meta.key)
            if m:
                v = int(m.group(1))
                self._commits[v] = meta
                self._listed_to = max(self._listed_to, v)
        return self._listed_to

    @property
    def listed_version(self) -> int:
        return self._listed_to

    def latest_version(self) -> int:
        """The newest commit version now (a full listing the first time)."""
        return self.refresh()

    # ------------------------------------------------------------------ the initial snapshot
    def snapshot_files(self, version: int) -> tuple[pa.Table, int]:
        """The snapshot's live files in delivery order (modification time, then path) and its timestamp."""
        hit = self._snapshots.get(version)
        if hit is not None:
            return hit
        snap = self.latest_snapshot if self.latest_snapshot.version == version else Snapshot.load(self.storage,
                                                                                                  version)
        check_read_supported(snap.protocol)
        self._check_metadata(version, snap.metadata)
        files = snap.files
        if files.num_rows:
            files = files.sort_by([("modification_time", "ascending"), ("path", "ascending")])
        files = files.select(FILE_COLUMNS)
        ts = _snapshot_timestamp(snap)
        self._snapshots = {version: (files, ts)}  # one initial snapshot per query
        return files, ts

    def _check_metadata(self, version: int, md: Metadata) -> None:
        err = self._metadata_error(version, md)
        if err:
            raise StreamingSourceError(err)

    def _metadata_error(self, version: int, md: Metadata) -> str | None:
        mine = self.metadata
        if [c.lower() for c in md.partition_columns] != [c.lower() for c in mine.partition_columns]:
            return (f"Detected a change of partition columns at version {version} of {self.uri} "
                    f"({list(mine.partition_columns)} -> {list(md.partition_columns)}): the streaming source cannot "
                    "continue. Restart the query with a new checkpointLocation.")
        if md.schema_string != mine.schema_string and not schema_readable(mine.schema, md.schema):
            return (f"Detected schema change at version {version} of {self.uri}: the stream reads "
                    f"{_names(mine.schema)} but version {version} has {_names(md.schema)}. Restart the query to "
                    "read with the table's new schema (a dropped, renamed or retyped column may need a new "
                    "checkpointLocation).")
        return None

    # ------------------------------------------------------------------ commits
    def changes(self, version: int) -> VersionChanges:
        hit = self._changes.get(version)
        if hit is not None:
            return hit
        if version > self._listed_to:
            self.refresh(version)
        if version not in self._commits:
            if version <= self._listed_to:
                raise StreamingSourceError(
                    f"the commit file of version {version} of {self.uri} no longer exists (log cleanup, "
                    "delta.logRetentionDuration): the stream fell too far behind. Restart it with a new "
                    "checkpointLocation (and startingVersion) to go on."
                )
            raise StreamingSourceError(f"version {version} of {self.uri} does not exist yet")
        chunk: list[ObjectMeta] = []
        v = version
        while v in self._commits and v not in self._changes and len(chunk) < READ_CHUNK:
            chunk.append(self._commits[v])
            v += 1
        self._load(chunk)
        return self._changes[version]

    def _load(self, metas: list[ObjectMeta]) -> None:
        batch = read_commits(self.storage, metas, self._hint)
        adds, removes = batch.adds, batch.removes
        data_adds = adds.filter(pc.fill_null(adds.column("data_change"), True)) if adds.num_rows else adds
        data_removes = removes.filter(pc.fill_null(removes.column("data_change"), True)) if removes.num_rows \
            else removes
        cdcs = batch.cdcs
        rare: dict[int, list[dict[str, Any]]] = {}
        for v, obj in batch.rare:
            rare.setdefault(v, []).append(obj)
        for meta in metas:
            v = int(meta.key.rsplit("/", 1)[-1][:20])
            mine = _of_version(data_adds, v)
            if mine.num_rows:
                mine = mine.sort_by("_order")
            gone = _of_version(data_removes, v)
            info: dict[str, Any] = {}
            error: str | None = None
            for obj in rare.get(v, []):
                if isinstance(obj.get("commitInfo"), dict) and not info:
                    info = obj["commitInfo"]
                if isinstance(obj.get("protocol"), dict):
                    try:
                        check_read_supported(Protocol.from_json(obj["protocol"]))
                    except DeltaError as e:
                        error = f"version {v} of {self.uri}: {e}"
                if isinstance(obj.get("metaData"), dict) and error is None:
                    error = self._metadata_error(v, Metadata.from_json(obj["metaData"]))
            files = mine.select(FILE_COLUMNS)
            ts = _commit_timestamp(info, meta)
            change_files = change_bytes = 0
            if self.options.read_change_feed:
                n_cdc = _of_version(cdcs, v) if cdcs is not None and cdcs.num_rows else None
                parts = [n_cdc] if n_cdc is not None and n_cdc.num_rows else [mine, gone]
                change_files = sum(p.num_rows for p in parts)
                change_bytes = sum(sum(_sizes(p)) for p in parts)
            elif error is None and gone.num_rows:
                example = gone.column("path")[0].as_py()
                opts = self.options
                if opts.skip_change_commits:
                    files = files.slice(0, 0)
                elif opts.ignore_changes:
                    pass
                elif opts.ignore_deletes and mine.num_rows == 0:
                    pass
                elif mine.num_rows == 0:
                    error = (f"Detected deleted data (for example {example}) from streaming source at version {v}. "
                             "This is currently not supported. If you'd like to ignore deletes, set the option "
                             f"'ignoreDeletes' to 'true'. The source table can be found at path {self.uri}.")
                else:
                    error = (f"Detected a data update (for example {example}) in the source table at version {v}. "
                             "This is currently not supported. If this is going to happen regularly and you are "
                             "okay to skip changes, set the option 'skipChangeCommits' to 'true'. If you would like "
                             "the data update to be reflected, please restart this query with a fresh checkpoint "
                             f"directory. The source table can be found at path {self.uri}.")
            self._changes[v] = VersionChanges(v, files, ts, change_files, change_bytes, error)

    def evict_before(self, version: int) -> None:
        """Forget versions the query has committed past."""
        for v in [v for v in self._changes if v < version]:
            del self._changes[v]
        for v in [v for v in self._commits if v < version]:
            del self._commits[v]
        if self._snapshots and min(self._snapshots) < version:
            self._snapshots = {}

    # ------------------------------------------------------------------ batches
    def advance(self, pos: SourceOffset, budget: Budget | None, until: int | None) -> SourceOffset:
        """The end offset of a batch starting after `pos`: as far as the budget and `until` (the last version
        an availableNow query reads) allow. A commit the stream cannot pass raises when the batch would start
        with it; after some files, the batch ends before it."""
        cur = pos
        took = False
        latest = self.refresh(pos.version)
        if until is not None:
            latest = min(latest, until)
        while budget is None or not budget.exhausted():
            if cur.initial:
                files, _ = self.snapshot_files(cur.version)
                first = cur.index + 1
                k = _admit(_sizes(files.slice(first)), budget)
                took = took or k > 0
                if first + k >= files.num_rows:
                    cur = SourceOffset(cur.reservoir_id, cur.version + 1, BASE_INDEX, False)
                    continue
                cur = SourceOffset(cur.reservoir_id, cur.version, first + k - 1, True)
                break
            v = cur.version
            if v > latest:
                break
            ch = self.changes(v)
            if ch.error is not None:
                if took:
                    break
                raise StreamingSourceError(ch.error)
            if self.options.read_change_feed:  # whole commits
                if ch.change_files and budget is not None:
                    budget.take(ch.change_files, ch.change_bytes)
                took = took or ch.change_files > 0
                cur = SourceOffset(cur.reservoir_id, v + 1, BASE_INDEX, False)
                continue
            first = cur.index + 1
            k = _admit(_sizes(ch.files.slice(first)), budget)
            took = took or k > 0
            if first + k >= ch.count:
                cur = SourceOffset(cur.reservoir_id, v + 1, BASE_INDEX, False)
                continue
            cur = SourceOffset(cur.reservoir_id, v, first + k - 1, False)
            break
        return cur

    def between(self, start: SourceOffset, end: SourceOffset) -> list[tuple[str, Any]]:
        """The pieces of the batch (start, end]: ("snapshot", (version, timestamp, files)), ("files", files)
        and, with readChangeFeed, ("cdf", version)."""
        out: list[tuple[str, Any]] = []
        cur = start
        while cur.key() < end.key():
            if cur.initial:
                files, ts = self.snapshot_files(cur.version)
                last = end.index if (end.version == cur.version and end.initial) else files.num_rows - 1
                out.append(("snapshot", (cur.version, ts, files.slice(cur.index + 1, last - cur.index))))
                done = last >= files.num_rows - 1
            else:
                v = cur.version
                ch = self.changes(v)
                if ch.error is not None:
                    raise StreamingSourceError(ch.error)
                if self.options.read_change_feed:
                    out.append(("cdf", v))
                    last, done = BASE_INDEX, True
                else:
                    last = end.index if end.version == v else ch.count - 1
                    out.append(("files", ch.files.slice(cur.index + 1, last - cur.index)))
                    done = last >= ch.count - 1
            cur = SourceOffset(cur.reservoir_id, cur.version + 1, BASE_INDEX, False) if done else \
                SourceOffset(cur.reservoir_id, cur.version, last, cur.initial)
        return out


def _of_version(t: pa.Table, v: int) -> pa.Table:
    if t.num_rows == 0:
        return t
    return t.filter(pc.equal(t.column("_version"), v))


def _names(schema: StructType) -> list[str]:
    return [f"{f.name}: {f.type}" for f in to_arrow_schema(schema, include_metadata=False)]


def _commit_timestamp(info: dict[str, Any], meta: ObjectMeta) -> int:
    for key in ("inCommitTimestamp", "timestamp"):
        value = info.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return int(meta.last_modified_ms)


def _snapshot_timestamp(snap: Snapshot) -> int:
    """The commit timestamp of the snapshot's version (its commitInfo; the commit file's time otherwise)."""
    key = f"_delta_log/{snap.version:020d}.json"
    try:
        first = snap.storage.read(key).split(b"\n", 3)
        for line in first:
            if b"commitInfo" in line:
                info = json.loads(line).get("commitInfo") or {}
                return _commit_timestamp(info, snap.storage.head(key))
        return int(snap.storage.head(key).last_modified_ms)
    except Exception:  # commit cleaned up: only a checkpoint is left
        return 0


__all__ = ["LogWalk", "VersionChanges", "schema_readable"]
