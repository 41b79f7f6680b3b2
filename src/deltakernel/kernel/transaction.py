"""The kernel's Transaction: optimistic, conflict-checked, atomic commits.

A transaction records the version it read and what it read, collects actions, and commits by
put-if-absent of `_delta_log/N.json` (never a rename). If another writer won version N, the winning
commits are checked with Delta's conflict rules (`conflicts.py`); when nothing real conflicts the
transaction is rebased (new version, fresh in-commit timestamp, row ids after the winner's) and retried.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    CommitConflictError,
    CommitStateUnknownError,
    ConstraintViolationError,
    DeltaError,
    FileAlreadyExistsError,
    ObjectNotFoundError,
    StorageError,
)
from ..storage.base import Storage
from .actions import Metadata, Protocol, Txn
from .conflicts import (
    ISOLATION_LEVELS,
    SERIALIZABLE,
    WRITE_SERIALIZABLE,
    ReadSet,
    WinningCommit,
    check_conflicts,
    partition_matches,
)
from .features import check_write_supported
from .log_segment import commit_key

log = logging.getLogger("deltakernel")

ENGINE_INFO = "deltakernel/0.1.0"
ROW_TRACKING_DOMAIN = "delta.rowTracking"
DEFAULT_MAX_RETRIES = 15


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
    ) -> None:
        self.storage = storage
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
        self.adds: list[dict[str, Any]] = []
        self.removes: list[dict[str, Any]] = []
        self.cdcs: list[dict[str, Any]] = []
        self.new_metadata: Metadata | None = None
        self.new_protocol: Protocol | None = None
        self.app_txns: dict[str, Txn] = {}
        self.domains: dict[str, dict[str, Any]] = {}
        self.operation_metrics: dict[str, Any] = {}
        self.extra_commit_info: dict[str, Any] = {}
        self.committed_version: int | None = None

    # ------------------------------------------------------------------ what was read
    def read_whole_table(self) -> None:
        self.read_set.whole_table = True

    def read_predicate(self, predicate: Any) -> None:
        """Record a partition predicate the transaction's result depends on."""
        self.read_set.predicates.append(predicate)

    def read_files(self, paths: list[str]) -> None:
        self.read_set.files.update(paths)

    # ------------------------------------------------------------------ what is written
    def add_files(self, adds: list[dict[str, Any]]) -> None:
        self.adds.extend(adds)

    def remove_files(self, removes: list[dict[str, Any]]) -> None:
        self.removes.extend(removes)

    def add_cdc_files(self, cdcs: list[dict[str, Any]]) -> None:
        self.cdcs.extend(cdcs)

    def update_metadata(self, metadata: Metadata) -> None:
        self.new_metadata = metadata

    def update_protocol(self, protocol: Protocol) -> None:
        self.new_protocol = protocol

    def set_app_transaction(self, app_id: str, version: int, last_updated: int | None = None) -> None:
        self.app_txns[app_id] = Txn(app_id, int(version), last_updated)

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

    def _previous_ict(self) -> int | None:
        if self.snapshot is None:
            return None
        info = self.snapshot.commit_infos.get(self.read_version)
        if info is None:
            try:
                raw = self.storage.read(commit_key(self.read_version))
                info = WinningCommit.parse(self.read_version, raw).commit_info
            except (ObjectNotFoundError, DeltaError):
                return None
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
        info: dict[str, Any] = {"timestamp": now}
        ict_on = _true(conf, "delta.enableInCommitTimestamps")
        if ict_on:
            ict = now if prev_ict is None else max(now, prev_ict + 1)
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
        info["txnId"] = str(uuid.uuid4())
        info.update(self.extra_commit_info)

        actions: list[dict[str, Any]] = [{"commitInfo": info}]
        if self.new_protocol is not None:
            actions.append({"protocol": self.new_protocol.to_json()})
        if self.new_metadata is not None:
            actions.append({"metaData": _metadata_json(self.new_metadata)})
        for t in self.app_txns.values():
            actions.append({"txn": {"appId": t.app_id, "version": t.version,
                                    "lastUpdated": t.last_updated if t.last_updated is not None else now}})
        adds = [dict(a) for a in self.adds]
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

    def commit(self, max_retries: int = DEFAULT_MAX_RETRIES, post_commit: bool = True) -> CommitResult:
        """Commit atomically; returns the committed version. Raises CommitConflictError subclasses."""
        if self.committed_version is not None:
            raise DeltaError("transaction already committed")
        self._validate()
        version = self.read_version + 1
        prev_ict = self._previous_ict()
        hwm = self._row_id_high_water_mark()
        file_matches = partition_matches(self.read_set.predicates, self.snapshot) if self.snapshot else None
        retries = 0
        while True:
            actions = self._build(version, prev_ict, hwm)
            payload = ("\n".join(json.dumps(a, separators=(",", ":")) for a in actions) + "\n").encode()
            key = commit_key(version)
            try:
                self.storage.put_if_absent(key, payload)
                break
            except FileAlreadyExistsError:
                pass
            except StorageError as e:
                if not self._landed(key, payload, e):
                    raise
                break
            # lost the race for `version`: check every winner, then rebase
            if retries >= max_retries:
                raise CommitConflictError(
                    f"gave up committing {self.operation} after {retries} retries: version {version} and later "
                    "kept being taken by concurrent writers"
                )
            retries += 1
            while True:
                try:
                    raw = self.storage.read(commit_key(version))
                except ObjectNotFoundError:
                    break
                winner = WinningCommit.parse(version, raw)
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
                ict = winner.commit_info.get("inCommitTimestamp")
                if ict is not None:
                    prev_ict = int(ict)
                rt = winner.domains.get(ROW_TRACKING_DOMAIN)
                if rt is not None:
                    hwm = max(hwm, int(json.loads(rt.get("configuration") or "{}").get("rowIdHighWaterMark", hwm)))
                version += 1
            log.debug("rebased %s onto version %d (retry %d)", self.operation, version, retries)
        self.committed_version = version
        result = CommitResult(version, actions, retries)
        if post_commit:
            self._post_commit(version)
        return result

    def _landed(self, key: str, payload: bytes, error: Exception) -> bool:
        """After an ambiguous put failure: did our commit land? Raise CommitStateUnknownError if unknowable."""
        try:
            existing = self.storage.read(key)
        except ObjectNotFoundError:
            return False  # nothing written: the original error stands, nothing was committed
        except StorageError as e:
            raise CommitStateUnknownError(
                f"the commit {self.storage.full_uri(key)} failed ({error}) and its state could not be checked: {e}"
            ) from error
        if existing == payload:
            return True
        raise CommitStateUnknownError(
            f"the commit {self.storage.full_uri(key)} failed ({error}); another writer's commit now holds that "
            "version, and whether ours was overwritten cannot be told"
        ) from error

    def _post_commit(self, version: int) -> None:
        """Checkpoint every `delta.checkpointInterval` commits and clean expired logs; never fails the commit."""
        conf = self.metadata.configuration
        interval = int(conf.get("delta.checkpointInterval", str(DEFAULT_CHECKPOINT_INTERVAL)))
        if interval <= 0 or version == 0 or version % interval != 0:
            return
        try:
            from .checkpoint_write import write_checkpoint
            from .log_cleanup import cleanup_expired_logs
            from .snapshot import Snapshot

            snap = Snapshot.load(self.storage, version)
            write_checkpoint(snap)
            if _true(conf, "delta.enableExpiredLogCleanup", default=True):
                cleanup_expired_logs(snap)
        except Exception as e:
            log.warning("post-commit checkpoint of version %d failed: %s", version, e)


#: Spark's default; one checkpoint per 100 commits keeps replay short and checkpoint cost amortized.
DEFAULT_CHECKPOINT_INTERVAL = 100


def _num_records(add: dict[str, Any]) -> int | None:
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
