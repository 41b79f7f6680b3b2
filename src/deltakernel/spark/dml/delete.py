"""DELETE on Spark (delta-spark's `DeltaTable.delete(condition)`), as distributed jobs.

1. Driver: the condition is checked by Spark's analyzer, planned by the kernel for pruning; the candidate
   files (partition pruning + stats skipping) and the pruning predicate are recorded in the transaction.
2. A condition on partition columns only (or none): the kernel decides it exactly on each file's partition
   values and whole files are removed — no data read, no job.
3. Otherwise Spark scans only the candidate files and evaluates the condition (NULL = not matched):
   - deletion vectors (`deletionVectors` feature + `delta.enableDeletionVectors`): one job groups the
     matched `(file, row index)` by file and writes the DVs on the executors (`touched.py`); the driver
     receives one descriptor per touched file and re-adds each file with its new DV (fully deleted files
     are removed);
   - copy-on-write: a job counts matches per file; a second rewrites only the touched files without the
     matched rows (native Parquet write, row ids kept in the materialized columns).
   With the change data feed on, the deleted rows are written as `delete` change data by the executors.
4. One kernel transaction commits (operation DELETE, delta-spark's metrics); nothing matched -> no commit.
Tables Spark's Parquet plan cannot scan (type widening, no Hadoop filesystem) run the embedded DELETE.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ...errors import UnsupportedFeatureError
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...operations.dml.commit import ms_since
from ...operations.dml.delete import DeleteMetrics, live_rows
from ...operations.dml.touched_rows import DmlPredicate, candidate_files, partition_matches
from ...operations.files.change_data import cdf_enabled
from ..common.task_errors import internal_plans
from .commit import ENGINE_INFO, SparkDml, check_writable, load_target, native_readable, run_commit
from .frame import FID, Target, target_frame
from .output import RowsPlan, write_change_data, write_rows
from .plan import check_condition, condition_column, empty_frame, plan_condition, sql_text
from .touched import FILE_ROW_COLUMNS, commit_deletion_vectors, match_counts, write_deletion_vectors

_log = logging.getLogger(__name__)


class SparkDelete(SparkDml):
    """One DELETE (see module docstring)."""

    metrics: DeleteMetrics

    def __init__(self, target: Target, pred: DmlPredicate, condition: Any, txn: KernelTransaction,
                 progress: Callable[[int, int], None] | None = None) -> None:
        super().__init__(target, txn, progress)
        self.pred = pred
        self.condition = condition
        self.metrics = DeleteMetrics()

    def run(self) -> None:
        start = time.monotonic()
        snapshot = self.target.snapshot
        files = candidate_files(snapshot, self.pred, self.txn)
        if self.pred.partition_only:  # includes "no condition": whole files go, nothing is read
            self.steps(1)
            victims = files.filter(partition_matches(snapshot, self.pred, files))
            self.txn.read_files(victims.column("path").to_pylist())
            for row in victims.select(FILE_ROW_COLUMNS).to_pylist():
                self.metrics.num_deleted_rows += live_rows(snapshot, row)
            self.remove_files(victims)
            self.metrics.scan_time_ms = ms_since(start)
            self.step()
            return
        self.change_files(files, start)

    def _matched(self, frame: Any) -> Any:
        return frame.where(self.condition) if self.condition is not None else frame

    def _change_data(self, files: pa.Table, touched: Any) -> None:
        """The deleted rows (live before this DELETE) as `delete` change data, written by the executors."""
        md = self.txn.metadata
        if not cdf_enabled(md.configuration):
            return
        rows = self._matched(target_frame(self.target, files, touched))
        written = write_change_data(self.target, rows, md, "delete", self.keep)
        self.add_written(written)

    # ------------------------------------------------------------------ merge-on-read
    def _with_deletion_vectors(self, files: pa.Table, start: float) -> None:
        cdf = cdf_enabled(self.txn.metadata.configuration)
        self.steps(2 if cdf else 1)
        frame = target_frame(self.target, files, skip_deleted=False)  # the DV job subtracts old DVs itself
        result = write_deletion_vectors(self.target, files, self._matched(frame), self.txn.metadata.configuration)
        self.step()
        self.metrics.scan_time_ms = ms_since(start)
        write_start = time.monotonic()
        outcome = commit_deletion_vectors(self.txn, files, result, self.now)
        self.keep_dvs(outcome)
        self.metrics.num_deleted_rows += outcome.deleted_rows
        self.count_dvs(outcome)
        if result.num_rows and cdf:
            self._change_data(files, result.column("fid").to_numpy())
            self.step()
        self.metrics.rewrite_time_ms = ms_since(write_start)

    # ------------------------------------------------------------------ copy-on-write
    def _copy_on_write(self, files: pa.Table, start: float) -> None:
        from pyspark.sql import functions as F

        cdf = cdf_enabled(self.txn.metadata.configuration)
        self.steps(3 if cdf else 2)
        counts = match_counts(target_frame(self.target, files), self.condition)
        self.step()
        self.metrics.scan_time_ms = ms_since(start)
        if counts.num_rows == 0:
            return
        write_start = time.monotonic()
        touched = counts.column(FID).to_numpy()
        hidden = self.hidden_columns()
        frame = target_frame(self.target, files, touched, hidden=hidden)
        kept = frame.where(~F.coalesce(self.condition, F.lit(False))) if self.condition is not None \
            else frame.limit(0)
        md = self.txn.metadata
        plan = RowsPlan(self.target.uri, self.target.storage_options, md, md, self.target.snapshot.protocol,
                        hidden, updated=False)
        written = write_rows(self.target, kept, plan, self.keep)
        self.step()
        self.remove_files(files.take(pa.array(touched)))
        self.add_written(written)
        self.metrics.num_deleted_rows += int(sum(counts.column("count").to_pylist()))
        self.metrics.num_copied_rows += written.rows
        if cdf:
            self._change_data(files, touched)
            self.step()
        self.metrics.rewrite_time_ms = ms_since(write_start)


@internal_plans()
def delete(spark: Any, path: str, condition: Any = None, *, alias: str | None = None,
           storage_options: dict[str, str] | None = None,
           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Delete the rows of the table at `path` matching `condition` (a SQL string or a Column; all rows when
    None). Returns deltalake's metrics dict (the commit's operationMetrics are delta-spark's). The table is
    unchanged on any error; nothing matched -> no commit. `progress(done, total)` is called per job."""
    start = time.monotonic()
    target = load_target(spark, path, alias, storage_options)
    check_writable(target, "DELETE")
    col = condition_column(condition)
    check_condition(empty_frame(spark, target.snapshot, alias), col, condition)
    text = sql_text(condition, empty_frame(spark, target.snapshot))
    if not native_readable(target):
        return _embedded(target, col, text)
    txn = KernelTransaction(target.storage, target.snapshot, operation="DELETE",
                            operation_parameters={"predicate": [text or str(condition)] if col is not None else []},
                            engine_info=ENGINE_INFO)
    op = SparkDelete(target, plan_condition(condition, text, target.snapshot), col, txn, progress)
    metrics, _ = run_commit(op, start)
    return metrics


def _embedded(target: Target, condition: Any, text: str | None) -> dict[str, Any]:
    """The embedded engine's DELETE on the driver, for tables Spark's Parquet plan cannot scan."""
    from ...operations.dml.delete import delete as embedded_delete

    if condition is not None and text is None:
        raise UnsupportedFeatureError("sparkDml", "this table is not scanned by Spark's Parquet reader (type "
                                      "widening or no Hadoop filesystem) and the condition has no SQL text")
    _log.warning("deltakernel: DELETE on %s runs on the driver (embedded engine): Spark's Parquet plan cannot "
                 "scan this table", target.uri)
    metrics, _ = embedded_delete(target.storage, target.snapshot, text)
    return metrics


__all__ = ["SparkDelete", "delete"]
