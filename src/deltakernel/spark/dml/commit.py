"""One Spark DML run and committed on the driver: the shared skeleton of DELETE, UPDATE (and MERGE later).

The operation records what it read and every file it wrote; `run_and_commit` (operations/dml/commit.py,
shared with the embedded engine) commits one kernel transaction — Delta's conflict rules against every
winning commit, rebase or a typed `CommitConflictError` — and deletes the files written (data, change data,
deletion-vector files) only when the commit is known absent. Files a failed Spark job's successful tasks
wrote are not known to the driver: they stay as orphans (never referenced, VACUUM removes them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from ...errors import ConstraintViolationError
from ...kernel import row_tracking as rt
from ...kernel.protocol.features import check_write_supported
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...operations.commit_options import CommitProperties
from ...operations.dml.commit import FileChangeMetrics, run_and_commit
from ...operations.dml.dv_writer import deletion_vectors_writable
from ...operations.dml.rewrite import remove_action, row_tracking_configuration
from ...operations.files.dml_output import delete_quietly
from .frame import Target
from .output import Written
from .touched import FILE_ROW_COLUMNS, DvOutcome

ENGINE_INFO = "deltakernel-spark/0.1.0"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_log = logging.getLogger(__name__)


class SparkDml:
    """Base of a Spark DML operation (`run()` adds actions to `txn`; `abort()` deletes what it wrote)."""

    metrics: FileChangeMetrics

    def __init__(self, target: Target, txn: KernelTransaction,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.target = target
        self.txn = txn
        self.now = int(time.time() * 1000)
        self.progress = progress
        self.written: list[str] = []  # data and change data files (log paths)
        self.dv_keys: set[str] = set()
        self._steps = (0, 0)

    # ------------------------------------------------------------------ progress
    def steps(self, total: int) -> None:
        self._steps = (0, total)
        self._report()

    def step(self) -> None:
        done, total = self._steps
        self._steps = (min(done + 1, total), total)
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(*self._steps)

    # ------------------------------------------------------------------ execution
    def change_files(self, files: pa.Table, start: float) -> None:
        """Record the candidate files as read, then change them with deletion vectors where the table allows
        (delta-spark's condition), else by copy-on-write."""
        self.txn.read_files(files.column("path").to_pylist())
        if files.num_rows == 0:
            return
        if deletion_vectors_writable(self.target.snapshot):
            self._with_deletion_vectors(files, start)
        else:
            self._copy_on_write(files, start)

    def _with_deletion_vectors(self, files: pa.Table, start: float) -> None:
        raise NotImplementedError

    def _copy_on_write(self, files: pa.Table, start: float) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ bookkeeping
    def keep(self, written: Written) -> None:
        """Remember files a job wrote (for `abort`)."""
        self.written += [a["path"] for a in (*written.adds, *written.cdcs)]

    def keep_dvs(self, outcome: DvOutcome) -> None:
        self.dv_keys |= outcome.dv_keys

    def remove_files(self, files: pa.Table) -> None:
        """Remove whole files (file-table rows) and count them."""
        rows = files.select(FILE_ROW_COLUMNS).to_pylist()
        self.txn.remove_files([remove_action(r, self.now) for r in rows])
        for r in rows:
            self.metrics.count_removed(r)

    def count_dvs(self, outcome: DvOutcome) -> None:
        m = self.metrics
        for r in outcome.removed:
            m.count_removed(r)
        m.num_deletion_vectors_added += outcome.added
        m.num_deletion_vectors_updated += outcome.replaced
        m.num_deletion_vectors_removed += outcome.replaced

    def add_written(self, written: Written) -> None:
        """Add a job's data and change data files to the transaction and the metrics."""
        self.txn.add_files(written.adds)
        self.metrics.num_added_files += len(written.adds)
        self.metrics.num_added_bytes += sum(int(a.get("size") or 0) for a in written.adds)
        if written.cdcs:
            self.txn.add_cdc_files(written.cdcs)
            self.metrics.num_added_change_files += len(written.cdcs)

    def hidden_columns(self) -> tuple[str, str] | None:
        """The materialized row-tracking columns rewritten rows carry (None without row tracking); assigns
        their names in the commit's metadata when the table lacks them, as the embedded rewrite does."""
        conf = row_tracking_configuration(self.txn)
        snapshot = self.target.snapshot
        hidden = rt.columns_to_write(snapshot.protocol, snapshot.configuration, conf, snapshot.storage.root_uri)
        if hidden is not None:
            self.txn.set_commit_tag("delta.rowTracking.preserved", "true")
        return hidden

    def run(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def abort(self) -> None:
        """Delete every file this operation wrote (only called while the commit is known absent)."""
        storage = self.target.storage
        delete_quietly(storage, self.written)
        for key in self.dv_keys:
            try:
                storage.delete(key)
            except Exception:  # an orphan DV file is harmless
                pass
        self.written, self.dv_keys = [], set()


def check_writable(target: Target, operation: str) -> None:
    """Fail before any job: a protocol we cannot write, or an append-only table (DELETE/UPDATE remove data)."""
    snapshot = target.snapshot
    check_write_supported(snapshot.protocol)
    if str(snapshot.configuration.get("delta.appendOnly", "false")).strip().lower() == "true":
        raise ConstraintViolationError(f"delta.appendOnly: this table only allows appends, {operation} is refused")


def commit_properties(spark: Any, known: Mapping[str, str | None] | None = None) -> CommitProperties:
    """delta-spark's session conf `spark.databricks.delta.commitInfo.userMetadata` as the commit's userMetadata
    (`known`: confs read already, in one request with others)."""
    if known is not None and USER_METADATA_CONF in known:
        meta = known[USER_METADATA_CONF]
    else:
        try:
            meta = spark.conf.get(USER_METADATA_CONF, None)
        except Exception:
            meta = None
    return CommitProperties(custom_metadata={"userMetadata": str(meta)} if meta else None)


def run_commit(op: SparkDml, start: float,
               known: Mapping[str, str | None] | None = None) -> tuple[dict[str, Any], int | None]:
    """Run `op` and commit its transaction (see module docstring); (metrics, version or None). `known`: session
    confs read already."""
    metrics, version = run_and_commit(op, op.txn, start, commit_properties(op.target.spark, known), None)
    _log.debug("deltakernel Spark %s: version %s, %s", op.txn.operation, version, metrics)
    return metrics, version




def load_target(spark: Any, path: str, alias: str | None, storage_options: dict[str, str] | None) -> Target:
    """The table at `path` as of now (latest snapshot)."""
    from ...kernel.snapshot import Snapshot
    from ...storage import storage_for_uri
    from ..common.schema import table_uri

    uri = table_uri(path)
    snapshot = Snapshot.load(storage_for_uri(uri, storage_options), None)
    return Target(spark, path, uri, storage_options, snapshot, alias)


def native_readable(target: Target) -> bool:
    """Whether Spark's Parquet plan can scan the table (else the embedded engine runs the DML on the driver)."""
    from ..scan.filesystems import hadoop_can_read
    from ..scan.reader import native_supported

    return native_supported(target.snapshot) and hadoop_can_read(target.spark, target.storage)


__all__ = ["ENGINE_INFO", "SparkDml", "check_writable", "commit_properties", "load_target", "native_readable",
           "run_commit"]
