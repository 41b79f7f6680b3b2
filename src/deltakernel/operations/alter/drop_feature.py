"""`DeltaTable.alter.drop_feature`: remove a table feature from the protocol (delta-spark's
`ALTER TABLE ... DROP FEATURE f [TRUNCATE HISTORY]`, operation "DROP FEATURE").

Writer-only features drop in one commit once nothing uses them: appendOnly and changeDataFeed lose their
property; checkConstraints, invariants, generatedColumns, identityColumns, allowColumnDefaults and
domainMetadata are refused while a constraint / column / domain (or a dependent feature) still uses them.

Reader-writer features (deletionVectors, vacuumProtocolCheck) follow delta-spark's history-truncation rule:
old readers must not meet the feature in any version they can still read.
1. The current state is made free of the feature (deletionVectors: `delta.enableDeletionVectors=false`,
   then every file with a DV rewritten without it, "REORG" with applyPurge).
2. Without `truncate_history=True` the call stops there with FeatureDropWaitError.
3. With it, the last commit T still carrying the feature (a DV in an add/remove, the enabling property)
   must be older than `delta.dropFeatureTruncateHistory.retentionDuration` (24 hours); then a classic
   checkpoint is written at T+1 (after an empty commit when T is the latest version), every log file of an
   earlier version is deleted, and the protocol is committed without the feature.
Other features (v2Checkpoint: our classic checkpoints of a v2 table are V2-spec, so the cut would keep a
trace; columnMapping, typeWidening, rowTracking, clustering, ...) raise UnsupportedFeatureError.
The protocol never loses another feature; a legacy protocol that cannot express the remaining features
without the dropped one moves to table features (writer 7) only with `allow_protocol_versions_increase`.
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

import pyarrow.compute as pc

from ...errors import DeltaError, FeatureDropWaitError, UnsupportedFeatureError
from ...kernel.log.action_types import AddAction
from ...kernel.log.actions import Protocol
from ...kernel.log.replay import read_commits
from ...kernel.log.retention import interval_conf
from ...kernel.log.segment import LOG_DIR, list_commits
from ...kernel.log.time_travel import commit_timestamps
from ...kernel.protocol.select import (
    FEATURE_DEPENDENCIES,
    features_in_effect,
    minimal_protocol,
    table_features_protocol,
)
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage
from .table_properties import feature_name

log = logging.getLogger(__name__)

RETENTION_KEY = "delta.dropFeatureTruncateHistory.retentionDuration"
DEFAULT_RETENTION = "interval 24 hours"
WRITER_ONLY = {"appendOnly", "changeDataFeed", "checkConstraints", "invariants", "generatedColumns",
               "identityColumns", "allowColumnDefaults", "domainMetadata", "inCommitTimestamp"}
WITH_HISTORY = {"deletionVectors", "vacuumProtocolCheck"}


def drop_feature(storage: Storage, snapshot: Snapshot, feature: Any, *, allow_protocol_versions_increase: bool = False,
                 truncate_history: bool = False, custom_metadata: dict[str, Any] | None = None,
                 now_ms: int | None = None, post_commithook_properties: Any = None) -> int:
    """Drop `feature` (a name, a TableFeatures member, or a list of them); returns the table's new version.
    `post_commithook_properties` (deltalake's) applies to each of the commits this takes."""
    items = feature if isinstance(feature, (list, tuple, set)) else [feature]
    snap = snapshot
    token = _POST_HOOK.set(post_commithook_properties)
    try:
        for item in items:
            snap = _drop_one(storage, snap, _name(item), allow_protocol_versions_increase, truncate_history,
                             custom_metadata, now_ms)
    finally:
        _POST_HOOK.reset(token)
    return snap.version


#: the post-commit hook options of the running drop_feature call (one call may commit several times)
_POST_HOOK: ContextVar[Any] = ContextVar("drop_feature_post_hook", default=None)


def _commit_txn(txn: Transaction) -> Any:
    hook = _POST_HOOK.get()
    return txn.commit(post_commit=getattr(hook, "create_checkpoint", True),
                      cleanup_expired_logs=getattr(hook, "cleanup_expired_logs", None))


def _name(f: Any) -> str:
    return str(feature_name(f))


def _drop_one(storage: Storage, snap: Snapshot, name: str, allow_increase: bool, truncate: bool,
              custom: dict[str, Any] | None, now_ms: int | None) -> Snapshot:
    if name not in features_in_effect(snap.protocol):
        raise DeltaError(f"cannot drop table feature {name!r}: the table's protocol does not have it")
    for other, deps in FEATURE_DEPENDENCIES.items():
        if name in deps and other in features_in_effect(snap.protocol):
            raise DeltaError(f"cannot drop table feature {name!r}: {other!r} depends on it; drop {other!r} first")
    if name not in WRITER_ONLY | WITH_HISTORY:
        raise UnsupportedFeatureError(name, f"deltakernel cannot drop table feature {name!r}")
    new_protocol = _protocol_without(snap.protocol, name, allow_increase)
    if name in WRITER_ONLY:
        conf = _writer_only_precondition(snap, name)
        txn = _txn(storage, snap, name, False, custom)
        if conf != snap.configuration:
            txn.update_metadata(replace(snap.metadata, configuration=conf))
        return _commit_downgrade(storage, txn, new_protocol)
    snap = _remove_usage(storage, snap, name, custom)
    if not truncate:
        raise FeatureDropWaitError(name, (
            f"table feature {name!r} is no longer used by the current version of {storage.root_uri}, but older "
            f"versions still use it. Wait for {snap.configuration.get(RETENTION_KEY, DEFAULT_RETENTION)} "
            "(delta.dropFeatureTruncateHistory.retentionDuration) after the last such version, then call "
            "drop_feature again with truncate_history=True: that deletes the log history before it."))
    return _truncate_and_drop(storage, snap, name, new_protocol, custom, now_ms)


def _txn(storage: Storage, snap: Snapshot, name: str, truncate: bool, custom: dict[str, Any] | None,
         operation: str = "DROP FEATURE", params: dict[str, Any] | None = None) -> Transaction:
    txn = Transaction(storage, snap, operation=operation,
                      operation_parameters=params if params is not None else
                      {"featureName": name, "truncateHistory": truncate})
    if custom:
        txn.extra_commit_info.update(custom)
    return txn


def _commit_downgrade(storage: Storage, txn: Transaction, protocol: Protocol) -> Snapshot:
    txn.update_protocol(protocol)
    txn.allow_protocol_downgrade = True  # exactly one feature goes (checked in _protocol_without)
    txn.read_whole_table()
    version = _commit_txn(txn).version
    return Snapshot.load(storage, version)


def _protocol_without(p: Protocol, name: str, allow_increase: bool) -> Protocol:
    remaining = features_in_effect(p) - {name}
    candidate = minimal_protocol(remaining) if remaining else Protocol(1, 1)
    if name in features_in_effect(candidate):  # a legacy version implying it: list the features instead
        candidate = table_features_protocol(remaining)
    if features_in_effect(candidate) != remaining and not (remaining <= features_in_effect(candidate)
                                                           and name not in features_in_effect(candidate)):
        raise DeltaError(f"cannot express the protocol without {name!r}")
    if candidate.min_reader_version == 3 and not candidate.reader_features and p.min_reader_version < 3:
        candidate = Protocol(1, candidate.min_writer_version, None, candidate.writer_features)
    if (candidate.min_reader_version > p.min_reader_version or candidate.min_writer_version > p.min_writer_version) \
            and not allow_increase:
        raise DeltaError(
            f"dropping {name!r} from protocol ({p.min_reader_version}, {p.min_writer_version}) needs table features "
            f"({candidate.min_reader_version}, {candidate.min_writer_version}): its legacy versions imply it. Pass "
            "allow_protocol_versions_increase=True")
    return candidate


def _writer_only_precondition(snap: Snapshot, name: str) -> dict[str, str]:
    """The configuration without the feature's switch; refuses while the table still uses the feature."""
    conf = dict(snap.configuration)
    fields = list(_all_fields(snap.schema))
    if name == "appendOnly":
        conf.pop("delta.appendOnly", None)
    elif name == "changeDataFeed":
        conf.pop("delta.enableChangeDataFeed", None)
    elif name == "inCommitTimestamp":
        for k in ("delta.enableInCommitTimestamps", "delta.inCommitTimestampEnablementVersion",
                  "delta.inCommitTimestampEnablementTimestamp"):
            conf.pop(k, None)
    elif name == "checkConstraints":
        used = sorted(k[len("delta.constraints."):] for k in conf if k.startswith("delta.constraints."))
        if used:
            raise DeltaError(f"cannot drop checkConstraints: the table has CHECK constraints {used}; drop them first "
                             "(alter.drop_constraint)")
    else:
        key = {"invariants": "delta.invariants", "generatedColumns": "delta.generationExpression",
               "identityColumns": "delta.identity.start", "allowColumnDefaults": "CURRENT_DEFAULT"}.get(name)
        if key is not None:
            used = [f.name for f in fields if key in f.metadata]
            if used:
                raise DeltaError(f"cannot drop {name}: columns {used} use it")
        if name == "domainMetadata" and snap.domain_metadata:
            raise DeltaError(f"cannot drop domainMetadata: domains {sorted(snap.domain_metadata)} are set")
    return conf


def _all_fields(schema: Any) -> Any:
    from ...kernel.schema.types import StructType

    for f in schema.fields:
        yield f
        if isinstance(f.type, StructType):
            yield from _all_fields(f.type)


# ----------------------------------------------------------------------------- reader-writer features
def _remove_usage(storage: Storage, snap: Snapshot, name: str, custom: dict[str, Any] | None) -> Snapshot:
    """Commits that make the current state free of the feature (none when it already is)."""
    conf = dict(snap.configuration)
    if name == "deletionVectors" and conf.get("delta.enableDeletionVectors", "").lower() == "true":
        conf["delta.enableDeletionVectors"] = "false"
    if conf != snap.configuration:
        txn = _txn(storage, snap, name, False, custom, "SET TBLPROPERTIES",
                   {"properties": {k: v for k, v in conf.items() if snap.configuration.get(k) != v}})
        txn.update_metadata(replace(snap.metadata, configuration=conf))
        snap = Snapshot.load(storage, _commit_txn(txn).version)
    if name == "deletionVectors":
        snap = _purge_deletion_vectors(storage, snap, custom)
    return snap


def _purge_deletion_vectors(storage: Storage, snap: Snapshot, custom: dict[str, Any] | None) -> Snapshot:
    """Rewrite every file with a DV without its deleted rows (delta-spark's REORG ... APPLY (PURGE))."""
    from ..dml.rewrite import Rewriter, remove_action, row_tracking_configuration

    files = snap.files
    with_dv = files.filter(files.column("deletion_vector").is_valid())
    if not with_dv.num_rows:
        return snap
    now = int(time.time() * 1000)
    txn = _txn(storage, snap, "deletionVectors", False, custom, "REORG",
               {"predicate": "[]", "applyPurge": True})
    conf = row_tracking_configuration(txn)
    rewriter = Rewriter(snap, storage, configuration=conf, now=now)
    rows = with_dv.to_pylist()
    txn.read_files([r["path"] for r in rows])
    try:
        def batches() -> Any:
            for r in rows:
                data = rewriter.read(r)
                if data.num_rows:
                    yield from rewriter.output.materialize(data).to_batches()

        rewriter.output.write(batches())
        adds: list[AddAction] = [{**a, "dataChange": False} for a in rewriter.output.finish()]
        txn.remove_files([remove_action(r, now, data_change=False) for r in rows])
        txn.add_files(adds)
        txn.operation_metrics.update({"numRemovedFiles": len(rows), "numAddedFiles": len(adds),
                                      "numDeletionVectorsRemoved": len(rows)})
        version = _commit_txn(txn).version
    except BaseException:
        if not txn.may_have_committed:
            rewriter.abort()
        raise
    log.info("purged deletion vectors of %d files of %s", len(rows), storage.root_uri)
    return Snapshot.load(storage, version)


def _last_trace(storage: Storage, snap: Snapshot, name: str) -> int:
    """The newest version whose log files still carry the feature (-1: none)."""
    if name == "vacuumProtocolCheck":
        return -1  # only the protocol names it: no action an old reader could misread
    commits = list_commits(storage)
    metas = [commits[v] for v in sorted(commits) if v <= snap.version]
    batch = read_commits(storage, metas)
    last = -1
    for version, obj in batch.rare:
        md = obj.get("metaData")
        if isinstance(md, dict):
            c = md.get("configuration") or {}
            if name == "deletionVectors" and str(c.get("delta.enableDeletionVectors", "")).lower() == "true":
                last = max(last, version)
    if name == "deletionVectors":
        for table in (batch.adds, batch.removes):
            if table.num_rows:
                hit = table.filter(table.column("deletion_vector").is_valid())
                if hit.num_rows:
                    last = max(last, int(pc.max(hit.column("_version")).as_py()))
    return last


def _truncate_and_drop(storage: Storage, snap: Snapshot, name: str, protocol: Protocol,
                       custom: dict[str, Any] | None, now_ms: int | None) -> Snapshot:
    from ...kernel.checkpoints.write import write_checkpoint

    now = int(time.time() * 1000) if now_ms is None else now_ms
    retention = interval_conf(snap.configuration, RETENTION_KEY, DEFAULT_RETENTION) or 0
    last = _last_trace(storage, snap, name)
    if last >= 0:
        stamps = commit_timestamps(storage, snap.ict_enablement_version)
        ts = stamps.get(last, now)
        if ts > now - retention:
            raise FeatureDropWaitError(name, (
                f"cannot truncate the history of {storage.root_uri} yet: version {last} still uses {name!r} and is "
                f"newer than {snap.configuration.get(RETENTION_KEY, DEFAULT_RETENTION)}; try again after "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime((ts + retention) / 1000))} UTC"))
        if last == snap.version:  # the cut needs a clean version after the last trace
            txn = _txn(storage, snap, name, True, custom, "EMPTY COMMIT", {})
            snap = Snapshot.load(storage, _commit_txn(txn).version)
        cut = last + 1
        write_checkpoint(Snapshot.load(storage, cut), kind="classic")
        deleted = _delete_log_before(storage, cut)
        log.info("truncated the history of %s before version %d (%d log files) to drop %s", storage.root_uri, cut,
                 len(deleted), name)
        snap = Snapshot.load(storage, snap.version)
    txn = _txn(storage, snap, name, True, custom)
    return _commit_downgrade(storage, txn, protocol)


def _delete_log_before(storage: Storage, cut: int) -> list[str]:
    """Delete every log file of a version < `cut` (commits, checksums, checkpoints, compactions)."""
    doomed: list[str] = []
    for m in storage.list_from(f"{LOG_DIR}/"):
        name = m.key.rsplit("/", 1)[-1]
        if name[:20].isdigit() and len(name) > 20 and name[20] == ".":
            last = int(name[21:41]) if name.endswith(".compacted.json") else int(name[:20])
            if last < cut:
                doomed.append(m.key)
    for key in sorted(doomed):  # oldest first: a crash leaves a contiguous suffix of the log
        storage.delete(key)
    return doomed


__all__ = ["FeatureDropWaitError", "drop_feature"]
