"""Committing a write: its data files, what an overwrite removes, identity high-water marks and metrics,
in one kernel Transaction.

The one rule that matters most lives here: a failed commit lets go of (deletes) its data files only when
the commit is known absent. A landed, or possibly landed, commit references them, and deleting them would
make the table unreadable (docs/decisions.md, "Commit outcomes").
"""

from __future__ import annotations

from ...kernel.log.action_types import AddAction
from ...kernel.log.actions import Metadata
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage
from ..commit_options import commit_with
from ..files.dml_output import delete_quietly
from .overwrite import plan_overwrite
from .plan import with_identity_high_water_marks
from .request import WriteRequest


def commit_write(txn: KernelTransaction, storage: Storage, snapshot: Snapshot | None, metadata: Metadata,
                 request: WriteRequest, adds: list[AddAction], rows: int,
                 identity_marks: dict[str, int]) -> None:
    """Add the files, plan what an overwrite removes, record metrics and commit (with the post-commit hooks)."""
    try:
        if identity_marks:
            txn.update_metadata(with_identity_high_water_marks(metadata, identity_marks))
        txn.add_files(adds)
        if snapshot is not None and request.mode == "overwrite":
            sql_pred = None
            if request.predicate is not None:
                from ...kernel.expressions.sql import parse_sql

                sql_pred = parse_sql(request.predicate)
            plan_overwrite(txn, snapshot, adds, request.predicate, sql_pred, request.partition_overwrite_mode,
                           storage, request.writer_properties)
        txn.operation_metrics.update(
            {
                "numFiles": len(adds),
                "numOutputRows": rows,
                "numOutputBytes": sum(int(a["size"]) for a in adds),
                "numRemovedFiles": len(txn.removes),
            }
        )
        commit_with(txn, request.commit_properties, request.post_commithook_properties)
    except BaseException:
        # only a commit known to be absent lets go of its files: a landed (or possibly landed) commit
        # references them, and deleting them would make the table unreadable
        if not txn.may_have_committed:
            delete_quietly(storage, list(dict.fromkeys([a["path"] for a in [*adds, *txn.adds, *txn.cdcs]])))
        raise


__all__ = ["commit_write"]
