"""Running a DML operation and committing it: the one sequence DELETE, UPDATE and MERGE share.

Why once: the commit rules matter more than any one operation — no commit when nothing changed, commit
properties applied, metrics recorded, and the files written deleted only when the commit is known absent
(`Transaction.may_have_committed`), so a failure at any point leaves the table as it was.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ..kernel.transaction.transaction import Transaction
from .properties import CommitProperties, PostCommitHookProperties


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
        for t in commit_properties.app_transactions or []:
            txn.set_app_transaction(t.app_id, t.version, t.last_updated)
        if commit_properties.custom_metadata:
            txn.extra_commit_info.update(commit_properties.custom_metadata)
        metrics.execution_time_ms = ms_since(start)
        txn.operation_metrics.update(metrics.commit_metrics())
        post = post_commithook_properties.create_checkpoint if post_commithook_properties else True
        retries = commit_properties.max_commit_retries
        txn.commit(max_retries=retries if retries is not None else 15, post_commit=post)
    except BaseException:
        if not txn.may_have_committed:
            op.abort()
        raise
    return dict(metrics.as_dict()), txn.committed_version


def ms_since(start: float) -> int:
    """Milliseconds since `start` (time.monotonic()), for the operations' *_time_ms metrics."""
    return int((time.monotonic() - start) * 1000)


__all__ = ["DmlRun", "ms_since", "run_and_commit"]
