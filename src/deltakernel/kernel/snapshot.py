"""A snapshot: the table state at one version (protocol, metadata, live files, txns, domains).

Built from a LogSegment by vectorized replay; checks the protocol before anything reads data.

A catalog-managed table is read with its catalog (`catalog=`, which hands the log tail) or an explicit
`log_tail=`; without either the load is refused (PROTOCOL.md "Reader Requirements for Catalog-managed tables":
readers must contact the catalog). `LogTail.published_only()` is the explicit opt-out: published commits only.
A storage opened through a catalog's table name (`uc://catalog.schema.table`) carries its catalog as
`storage.catalog`; loads that name neither take it from there, so every reader of that storage is catalog-aware.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from functools import cached_property
from typing import Any

import pyarrow as pa

from ..errors import CatalogManagedTableError, ObjectNotFoundError
from ..storage.base import ObjectMeta, Storage
from .log.actions import DomainMetadata, Metadata, Protocol, Txn
from .log.replay import ReplayResult, replay, replay_onto
from .log.segment import LogSegment, LogTail, build_log_segment, commit_key, list_log
from .protocol.features import catalog_managed_feature, check_read_supported, is_catalog_managed
from .schema.types import StructField, StructType

log = logging.getLogger("deltakernel")

_HEAD_COMMITS = 4  # advancing by at most this many known versions: HEAD each commit file rather than list


class Snapshot:
    """Immutable view of a table at `version`."""

    def __init__(self, storage: Storage, segment: LogSegment, result: ReplayResult,
                 log_tail: LogTail | None = None, catalog: Any | None = None) -> None:
        self.storage = storage
        self.segment = segment
        self._result = result
        check_read_supported(result.protocol)
        #: the catalog's log tail this snapshot was built with (None: a filesystem-managed table)
        self.log_tail = log_tail
        #: the table's catalog client (kernel/catalog_client.py), when loaded through it: commits go through it
        self.catalog = catalog

    @classmethod
    def load(cls, storage: Storage, version: int | None = None, *, log_tail: LogTail | None = None,
             catalog: Any | None = None) -> Snapshot:
        """The table at `version` (latest when None). `catalog`: the table's catalog client (its log tail is
        fetched); `log_tail`: a tail given directly. A catalog-managed table needs one of them."""
        start = time.perf_counter()
        if catalog is None and log_tail is None:  # a storage opened by a catalog's table name (uc://...)
            catalog = getattr(storage, "catalog", None)
        if catalog is not None and log_tail is None:
            log_tail = catalog.get_log_tail()
        segment = build_log_segment(storage, version, log_tail)
        snap = cls(storage, segment, replay(segment), log_tail, catalog)
        if version is None and log_tail is not None and log_tail.max_catalog_version is not None \
                and not is_catalog_managed(snap.protocol):
            # a filesystem-managed table (a catalog's external table): its own log decides the latest version,
            # and its commits go to the filesystem (committer_for), so the catalog's cap must not hide them
            log_tail = None
            segment = build_log_segment(storage, None)
            snap = cls(storage, segment, replay(segment))
        feature = catalog_managed_feature(snap.protocol) if log_tail is None else None
        if feature is not None:
            raise CatalogManagedTableError(
                feature,
                f"{storage.root_uri} is a catalog-managed table ({feature!r}): read it through its catalog, which "
                "hands readers the ratified commits not yet published (Snapshot.load(catalog=...) or log_tail=); "
                "LogTail.published_only() reads the published commits only",
            )
        if segment.checksum is not None:  # N.crc listed: compare (PROTOCOL.md "State Validation")
            from .checksum import verify_snapshot

            verify_snapshot(snap)
        log.debug(
            "loaded %s at version %d: checkpoint=%s, %d commits replayed, %d live files in %.3fs",
            storage.root_uri, snap.version, segment.checkpoint.version if segment.checkpoint else None,
            len(segment.commits), snap.num_files, time.perf_counter() - start,
        )
        return snap

    def advance(self, version: int | None = None) -> Snapshot:
        """This table at `version` (the latest when None), reading only the commits after this snapshot - what a
        writer holding a snapshot does after its own commit. Falls back to `load` when the new commits change
        the partition columns or the log cannot be read forward (a gap); `self` when nothing is newer."""
        if version == self.version:
            return self
        if self.log_tail is not None:  # catalog-managed: the catalog decides what is newer (a fresh tail) ...
            if self.catalog is not None and version is not None and self.version < version <= \
                    self.version + _HEAD_COMMITS:
                ahead = self._advanced_published(version)
                if ahead is not None:
                    return ahead
            return Snapshot.load(self.storage, version, log_tail=None if self.catalog is not None else self.log_tail,
                                 catalog=self.catalog)
        if version is not None and version < self.version:
            return Snapshot.load(self.storage, version)
        if version is not None and version - self.version <= _HEAD_COMMITS:
            # a writer's own commit (or a few): one HEAD each instead of a listing of the log directory
            metas = self._head_commits(version)
            if metas is None:
                return Snapshot.load(self.storage, version)
            return self._replayed(version, metas)
        listing = list_log(self.storage, self.version + 1, version)
        versions = sorted(listing.commits)
        target = version if version is not None else (versions[-1] if versions else self.version)
        if target == self.version:
            return self
        wanted = list(range(self.version + 1, target + 1))
        if versions[:len(wanted)] != wanted:
            return Snapshot.load(self.storage, version)  # a gap or a truncated log: the normal load decides
        return self._replayed(target, [listing.commits[v] for v in wanted])

    def _advanced_published(self, version: int) -> Snapshot | None:
        """... except for a writer's own just-published commit(s) (`version` named): only ratified commits are
        ever published, so `_delta_log/<v>.json` present for every version up to `version` means the catalog
        ratified them - replayed onto this snapshot (one HEAD each) instead of a loadTable and a full replay.
        None when one is not published (the normal load through the catalog decides)."""
        assert self.log_tail is not None
        metas = self._head_commits(version)
        if metas is None:
            return None
        result = replay_onto(self._result, self.storage, metas)
        if result is None:
            return None
        segment = LogSegment(self.storage, version, self.segment.checkpoint, [*self.segment.commits, *metas])
        tail = LogTail(self.log_tail.commits, max(version, self.log_tail.max_catalog_version or version))
        return Snapshot(self.storage, segment, result, tail, self.catalog)

    def _head_commits(self, version: int) -> list[ObjectMeta] | None:
        """Metadata of the commit files `self.version + 1 .. version`; None when one is missing."""
        metas = []
        for v in range(self.version + 1, version + 1):
            try:
                metas.append(self.storage.head(commit_key(v)))
            except ObjectNotFoundError:
                return None
        return metas

    def _replayed(self, target: int, metas: list[ObjectMeta]) -> Snapshot:
        result = replay_onto(self._result, self.storage, metas)
        if result is None:
            return Snapshot.load(self.storage, target)
        segment = LogSegment(self.storage, target, self.segment.checkpoint, [*self.segment.commits, *metas])
        return Snapshot(self.storage, segment, result)

    @classmethod
    def load_at(cls, storage: Storage, version: int | str | dt.datetime | None,
                reference: Snapshot | None = None, clamp_to_earliest: bool = False, *,
                log_tail: LogTail | None = None, catalog: Any | None = None) -> Snapshot:
        """`version`: an int, None (the latest), or a datetime / ISO-8601 string (the latest commit at or
        before it; commit times as of `reference`, the latest snapshot by default). A time before the earliest
        commit still in the log: VersionNotFoundError, or with `clamp_to_earliest` that commit (deltalake's).
        `log_tail` / `catalog`: as for `load` (a catalog-managed table's commits, staged ones included)."""
        if catalog is None and log_tail is None:
            catalog = getattr(storage, "catalog", None)
        if catalog is not None and log_tail is None:
            log_tail = catalog.get_log_tail()
        if version is None or (isinstance(version, int) and not isinstance(version, bool)):
            return cls.load(storage, version, log_tail=log_tail, catalog=catalog)
        from .log.time_travel import commit_timestamps, parse_timestamp, version_at_timestamp

        ref = reference if reference is not None else cls.load(storage, None, log_tail=log_tail, catalog=catalog)
        stamps = commit_timestamps(storage, ref.ict_enablement_version, log_tail=ref.log_tail)
        return cls.load(storage, version_at_timestamp(stamps, parse_timestamp(version), clamp_to_earliest),
                        log_tail=log_tail, catalog=catalog)

    # ------------------------------------------------------------------ state
    @property
    def version(self) -> int:
        return self.segment.version

    @property
    def replay_result(self) -> ReplayResult:
        """The replayed log state behind this snapshot (a new snapshot over a longer segment can share it)."""
        return self._result

    @property
    def protocol(self) -> Protocol:
        return self._result.protocol

    @property
    def metadata(self) -> Metadata:
        return self._result.metadata

    @cached_property
    def schema(self) -> StructType:
        return self.metadata.schema

    @property
    def configuration(self) -> dict[str, str]:
        return self.metadata.configuration

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @cached_property
    def partition_fields(self) -> list[StructField]:
        return [self.schema.field(c) for c in self.partition_columns]

    @property
    def column_mapping_mode(self) -> str:
        mode = self.configuration.get("delta.columnMapping.mode", "none")
        return mode if mode in ("name", "id") else "none"

    @property
    def files(self) -> pa.Table:
        """The file table of live add actions (see docs/architecture.md)."""
        return self._result.files

    @property
    def tombstones(self) -> pa.Table:
        return self._result.tombstones

    @property
    def txns(self) -> dict[str, Txn]:
        return self._result.txns

    @property
    def domain_metadata(self) -> dict[str, DomainMetadata]:
        return self._result.domain_metadata

    @property
    def commit_infos(self) -> dict[int, dict[str, Any]]:
        """commitInfo of the commits replayed after the checkpoint (not the whole history)."""
        return self._result.commit_infos

    @property
    def num_files(self) -> int:
        return int(self.files.num_rows)

    def in_commit_timestamps_enabled(self) -> bool:
        return self.configuration.get("delta.enableInCommitTimestamps", "false").lower() == "true"

    @property
    def ict_enablement_version(self) -> int | None:
        """First version whose commit time is its in-commit timestamp (None: file times throughout)."""
        if not self.in_commit_timestamps_enabled():
            return None
        raw = self.configuration.get("delta.inCommitTimestampEnablementVersion")
        return int(raw) if raw is not None and raw.strip().isdigit() else 0


class SnapshotView:
    """The few Snapshot attributes a `Scan` reads, for a schema of the caller's choosing (the change data
    feed's cdc schema, a commit's new schema): lets `Scan.read_file` read files outside a snapshot."""

    def __init__(self, storage: Storage, version: int, schema: StructType, partition_columns: list[str],
                 mode: str) -> None:
        self.storage = storage
        self.version = version
        self.schema = schema
        self.partition_columns = partition_columns
        self.column_mapping_mode = mode
        self.files = pa.table({})
