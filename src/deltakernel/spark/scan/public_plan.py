"""A Delta snapshot as a Spark DataFrame built with the public DataFrame API only: the Spark Connect read path.

A Connect client cannot hand Spark a file index (there is no JVM on its side), so the kernel plans the files on
the client - partition pruning and min/max/nullCount skipping with the predicate known when the DataFrame is
built - and the plan is Spark's own Parquet scan of exactly those files:
  Project (physical -> logical names, partition values)
    [broadcast Join on `_metadata.file_path` with the files' typed partition values / row-tracking bases]
      [Filter / anti-join dropping rows deleted by deletion vectors (`_metadata.row_index`)]
        spark.read.schema(physical).parquet(<kept files>)
Spark does the scan (column pruning, row-group pruning, vectorized reader); the client sends a few hundred bytes
per file. `ConnectDeltaFrame.filter/where` re-plans with the condition, so `load(p).where(...)`,
`spark.table(t).where(...)` and the SQL router's single-table queries skip files. Unlike the classic file index,
Spark checks that each kept file exists when it analyses the plan (docs/decisions.md, "Spark Connect").
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...kernel import row_tracking as rt
from ...kernel.scan.scan import Scan
from ...kernel.snapshot import Snapshot
from .. import file_columns as fc
from .._schema import spark_path
from .deleted_rows import drop_deleted_rows
from .layout import ScanLayout, quote
from .paths import file_uris

_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
PATH_COL = fc.PATH_COL


def planned_files(snapshot: Snapshot, predicate: Any = None) -> tuple[pa.Table, int]:
    """(files the kernel keeps for `predicate`, files skipped)."""
    if predicate is None:
        return snapshot.files, 0
    scan = Scan(snapshot, predicate=predicate)
    files = scan.plan()
    return files, int(scan.metrics.files_skipped)


def scan_frame(spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table) -> Any:
    """Spark's Parquet scan of `files` with the physical columns of `read_schema`, plus `_metadata.file_path`
    as `__dk_path` (the file's URI as the file index would give it) and `_metadata.row_index` as `__dk_row`;
    rows deleted by deletion vectors are dropped. None when `files` is empty."""
    from pyspark.sql import functions as F

    if files.num_rows == 0:
        return None
    storage = snapshot.storage
    from ...kernel.paths import resolve_file

    paths = files.column("path").to_pylist()
    located = [spark_path(*resolve_file(storage, p)) for p in paths]
    reader = spark.read.schema(read_schema)
    conf = spark.conf
    many = len(located) > 32  # > 32 explicit paths would start a listing job; Spark lists them itself then
    old = conf.get(_DISCOVERY_THRESHOLD, None) if many else None
    if many:
        conf.set(_DISCOVERY_THRESHOLD, str(max(len(located) + 1, 1 << 20)))
    try:
        df = reader.parquet(*located)
    finally:
        if many:
            if old is None:
                conf.unset(_DISCOVERY_THRESHOLD)
            else:
                conf.set(_DISCOVERY_THRESHOLD, old)
    uris = file_uris(storage, files.column("path"))
    df = drop_deleted_rows(spark, df, storage, uris, files.column("deletion_vector"))
    return df.select(*[F.col(quote(n)) for n in read_schema.fieldNames()],
                     F.col("_metadata.file_path").alias(PATH_COL), F.col("_metadata.row_index").alias("__dk_row"))


def public_frame(spark: Any, snapshot: Snapshot, predicate: Any = None, *, row_tracking: bool = False) -> Any:
    """The snapshot's logical rows (files kept for `predicate`) as a DataFrame of `spark`'s kind."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    layout = ScanLayout.of(snapshot)
    materialized = [n for n in rt.materialized_names(snapshot.metadata.configuration) if n] if row_tracking else []
    files, _ = planned_files(snapshot, predicate)
    df = scan_frame(spark, snapshot, layout.read_schema(materialized), files)
    extra = [SparkField(rt.ROW_ID, LongType(), True), SparkField(rt.ROW_COMMIT_VERSION, LongType(), True)] \
        if row_tracking else []
    if df is None:
        return spark.createDataFrame([], SparkStruct(list(layout.logical_spark.fields) + extra))
    if layout.partitions or row_tracking:
        meta = fc.file_table(snapshot, files, bool(layout.partitions), row_tracking)
        df = df.join(F.broadcast(spark.createDataFrame(meta)), PATH_COL, "inner")
    select = layout.logical_columns()
    if row_tracking:
        row_id = F.col(fc.BASE_ROW_ID) + F.col("__dk_row")
        version = F.col(fc.DEFAULT_VERSION)
        id_col, version_col = rt.materialized_names(snapshot.metadata.configuration)
        if id_col:
            row_id = F.coalesce(F.col(quote(id_col)), row_id)
        if version_col:
            version = F.coalesce(F.col(quote(version_col)), version)
        select += [row_id.alias(rt.ROW_ID), version.alias(rt.ROW_COMMIT_VERSION)]
    return df.select(*select)


def _connect_base() -> type:
    try:
        from pyspark.sql.connect.dataframe import DataFrame
    except ImportError:  # pragma: no cover - pyspark without grpc: never instantiated
        return object
    return DataFrame  # type: ignore[no-any-return]


class ConnectDeltaFrame(_connect_base()):  # type: ignore[misc]
    """What `load()` returns on a Spark Connect session: a plain Connect DataFrame over the kernel-planned files
    that remembers its snapshot; `filter` / `where` re-plan the files with the condition (then Spark applies
    the condition as usual)."""

    def __init__(self, plan: Any, spark: Any, snapshot: Snapshot, predicate: Any = None,
                 row_tracking: bool = False) -> None:
        super().__init__(plan, spark)
        self._dk_snapshot = snapshot
        self._dk_predicate = predicate
        self._dk_row_tracking = row_tracking

    @classmethod
    def build(cls, spark: Any, snapshot: Snapshot, predicate: Any = None, row_tracking: bool = False) -> Any:
        df = public_frame(spark, snapshot, predicate, row_tracking=row_tracking)
        return cls(df._plan, spark, snapshot, predicate, row_tracking)

    @property
    def snapshot(self) -> Snapshot:
        return self._dk_snapshot

    def filter(self, condition: Any) -> Any:
        from .connect_filters import condition_predicate

        pred = condition_predicate(condition, self._dk_snapshot.schema)
        if pred is None:
            return super().filter(condition)
        from ...kernel.expressions.predicate import And

        combined = pred if self._dk_predicate is None else And(self._dk_predicate, pred)
        base = ConnectDeltaFrame.build(self.sparkSession, self._dk_snapshot, combined, self._dk_row_tracking)
        replanned = _plain_filter(base, condition)
        return ConnectDeltaFrame(replanned._plan, self.sparkSession, self._dk_snapshot, combined,
                                 self._dk_row_tracking)

    where = filter

    @property
    def skipped_files(self) -> int:
        """Files of this table the kernel skipped for this frame's filters."""
        return planned_files(self._dk_snapshot, self._dk_predicate)[1]


def _plain_filter(df: Any, condition: Any) -> Any:
    base = _connect_base()
    return base.filter(df, condition)  # type: ignore[attr-defined]


__all__ = ["ConnectDeltaFrame", "planned_files", "public_frame", "scan_frame"]
