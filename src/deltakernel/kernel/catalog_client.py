"""The kernel's side of a catalog that manages tables (PROTOCOL.md "Catalog-managed tables").

Why a protocol of its own: the kernel must not know HTTP, Unity Catalog or any catalog's API. A catalog client
(the Unity Catalog REST adapter, an in-memory test catalog) implements these few calls, and the kernel's
`CatalogCommitter` (kernel/transaction/committer.py) and `Snapshot.load(catalog=...)` use only them:

- `get_log_tail()`: the ratified commits the catalog still serves (ascending) and its latest ratified version;
- `ratify(request)`: make a staged commit version N, at most once; the outcome is the return (ratified) or a
  typed error: `CatalogCommitConflictError` (another commit holds N), `CatalogTooManyUnpublishedError` (publish
  first), `CatalogCommitUnknownError` (no answer: the committer reloads the tail to find out);
- `published(version)`: versions up to `version` are now `_delta_log/<v>.json` (the catalog may forget them);
- `table_created(request)`: version 0 of a new table was written as `_delta_log/0.json` (register it);
- optionally `permits(operation)`: whether the catalog allows a maintenance operation (VACUUM, log cleanup)
  that the spec forbids by default on catalog-managed tables.

Errors a client raises for anything else (auth, transport) should be `DeltaError`s; a ratify whose outcome the
client cannot know must be `CatalogCommitUnknownError`, never a plain error, or the committer cannot settle it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import CatalogManagedTableError
from ..storage.base import ObjectMeta
from .log.segment import LogTail


@dataclass(frozen=True)
class RatifyRequest:
    """One commit for the catalog to ratify as `version` (fields a catalog API such as Unity Catalog's
    `add-commit` needs, so an adapter never re-reads the staged file)."""

    version: int
    #: the staged commit file: key relative to the table root, size, modification time (ms)
    staged: ObjectMeta
    #: the table's root URI (the catalog may want absolute paths)
    table_uri: str
    txn_id: str
    in_commit_timestamp: int
    #: the highest version known published to `_delta_log/` (lets the catalog drop older commits), or None
    latest_published_version: int | None = None
    #: the commit's new `metaData` / `protocol` actions (JSON objects), when it changes them
    metadata: dict[str, Any] | None = None
    protocol: dict[str, Any] | None = None
    commit_info: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class CatalogCommitClient(Protocol):
    """What the kernel needs from a table's catalog (see the module docstring for the outcome rules)."""

    def get_log_tail(self) -> LogTail: ...

    def ratify(self, request: RatifyRequest) -> None: ...

    def published(self, version: int) -> None: ...

    def table_created(self, request: RatifyRequest) -> None: ...


def permits(catalog: Any, operation: str) -> bool:
    """Whether `catalog` allows `operation` on its table (a client without `permits` allows nothing)."""
    fn = getattr(catalog, "permits", None)
    return bool(fn(operation)) if callable(fn) else False


def require_maintenance_permitted(snapshot: Any, operation: str) -> None:
    """PROTOCOL.md "Maintenance Operations on Catalog-managed Tables": only checkpoints, log compaction and
    version checksums are allowed by default; anything else (VACUUM, metadata cleanup, ...) needs the managing
    catalog's permission. No-op for other tables."""
    from .protocol.features import catalog_managed_feature

    feature = catalog_managed_feature(snapshot.protocol)
    if feature is None or permits(getattr(snapshot, "catalog", None), operation):
        return
    raise CatalogManagedTableError(
        feature,
        f"{operation} refused on {snapshot.storage.root_uri}: the table is catalog-managed ({feature!r}) and "
        "its catalog has not permitted this maintenance operation (PROTOCOL.md \"Maintenance Operations on "
        "Catalog-managed Tables\")",
    )
