"""Committers: what makes version N of a table durable, apart from the transaction that builds its actions.

Why a seam (delta-kernel-rs's `Committer`, seed 003): a filesystem-managed table commits by put-if-absent of
`_delta_log/N.json`; a catalog-managed table (PROTOCOL.md "Catalog-managed tables") commits by staging the
actions in `_delta_log/_staged_commits/N.<uuid>.json`, having the catalog ratify that file as version N, and
publishing it to `_delta_log/N.json` afterwards. The transaction's conflict checks, rebases and retries are
the same for both; only "put version N and tell me whose commit holds it" differs, so that is the interface:

- `commit(version, actions, payload, txn_id)`: None when this commit now holds `version`, else the other
  writer's commit holding it (the transaction checks it for conflicts and rebases); CommitStateUnknownError
  when the outcome cannot be settled;
- `read_commit(version)`: the commit holding `version`, None past the latest;
- `after_commit(version)`: post-commit duty (publishing); never fails the commit;
- `load_snapshot(version)`: the table as this committer's readers see it.

`committer_for` picks the committer from the table's protocol: a catalog-managed protocol needs the table's
catalog (a filesystem commit is refused with CatalogManagedTableError); any other table commits to the
filesystem even when it was loaded through a catalog (a catalog's external tables).
"""

from __future__ import annotations

import logging
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import (
    CatalogCommitConflictError,
    CatalogCommitUnknownError,
    CatalogManagedTableError,
    CatalogTooManyUnpublishedError,
    CommitStateUnknownError,
    DeltaError,
    FileAlreadyExistsError,
    ObjectNotFoundError,
    StorageError,
)
from ...storage.base import ObjectMeta, Storage
from ..catalog_client import CatalogCommitClient, RatifyRequest
from ..log.actions import Protocol
from ..log.segment import commit_key, staged_commit_key, version_of
from ..protocol.features import CATALOG_MANAGED_FEATURES, catalog_managed_feature, is_catalog_managed
from .conflicts import WinningCommit

if TYPE_CHECKING:
    from ..snapshot import Snapshot

log = logging.getLogger("deltakernel")

#: times an ambiguous put (error, object absent on read-back) is repeated with the same bytes
PUT_ATTEMPTS = 3
#: ratify attempts refused with "too many unpublished commits" before giving up (publishing in between)
UNPUBLISHED_RETRIES = 5
#: ratify attempts whose outcome was unknown and, reloading the tail, found not ratified
UNKNOWN_RETRIES = 3


class Committer(ABC):
    """Makes a version durable and says whose commit holds it (see the module docstring)."""

    storage: Storage

    @abstractmethod
    def commit(self, version: int, actions: list[dict[str, Any]], payload: bytes,
               txn_id: str) -> WinningCommit | None: ...

    @abstractmethod
    def read_commit(self, version: int) -> WinningCommit | None: ...

    def after_commit(self, version: int) -> None:  # noqa: B027 - optional hook
        """Post-commit duty of the committer (nothing for the filesystem)."""

    @abstractmethod
    def load_snapshot(self, version: int | None = None) -> Snapshot: ...


class FilesystemCommitter(Committer):
    """Put-if-absent of `_delta_log/N.json`; any unclear outcome is settled by reading N back (txnId decides)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def commit(self, version: int, actions: list[dict[str, Any]], payload: bytes,
               txn_id: str) -> WinningCommit | None:
        """Put `version`'s commit; None when ours is in the log, else the other writer's commit holding it.

        Any outcome but a plain success is settled by reading the version back (txnId decides whose it is).
        Raises CommitStateUnknownError when it cannot be settled.
        """
        key = commit_key(version)
        error: Exception | None = None
        for attempt in range(1, PUT_ATTEMPTS + 1):
            try:
                self.storage.put_if_absent(key, payload)
                return None
            except FileAlreadyExistsError as e:
                existing = self._read_back(key, e)
                if existing is None:  # "exists" but not readable yet: ask again
                    error = e
                    continue
                return _whose(version, existing, txn_id)
            except StorageError as e:
                existing = self._read_back(key, e)
                if existing is None:
                    # the server answered with an error and holds nothing: repeat the same put (same txnId)
                    log.warning("commit put of %s failed (%s); attempt %d of %d",
                                self.storage.full_uri(key), e, attempt, PUT_ATTEMPTS)
                    error = e
                    continue
                return _whose(version, existing, txn_id)
        raise CommitStateUnknownError(
            f"the commit {self.storage.full_uri(key)} failed {PUT_ATTEMPTS} times (last error: {error}); the "
            "object is absent now, but a delayed request could still create it. Reload the table to see whether "
            "the write landed; its data files are kept."
        ) from error

    def _read_back(self, key: str, error: Exception) -> bytes | None:
        """The object at `key` after an unclear put, None if absent; CommitStateUnknownError if unreadable."""
        try:
            return self.storage.read(key)
        except ObjectNotFoundError:
            return None
        except StorageError as e:
            raise CommitStateUnknownError(
                f"the commit {self.storage.full_uri(key)} failed ({error}) and its state could not be checked: "
                f"{e}. Reload the table to see whether the write landed; its data files are kept."
            ) from error

    def read_commit(self, version: int) -> WinningCommit | None:
        try:
            raw = self.storage.read(commit_key(version))
        except ObjectNotFoundError:
            return None
        return WinningCommit.parse(version, raw)

    def load_snapshot(self, version: int | None = None) -> Snapshot:
        from ..snapshot import Snapshot

        return Snapshot.load(self.storage, version)


def _whose(version: int, raw: bytes, txn_id: str) -> WinningCommit | None:
    winner = WinningCommit.parse(version, raw)
    return None if winner.commit_info.get("txnId") == txn_id else winner


class CatalogCommitter(Committer):
    """Stage → ratify through the catalog → publish (PROTOCOL.md "Commit Protocol", option 1).

    Version 0 (a new table) is written as the published `_delta_log/0.json` by put-if-absent (the spec's
    option 3: the table is not registered yet, so there is nothing to ratify against) and then handed to the
    catalog with `table_created`. `publish()` copies ratified commits to `_delta_log/<v>.json` in order
    (put-if-absent: idempotent, any writer or a maintenance job may do it) and tells the catalog.
    """

    def __init__(self, storage: Storage, catalog: CatalogCommitClient, *, auto_publish: bool = True,
                 sleep: Callable[[float], None] = time.sleep, backoff_s: float = 0.05,
                 read_snapshot: Any | None = None) -> None:
        self.storage = storage
        self.catalog = catalog
        self.auto_publish = auto_publish
        self._sleep = sleep
        self._backoff_s = backoff_s
        self._fs = FilesystemCommitter(storage)
        self.latest_published: int | None = None
        #: the snapshot the transaction read (its version and log tail): publishing our own commit needs no
        #: fresh tail when nothing was ratified between it and our commit (`_publish_own`)
        self._read = read_snapshot
        #: (version, bytes) of the commit this committer got ratified
        self._ours: tuple[int, bytes] | None = None
        self._rival_seen = False

    # ------------------------------------------------------------------ commit
    def commit(self, version: int, actions: list[dict[str, Any]], payload: bytes,
               txn_id: str) -> WinningCommit | None:
        if version == 0:
            winner = self._fs.commit(0, actions, payload, txn_id)
            if winner is None:
                meta = self._head(commit_key(0), len(payload))
                self.catalog.table_created(self._request(0, meta, actions, txn_id))
                self.latest_published = 0
            return winner
        key = staged_commit_key(version, str(uuid.uuid4()))
        self.storage.put(key, payload)  # a unique name: nothing else writes it; unratified it is ignored
        request = self._request(version, self._head(key, len(payload)), actions, txn_id)
        unpublished_tries = unknown_tries = 0
        while True:
            try:
                self.catalog.ratify(request)
                self._ours = (version, payload)
                return None
            except CatalogCommitConflictError:
                self._rival_seen = True
                winner = self._holder(version, key, txn_id, settle=True)
                if winner is None:
                    return None  # an earlier ratify of ours landed (its response was lost)
                self._discard(key)
                return winner
            except CatalogTooManyUnpublishedError:
                self._rival_seen = True  # our own publish() reloads the tail anyway
                unpublished_tries += 1
                if unpublished_tries > UNPUBLISHED_RETRIES:
                    self._discard(key)
                    raise
                self.publish()
                self._sleep(self._backoff_s * 2 ** (unpublished_tries - 1))
                request = self._request(version, request.staged, actions, txn_id)
            except CatalogCommitUnknownError as e:
                self._rival_seen = True
                holder = self._resolve_unknown(version, key, txn_id, e)
                if holder == "ours":
                    return None
                if isinstance(holder, WinningCommit):
                    self._discard(key)
                    return holder
                unknown_tries += 1  # not ratified: the same staged file may be offered again (never twice)
                if unknown_tries > UNKNOWN_RETRIES:
                    raise CatalogCommitUnknownError(
                        f"the catalog did not answer ratifying version {version} of {self.storage.root_uri} "
                        f"after {unknown_tries} attempts (last: {e}); it has not ratified it so far. Reload "
                        "the table to see whether the write landed; its data files are kept.") from e
                self._sleep(self._backoff_s * 2 ** (unknown_tries - 1))

    def _request(self, version: int, staged: ObjectMeta, actions: list[dict[str, Any]], txn_id: str) -> RatifyRequest:
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        md = next((a["metaData"] for a in actions if "metaData" in a), None)
        proto = next((a["protocol"] for a in actions if "protocol" in a), None)
        ict = info.get("inCommitTimestamp", info.get("timestamp"))
        return RatifyRequest(version=version, staged=staged, table_uri=self.storage.root_uri, txn_id=txn_id,
                             in_commit_timestamp=int(ict) if ict is not None else int(time.time() * 1000),
                             latest_published_version=self.latest_published, metadata=md, protocol=proto,
                             commit_info=dict(info))

    def _head(self, key: str, size: int) -> ObjectMeta:
        try:
            return self.storage.head(key)
        except StorageError:
            return ObjectMeta(key, size, int(time.time() * 1000))

    def _discard(self, key: str) -> None:
        """Delete our staged file of a lost version (never ratified; readers ignore it anyway)."""
        try:
            self.storage.delete(key)
        except Exception as e:  # garbage at worst; metadata cleanup removes old staged files
            log.debug("staged commit %s not deleted: %s", key, e)

    def _holder(self, version: int, key: str, txn_id: str, settle: bool = False) -> WinningCommit | None:
        """The commit the catalog holds at `version` (None: ours); CommitStateUnknownError when a conflict was
        reported but no commit can be found at that version (`settle`)."""
        for _ in range(3 if settle else 1):
            found = self._catalog_commit(version)
            if found is not None:
                meta, raw = found
                if meta.key == key:
                    return None
                return _whose(version, raw, txn_id)
        raise CommitStateUnknownError(
            f"the catalog reported version {version} of {self.storage.root_uri} taken, but its log tail does not "
            "show a commit there; reload the table")

    def _resolve_unknown(self, version: int, key: str, txn_id: str, error: Exception) -> Any:
        """After a ratify with no answer: "ours", another writer's WinningCommit, or "absent" (reload the tail)."""
        try:
            found = self._catalog_commit(version)
        except DeltaError as e:
            raise CatalogCommitUnknownError(
                f"ratifying version {version} of {self.storage.root_uri} got no answer ({error}) and the catalog's "
                f"log tail could not be read ({e}); reload the table to see whether the write landed; its data "
                "files are kept.") from error
        if found is None:
            return "absent"
        meta, raw = found
        if meta.key == key:
            return "ours"
        winner = _whose(version, raw, txn_id)
        return "ours" if winner is None else winner

    def _catalog_commit(self, version: int) -> tuple[ObjectMeta, bytes] | None:
        """(file, bytes) of the ratified commit at `version` per the catalog, None when it has none yet."""
        tail = self.catalog.get_log_tail()
        cap = tail.max_catalog_version
        if cap is None or version > cap:
            return None
        for m in tail.commits:
            if version_of(m.key) == version:
                return m, self.storage.read(m.key)
        key = commit_key(version)  # ratified and no longer served by the catalog: published
        return self.storage.head(key), self.storage.read(key)

    def read_commit(self, version: int) -> WinningCommit | None:
        found = self._catalog_commit(version)
        return None if found is None else WinningCommit.parse(version, found[1])

    # ------------------------------------------------------------------ publish
    def after_commit(self, version: int) -> None:
        if not self.auto_publish:
            return
        try:
            if not self._publish_own(version):
                self.publish(version)
        except Exception as e:  # ratified is committed: readers get it from the catalog until it is published
            log.warning("publishing version %d of %s failed (the commit stands): %s",
                        version, self.storage.root_uri, e)

    def _publish_own(self, version: int) -> bool:
        """Publish up to our own just-ratified `version` without asking the catalog for its tail, when that is
        known: ratified right after the snapshot the transaction read (no conflict, no unknown outcome), so the
        unpublished commits are that snapshot's tail plus ours (the catalog serves every unpublished ratified
        commit). False when not known: `publish` reloads the tail."""
        read = self._read
        tail = getattr(read, "log_tail", None)
        if read is None or self._ours is None or self._rival_seen or tail is None \
                or tail.max_catalog_version is None or self._ours[0] != version or read.version + 1 != version \
                or tail.max_catalog_version >= version:
            return False
        payload = self._ours[1]
        for m in tail.commits:  # ascending: publish in version order
            target = commit_key(version_of(m.key))
            if m.key != target and not self.storage.exists(target):
                self._put_published(target, self.storage.read(m.key))
        self._put_published(commit_key(version), payload)
        self.catalog.published(version)
        self.latest_published = version
        return True

    def _put_published(self, target: str, data: bytes) -> None:
        try:
            self.storage.put_if_absent(target, data)
        except FileAlreadyExistsError:
            pass  # another publisher copied the same ratified commit

    def publish(self, up_to: int | None = None) -> int | None:
        """Copy the catalog's ratified commits (up to `up_to`) to `_delta_log/<v>.json`, in version order and
        put-if-absent (a published version is never rewritten), then tell the catalog. Returns the latest
        published version, None when the catalog serves nothing to publish."""
        tail = self.catalog.get_log_tail()
        latest: int | None = None
        for m in tail.commits:
            v = version_of(m.key)
            if up_to is not None and v > up_to:
                break
            target = commit_key(v)
            if m.key != target and not self.storage.exists(target):
                try:
                    self.storage.put_if_absent(target, self.storage.read(m.key))
                except FileAlreadyExistsError:
                    pass  # another publisher copied the same ratified commit
            latest = v
        if latest is not None:
            self.catalog.published(latest)
            self.latest_published = latest
        return latest

    def load_snapshot(self, version: int | None = None) -> Snapshot:
        from ..snapshot import Snapshot

        return Snapshot.load(self.storage, version, catalog=self.catalog)


def committer_for(storage: Storage, protocol: Protocol, snapshot: Any | None,
                  committer: Committer | None = None) -> Committer:
    """The committer a commit of `protocol` (the table's protocol after the commit) must use.

    A catalog-managed protocol needs a catalog: the given `committer` when it is a CatalogCommitter, or one
    over the catalog the snapshot was loaded with; otherwise CatalogManagedTableError names the feature.
    """
    if is_catalog_managed(protocol):
        if isinstance(committer, CatalogCommitter):
            return committer
        catalog = getattr(snapshot, "catalog", None) if snapshot is not None else None
        if catalog is None:  # a new table through a catalog's table name: the catalog its storage was opened by
            catalog = getattr(storage, "catalog", None)
        if committer is None and catalog is not None:
            return CatalogCommitter(storage, catalog, read_snapshot=snapshot)
        feature = catalog_managed_feature(protocol) or CATALOG_MANAGED_FEATURES[0]
        raise CatalogManagedTableError(
            feature,
            f"refusing a filesystem commit to {storage.root_uri}: the table is catalog-managed ({feature!r}), so "
            "its commits must go through its catalog (load it with Snapshot.load(catalog=...) or pass a "
            "CatalogCommitter)",
        )
    if isinstance(committer, CatalogCommitter):
        raise DeltaError(
            f"a catalog committer commits only to catalog-managed tables; {storage.root_uri} does not have the "
            f"{CATALOG_MANAGED_FEATURES[0]!r} feature")
    return committer if committer is not None else FilesystemCommitter(storage)
