"""DELETE (deltalake's `DeltaTable.delete`, delta-spark's DeleteCommand semantics).

1. Plan the predicate (`touched_rows.plan_predicate`): syntax errors / unknown columns raise before
   anything is written.
2. No predicate, or a predicate on partition columns only: whole files are removed (no data read; the
   predicate is evaluated exactly, with SQL semantics, on each file's partition values).
3. Otherwise the candidate files (partition pruning + stats skipping) are read with only the predicate's
   columns and the matching physical rows found (`touched_rows.find_touched_rows`). Then either
   - deletion vectors (the table has the `deletionVectors` feature and `delta.enableDeletionVectors`
     is true, delta-spark's condition): each partly deleted file is re-added with a new DV (existing DV
     union the new rows; all of them in one DV file), each fully deleted file removed; or
   - copy-on-write: the touched files are rewritten without the matched rows (`rewrite.Rewriter`, row
     ids kept).
   With change data feed on, the deleted rows go to `_change_data` files as `delete`.
4. One transaction commits it, having recorded what it read (the pruning predicate, the files read),
   so concurrent writers meet Delta's conflict rules. Nothing deleted -> no commit (as deltalake and
   delta-spark's `commitIfNeeded`).
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ...kernel.paths import resolve_file
from ...kernel.scan.scan import Scan
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage
from ..commit_options import CommitProperties, PostCommitHookProperties
from ..files.change_data import ChangeDataWriter
from .commit import FileChangeMetrics, ms_since, run_and_commit
from .dv_writer import DeletionVectorWriter, deletion_vectors_writable
from .rewrite import FILE_COLUMNS, FileChange, Rewriter, remove_action, row_tracking_configuration
from .touched_rows import (
    DmlPredicate,
    TouchedFile,
    candidate_files,
    find_touched_rows,
    partition_matches,
    physical_task,
    plan_predicate,
)

_COLUMNS = [*FILE_COLUMNS, "modification_time"]


@dataclass
class DeleteMetrics(FileChangeMetrics):
    num_deleted_rows: int = 0

    ROW_COUNTER: ClassVar[tuple[str, str]] = ("num_deleted_rows", "numDeletedRows")




def live_rows(snapshot: Snapshot, row: dict[str, Any]) -> int:
    """Live rows of a file: numRecords (else the Parquet footer) minus its DV's cardinality."""
    n: int | None = None
    if row.get("stats"):
        try:
            value = json.loads(row["stats"]).get("numRecords")
            n = int(value) if value is not None else None
        except (ValueError, TypeError, AttributeError):
            n = None
    if n is None:
        storage, key = resolve_file(snapshot.storage, row["path"])
        n = pq.ParquetFile(storage.open_input_file(key)).metadata.num_rows
    dv = row.get("deletion_vector")
    return n - (int(dv["cardinality"]) if dv else 0)


class _Delete:
    """One DELETE: collects actions into `txn`, remembers the files it wrote for `abort`."""

    def __init__(self, storage: Storage, snapshot: Snapshot, pred: DmlPredicate, txn: KernelTransaction,
                 writer_properties: Any) -> None:
        self.storage = storage
        self.snapshot = snapshot
        self.pred = pred
        self.txn = txn
        self.writer_properties = writer_properties
        self.now = int(time.time() * 1000)
        self.metrics = DeleteMetrics()
        self.cdc: ChangeDataWriter | None = None
        self.rewriter: Rewriter | None = None
        self.dv_writer: DeletionVectorWriter | None = None

    def _change_data(self, configuration: dict[str, str]) -> ChangeDataWriter | None:
        self.cdc = ChangeDataWriter.for_commit(self.storage, self.txn.metadata, self.snapshot.column_mapping_mode,
                                               configuration, self.writer_properties)
        return self.cdc

    def _remove(self, row: dict[str, Any]) -> None:
        self.txn.remove_files([remove_action(row, self.now)])
        self.metrics.count_removed(row)

    def run(self) -> None:
        start = time.monotonic()
        files = candidate_files(self.snapshot, self.pred, self.txn)
        if self.pred.partition_only:  # includes "no predicate": whole files go, nothing is read
            victims = files.filter(partition_matches(self.snapshot, self.pred, files)).select(_COLUMNS).to_pylist()
            self.txn.read_files([r["path"] for r in victims])
            for r in victims:
                self.metrics.num_deleted_rows += live_rows(self.snapshot, r)
                self._remove(r)
            self.metrics.scan_time_ms = ms_since(start)
            return
        rows = files.select(_COLUMNS).to_pylist()
        self.txn.read_files([r["path"] for r in rows])
        if deletion_vectors_writable(self.snapshot):
            self._with_deletion_vectors(rows, start)
        else:
            self._copy_on_write(rows, start)

    # ------------------------------------------------------------------ merge-on-read
    def _with_deletion_vectors(self, rows: list[dict[str, Any]], start: float) -> None:
        cdc = self._change_data(dict(self.txn.metadata.configuration))
        self.dv_writer = DeletionVectorWriter(self.storage, self.txn.metadata.configuration)
        kept: list[TouchedFile] = []
        full_scan = Scan(self.snapshot) if cdc is not None else None
        for t in find_touched_rows(self.snapshot, self.pred, rows):
            self.metrics.num_deleted_rows += int(t.matched.size)
            if full_scan is not None and cdc is not None:  # the deleted rows themselves, for change data
                data = full_scan.read_file(physical_task(t.file))
                cdc.add(data.take(pa.array(t.matched.astype(np.int64))), "delete")
            if t.all_deleted:
                self._remove(t.file)
            else:
                self.dv_writer.add(t.deleted())
                kept.append(t)
        self.metrics.scan_time_ms = ms_since(start)
        write_start = time.monotonic()
        replaced = self.dv_writer.commit_into(self.txn, [t.file for t in kept], self.now)
        self.metrics.num_deletion_vectors_added += len(kept)
        self.metrics.num_deletion_vectors_updated += replaced
        self.metrics.num_deletion_vectors_removed += replaced
        if cdc is not None:
            self.metrics.num_added_change_files = cdc.commit_into(self.txn)
        self.metrics.rewrite_time_ms = ms_since(write_start)

    # ------------------------------------------------------------------ copy-on-write
    def _copy_on_write(self, rows: list[dict[str, Any]], start: float) -> None:
        touched = list(find_touched_rows(self.snapshot, self.pred, rows))
        self.metrics.scan_time_ms = ms_since(start)
        if not touched:
            return
        write_start = time.monotonic()
        configuration = row_tracking_configuration(self.txn)
        cdc = self._change_data(configuration)
        self.rewriter = rewriter = Rewriter(self.snapshot, self.storage, configuration=configuration,
                                            now=self.now, writer_properties=self.writer_properties,
                                            change_data=cdc)
        def change(t: TouchedFile) -> FileChange:
            # the matched rows are known already (no second evaluation); the file streams through in pieces
            return FileChange(t.file, functools.partial(rewriter.read_pieces, t.file), t.live_mask())

        result = rewriter.rewrite(change(t) for t in touched)
        self.txn.remove_files(result.removes)
        self.txn.add_files(result.adds)
        m = self.metrics
        m.num_removed_files += len(result.removes)
        m.num_removed_bytes += sum(int(r.get("size") or 0) for r in result.removes)
        m.num_deletion_vectors_removed += sum(1 for r in result.removes if r.get("deletionVector"))
        m.num_added_files += len(result.adds)
        m.num_added_bytes += sum(int(a.get("size") or 0) for a in result.adds)
        m.num_deleted_rows += result.removed_rows
        m.num_copied_rows += result.copied_rows
        if rewriter.row_tracking:
            self.txn.set_commit_tag("delta.rowTracking.preserved", "true")
        if cdc is not None:
            m.num_added_change_files = cdc.commit_into(self.txn)
        m.rewrite_time_ms = ms_since(write_start)

    def abort(self) -> None:
        """Delete every file this DELETE wrote (only when its commit is known absent)."""
        for part in (self.rewriter, self.cdc, self.dv_writer):
            if part is not None:
                part.abort()


def delete(storage: Storage, snapshot: Snapshot, predicate: str | None = None, *, writer_properties: Any = None,
           commit_properties: CommitProperties | None = None,
           post_commithook_properties: PostCommitHookProperties | None = None,
           deltalake_parameters: bool = False,
           recorded_predicate: str | None = None) -> tuple[dict[str, int], int | None]:
    """Delete the rows matching `predicate` (all rows when None); returns (metrics, committed version or
    None when nothing was deleted). The table is unchanged on any error.

    commitInfo's `predicate`: delta-spark's JSON list of the text (`[]` for all rows), or with
    `deltalake_parameters` (the deltalake-style `DeltaTable.delete`) deltalake's plain text, absent for all rows;
    `recorded_predicate`: the caller's spelling of `predicate` to record instead (deltalake's `"fooBar"`)."""
    start = time.monotonic()
    pred = plan_predicate(predicate, snapshot)
    shown = recorded_predicate if recorded_predicate is not None and predicate is not None else predicate
    if deltalake_parameters:
        params: dict[str, Any] = {"predicate": shown} if shown is not None else {}
    else:
        params = {"predicate": [shown] if shown is not None else []}
    txn = KernelTransaction(storage, snapshot, operation="DELETE", operation_parameters=params)
    op = _Delete(storage, snapshot, pred, txn, writer_properties)
    return run_and_commit(op, txn, start, commit_properties, post_commithook_properties)


__all__ = ["DeleteMetrics", "delete"]
