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
    custom_metadata: dict[str, Any] | None = None
    max_commit_retries: int | None = None
    app_transactions: list[Transaction] = field(default_factory=list)


@dataclass
class PostCommitHookProperties:
    create_checkpoint: bool = True
    cleanup_expired_logs: bool | None = None
