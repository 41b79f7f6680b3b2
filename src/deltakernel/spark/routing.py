"""`enable(spark)`: register the "delta" Python source and route `format("delta")` through deltakernel.

Why routing: Spark refuses `mode("error"/"ignore")` and `partitionBy` for Python sources, and a Python
source reads 3.6x slower than Spark's own Parquet scan. So `enable()` wraps pyspark's classic
`DataFrameReader` / `DataFrameWriter` (in this Python process): they remember format, options, mode and
partitionBy as they are set, and when the format is "delta", `load()` builds the native plan
(`reader.read`) and `save()` runs `writer.write`. Every other format is untouched. The registered
Python source still serves SQL (`CREATE TEMPORARY VIEW ... USING delta`) and anything that bypasses the
wrappers.

SQL and catalog tables: in sessions where `enable()` ran, `SparkSession.sql` goes through the Delta SQL
router (`spark/sql/`: Delta statements run through deltakernel, queries reading Delta tables read the native
plan, everything else reaches Spark unchanged); `spark.table` / `spark.read.table`, `saveAsTable`,
`insertInto` and `spark.catalog.createTable(source="delta")` resolve Delta catalog tables through
`catalog.py` (Spark's session catalog holds name and location, the log holds the table). On a Spark Connect
session the same calls are patched on Connect's classes (the router parses with sqlglot there, see
`spark/sql/connect_router.py`), and `spark.catalog.listColumns` of a Delta table answers from its log.
"""

from __future__ import annotations

import functools
from typing import Any

from .datasource import SOURCE_NAME, register
from .session import is_connect, owner_session

_PATCHED = False
_ID_CONFS = {
    "spark.sql.parquet.fieldId.read.enabled": "true",  # column mapping id mode: match Parquet field ids
    "spark.sql.parquet.fieldId.read.ignoreMissing": "true",  # files without ids (older writers) read by name
    "spark.sql.python.filterPushdown.enabled": "true",  # the Python source skips files with pushed filters
}


def enable(spark: Any) -> Any:
    """Make `spark.read.format("delta")` / `df.write.format("delta")` deltakernel's. Idempotent."""
    try:
        register(spark)
    except Exception as e:  # a delta-spark jar owns "delta" already, or a Spark without Python sources
        if _PATCHED and "DATA_SOURCE_ALREADY_EXISTS" in str(e):
            spark._deltakernel_registered = True  # spark.newSession() of an enabled session: the source is shared
        else:
            from ..errors import DeltaError

            raise DeltaError(f"cannot register the 'delta' Python data source: {e}") from e
    for k, v in _ID_CONFS.items():
        try:
            spark.conf.set(k, v)
        except Exception:
            pass
    if is_connect(spark):
        from .scan.connect_plan import install as install_pushdown
        from .scan.public_plan import keep_file_listing_on_driver

        keep_file_listing_on_driver(spark)
        install_pushdown()  # Delta leaves planned when Connect plans are sent (scan/connect_plan.py)
    from .python_workers import check_python_workers

    check_python_workers(spark)
    _patch(type(spark))
    _patch_session(type(spark))
    from .streaming.routing import patch_streams  # readStream / writeStream (spark/streaming/routing.py)

    patch_streams()
    return spark


def _enabled(session: Any) -> bool:
    return bool(getattr(session, "_deltakernel_registered", False))


_PATCHED_SESSIONS: set[type] = set()


def _patch_session(session_cls: type) -> None:
    """`spark.sql` through the Delta SQL router; `spark.table` reads Delta catalog tables natively (once per
    session class: classic and Connect sessions are different classes)."""
    if session_cls in _PATCHED_SESSIONS:
        return
    _PATCHED_SESSIONS.add(session_cls)
    original_sql = session_cls.sql  # type: ignore[attr-defined]

    @functools.wraps(original_sql)
    def sql(self: Any, sqlQuery: str, args: Any = None, **kwargs: Any) -> Any:
        if not _enabled(self) or not isinstance(sqlQuery, str):
            return original_sql(self, sqlQuery, args, **kwargs)
        from .sql import execute_sql

        if kwargs and is_connect(self):  # Connect's `{df}` formatting: the frames travel with each statement
            from pyspark.sql.connect.sql_formatter import SQLStringFormatter as ConnectFormatter

            connect_formatter = ConnectFormatter(self)
            text = connect_formatter.format(sqlQuery, **kwargs)
            views = list(connect_formatter._temp_views)
            return execute_sql(self, text, args, lambda t, a: _connect_sql(self, t, a, views))
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

    session_cls.sql = sql  # type: ignore[attr-defined]
    session_cls._dk_original_sql = original_sql  # type: ignore[attr-defined]  # catalog statements, un-routed

    original_table = session_cls.table  # type: ignore[attr-defined]

    @functools.wraps(original_table)
    def table(self: Any, tableName: str) -> Any:
        df = _read_table(self, tableName, {}) if _enabled(self) and isinstance(tableName, str) else None
        return df if df is not None else original_table(self, tableName)

    session_cls.table = table  # type: ignore[attr-defined]
    try:
        if session_cls.__module__.startswith("pyspark.sql.connect"):
            from pyspark.sql.connect.catalog import Catalog
        else:
            from pyspark.sql.catalog import Catalog  # type: ignore[assignment]
    except ImportError:  # pragma: no cover
        return
    original_create = Catalog.createTable

    @functools.wraps(original_create)
    def create_table(self: Any, tableName: str, path: str | None = None, source: str | None = None,
                     schema: Any = None, description: str | None = None, **options: Any) -> Any:
        session = self._sparkSession
        if _enabled(session) and str(source or "").lower() == SOURCE_NAME:
            from .catalog import create_from_catalog_api

            return create_from_catalog_api(session, tableName, path, schema, description, options)
        return original_create(self, tableName, path, source, schema, description, **options)

    Catalog.createTable = create_table  # type: ignore[method-assign]
    if session_cls.__module__.startswith("pyspark.sql.connect"):
        _patch_list_columns(Catalog)


def _patch_list_columns(catalog_cls: type) -> None:
    """Over Spark Connect the catalog's column list of a Delta table cannot follow every schema change (only
    ADD COLUMNS is possible there), so `spark.catalog.listColumns` of a Delta table answers from its log."""
    original = catalog_cls.listColumns  # type: ignore[attr-defined]

    @functools.wraps(original)
    def list_columns(self: Any, tableName: str, dbName: str | None = None) -> Any:
        session = self._sparkSession
        if _enabled(session) and dbName is None and isinstance(tableName, str):
            from .catalog import log_columns

            cols = log_columns(session, tableName)
            if cols is not None:
                return cols
        return original(self, tableName, dbName)

    list_columns._dk_original = original  # type: ignore[attr-defined]
    catalog_cls.listColumns = list_columns  # type: ignore[attr-defined]


def _connect_sql(session: Any, text: str, args: Any, views: list[Any]) -> Any:
    """Connect's `SparkSession.sql` with the `{df}` frames its formatter collected (`views`: (frame, name)), for
    a text the router may have rewritten (pyspark's own `sql` would format it again)."""
    from pyspark.sql.connect import functions as CF
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import SQL, CachedRelation, SubqueryAlias

    named = {k: CF.lit(v) for k, v in args.items()} if isinstance(args, dict) else {}
    positional = [CF.lit(v) for v in args] if isinstance(args, list) else []
    cmd = SQL(text, positional, named, [SubqueryAlias(df._plan, name) for df, name in views])
    _data, properties, info = session.client.execute_command(cmd.command(session._client))
    if "sql_command_result" in properties:
        df = DataFrame(CachedRelation(properties["sql_command_result"]), session)
        df._execution_info = info
        return df
    return DataFrame(cmd, session)


def _read_table(spark: Any, name: str, options: dict[str, Any]) -> Any:
    """A Delta table read by name (native plan), or None when `name` is not a Delta table."""
    from ..errors import DeltaError
    from .catalog import read_table

    try:
        return read_table(spark, name, options)
    except DeltaError as e:
        from .catalog import CatalogTableError

        if isinstance(e, CatalogTableError) and str(e).startswith("invalid table name"):
            return None  # Spark's own error for a malformed name
        raise


def _is_delta(obj: Any) -> bool:
    return str(getattr(obj, "_dk_format", "") or "").lower() == SOURCE_NAME


def _writer_frame(writer: Any) -> Any:
    """The DataFrame a DataFrameWriter writes (Connect's writer holds its logical plan)."""
    df = writer._df
    if hasattr(df, "sparkSession"):
        return df
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    return ConnectFrame(df, writer._spark)


def _patch(session_cls: type) -> None:
    global _PATCHED
    if _PATCHED:
        return
    from .session import class_pairs

    for reader_cls, writer_cls in class_pairs("pyspark.sql.readwriter", "pyspark.sql.connect.readwriter",
                                              ("DataFrameReader", "DataFrameWriter")):
        _patch_reader_writer(reader_cls, writer_cls)
    _patch_explain()
    from .writer_v2 import patch_write_to

    patch_write_to()
    _PATCHED = True


def _patch_reader_writer(DataFrameReader: type, DataFrameWriter: type) -> None:

    def record(cls: type, name: str, store: Any) -> None:
        original = getattr(cls, name)

        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            store(self, *args, **kwargs)
            return original(self, *args, **kwargs)

        setattr(cls, name, wrapper)

    def set_format(self: Any, source: str) -> None:
        self._dk_format = source

    def set_option(self: Any, key: str, value: Any) -> None:
        _opts(self)[key] = value

    def set_options(self: Any, **options: Any) -> None:
        _opts(self).update(options)

    def set_mode(self: Any, mode: Any = None) -> None:
        self._dk_mode = mode

    def set_partition_by(self: Any, *cols: Any) -> None:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        self._dk_partition_by = list(cols)

    for cls in (DataFrameReader, DataFrameWriter):
        record(cls, "format", set_format)
        record(cls, "option", set_option)
        record(cls, "options", set_options)
    record(DataFrameWriter, "mode", set_mode)
    record(DataFrameWriter, "partitionBy", set_partition_by)

    original_load = DataFrameReader.load  # type: ignore[attr-defined]

    @functools.wraps(original_load)
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> Any:
        fmt = format or getattr(self, "_dk_format", None)
        if str(fmt or "").lower() != SOURCE_NAME or (path is not None and not isinstance(path, str)):
            return original_load(self, path, format, schema, **options)
        from .reader import read

        opts = {**_opts(self), **options}
        return read(owner_session(self), path, **opts)

    DataFrameReader.load = load  # type: ignore[attr-defined]

    original_save = DataFrameWriter.save  # type: ignore[attr-defined]

    @functools.wraps(original_save)
    def save(self: Any, path: str | None = None, format: str | None = None, mode: str | None = None,
             partitionBy: Any = None, **options: Any) -> None:
        fmt = format or getattr(self, "_dk_format", None)
        if str(fmt or "").lower() != SOURCE_NAME:
            return original_save(self, path, format, mode, partitionBy, **options)
        from .writer import write

        opts = {**_opts(self), **options}
        target = path or opts.pop("path", None)
        if isinstance(partitionBy, str):
            partitionBy = [partitionBy]
        parts = partitionBy if partitionBy is not None else getattr(self, "_dk_partition_by", None)
        write(_writer_frame(self), target, mode=mode or getattr(self, "_dk_mode", None) or "error", partitionBy=parts,
              **opts)
        return None

    DataFrameWriter.save = save  # type: ignore[attr-defined]
    _patch_tables(DataFrameReader, DataFrameWriter)


def _patch_explain() -> None:
    """`df.explain()` lists the Delta scans first, so each scan's Location shows the files kept (Spark lists a
    scan's files only when it runs; the listing is the one execution then uses)."""
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:  # pragma: no cover - pyspark 3
        return
    original = DataFrame.explain

    @functools.wraps(original)
    def explain(self: Any, *args: Any, **kwargs: Any) -> None:
        if _enabled(self.sparkSession):
            try:
                from .scan.report import scan_report

                scan_report(self)
            except Exception:  # explain must work whatever happens here
                pass
        return original(self, *args, **kwargs)

    DataFrame.explain = explain  # type: ignore[method-assign]


def _patch_tables(reader_cls: type, writer_cls: type) -> None:
    """Reads and writes by catalog name: `read.table`, `saveAsTable`, `insertInto` (see catalog.py)."""
    original_table = reader_cls.table  # type: ignore[attr-defined]

    @functools.wraps(original_table)
    def table(self: Any, tableName: str) -> Any:
        spark = owner_session(self)
        df = _read_table(spark, tableName, dict(_opts(self))) if _enabled(spark) and isinstance(tableName, str) \
            else None
        return df if df is not None else original_table(self, tableName)

    reader_cls.table = table  # type: ignore[attr-defined]

    original_save_as_table = writer_cls.saveAsTable  # type: ignore[attr-defined]

    @functools.wraps(original_save_as_table)
    def save_as_table(self: Any, name: str, format: str | None = None, mode: str | None = None,
                      partitionBy: Any = None, **options: Any) -> None:
        spark = self._spark
        fmt = format or getattr(self, "_dk_format", None)
        if _enabled(spark) and isinstance(name, str) and _delta_target(spark, name, fmt):
            from .catalog import save_as_table as save_table

            if isinstance(partitionBy, str):
                partitionBy = [partitionBy]
            parts = partitionBy if partitionBy is not None else getattr(self, "_dk_partition_by", None)
            save_table(_writer_frame(self), name, mode or getattr(self, "_dk_mode", None), parts,
                       {**_opts(self), **options})
            return None
        return original_save_as_table(self, name, format, mode, partitionBy, **options)

    writer_cls.saveAsTable = save_as_table  # type: ignore[attr-defined]

    original_insert_into = writer_cls.insertInto  # type: ignore[attr-defined]

    @functools.wraps(original_insert_into)
    def insert_into(self: Any, tableName: str, overwrite: bool | None = None) -> None:
        spark = self._spark
        if _enabled(spark) and isinstance(tableName, str):
            from .sql.dml import insert_into as insert_table

            mode = str(getattr(self, "_dk_mode", None) or "append").lower()
            replace = overwrite if overwrite is not None else mode == "overwrite"
            if insert_table(_writer_frame(self), tableName, replace):
                return None
        return original_insert_into(self, tableName, overwrite)

    writer_cls.insertInto = insert_into  # type: ignore[attr-defined]


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
    from ..errors import DeltaError
    from .catalog import resolve_name

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


__all__ = ["enable"]
