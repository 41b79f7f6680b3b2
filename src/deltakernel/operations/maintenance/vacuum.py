"""VACUUM (deltalake's `DeltaTable.vacuum`, delta-spark's VacuumCommand semantics).

Two modes, both never touching `_delta_log`, anything outside the table root, or any file that the current
version, a version inside the retention window (a tombstone not yet expired) or a `keep_versions` version
references (data files and their deletion-vector files):

- lite (default): candidates come from the log only, no storage listing — data files of expired tombstones
  (removed before `now - retention`), the deletion-vector files those tombstones named, and the
  `_change_data` files of the commits since the last checkpoint that are older than the retention. The kinds
  of files are delta-spark's `VACUUM LITE` (removes' data and DV files, `cdc` files); deltalake's lite mode
  only deletes the data files. The candidates are taken as deltalake takes them (the snapshot's tombstones,
  no `_last_vacuum_info` watermark), so, like deltalake 1.6.6, a file already deleted is reported again until
  a checkpoint drops its tombstone, and a tombstone that expired before the last checkpoint was written is
  left to full mode (docs/decisions.md "VACUUM LITE: deletion vectors and change data").
- full: the table's storage is listed (streamed page by page; hidden files and directories skipped as
  delta-spark does: names starting with `_` or `.`, except `_change_data`, `_delta_index` and partition
  directories) and every file that nothing retained references is deleted when the log names it as gone
  (an expired tombstone, its deletion-vector file, a `_change_data` file of a commit older than the
  retention) or, for a file no log entry names, when its modification time is older than both the
  retention and the *minimum unreferenced-file age* (`min_unreferenced_age_hours`, else the table property
  `deltakernel.vacuum.minUnreferencedFileAge`, default 1 hour). Such a file may be a concurrent writer's
  data that is written but not committed yet, so even `retention_hours=0` never deletes it while it is
  young (delta-spark and deltalake do: the writer's commit then references missing files).

The referenced keys are the only state held (one Arrow string array, ~100 bytes a file); listing pages are
anti-joined against it with `pc.is_in`. Deletes go through `Storage.delete_many` (bulk requests, a few in
flight, on object stores), after a `VACUUM START` commit and followed by `VACUUM END` (commitInfo-only
commits shaped as deltalake writes them); a dry run commits and deletes nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError, InvalidPathError, UnsupportedFeatureError, VacuumRetentionError
from ...kernel.arrow_build import bool_to_arrow, bytes_to_arrow, np_to_arrow, null_scalar, scalar, str_scalar
from ...kernel.deletion_vectors import DeletionVectorDescriptor
from ...kernel.log.replay import read_commits
from ...kernel.log.retention import DEFAULT_TOMBSTONE_RETENTION, interval_conf
from ...kernel.log.segment import commit_key
from ...kernel.paths import resolve_key
from ...kernel.protocol.features import check_write_supported
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage
from ...storage.base import ObjectMeta
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with

log = logging.getLogger(__name__)

HOUR_MS = 3_600_000
RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
#: how old a file that no log entry names must be before full VACUUM deletes it, whatever the retention: it
#: may be a pending writer's (written, not yet committed); an interval ("interval 2 hours")
MIN_UNREFERENCED_AGE_PROPERTY = "deltakernel.vacuum.minUnreferencedFileAge"
DEFAULT_MIN_UNREFERENCED_AGE = "interval 1 hour"
#: keys deleted per progress report (and per bulk request on object stores)
DELETE_BATCH = 1000
#: listing entries filtered at once in full mode (bounded memory: ~10 MB of keys)
LISTING_BATCH = 100_000

#: a log path that needs decoding / normalizing before it is a storage key (else it is one already)
_NOT_PLAIN = r"%|^/|^[A-Za-z][A-Za-z0-9+.\-]*:|(^|/)\.\.?(/|$)|//|\\"
#: a file whose own name is hidden (`_SUCCESS`, `.part-0.parquet.crc`) unless change data / index files
_HIDDEN_NAME = r"(^|/)[._][^/]*$"
_EXEMPT_NAME = r"(^|/)(_change_data|_delta_index)[^/]*$"


_EMPTY = pa.nulls(0, pa.string())


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array from Python values, built from buffers (`pa.array` would import pandas, ~0.3 s)."""
    arr = bytes_to_arrow([(v or "").encode() for v in values], pa.string())
    if any(v is None for v in values):
        arr = pc.if_else(bool_to_arrow([v is None for v in values]), null_scalar(pa.string()), arr)
    return arr


@dataclasses.dataclass
class VacuumPlan:
    """What a vacuum deletes (storage keys relative to the table root) and the parameters that chose it."""

    files: list[str]
    size_bytes: int
    retention_ms: int
    default_retention_ms: int
    enforce: bool
    #: files no log entry names (full mode) are deleted only when older than this, whatever the retention
    min_unreferenced_age_ms: int = 0


# ----------------------------------------------------------------------------- log paths -> keys
def row_path_keys(storage: Storage, paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Storage key of each path in the log (null when outside the table root, or null): plain relative
    paths are keys already (vectorized); encoded, absolute or odd ones are decoded one by one."""
    arr = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    if not len(arr):
        return _EMPTY
    odd = pc.fill_null(pc.match_substring_regex(arr, _NOT_PLAIN), scalar(False))
    n_odd = pc.sum(odd).as_py() or 0
    if not n_odd:
        return arr
    keys: list[str | None] = []
    for p in arr.filter(odd).to_pylist():
        try:
            keys.append(resolve_key(storage.root_uri, p))
        except InvalidPathError:
            keys.append(None)  # outside the table root: never vacuumed
    return pc.replace_with_mask(arr, odd, strings(keys))


def log_path_keys(storage: Storage, paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Storage keys of the paths in the log that lie inside the table root (others are dropped)."""
    return row_path_keys(storage, paths).drop_null()


def row_dv_keys(storage: Storage, dvs: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Storage key of each row's deletion-vector file (null: no DV, inline, or outside the root); each
    distinct DV is resolved once."""
    arr = dvs.combine_chunks() if isinstance(dvs, pa.ChunkedArray) else dvs
    n = len(arr)
    if not n or arr.null_count == n:
        return pa.nulls(n, pa.string())
    kind = arr.field("storageType")
    on_disk = pc.and_(pc.fill_null(pc.not_equal(kind, str_scalar("i")), scalar(False)), pc.is_valid(arr))
    combo = pc.if_else(on_disk, pc.binary_join_element_wise(kind, arr.field("pathOrInlineDv"), str_scalar("\x00")),
                       null_scalar(pa.string()))
    uniq = pc.unique(combo).drop_null()
    keys: list[str | None] = []
    for c in uniq.to_pylist():
        t, _, p = c.partition("\x00")
        try:
            keys.append(DeletionVectorDescriptor(t, p, 0, 0, 0).relative_key(storage.root_uri))
        except (DeltaError, ValueError):
            keys.append(None)  # outside the root or malformed: never vacuumed
    return pc.take(strings(keys), pc.index_in(combo, value_set=uniq))


def dv_file_keys(storage: Storage, dvs: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Distinct storage keys of the deletion-vector files (storage types 'u' and 'p') a DV column names."""
    return pc.unique(row_dv_keys(storage, dvs)).drop_null()


def _file_keys(storage: Storage, files: pa.Table) -> list[pa.Array]:
    """Keys of a file table's data files and deletion-vector files."""
    if not files.num_rows:
        return []
    out = [log_path_keys(storage, files.column("path"))]
    if "deletion_vector" in files.column_names:
        out.append(dv_file_keys(storage, files.column("deletion_vector")))
    return out


def _unique(parts: Iterable[pa.Array]) -> pa.Array:
    arrays = [a for a in parts if len(a)]
    if not arrays:
        return _EMPTY
    return pc.unique(pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0])


# ----------------------------------------------------------------------------- planning
def retention_ms(snapshot: Snapshot, retention_hours: float | None, enforce: bool) -> tuple[int, int]:
    """(retention to use, the table's minimum) in ms; VacuumRetentionError when too short and enforced."""
    try:
        default = interval_conf(snapshot.configuration, RETENTION_PROPERTY, DEFAULT_TOMBSTONE_RETENTION)
    except ValueError as e:
        raise DeltaError(f"table property {RETENTION_PROPERTY}: {e}") from e
    assert default is not None
    if retention_hours is None:
        return default, default
    if retention_hours < 0:
        # deltalake's message first (users match on it), then ours
        raise VacuumRetentionError(f"The retention periods should be positive. (retention_hours must be >= 0, "
                                   f"got {retention_hours})")
    wanted = int(retention_hours * HOUR_MS)
    if enforce and wanted < default:
        raise VacuumRetentionError(
            f"Invalid retention period, minimum retention for vacuum is configured to be greater than "
            f"{default / HOUR_MS:g} hours, got {retention_hours:g} hours. "
            f"VACUUM retention of {retention_hours} hours is shorter than the table's {RETENTION_PROPERTY} "
            f"({default / HOUR_MS:g} hours): files still needed by time travel or by concurrent readers and "
            "writers could be deleted. Pass enforce_retention_duration=False to override, or lower "
            f"{RETENTION_PROPERTY}."
        )
    return wanted, default


def min_unreferenced_age_ms(snapshot: Snapshot, hours: float | None) -> int:
    """The minimum age (ms) of a file no log entry names before full VACUUM may delete it: `hours` when given,
    else the table's `deltakernel.vacuum.minUnreferencedFileAge`, else 1 hour."""
    if hours is not None:
        if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not hours >= 0:
            raise VacuumRetentionError(f"min_unreferenced_age_hours must be a number >= 0, got {hours!r}")
        return int(hours * HOUR_MS)
    try:
        age = interval_conf(snapshot.configuration, MIN_UNREFERENCED_AGE_PROPERTY, DEFAULT_MIN_UNREFERENCED_AGE)
    except ValueError as e:
        raise DeltaError(f"table property {MIN_UNREFERENCED_AGE_PROPERTY}: {e}") from e
    assert age is not None
    if age < 0:
        raise DeltaError(f"table property {MIN_UNREFERENCED_AGE_PROPERTY} must not be negative, got "
                         f"{snapshot.configuration.get(MIN_UNREFERENCED_AGE_PROPERTY)!r}")
    return age


def _check_protocol(snapshot: Snapshot) -> None:
    """PROTOCOL.md "Vacuum Protocol Check": vacuum only tables whose whole protocol (reader and writer
    features) is understood, so no feature's files are mistaken for orphans."""
    try:
        check_write_supported(snapshot.protocol)
    except UnsupportedFeatureError as e:
        extra = " (the table has vacuumProtocolCheck)" if snapshot.protocol.has_feature("vacuumProtocolCheck") \
            else ""
        raise UnsupportedFeatureError(e.feature, f"VACUUM refused{extra}: {e}") from e
    from ...kernel.catalog_client import require_maintenance_permitted

    require_maintenance_permitted(snapshot, "VACUUM")  # catalog-managed: PROTOCOL.md forbids it by default


def _keep_version_keys(storage: Storage, versions: Sequence[int] | None) -> list[pa.Array]:
    out: list[pa.Array] = []
    for v in sorted(set(versions or ())):
        out += _file_keys(storage, Snapshot.load(storage, int(v)).files)
    return out


def _expired_mask(tombstones: pa.Table, cutoff: int) -> pa.Array:
    if not tombstones.num_rows:
        return pa.nulls(0, pa.bool_())
    ts = tombstones.column("deletion_timestamp")
    # no deletionTimestamp: as old as can be (deltalake)
    return pc.fill_null(pc.less(ts, scalar(cutoff, pa.int64())), scalar(True))


def _cdc_keys(storage: Storage, snapshot: Snapshot, cutoff: int) -> tuple[pa.Array, int]:
    """`_change_data` files of the commits since the checkpoint that are older than the cutoff."""
    old = []
    for meta in snapshot.segment.commits:
        info = snapshot.commit_infos.get(int(meta.key.rsplit("/", 1)[-1][:20])) or {}
        ts = info.get("inCommitTimestamp") or meta.last_modified_ms
        if int(ts) < cutoff:
            old.append(meta)
    if not old:
        return _EMPTY, 0
    cdcs = read_commits(storage, old, snapshot.partition_columns).cdcs
    if cdcs is None or not cdcs.num_rows:
        return _EMPTY, 0
    size = pc.sum(cdcs.column("size")).as_py() or 0
    return log_path_keys(storage, cdcs.column("path")), int(size)


def _hidden_dir(partition_columns: Sequence[str]) -> Callable[[str], bool]:
    """delta-spark's `isHiddenDirectory` for one directory name (the last component of `dir_key`)."""
    prefixes = tuple(f"{c}=" for c in partition_columns)

    def skip(dir_key: str) -> bool:
        name = dir_key.rsplit("/", 1)[-1]
        return (name.startswith((".", "_")) and not name.startswith(("_delta_index", "_change_data"))
                and not name.startswith(prefixes))

    return skip


def _batched(pages: Iterable[list[ObjectMeta]]) -> Iterable[list[ObjectMeta]]:
    """Listing pages regrouped into batches of >= LISTING_BATCH entries: each `pc.is_in` rebuilds its hash
    table from the referenced set, so few large batches cost far less than many 1,000-key pages."""
    batch: list[ObjectMeta] = []
    for page in pages:
        batch += page
        if len(batch) >= LISTING_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def plan_vacuum(storage: Storage, snapshot: Snapshot, *, retention_hours: float | None = None,
                enforce_retention_duration: bool = True, full: bool = False,
                keep_versions: Sequence[int] | None = None, now_ms: int | None = None,
                min_unreferenced_age_hours: float | None = None) -> VacuumPlan:
    """The files a vacuum would delete (nothing is deleted or committed). Every VACUUM (the embedded
    engine's, the CLI's, Spark's) plans here, so each gets the minimum-age guard for unreferenced files."""
    _check_protocol(snapshot)
    retention, default = retention_ms(snapshot, retention_hours, enforce_retention_duration)
    min_age = min_unreferenced_age_ms(snapshot, min_unreferenced_age_hours)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    cutoff = now - retention
    tombs = snapshot.tombstones
    expired = _expired_mask(tombs, cutoff)
    kept_tombs = tombs.filter(pc.invert(expired)) if tombs.num_rows else tombs
    dead = tombs.filter(expired) if tombs.num_rows else tombs
    referenced = _unique([*_file_keys(storage, snapshot.files), *_file_keys(storage, kept_tombs),
                          *_keep_version_keys(storage, keep_versions)])
    dead_keys = _unique(_file_keys(storage, dead))
    dead_keys = dead_keys.filter(pc.invert(pc.is_in(dead_keys, value_set=referenced)))
    if not full:
        cdc, cdc_size = _cdc_keys(storage, snapshot, cutoff)
        if len(cdc):
            cdc = pc.unique(cdc)
            cdc = cdc.filter(pc.invert(pc.is_in(cdc, value_set=_unique([dead_keys, referenced]))))
        size = int(pc.sum(dead.column("size")).as_py() or 0) if dead.num_rows else 0
        files = dead_keys.to_pylist() + cdc.to_pylist()
        log.info("vacuum lite of %s: %d files", storage.root_uri, len(files))
        return VacuumPlan(files, size + cdc_size, retention, default, enforce_retention_duration, min_age)

    # files the log names as gone go by the retention; any other file only once older than the minimum age
    # too (a writer's data files exist before the commit that names them)
    named_gone = _unique([dead_keys, _cdc_keys(storage, snapshot, cutoff)[0]])
    orphan_cutoff = min(cutoff, now - min_age)

    partition_dirs = list(snapshot.partition_columns)
    partition_dirs += [f.metadata.get("delta.columnMapping.physicalName", f.name)
                       for f in snapshot.partition_fields if f.metadata]
    files = []
    size = 0
    for batch in _batched(storage.walk("", skip_dir=_hidden_dir(partition_dirs))):
        keys = strings([m.key for m in batch])
        mtimes = np_to_arrow([m.last_modified_ms for m in batch])
        sizes = np_to_arrow([m.size for m in batch])
        visible = pc.or_(pc.invert(pc.match_substring_regex(keys, _HIDDEN_NAME)),
                         pc.match_substring_regex(keys, _EXEMPT_NAME))
        old = pc.or_(pc.less(mtimes, scalar(orphan_cutoff, pa.int64())), pc.is_in(keys, value_set=named_gone))
        mask = pc.and_(pc.and_(visible, old), pc.invert(pc.is_in(keys, value_set=referenced)))
        files += keys.filter(mask).to_pylist()
        size += int(pc.sum(sizes.filter(mask)).as_py() or 0)
    log.info("vacuum full of %s: %d files", storage.root_uri, len(files))
    return VacuumPlan(files, size, retention, default, enforce_retention_duration, min_age)


# ----------------------------------------------------------------------------- execution
def commit_vacuum_marker(storage: Storage, snapshot: Snapshot, operation: str, parameters: dict[str, Any],
            metrics: dict[str, Any], commit_properties: CommitProperties,
            post_commithook_properties: PostCommitHookProperties | None) -> int:
    txn = Transaction(storage, snapshot, operation=operation, operation_parameters=parameters)
    txn.operation_metrics.update(metrics)
    return commit_with(txn, commit_properties, post_commithook_properties)


def vacuum(storage: Storage, snapshot: Snapshot, *, retention_hours: float | None = None, dry_run: bool = True,
           enforce_retention_duration: bool = True, commit_properties: CommitProperties | None = None,
           post_commithook_properties: PostCommitHookProperties | None = None, full: bool = False,
           keep_versions: Sequence[int] | None = None, now_ms: int | None = None,
           progress: Callable[[int, int], None] | None = None,
           min_unreferenced_age_hours: float | None = None) -> tuple[list[str], Snapshot]:
    """Delete unreferenced files; returns (the keys deleted, or that would be on a dry run, and the snapshot
    after the VACUUM START / END commits — `snapshot` itself when nothing was committed)."""
    plan = plan_vacuum(storage, snapshot, retention_hours=retention_hours,
                       enforce_retention_duration=enforce_retention_duration, full=full,
                       keep_versions=keep_versions, now_ms=now_ms,
                       min_unreferenced_age_hours=min_unreferenced_age_hours)
    if dry_run or not plan.files:
        return plan.files, snapshot
    props = commit_properties or CommitProperties()
    start = commit_vacuum_marker(storage, snapshot, "VACUUM START",
                    {"retentionCheckEnabled": plan.enforce, "specifiedRetentionMillis": plan.retention_ms,
                     "defaultRetentionMillis": plan.default_retention_ms},
                    {"numFilesToDelete": len(plan.files), "sizeOfDataToDelete": plan.size_bytes},
                    props, post_commithook_properties)
    after_start = advanced_snapshot(storage, snapshot, start)
    total = len(plan.files)
    done = 0
    status = "FAILED"
    try:
        for i in range(0, total, DELETE_BATCH):
            batch = plan.files[i : i + DELETE_BATCH]
            storage.delete_many(batch)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        status = "COMPLETED"
    finally:
        # delta-spark records a failed vacuum too; the START commit never stays unpaired silently
        end = commit_vacuum_marker(storage, after_start, "VACUUM END", {"status": status},
                      {"numDeletedFiles": done, "numVacuumedDirectories": 0}, props, post_commithook_properties)
    log.info("vacuum of %s deleted %d files", storage.root_uri, done)
    return plan.files, advanced_snapshot(storage, after_start, end)


def advanced_snapshot(storage: Storage, snapshot: Snapshot, version: int) -> Snapshot:
    """The snapshot at `version` after one commitInfo-only commit (VACUUM START / END) on top of `snapshot`:
    the same replayed state with the commit appended to its segment (no replay, which would cost seconds on
    a large table), or a fresh load when other writers committed in between."""
    if version != snapshot.version + 1:
        return Snapshot.load(storage, version)
    seg = snapshot.segment
    meta = storage.head(commit_key(version))
    segment = dataclasses.replace(seg, version=version, commits=[*seg.commits, meta], checksum=None)
    return Snapshot(storage, segment, snapshot.replay_result)


__all__ = ["MIN_UNREFERENCED_AGE_PROPERTY", "VacuumPlan", "VacuumRetentionError", "advanced_snapshot", "dv_file_keys",
           "log_path_keys", "min_unreferenced_age_ms", "plan_vacuum", "row_dv_keys", "row_path_keys", "vacuum"]
