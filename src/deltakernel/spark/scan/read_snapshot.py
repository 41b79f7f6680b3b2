"""The snapshot a read's options name: the latest, `versionAsOf` or `timestampAsOf` (delta-spark's errors for a
timestamp outside the log's commits).

Shared by the native read (`reader.py`) and the Python data source (`datasource.py`), which the native read
falls back to: it lives below both.

The latest snapshot is kept per session (`latest_snapshot`), as delta-spark keeps its `DeltaLog` snapshot and
updates it at the start of every query: a read of the latest version costs one listing of the log from the kept
version on. Nothing new -> the kept snapshot (its commit file unchanged: a table dropped and created again at the
same place is loaded afresh); new commits -> `Snapshot.advance` replays only those. So every read still sees the
latest commit at its start. The store is a small LRU per session (`MAX_SNAPSHOTS`), holding no JVM objects.
Measured (benchmarks/README.md, "Spark read overhead"): a full snapshot load was 150-300 ms of every query.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError, VersionNotFoundError
from ...kernel.log.time_travel import format_timestamp_ms, parse_timestamp
from ...kernel.snapshot import Snapshot
from ..common.error_classes import TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION, TIMESTAMP_GREATER_THAN_COMMIT, classed
from ..common.schema import Options, storage_options, table_uri
from ..common.time_bounds import version_within_log

MAX_SNAPSHOTS = 8  # latest snapshots kept per session (each holds its file table)
_lock = threading.Lock()


@dataclass(frozen=True)
class _Kept:
    snapshot: Snapshot
    commit: Any  # ObjectMeta of the snapshot's commit file when it was kept (None: not listed)


def latest_snapshot(spark: Any, path: str, opts: Options) -> Snapshot:
    """`load_snapshot(path, opts)`, reusing (and updating) the session's latest snapshot of the table when the
    options name no version (see the module docstring)."""
    version, ts = opts.get("versionAsOf"), opts.get("timestampAsOf")
    if spark is None or version is not None or ts is not None:
        return load_snapshot(path, opts)
    storage_opts = storage_options(opts)
    key = (table_uri(path), tuple(sorted((storage_opts or {}).items())))
    store = _store(spark)
    with _lock:
        kept = store.get(key)
        if kept is not None:
            store.move_to_end(key)
    snapshot = _updated(kept) if kept is not None else None
    if snapshot is None:
        snapshot = load_snapshot(path, opts)
    if kept is None or snapshot is not kept.snapshot:
        _keep(store, key, snapshot)
    return snapshot


def _updated(kept: _Kept) -> Snapshot | None:
    """The kept snapshot brought up to date (one listing), or None when it must be loaded afresh."""
    from ...kernel.log.segment import commits_from

    snap = kept.snapshot
    try:
        tail = commits_from(snap.storage, snap.version)
    except Exception:
        return None
    meta = tail.get(snap.version)
    if meta is None or kept.commit is None or (meta.size, meta.last_modified_ms) != \
            (kept.commit.size, kept.commit.last_modified_ms):
        return None  # the commit file is gone or another one: the table was replaced
    if list(tail) == [snap.version]:
        return snap
    try:
        return snap.advance()
    except Exception:
        return None


def _keep(store: OrderedDict[Any, _Kept], key: Any, snapshot: Snapshot) -> None:
    from ...kernel.log.segment import commits_from

    try:
        commit = commits_from(snapshot.storage, snapshot.version).get(snapshot.version)
    except Exception:
        commit = None
    with _lock:
        old = store.get(key)
        if old is not None and old.snapshot.version > snapshot.version:
            return  # another thread of the session kept a newer one
        store[key] = _Kept(snapshot, commit)
        store.move_to_end(key)
        while len(store) > MAX_SNAPSHOTS:
            store.popitem(last=False)


def _store(spark: Any) -> OrderedDict[Any, _Kept]:
    store = spark.__dict__.get("_dk_latest_snapshots")
    if store is None:
        with _lock:
            store = spark.__dict__.setdefault("_dk_latest_snapshots", OrderedDict())
    return store  # type: ignore[no-any-return]


def forget_snapshots(spark: Any) -> None:
    """Drop the session's kept snapshots (tests, `disable`)."""
    with _lock:
        spark.__dict__.pop("_dk_latest_snapshots", None)


def load_snapshot(path: str, opts: Options) -> Snapshot:
    """The snapshot named by versionAsOf / timestampAsOf (latest without them)."""
    from ...table import DeltaTable

    version, ts = opts.get("versionAsOf"), opts.get("timestampAsOf")
    if version is not None and ts is not None:
        raise DeltaError("cannot specify both versionAsOf and timestampAsOf")
    dtab = DeltaTable(table_uri(path), version=int(version) if version is not None else None,
                      storage_options=storage_options(opts))
    if ts is not None:
        _load_at_timestamp(dtab, str(ts))
    return dtab.snapshot


def _load_at_timestamp(dtab: Any, ts: str) -> None:
    """delta-spark's `timestampAsOf`: outside the log's commit times is an error with its class."""

    def too_early(earliest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION,
            f"The provided timestamp ({ts}) is before the earliest version available to this table "
            f"({format_timestamp_ms(earliest)}). Please use a timestamp after ({format_timestamp_ms(earliest)})."))

    def too_late(latest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_GREATER_THAN_COMMIT,
            f"The provided timestamp ({ts}) is after the latest version available to this table "
            f"({format_timestamp_ms(latest)}). Please use a timestamp before or at ({format_timestamp_ms(latest)})."))

    dtab.load_as_version(version_within_log(dtab.snapshot, parse_timestamp(ts), too_early, too_late))


__all__ = ["MAX_SNAPSHOTS", "forget_snapshots", "latest_snapshot", "load_snapshot"]
