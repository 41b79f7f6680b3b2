"""UPDATE on Spark (delta-spark's `DeltaTable.update(condition, set)`), as distributed jobs.

1. Driver: the SET list (column -> SQL string or Column) and the condition are checked by Spark's analyzer
   (unknown columns, identity columns, nested targets refused before any job); the kernel prunes the
   candidate files and records them as read. A condition on partition columns only is decided exactly on
   the files' partition values, and Spark then updates every row of the matching files.
2. Spark computes the new values (each cast to its column's type, ANSI rules of the session).
   - Deletion vectors: the DV job (`touched.py`) marks the matched rows deleted in their files; a second
     job writes the updated rows as new files;
   - copy-on-write: a job counts matches per file; a second rewrites each touched file with its rows in
     place, the matched ones updated (`CASE WHEN condition THEN value ELSE column END`).
   Updated rows go through the kernel's `Enforcer` on the executors whenever the table has a rule that
   could fail or fill a column (CHECK, invariants, NOT NULL of an assigned column, generated columns,
   which are recomputed): those jobs run in `mapInArrow`; otherwise Spark's native Parquet writer writes
   them. Row tracking: every row keeps its row id; updated rows get this commit as their row commit
   version. Change data feed: the executors write the pre- and post-images.
3. One kernel transaction commits (operation UPDATE, delta-spark's metrics); nothing matched -> no commit.
Tables Spark's Parquet plan cannot scan run the embedded UPDATE.
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
from ...operations.dml.touched_rows import DmlPredicate, candidate_files, partition_matches
from ...operations.dml.update import UpdateMetrics
from ...operations.files.change_data import cdf_enabled
from ..common.task_errors import internal_plans
from .commit import ENGINE_INFO, SparkDml, check_writable, load_target, native_readable, run_commit
from .frame import FID, Target, quote, target_frame
from .output import RowsPlan, update_rules, write_rows
from .plan import Assignment, check_condition, condition_column, empty_frame, plan_assignments, plan_condition, sql_text
from .touched import commit_deletion_vectors, match_counts, write_deletion_vectors

MATCHED = "__dk_matched"
_log = logging.getLogger(__name__)


class SparkUpdate(SparkDml):
    """One UPDATE (see module docstring)."""

    metrics: UpdateMetrics

    def __init__(self, target: Target, pred: DmlPredicate, condition: Any, assignments: dict[str, Assignment],
                 txn: KernelTransaction, progress: Callable[[int, int], None] | None = None) -> None:
        super().__init__(target, txn, progress)
        self.pred = pred
        self.condition = condition
        self.assignments = assignments
        self.metrics = UpdateMetrics()

    def run(self) -> None:
        start = time.monotonic()
        snapshot = self.target.snapshot
        files = candidate_files(snapshot, self.pred, self.txn)
        if self.pred.partition_only and self.pred.text is not None:  # decided exactly on partition values
            files = files.filter(partition_matches(snapshot, self.pred, files))
            self.condition = None
        self.change_files(files, start)

    def _plan(self, hidden: tuple[str, str] | None, updated: str | bool) -> RowsPlan:
        md = self.txn.metadata
        rules = update_rules(md, self.target.snapshot.protocol, set(self.assignments))
        cdf = cdf_enabled(md.configuration)
        old = tuple((name, f"__dk_old_{i}") for i, name in enumerate(self.assignments)) if cdf else ()
        return RowsPlan(self.target.uri, self.target.storage_options, md, rules.metadata,
                        self.target.snapshot.protocol, hidden, updated, rules.enforce, rules.regenerate, old, cdf)

    def _new_rows(self, frame: Any, plan: RowsPlan, matched: Any) -> Any:
        """`frame` with the SET list applied where `matched` (a Column; None = every row), old values kept
        in the carrier columns for change data, updated rows' row commit version NULL (= this commit)."""
        from pyspark.sql import functions as F

        cols = []
        for f in self.txn.metadata.schema.fields:
            old = F.col(quote(f.name))
            a = self.assignments.get(f.name)
            if a is None:
                cols.append(old)
            else:
                cols.append((a.value if matched is None else F.when(matched, a.value).otherwise(old)).alias(f.name))
        if plan.hidden is not None:
            id_col, version_col = plan.hidden
            cols.append(F.col(quote(id_col)))
            none = F.lit(None).cast("long")
            cols.append((none if matched is None else F.when(matched, none).otherwise(F.col(quote(version_col))))
                        .alias(version_col))
        if isinstance(plan.updated, str):
            cols.append(F.col(plan.updated))
        for name, carrier in plan.old_values:
            cols.append(F.col(quote(name)).alias(carrier))
        return frame.select(*cols)

    # ------------------------------------------------------------------ merge-on-read
    def _with_deletion_vectors(self, files: pa.Table, start: float) -> None:
        self.steps(2)
        frame = target_frame(self.target, files, skip_deleted=False)
        matched = frame.where(self.condition) if self.condition is not None else frame
        result = write_deletion_vectors(self.target, files, matched, self.txn.metadata.configuration)
        self.step()
        self.metrics.scan_time_ms = ms_since(start)
        if result.num_rows == 0:
            return
        write_start = time.monotonic()
        outcome = commit_deletion_vectors(self.txn, files, result, self.now)
        self.keep_dvs(outcome)
        self.metrics.num_updated_rows += outcome.deleted_rows
        self.count_dvs(outcome)
        hidden = self.hidden_columns()
        plan = self._plan(hidden, True)
        rows = target_frame(self.target, files, result.column("fid").to_numpy(), hidden=hidden)
        if self.condition is not None:
            rows = rows.where(self.condition)
        written = write_rows(self.target, self._new_rows(rows, plan, None), plan, self.keep)
        self.step()
        self.add_written(written)
        self.metrics.rewrite_time_ms = ms_since(write_start)

    # ------------------------------------------------------------------ copy-on-write
    def _copy_on_write(self, files: pa.Table, start: float) -> None:
        from pyspark.sql import functions as F

        self.steps(2)
        counts = match_counts(target_frame(self.target, files), self.condition)
        self.step()
        self.metrics.scan_time_ms = ms_since(start)
        if counts.num_rows == 0:
            return
        write_start = time.monotonic()
        touched = counts.column(FID).to_numpy()
        hidden = self.hidden_columns()
        plan = self._plan(hidden, MATCHED)
        frame = target_frame(self.target, files, touched, hidden=hidden)
        flag = F.coalesce(self.condition, F.lit(False)) if self.condition is not None else F.lit(True)
        frame = frame.withColumn(MATCHED, flag)
        written = write_rows(self.target, self._new_rows(frame, plan, F.col(MATCHED)), plan, self.keep)
        self.step()
        updated = int(sum(counts.column("count").to_pylist()))
        self.remove_files(files.take(pa.array(touched)))
        self.add_written(written)
        self.metrics.num_updated_rows += updated
        self.metrics.num_copied_rows += written.rows - updated
        self.metrics.rewrite_time_ms = ms_since(write_start)


@internal_plans()
def update(spark: Any, path: str, condition: Any = None, set: Any = None, *, alias: str | None = None,
           storage_options: dict[str, str] | None = None,
           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Set the columns of `set` (column -> SQL string or Column) on the rows of the table at `path` matching
    `condition` (all rows when None). Returns deltalake's metrics dict; the table is unchanged on any
    error; nothing matched -> no commit. `progress(done, total)` is called per job."""
    start = time.monotonic()
    target = load_target(spark, path, alias, storage_options)
    check_writable(target, "UPDATE")
    empty = empty_frame(spark, target.snapshot, alias)
    assignments = plan_assignments(spark, target.snapshot, set, empty)
    col = condition_column(condition)
    check_condition(empty, col, condition)
    plain = empty_frame(spark, target.snapshot)
    text = sql_text(condition, plain)
    if not native_readable(target):
        updates = {n: sql_text(a.given, plain, condition=False) for n, a in assignments.items()}
        return _embedded(target, col, text, updates)
    params = {"predicate": text or str(condition)} if col is not None else {}
    txn = KernelTransaction(target.storage, target.snapshot, operation="UPDATE", operation_parameters=params,
                            engine_info=ENGINE_INFO)
    op = SparkUpdate(target, plan_condition(condition, text, target.snapshot), col, assignments, txn, progress)
    metrics, _ = run_commit(op, start)
    return metrics


def _embedded(target: Target, condition: Any, text: str | None, updates: dict[str, str | None]) -> dict[str, Any]:
    """The embedded engine's UPDATE on the driver, for tables Spark's Parquet plan cannot scan."""
    from ...operations.dml.update import update as embedded_update

    if (condition is not None and text is None) or any(v is None for v in updates.values()):
        raise UnsupportedFeatureError("sparkDml", "this table is not scanned by Spark's Parquet reader (type "
                                      "widening or no Hadoop filesystem) and an expression has no SQL text")
    _log.warning("deltakernel: UPDATE on %s runs on the driver (embedded engine): Spark's Parquet plan cannot "
                 "scan this table", target.uri)
    metrics, _ = embedded_update(target.storage, target.snapshot, updates={k: str(v) for k, v in updates.items()},
                                 predicate=text)
    return metrics


__all__ = ["SparkUpdate", "update"]
