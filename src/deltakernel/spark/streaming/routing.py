"""`enable()`'s wrapping of pyspark's `DataStreamReader` / `DataStreamWriter` for Delta (factories registered in
`install.PATCHES`; each replacement acts only for enabled sessions).

Streams go through the registered "delta" Python source as they are; what Spark does not hand to a Python
sink is added here: `partitionBy` (Spark drops it silently for Python sinks, so the columns travel as the
`__partition_columns` option the sink reads), `writeStream.toTable(name)` (the session catalog's Delta table -
created empty with the stream's schema when absent - is written by path) and `readStream.table(name)`.
A Unity Catalog table (`uc://catalog.schema.table`, or a name of a catalog configured on the session) is streamed
by its `uc://` location with the catalog's URL and token added as options (`catalog_options`): the source and the
sink run in Spark's Python workers, which have neither the driver's catalog registrations nor its environment.
Other formats are untouched. Classic pyspark's classes and Spark Connect's
(`pyspark.sql.connect.streaming.readwriter`) are wrapped alike: over Connect the stream itself runs on the
server, where Spark instantiates the registered source's stream reader / writer in its Python workers.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ..install.registry import is_enabled
from ..kinds import connect_internals
from ..kinds.session import owner_session
from ..scan.datasource import SOURCE_NAME

PARTITION_OPTION = "__partition_columns"


def _is_delta(fmt: Any) -> bool:
    return str(fmt or "").lower() == SOURCE_NAME


def _columns(cols: Any) -> list[str] | None:
    if cols is None:
        return None
    if isinstance(cols, str):
        return [cols]
    return [str(c) for c in cols]


def _frame(writer: Any) -> Any:
    """The streaming DataFrame a DataStreamWriter writes (Connect's writer holds its logical plan)."""
    return connect_internals.stream_writer_frame(writer)


# ----------------------------------------------------------------------------- the factories (`install.PATCHES`)
def stream_format(original_format: Any) -> Any:
    @functools.wraps(original_format)
    def fmt(self: Any, source: str) -> Any:
        self._dk_stream_format = source
        return original_format(self, source)

    return fmt


def stream_partition_by(original_partition_by: Any) -> Any:
    @functools.wraps(original_partition_by)
    def partition_by(self: Any, *cols: Any) -> Any:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            self._dk_stream_partitions = _columns(cols[0])
        else:
            self._dk_stream_partitions = _columns(cols)
        return original_partition_by(self, *cols)

    return partition_by


def catalog_options(path: Any) -> dict[str, str]:
    """The Unity Catalog URL and token (and the object-store options registered for the catalog) a stream of `path`
    needs in Spark's workers: for a `uc://` path, from the catalog's registration in this process (a Spark catalog
    configuration, `unity.tables.configure_catalog`) and then the environment; {} for other paths or when nothing
    is configured (the worker's own environment may be)."""
    if not isinstance(path, str) or not path.lower().startswith("uc://"):
        return {}
    from ...unity.client import parse_table_name
    from ...unity.config import resolve_config
    from ...unity.errors import UnityCatalogError
    from ...unity.tables import configured_options

    try:
        registered = configured_options(parse_table_name(path)[0]) or {}
        config = resolve_config(registered)
    except UnityCatalogError:
        return {}
    out = {**registered, "unity_catalog_url": config.base_url}  # with the registered object-store options
    if config.token:
        out["unity_catalog_token"] = config.token
    return out


def stream_start(original_start: Any) -> Any:
    @functools.wraps(original_start)
    def start(self: Any, path: str | None = None, format: str | None = None, outputMode: str | None = None,
              partitionBy: Any = None, queryName: str | None = None, **options: Any) -> Any:
        if _is_delta(format or getattr(self, "_dk_stream_format", None)) and is_enabled(owner_session(self)):
            parts = _columns(partitionBy) or getattr(self, "_dk_stream_partitions", None)
            if parts:
                self.option(PARTITION_OPTION, json.dumps(parts))
            for key, value in catalog_options(path or options.get("path")).items():
                self.option(key, value)
        return original_start(self, path, format, outputMode, partitionBy, queryName, **options)

    return start


def stream_to_table(original_to_table: Any) -> Any:
    @functools.wraps(original_to_table)
    def to_table(self: Any, tableName: str, format: str | None = None, outputMode: str | None = None,
                 partitionBy: Any = None, queryName: str | None = None, **options: Any) -> Any:
        spark = owner_session(self)
        fmt_name = format or getattr(self, "_dk_stream_format", None)
        if is_enabled(spark) and (_is_delta(fmt_name) or fmt_name is None):
            ref = _delta_table_for_stream(self, tableName, fmt_name, partitionBy)
            if ref is not None:
                return self.start(ref.location, SOURCE_NAME, outputMode, partitionBy, queryName, **options)
        return original_to_table(self, tableName, format, outputMode, partitionBy, queryName, **options)

    return to_table


def stream_reader_table(original_table: Any) -> Any:
    @functools.wraps(original_table)
    def table(self: Any, tableName: str) -> Any:
        spark = owner_session(self)
        if is_enabled(spark) and isinstance(tableName, str):
            from ..catalog.tables import resolve_name

            ref = resolve_name(spark, tableName)
            if ref is not None:
                return self.format(SOURCE_NAME).load(ref.location)
        return original_table(self, tableName)

    return table


def stream_reader_load(original_load: Any) -> Any:
    @functools.wraps(original_load)
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> Any:
        if _is_delta(format or getattr(self, "_dk_stream_format", None)) and is_enabled(owner_session(self)):
            for key, value in catalog_options(path or options.get("path")).items():
                self.option(key, value)
        return original_load(self, path, format, schema, **options)

    return load


def _missing_catalog_table(location: str) -> bool:
    """A Unity Catalog name (`uc://`) resolves whether or not the catalog has the table: is it absent?"""
    if not location.lower().startswith("uc://"):
        return False
    from ...table import DeltaTable as KernelTable

    return not KernelTable.is_deltatable(location)


def _delta_table_for_stream(writer: Any, name: str, fmt: str | None, partition_by: Any) -> Any:
    """The Delta catalog table `name` (created empty with the stream's schema when format is delta and the
    table does not exist); None when `name` is not a Delta table and the format is not delta."""
    from ..catalog.tables import TableSpec, create, resolve_name, split_name
    from ..common.schema import from_spark_schema
    from ..writing.writer import as_nullable

    spark = owner_session(writer)
    ref = resolve_name(spark, name)
    if (ref is not None and not _missing_catalog_table(ref.location)) or not _is_delta(fmt):
        return ref
    df = _frame(writer)
    parts = _columns(partition_by) or getattr(writer, "_dk_stream_partitions", None)
    spec = TableSpec(schema=as_nullable(from_spark_schema(df.schema)), partition_by=parts)
    return create(spark, split_name(spark, name), spec, "ignore")


__all__ = ["PARTITION_OPTION", "catalog_options", "stream_format", "stream_partition_by", "stream_reader_load",
           "stream_reader_table", "stream_start", "stream_to_table"]
