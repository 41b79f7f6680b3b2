"""delta-spark's log-side maintenance commands on Spark: VACUUM, RESTORE, CONVERT TO DELTA, GENERATE, DROP FEATURE.

They run the embedded engine's operations on the driver: each lists, reads the log and footers, or deletes,
and none reads data rows. The one part that scales with the table is VACUUM's deletes: with
`spark.databricks.delta.vacuum.parallelDelete.enabled=true` they run as a Spark job (keys spread over tasks,
each deleting its share in bulk), else on the driver (bulk deletes, a few requests in flight on object stores).

- `vacuum(retentionHours)`: the full VACUUM delta-spark runs (the table's storage listed, unreferenced files
  older than the retention deleted), `VACUUM START` / `VACUUM END` commits - also when nothing is deleted, on
  the stores delta-spark logs VACUUM on (`should_log_vacuum`); a retention below the table's
  `delta.deletedFileRetentionDuration` raises VacuumRetentionError unless
  `spark.databricks.delta.retentionDurationCheck.enabled=false`. Returns an empty DataFrame, as delta-spark.
- `restoreToVersion` / `restoreToTimestamp`: the RESTORE commit; returns delta-spark's one-row metrics frame
  (table_size_after_restore, num_of_files_after_restore, num_removed_files, num_restored_files,
  removed_files_size, restored_files_size) read back from the commit's operationMetrics.
- `convertToDelta(spark, "parquet.`/path`", partitionSchema)`: footers read on the driver (threads), which is
  fine for thousands of files; a directory of millions of files would want a Spark job reading them.
- `generate("symlink_format_manifest")`: `operations/maintenance/manifest.py`.
- `dropFeatureSupport(name, truncateHistory)`: `operations/drop_feature.py`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

from ...errors import (
    DeltaError,
    FeatureDropWaitError,
    InvalidArgumentValueError,
    RestoreError,
    UnsupportedFeatureError,
)
from ...kernel.snapshot import Snapshot
from ...operations.maintenance.vacuum import (
    DELETE_BATCH,
    advanced_snapshot,
    commit_vacuum_marker,
    plan_vacuum,
    retention_ms,
)
from ..common import error_classes as ec
from ..common.error_classes import spark_vacuum_errors
from ..common.task_errors import marked, task_errors
from ._common import (
    commit_info,
    commit_properties,
    conf,
    conf_flag,
    executor_storage,
    long_metric,
    map_partitions,
    spark_timestamp,
)

log = logging.getLogger(__name__)

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"
PARALLEL_DELETE_CONF = "spark.databricks.delta.vacuum.parallelDelete.enabled"
VACUUM_LOGGING_CONF = "spark.databricks.delta.vacuum.logging.enabled"
#: the storage schemes delta-spark records VACUUM START / END on without VACUUM_LOGGING_CONF (VacuumCommand)
VACUUM_LOGGED_SCHEMES = ("wasbs", "wasbss", "abfs", "abfss", "adl", "gs", "file", "hdfs")
DISCOVERY_PARALLELISM_CONF = "spark.sql.sources.parallelPartitionDiscovery.parallelism"
RESTORE_COLUMNS = ("table_size_after_restore", "num_of_files_after_restore", "num_removed_files",
                   "num_restored_files", "removed_files_size", "restored_files_size")
_RESTORE_METRICS = ("tableSizeAfterRestore", "numOfFilesAfterRestore", "numRemovedFiles", "numRestoredFiles",
                    "removedFilesSize", "restoredFilesSize")
_IDENTIFIER = re.compile(r"^\s*(parquet|delta)\s*\.\s*`((?:[^`]|``)+)`\s*$", re.IGNORECASE)


def _load(uri: str, storage_options: dict[str, str] | None) -> Snapshot:
    from ...table import DeltaTable as KernelTable

    return KernelTable(uri, storage_options=storage_options).snapshot


# ----------------------------------------------------------------------------- VACUUM
def _delete_task(uri: str, options: dict[str, str] | None) -> Any:
    def run(keys: Iterator[str]) -> Iterator[int]:
        with marked():
            storage = executor_storage(uri, options)
            batch: list[str] = []
            done = 0
            for key in keys:
                batch.append(key)
                if len(batch) >= DELETE_BATCH:
                    storage.delete_many(batch)
                    done += len(batch)
                    batch = []
            if batch:
                storage.delete_many(batch)
                done += len(batch)
        yield done
    return run


def should_log_vacuum(spark: Any, root_uri: str) -> bool:
    """delta-spark's `shouldLogVacuum`: `spark.databricks.delta.vacuum.logging.enabled` when set, else whether the
    table's storage is one delta-spark records VACUUM START / END on (file, hdfs, Azure, GCS; not S3)."""
    raw = conf(spark, VACUUM_LOGGING_CONF)
    if raw is not None:
        return conf_flag(spark, VACUUM_LOGGING_CONF, True)
    scheme = root_uri.split(":", 1)[0].lower() if ":" in root_uri else "file"
    return scheme in VACUUM_LOGGED_SCHEMES


def _delete_on_driver(storage: Any, keys: list[str]) -> int:
    done = 0
    for i in range(0, len(keys), DELETE_BATCH):
        batch = keys[i : i + DELETE_BATCH]
        storage.delete_many(batch)
        done += len(batch)
    return done


def _delete_in_tasks(spark: Any, uri: str, storage_options: dict[str, str] | None, keys: list[str]) -> int:
    parallelism = int(conf(spark, DISCOVERY_PARALLELISM_CONF, "10000") or 10000)
    slices = max(1, min(parallelism, -(-len(keys) // DELETE_BATCH)))
    with task_errors():
        counts = map_partitions(spark, keys, _delete_task(uri, storage_options), slices)
    log.info("Spark VACUUM of %s deleted in %d tasks", uri, slices)
    return sum(int(c) for c in counts)


def _spark_vacuum(spark: Any, snapshot: Snapshot, storage_options: dict[str, str] | None,
                  retention_hours: float | None, enforce: bool, full: bool, parallel: bool) -> None:
    """delta-spark's non-dry-run VACUUM (`VacuumCommand.gc`): the kernel's plan, then - whatever the number of
    files, none included - a `VACUUM START` commit, the deletes (on the driver, or as a Spark job with parallel
    delete), and a `VACUUM END` commit, COMPLETED or FAILED; the two commits only where `should_log_vacuum`.
    The embedded `DeltaTable.vacuum` follows deltalake instead, which commits nothing when nothing is deleted."""
    storage = snapshot.storage
    plan = plan_vacuum(storage, snapshot, retention_hours=retention_hours, enforce_retention_duration=enforce,
                       full=full)
    logged = should_log_vacuum(spark, storage.root_uri)
    props = commit_properties(spark)
    after_start = snapshot
    if logged:
        params: dict[str, Any] = {"retentionCheckEnabled": plan.enforce,
                                  "defaultRetentionMillis": plan.default_retention_ms}
        if retention_hours is not None:  # delta-spark records the retention only when one was given
            params["specifiedRetentionMillis"] = plan.retention_ms
        start = commit_vacuum_marker(storage, snapshot, "VACUUM START", params,
                                     {"numFilesToDelete": len(plan.files), "sizeOfDataToDelete": plan.size_bytes},
                                     props, None)
        after_start = advanced_snapshot(storage, snapshot, start)
    deleted = 0
    status = "FAILED"
    try:
        if plan.files:
            deleted = (_delete_in_tasks(spark, storage.root_uri, storage_options, plan.files) if parallel
                       else _delete_on_driver(storage, plan.files))
        status = "COMPLETED"
    finally:
        if logged:  # delta-spark: a failed VACUUM's END has its status and no metrics
            metrics = {"numDeletedFiles": deleted, "numVacuumedDirectories": 0} if status == "COMPLETED" else {}
            commit_vacuum_marker(storage, after_start, "VACUUM END", {"status": status}, metrics, props, None)
    log.info("Spark VACUUM of %s deleted %d files", storage.root_uri, deleted)


def vacuum(spark: Any, uri: str, storage_options: dict[str, str] | None, retention_hours: float | None,
           full: bool = True) -> Any:
    """delta-spark's `DeltaTable.vacuum` (and SQL `VACUUM`, `full=False` for LITE): an empty DataFrame."""
    from pyspark.sql.types import StructType

    if retention_hours is not None:
        if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)):
            raise DeltaError(f"retentionHours needs to be a number but got {type(retention_hours)}")
        retention_hours = float(retention_hours)
    enforce = conf_flag(spark, RETENTION_CHECK_CONF, True)
    snapshot = _load(uri, storage_options)
    with spark_vacuum_errors(retention_hours, table_retention_hours(snapshot)):
        _spark_vacuum(spark, snapshot, storage_options, retention_hours, enforce, full,
                      conf_flag(spark, PARALLEL_DELETE_CONF, False))
    return spark.createDataFrame([], StructType([]))


def table_retention_hours(snapshot: Snapshot) -> float:
    """The table's `delta.deletedFileRetentionDuration` in hours (what delta-spark's check message names)."""
    try:
        _, default_ms = retention_ms(snapshot, None, False)
    except DeltaError:
        return 168.0
    return default_ms / 3_600_000


# ----------------------------------------------------------------------------- RESTORE
def restore(spark: Any, uri: str, storage_options: dict[str, str] | None, version: int | None = None,
            timestamp: str | None = None) -> Any:
    """delta-spark's `restoreToVersion` / `restoreToTimestamp`: the RESTORE commit and its metrics frame."""
    from pyspark.sql.types import LongType, StructField, StructType

    from ...operations.maintenance.restore import restore as restore_table

    if timestamp is not None:
        if not isinstance(timestamp, str):
            raise RestoreError(f"timestamp needs to be a string but got '{type(timestamp)}'.")
        target: Any = spark_timestamp(spark, timestamp)
    else:
        if isinstance(version, bool) or not isinstance(version, int):
            raise RestoreError(f"version needs to be an int but got '{type(version)}'.")
        target = version
    snapshot = _load(uri, storage_options)
    if timestamp is not None:
        _check_restore_timestamp(snapshot, timestamp, target)  # the commit keeps `datetime` as its parameter
    _, committed = restore_table(snapshot.storage, snapshot, target, commit_properties=commit_properties(spark))
    info = commit_info(snapshot.storage, committed)
    row = tuple(long_metric(info, k) for k in _RESTORE_METRICS)
    schema = StructType([StructField(c, LongType(), True) for c in RESTORE_COLUMNS])
    return spark.createDataFrame([row], schema)


def _check_restore_timestamp(snapshot: Snapshot, text: str, target: Any) -> None:
    """delta-spark's RESTORE TIMESTAMP checks: before the first commit still in the log or after the latest
    one is an error with its class (`DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER` / `..._GREATER`)."""
    from ...kernel.log.time_travel import format_timestamp_ms
    from ..common.time_bounds import version_within_log

    def too_early(earliest: int) -> Exception:
        return RestoreError(ec.classed(ec.RESTORE_TIMESTAMP_EARLIER, f"Cannot restore table to timestamp ({text}) "
                                       "as it is before the earliest version available. Please use a timestamp "
                                       f"after ({format_timestamp_ms(earliest)})."))

    def too_late(latest: int) -> Exception:
        return RestoreError(ec.classed(ec.RESTORE_TIMESTAMP_GREATER, f"Cannot restore table to timestamp ({text}) "
                                       "as it is after the latest version available. Please use a timestamp "
                                       f"before ({format_timestamp_ms(latest)})."))

    version_within_log(snapshot, int(target.timestamp() * 1000), too_early, too_late)


# ----------------------------------------------------------------------------- CONVERT TO DELTA
def parse_identifier(identifier: str) -> tuple[str, str]:
    """`parquet.\\`/path\\`` / `delta.\\`/path\\`` -> (format, path)."""
    m = _IDENTIFIER.match(identifier or "") if isinstance(identifier, str) else None
    if m is None:
        raise DeltaError(f"convertToDelta needs a path identifier such as parquet.`/path/to/table`, got "
                         f"{identifier!r} (catalog tables are not supported by deltakernel here)")
    return m.group(1).lower(), m.group(2).replace("``", "`")


def _partition_schema(spark: Any, schema: Any) -> Any:
    from pyspark.sql.types import StructType

    from ..common.schema import from_spark_schema
    from ..kinds import kind_of

    if schema is None:
        return None
    if isinstance(schema, str):
        parsed = kind_of(spark).types.parse_columns(schema)
        if not isinstance(parsed, StructType):
            raise DeltaError(f"partitionSchema {schema!r} is not a list of columns (e.g. 'part int')")
        schema = parsed
    if not isinstance(schema, StructType):
        raise DeltaError(f"partitionSchema must be a DDL string or a StructType, got {type(schema)}")
    return from_spark_schema(schema) if schema.fields else None


def convert_to_delta(spark: Any, identifier: str, partition_schema: Any = None,
                     storage_options: dict[str, str] | None = None) -> str:
    """delta-spark's `DeltaTable.convertToDelta`: the Parquet directory becomes a Delta table (a Delta table
    already there is left as it is); returns the table path."""
    from ...operations.create.convert import convert_to_deltalake
    from ..common.schema import table_uri

    fmt, path = parse_identifier(identifier)
    uri = table_uri(path)
    parts = _partition_schema(spark, partition_schema)
    from ...table import DeltaTable as KernelTable

    if fmt == "delta":
        if not KernelTable.is_deltatable(uri, storage_options):
            raise DeltaError(f"{path!r} is not a Delta table")
        return path
    convert_to_deltalake(uri, mode="ignore", partition_by=parts, partition_strategy="hive" if parts else None,
                         storage_options=storage_options, commit_properties=commit_properties(spark))
    return path


# ----------------------------------------------------------------------------- GENERATE, DROP FEATURE
def generate(uri: str, storage_options: dict[str, str] | None, mode: str) -> None:
    """delta-spark's `generate(mode)`: the full symlink format manifest."""
    from ...operations.maintenance.manifest import generate as generate_manifest

    generate_manifest(_load(uri, storage_options), mode)


def drop_feature_support(uri: str, storage_options: dict[str, str] | None, feature: str,
                         truncate_history: bool | None) -> None:
    """delta-spark's `dropFeatureSupport`: FeatureDropWaitError while old versions still use a reader-writer
    feature and `truncateHistory` is not set."""
    from ...operations.alter.drop_feature import drop_feature

    if not isinstance(feature, str):
        raise InvalidArgumentValueError(f"featureName needs to be a string but got '{type(feature)}'.")
    if truncate_history is not None and not isinstance(truncate_history, bool):
        raise InvalidArgumentValueError(f"truncateHistory needs to be a bool but got '{type(truncate_history)}'.")
    snapshot = _load(uri, storage_options)
    _check_drop(snapshot, feature, truncate_history)
    try:
        drop_feature(snapshot.storage, snapshot, feature, truncate_history=bool(truncate_history))
    except FeatureDropWaitError as exc:
        raise ec.reworded(exc, ec.classed(ec.FEATURE_DROP_WAIT, f"Dropping {exc.feature} was partially successful. "
                                          + str(exc))) from None


def _check_drop(snapshot: Snapshot, feature: str, truncate_history: bool | None) -> None:
    """delta-spark's refusals, with its error classes, before anything is committed: an unknown feature, one the
    protocol does not have, one another feature depends on, one deltakernel cannot drop, and `truncateHistory`
    for a writer-only feature (nothing in the history to truncate)."""
    from ...kernel.protocol.select import FEATURE_DEPENDENCIES, features_in_effect
    from ...operations.alter.drop_feature import WITH_HISTORY, WRITER_ONLY
    from ...operations.alter.table_properties import feature_name

    try:
        name = feature_name(feature)
    except DeltaError:
        raise DeltaError(ec.classed(ec.FEATURE_DROP_UNSUPPORTED_CLIENT, f"Dropping {feature} is not supported by "
                                    "this client: it is not a table feature deltakernel knows.")) from None
    present = features_in_effect(snapshot.protocol)
    if name not in present:
        raise DeltaError(ec.classed(ec.FEATURE_DROP_NOT_PRESENT, f"Cannot drop {name} from this table because it is "
                                    "not currently present in the table's protocol."))
    users = sorted(other for other, deps in FEATURE_DEPENDENCIES.items() if name in deps and other in present)
    if users:
        raise DeltaError(ec.classed(ec.FEATURE_DROP_DEPENDENT, f"Cannot drop table feature {name} because some other "
                                    f"features ({', '.join(users)}) in this table depends on {name}. Consider "
                                    "dropping them first before dropping this feature."))
    if name not in WRITER_ONLY | WITH_HISTORY:
        raise UnsupportedFeatureError(name, ec.classed(ec.FEATURE_DROP_UNSUPPORTED_CLIENT, f"Dropping {name} is not "
                                                       "supported by deltakernel."))
    if truncate_history and name in WRITER_ONLY:
        raise DeltaError(ec.classed(ec.FEATURE_DROP_TRUNCATION_NOT_ALLOWED, "The particular feature does not "
                                    "require history truncation."))


__all__ = ["RESTORE_COLUMNS", "convert_to_delta", "drop_feature_support", "generate", "parse_identifier",
           "restore", "vacuum"]
