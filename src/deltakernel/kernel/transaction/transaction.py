"""The kernel's Transaction: optimistic, conflict-checked, atomic commits.

A transaction records the version it read and what it read, collects actions, and commits through a
`Committer` (committer.py): put-if-absent of `_delta_log/N.json` (never a rename) for filesystem-managed tables,
stage / ratify / publish through the catalog for catalog-managed ones. If another writer won version N, the winning
commits are checked with Delta's conflict rules (`conflicts.py`); when nothing real conflicts the
transaction is rebased (new version, fresh in-commit timestamp, row ids after the winner's) and retried.

Every commit carries a unique `commitInfo.txnId` (as delta-spark writes). An object store can store a
put and still lose or fail its response; the client's retry then reports "already exists". So whenever
the outcome of a put is not a plain success, the commit at that version is read back: our txnId means
the commit landed (and is never made twice), another writer's commit means the version was lost to
them. `commit_state` tells callers whether data files may be deleted after a failure: only when the
commit is known absent.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import (
    CommitConflictError,
    ConstraintViolationError,
    DeltaError,
    DeltaProtocolError,
    InvalidCommitMetadataError,
)
from ...storage.base import Storage
from ..catalog_client import permits
from ..log.action_types import AddAction, CdcAction, CommitInfoAction, RemoveAction
from ..log.actions import Metadata, Protocol, Txn
from ..protocol.features import check_write_supported, is_catalog_managed
from ..protocol.select import protocol_never_downgraded
from .committer import PUT_ATTEMPTS, Committer, committer_for
from .conflicts import (
    ISOLATION_LEVELS,
    SERIALIZABLE,
    WRITE_SERIALIZABLE,
    ReadSet,
    WinningCommit,
    check_conflicts,
    partition_matches,
)

log = logging.getLogger("deltakernel")

ENGINE_INFO = "deltakernel/0.1.0"
ROW_TRACKING_DOMAIN = "delta.rowTracking"
DEFAULT_MAX_RETRIES = 15
__all__ = ["PUT_ATTEMPTS", "CommitResult", "Transaction"]
#: one encoder for every action line (json.dumps with separators builds a new encoder per call: a third of
#: the serialization of a 40k-action RESTORE); the same bytes as json.dumps(a, separators=(",", ":"))
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))

#: `Transaction.commit_state` values
NOT_ATTEMPTED = "not_attempted"  # no commit put was started: nothing can have landed
ABSENT = "absent"  # every put was answered and read back: the commit is known not to be in the log
IN_DOUBT = "in_doubt"  # a put may have landed (interrupted, unreadable): keep every file it references
COMMITTED = "committed"


def _true(conf: dict[str, str], key: str, default: bool = False) -> bool:
    return conf.get(key, "true" if default else "false").strip().lower() == "true"


@dataclass
class CommitResult:
    version: int
    actions: list[dict[str, Any]] = field(default_factory=list)
    retries: int = 0


class Transaction:
    """One atomic change to a table. Not thread-safe; use one per writer."""

    def __init__(
        self,
        storage: Storage,
        snapshot: Any | None,
        *,
        operation: str,
        operation_parameters: dict[str, Any] | None = None,
        isolation_level: str | None = None,
        engine_info: str = ENGINE_INFO,
        committer: Committer | None = None,
    ) -> None:
        self.storage = storage
        #: how versions are made durable; chosen from the table's protocol at commit (`committer_for`)
        self.committer: Committer | None = committer
        self.snapshot = snapshot  # Snapshot | None (new table)
        self.read_version: int = snapshot.version if snapshot is not None else -1
        self.operation = operation
        self.operation_parameters = dict(operation_parameters or {})
        conf = snapshot.configuration if snapshot is not None else {}
        level = isolation_level or conf.get("delta.isolationLevel", WRITE_SERIALIZABLE)
        if level not in ISOLATION_LEVELS:
            raise DeltaError(f"unsupported isolation level {level!r}; use one of {ISOLATION_LEVELS}")
        self.isolation_level = level
        self.engine_info = engine_info
        self.read_set = ReadSet()
        self.adds: list[AddAction] = []
        self.removes: list[RemoveAction] = []
        self.cdcs: list[CdcAction] = []
        self.new_metadata: Metadata | None = None
        self.new_protocol: Protocol | None = None
        self.app_txns: dict[str, Txn] = {}
        self.domains: dict[str, dict[str, Any]] = {}
        self.operation_metrics: dict[str, Any] = {}
        self.extra_commit_info: dict[str, Any] = {}
        self.committed_version: int | None = None
        self._cleanup_logs: bool | None = None  # `commit(cleanup_expired_logs=...)`
        #: this transaction's commitInfo.txnId, the same in every attempt, so a landed attempt is recognised
        self.txn_id = str(uuid.uuid4())
        self.commit_state = NOT_ATTEMPTED
        #: the in-commit timestamp to use (the commit enabling ICT must carry its enablement timestamp)
        self.in_commit_timestamp: int | None = None
        #: only a feature drop (with the protocol's own rules) may lower the protocol
        self.allow_protocol_downgrade = False

    @property
    def may_have_committed(self) -> bool:
        """False only when the commit is known not to be in the log (its data files may then be deleted)."""
        return self.commit_state in (IN_DOUBT, COMMITTED)

    # ------------------------------------------------------------------ what was read
    def read_whole_table(self) -> None:
        self.read_set.whole_table = True

    def read_predicate(self, predicate: Any) -> None:
        """Record a partition predicate the transaction's result depends on."""
        self.read_set.predicates.append(predicate)

    def read_files(self, paths: list[str]) -> None:
        self.read_set.files.update(paths)

    # ------------------------------------------------------------------ what is written
    def add_files(self, adds: Iterable[AddAction]) -> None:
        self.adds.extend(adds)

    def remove_files(self, removes: Iterable[RemoveAction]) -> None:
        self.removes.extend(removes)

    def add_cdc_files(self, cdcs: Iterable[CdcAction]) -> None:
        self.cdcs.extend(cdcs)

    def update_metadata(self, metadata: Metadata) -> None:
        self.new_metadata = metadata

    def update_protocol(self, protocol: Protocol) -> None:
        self.new_protocol = protocol

    def set_app_transaction(self, app_id: str, version: int, last_updated: int | None = None) -> None:
        self.app_txns[app_id] = Txn(app_id, int(version), last_updated)

    def set_commit_tag(self, key: str, value: str) -> None:
        """A `commitInfo.tags` entry (e.g. `delta.rowTracking.preserved`), kept beside the caller's own tags."""
        tags = dict(self.extra_commit_info.get("tags") or {})
        tags[key] = value
        self.extra_commit_info["tags"] = tags

    def set_domain_metadata(self, domain: str, configuration: str, removed: bool = False) -> None:
        self.domains[domain] = {"domain": domain, "configuration": configuration, "removed": removed}

    # ------------------------------------------------------------------ effective state
    @property
    def metadata(self) -> Metadata:
        if self.new_metadata is not None:
            return self.new_metadata
        if self.snapshot is None:
            raise DeltaError("a new table needs metadata")
        md: Metadata = self.snapshot.metadata
        return md

    @property
    def protocol(self) -> Protocol:
        if self.new_protocol is not None:
            return self.new_protocol
        if self.snapshot is None:
            raise DeltaError("a new table needs a protocol")
        p: Protocol = self.snapshot.protocol
        return p

    @property
    def is_blind_append(self) -> bool:
        return (
            self.read_set.empty
            and not self.removes
            and all(a.get("dataChange", True) for a in self.adds)
            and self.new_metadata is None
        )

    def app_transaction_version(self, app_id: str) -> int | None:
        if self.snapshot is None:
            return None
        t = self.snapshot.txns.get(app_id)
        return t.version if t is not None else None

    # ------------------------------------------------------------------ commit
    def _validate(self) -> None:
        if self.snapshot is not None:
            # the table as it is: a protocol we cannot write is refused, never rewritten
            check_write_supported(self.snapshot.protocol)
            if self.new_protocol is not None and not self.allow_protocol_downgrade:
                why = protocol_never_downgraded(self.snapshot.protocol, self.new_protocol)
                if why is not None:
                    raise DeltaError(f"{self.operation} would downgrade the table's protocol: {why}")
        check_write_supported(self.protocol)
        conf = self.metadata.configuration
        if self.snapshot is not None and _true(conf, "delta.appendOnly"):
            changed = [r for r in self.removes if r.get("dataChange", True)]
            if changed:
                raise ConstraintViolationError(
                    f"delta.appendOnly: this table only allows appends, but the {self.operation} would remove "
                    f"data file {changed[0]['path']!r}"
                )
        if self.read_version < 0 and (self.new_metadata is None or self.new_protocol is None):
            raise DeltaError("the first commit of a table must set both protocol and metadata")
        if is_catalog_managed(self.protocol) and not (
                self.protocol.has_feature("inCommitTimestamp") and _true(conf, "delta.enableInCommitTimestamps")):
            raise DeltaProtocolError(
                "a catalog-managed table must have in-commit timestamps supported and enabled (the inCommitTimestamp "
                "feature and delta.enableInCommitTimestamps=true): PROTOCOL.md \"Writer Requirements for "
                "Catalog-managed tables\"")
        self.committer = committer_for(self.storage, self.protocol, self.snapshot, self.committer)

    def _previous_ict(self) -> int | None:
        if self.snapshot is None:
            return None
        info = self.snapshot.commit_infos.get(self.read_version)
        if info is None:
            assert self.committer is not None
            try:
                commit = self.committer.read_commit(self.read_version)
            except DeltaError:  # ObjectNotFoundError included
                return None
            if commit is None:
                return None
            info = commit.commit_info
        ict = (info or {}).get("inCommitTimestamp")
        return int(ict) if ict is not None else None

    def _row_id_high_water_mark(self) -> int:
        if self.snapshot is None:
            return -1
        dm = self.snapshot.domain_metadata.get(ROW_TRACKING_DOMAIN)
        if dm is None:
            return -1
        try:
            return int(json.loads(dm.configuration).get("rowIdHighWaterMark", -1))
        except (ValueError, TypeError):
            return -1

    def _build(self, version: int, prev_ict: int | None, hwm: int) -> list[dict[str, Any]]:
        md = self.metadata
        proto = self.protocol
        conf = md.configuration
        now = int(time.time() * 1000)
        info: CommitInfoAction = {"timestamp": now}
        ict_on = _true(conf, "delta.enableInCommitTimestamps")
        if ict_on:
            ict = now if prev_ict is None else max(now, prev_ict + 1)
            if self.in_commit_timestamp is not None:
                ict = self.in_commit_timestamp
            info = {"inCommitTimestamp": ict, "timestamp": ict}
        info.update(
            {
                "operation": self.operation,
                "operationParameters": {k: v if isinstance(v, str) else json.dumps(v)
                                        for k, v in self.operation_parameters.items()},
            }
        )
        if self.read_version >= 0:
            info["readVersion"] = self.read_version
        info["isolationLevel"] = self.isolation_level if self.read_version >= 0 else SERIALIZABLE
        info["isBlindAppend"] = self.is_blind_append
        if self.operation_metrics:
            info["operationMetrics"] = {k: str(v) for k, v in self.operation_metrics.items()}
        info["engineInfo"] = self.engine_info
        extras = commit_info_extras(self.extra_commit_info)
        user_params = extras.pop("operationParameters", None)
        if user_params:  # deltalake adds the user's keys; the operation's own keys win
            info["operationParameters"] = {**user_params, **info["operationParameters"]}
        commit_info: dict[str, Any] = {**info, **extras, "txnId": self.txn_id}  # the user's keys are untyped

        actions: list[dict[str, Any]] = [{"commitInfo": commit_info}]
        if self.new_protocol is not None:
            actions.append({"protocol": self.new_protocol.to_json()})
        if self.new_metadata is not None:
            actions.append({"metaData": _metadata_json(self.new_metadata)})
        for t in self.app_txns.values():
            actions.append({"txn": {"appId": t.app_id, "version": t.version,
                                    "lastUpdated": t.last_updated if t.last_updated is not None else now}})
        adds = [a.copy() for a in self.adds]
        domains = dict(self.domains)
        if proto.has_feature("rowTracking"):
            next_id = hwm + 1
            for a in adds:
                a.setdefault("defaultRowCommitVersion", version)
                if a.get("baseRowId") is None:
                    a["baseRowId"] = next_id
                    n = _num_records(a)
                    if n is None:
                        raise DeltaError(f"row tracking needs numRecords in the stats of {a['path']!r}")
                    next_id += n
            if next_id - 1 != hwm:
                domains[ROW_TRACKING_DOMAIN] = {
                    "domain": ROW_TRACKING_DOMAIN,
                    "configuration": json.dumps({"rowIdHighWaterMark": next_id - 1}, separators=(",", ":")),
                    "removed": False,
                }
        for d in domains.values():
            actions.append({"domainMetadata": d})
        actions += [{"add": a} for a in adds]
        actions += [{"remove": r} for r in self.removes]
        actions += [{"cdc": c} for c in self.cdcs]
        return actions

    def commit(self, max_retries: int = DEFAULT_MAX_RETRIES, post_commit: bool = True,
               cleanup_expired_logs: bool | None = None) -> CommitResult:
        """Commit atomically; returns the committed version. Raises CommitConflictError subclasses.

        Never commits twice: an attempt whose put outcome is unclear is read back and recognised by txnId.
        `post_commit`: write the checkpoint due at this version; `cleanup_expired_logs` (deltalake's
        post-commit hook option): True cleans expired logs after this commit whether or not it checkpointed,
        False never, None as `delta.enableExpiredLogCleanup` (default on) right after a checkpoint.
        """
        if self.committed_version is not None:
            raise DeltaError("transaction already committed")
        self._cleanup_logs = cleanup_expired_logs
        self._validate()
        version = self.read_version + 1
        prev_ict = self._previous_ict()
        hwm = self._row_id_high_water_mark()
        file_matches = partition_matches(self.read_set.predicates, self.snapshot) if self.snapshot else None
        retries = 0
        self._winners: list[WinningCommit] = []  # rebased over, in order (for the version checksum)
        while True:
            actions = self._build(version, prev_ict, hwm)
            payload = ("\n".join(map(_COMPACT_JSON.encode, actions)) + "\n").encode()
            self.commit_state = IN_DOUBT  # from here until settled, the commit may have landed
            assert self.committer is not None
            winner = self.committer.commit(version, actions, payload, self.txn_id)
            if winner is None:
                break
            self.commit_state = ABSENT
            # lost the race for `version`: check every winner, then rebase
            if retries >= max_retries:
                self.commit_state = ABSENT
                raise CommitConflictError(
                    f"gave up committing {self.operation} after {retries} retries: version {version} and later "
                    "kept being taken by concurrent writers"
                )
            retries += 1
            while winner is not None:
                if winner.commit_info.get("txnId") == self.txn_id:
                    # an earlier attempt of ours landed after all (only possible with a late, delayed put)
                    return self._committed(winner.version, actions, retries, post_commit, checksum=False)
                try:
                    check_conflicts(
                        winner=winner,
                        isolation_level=self.isolation_level,
                        read_set=self.read_set,
                        removed_paths={r["path"] for r in self.removes if r.get("dataChange", True)},
                        app_ids=set(self.app_txns),
                        domains={d for d in self.domains},
                        changes_metadata=self.new_metadata is not None,
                        file_matches=file_matches,
                    )
                    if self.read_version < 0:
                        raise CommitConflictError(f"table was created concurrently (version {version} exists)")
                except CommitConflictError:
                    self.commit_state = ABSENT  # every version we tried holds another writer's commit
                    raise
                self._winners.append(winner)
                ict = winner.commit_info.get("inCommitTimestamp")
                if ict is not None:
                    prev_ict = int(ict)
                rt = winner.domains.get(ROW_TRACKING_DOMAIN)
                if rt is not None:
                    hwm = max(hwm, int(json.loads(rt.get("configuration") or "{}").get("rowIdHighWaterMark", hwm)))
                version += 1
                winner = self.committer.read_commit(version)
            log.debug("rebased %s onto version %d (retry %d)", self.operation, version, retries)
        return self._committed(version, actions, retries, post_commit)

    def _committed(self, version: int, actions: list[dict[str, Any]], retries: int,
                   post_commit: bool, checksum: bool = True) -> CommitResult:
        self.committed_version = version
        self.commit_state = COMMITTED
        assert self.committer is not None
        self.committer.after_commit(version)  # publishing, for a catalog committer; never raises
        if checksum:  # `actions` are the landed bytes (not so for a late-landed earlier attempt)
            self._write_checksum(version, actions)
        self._post_commit(version, post_commit, self._cleanup_logs)
        return CommitResult(version, actions, retries)

    def _write_checksum(self, version: int, actions: list[dict[str, Any]]) -> None:
        """`N.crc` from the read snapshot + the commits rebased over + this commit (PROTOCOL.md "Version Checksum
        File"); never fails."""
        try:
            from ..checksum import checksum_after_commit, write_checksum

            crc = checksum_after_commit(self.storage, self.snapshot, version, actions, self.txn_id,
                                        getattr(self, "_winners", ()))
            if crc is not None:
                write_checksum(self.storage, version, crc)
        except Exception as e:  # the commit has landed; a missing crc is allowed, a failed commit is not
            log.warning("version checksum of version %d not written: %s", version, e)

    def _post_commit(self, version: int, checkpoint: bool = True, cleanup: bool | None = None) -> None:
        """Checkpoint every `delta.checkpointInterval` commits (unless `checkpoint` is False) and clean expired
        logs (see `commit`); never fails the commit."""
        conf = self.metadata.configuration
        interval = int(conf.get("delta.checkpointInterval", str(DEFAULT_CHECKPOINT_INTERVAL)))
        due = checkpoint and interval > 0 and version != 0 and version % interval == 0
        if cleanup is None:
            cleanup = due and _true(conf, "delta.enableExpiredLogCleanup", default=True)
        if cleanup and is_catalog_managed(self.protocol) and not permits(getattr(self.snapshot, "catalog", None),
                                                                        "METADATA CLEANUP"):
            cleanup = False  # PROTOCOL.md: metadata cleanup of a catalog-managed table needs the catalog's consent
        if not due and not cleanup:
            return
        try:
            from ..checkpoints.cleanup import cleanup_expired_logs
            from ..checkpoints.write import write_checkpoint
            assert self.committer is not None
            snap = self.committer.load_snapshot(version)
            if due:
                write_checkpoint(snap)
            if cleanup:
                cleanup_expired_logs(snap)
        except Exception as e:
            log.warning("post-commit checkpoint / log cleanup of version %d failed: %s", version, e)


#: commitInfo fields only the engine generates: setting them is an error (deltalake's rule)
GENERATED_COMMIT_INFO = frozenset({"timestamp", "operation", "engineInfo"})
#: commitInfo fields the engine writes and the user may not replace (after deltalake's type checks): conflict
#: detection reads readVersion / isolationLevel / isBlindAppend, time travel inCommitTimestamp, commit
#: recognition txnId
ENGINE_OWNED_COMMIT_INFO = frozenset({
    "readVersion", "isolationLevel", "isBlindAppend", "operationMetrics", "inCommitTimestamp", "txnId",
})
_ISOLATION_LEVELS = ("Serializable", "WriteSerializable", "SnapshotIsolation")
_STRING_FIELDS = ("userId", "userName", "userMetadata")


def _check_reserved(key: str, value: Any) -> None:
    """deltalake 1.6.6's type rules for the commitInfo keys it reserves (InvalidCommitMetadataError)."""
    prefix = f"CommitProperties.custom_metadata[{key!r}]"
    if key in GENERATED_COMMIT_INFO:
        raise InvalidCommitMetadataError(
            f"CommitProperties.custom_metadata key {key!r} is generated by the engine and cannot be set")
    if key == "operationParameters" and not isinstance(value, dict):
        raise InvalidCommitMetadataError(f"{prefix} must be a JSON object")
    if key == "readVersion" and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise InvalidCommitMetadataError(f"{prefix} must be a non-negative integer")
    if key in _STRING_FIELDS and not isinstance(value, str):
        raise InvalidCommitMetadataError(f"{prefix} must be a string")
    if key == "isolationLevel" and value not in _ISOLATION_LEVELS:
        raise InvalidCommitMetadataError(f"{prefix} must be a valid IsolationLevel string")
    if key == "isBlindAppend" and not isinstance(value, bool):
        raise InvalidCommitMetadataError(f"{prefix} must be a boolean")


def commit_info_extras(custom: dict[Any, Any] | None) -> dict[str, Any]:
    """Validated user commitInfo fields (`CommitProperties.custom_metadata`), with deltalake's rules.

    Keys must be strings and values JSON-serialisable (no NaN / infinity); `timestamp`, `operation` and
    `engineInfo` cannot be set; `operationParameters` must be an object (its keys are added to the
    operation's, values as strings), `readVersion` a non-negative int, `userId` / `userName` / `userMetadata`
    strings, `isolationLevel` a level name, `isBlindAppend` a bool. Violations raise InvalidCommitMetadataError
    (a ValueError). Unlike deltalake, a valid readVersion / isolationLevel / isBlindAppend / operationMetrics /
    inCommitTimestamp / txnId is then dropped with a warning: the engine's values are what conflict detection
    and time travel rely on (docs/decisions.md).
    """
    out: dict[str, Any] = {}
    if custom is not None and not isinstance(custom, Mapping):  # a list of pairs, a string: deltalake's error
        raise InvalidCommitMetadataError("CommitProperties.custom_metadata must be a mapping")
    for key, value in (custom or {}).items():
        if not isinstance(key, str):
            raise InvalidCommitMetadataError("CommitProperties.custom_metadata keys must be strings")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidCommitMetadataError(
                f"CommitProperties.custom_metadata value for {key!r} must be JSON-serializable: "
                f"{type(e).__name__}: {e}") from e
        _check_reserved(key, value)
        if key in ENGINE_OWNED_COMMIT_INFO:
            log.warning("commit metadata %r ignored: the field is written by the engine", key)
            continue
        if key == "operationParameters":
            value = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}
        out[key] = value
    return out


#: Spark's default; one checkpoint per 100 commits keeps replay short and checkpoint cost amortized.
DEFAULT_CHECKPOINT_INTERVAL = 100


def _num_records(add: AddAction) -> int | None:
    stats = add.get("stats")
    if not stats:
        return None
    try:
        n = json.loads(stats).get("numRecords")
        return int(n) if n is not None else None
    except (ValueError, TypeError):
        return None


def _metadata_json(md: Metadata) -> dict[str, Any]:
    out = md.to_json()
    if out.get("createdTime") is None:
        out["createdTime"] = int(time.time() * 1000)
    return {k: v for k, v in out.items() if v is not None or k in ("name", "description")}
