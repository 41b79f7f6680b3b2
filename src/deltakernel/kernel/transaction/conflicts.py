"""Conflict detection between a transaction and the commits that won the race
(Delta's optimistic concurrency rules, as delta-spark's ConflictChecker applies them).

Rules, for each winning commit after the transaction's read version:
- a protocol change -> ProtocolChangedError; a metadata change -> MetadataChangedError;
- a txn (appId) this transaction also sets -> ConcurrentTransactionError;
- files added with dataChange that match what this transaction read -> ConcurrentAppendError
  (under WriteSerializable, files from *blind appends* do not count unless this transaction changes
  metadata; under Serializable they do);
- a file this transaction read was removed -> ConcurrentDeleteReadError;
- a file this transaction removes was removed too -> ConcurrentDeleteDeleteError;
- the same metadata domain changed -> ConcurrentTransactionError (unless the domain is system-merged).
Anything else is compatible: the transaction is rebased onto the winner and retried.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    CorruptLogError,
    MetadataChangedError,
    ProtocolChangedError,
)
from ..log.action_types import AddAction, RemoveAction

WRITE_SERIALIZABLE = "WriteSerializable"
SERIALIZABLE = "Serializable"
ISOLATION_LEVELS = (WRITE_SERIALIZABLE, SERIALIZABLE)
#: per added file of a winning commit: does it match what the transaction read
FileMatches = Callable[[list[AddAction]], list[bool]]

#: domains whose concurrent updates are merged by the writer rather than conflicting
SYSTEM_MERGED_DOMAINS = frozenset({"delta.rowTracking"})


@dataclass
class WinningCommit:
    """What a concurrent commit did, parsed from its JSON."""

    version: int
    protocol_changed: bool = False
    metadata_changed: bool = False
    is_blind_append: bool = False
    app_ids: set[str] = field(default_factory=set)
    domains: dict[str, dict[str, Any]] = field(default_factory=dict)
    added: list[AddAction] = field(default_factory=list)  # add actions with dataChange
    removed_paths: set[str] = field(default_factory=set)  # every remove action's path
    commit_info: dict[str, Any] = field(default_factory=dict)
    #: every add / remove action (also dataChange=false), for the loser's version checksum
    all_adds: list[AddAction] = field(default_factory=list)
    all_removes: list[RemoveAction] = field(default_factory=list)

    @classmethod
    def parse(cls, version: int, raw: bytes) -> WinningCommit:
        out = cls(version)
        for line in raw.decode("utf-8").splitlines():
            if not line.strip():
                continue
            try:
                action = json.loads(line)
            except ValueError as e:
                raise CorruptLogError(f"winning commit {version} is not valid JSON: {e}") from e
            if "protocol" in action:
                out.protocol_changed = True
            elif "metaData" in action:
                out.metadata_changed = True
            elif "txn" in action:
                out.app_ids.add(action["txn"]["appId"])
            elif "domainMetadata" in action:
                out.domains[action["domainMetadata"]["domain"]] = action["domainMetadata"]
            elif "add" in action:
                out.all_adds.append(action["add"])
                if action["add"].get("dataChange", True):
                    out.added.append(action["add"])
            elif "remove" in action:
                # every remove, also dataChange=false (OPTIMIZE): the file is gone either way, and a loser
                # that read or removes it would resurrect rows (delta-spark's removedFiles has them all)
                out.removed_paths.add(action["remove"]["path"])
                out.all_removes.append(action["remove"])
            elif "commitInfo" in action:
                out.commit_info = action["commitInfo"] or {}
        out.is_blind_append = bool(out.commit_info.get("isBlindAppend", False))
        return out


@dataclass
class ReadSet:
    """What a transaction read: the whole table, some partitions (a predicate), or specific files."""

    whole_table: bool = False
    predicates: list[Any] = field(default_factory=list)  # kernel expressions over partition columns
    files: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not self.whole_table and not self.predicates and not self.files


def check_conflicts(
    *,
    winner: WinningCommit,
    isolation_level: str,
    read_set: ReadSet,
    removed_paths: set[str],
    app_ids: set[str],
    domains: set[str],
    changes_metadata: bool,
    file_matches: FileMatches | None = None,
) -> None:
    """Raise the CommitConflictError subclass Delta raises, or return if the transaction may rebase.

    `file_matches(adds) -> list[bool]` evaluates the read predicates against the winner's added files
    (their partition values / stats); without it every added file counts as matching.
    """
    v = winner.version
    if winner.protocol_changed:
        raise ProtocolChangedError(f"the protocol was changed by a concurrent commit (version {v})")
    if winner.metadata_changed:
        raise MetadataChangedError(f"the table metadata was changed by a concurrent commit (version {v})")
    common = app_ids & winner.app_ids
    if common:
        raise ConcurrentTransactionError(
            f"application transaction(s) {sorted(common)} were committed concurrently (version {v})"
        )
    clash = {d for d in domains & set(winner.domains) if d not in SYSTEM_MERGED_DOMAINS}
    if clash:
        raise ConcurrentTransactionError(f"metadata domain(s) {sorted(clash)} changed concurrently (version {v})")

    # files added that this transaction should have read
    if not read_set.empty and winner.added:
        counts = not winner.is_blind_append or isolation_level == SERIALIZABLE or changes_metadata
        if counts:
            if read_set.whole_table:
                matches = [True] * len(winner.added)
            elif read_set.predicates and file_matches is not None:
                matches = list(file_matches(winner.added))
            elif read_set.predicates:
                matches = [True] * len(winner.added)
            else:
                matches = [False] * len(winner.added)
            hit = [a["path"] for a, m in zip(winner.added, matches) if m]
            if hit:
                raise ConcurrentAppendError(
                    f"files were added to data this transaction read by a concurrent commit (version {v}), "
                    f"e.g. {hit[0]!r}"
                )
    if winner.removed_paths:
        overlap = read_set.files & winner.removed_paths
        if read_set.whole_table or overlap:
            example = sorted(overlap or winner.removed_paths)[0]
            raise ConcurrentDeleteReadError(
                f"a file this transaction read was deleted by a concurrent commit (version {v}): {example!r}"
            )
    both = removed_paths & winner.removed_paths
    if both:
        raise ConcurrentDeleteDeleteError(
            f"a file this transaction deletes was also deleted by a concurrent commit (version {v}): "
            f"{sorted(both)[0]!r}"
        )


def partition_matches(predicates: list[Any], snapshot: Any) -> FileMatches:
    """A `file_matches` function evaluating read predicates on added files' partition values and stats."""

    def run(adds: list[AddAction]) -> list[bool]:
        from ..scan.skipping import file_skipping_mask
        from ..schema.column_mapping import physical_name

        mode = snapshot.column_mapping_mode
        phys = [physical_name(f, mode) for f in snapshot.partition_fields]
        if phys:
            pv = pa.StructArray.from_arrays(
                [pa.array([(a.get("partitionValues") or {}).get(p) for a in adds], pa.string()) for p in phys],
                names=phys,
            )
        else:
            pv = pa.array([{}] * len(adds), pa.struct([]))
        files = pa.table(
            {
                "path": pa.array([a["path"] for a in adds], pa.string()),
                "partition_values": pv,
                "stats": pa.array([a.get("stats") for a in adds], pa.string()),
            }
        )
        keep = pa.array([False] * len(adds))
        for pred in predicates:
            keep = pc.or_(keep, file_skipping_mask(snapshot, files, pred))
        return [bool(x) for x in keep.to_pylist()]

    return run
