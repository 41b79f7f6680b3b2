"""The native write path: Spark's own Parquet writer writes the data files, the driver reads their footers.

Why: a `mapInArrow` write pays for converting every row to Arrow and shipping it to a Python worker; on
the benchmark that conversion alone costs about as much as Spark's whole native Parquet write. Here the
job is a plain `df.write.parquet`, so the write runs at native speed; the driver then reads one footer per
file (row counts, null counts, min/max - `footer_stats`) and returns `add` actions for the kernel commit.

When: only where the result is exactly what the kernel's own writer would produce (`native_frame` raises
`Ineligible` otherwise and the caller falls back to `mapInArrow`): no replaceWhere, nothing for the
constraints `Enforcer` (CHECK, invariants, generated/identity/default columns, NOT NULL unless the Spark
column is non-nullable itself), schemas of
structs and primitives only, input columns of exactly the table's types, and for partitioned tables no
partition types whose Spark directory text is Delta's serialization (string, integers, boolean, date).

How the job's files are known without listing the table: Spark writes into a fresh staging directory
inside the table (its own committer, `_temporary` cleaned up by Spark, no `_SUCCESS`); only that
directory is listed. On local storage the files are then renamed into the table root (Spark Delta's layout:
`part=x/part-00000-<uuid>-c000.snappy.parquet`, or `<random prefix>/part-...` under column mapping and
`delta.randomizeFilePrefixes`) and the staging directory removed; on object stores, where a rename is a
copy, they stay under the staging prefix (any relative path is valid Delta; partitioned random-prefix
tables then take the mapInArrow path). A failed
job commits nothing; the staging directory is removed best effort (orphans are harmless, VACUUM removes
them).

Session settings the job needs (set for the job, then restored): INT64 microsecond timestamps (INT96 has
no footer statistics), proleptic-Gregorian dates (no legacy rebase), Parquet field ids (column mapping).
Only those the table's columns need and the session does not already have are set (`job_confs`): on
Connect every conf request is a round trip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow.parquet as pq

from ...errors import DeltaError, SchemaError
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.scan.partition_values import serialize_partition_value
from ...kernel.schema.column_mapping import physical_name, to_physical_schema
from ...kernel.schema.types import DataType, DecimalType, PrimitiveType, StructType, schema_to_json
from ...operations.files.layout import (
    HIVE_DEFAULT_PARTITION,
    random_prefix,
    random_prefix_length,
    unescape_path_name,
    uri_encode_path,
)
from ...storage import storage_for_uri
from ...storage.base import Storage
from ...storage.local import LocalStorage
from ..common.schema import spark_path, to_spark_schema
from .footer_stats import FooterStats

_log = logging.getLogger(__name__)

WRITE_PATH_OPTION = "deltakernel.writePath"  # auto (default) | native | arrow
WRITE_PATH_CONF = "spark.deltakernel.writePath"
_PRIMITIVES = {"byte", "short", "integer", "long", "float", "double", "string", "binary", "boolean", "date",
               "timestamp", "timestamp_ntz"}
_PARTITION_TYPES = {"string", "byte", "short", "integer", "long", "boolean", "date"}
_TS_TYPE = "spark.sql.parquet.outputTimestampType"
_DATETIME_REBASE = "spark.sql.parquet.datetimeRebaseModeInWrite"
_INT96_REBASE = "spark.sql.parquet.int96RebaseModeInWrite"
_FIELD_IDS = "spark.sql.parquet.fieldId.write.enabled"
_LEGACY_FORMAT = "spark.sql.parquet.writeLegacyFormat"
_JOB_CONFS = {_TS_TYPE: "TIMESTAMP_MICROS", _DATETIME_REBASE: "CORRECTED", _INT96_REBASE: "CORRECTED",
              _FIELD_IDS: "true", _LEGACY_FORMAT: "false"}
#: Spark 4's defaults of those confs: an unset conf already equal to what the job needs is left alone
_SPARK_DEFAULTS = {_TS_TYPE: "INT96", _DATETIME_REBASE: "CORRECTED", _INT96_REBASE: "CORRECTED",
                   _FIELD_IDS: "true", _LEGACY_FORMAT: "false"}
#: every conf the job may need, for callers that read them with their own confs (one round trip on Connect)
JOB_CONF_KEYS = tuple(_JOB_CONFS)
_FOOTER_THREADS = 8


class Ineligible(Exception):
    """The native path would not be exact for this write; the message says why."""


# ----------------------------------------------------------------------------- eligibility + the frame
def _plain_type(t: DataType) -> bool:
    if isinstance(t, StructType):
        return all(_plain_type(f.type) for f in t.fields)
    return isinstance(t, DecimalType) or (isinstance(t, PrimitiveType) and t.name in _PRIMITIVES)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def random_prefixes(metadata: Metadata) -> int | None:
    """Length of the random directory prefix files get (None: Hive-style partition directories)."""
    conf = metadata.configuration
    return random_prefix_length(conf.get("delta.columnMapping.mode", "none") or "none", conf)


def native_frame(df: Any, metadata: Metadata, protocol: Protocol, predicate: str | None,
                 can_move: bool = True) -> Any:
    """`df` as the exact columns of the table's data files (physical names, field ids), or `Ineligible`.

    `can_move`: the files can be renamed after the job (local storage), so random-prefix layouts work.
    """
    from pyspark.sql import functions as F

    from ...operations.write.data_files import enforcer_for

    if predicate is not None:
        raise Ineligible("replaceWhere checks every row")
    schema = metadata.schema
    # a NOT NULL column fed by a non-nullable Spark column holds by construction: nothing to check
    non_null = {f.name.lower() for f in df.schema.fields if not f.nullable}
    relaxed = StructType(tuple(dataclasses.replace(f, nullable=True) if f.name.lower() in non_null else f
                               for f in schema.fields))
    if enforcer_for(dataclasses.replace(metadata, schema_string=schema_to_json(relaxed)), protocol) is not None:
        raise Ineligible("the table has constraints, NOT NULL, generated, identity or default columns")
    if not _plain_type(schema):
        raise Ineligible("the schema has arrays, maps or types without footer statistics")
    mode = metadata.configuration.get("delta.columnMapping.mode", "none") or "none"
    parts = list(metadata.partition_columns)
    if parts:
        if random_prefixes(metadata) is not None and not can_move:
            raise Ineligible("random file prefixes (column mapping) need a rename after the job")
        for p in parts:
            t = schema.field(p).type
            if not (isinstance(t, PrimitiveType) and t.name in _PARTITION_TYPES):
                raise Ineligible(f"partition column {p!r} of type {t} (Spark's directory text differs)")
    by_lower: dict[str, Any] = {}
    for f in df.schema.fields:
        if f.name.lower() in by_lower:
            raise Ineligible(f"input columns differ only in case: {f.name!r}")
        by_lower[f.name.lower()] = f
    extra = [f.name for f in df.schema.fields if not schema.has(f.name)]
    if extra:
        raise SchemaError(f"data has column(s) {extra} not in the table schema; use mergeSchema")
    logical = to_spark_schema(schema)
    physical = to_spark_schema(to_physical_schema(schema, mode), field_ids=mode != "none") \
        if mode != "none" else logical
    cols = []
    for lf, pf in zip(logical.fields, physical.fields):
        src = by_lower.get(lf.name.lower())
        if src is None:
            expr = F.lit(None).cast(pf.dataType)
        elif src.dataType.simpleString() != lf.dataType.simpleString():
            raise Ineligible(f"column {lf.name!r} is {src.dataType.simpleString()}, the table has "
                             f"{lf.dataType.simpleString()} (the kernel casts)")
        else:
            expr = F.col(_quoted(src.name))
            if pf.dataType.simpleString() != lf.dataType.simpleString():
                expr = expr.cast(pf.dataType)  # nested physical names: a struct cast renames by position
        cols.append(expr.alias(pf.name, metadata=pf.metadata))
    return df.select(*cols)


def write_path_choice(spark: Any, options: Any, known: Mapping[str, str | None] | None = None) -> str:
    """auto / native / arrow from the writer option or the session conf (`known`: confs already read)."""
    raw = options.get(WRITE_PATH_OPTION)
    if raw is None and known is not None and WRITE_PATH_CONF in known:
        raw = known[WRITE_PATH_CONF]
    elif raw is None:
        try:
            raw = spark.conf.get(WRITE_PATH_CONF, None)
        except Exception:
            raw = None
    choice = str(raw or "auto").strip().lower()
    if choice not in ("auto", "native", "arrow"):
        raise DeltaError(f"{WRITE_PATH_OPTION} must be auto, native or arrow, got {raw!r}")
    return choice


def native_or_fallback(spark: Any, df: Any, storage: Storage, metadata: Metadata, protocol: Protocol,
                       predicate: str | None, choice: str, what: str) -> Any | None:
    """The native-write frame for `df`, or None when the caller should write through `mapInArrow` instead
    (the write is ineligible, or Spark has no Hadoop filesystem for the storage: the kernel's storage writes).
    `choice` "native" makes ineligibility an error. Shared by batch writes and Spark DML."""
    from ..scan.filesystems import hadoop_can_read

    try:
        if not hadoop_can_read(spark, storage):
            raise Ineligible(f"Spark has no Hadoop filesystem for {storage.root_uri}")
        return native_frame(df, metadata, protocol, predicate, can_move=isinstance(storage, LocalStorage))
    except Ineligible as e:
        if choice == "native":
            raise DeltaError(f"{WRITE_PATH_OPTION}=native is not possible for this write: {e}") from e
        _log.debug("deltakernel Spark %s through mapInArrow: %s", what, e)
        return None




# ----------------------------------------------------------------------------- the job
def job_confs(metadata: Metadata) -> dict[str, str]:
    """The confs of `_JOB_CONFS` that change how this table's data columns are written (issue 32: each conf
    read, set and restored is a round trip on Connect, most of what a Connect append cost over a classic one):
    the timestamp type and INT96 rebase for `timestamp` columns, the datetime rebase for dates and timestamps,
    the legacy format for decimals (the only eligible type it changes), field ids under column mapping."""
    parts = {p.lower() for p in metadata.partition_columns}
    names: set[str] = set()

    def walk(t: DataType) -> None:
        if isinstance(t, StructType):
            for f in t.fields:
                walk(f.type)
        elif isinstance(t, DecimalType):
            names.add("decimal")
        elif isinstance(t, PrimitiveType):
            names.add(t.name)

    for f in metadata.schema.fields:
        if f.name.lower() not in parts:  # partition values are directory names, not Parquet columns
            walk(f.type)
    keys: list[str] = []
    if "timestamp" in names:
        keys += [_TS_TYPE, _INT96_REBASE]
    if names & {"timestamp", "timestamp_ntz", "date"}:
        keys.append(_DATETIME_REBASE)
    if "decimal" in names:
        keys.append(_LEGACY_FORMAT)
    if (metadata.configuration.get("delta.columnMapping.mode", "none") or "none") != "none":
        keys.append(_FIELD_IDS)
    return {k: _JOB_CONFS[k] for k in keys}


def _effective(key: str, value: str | None) -> str | None:
    return (value if value is not None else _SPARK_DEFAULTS.get(key) or "").strip().lower() or None


@contextlib.contextmanager
def session_confs(spark: Any, confs: dict[str, str],
                  known: Mapping[str, str | None] | None = None) -> Iterator[None]:
    """Set session confs for one job and restore the previous values (unset ones are unset again); in bulk
    (`common/confs.py`: on Connect one call to read, at most two to set and two to restore). Only confs whose
    value (or Spark's default, when unset) differs are set; `known`: their current values, already read by
    the caller (no read then). No confs to change: no call at all."""
    from ..common.confs import get_confs, set_confs

    if not confs:
        yield
        return
    old = dict(known) if known is not None and all(k in known for k in confs) else get_confs(spark, confs)
    change = {k: v for k, v in confs.items() if _effective(k, old.get(k)) != _effective(k, v)}
    if not change:
        yield
        return
    set_confs(spark, change)
    try:
        yield
    finally:
        set_confs(spark, {k: old.get(k) for k in change})


def write_native(frame: Any, path: str, uri: str, storage_options: dict[str, str] | None, metadata: Metadata,
                 max_rows_per_file: int | None,
                 known_confs: Mapping[str, str | None] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Run the Spark Parquet job for `frame` (from `native_frame`); the add actions and rows written.
    `known_confs`: the session's values of `JOB_CONF_KEYS` when the caller already read them."""
    storage = storage_for_uri(uri, storage_options)
    if getattr(storage, "catalog", None) is not None:  # a catalog's table name (uc://c.s.t): Spark writes where
        path = spark_path(storage, "")                  # the catalog put the table
    local = isinstance(storage, LocalStorage)
    # not hidden (no `_`/`.`): if the driver dies before the commit, VACUUM can still see the orphans
    stage = f"dk-staging-{uuid.uuid4().hex}" if local else uuid.uuid4().hex[:20]
    parts = list(metadata.partition_columns)
    mode = metadata.configuration.get("delta.columnMapping.mode", "none") or "none"
    prefix_length = random_prefixes(metadata)
    writer = frame.write.mode("error").option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
    if max_rows_per_file:
        writer = writer.option("maxRecordsPerFile", str(max_rows_per_file))
    if parts:
        writer = writer.partitionBy(*[physical_name(metadata.schema.field(p), mode) for p in parts])
    moved: list[str] = []
    targets: set[str] = set()
    try:
        with session_confs(frame.sparkSession, job_confs(metadata), known_confs):
            writer.parquet(f"{path.rstrip('/')}/{stage}")
        files = [m for m in storage.list_from(stage + "/", recursive=True) if _is_data(m.key[len(stage) + 1:])]
        plan = FooterStats(metadata.schema, parts, mode, metadata.configuration)
        with ThreadPoolExecutor(max_workers=min(_FOOTER_THREADS, max(1, len(files)))) as pool:
            footers = list(pool.map(lambda m: _footer(storage, m.key), files))
        adds: list[dict[str, Any]] = []
        rows = 0
        for meta, md in zip(files, footers):
            if md.num_rows == 0:  # Spark writes a schema-only file for an empty input: not table data
                if not local:
                    storage.delete(meta.key)
                continue
            rel = meta.key[len(stage) + 1:]
            key = rel if local else meta.key
            if local and prefix_length is not None:  # Spark Delta's layout: `<prefix>/<file>`, not `col=value/`
                # one task writes the same file name into every partition directory: never reuse a target
                name = rel.rsplit("/", 1)[-1]
                key = random_prefix(prefix_length) + name
                while key in targets or storage.exists(key):
                    key = random_prefix(prefix_length) + name
                targets.add(key)
            if isinstance(storage, LocalStorage):
                _move(storage, meta.key, key)
                moved.append(key)
            adds.append({
                "path": uri_encode_path(key),
                "partitionValues": _partition_values(rel, metadata),
                "size": meta.size,
                "modificationTime": meta.last_modified_ms,
                "dataChange": True,
                "stats": plan.stats_json(md),
            })
            rows += md.num_rows
    except BaseException:
        for key in moved:
            with contextlib.suppress(Exception):
                storage.delete(key)
        _remove_stage(storage, stage)
        raise
    if local:
        _remove_stage(storage, stage)  # only empty files, checksums and directories are left
    return adds, rows


def _is_data(rel: str) -> bool:
    """A data file of the job: not under `_temporary`/hidden directories, not `_SUCCESS` or a `.crc`."""
    *dirs, name = rel.split("/")
    if not name.endswith(".parquet") or name.startswith(("_", ".")):
        return False
    return not any(d.startswith(".") or (d.startswith("_") and "=" not in d) for d in dirs)


def _footer(storage: Storage, key: str) -> pq.FileMetaData:
    if isinstance(storage, LocalStorage):
        return pq.read_metadata(storage.local_path(key))
    with storage.open_input_file(key) as f:
        return pq.read_metadata(f)


def _move(storage: LocalStorage, src: str, dst: str) -> None:
    target = storage.local_path(dst)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(storage.local_path(src), target)  # Spark's file names are unique (job UUID)


def _remove_stage(storage: Storage, stage: str) -> None:
    """Best effort: the staging directory and what is left in it."""
    try:
        if isinstance(storage, LocalStorage):
            shutil.rmtree(storage.local_path(stage), ignore_errors=True)
            return
        for m in list(storage.list_from(stage + "/", recursive=True)):
            storage.delete(m.key)
    except Exception:
        pass


# ----------------------------------------------------------------------------- partition values
def _partition_values(rel: str, metadata: Metadata) -> dict[str, str | None]:
    """Delta partition values from the `col=value/` directories Spark wrote (`__HIVE_DEFAULT_PARTITION__` = null)."""
    schema = metadata.schema
    mode = metadata.configuration.get("delta.columnMapping.mode", "none") or "none"
    raw: dict[str, str] = {}
    for part in rel.split("/")[:-1]:
        name, sep, value = part.partition("=")
        if not sep:
            raise DeltaError(f"unexpected directory {part!r} in Spark's output")
        raw[unescape_path_name(name).lower()] = value
    out: dict[str, str | None] = {}
    for col in metadata.partition_columns:
        f = schema.field(col)
        name = physical_name(f, mode)
        if name.lower() not in raw:
            raise DeltaError(f"Spark's output path {rel!r} has no directory for partition column {col!r}")
        out[name] = _partition_value(raw[name.lower()], f.type)
    return out


def _partition_value(text: str, dtype: DataType) -> str | None:
    if text == HIVE_DEFAULT_PARTITION:
        return None
    value = unescape_path_name(text)
    name = dtype.name if isinstance(dtype, PrimitiveType) else ""
    if name == "string":
        return value or None
    if name in ("byte", "short", "integer", "long"):
        return str(int(value))
    if name == "boolean":
        return value.lower()
    if name == "date":
        return serialize_partition_value(dt.date.fromisoformat(value), dtype)
    raise DeltaError(f"partition type {dtype} is not written by the native path")


__all__ = ["JOB_CONF_KEYS", "WRITE_PATH_CONF", "WRITE_PATH_OPTION", "Ineligible", "job_confs", "native_frame",
           "session_confs", "write_native", "write_path_choice"]
