"""Commit options with deltalake's names (`CommitProperties`, `Transaction`, `PostCommitHookProperties`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Transaction:
    """An application transaction id (`txn` action): makes a write idempotent per (app_id, version)."""

    app_id: str
    version: int
    last_updated: int | None = None


@dataclass
class CommitProperties:
    """Extra commitInfo fields, commit retries and application transactions of one commit."""

    custom_metadata: dict[str, Any] | None = None
    max_commit_retries: int | None = None
    app_transactions: list[Transaction] = field(default_factory=list)

    def __post_init__(self) -> None:
        from ..kernel.transaction.transaction import commit_info_extras

        if self.custom_metadata is not None:
            commit_info_extras(self.custom_metadata)  # ValueError now, not after the data is written


@dataclass
class PostCommitHookProperties:
    create_checkpoint: bool = True
    cleanup_expired_logs: bool | None = None


def commit_with(txn: Any, commit_properties: CommitProperties | None,
                post_commithook_properties: PostCommitHookProperties | None, *,
                app_transactions: bool = True) -> int:
    """Apply deltalake's commit options to the kernel transaction `txn` and commit it: custom commitInfo
    fields, application transactions (unless `app_transactions` is False, e.g. all but the last of several
    commits), retries (the kernel's default unless set) and the checkpoint hook. Returns the version."""
    from ..kernel.transaction.transaction import DEFAULT_MAX_RETRIES

    props = commit_properties or CommitProperties()
    if props.custom_metadata:
        txn.extra_commit_info.update(props.custom_metadata)
    if app_transactions:
        for t in props.app_transactions or []:
            txn.set_app_transaction(t.app_id, t.version, t.last_updated)
    retries = props.max_commit_retries if props.max_commit_retries is not None else DEFAULT_MAX_RETRIES
    post = post_commithook_properties.create_checkpoint if post_commithook_properties is not None else True
    txn.commit(max_retries=retries, post_commit=post)
    version = txn.committed_version
    assert version is not None
    return int(version)
