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
