"""OPTIMIZE on Spark: delta-spark's `DeltaOptimizeBuilder` (`where`, `executeCompaction`, `executeZOrderBy`).

Distributed, one Spark task per bin (delta-spark also writes each bin with one task):
1. the driver plans the bins exactly as the embedded engine does (`operations/maintenance/optimize/plan.py`: compaction
   bins of small files per partition in insertion order, files purged of many deleted rows, Z-order / clustering
   bins), from the partition filter of `where(...)` evaluated on the typed partition values;
2. one Spark job runs every bin as its own task (`_common.map_partitions`): the task reads the bin's files
   with the kernel's reader (deletion vectors applied, column mapping, row ids kept) one file at a time,
   writes them as one file (compaction, insertion order kept) or sorts the bin along the Z-order curve
   (`operations/maintenance/optimize/zorder.py`'s key, computed on the executor) and cuts it into files of
   about the target size, with the kernel's OPTIMIZE `BinWriter` (the one Parquet writer: same stats, same
   layout as the embedded engine). Tasks return only add
   actions; no shuffle, nothing through the driver but actions;
3. the driver commits one transaction: removes (`dataChange=false`) + adds, operation OPTIMIZE with the
   embedded engine's parameters and metrics; the rewritten files are the read set, so a concurrent DELETE of
   one of them conflicts and a concurrent append does not.
Returns delta-spark's DataFrame: `path` and a `metrics` struct (`OptimizeMetrics`: numFilesAdded,
numFilesRemoved, filesAdded / filesRemoved {min, max, avg, totalFiles, totalSize}, partitionsOptimized,
zOrderStats, clusteringStats, numBins, numBatches, totalConsideredFiles, totalFilesSkipped,
preserveInsertionOrder, ...).

Target file size: `spark.databricks.delta.optimize.maxFileSize` when set, else the table's
`delta.targetFileSize`, else the embedded default. A Z-order bin is sorted in one task's memory: at most
`spark.deltakernel.optimize.maxBinBytes` file bytes (default 256 MiB, ~1 GiB of Arrow data). A failed task
deletes what it wrote; files of bins that finished before another failed stay as orphans (never referenced;
VACUUM removes them).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...errors import DeltaError, InvalidFilterError
from ...kernel import row_tracking as rt
from ...kernel.log.actions import Metadata
from ...kernel.scan.scan import Scan
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...operations.commit_options import commit_with
from ...operations.dml.rewrite import remove_action
from ...operations.dml.touched_rows import partition_matches, plan_predicate
from ...operations.files.dml_output import delete_quietly
from ...operations.maintenance.optimize import clustering as cl
from ...operations.maintenance.optimize.execute import (
    ARROW_EXPANSION,
    DEFAULT_SORT_MEMORY,
    BinRunner,
    OptimizeMetrics,
    commit_metrics,
    plan_bins,
    sort_columns,
    target_file_size,
)
from ...operations.maintenance.optimize.plan import Bin, OptimizePlan
from ..common.task_errors import marked, task_errors
from ..kinds.session import default_parallelism
from ._common import ENGINE_INFO, SnapshotState, commit_properties, conf, map_partitions
from .predicate_text import catalyst_text

log = logging.getLogger(__name__)

MAX_FILE_SIZE_CONF = "spark.databricks.delta.optimize.maxFileSize"
MAX_BIN_BYTES_CONF = "spark.deltakernel.optimize.maxBinBytes"
DEFAULT_BIN_BYTES = DEFAULT_SORT_MEMORY // (ARROW_EXPANSION * 2)


# ----------------------------------------------------------------------------- the builder
class DeltaOptimizeBuilder:
    """delta-spark's builder: `where(partitionFilter)` (several are ANDed), then `executeCompaction()` or
    `executeZOrderBy(*cols)`, each returning the metrics DataFrame."""

    def __init__(self, spark: Any, uri: str, storage_options: dict[str, str] | None = None) -> None:
        self._spark = spark
        self._uri = uri
        self._storage_options = storage_options
        self._filters: list[str] = []

    def where(self, partitionFilter: str) -> DeltaOptimizeBuilder:
        if not isinstance(partitionFilter, str) or not partitionFilter.strip():
            raise InvalidFilterError(f"partitionFilter must be a non-empty SQL string, got {partitionFilter!r}")
        self._filters.append(partitionFilter)
        return self

    def executeCompaction(self) -> Any:
        return run_optimize(self._spark, self._uri, self._storage_options, self._filters, None)

    def executeZOrderBy(self, *cols: Any) -> Any:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        for c in cols:
            if not isinstance(c, str):
                raise TypeError(f"Z-order column must be str. Found {c} with type {type(c)}")
        self._refuse_partition_columns(cols)
        return run_optimize(self._spark, self._uri, self._storage_options, self._filters, list(cols))

    def _refuse_partition_columns(self, cols: tuple[str, ...]) -> None:
        """delta-spark's check, with its error class: files already hold one value of a partition column."""
        from ...table import DeltaTable as KernelTable
        from ..common.error_classes import ZORDERING_ON_PARTITION_COLUMN, classed

        parts = {p.lower() for p in KernelTable(self._uri, storage_options=self._storage_options)
                 .snapshot.partition_columns}
        for c in cols:
            if c.strip("`").lower() in parts:
                raise DeltaError(classed(ZORDERING_ON_PARTITION_COLUMN, f"{c} is a partition column. Z-Ordering "
                                         "can only be performed on data columns"))


# ----------------------------------------------------------------------------- planning
def _selected_files(snapshot: Snapshot, filters: list[str]) -> pa.Table:
    """Live files of the partitions the filters select (SQL on the typed partition values)."""
    if not filters:
        return snapshot.files
    text = " AND ".join(f"({f})" for f in filters)
    pred = plan_predicate(text, snapshot)
    if not pred.partition_only:
        others = [c for c in pred.columns if c.lower() not in {p.lower() for p in snapshot.partition_columns}]
        raise InvalidFilterError(
            f"Predicate references non-partition column {others[0]!r}. Only the partition columns may be "
            f"referenced: [{', '.join(snapshot.partition_columns)}]")
    files = Scan(snapshot, predicate=pred.pruning).plan() if pred.pruning is not None else snapshot.files
    return files.filter(partition_matches(snapshot, pred, files)) if files.num_rows else files


def _int_conf(spark: Any, key: str) -> int | None:
    raw = conf(spark, key)
    if raw is None:
        return None
    try:
        value = int(raw.strip().rstrip("bB"))
    except ValueError as e:
        raise DeltaError(f"{key} must be a number of bytes, got {raw!r}") from e
    if value <= 0:
        raise DeltaError(f"{key} must be positive, got {raw!r}")
    return value


@dataclass
class _Job:
    """One OPTIMIZE: the plan and everything the tasks and the commit need."""

    snapshot: Snapshot
    plan: OptimizePlan
    sort_columns: list[str] | None
    clustered: bool
    target: int
    configuration: dict[str, str]
    extra_add: dict[str, Any]
    params: dict[str, Any]


def _plan(spark: Any, snapshot: Snapshot, filters: list[str], zorder: list[str] | None) -> _Job:
    clustered = cl.clustering_columns(snapshot) if cl.is_clustered(snapshot) else None
    if clustered is not None and not clustered:
        clustered = None
    sort_cols = sort_columns(snapshot, zorder, clustered)
    target = target_file_size(snapshot, _int_conf(spark, MAX_FILE_SIZE_CONF))
    files = _selected_files(snapshot, filters)
    bin_bytes = max(target, _int_conf(spark, MAX_BIN_BYTES_CONF) or DEFAULT_BIN_BYTES)
    plan, extra_add = plan_bins(snapshot, files, target, bin_bytes, clustered, sort_cols)
    params: dict[str, Any] = {"predicate": [catalyst_text(f) for f in filters], "targetSize": str(target)}
    if clustered is not None:
        params["clusterBy"] = clustered
    elif sort_cols is not None:
        params["zOrderBy"] = sort_cols
    configuration = rt.with_materialized_names(snapshot.metadata.configuration)
    return _Job(snapshot, plan, sort_cols, clustered is not None, target, configuration, extra_add, params)


# ----------------------------------------------------------------------------- the Spark job
@dataclass(frozen=True)
class _TaskSpec:
    state: SnapshotState
    sort_columns: list[str] | None
    target: int
    configuration: dict[str, str]
    extra_add: dict[str, Any]


def _bin_task(spec: _TaskSpec) -> Any:
    def run(items: Iterator[tuple[int, Bin]]) -> Iterator[tuple[int, str, int]]:
        with marked():  # a DeltaError reaches the driver as itself
            snapshot = spec.state.snapshot()
            op = BinRunner(snapshot.storage, snapshot, zorder_columns=spec.sort_columns,
                           plan=OptimizePlan([], 0, 0, 0), target_size=spec.target,
                           configuration=spec.configuration, writer_properties=None, extra_add=spec.extra_add,
                           workers=1, progress=None)
            out = []
            try:
                for index, b in items:
                    result = op.run_bin(b)
                    out.append((index, json.dumps(result.adds, separators=(",", ":")), result.batches))
            except BaseException:
                op.writer.abort(set())  # nothing of this task is committed
                raise
        yield from out
    return run


_BinOutput = tuple[int, list[dict[str, Any]], int]  # (bin index, add actions, Arrow batches read)


def _run_bins(spark: Any, job: _Job, uri: str, storage_options: dict[str, str] | None) -> list[_BinOutput]:
    """Every bin as one task; (bin index, add actions, batches) in plan order."""
    bins = list(enumerate(job.plan.bins))
    spec = _TaskSpec(SnapshotState.of(job.snapshot, uri, storage_options), job.sort_columns, job.target,
                     job.configuration, job.extra_add)
    with task_errors():
        rows = map_partitions(spark, bins, _bin_task(spec), len(bins))
    out = sorted(((int(i), json.loads(adds), int(n)) for i, adds, n in rows), key=lambda r: r[0])
    if [i for i, _, _ in out] != list(range(len(bins))):
        raise DeltaError("OPTIMIZE: the Spark job did not return every bin once")
    return out


# ----------------------------------------------------------------------------- commit + result
def _commit(spark: Any, job: _Job, results: list[_BinOutput], metrics: OptimizeMetrics) -> int:
    snapshot = job.snapshot
    storage = snapshot.storage
    md = snapshot.metadata
    now = int(time.time() * 1000)
    removes = [remove_action(f, now, data_change=False) for b in job.plan.bins for f in b.files]
    adds = [a for _, bin_adds, _ in results for a in bin_adds]
    txn = Transaction(storage, snapshot, operation="OPTIMIZE", operation_parameters=job.params,
                      engine_info=ENGINE_INFO)
    if job.configuration != md.configuration:  # row tracking without materialized column names yet
        txn.update_metadata(Metadata(md.id, md.schema_string, md.partition_columns, job.configuration, md.name,
                                     md.description, md.format, md.created_time))
    txn.read_files([r["path"] for r in removes])
    txn.remove_files(removes)
    txn.add_files(adds)
    if rt.columns_to_write(snapshot.protocol, md.configuration, job.configuration, storage.root_uri) is not None:
        txn.set_commit_tag("delta.rowTracking.preserved", "true")
    dvs = sum(1 for r in removes if r.get("deletionVector"))
    txn.operation_metrics.update(commit_metrics(metrics, adds, removes, dvs))
    try:
        version = commit_with(txn, commit_properties(spark), None)
    except BaseException:
        if not txn.may_have_committed:
            delete_quietly(storage, [a["path"] for a in adds])
        raise
    log.info("Spark OPTIMIZE of %s committed version %d: %d file(s) removed, %d added", storage.root_uri,
             version, len(removes), len(adds))
    return version


_SIZES = pa.struct([("min", pa.int64()), ("max", pa.int64()), ("avg", pa.float64()), ("totalFiles", pa.int64()),
                    ("totalSize", pa.int64())])
_ZFILES = pa.struct([("num", pa.int64()), ("size", pa.int64())])
_CFILES = pa.struct([("numFiles", pa.int64()), ("size", pa.int64())])
METRICS_TYPE = pa.struct([
    ("numFilesAdded", pa.int64()), ("numFilesRemoved", pa.int64()), ("filesAdded", _SIZES),
    ("filesRemoved", _SIZES), ("partitionsOptimized", pa.int64()),
    ("zOrderStats", pa.struct([("strategyName", pa.string()), ("inputCubeFiles", _ZFILES),
                               ("inputOtherFiles", _ZFILES), ("inputNumCubes", pa.int64()),
                               ("mergedFiles", _ZFILES), ("numOutputCubes", pa.int64()),
                               ("mergedNumCubes", pa.int64())])),
    ("clusteringStats", pa.struct([("inputZCubeFiles", _CFILES), ("inputOtherFiles", _CFILES),
                                   ("inputNumZCubes", pa.int64()), ("mergedFiles", _CFILES),
                                   ("numOutputZCubes", pa.int64())])),
    ("numBins", pa.int64()), ("numBatches", pa.int64()), ("totalConsideredFiles", pa.int64()),
    ("totalFilesSkipped", pa.int64()), ("preserveInsertionOrder", pa.bool_()),
    ("numFilesSkippedToReduceWriteAmplification", pa.int64()),
    ("numBytesSkippedToReduceWriteAmplification", pa.int64()), ("startTimeMs", pa.int64()),
    ("endTimeMs", pa.int64()), ("totalClusterParallelism", pa.int64()), ("totalScheduledTasks", pa.int64()),
    ("autoCompactParallelismStats", pa.struct([("maxClusterActiveParallelism", pa.int64()),
                                               ("minClusterActiveParallelism", pa.int64()),
                                               ("maxSessionActiveParallelism", pa.int64()),
                                               ("minSessionActiveParallelism", pa.int64())])),
    ("deletionVectorStats", pa.struct([("numDeletionVectorsRemoved", pa.int64()),
                                       ("numDeletionVectorRowsRemoved", pa.int64())])),
    ("numTableColumns", pa.int64()), ("numTableColumnsWithStats", pa.int64()),
])
RESULT_SCHEMA = pa.schema([("path", pa.string()), ("metrics", METRICS_TYPE)])


def _sizes(sizes: list[int]) -> dict[str, Any]:
    n = len(sizes)
    return {"min": min(sizes) if n else None, "max": max(sizes) if n else None,
            "avg": float(sum(sizes) / n) if n else 0.0, "totalFiles": n, "totalSize": sum(sizes)}


def _stats_columns(snapshot: Snapshot) -> int:
    n = len(snapshot.schema.fields)
    listed = snapshot.configuration.get("delta.dataSkippingStatsColumns")
    if listed:
        return len([c for c in listed.split(",") if c.strip()])
    raw = snapshot.configuration.get("delta.dataSkippingNumIndexedCols", "32")
    try:
        k = int(raw)
    except ValueError:
        k = 32
    return n if k < 0 else min(n, k)


def result_frame(spark: Any, job: _Job, metrics: OptimizeMetrics, start_ms: int, dv_rows: int) -> Any:
    """delta-spark's OPTIMIZE result: one row (table path, OptimizeMetrics struct)."""
    removed = sum(metrics.removed.sizes)
    merged = {"num": len(metrics.removed.sizes), "size": removed}
    considered = {"num": job.plan.considered, "size": removed}
    zstats = None
    cstats = None
    if job.clustered:
        cstats = {"inputZCubeFiles": {"numFiles": 0, "size": 0},
                  "inputOtherFiles": {"numFiles": considered["num"], "size": removed}, "inputNumZCubes": 0,
                  "mergedFiles": {"numFiles": merged["num"], "size": removed},
                  "numOutputZCubes": metrics.partitions_optimized}
    elif job.sort_columns is not None:
        zstats = {"strategyName": "all", "inputCubeFiles": {"num": 0, "size": 0}, "inputOtherFiles": considered,
                  "inputNumCubes": 0, "mergedFiles": merged, "numOutputCubes": metrics.partitions_optimized,
                  "mergedNumCubes": None}
    n_bins = len(job.plan.bins)
    row = {
        "numFilesAdded": len(metrics.added.sizes), "numFilesRemoved": len(metrics.removed.sizes),
        "filesAdded": _sizes(metrics.added.sizes), "filesRemoved": _sizes(metrics.removed.sizes),
        "partitionsOptimized": metrics.partitions_optimized, "zOrderStats": zstats, "clusteringStats": cstats,
        "numBins": n_bins, "numBatches": 1 if n_bins else 0, "totalConsideredFiles": metrics.total_considered_files,
        "totalFilesSkipped": metrics.total_files_skipped, "preserveInsertionOrder": job.sort_columns is None,
        "numFilesSkippedToReduceWriteAmplification": 0, "numBytesSkippedToReduceWriteAmplification": 0,
        "startTimeMs": start_ms, "endTimeMs": int(time.time() * 1000),
        "totalClusterParallelism": default_parallelism(spark), "totalScheduledTasks": n_bins,
        "autoCompactParallelismStats": None,
        "deletionVectorStats": {"numDeletionVectorsRemoved": metrics.num_deletion_vectors_removed,
                                "numDeletionVectorRowsRemoved": dv_rows},
        "numTableColumns": len(job.snapshot.schema.fields), "numTableColumnsWithStats": _stats_columns(job.snapshot),
    }
    from ..scan.reader import metadata_file_path

    path = metadata_file_path(job.snapshot.storage, "").rstrip("/")
    table = pa.Table.from_pylist([{"path": path, "metrics": row}], schema=RESULT_SCHEMA)
    return spark.createDataFrame(table)


# ----------------------------------------------------------------------------- entry point
def run_optimize(spark: Any, uri: str, storage_options: dict[str, str] | None, filters: list[str],
                 zorder: list[str] | None) -> Any:
    """Plan, run the bins on Spark, commit; delta-spark's metrics DataFrame."""
    from ...table import DeltaTable as KernelTable

    start_ms = int(time.time() * 1000)
    snapshot = KernelTable(uri, storage_options=storage_options).snapshot
    job = _plan(spark, snapshot, filters, zorder)
    plan = job.plan
    metrics = OptimizeMetrics(zorder=job.sort_columns is not None)
    metrics.total_considered_files = plan.considered
    metrics.total_files_skipped = plan.skipped
    metrics.partitions_optimized = plan.partitions
    metrics.max_bin_span_files = max((len(b.files) for b in plan.bins), default=0)
    dv_rows = 0
    if plan.bins:
        results = _run_bins(spark, job, snapshot.storage.root_uri, storage_options)
        for b, (_, adds, batches) in zip(plan.bins, results):
            metrics.removed.sizes.extend(int(f["size"] or 0) for f in b.files)
            metrics.added.sizes.extend(int(a["size"]) for a in adds)
            metrics.num_batches += batches
            metrics.num_deletion_vectors_removed += sum(1 for f in b.files if f.get("deletion_vector"))
            dv_rows += sum(int((f.get("deletion_vector") or {}).get("cardinality") or 0) for f in b.files)
        _commit(spark, job, results, metrics)
    return result_frame(spark, job, metrics, start_ms, dv_rows)


__all__ = ["DeltaOptimizeBuilder", "METRICS_TYPE", "RESULT_SCHEMA", "run_optimize"]
