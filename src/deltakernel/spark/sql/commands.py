"""The Delta-only statements (grammar.py) run on Spark: DESCRIBE HISTORY / DETAIL, OPTIMIZE, VACUUM, RESTORE,
CONVERT TO DELTA, GENERATE, ALTER TABLE ADD / DROP CONSTRAINT, DROP FEATURE, CLUSTER BY.

Each runs through `deltakernel.spark.DeltaTable`'s method of the same meaning (delta-spark's names), so SQL
and the Python API cannot differ, and returns what delta-spark's SQL returns: history / detail rows, OPTIMIZE's
(path, metrics), RESTORE's metrics row, VACUUM's `path` rows (the files a DRY RUN would delete; the table
path otherwise), an empty frame for the rest. A method the Spark `DeltaTable` does not have (yet) is a
DeltaSqlError saying so. Metadata-only ALTERs go straight to the kernel's `alter` (log-only commits).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog.tables import DeltaRef, require, sync_schema
from . import grammar as g
from .grammar import DeltaSqlError


def resolve_table(spark: Any, table: g.TableName, required: bool = True) -> DeltaRef | None:
    """A grammar table reference as a Delta table: `'path'` strings, delta.`/path`, or catalog names."""
    from ..catalog.tables import resolve

    if table.path is not None:
        return DeltaRef(table.path, table.text)
    if required:
        return require(spark, list(table.parts), table.text)
    return resolve(spark, list(table.parts), table.text)


def spark_table(spark: Any, ref: DeltaRef) -> Any:
    from ..api.tables import DeltaTable

    return DeltaTable(spark, ref.location)


def method(obj: Any, attr: str, what: str) -> Any:
    """`obj.attr`, or a DeltaSqlError when the Spark DeltaTable does not offer it (yet)."""
    fn = getattr(obj, attr, None)
    if fn is None:
        raise DeltaSqlError(f"{what} on Spark is not available yet (deltakernel.spark.DeltaTable has no {attr}())")
    return fn


def empty_frame(spark: Any) -> Any:
    """What a Delta statement without a result returns: a frame with no columns and no rows (either kind).

    Not `spark.emptyDataFrame`: PySpark 4.3 made that a method taking a schema (a property before)."""
    from pyspark.sql.types import StructType

    return spark.createDataFrame([], StructType([]))


def conf_flag(spark: Any, key: str, default: bool) -> bool:
    try:
        raw = spark.conf.get(key, None)
    except Exception:
        raw = None
    return default if raw is None else str(raw).strip().lower() == "true"


def evaluate_timestamp(run_sql: Any, expression_sql: str) -> str:
    """An ISO-8601 UTC instant for a SQL timestamp expression, evaluated by Spark in the session time zone
    (`'2024-01-01'`, `current_timestamp() - INTERVAL 1 DAY`, ...)."""
    row = run_sql(f"SELECT CAST(unix_micros(CAST(({expression_sql}) AS TIMESTAMP)) AS BIGINT) AS us").first()
    if row is None or row[0] is None:
        raise DeltaSqlError(f"the timestamp {expression_sql} is NULL")
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(row[0]))
    return instant.isoformat()


def run(spark: Any, stmt: g.Statement, run_sql: Any) -> Any:
    """Run a Delta-only statement; None when it is an ALTER TABLE on a table that is not Delta (Spark then
    gets it unchanged)."""
    if isinstance(stmt, (g.AddConstraint, g.DropConstraint, g.DropFeature, g.ClusterBy)):
        ref = resolve_table(spark, stmt.table, required=False)
        if ref is None:
            return None
        return _alter(spark, ref, stmt)
    if isinstance(stmt, g.ConvertToDelta):
        return _convert(spark, stmt)
    from .change_column import ChangeColumn

    if isinstance(stmt, ChangeColumn):
        ref = resolve_table(spark, stmt.table, required=False)
        if ref is None:
            return None
        from .change_column import run as change_column

        change_column(spark, ref.location, stmt)
        sync_schema(spark, ref)
        return empty_frame(spark)
    ref = resolve_table(spark, stmt.table)
    assert ref is not None
    if isinstance(stmt, g.DescribeHistory):
        return spark_table(spark, ref).history(stmt.limit)
    if isinstance(stmt, g.DescribeDetail):
        detail = spark_table(spark, ref).detail()
        if ref.is_catalog:
            from pyspark.sql import functions as F

            detail = detail.withColumn("name", F.lit(f"{'spark_catalog'}.{ref.db}.{ref.table}"))
        return detail
    if isinstance(stmt, g.Optimize):
        return _optimize(spark, ref, stmt)
    if isinstance(stmt, g.Vacuum):
        return _vacuum(spark, ref, stmt)
    if isinstance(stmt, g.Restore):
        return _restore(spark, ref, stmt, run_sql)
    if isinstance(stmt, g.Generate):
        method(spark_table(spark, ref), "generate", "GENERATE")(stmt.mode)
        return empty_frame(spark)
    if isinstance(stmt, g.Reorg):
        raise UnsupportedFeatureError("REORG TABLE", "REORG TABLE is not supported by deltakernel; use OPTIMIZE "
                                      "(rewrites files with deletion vectors) or ALTER TABLE ... DROP FEATURE")
    raise DeltaSqlError(f"unsupported statement: {g.head(stmt.text)}")


def _optimize(spark: Any, ref: DeltaRef, stmt: g.Optimize) -> Any:
    builder = method(spark_table(spark, ref), "optimize", "OPTIMIZE")()
    if stmt.where:
        builder = builder.where(stmt.where)
    if stmt.zorder_by:
        return builder.executeZOrderBy(*stmt.zorder_by)
    return builder.executeCompaction()


def _vacuum(spark: Any, ref: DeltaRef, stmt: g.Vacuum) -> Any:
    """VACUUM: the Spark DeltaTable's vacuum (LITE: the same with the log's files only); DRY RUN lists through
    the embedded engine (a listing of the log / the storage on the driver, nothing deleted or committed)."""
    check = conf_flag(spark, "spark.databricks.delta.retentionDurationCheck.enabled", True)
    if stmt.mode == "LITE" and not stmt.dry_run:
        from ...table import DeltaTable as KernelTable
        from ..common.schema import table_uri
        from ..maintenance.commands import vacuum as spark_vacuum

        uri = KernelTable(table_uri(ref.location)).table_uri
        spark_vacuum(spark, uri, None, stmt.retain_hours, full=False)
        return _paths_frame(spark, [_uri(uri)])
    if stmt.dry_run:
        from ...table import DeltaTable as KernelTable
        from ..common.error_classes import spark_vacuum_errors
        from ..common.schema import table_uri
        from ..maintenance.commands import table_retention_hours

        kt = KernelTable(table_uri(ref.location))
        with spark_vacuum_errors(stmt.retain_hours, table_retention_hours(kt.snapshot)):
            files = kt.vacuum(retention_hours=stmt.retain_hours, dry_run=True, enforce_retention_duration=check,
                              full=stmt.mode != "LITE")
        root = _uri(kt.table_uri).rstrip("/")
        return _paths_frame(spark, [f if ":" in f else f"{root}/{f}" for f in files])
    vacuum = method(spark_table(spark, ref), "vacuum", "VACUUM")
    if stmt.retain_hours is not None:
        vacuum(stmt.retain_hours)
    else:
        vacuum()
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    return _paths_frame(spark, [_uri(KernelTable(table_uri(ref.location)).table_uri)])


def _uri(root: str) -> str:
    """Paths as delta-spark prints them: `file:/x` for local tables."""
    return "file:" + root if os.path.isabs(root) else root


def _paths_frame(spark: Any, paths: list[str]) -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    return spark.createDataFrame([(p,) for p in paths], StructType([StructField("path", StringType(), True)]))


def _restore(spark: Any, ref: DeltaRef, stmt: g.Restore, run_sql: Any) -> Any:
    table = spark_table(spark, ref)
    if stmt.version is not None:
        return method(table, "restoreToVersion", "RESTORE")(stmt.version)
    ts = stmt.timestamp
    if ts is None:
        assert stmt.timestamp_expression is not None
        ts = evaluate_timestamp(run_sql, stmt.timestamp_expression)
    return method(table, "restoreToTimestamp", "RESTORE")(ts)


def _convert(spark: Any, stmt: g.ConvertToDelta) -> Any:
    parts = list(stmt.table.parts)
    if not (len(parts) == 2 and parts[0].lower() == "parquet"):
        raise UnsupportedFeatureError("CONVERT TO DELTA", "CONVERT TO DELTA takes a parquet.`/path` table; "
                                      "converting catalog tables is not supported")
    from ..api.tables import DeltaTable

    convert = method(DeltaTable, "convertToDelta", "CONVERT TO DELTA")
    identifier = f"parquet.`{parts[1].replace('`', '``')}`"
    if stmt.partition_schema:
        convert(spark, identifier, stmt.partition_schema)
    else:
        convert(spark, identifier)
    return empty_frame(spark)


def _alter(spark: Any, ref: DeltaRef, stmt: g.Statement) -> Any:
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    kt = KernelTable(table_uri(ref.location))
    if isinstance(stmt, g.AddConstraint):
        kt.alter.add_constraint({stmt.name: stmt.expression})
    elif isinstance(stmt, g.DropConstraint):
        kt.alter.drop_constraint(stmt.name, raise_if_not_exists=not stmt.if_exists)
    elif isinstance(stmt, g.DropFeature):
        drop = getattr(spark_table(spark, ref), "dropFeatureSupport", None)
        if drop is not None:
            drop(stmt.feature, stmt.truncate_history)
        else:
            kt.alter.drop_feature(stmt.feature, truncate_history=stmt.truncate_history)
    elif isinstance(stmt, g.ClusterBy):
        kt.alter.cluster_by(list(stmt.columns) if stmt.columns is not None else None)
    sync_schema(spark, ref)
    return empty_frame(spark)


__all__ = ["empty_frame", "evaluate_timestamp", "method", "resolve_table", "run", "spark_table"]
