"""MERGE on Spark (delta-spark's `DeltaTable.merge(source, condition)` builder), as distributed jobs.

1. Driver: the clauses are checked by Spark's analyzer on an empty target joined with the source (bad
   columns, target columns in NOT MATCHED clauses, source columns in NOT MATCHED BY SOURCE ones, unknown
   assignment keys: typed errors before any job); `withSchemaEvolution()` evolves the table schema first
   (`operations/dml/merge/schema_evolution.py`, the embedded MERGE's rules). The join condition's equi-keys
   and target-only conjuncts are found in Spark's analyzed plan (`merge_plan.py`).
2. A one-row aggregate job on the source: its row count and, per key, min / max (distinct values for a
   partition key) cast to the target's type; with the target-only conjuncts they prune the target files
   (partition values + stats, the embedded MERGE's predicate; none with NOT MATCHED BY SOURCE clauses).
   The transaction records the predicate and the candidate files.
3. The source is materialized once (persisted with a row id `__dk_sid`, as delta-spark materializes its
   MERGE source): every job sees the same rows. The source-stats job runs on a second driver thread while
   the driver plans what does not depend on the pruned files. The pairs: Spark joins the candidate files'
   rows (file id, physical row index) with the source - inner, or left outer with NOT MATCHED BY SOURCE
   clauses; never a right / full outer join, so Spark broadcasts a small source and the target is not
   shuffled - and gives each row its clause (`CASE WHEN`, first match wins). The matched pairs and the
   target rows a NOT MATCHED BY SOURCE clause changes are kept on the executors (persisted; with deletion
   vectors, when a written value needs the target row, with their new values) - except when the DV job
   returns them (below). A target row matched by
   several source rows raises `MergeDuplicateMatchError` (unless the only WHEN MATCHED clause is an
   unconditional DELETE), and nothing is committed.
4. Deletion vectors: ONE job (`touched.py`: pairs grouped per file, one DV file per task) computes and
   keeps the pairs, writes the DVs and returns per file the rows updated / deleted and the most pairs of
   one target row; the write's plan is built meanwhile. Updated rows come from the kept pairs or - when
   every written value comes from the source row (`UPDATE SET *`, or values Spark's analyzer resolves on
   the source alone) - from the source left-joined with the pairs' clauses, inserted rows in the same pass
   (`MergePlan.source_rows`). In that case, for a source of at most `COLLECT_SOURCE_ROWS` rows, the pairs
   are not kept: the DV job returns every pair's `(source row id, clause)` with its result and the write
   looks a source row's clauses up in its own tasks (`pair_clauses.py`), so the target scan, the join and
   the DV job's shuffle are one stage and the write is one job (no broadcast of the pairs). Then, unless a
   scan task has more pairs than the source has rows, the scan tasks return the pairs with their file and
   row and the driver writes the DVs as a DV task would (`touched.deletion_vectors_on_driver`: no shuffle,
   no DV job); and for a source Spark estimates small whose rows are copied as they are (`UPDATE SET *`,
   `INSERT *`), the job materializing the source returns its rows and the driver picks and writes the rows
   (`driver_rows.py`: no write job) - 3 Spark jobs in all.
   Copy-on-write: a classification job (one row per touched file to the driver),
   then the touched files are joined with the source again and rewritten (copied + updated rows) together
   with the inserted rows (source rows whose id is in no pair: an anti-join on ids, no target scan).
   Inserted rows are counted from what was written (copy-on-write subtracts the copied rows, known from
   the touched files' numRecords, else their footers). Insert-only MERGEs touch no
   target file; nothing written -> no commit. Rows are written by Spark's native Parquet writer, or in
   `mapInArrow` (`merge_write.py`) when a table rule must be checked or change data (insert / delete /
   update pre- and post-images) written. Row tracking: updated and copied rows keep their row ids.
5. One kernel transaction commits (operation MERGE, delta-spark's parameters and metrics).
Inserted rows get identity values the clause does not assign from the executors (`spark/writing/identity.py`); the
new high-water marks, from the written files, are committed with the adds. Tables Spark's Parquet plan cannot
scan run the embedded MERGE on the driver with the source collected as Arrow.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import UnsupportedFeatureError
from ...kernel.scan.scan import Scan
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...operations.dml.commit import ms_since
from ...operations.dml.delete import live_rows
from ...operations.dml.dv_writer import deletion_vectors_writable
from ...operations.dml.merge.api import merge_parameters
from ...operations.dml.merge.plan import (
    BY_SOURCE_DELETE,
    BY_SOURCE_UPDATE,
    DUPLICATE_MATCH_ERROR_CLASS,
    MATCHED_DELETE,
    MATCHED_UPDATE,
    NOT_MATCHED_INSERT,
    MergeDuplicateMatchError,
    MergeError,
    MergeMetrics,
    duplicate_match_message,
)
from ...operations.dml.rewrite import remove_action
from ...operations.files.change_data import cdf_enabled
from ...operations.write.enforcement import Enforcer
from ..common.confs import get_confs
from ..common.task_errors import internal_plans
from ..writing import identity as idc
from . import driver_rows
from .commit import (
    ENGINE_INFO,
    USER_METADATA_CONF,
    SparkDml,
    check_writable,
    load_target,
    native_readable,
    run_commit,
)
from .frame import FID, ROW, Target
from .merge_plan import ACTION, S_MARK, SID, MergePlan, SparkClause, text_of
from .merge_write import ClauseRules, MergeRowsPlan, write_merge_rows
from .output import RowsPlan, Written, update_rules, write_rows
from .pair_clauses import pair_clauses_column
from .touched import (
    FILE_ROW_COLUMNS,
    commit_deletion_vectors,
    deletion_vectors_on_driver,
    to_arrow,
    write_deletion_vectors,
    write_deletion_vectors_and_pairs,
)

AUTO_MERGE_CONF = "spark.databricks.delta.schema.autoMerge.enabled"
# sources of at most this many rows get their pairs back from the DV job (pair_clauses.py); larger ones keep them
# on the executors and join them in the write
COLLECT_SOURCE_ROWS = 1_000_000
# ... and then the scan tasks return them and the driver writes the DVs (`touched.deletion_vectors_on_driver`)
DRIVER_DVS = True
_log = logging.getLogger(__name__)


@dataclass
class _Outputs:
    values: list[Any]  # Columns over the joined frame
    names: list[str]  # their names
    rules: list[ClauseRules]
    simple: bool  # Spark's native writer may write them
    old: tuple[str, ...]
    cdf: bool
    hidden: tuple[str, str] | None


class SparkMerge(SparkDml):
    """One MERGE (see module docstring)."""

    metrics: MergeMetrics  # type: ignore[assignment]  # MERGE's counters, not DELETE/UPDATE's

    def __init__(self, target: Target, plan: MergePlan, txn: KernelTransaction,
                 progress: Callable[[int, int], None] | None = None,
                 confs: Mapping[str, str | None] | None = None) -> None:
        super().__init__(target, txn, progress)
        self.plan = plan
        self.confs = confs  # session confs read once for this MERGE (`execute`), or None: read when needed
        self.metrics = MergeMetrics()
        # identity columns inserted rows get generated values for (per column: the clauses not assigning it)
        self.idents = idc.identities(txn.metadata, txn.protocol)
        for i in plan.inserts:  # an INSERT assigning a GENERATED ALWAYS column: refused before any job
            idc.check_explicit(list(plan.assigned[i]), self.idents)
        self.generating = idc.generating_clauses(self.idents, plan.inserts, plan.assigned)

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        try:
            self._run()
        finally:
            self.plan.release()

    def _run(self) -> None:
        start = time.monotonic()
        plan, txn, snapshot = self.plan, self.txn, self.target.snapshot
        use_dv = deletion_vectors_writable(snapshot)
        self.steps(4)
        hidden = self._hidden()
        # a small source whose rows are copied as they are: its rows come back with the stats, the driver writes
        driver = self._driver_rows_plan(hidden) if use_dv else None
        plan.materialize()
        with ThreadPoolExecutor(max_workers=1) as pool:
            # the source-stats job runs while the driver plans what does not depend on the files it prunes
            stats_job = pool.submit(internal_plans()(plan.source_stats),
                                    driver.columns if driver is not None else None)  # this thread plans too
            try:
                out = self._outputs(hidden)
                # deletion vectors: when every written value comes from the source row alone, the rows written
                # are the source rows left-joined with the pairs' clauses (`source_rows`), and classification
                # scans only the columns the join reads
                from_source = self._from_source(driver) if use_dv and out.simple and hidden is None else None
                carried = out if use_dv and from_source is None else None
                # the pairs over every file, planned meanwhile too: used when pruning keeps every file
                everything = self._pairs(snapshot.files, carried) if snapshot.files.num_rows else None
            finally:
                n_source, stats = stats_job.result()
        self.metrics.num_source_rows = n_source
        pruning = plan.pruning(stats)
        if pruning is not None:
            txn.read_predicate(pruning)
            files = Scan(snapshot, predicate=pruning).plan()
        else:
            txn.read_whole_table()
            files = snapshot.files
        self.metrics.num_target_files_scanned = files.num_rows
        self.metrics.num_target_files_skipped_during_scan = snapshot.files.num_rows - files.num_rows
        txn.read_files(files.column("path").to_pylist())
        self.step()
        if files.num_rows == 0 and not plan.inserts:
            return
        if everything is not None and files.num_rows == snapshot.files.num_rows:
            files, pairs = snapshot.files, everything  # the same candidate set
        else:
            pairs = self._pairs(files, carried)
        # the pairs come back with the DV job's result when the written rows come from the source alone and the
        # source is small: then they are not kept on the executors (the scan, the join and the DV job's shuffle
        # are one stage) and the write looks them up instead of joining them (pair_clauses.py)
        # (a source read to the driver already - `driver_rows.py` - is small whatever its row count)
        collect = from_source is not None and (n_source <= COLLECT_SOURCE_ROWS or plan.collected_source is not None)
        if not collect:
            pairs = plan.persist(pairs)  # computed by the first job that reads them, read again by the write
        prebuilt = driver_table = None
        if use_dv:
            with ThreadPoolExecutor(max_workers=1) as pool:
                dv_job = pool.submit(internal_plans()(self._dv_job), files, pairs, collect) \
                    if files.num_rows else None
                try:  # the write's plan is analyzed while the DV job runs
                    if from_source is not None and not collect:
                        prebuilt = plan.source_rows(pairs.where("matched"), from_source())
                finally:
                    result, collected = dv_job.result() if dv_job is not None else (None, None)
            touched, counts, duplicates = self._dv_counts(files, result)
            source = plan.collected_source
            if from_source is not None and collect and source is not None and \
                    (collected is not None or files.num_rows == 0):
                driver_table = driver_rows.rows(plan, source, collected, driver_rows.arrow_schema(txn.metadata))
            elif from_source is not None and collect:
                prebuilt = self._source_rows(pairs, collected, from_source(), files.num_rows > 0)
        else:
            touched, counts, duplicates = self._classify(pairs)
        self.step()
        m = self.metrics
        m.num_target_rows_updated = int(pc.sum(counts.column("upd")).as_py() or 0) if counts.num_rows else 0
        m.num_target_rows_deleted = int(pc.sum(counts.column("del")).as_py() or 0) if counts.num_rows else 0
        m.scan_time_ms = ms_since(start)
        if touched.size == 0 and not plan.inserts:
            return
        write_start = time.monotonic()
        if hidden is not None and touched.size:
            txn.set_commit_tag("delta.rowTracking.preserved", "true")
        if driver_table is not None:
            written = driver_rows.write(self.target, txn.metadata, driver_table)
            self.keep(written)
        else:
            written = self._write(files, touched, pairs, hidden, out, use_dv, duplicates, prebuilt)
        self._high_water_marks(written)
        self.step()
        # inserted rows: what was written minus the updated rows and (copy-on-write) the copied ones
        copied = 0 if use_dv else self._kept_rows(files, touched)
        m.num_target_rows_inserted = max(0, written.rows - m.num_target_rows_updated - copied)
        if not use_dv:
            self._remove(files.take(pa.array(touched)))
            m.num_target_rows_copied = max(0, copied)
        self._add(written)
        m.rewrite_time_ms = ms_since(write_start)

    def _kept_rows(self, files: pa.Table, touched: np.ndarray) -> int:
        """Rows copy-on-write copies from the touched files: their live rows (`numRecords`, else the footer,
        minus the DV's cardinality) minus those updated or deleted."""
        rows = files.take(pa.array(touched)).select(["path", "stats", "deletion_vector"]).to_pylist()
        live = sum(live_rows(self.target.snapshot, r) for r in rows)
        return live - self.metrics.num_target_rows_updated - self.metrics.num_target_rows_deleted

    def _hidden(self) -> tuple[str, str] | None:
        """The materialized row-tracking columns rewritten rows carry (names assigned in the commit's
        metadata when missing, as the embedded MERGE does); the `preserved` tag is set once rows are touched."""
        from ...kernel import row_tracking as rt
        from ...operations.dml.rewrite import row_tracking_configuration

        snapshot = self.target.snapshot
        conf = row_tracking_configuration(self.txn)
        return rt.columns_to_write(snapshot.protocol, snapshot.configuration, conf, snapshot.storage.root_uri)

    def _driver_rows_plan(self, hidden: tuple[str, str] | None) -> driver_rows.DriverRows | None:
        """The columns the source-materializing job returns when the driver may pick and write the rows
        (`driver_rows.py`): exact copies of source columns, no rule, change data, row tracking or generated
        identity, the write path left to deltakernel, a source Spark estimates small. Else None."""
        from ..writing.native_write import write_path_choice
        from .plan import facts_of

        md = self.txn.metadata
        if hidden is not None or self.generating or cdf_enabled(md.configuration) or \
                any(r.metadata is not None for r in self._rules()):
            return None
        found = driver_rows.plan_driver_rows(self.plan)
        if found is None or write_path_choice(self.target.spark, {}, self.confs) != "auto":
            return None
        size = facts_of(self.target.spark).size_estimate(self.plan.source)
        return found if size is not None and size <= driver_rows.COLLECT_SOURCE_BYTES else None

    def _from_source(self, driver: driver_rows.DriverRows | None) -> Callable[[], list[Any]] | None:
        """The written values when every one comes from the source row (`MergePlan.source_update_values`), as a
        function: with `driver` (copies of source columns, `UPDATE SET *` of every column) they are known to be,
        and are built only when a Spark write needs them (the driver writes the rows otherwise). None: an
        update reads the target row."""
        if driver is not None:
            plan = self.plan
            return lambda: plan.source_update_values() or []  # never None for such clauses
        values = self.plan.source_update_values()
        return None if values is None else (lambda: values)

    def _outputs(self, hidden: tuple[str, str] | None) -> _Outputs:
        """The columns of the rows written: new values, hidden row-tracking columns and, when the rows go
        through `merge_write` (rules or change data), the clause index and the pre-image carriers."""
        from pyspark.sql import functions as F

        plan, md = self.plan, self.txn.metadata
        cdf = cdf_enabled(md.configuration)
        values = idc.generated_values(plan.new_values(), md, self.txn.protocol, ACTION, self.generating)
        values += plan.hidden_values(hidden) if hidden is not None else []
        names = [f.name for f in md.schema.fields] + list(hidden or ())
        rules = self._rules()
        simple = not cdf and all(r.metadata is None for r in rules)
        old = tuple(f"__dk_old{k}" for k in range(len(md.schema.fields))) if cdf else ()
        if not simple:
            values += [F.col(ACTION), *[plan.old(f.name).alias(c) for f, c in zip(md.schema.fields, old)]]
            names += [ACTION, *old]
        return _Outputs(values, names, rules, simple, old, cdf, hidden)

    # ------------------------------------------------------------------ classification
    def _pairs(self, files: pa.Table, out: _Outputs | None) -> Any:
        """The candidate files joined with the source (`_run` keeps it on the executors unless the DV job
        returns the pairs): matched pairs and the target rows a NOT MATCHED BY SOURCE clause changes, as
        `fid, row, sid, a` (the row's clause), `matched`. With `out` (deletion vectors), the kept rows carry
        their new values too: the write reads them there, the target is scanned once."""
        from pyspark.sql import functions as F

        plan = self.plan
        hidden = out.hidden if out is not None else None
        j = plan.joined(files, hidden=hidden, keep_target=bool(plan.by_source), copies=out is not None, check=False)
        s, act = F.col(S_MARK).isNotNull(), F.col(ACTION)
        carried = [v for v, n in zip(out.values, out.names) if n != ACTION] if out is not None else []
        return j.where(s | (act >= 0)).select(FID, ROW, F.col(SID), act.alias("a"), s.alias("matched"),
                                              act.alias(ACTION), *carried)

    def _classify(self, pairs: Any) -> tuple[np.ndarray, pa.Table, bool]:
        """Copy-on-write: one pass over the candidate files joined with the source (`pairs`, kept by this job);
        the driver gets one row per touched file (`fid, upd, del, n`: n = most pairs of one target row).
        Raises on a target row several source rows match for an update/delete, before anything is written."""
        from pyspark.sql import functions as F

        plan = self.plan
        acted = F.col("a").isin(plan.matched) if plan.matched else F.lit(False)
        per_row = pairs.where("matched").groupBy(FID, ROW).agg(
            F.count(F.lit(1)).alias("n"), F.count(F.when(acted, 1)).alias("acted"), F.max("a").alias("a"))
        if plan.by_source:
            per_row = per_row.unionByName(pairs.where(~F.col("matched")).select(
                FID, ROW, F.lit(1).cast("long").alias("n"), F.lit(1).cast("long").alias("acted"), "a"))

        def among(ids: list[int]) -> Any:
            return F.col("a").isin(ids) if ids else F.lit(False)

        per_file = per_row.where(among(plan.updates + plan.deletes) | (F.col("n") > 1)).groupBy(FID).agg(
            F.sum(among(plan.updates).cast("long")).alias("upd"), F.sum(among(plan.deletes).cast("long")).alias("del"),
            F.max("n").alias("n"), F.max("acted").alias("acted"))
        counts = to_arrow(per_file)
        duplicates = self._check_duplicates(counts)
        return self._touched(counts), counts, duplicates

    def _dv_job(self, files: pa.Table, pairs: Any, collect: bool) -> tuple[pa.Table, pa.Table | None]:
        """Deletion vectors: the DV job reads the pairs (computed and kept by this job unless `collect`), writes
        the touched files' new DVs and counts, per file, the rows updated and deleted and the most pairs of one
        target row (`touched.write_deletion_vectors`); with `collect`, also returns every pair's `(sid, a)`
        (None: too many)."""
        from pyspark.sql import functions as F

        clauses = (tuple(self.plan.updates), tuple(self.plan.deletes))
        conf = self.txn.metadata.configuration
        if collect:
            four = pairs.select(F.col(FID), F.col(ROW), F.col("a"), F.col(SID))  # Columns: see frame.target_frame
            if DRIVER_DVS:
                found = deletion_vectors_on_driver(self.target, files, four, conf, clauses,
                                                   self.metrics.num_source_rows)
                if found is not None:
                    return found
                _log.info("deltakernel: MERGE pairs too many for the driver's DVs; the DV job runs")
            return write_deletion_vectors_and_pairs(self.target, files, four, conf, clauses)
        return write_deletion_vectors(self.target, files, pairs.select(FID, ROW, "a"), conf, clauses), None

    def _source_rows(self, pairs: Any, collected: pa.Table | None, values: list[Any], scanned: bool) -> Any:
        """The written rows (`MergePlan.source_rows`) from the pairs the DV job returned: their clauses looked
        up per source row (none when no file was scanned or nothing matched); when a DV task had too many,
        joined with the pairs, computed again (a second target scan, rare: see `touched.PAIRS_LIMIT`)."""
        plan = self.plan
        if not scanned or (collected is not None and collected.num_rows == 0):
            return plan.source_rows(None, values)
        if collected is None:
            _log.info("deltakernel: MERGE pairs too many to return to the driver; the write joins them again")
            return plan.source_rows(pairs.where("matched"), values)
        column, shared = pair_clauses_column(self.target.spark, collected, SID)
        plan.keep_shared(shared)
        return plan.source_rows(None, values, column)

    def _dv_counts(self, files: pa.Table, result: pa.Table | None) -> tuple[np.ndarray, pa.Table, bool]:
        """The DV job's result recorded in the transaction (so a failure from here on deletes the DV files)
        before a duplicate match raises; the touched file ids and the per-file counts."""
        if result is None:
            return np.empty(0, np.int32), pa.table({FID: pa.array([], pa.int32())}), False
        self._record_dvs(files, result)
        counts = result.rename_columns([FID if n == "fid" else n for n in result.column_names])
        duplicates = self._check_duplicates(counts)
        return self._touched(counts), counts, duplicates

    def _check_duplicates(self, counts: pa.Table) -> bool:
        """Whether a target row is in several pairs. Raises when a WHEN MATCHED clause acts on several of one
        target row's pairs (`acted`; the DV job's `n` counts only those), unless the only matched clause is
        an unconditional DELETE: delta-spark's rule, pairs every matched condition rejects change nothing."""
        def most(column: str) -> int:
            return int(pc.max(counts.column(column)).as_py() or 0) if counts.num_rows else 0

        acted = most("acted" if "acted" in counts.column_names else "n")
        if acted > 1 and self.plan.matched and not self._delete_only():
            raise MergeDuplicateMatchError(duplicate_match_message(error_class=True))
        return max(acted, most("n")) > 1

    @staticmethod
    def _touched(counts: pa.Table) -> np.ndarray:
        """The file ids with a row updated or deleted, sorted."""
        if counts.num_rows == 0:
            return np.empty(0, np.int32)
        hit = counts.filter(pc.greater(pc.add(counts.column("upd"), counts.column("del")), 0))
        return np.sort(hit.column(FID).to_numpy())

    def _unmatched(self, pairs: Any, hidden: tuple[str, str] | None = None) -> Any:
        """Source rows no target row matched, with their NOT MATCHED clause (no target scan)."""
        from pyspark.sql import functions as F

        sids = pairs.where("matched").select(SID).distinct()
        return self.plan.joined(None, hidden=hidden, matched_sids=sids).where(F.col(ACTION).isin(self.plan.inserts))

    def _delete_only(self) -> bool:
        """The only WHEN MATCHED clause is an unconditional DELETE: several matches are not ambiguous."""
        m = self.plan.matched
        return len(m) == 1 and self.plan.kinds[m[0]] == MATCHED_DELETE and self.plan.clauses[m[0]].condition is None

    # ------------------------------------------------------------------ deletion vectors
    def _record_dvs(self, files: pa.Table, result: pa.Table) -> None:
        outcome = commit_deletion_vectors(self.txn, files, result, self.now)
        self.keep_dvs(outcome)
        m = self.metrics
        for row in outcome.removed:
            m.num_target_files_removed += 1
            m.num_removed_bytes += int(row.get("size") or 0)
            m.num_deletion_vectors_removed += 1 if row.get("deletion_vector") else 0
        m.num_deletion_vectors_added += outcome.added
        m.num_deletion_vectors_removed += outcome.replaced

    # ------------------------------------------------------------------ writing
    def _write(self, files: pa.Table, touched: np.ndarray, pairs: Any, hidden: tuple[str, str] | None,
               out: _Outputs, use_dv: bool, duplicates: bool, source_rows: Any = None) -> Written:
        """One write job: updated rows (deletion vectors: from the kept pairs, valued there, or `source_rows`,
        the source left-joined with the pairs, built already; copy-on-write: the touched files joined with the
        source again, with the rows they keep), plus the unmatched source rows to insert."""
        from pyspark.sql import functions as F

        plan, md = self.plan, self.txn.metadata
        act = F.col(ACTION)
        frame = None
        if source_rows is not None:
            frame = source_rows
        else:
            if touched.size:
                if use_dv:
                    changed = plan.updates + (plan.deletes if out.cdf else [])
                    rows = pairs.where(F.col("a").isin(changed)) if changed else None
                else:
                    j = plan.joined(files, touched, hidden=hidden, keep_target=True)
                    if duplicates:  # a target row in several pairs: once, the pair a clause acts on (if any)
                        j = _one_pair_per_row(j)
                    rows = j.where(~act.isin(plan.deletes)) if plan.deletes and not out.cdf else j
                if rows is not None:
                    if duplicates and use_dv:  # the acted pairs of one row (all one clause: delete-only): once
                        rows = rows.dropDuplicates([FID, ROW])
                    # the joined frame has both sides' names: select, then union
                    frame = rows.select(*out.names) if use_dv else rows.select(*out.values)
            if plan.inserts:
                ins = self._unmatched(pairs, hidden).select(*out.values)
                frame = ins if frame is None else frame.unionByName(ins)
        if frame is None:
            return Written()
        if out.simple:
            native = RowsPlan(self.target.uri, self.target.storage_options, md, md, self.txn.protocol, hidden,
                              updated=False)
            return write_rows(self.target, frame, native, self.keep)
        rows_plan = MergeRowsPlan(self.target.uri, self.target.storage_options, md, self.txn.protocol, hidden,
                                  out.cdf, tuple(out.rules), out.old)
        return write_merge_rows(self.target, frame, rows_plan, self.keep)

    def _rules(self) -> list[ClauseRules]:
        """Per clause, what its rows must meet (see merge_write.py)."""
        md, protocol = self.txn.metadata, self.txn.protocol
        names = [f.name for f in md.schema.fields]
        full = Enforcer(md, protocol).needed
        out = []
        for i, c in enumerate(self.plan.clauses):
            if c.is_delete:
                out.append(ClauseRules("delete"))
            elif c.kind == NOT_MATCHED_INSERT:
                # identity columns the clause generates carry their values: plain columns for its Enforcer
                gen = [d for d in self.idents if i in self.generating.get(d.name, ())]
                keep = tuple(self.plan.assigned[i]) + tuple(d.name for d in gen)
                out.append(ClauseRules("insert", idc.task_metadata(md, gen) if full else None, keep))
            else:
                r = update_rules(md, protocol, set(self.plan.assigned[i]))
                keep = tuple(n for n in names if n not in r.regenerate)
                out.append(ClauseRules("update", r.metadata if r.enforce or r.regenerate else None, keep))
        return out

    def _high_water_marks(self, written: Written) -> None:
        """The generated identity columns' new high-water marks (from the written files), in this commit."""
        gen = [d for d in self.idents if d.name in self.generating]
        marks = idc.high_water_marks(self.target.spark, self.target.path, self.txn.metadata, gen, written.adds)
        if marks:
            self.txn.update_metadata(idc.with_high_water_marks(self.txn.metadata, marks))

    def _remove(self, removed: pa.Table) -> None:
        m = self.metrics
        rows = removed.select(FILE_ROW_COLUMNS).to_pylist()
        self.txn.remove_files([remove_action(r, self.now) for r in rows])
        for r in rows:
            m.num_target_files_removed += 1
            m.num_removed_bytes += int(r.get("size") or 0)
            m.num_deletion_vectors_removed += 1 if r.get("deletion_vector") else 0

    def _add(self, written: Written) -> None:
        m = self.metrics
        self.txn.add_files(written.adds)
        m.num_target_files_added += len(written.adds)
        m.num_added_bytes += sum(int(a.get("size") or 0) for a in written.adds)
        if written.cdcs:
            self.txn.add_cdc_files(written.cdcs)
            m.num_added_change_files += len(written.cdcs)


# ----------------------------------------------------------------------------- entry point
@internal_plans()
def merge(spark: Any, path: str, source: Any, condition: Any, clauses: list[SparkClause], *,
          alias: str | None = None, schema_evolution: bool = False, storage_options: dict[str, str] | None = None,
          progress: Callable[[int, int], None] | None = None,
          confs: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """MERGE `source` (a Spark DataFrame, aliased or not) into the table at `path` on `condition`;
    returns deltalake's metrics dict (the commit carries delta-spark's). Unchanged table on any error;
    nothing to do -> no commit. `progress(done, total)` is called per job; `confs`: session confs read
    already (`DeltaMergeBuilder.execute`; else each is read when needed)."""
    start = time.monotonic()
    if not clauses:
        raise MergeError("MERGE needs at least one WHEN clause (whenMatchedUpdate, whenNotMatchedInsert, ...)")
    target = load_target(spark, path, alias, storage_options)
    if any(c.kind != NOT_MATCHED_INSERT for c in clauses):
        check_writable(target, "MERGE")
    else:  # insert-only: allowed on append-only tables
        _check_protocol(target)
    kernel_clauses = [c.kernel_clause(spark) for c in clauses]
    cond_text = condition if isinstance(condition, str) else None
    printed = cond_text or text_of(condition, spark)
    txn = KernelTransaction(target.storage, target.snapshot, operation="MERGE",
                            operation_parameters=merge_parameters(printed, kernel_clauses),
                            engine_info=ENGINE_INFO)
    if schema_evolution:
        from ...operations.dml.merge.schema_evolution import evolve_schema
        from ..writing.writer import table_arrow_schema

        evolve_schema(txn, table_arrow_schema(source.schema), kernel_clauses, alias)
    plan = MergePlan(target, source, condition, clauses, txn.metadata)
    plan.prepare()
    if cond_text is None and plan.analysis.sql:
        txn.operation_parameters["predicate"] = plan.analysis.sql
    if not native_readable(target):
        return _embedded(target, source, condition, clauses, schema_evolution)
    op = SparkMerge(target, plan, txn, progress, confs)
    metrics, _ = run_commit(op, start, confs)
    return metrics


def _check_protocol(target: Target) -> None:
    from ...kernel.protocol.features import check_write_supported

    check_write_supported(target.snapshot.protocol)


def _embedded(target: Target, source: Any, condition: Any, clauses: list[SparkClause],
              schema_evolution: bool) -> dict[str, Any]:
    """The embedded engine's MERGE on the driver (the source collected as Arrow)."""
    from ...operations.dml.merge.api import merge as embedded_merge

    texts = [condition] + [c.condition for c in clauses] + [v for c in clauses for v in (c.assignments or {}).values()]
    if any(x is not None and not isinstance(x, str) for x in texts):
        raise UnsupportedFeatureError("sparkMerge", "this MERGE runs on the driver (the table is not scanned by "
                                      "Spark's Parquet reader) and needs its "
                                      "condition and values as SQL strings, not Columns")
    _log.warning("deltakernel: MERGE on %s runs on the driver (embedded engine)", target.uri)
    s_alias = _source_alias(source)
    try:
        metrics, _ = embedded_merge(target.storage, target.snapshot, source.toArrow(), condition,
                                    [c.kernel_clause(target.spark) for c in clauses], source_alias=s_alias,
                                    target_alias=target.alias, merge_schema=schema_evolution)
    except MergeDuplicateMatchError as e:  # Spark users match on delta-spark's error class
        raise MergeDuplicateMatchError(f"[{DUPLICATE_MATCH_ERROR_CLASS}] {e}") from e
    return metrics


def _one_pair_per_row(rows: Any) -> Any:
    """One pair per target row (`FID`, `ROW`), preferring the pair a clause acts on (`ACTION` >= 0) over the
    pairs every WHEN MATCHED condition rejected, which must not be written as extra copies."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    pick = "__dk_pick"
    order = Window.partitionBy(FID, ROW).orderBy(F.col(ACTION).desc())
    return rows.withColumn(pick, F.row_number().over(order)).where(F.col(pick) == 1).drop(pick)


def _source_alias(source: Any) -> str | None:
    from .plan import facts_of

    return facts_of(source.sparkSession).source_alias(source)


# ----------------------------------------------------------------------------- delta-spark's builder
class DeltaMergeBuilder:
    """delta-spark's `DeltaMergeBuilder`: WHEN clauses in order (the first whose condition holds applies),
    `withSchemaEvolution()`, `execute()`."""

    def __init__(self, spark: Any, path: str, alias: str | None, source: Any, condition: Any) -> None:
        from pyspark.sql import Column, DataFrame

        if not isinstance(source, DataFrame):
            raise TypeError(f"the MERGE source must be a Spark DataFrame, found {type(source).__name__}")
        if condition is None or not isinstance(condition, (str, Column)):
            raise TypeError("condition must be a Spark SQL Column or a string (expression in SQL syntax), found "
                            f"{type(condition).__name__}")
        self._spark = spark
        self._path = path
        self._alias = alias
        self._source = source
        self._condition = condition
        self._clauses: list[SparkClause] = []
        self._evolve = False

    def _add(self, kind: str, condition: Any, assignments: Any = None, what: str = "",
             all_columns: bool = False) -> DeltaMergeBuilder:
        from pyspark.sql import Column

        if condition is not None and not isinstance(condition, (str, Column)):
            raise TypeError(f"condition must be a Spark SQL Column or a string (expression in SQL syntax), found "
                            f"{type(condition).__name__}")
        if what:
            if assignments is None:
                raise ValueError(f"{what} cannot be None")
            if not isinstance(assignments, dict):
                raise TypeError(f"{what} must be a dict, found {type(assignments).__name__}")
            for k, v in assignments.items():
                if not isinstance(k, str):
                    raise TypeError(f"keys of {what} must be column names (str), found {k!r}")
                if not isinstance(v, (str, Column)):
                    raise TypeError(f"values of {what} must be Spark SQL Columns or strings, found "
                                    f"{type(v).__name__} for {k!r}")
            assignments = dict(assignments)
        self._clauses.append(SparkClause(kind, condition, assignments, all_columns))
        return self

    def whenMatchedUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:
        return self._add(MATCHED_UPDATE, condition, set, "'set' in whenMatchedUpdate")

    def whenMatchedUpdateAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._add(MATCHED_UPDATE, condition, all_columns=True)

    def whenMatchedDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._add(MATCHED_DELETE, condition)

    def whenNotMatchedInsert(self, condition: Any = None, values: Any = None) -> DeltaMergeBuilder:
        return self._add(NOT_MATCHED_INSERT, condition, values, "'values' in whenNotMatchedInsert")

    def whenNotMatchedInsertAll(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._add(NOT_MATCHED_INSERT, condition, all_columns=True)

    def whenNotMatchedBySourceUpdate(self, condition: Any = None, set: Any = None) -> DeltaMergeBuilder:
        return self._add(BY_SOURCE_UPDATE, condition, set, "'set' in whenNotMatchedBySourceUpdate")

    def whenNotMatchedBySourceDelete(self, condition: Any = None) -> DeltaMergeBuilder:
        return self._add(BY_SOURCE_DELETE, condition)

    def withSchemaEvolution(self) -> DeltaMergeBuilder:
        self._evolve = True
        return self

    def execute(self) -> Any:
        """Run the MERGE; a one-row DataFrame `num_affected_rows, num_updated_rows, num_deleted_rows,
        num_inserted_rows` (delta-spark 4's)."""
        from ..writing.native_write import WRITE_PATH_CONF

        # the session confs a MERGE reads, at once: one request on Spark Connect, not one per conf
        confs = get_confs(self._spark, [AUTO_MERGE_CONF, WRITE_PATH_CONF, USER_METADATA_CONF])
        evolve = self._evolve or str(confs.get(AUTO_MERGE_CONF) or "false").strip().lower() == "true"
        m = merge(self._spark, self._path, self._source, self._condition, list(self._clauses), alias=self._alias,
                  schema_evolution=evolve, confs=confs)
        u, d, i = (int(m.get("num_target_rows_updated", 0)), int(m.get("num_target_rows_deleted", 0)),
                   int(m.get("num_target_rows_inserted", 0)))
        table = pa.table({"num_affected_rows": [u + d + i], "num_updated_rows": [u], "num_deleted_rows": [d],
                          "num_inserted_rows": [i]}, schema=pa.schema([(n, pa.int64()) for n in (
                              "num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows")]))
        return self._spark.createDataFrame(table)


__all__ = ["DeltaMergeBuilder", "SparkMerge", "merge"]
