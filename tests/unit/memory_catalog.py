"""An in-memory catalog implementing the kernel's `CatalogCommitClient`, for the kernel's committer tests.

It models what the spec asks of a catalog (PROTOCOL.md "Commit Protocol"): version N is ratified only right
after N-1 and at most once (a stale version is a conflict, Unity Catalog's 409), a limit of unpublished
commits (429), ratified commits served in the log tail until `published` says they are in `_delta_log/`.
Faults are queued per ratify call. The real Unity Catalog server (HTTP, SQLite) is the test server of the
"ucserver" work; the kernel's unit tests use this stand-in so they need no HTTP at all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from deltakernel.errors import (
    CatalogCommitConflictError,
    CatalogCommitUnknownError,
    CatalogTooManyUnpublishedError,
    DeltaError,
)
from deltakernel.kernel.catalog_client import RatifyRequest
from deltakernel.kernel.log.segment import LogTail
from deltakernel.storage.base import ObjectMeta

#: fault names for `MemoryCatalog.faults` (consumed one per ratify call)
CRASH_BEFORE_RATIFY = "crash_before_ratify"  # the writer dies after staging, before the catalog hears of it
CRASH_AFTER_RATIFY = "crash_after_ratify"  # ratified, then the writer dies before publishing
LOST_RESPONSE = "lost_response"  # ratified, the answer never arrives
UNAVAILABLE = "unavailable"  # a 5xx / timeout before ratifying


class SimulatedCrash(Exception):
    """The writer process 'died' here (not a DeltaError: nothing in the kernel may catch it)."""


@dataclass
class MemoryCatalog:
    max_unpublished: int | None = None
    faults: list[str | None] = field(default_factory=list)
    permitted: set[str] = field(default_factory=set)
    latest: int = -1
    ratified: dict[int, ObjectMeta] = field(default_factory=dict)  # ratified, not known published
    published_up_to: int = -1
    ratify_calls: int = 0
    conflicts: int = 0
    too_many: int = 0
    txn_ids: dict[int, str] = field(default_factory=dict)  # version -> txnId of the commit ratified there
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get_log_tail(self) -> LogTail:
        with self.lock:
            commits = tuple(self.ratified[v] for v in sorted(self.ratified))
            return LogTail(commits, self.latest if self.latest >= 0 else None)

    def ratify(self, request: RatifyRequest) -> None:
        with self.lock:
            self.ratify_calls += 1
            fault = self.faults.pop(0) if self.faults else None
        if fault == CRASH_BEFORE_RATIFY:
            raise SimulatedCrash("crashed between staging and ratify")
        if fault == UNAVAILABLE:
            raise CatalogCommitUnknownError("503 from the catalog (nothing ratified)")
        with self.lock:
            if request.version <= self.latest:
                self.conflicts += 1
                raise CatalogCommitConflictError(f"version {request.version} is already ratified")
            if request.version != self.latest + 1:
                raise DeltaError(f"version {request.version} skips {self.latest + 1}")
            if request.latest_published_version is not None:
                self._forget(request.latest_published_version)
            if self.max_unpublished is not None and len(self.ratified) >= self.max_unpublished:
                self.too_many += 1
                raise CatalogTooManyUnpublishedError(f"{len(self.ratified)} commits are not published")
            self.ratified[request.version] = request.staged
            self.txn_ids[request.version] = request.txn_id
            self.latest = request.version
        if fault == LOST_RESPONSE:
            raise CatalogCommitUnknownError("connection reset after the catalog ratified")
        if fault == CRASH_AFTER_RATIFY:
            raise SimulatedCrash("crashed after ratify, before publishing")

    def published(self, version: int) -> None:
        with self.lock:
            self._forget(version)

    def table_created(self, request: RatifyRequest) -> None:
        with self.lock:
            if self.latest >= 0:
                raise CatalogCommitConflictError("the table exists")
            self.latest = 0
            self.published_up_to = 0
            self.txn_ids[0] = request.txn_id

    def permits(self, operation: str) -> bool:
        return operation in self.permitted

    def _forget(self, version: int) -> None:
        for v in [v for v in self.ratified if v <= version]:
            del self.ratified[v]
        self.published_up_to = max(self.published_up_to, version)
