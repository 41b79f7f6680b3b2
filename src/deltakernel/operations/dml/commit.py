"""Running a DML operation and committing it: the one sequence DELETE, UPDATE and MERGE share.

Why once: the commit rules matter more than any one operation — no commit when nothing changed, commit
properties applied, metrics recorded, and the files written deleted only when the commit is known absent
(`Transaction.may_have_committed`), so a failure at any point leaves the table as it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from ...kernel.transaction.transaction import Transaction
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with


@dataclass
class FileChangeMetrics:
    """Metrics of an operation that removes and adds files (DELETE, UPDATE): deltalake's keys and
    delta-spark's `operationMetrics` names; subclasses add their row counter and name it in ROW_COUNTER."""

    num_added_files: int = 0
    num_removed_files: int = 0
    num_copied_rows: int = 0
    num_deletion_vectors_added: int = 0
    num_deletion_vectors_removed: int = 0
    num_deletion_vectors_updated: int = 0
    num_added_change_files: int = 0
    num_removed_bytes: int = 0
    num_added_bytes: int = 0
    execution_time_ms: int = 0
    scan_time_ms: int = 0
    rewrite_time_ms: int = 0

    #: (attribute, delta-spark operationMetrics name) of the operation's own row counter
    ROW_COUNTER: ClassVar[tuple[str, str]] = ("", "")

    def count_removed(self, row: Any) -> None:
        """A whole file removed (a file-table row: `size`, `deletion_vector`)."""
        self.num_removed_files += 1
        self.num_removed_bytes += int(row.get("size") or 0)
        if row.get("deletion_vector"):
            self.num_deletion_vectors_removed += 1

    def as_dict(self) -> dict[str, int]:
        """deltalake's keys (num_added_files, ..., rewrite_time_ms) plus the deletion-vector counts."""
        out = {"num_added_files": self.num_added_files, "num_removed_files": self.num_removed_files}
        out[self.ROW_COUNTER[0]] = int(getattr(self, self.ROW_COUNTER[0]))
        out.update({
            "num_copied_rows": self.num_copied_rows, "execution_time_ms": self.execution_time_ms,
            "scan_time_ms": self.scan_time_ms, "rewrite_time_ms": self.rewrite_time_ms,
            "num_deletion_vectors_added": self.num_deletion_vectors_added,
            "num_deletion_vectors_removed": self.num_deletion_vectors_removed,
            "num_deletion_vectors_updated": self.num_deletion_vectors_updated,
            "num_added_change_files": self.num_added_change_files,
        })
        return out

    def commit_metrics(self) -> dict[str, int]:
        """delta-spark's `operationMetrics` names for the commitInfo."""
        return {
            "numRemovedFiles": self.num_removed_files, "numRemovedBytes": self.num_removed_bytes,
            "numAddedFiles": self.num_added_files, "numAddedBytes": self.num_added_bytes,
            self.ROW_COUNTER[1]: int(getattr(self, self.ROW_COUNTER[0])), "numCopiedRows": self.num_copied_rows,
            "numDeletionVectorsAdded": self.num_deletion_vectors_added,
            "numDeletionVectorsRemoved": self.num_deletion_vectors_removed,
            "numDeletionVectorsUpdated": self.num_deletion_vectors_updated,
            "numAddedChangeFiles": self.num_added_change_files,
            "executionTimeMs": self.execution_time_ms, "scanTimeMs": self.scan_time_ms,
            "rewriteTimeMs": self.rewrite_time_ms,
        }


class DmlRun(Protocol):
    """An operation that adds its actions to a transaction and can delete what it wrote."""

    metrics: Any  # has as_dict(), commit_metrics() and execution_time_ms

    def run(self) -> None: ...

    def abort(self) -> None: ...


def run_and_commit(op: DmlRun, txn: Transaction, start: float, commit_properties: CommitProperties | None,
                   post_commithook_properties: PostCommitHookProperties | None) -> tuple[dict[str, Any], int | None]:
    """Run `op`, commit `txn`; returns (metrics, committed version or None when nothing changed)."""
    commit_properties = commit_properties or CommitProperties()
    try:
        op.run()
        metrics = op.metrics
        if not txn.removes and not txn.adds:
            metrics.execution_time_ms = ms_since(start)
            return dict(metrics.as_dict()), None
        metrics.execution_time_ms = ms_since(start)
        txn.operation_metrics.update(metrics.commit_metrics())
        commit_with(txn, commit_properties, post_commithook_properties)
    except BaseException:
        if not txn.may_have_committed:
            op.abort()
        raise
    return dict(metrics.as_dict()), txn.committed_version


def ms_since(start: float) -> int:
    """Milliseconds since `start` (time.monotonic()), for the operations' *_time_ms metrics."""
    return int((time.monotonic() - start) * 1000)


__all__ = ["DmlRun", "FileChangeMetrics", "ms_since", "run_and_commit"]
