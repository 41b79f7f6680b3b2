"""`DeltaTable.create_write_transaction`: commit data files written by someone else (deltalake's API).

The caller wrote Parquet files under the table root (pyarrow, DuckDB, ...) and describes them with deltalake's
`AddAction(path, size, partition_values, modification_time, data_change, stats)`; one WRITE commit adds them,
and with `mode="overwrite"` removes the live files first (those in `partition_filters`, else all) — a real
overwrite, where deltalake 1.6.6 only adds (docs/decisions.md).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError
from ...kernel.log.action_types import AddAction as AddFileAction
from ...kernel.scan.scan import Scan
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with
from ..dml.rewrite import FILE_COLUMNS, remove_action


@dataclass
class AddAction:
    """deltalake's `deltalake.transaction.AddAction`: one data file to add (path relative to the table root)."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    modification_time: int
    data_change: bool
    stats: str


def _add_json(a: Any) -> AddFileAction:
    """The `add` action of a deltalake or deltakernel AddAction (duck-typed: both have the same fields)."""
    try:
        return {
            "path": str(a.path),
            "partitionValues": dict(a.partition_values or {}),
            "size": int(a.size),
            "modificationTime": int(a.modification_time),
            "dataChange": bool(a.data_change),
            "stats": a.stats,
        }
    except AttributeError as e:
        raise DeltaError(f"create_write_transaction needs AddAction values, got {type(a).__name__}") from e


def write_transaction(
    storage: Storage,
    snapshot: Snapshot,
    actions: list[Any],
    mode: str,
    partition_by: list[str] | None,
    partition_filter: Any,
    commit_properties: CommitProperties | None,
    post_commithook_properties: PostCommitHookProperties | None,
) -> int:
    """Commit `actions` (append, or overwrite of the files `partition_filter` selects); returns the version.
    `partition_filter` is a kernel predicate over partition columns (None: the whole table)."""
    if mode not in ("append", "overwrite"):
        raise DeltaError(f"create_write_transaction mode must be 'append' or 'overwrite', got {mode!r}")
    parts = list(partition_by or snapshot.partition_columns)
    adds = [_add_json(a) for a in actions]
    txn = Transaction(
        storage,
        snapshot,
        operation="WRITE",
        operation_parameters={"mode": mode.capitalize(), "partitionBy": json.dumps(parts, separators=(",", ":"))},
    )
    if mode == "overwrite":
        victims = Scan(snapshot, predicate=partition_filter).plan() if partition_filter is not None else snapshot.files
        if partition_filter is None:
            txn.read_whole_table()
        else:
            txn.read_predicate(partition_filter)
        now = int(time.time() * 1000)
        txn.remove_files([remove_action(r, now) for r in victims.select(FILE_COLUMNS).to_pylist()])
    txn.add_files(adds)
    return commit_with(txn, commit_properties, post_commithook_properties)


__all__ = ["AddAction", "write_transaction"]
