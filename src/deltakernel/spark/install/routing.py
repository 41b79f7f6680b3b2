"""The replacements `enable(spark)` puts on pyspark's readers, writers, sessions and catalogs (see `install.py`).

Why routing: Spark refuses `mode("error"/"ignore")` and `partitionBy` for Python sources, and a Python
source reads 3.6x slower than Spark's own Parquet scan. So `enable()` wraps pyspark's classic
`DataFrameReader` / `DataFrameWriter` (in this Python process): they remember format, options, mode and
partitionBy as they are set, and when the format is "delta" and the session is enabled, `load()` builds the
native plan (`reader.read`) and `save()` runs `writer.write`. Every other format is untouched. The registered
Python source still serves SQL (`CREATE TEMPORARY VIEW ... USING delta`) and anything that bypasses the
wrappers.

Each function here is a factory: it gets pyspark's original method and returns the replacement, which routes
only in sessions where `enable()` ran (`install.is_enabled`) and calls the original otherwise. `install.PATCHES`
says which factory replaces which method of which class.

SQL and catalog tables: in sessions where `enable()` ran, `SparkSession.sql` goes through the Delta SQL
router (`spark/sql/`: Delta statements run through deltakernel, queries reading Delta tables read the native
plan, everything else reaches Spark unchanged); `spark.table` / `spark.read.table`, `saveAsTable`,
`insertInto` and `spark.catalog.createTable(source="delta")` resolve Delta catalog tables through
`catalog.py` (Spark's session catalog holds name and location, the log holds the table). On a Spark Connect
session the same calls are patched on Connect's classes (the router's statement parser is sqlglot there, see
`spark/sql/parse_connect.py`; the Connect client internals used are in `connect_internals.py`), and
`spark.catalog.listColumns` of a Delta table answers from its log.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..kinds import connect_internals
from ..kinds.session import is_connect, owner_session
from ..scan.datasource import SOURCE_NAME
from .registry import is_enabled

_enabled = is_enabled


# ----------------------------------------------------------------------------- readers / writers: recorded calls
def _recorder(store: Callable[..., None]) -> Callable[[Any], Any]:
    """A factory whose replacement records the call on the reader / writer (`store`), then runs pyspark's."""

    def factory(original: Any) -> Any:
        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            store(self, *args, **kwargs)
            return original(self, *args, **kwargs)

        return wrapper

    return factory


def _set_format(self: Any, source: str) -> None:
    self._dk_format = source


def _set_option(self: Any, key: str, value: Any) -> None:
    _opts(self)[key] = value


def _set_options(self: Any, **options: Any) -> None:
    _opts(self).update(options)


def _set_mode(self: Any, mode: Any = None) -> None:
    self._dk_mode = mode


def _set_partition_by(self: Any, *cols: Any) -> None:
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    self._dk_partition_by = list(cols)


record_format = _recorder(_set_format)
record_option = _recorder(_set_option)
record_options = _recorder(_set_options)
record_mode = _recorder(_set_mode)
record_partition_by = _recorder(_set_partition_by)


# ----------------------------------------------------------------------------- readers / writers: routed calls
def reader_load(original_load: Any) -> Any:
    @functools.wraps(original_load)
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> Any:
        fmt = format or getattr(self, "_dk_format", None)
        if str(fmt or "").lower() != SOURCE_NAME or (path is not None and not isinstance(path, str)) \
                or not _enabled(owner_session(self)):
            return original_load(self, path, format, schema, **options)
        from ..scan.reader import read

        opts = {**_opts(self), **options}
        return read(owner_session(self), path, **opts)

    return load


def writer_save(original_save: Any) -> Any:
    @functools.wraps(original_save)
    def save(self: Any, path: str | None = None, format: str | None = None, mode: str | None = None,
             partitionBy: Any = None, **options: Any) -> None:
        fmt = format or getattr(self, "_dk_format", None)
        if str(fmt or "").lower() != SOURCE_NAME or not _enabled(self._spark):
            return original_save(self, path, format, mode, partitionBy, **options)
        from ..writing.writer import write

        opts = {**_opts(self), **options}
        target = path or opts.pop("path", None)
        if isinstance(partitionBy, str):
            partitionBy = [partitionBy]
        parts = partitionBy if partitionBy is not None else getattr(self, "_dk_partition_by", None)
        write(_writer_frame(self), target, mode=mode or getattr(self, "_dk_mode", None) or "error", partitionBy=parts,
              **opts)
        return None

    return save


def reader_table(original_table: Any) -> Any:
    """`spark.read.table(name)` of a Delta catalog table (see catalog.py)."""

    @functools.wraps(original_table)
    def table(self: Any, tableName: str) -> Any:
        spark = owner_session(self)
        df = _read_table(spark, tableName, dict(_opts(self))) if _enabled(spark) and isinstance(tableName, str) \
            else None
        return df if df is not None else original_table(self, tableName)

    return table


def writer_save_as_table(original_save_as_table: Any) -> Any:
    @functools.wraps(original_save_as_table)
    def save_as_table(self: Any, name: str, format: str | None = None, mode: str | None = None,
                      partitionBy: Any = None, **options: Any) -> None:
        spark = self._spark
        fmt = format or getattr(self, "_dk_format", None)
        if _enabled(spark) and isinstance(name, str) and _delta_target(spark, name, fmt):
            from ..catalog.tables import save_as_table as save_table

            if isinstance(partitionBy, str):
                partitionBy = [partitionBy]
            parts = partitionBy if partitionBy is not None else getattr(self, "_dk_partition_by", None)
            save_table(_writer_frame(self), name, mode or getattr(self, "_dk_mode", None), parts,
                       {**_opts(self), **options})
            return None
        return original_save_as_table(self, name, format, mode, partitionBy, **options)

    return save_as_table


def writer_insert_into(original_insert_into: Any) -> Any:
    @functools.wraps(original_insert_into)
    def insert_into(self: Any, tableName: str, overwrite: bool | None = None) -> None:
        spark = self._spark
        if _enabled(spark) and isinstance(tableName, str):
            from ..sql.execute_dml import insert_into as insert_table

            mode = str(getattr(self, "_dk_mode", None) or "append").lower()
            replace = overwrite if overwrite is not None else mode == "overwrite"
            if insert_table(_writer_frame(self), tableName, replace):
                return None
        return original_insert_into(self, tableName, overwrite)

    return insert_into


# ----------------------------------------------------------------------------- sessions and catalogs
def session_sql(original_sql: Any) -> Any:
    """`spark.sql` through the Delta SQL router (`spark/sql/`)."""

    @functools.wraps(original_sql)
    def sql(self: Any, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if not _enabled(self) or not isinstance(sqlQuery, str):
            return original_sql(self, sqlQuery, args, **kwargs)
        from ..sql import execute_sql

        if is_connect(self):  # the frames of `{df}` formatting and the router's scoped views travel with the text
            text, views = connect_internals.format_sql(self, sqlQuery, kwargs) if kwargs else (sqlQuery, [])

            def run(t: str, a: Any, scoped: list[tuple[Any, str]] = []) -> Any:  # noqa: B006 - never mutated
                if not views and not scoped:
                    return original_sql(self, t, a)
                return connect_internals.run_sql(self, t, a, [*views, *scoped])

            def lazy(t: str, scoped: list[tuple[Any, str]]) -> Any:  # a read-only query Spark analysed before
                return connect_internals.sql_frame(self, t, scoped)

            # lazy frames only for statements whose key the router can tell: no parameters, no `{df}` frames
            return execute_sql(self, text, args, run, None if views or args else lazy)
        formatter = None
        text = sqlQuery
        if kwargs:  # pyspark's `{df}` formatting first (it registers temp views for DataFrames)
            from pyspark.sql.sql_formatter import SQLStringFormatter

            formatter = SQLStringFormatter(self)
            text = formatter.format(sqlQuery, **kwargs)
        try:
            return execute_sql(self, text, args, lambda t, a: original_sql(self, t, a))
        finally:
            if formatter is not None:
                formatter.clear()

    return sql


def session_table(original_table: Any) -> Any:
    """`spark.table(name)` reads Delta catalog tables natively."""

    @functools.wraps(original_table)
    def table(self: Any, tableName: str) -> Any:
        df = _read_table(self, tableName, {}) if _enabled(self) and isinstance(tableName, str) else None
        return df if df is not None else original_table(self, tableName)

    return table


def catalog_create_table(original_create: Any) -> Any:
    """`spark.catalog.createTable(..., source="delta")` creates the Delta table (catalog.py)."""

    @functools.wraps(original_create)
    def create_table(self: Any, tableName: str, path: str | None = None, source: str | None = None,
                     schema: Any = None, description: str | None = None, **options: Any) -> Any:
        session = self._sparkSession
        if _enabled(session) and str(source or "").lower() == SOURCE_NAME:
            from ..catalog.tables import create_from_catalog_api

            return create_from_catalog_api(session, tableName, path, schema, description, options)
        return original_create(self, tableName, path, source, schema, description, **options)

    return create_table


def catalog_list_columns(original: Any) -> Any:
    """Over Spark Connect the catalog's column list of a Delta table cannot follow every schema change (only
    ADD COLUMNS is possible there), so `spark.catalog.listColumns` of a Delta table answers from its log."""

    @functools.wraps(original)
    def list_columns(self: Any, tableName: str, dbName: str | None = None) -> Any:
        session = self._sparkSession
        if _enabled(session) and dbName is None and isinstance(tableName, str):
            from ..catalog.tables import log_columns

            cols = log_columns(session, tableName)
            if cols is not None:
                return cols
        return original(self, tableName, dbName)

    return list_columns


def frame_explain(original: Any) -> Any:
    """`df.explain()` lists the Delta scans first, so each scan's Location shows the files kept (Spark lists a
    scan's files only when it runs; the listing is the one execution then uses)."""

    @functools.wraps(original)
    def explain(self: Any, *args: Any, **kwargs: Any) -> None:
        if _enabled(self.sparkSession):
            try:
                from ..scan.read_plans import scan_report

                scan_report(self)
            except Exception:  # explain must work whatever happens here
                pass
        return original(self, *args, **kwargs)

    return explain


# ----------------------------------------------------------------------------- helpers
def _read_table(spark: Any, name: str, options: dict[str, Any]) -> Any:
    """A Delta table read by name (native plan), or None when `name` is not a Delta table."""
    from ...errors import DeltaError
    from ..catalog.tables import read_table

    try:
        return read_table(spark, name, options)
    except DeltaError as e:
        from ..catalog.tables import CatalogTableError

        if isinstance(e, CatalogTableError) and str(e).startswith("invalid table name"):
            return None  # Spark's own error for a malformed name
        raise


def _writer_frame(writer: Any) -> Any:
    """The DataFrame a DataFrameWriter writes (Connect's writer holds its logical plan)."""
    return connect_internals.writer_frame(writer)


def _delta_target(spark: Any, name: str, fmt: str | None) -> bool:
    """saveAsTable goes to deltakernel for format("delta"), or with no format for an existing Delta table (or
    when Delta is the session's default source)."""
    if str(fmt or "").lower() == SOURCE_NAME:
        return True
    if fmt:
        return False
    try:
        default = str(spark.conf.get("spark.sql.sources.default", "parquet") or "").lower()
    except Exception:
        default = ""
    if default == SOURCE_NAME:
        return True
    from ...errors import DeltaError
    from ..catalog.tables import resolve_name

    try:
        return resolve_name(spark, name) is not None
    except DeltaError:
        return False


def _opts(obj: Any) -> dict[str, Any]:
    d = obj.__dict__.get("_dk_options")
    if d is None:
        d = {}
        obj._dk_options = d
    return d


__all__ = ["catalog_create_table", "catalog_list_columns", "frame_explain", "reader_load", "reader_table",
           "record_format", "record_mode", "record_option", "record_options", "record_partition_by", "session_sql",
           "session_table", "writer_insert_into", "writer_save", "writer_save_as_table"]
