"""FSCK (deltalake's `DeltaTable.repair`): remove the `add`s whose data files are gone from storage.

A table whose files were deleted by hand (or by a broken tool) cannot be read; this commits a `remove` for
each live file that is missing, so the rest of the table reads again. Existence is checked like RESTORE's
(`restore.missing_files`: one listing for many files, one request each for few). Commit operation "FSCK" with
deltalake's metrics (`dry_run`, `files_removed` as a JSON list of storage keys); nothing missing -> no commit.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with
from ..dml.rewrite import remove_action
from .restore import missing_files
from .vacuum import row_path_keys

log = logging.getLogger(__name__)


def repair(storage: Storage, snapshot: Snapshot, *, dry_run: bool = False,
           commit_properties: CommitProperties | None = None,
           post_commithook_properties: PostCommitHookProperties | None = None) -> tuple[dict[str, Any], int | None]:
    """Returns (deltalake's metrics, the committed version or None when nothing was committed)."""
    files = snapshot.files
    gone = files.filter(missing_files(storage, files, with_dvs=False)) if files.num_rows else files
    removed = row_path_keys(storage, gone.column("path")).to_pylist() if gone.num_rows else []
    metrics: dict[str, Any] = {"dry_run": dry_run, "files_removed": removed}
    if dry_run or not removed:
        return metrics, None
    txn = Transaction(storage, snapshot, operation="FSCK", operation_parameters={})
    txn.read_files(gone.column("path").to_pylist())
    now = int(time.time() * 1000)
    cols = [c for c in ("path", "size", "partition_values", "deletion_vector", "base_row_id",
                        "default_row_commit_version", "tags") if c in gone.column_names]
    txn.remove_files([remove_action(row, now) for row in gone.select(cols).to_pylist()])
    # deltalake's shape: the flag as a JSON boolean, the keys as one JSON-encoded list
    txn.operation_metrics.update({"dry_run": "false", "files_removed": json.dumps(removed)})
    commit_with(txn, commit_properties, post_commithook_properties)
    log.warning("FSCK of %s removed %d missing files from the table", storage.root_uri, len(removed))
    return metrics, txn.committed_version


__all__ = ["repair"]
