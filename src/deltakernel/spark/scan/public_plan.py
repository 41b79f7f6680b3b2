"""A Delta snapshot as a Spark DataFrame built with the public DataFrame API only: the Spark Connect read path.

A Connect client cannot hand Spark a file index (there is no JVM on its side), so the kernel plans the files on
the client - partition pruning and min/max/nullCount skipping with the predicate known when the DataFrame is
built - and the plan is Spark's own Parquet scan of exactly those files:
  Project (physical -> logical names, partition values)
    [broadcast Join on `_metadata.file_path` with the files' typed partition values / row-tracking bases]
      [Filter / anti-join dropping rows deleted by deletion vectors (`_metadata.row_index`)]
        spark.read.schema(physical).parquet(<kept files>)
Spark does the scan (column pruning, row-group pruning, vectorized reader); the client sends a few hundred bytes
per file. The plan is built when the client sends a query, with the conditions pushed down to the table
(`connect_plan.py`), so every DataFrame shape skips files. Unlike the classic file index, Spark checks that each
kept file exists when it analyses the plan (docs/decisions.md, "Spark Connect").
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...kernel import row_tracking as rt
from ...kernel.scan.scan import Scan
from ...kernel.schema.column_mapping import physical_name
from ...kernel.snapshot import Snapshot
from ..common.geo_types import session_geo_types
from ..common.schema import spark_path
from ..common.task_errors import internal_plans
from . import file_columns as fc
from .deleted_rows import drop_deleted_rows
from .hive_layout import base_path, hive_discoverable
from .layout import ScanLayout, quote, row_tracking_columns
from .paths import file_uris
from .report import note_scan

_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
PATH_COL = fc.PATH_COL
MAP_LOOKUP_FILES = 2_000  # up to this many files, partition values are map lookups (a Project), else a join


def planned_files(snapshot: Snapshot, predicate: Any = None) -> tuple[pa.Table, int]:
    """(files the kernel keeps for `predicate`, files skipped)."""
    if predicate is None:
        return snapshot.files, 0
    scan = Scan(snapshot, predicate=predicate)
    files = scan.plan()
    return files, int(scan.metrics.files_skipped)


def parquet_scan(spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table, base: str | None = None) -> Any:
    """Spark's Parquet scan of `files` (physical columns of `read_schema`), rows deleted by deletion vectors
    dropped; `_metadata` stays resolvable on it. `base`: Spark's `basePath` (its partition discovery supplies
    the partition columns `read_schema` names). None when `files` is empty."""
    if files.num_rows == 0:
        return None
    from ...kernel.paths import resolve_file

    storage = snapshot.storage
    located = [spark_path(*resolve_file(storage, p)) for p in files.column("path").to_pylist()]
    reader = spark.read.schema(read_schema)
    if base is not None:
        reader = reader.option("basePath", base)
    df = reader.parquet(*located)  # Spark lists them when it analyses the plan: see keep_file_listing_on_driver
    note_scan(storage, snapshot)
    return drop_deleted_rows(spark, df, storage, file_uris(storage, files.column("path")),
                             files.column("deletion_vector"))


def keep_file_listing_on_driver(spark: Any) -> None:
    """Over Spark Connect a plan is analysed when it runs, so a conf set around building it is gone by then:
    `enable()` raises Spark's parallel partition discovery threshold for the session (unless the user set it),
    else a scan naming more than 32 files starts a listing *job* at every analysis (measured: +0.17 s on a
    40-file scan). The kept files are listed by one status call each on the driver instead."""
    try:
        current = spark.conf.get(_DISCOVERY_THRESHOLD, None)
    except Exception:
        current = None
    if current in (None, "", "32"):
        spark.conf.set(_DISCOVERY_THRESHOLD, str(1 << 20))


def scan_frame(spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table) -> Any:
    """`parquet_scan` with `_metadata.file_path` as `__dk_path` (the file's URI as the file index would give it)
    and `_metadata.row_index` as `__dk_row`. None when `files` is empty."""
    from pyspark.sql import functions as F

    df = parquet_scan(spark, snapshot, read_schema, files)
    if df is None:
        return None
    return df.select(*[F.col(quote(n)) for n in read_schema.fieldNames()],
                     F.col("_metadata.file_path").alias(PATH_COL), F.col("_metadata.row_index").alias("__dk_row"))


def map_lookups(meta: pa.Table, key: Any, types: dict[str, Any]) -> list[Any]:
    """The columns of `meta` but its `__dk_path` as lookups of `key` (a file URI column) in literal maps:
    a Project, not a join, so the scan's `_metadata` columns stay resolvable above it."""
    from pyspark.sql import functions as F

    paths = meta.column(PATH_COL).to_pylist()
    out = []
    for name in meta.column_names:
        if name == PATH_COL:
            continue
        values = meta.column(name).to_pylist()
        pairs = [x for path, v in zip(paths, values) for x in (F.lit(path), F.lit(v).cast(types[name]))]
        out.append(F.element_at(F.create_map(*pairs), key).alias(name))
    return out


@internal_plans()
def public_frame(spark: Any, snapshot: Snapshot, predicate: Any = None, *, row_tracking: bool = False,
                 files: pa.Table | None = None) -> Any:
    """The snapshot's logical rows (files kept for `predicate`, or `files` when given) as a DataFrame of
    `spark`'s kind. Built with PySpark's call-site capture off (`internal_plans`): every Column function of it
    would otherwise record a deltakernel frame as its origin - and on Connect try to import IPython, a failed
    import per call when it is not installed (measured: 9 per point query, ~20 % of the router's client time)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType
    from pyspark.sql.types import StructField as SparkField
    from pyspark.sql.types import StructType as SparkStruct

    layout = ScanLayout.of(snapshot)
    materialized = [n for n in rt.materialized_names(snapshot.metadata.configuration) if n] if row_tracking else []
    if files is None:
        files, _ = planned_files(snapshot, predicate)
    extra = [SparkField(rt.ROW_ID, LongType(), True), SparkField(rt.ROW_COMMIT_VERSION, LongType(), True)] \
        if row_tracking else []
    geo = session_geo_types(spark, snapshot.schema)  # Spark's geometry/geography types where the session has them
    if files.num_rows == 0:
        return spark.createDataFrame([], SparkStruct(list(layout.logical_schema(geo).fields) + extra))
    if layout.partitions and not row_tracking and hive_discoverable(snapshot, files):
        mode = snapshot.column_mapping_mode
        parts = [SparkField(physical_name(f, mode), layout.logical_spark[f.name].dataType, True)
                 for f in snapshot.partition_fields]
        schema = SparkStruct(list(layout.read_schema().fields) + parts)
        df = parquet_scan(spark, snapshot, schema, files, base_path(snapshot.storage))
        return df.select(*layout.logical_columns(geo))
    df = parquet_scan(spark, snapshot, layout.read_schema(materialized), files)
    if layout.partitions or row_tracking:
        meta = fc.file_table(snapshot, files, bool(layout.partitions), row_tracking)
        if meta.num_rows <= MAP_LOOKUP_FILES:
            types = {f.name: layout.logical_spark[f.name].dataType for f in snapshot.partition_fields}
            types.update({fc.BASE_ROW_ID: "long", fc.DEFAULT_VERSION: "long"})
            df = df.select("*", *map_lookups(meta, F.col("_metadata.file_path"), types),
                           F.col("_metadata.row_index").alias("__dk_row"))
        else:  # many files: a broadcast join (the frame's `_metadata` is no longer resolvable above it)
            df = df.withColumns({PATH_COL: F.col("_metadata.file_path"), "__dk_row": F.col("_metadata.row_index")})
            df = df.join(F.broadcast(spark.createDataFrame(meta)), PATH_COL, "inner")
    select = layout.logical_columns(geo)
    if row_tracking:
        select += row_tracking_columns(snapshot.metadata.configuration, fc.BASE_ROW_ID, "__dk_row",
                                       fc.DEFAULT_VERSION)
    return df.select(*select)


__all__ = ["planned_files", "public_frame", "scan_frame"]
