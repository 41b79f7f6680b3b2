"""Writes: Spark executors write the Parquet files, the driver commits one kernel transaction.

`write(df, path, mode=..., partitionBy=..., **options)` runs the write pipeline
(`operations/write/pipeline.py`) on the driver with a `write_files` callback: once the table's metadata is
planned (schema evolution, column mapping, protocol), the callback runs one Spark job and returns the add
actions; the driver commits them (conflicts and retries are the kernel Transaction's). A failed job raises
before anything is committed. Two kinds of job:
- native (`native_write`, the default where it is exact): Spark's own Parquet writer, stats from the
  footers - native write speed;
- `mapInArrow` (everything else: constraints, replaceWhere, casts, nested lists/maps, ...): every task
  casts and checks its rows with the kernel and writes files with `write_data_files`, returning the add
  actions as rows.
IDENTITY columns the data does not supply are generated as Spark Columns before the job (`identity.py`); their
new high-water marks, from the written files, are committed with the adds.
The writer option `deltakernel.writePath` (or conf `spark.deltakernel.writePath`) = auto | native | arrow
forces one; `native` raises when it would not be exact.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...errors import DeltaError
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.schema.types import ArrayType, MapType, StructField, StructType
from ...operations.commit_options import CommitProperties, Transaction
from ...storage import storage_for_uri
from ..common.confs import get_confs
from ..common.geo_types import wkb_batches
from ..common.schema import Options, from_spark_schema, spark_path, storage_options, table_uri
from ..common.task_errors import marked, task_errors
from .identity import high_water_marks, task_metadata, with_identity_values
from .native_write import native_or_fallback, write_native, write_path_choice

_log = logging.getLogger(__name__)

_MODES = {"append": "append", "overwrite": "overwrite", "error": "error", "errorifexists": "error",
          "default": "error", "ignore": "ignore"}
ENGINE_INFO = "deltakernel-spark/0.1.0"
_ADD_SCHEMA = "add string, rows long"
ARROW_BATCH_ROWS = 131072


@dataclass(frozen=True)
class WritePlan:
    """Everything a task needs to write its files (pickled to the executors)."""

    table_uri: str
    storage_options: dict[str, str] | None
    metadata: Metadata
    protocol: Protocol
    predicate: str | None
    max_rows_per_file: int | None
    target_file_size: int | None


def write_batches(plan: WritePlan, batches: Iterator[pa.RecordBatch]) -> tuple[list[dict[str, Any]], int]:
    """One task's share: conform, check and write `batches`; returns (add actions, rows written)."""
    from ...operations.write.data_files import write_data

    storage = storage_for_uri(plan.table_uri, plan.storage_options)
    batches = wkb_batches(batches, plan.metadata.schema)  # Spark geometry/geography values -> their WKB
    adds, rows, _ = write_data(storage, batches, plan.metadata, plan.protocol, predicate=plan.predicate or None,
                               target_file_size=plan.target_file_size, max_rows_per_file=plan.max_rows_per_file,
                               evolve_hint="use mergeSchema")
    return adds, rows


def _task(plan: WritePlan) -> Any:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with marked():  # a DeltaError reaches the driver as itself (spark/_errors.py)
            adds, n = write_batches(plan, batches)
        out = [json.dumps(a, separators=(",", ":")) for a in adds]
        adds_col: list[str | None] = list(out) or [None]
        yield pa.RecordBatch.from_pydict({"add": adds_col, "rows": [n] + [0] * (max(len(out), 1) - 1)},
                                         schema=pa.schema([("add", pa.string()), ("rows", pa.int64())]))
    return run


# ----------------------------------------------------------------------------- options -> WriteRequest
def arrow_schema_of(df: Any) -> pa.Schema:
    """The Arrow schema of the table columns `df` writes (timestamps as UTC instants, VARIANT as the kernel's
    variant type). Every column, nested ones too, is nullable, as delta-spark makes them (`asNullable`): a
    non-nullable DataFrame column (`spark.range`) must not turn into a NOT NULL table column."""
    return table_arrow_schema(df.schema)


def table_arrow_schema(spark_schema: Any) -> pa.Schema:
    """`arrow_schema_of` for a pyspark StructType."""
    from ...kernel.schema.arrow import to_arrow_schema

    return to_arrow_schema(as_nullable(from_spark_schema(spark_schema)), include_metadata=False)


def as_nullable(t: Any) -> Any:
    """`t` with every field, element and map value nullable (delta-spark's `asNullable`)."""
    if isinstance(t, StructType):
        return StructType(tuple(StructField(f.name, as_nullable(f.type), True, f.metadata) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(as_nullable(t.element_type), True)
    if isinstance(t, MapType):
        return MapType(as_nullable(t.key_type), as_nullable(t.value_type), True)
    return t


def plan_write(kwargs: dict[str, Any], schema: pa.Schema) -> tuple[Any, Any]:
    """The metadata and protocol a write with `write_arguments` would commit, without writing or committing (the
    table's current ones when the write would be a no-op)."""
    from ...operations.write.pipeline import planned_table_state
    from ...operations.write.request import WriteRequest

    k = dict(kwargs)
    return planned_table_state(k.pop("table_or_uri"), schema, WriteRequest.of(**k))


_AUTO_MERGE = "spark.databricks.delta.schema.autoMerge.enabled"
_OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
_RECORDS_PER_FILE = "spark.sql.files.maxRecordsPerFile"
_WRITE_CONFS = (_AUTO_MERGE, _OVERWRITE_MODE, _USER_METADATA, _RECORDS_PER_FILE)


def write_arguments(spark: Any, path: str, mode: str, partition_by: list[str] | None,
                    opts: Options) -> dict[str, Any]:
    """WriteRequest arguments for delta-spark's writer options (see docs/decisions.md, "PySpark engine")."""
    m = _MODES.get((mode or "error").lower())
    if m is None:
        raise DeltaError(f"unknown save mode {mode!r}; use append, overwrite, error, errorifexists or ignore")
    # partitions_last=False: after mergeSchema, delta-spark keeps the table's column order and appends
    kwargs: dict[str, Any] = {"mode": m, "engine_info": ENGINE_INFO, "storage_options": storage_options(opts),
                              "partitions_last": False}
    if partition_by:
        kwargs["partition_by"] = list(partition_by)
    if opts.get("replaceWhere"):
        if m != "overwrite":
            raise DeltaError("replaceWhere needs mode('overwrite')")
        kwargs["predicate"] = opts["replaceWhere"]
    overwrite_schema = opts.flag("overwriteSchema")
    confs = get_confs(spark, _WRITE_CONFS)  # one round trip on Connect (`common/confs.py`)
    merge = opts.flag("mergeSchema") or (confs[_AUTO_MERGE] or "false").strip().lower() == "true"
    if overwrite_schema and m == "overwrite" and not opts.get("replaceWhere"):
        kwargs["schema_mode"] = "overwrite"
    elif merge:
        kwargs["schema_mode"] = "merge"
    pom = opts.get("partitionOverwriteMode") or confs[_OVERWRITE_MODE]
    if pom and pom.lower() == "dynamic" and m == "overwrite":
        if opts.get("replaceWhere"):
            raise DeltaError("replaceWhere cannot be combined with partitionOverwriteMode=dynamic")
        kwargs["partition_overwrite_mode"] = "dynamic"
    app_id, app_version = opts.get("txnAppId"), opts.get("txnVersion")
    if (app_id is None) != (app_version is None):
        raise DeltaError("txnAppId and txnVersion must be set together")
    meta = opts.get("userMetadata") or confs[_USER_METADATA]
    kwargs["commit_properties"] = CommitProperties(
        custom_metadata={"userMetadata": meta} if meta else None,
        app_transactions=[Transaction(app_id, int(app_version))] if app_id is not None else [],
    )
    conf = {k_orig: v for k_orig, v in opts.items() if k_orig.startswith("delta.")}
    if conf:
        kwargs["configuration"] = _property_names(conf)
    per_file = opts.int("maxRecordsPerFile") or int(confs[_RECORDS_PER_FILE] or 0)
    kwargs["max_rows_per_file"] = per_file if per_file and per_file > 0 else None
    kwargs["table_or_uri"] = table_uri(path)
    return kwargs


_PROPERTY_CASE = {p.lower(): p for p in (
    "delta.appendOnly", "delta.enableChangeDataFeed", "delta.columnMapping.mode", "delta.enableDeletionVectors",
    "delta.enableRowTracking", "delta.enableInCommitTimestamps", "delta.checkpointInterval",
    "delta.logRetentionDuration",
    "delta.deletedFileRetentionDuration", "delta.targetFileSize", "delta.checkpointPolicy", "delta.enableTypeWidening",
    "delta.dataSkippingNumIndexedCols", "delta.dataSkippingStatsColumns", "delta.minReaderVersion",
    "delta.minWriterVersion", "delta.isolationLevel", "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct", "delta.enableExpiredLogCleanup", "delta.randomizeFilePrefixes",
)}


def _property_names(conf: dict[str, str]) -> dict[str, str | None]:
    """Options are lower-cased by Spark; table properties keep Delta's camelCase spelling."""
    return {_PROPERTY_CASE.get(k.lower(), k): v for k, v in conf.items()}


def _conf(spark: Any, key: str) -> str | None:
    try:
        v = spark.conf.get(key, None)
    except Exception:
        return None
    return str(v) if v is not None else None


def _conf_true(spark: Any, key: str) -> bool:
    return (_conf(spark, key) or "false").strip().lower() == "true"


# ----------------------------------------------------------------------------- entry point
def write(df: Any, path: str, mode: str = "error", partitionBy: list[str] | str | None = None,
          _table: TableCreation | None = None, **options: Any) -> None:
    """`df.write.format("delta")...save(path)` with every mode, partitionBy and delta-spark's options.

    `_table`: the write creates / replaces a table (CREATE TABLE AS SELECT, saveAsTable): its operation name,
    comment, properties and clustering go into the same single commit as the data."""
    from ...operations.write.pipeline import execute_write
    from ...operations.write.request import WriteRequest

    if isinstance(partitionBy, str):
        partitionBy = [partitionBy]
    opts = Options(options)
    kwargs = write_arguments(df.sparkSession, path, mode, partitionBy, opts)
    uri = kwargs.pop("table_or_uri")
    if _table is not None:
        kwargs.update(_table.write_arguments(kwargs.get("configuration")))
    target = _existing_table(uri, kwargs.get("storage_options"))  # loaded once: the write reads at it
    schema = arrow_schema_of(df)

    choice = write_path_choice(df.sparkSession, opts)

    def write_files(metadata: Metadata, protocol: Protocol) -> tuple[list[dict[str, Any]], int, dict[str, int]]:
        # identity columns the data does not supply: generated by the executors (spark/identity.py)
        frame, generated = with_identity_values(df, metadata, protocol)
        adds, rows = _write_job(frame, path, uri, kwargs, choice, task_metadata(metadata, generated), protocol)
        return adds, rows, high_water_marks(df.sparkSession, path, metadata, generated, adds)

    execute_write(target if target is not None else uri, schema.empty_table(), WriteRequest.of(**kwargs),
                  write_files=write_files)


def _write_job(df: Any, path: str, uri: str, kwargs: dict[str, Any], choice: str, metadata: Metadata,
               protocol: Protocol) -> tuple[list[dict[str, Any]], int]:
    """One Spark job writing `df`'s files (native Parquet where exact, else mapInArrow); (adds, rows)."""
    options = kwargs.get("storage_options")
    storage = storage_for_uri(uri, options)
    if getattr(storage, "catalog", None) is not None:  # a catalog's table name (uc://c.s.t): tasks write files
        uri, options = storage.root_uri, dict(getattr(storage, "storage_options", None) or {})  # at its location,
        path = spark_path(storage, "")  # with no catalog calls of their own
    if choice != "arrow":
        frame = native_or_fallback(df.sparkSession, df, storage, metadata, protocol, kwargs.get("predicate"),
                                   choice, "write")
        if frame is not None:
            return write_native(frame, path, uri, options, metadata, kwargs.get("max_rows_per_file"))
    plan = WritePlan(uri, options, metadata, protocol, kwargs.get("predicate"),
                     kwargs.get("max_rows_per_file"), _target_size(metadata))
    with arrow_batch_rows(df.sparkSession, ARROW_BATCH_ROWS), task_errors():
        rows = df.mapInArrow(_task(plan), _ADD_SCHEMA).collect()
    adds = [json.loads(r["add"]) for r in rows if r["add"] is not None]
    return adds, sum(int(r["rows"]) for r in rows)


def _existing_table(uri: str, storage_options: dict[str, str] | None) -> Any:
    """The Delta table at `uri` (a kernel DeltaTable at its latest version), or None when there is none yet."""
    from ...table import DeltaTable as KernelTable

    if not KernelTable.is_deltatable(uri, storage_options):
        return None
    return KernelTable(uri, storage_options=storage_options)


@dataclass
class TableCreation:
    """What a table-creating write (CTAS, saveAsTable) records besides the data, in its one commit."""

    operation: str
    description: str | None = None
    properties: dict[str, str] | None = None
    cluster_by: list[str] | None = None

    def write_arguments(self, configuration: dict[str, str | None] | None) -> dict[str, Any]:
        conf: dict[str, str | None] = {**(configuration or {}), **_property_names(dict(self.properties or {}))}
        out: dict[str, Any] = {"operation": self.operation}
        if self.description is not None:
            out["description"] = self.description
        if self.cluster_by:
            from functools import partial

            from ...operations.maintenance.optimize.clustering import CLUSTERING_FEATURE, creation_domain

            conf[f"delta.feature.{CLUSTERING_FEATURE}"] = "supported"
            out["domain_metadata"] = partial(creation_domain, columns=list(self.cluster_by))
        if conf:
            out["configuration"] = conf
        return out


@contextlib.contextmanager
def arrow_batch_rows(spark: Any, n: int) -> Iterator[None]:
    """Bigger Arrow batches into the write tasks: Spark's default (10k rows) makes per-batch costs dominate."""
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = _conf(spark, key)
    if old is not None and int(old) != 10000:  # the user chose a size: keep it
        yield
        return
    spark.conf.set(key, str(n))
    try:
        yield
    finally:
        spark.conf.set(key, old) if old is not None else spark.conf.unset(key)


def _target_size(metadata: Metadata) -> int | None:
    raw = metadata.configuration.get("delta.targetFileSize")
    return int(raw) if raw is not None and raw.strip().isdigit() else None


__all__ = ["TableCreation", "WritePlan", "arrow_batch_rows", "arrow_schema_of", "as_nullable", "plan_write",
           "table_arrow_schema", "write", "write_arguments", "write_batches"]
