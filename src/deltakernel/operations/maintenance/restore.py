"""RESTORE (deltalake's `DeltaTable.restore`, delta-spark's RestoreTableCommand semantics).

The table's state becomes the target version's again in one new commit: files of the target that are not live
now are re-added (`dataChange=true`, with their stats, DVs and row ids), live files the target did not have are
removed, and the target's metadata comes back. Files are matched on (path, deletion-vector unique id) — the
replay key — by Arrow anti-joins on the two file tables, so a 100k-file log costs two replays and two joins,
with the actions built column-wise (`to_pylist` of one struct) rather than per file in Python.

Protocol: never downgraded by default (the current protocol plus whatever the target needs); with
`protocol_downgrade_allowed` the target's protocol, still raised to what the restored metadata needs. A
missing data or DV file of the re-added set fails the restore (MissingFileError) unless `ignore_missing_files`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MissingFileError, RestoreError, VersionNotFoundError
from ...kernel.arrow_build import broadcast, scalar
from ...kernel.log.action_tables import file_keys
from ...kernel.log.action_types import AddAction, RemoveAction
from ...kernel.log.time_travel import parse_timestamp
from ...kernel.protocol.select import features_in_effect, minimal_protocol
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with
from ..write.plan import required_features
from .vacuum import row_dv_keys, row_path_keys, strings

log = logging.getLogger(__name__)

#: above this many re-added files, existence is checked with one listing instead of one request per file
_LIST_THRESHOLD = 1000


def _target_snapshot(storage: Storage, current: Snapshot, target: int | dt.datetime | str,
                     clamp_to_earliest: bool = False) -> Snapshot:
    if isinstance(target, bool) or not isinstance(target, (int, dt.datetime, str)):
        raise RestoreError(f"restore target must be a version, a datetime or an ISO-8601 string, got {target!r}")
    if isinstance(target, int):
        if target < 0 or target > current.version:
            raise VersionNotFoundError(f"cannot restore to version {target}: the table's versions are 0 to "
                                       f"{current.version}")
        if target == current.version:
            raise RestoreError(f"Version to restore {target} should be less then last available version "
                               f"{current.version}: version to restore ({target}) must be earlier than the current "
                               "version "
                               f"({current.version})")
        return Snapshot.load(storage, target, log_tail=current.log_tail)  # a catalog's tail: its staged commits
    snap = Snapshot.load_at(storage, target, reference=current, clamp_to_earliest=clamp_to_earliest,
                            log_tail=current.log_tail)
    if snap.version >= current.version:
        raise RestoreError(f"Version to restore {snap.version} should be less then last available version "
                           f"{current.version}: the version at {target} ({snap.version}) must be earlier than the "
                           "current version "
                           f"({current.version})")
    return snap


def _anti_join(left: pa.Table, right: pa.Table) -> pa.Table:
    """Rows of `left` whose (path, DV unique id) key is not in `right`."""
    if not left.num_rows or not right.num_rows:
        return left
    return left.filter(pc.invert(pc.is_in(file_keys(left), value_set=file_keys(right))))


def _tags(col: pa.ChunkedArray) -> list[Any]:
    """The tags column as JSON values (Arrow maps come out of `to_pylist` as pair lists)."""
    if col.null_count == len(col):
        return [None] * len(col)
    return [dict(t) if t is not None else None for t in col.to_pylist()]


#: optional action fields: left out of an action where null (the protocol wants them absent)
_OPTIONAL = ("deletionVector", "baseRowId", "defaultRowCommitVersion", "stats")


def _actions(files: pa.Table, kind: str, now: int) -> list[dict[str, Any]]:
    """`add` (re-added, dataChange=true) or `remove` actions for file-table rows, built column-wise: one
    `to_pylist` per column that holds a value somewhere (a RESTORE of 100k files builds 40k+ actions)."""
    n = files.num_rows
    if not n:
        return []
    cols: dict[str, Any] = {
        "path": files.column("path"),
        "partitionValues": files.column("partition_values"),
        "size": files.column("size"),
    }
    if kind == "add":
        cols["modificationTime"] = files.column("modification_time")
        cols["dataChange"] = True
        cols["stats"] = files.column("stats")
    else:
        cols["deletionTimestamp"] = now
        cols["dataChange"] = True
        cols["extendedFileMetadata"] = True
    cols["deletionVector"] = files.column("deletion_vector")
    cols["baseRowId"] = files.column("base_row_id")
    cols["defaultRowCommitVersion"] = files.column("default_row_commit_version")
    keys: list[str] = []
    values: list[Any] = []
    partial: list[str] = []  # optional columns null in some rows only
    for key, col in cols.items():
        if not isinstance(col, (pa.Array, pa.ChunkedArray)):
            keys.append(key)
            values.append(itertools.repeat(col, n))
            continue
        if key in _OPTIONAL and col.null_count == len(col):
            continue
        if key in _OPTIONAL and col.null_count:
            partial.append(key)
        keys.append(key)
        values.append(col.to_pylist())
    rows: list[dict[str, Any]] = [dict(zip(keys, row)) for row in zip(*values)]
    tags = files.column("tags")
    if tags.null_count != len(tags):
        for row, tag in zip(rows, _tags(tags)):
            if tag is not None:
                row["tags"] = tag
    if partial or "deletionVector" in keys:
        for row in rows:
            for key in partial:
                if row.get(key) is None:
                    row.pop(key, None)
            dv = row.get("deletionVector")
            if dv is not None and dv.get("offset") is None:
                dv.pop("offset", None)
    return rows


def missing_files(storage: Storage, files: pa.Table, *, with_dvs: bool = True) -> pa.Array:
    """Per row of a file table: whether its data file (or, `with_dvs`, its DV file) is missing from storage.
    Many files on an object store: one listing anti-joined with Arrow; otherwise one existence check each
    (threads on object stores, a plain loop of stats locally). Files outside the table root are not checked
    (reported present)."""
    paths = row_path_keys(storage, files.column("path"))
    dvs = row_dv_keys(storage, files.column("deletion_vector")) if with_dvs else pa.nulls(files.num_rows, pa.string())
    keys = pc.unique(pa.concat_arrays([paths, dvs])).drop_null()
    if not len(keys):
        return broadcast(scalar(False), files.num_rows)
    if len(keys) > _LIST_THRESHOLD and not storage.sequential_reads:
        listed = [strings([m.key for m in page]) for page in storage.walk("")]
        present = pa.concat_arrays(listed) if listed else strings([])
        absent = keys.filter(pc.invert(pc.is_in(keys, value_set=present)))
    else:  # few keys, or a local disk (a stat per key beats listing and stat'ing the whole table)
        wanted = keys.to_pylist()
        if storage.sequential_reads:
            found = [storage.exists(k) for k in wanted]
        else:
            with ThreadPoolExecutor(max_workers=min(32, len(wanted))) as pool:
                found = list(pool.map(storage.exists, wanted))
        absent = strings([k for k, ok in zip(wanted, found) if not ok])
    if not len(absent):
        return broadcast(scalar(False), files.num_rows)
    return pc.or_(pc.fill_null(pc.is_in(paths, value_set=absent), scalar(False)),
                  pc.fill_null(pc.is_in(dvs, value_set=absent), scalar(False)))


def _protocol(current: Snapshot, target: Snapshot, downgrade_allowed: bool) -> Any:
    if not downgrade_allowed:
        return minimal_protocol(features_in_effect(target.protocol), current.protocol)
    needed = required_features(target.schema, target.configuration)
    if target.files.num_rows and target.files.column("deletion_vector").null_count < target.files.num_rows:
        needed.add("deletionVectors")
    return minimal_protocol(needed, target.protocol)


def restore(storage: Storage, snapshot: Snapshot, target: int | dt.datetime | str, *,
            ignore_missing_files: bool = False, protocol_downgrade_allowed: bool = False,
            commit_properties: CommitProperties | None = None,
            post_commithook_properties: PostCommitHookProperties | None = None,
            clamp_to_earliest: bool = False) -> tuple[dict[str, Any], int]:
    """Restore the table to `target`; returns (deltalake's metrics, the committed version). A time before the
    earliest commit in the log: VersionNotFoundError (delta-spark), or with `clamp_to_earliest` (deltalake's
    API) that earliest commit."""
    start = time.monotonic()
    restored = _target_snapshot(storage, snapshot, target, clamp_to_earliest)
    to_add = _anti_join(restored.files, snapshot.files)
    to_remove = _anti_join(snapshot.files, restored.files)
    missing = missing_files(storage, to_add)
    n_missing = pc.sum(missing).as_py() or 0 if to_add.num_rows else 0
    if n_missing:
        example = to_add.filter(missing).column("path")[0].as_py()
        if not ignore_missing_files:
            raise MissingFileError(
                f"cannot restore {storage.root_uri} to version {restored.version}: {n_missing} of its files are "
                f"missing (e.g. {example!r} or its deletion vector, deleted by VACUUM?); pass "
                "ignore_missing_files=True to restore without them")
        # re-adding a file that is gone would leave the table unreadable: restore without it
        log.warning("restore of %s skips %d missing files (e.g. %s)", storage.root_uri, n_missing, example)
        to_add = to_add.filter(pc.invert(missing))
    if isinstance(target, int):
        params: dict[str, Any] = {"version": target}
    else:
        params = {"datetime": parse_timestamp(target)}
    txn = Transaction(storage, snapshot, operation="RESTORE", operation_parameters=params)
    txn.read_whole_table()
    now = int(time.time() * 1000)
    txn.add_files(cast(list[AddAction], _actions(to_add, "add", now)))
    txn.remove_files(cast(list[RemoveAction], _actions(to_remove, "remove", now)))
    new_protocol = _protocol(snapshot, restored, protocol_downgrade_allowed)
    if new_protocol != snapshot.protocol:
        txn.update_protocol(new_protocol)
        txn.allow_protocol_downgrade = protocol_downgrade_allowed
    if restored.metadata != snapshot.metadata:
        txn.update_metadata(restored.metadata)
    metrics = {"numRemovedFile": to_remove.num_rows, "numRestoredFile": to_add.num_rows}
    size_after = pc.sum(restored.files.column("size")).as_py() or 0 if restored.files.num_rows else 0
    txn.operation_metrics.update({
        **metrics,
        "numRestoredFiles": to_add.num_rows, "numRemovedFiles": to_remove.num_rows,
        "restoredFilesSize": pc.sum(to_add.column("size")).as_py() or 0 if to_add.num_rows else 0,
        "removedFilesSize": pc.sum(to_remove.column("size")).as_py() or 0 if to_remove.num_rows else 0,
        "numOfFilesAfterRestore": restored.files.num_rows, "tableSizeAfterRestore": size_after,
        "executionTimeMs": int((time.monotonic() - start) * 1000),
    })
    version = commit_with(txn, commit_properties, post_commithook_properties)
    log.info("restored %s to version %d at version %d: %d files re-added, %d removed", storage.root_uri,
             restored.version, version, to_add.num_rows, to_remove.num_rows)
    return metrics, version


__all__ = ["RestoreError", "missing_files", "restore"]
