"""Commit options with deltalake's names (`CommitProperties`, `Transaction`, `PostCommitHookProperties`)."""

from __future__ import annotations

import warnings
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


@dataclass
class PostCommitHookProperties:
    """After a commit: write the checkpoint due by `delta.checkpointInterval` (`create_checkpoint`); clean
    expired log files (`cleanup_expired_logs`: True after this commit, False never, None as
    `delta.enableExpiredLogCleanup` whenever a checkpoint is written)."""

    create_checkpoint: bool = True
    cleanup_expired_logs: bool | None = None


def check_commit_properties(commit_properties: CommitProperties | None) -> None:
    """Validate `custom_metadata` as deltalake does when an operation is called (InvalidCommitMetadataError, a
    ValueError): operations call this before writing anything; the constructor accepts anything, as deltalake's."""
    from ..kernel.transaction.transaction import commit_info_extras

    retries = getattr(commit_properties, "max_commit_retries", None)
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        from ..errors import InvalidArgumentValueError

        raise InvalidArgumentValueError(f"CommitProperties.max_commit_retries must be a non-negative int, "
                                        f"got {retries!r}")  # deltalake refuses it when built
    custom = getattr(commit_properties, "custom_metadata", None)
    if custom is not None:
        commit_info_extras(custom)


def positional_commit_args(method: str, args: tuple[Any, ...], commit_properties: Any,
                           post_commithook_properties: Any,
                           legacy_order: tuple[str, ...] = ("commit_properties", "post_commithook_properties"),
                           stacklevel: int = 4) -> tuple[Any, Any]:
    """deltalake 1.6.6's handling of commit options passed positionally (after the method's own parameters):
    DeprecationWarning, TypeError for too many or for one also given by keyword. Returns
    (commit_properties, post_commithook_properties). `stacklevel`: the warning names the user's call (user ->
    public method -> helper -> here)."""
    if not args:
        return commit_properties, post_commithook_properties
    if len(args) > len(legacy_order):
        raise TypeError(f"{method}() takes at most {len(legacy_order)} positional commit argument(s), "
                        f"got {len(args)}")
    warnings.warn(f"Passing commit arguments positionally to {method}() is deprecated and will be removed in a "
                  "future release. Use keyword arguments instead.", DeprecationWarning, stacklevel=stacklevel)
    given = dict(zip(legacy_order, args))
    for name, current in (("commit_properties", commit_properties),
                          ("post_commithook_properties", post_commithook_properties)):
        if name in given and current is not None:
            raise TypeError(f"{method}() got multiple values for {name!r}")
    return (given.get("commit_properties", commit_properties),
            given.get("post_commithook_properties", post_commithook_properties))


def commit_args(method: str, args: tuple[Any, ...], commit_properties: Any, post_commithook_properties: Any,
                order: tuple[str, ...] = ("commit_properties", "post_commithook_properties")) -> tuple[Any, Any]:
    """A public method's deprecated positional commit options (`order`: their positional order), then the
    commit properties validated (before anything is written). Returns (commit_properties, post-commit hook)."""
    cp, post = positional_commit_args(method, args, commit_properties, post_commithook_properties, order,
                                      stacklevel=5)
    check_commit_properties(cp)
    return cp, post


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
    cleanup = getattr(post_commithook_properties, "cleanup_expired_logs", None)
    txn.commit(max_retries=retries, post_commit=post, cleanup_expired_logs=cleanup)
    version = txn.committed_version
    assert version is not None
    return int(version)
