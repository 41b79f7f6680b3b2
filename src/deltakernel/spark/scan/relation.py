"""A Delta snapshot as a Spark DataFrame: Spark's own Parquet scan over the Delta file index.

The plan is the one delta-spark builds, minus its JVM classes:
  Project (physical -> logical names, casts of nested column-mapped structs, column comments)
    [Join with a broadcast table of per-file row-tracking bases, `readRowTracking` only]
      [Filter / anti-join dropping rows deleted by deletion vectors, by `_metadata.file_path` and `row_index`]
        LogicalRelation(HadoopFsRelation(DeltaFileIndex, partition schema, physical data schema, Parquet))
Spark's optimizer pushes every filter of the query down to the relation (through the Project, the DV filter,
joins, unions, views); at physical planning the file index keeps the files those filters can match
(`file_index.py`). Column pruning and Parquet row-group / page pruning are Spark's as for any Parquet table,
and partition values come from the listing (so Spark's dynamic partition pruning applies too).

Deletion vectors are read on the driver when the DataFrame is built (the rows they delete become a SQL
filter when few, else a broadcast anti-join): the DataFrame is pinned to its snapshot, like every
deltakernel read (docs/decisions.md, "Spark reads through a Delta file index").
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...kernel import row_tracking as rt
from ...kernel.snapshot import Snapshot
from ..common.geo_types import session_geo_types
from .deleted_rows import drop_deleted_rows
from .file_index import DeltaFileIndex, resolver_for
from .jvm_refs import jclass, scala_object, static
from .layout import ScanLayout, quote, row_tracking_columns

PATH_COL = "__dk_path"
ROW_COL = "__dk_row_index"
BASE_ROW_ID = "__dk_base_row_id"
DEFAULT_VERSION = "__dk_default_row_commit_version"


def relation_frame(spark: Any, snapshot: Snapshot, read_schema: Any, partition_schema: Any,
                   data_names: dict[str, str], files: pa.Table | None = None, *,
                   time_travel: bool = False, table: tuple[str, str] | None = None) -> tuple[Any, DeltaFileIndex]:
    """The bare scan: a DataFrame over `HadoopFsRelation(DeltaFileIndex)` with the physical columns of
    `read_schema` and the partition columns of `partition_schema` (pyspark StructTypes). `table` (database,
    name) ties the relation to its session-catalog entry, as Spark's own catalog tables are (explain names
    it; REFRESH TABLE finds it)."""
    from pyspark.sql import DataFrame

    from .callbacks import ensure_callbacks

    jvm = ensure_callbacks(spark)
    jspark = spark._jsparkSession
    data_j = _schema_j(jvm, read_schema)
    part_j = _schema_j(jvm, partition_schema)
    index = DeltaFileIndex(spark, snapshot, snapshot.files if files is None else files,
                           resolver_for(snapshot, data_names), part_j, partitioned=bool(partition_schema.fields),
                           time_travel=time_travel)
    options = static(jvm, "org.apache.spark.api.python.PythonUtils", "toScalaMap")(jclass(jvm, "java.util.HashMap")())
    fmt = jclass(jvm, "org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat")()
    relation = jclass(jvm, "org.apache.spark.sql.execution.datasources.HadoopFsRelation")(
        index, part_j, data_j, static(jvm, "scala.Option", "empty")(), fmt, options, jspark)
    if table is None:
        return DataFrame(jspark.baseRelationToDataFrame(relation), spark), index
    ident = jclass(jvm, "org.apache.spark.sql.catalyst.TableIdentifier")(table[1], jclass(jvm, "scala.Some")(table[0]))
    meta = jspark.sessionState().catalog().getTableMetadata(ident)
    plan = scala_object(jvm, "org.apache.spark.sql.execution.datasources.LogicalRelation").apply(relation, meta)
    return DataFrame(static(jvm, "org.apache.spark.sql.classic.Dataset", "ofRows")(jspark, plan), spark), index


def _schema_j(jvm: Any, schema: Any) -> Any:
    """A pyspark StructType as a JVM one (one round trip)."""
    return static(jvm, "org.apache.spark.sql.types.DataType", "fromJson")(schema.json())


def delta_frame(spark: Any, snapshot: Snapshot, *, row_tracking: bool = False, time_travel: bool = False,
                table: tuple[str, str] | None = None) -> Any:
    """The snapshot's logical rows as a DataFrame (see the module docstring)."""
    from pyspark.sql import functions as F

    layout = ScanLayout.of(snapshot)
    materialized = [n for n in rt.materialized_names(snapshot.metadata.configuration) if n] if row_tracking else []
    df, index = relation_frame(spark, snapshot, layout.read_schema(materialized), layout.partition_schema(),
                               layout.data_names(), time_travel=time_travel, table=table)
    df = _apply_deletion_vectors(spark, df, index)
    geo = session_geo_types(spark, snapshot.schema)  # Spark's geometry/geography types where the session has them
    if not row_tracking and layout.scan_is_logical(materialized, geo):
        return df  # the scan's columns are the logical schema already: no Project (py4j calls per column)
    select = layout.logical_columns(geo)
    if row_tracking:
        meta = _row_tracking_table(index)
        df = df.withColumns({PATH_COL: F.col("_metadata.file_path"), ROW_COL: F.col("_metadata.row_index")})
        df = df.join(F.broadcast(spark.createDataFrame(meta)), PATH_COL, "inner")
        select += row_tracking_columns(snapshot.metadata.configuration, BASE_ROW_ID, ROW_COL, DEFAULT_VERSION)
    return df.select(*select)


def _row_tracking_table(index: DeltaFileIndex) -> pa.Table:
    files = index.files
    return pa.table({PATH_COL: index.uris(),
                     BASE_ROW_ID: files.column("base_row_id").cast(pa.int64()),
                     DEFAULT_VERSION: files.column("default_row_commit_version").cast(pa.int64())})


def _apply_deletion_vectors(spark: Any, df: Any, index: DeltaFileIndex) -> Any:
    """Drop the rows deletion vectors delete (`deleted_rows.py`)."""
    files = index.files
    if not files.num_rows or files.column("deletion_vector").null_count == files.num_rows:
        return df
    return drop_deleted_rows(spark, df, index.snapshot.storage, index.uris(), files.column("deletion_vector"))


__all__ = ["delta_frame", "quote", "relation_frame"]
