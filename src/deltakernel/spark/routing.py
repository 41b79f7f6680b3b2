"""`enable(spark)`: register the "delta" Python source and route `format("delta")` through deltakernel.

Why routing: Spark refuses `mode("error"/"ignore")` and `partitionBy` for Python sources, and a Python
source reads 3.6x slower than Spark's own Parquet scan. So `enable()` wraps pyspark's classic
`DataFrameReader` / `DataFrameWriter` (in this Python process): they remember format, options, mode and
partitionBy as they are set, and when the format is "delta", `load()` builds the native plan
(`reader.read`) and `save()` runs `writer.write`. Every other format is untouched. The registered
Python source still serves SQL (`CREATE TEMPORARY VIEW ... USING delta`) and anything that bypasses the
wrappers.

Catalog tables are not supported yet, and Spark would record `CREATE TABLE t (...) USING delta
[LOCATION ...]` in its catalog without asking the Python source anything (no `_delta_log` written; the
first INSERT or SELECT then fails). So in sessions where `enable()` ran, `SparkSession.sql` refuses
`CREATE/REPLACE TABLE ... USING delta` (and `catalog.createTable(source="delta")`) with a DeltaError
saying what to use instead; the statement never reaches Spark.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from .datasource import SOURCE_NAME, register

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
        from ..errors import DeltaError

        raise DeltaError(f"cannot register the 'delta' Python data source: {e}") from e
    for k, v in _ID_CONFS.items():
        try:
            spark.conf.set(k, v)
        except Exception:
            pass
    _patch(type(spark))
    return spark


_CREATE_TABLE = re.compile(
    r"^\s*(CREATE\s+(OR\s+REPLACE\s+)?(EXTERNAL\s+)?TABLE|REPLACE\s+TABLE)\b.*?\bUSING\s+`?delta`?(\s|$|;)",
    re.IGNORECASE | re.DOTALL,
)
_SQL_COMMENT = re.compile(r"--[^\n]*|/\*.*?\*/", re.DOTALL)
CATALOG_MESSAGE = (
    "catalog tables (CREATE TABLE ... USING delta) are not supported by deltakernel yet: Spark would record "
    "the table without creating a Delta table. Create it by path instead - "
    "df.write.format('delta').save(path) or deltakernel.spark.DeltaTable.create(spark).location(path)... - "
    "and query it with spark.read.format('delta').load(path) or "
    "CREATE TEMPORARY VIEW v USING delta OPTIONS (path '...')"
)


def is_catalog_delta_ddl(statement: str) -> bool:
    """`CREATE [OR REPLACE] [EXTERNAL] TABLE ... USING delta` / `REPLACE TABLE ... USING delta`."""
    return bool(_CREATE_TABLE.match(_SQL_COMMENT.sub(" ", statement)))


def _refuse_catalog_table() -> None:
    from ..errors import DeltaError

    raise DeltaError(CATALOG_MESSAGE)


def _patch_catalog(session_cls: type) -> None:
    """See the module docstring: refuse catalog DDL for delta in sessions where `enable()` ran."""
    original_sql = session_cls.sql  # type: ignore[attr-defined]

    @functools.wraps(original_sql)
    def sql(self: Any, sqlQuery: str, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_deltakernel_registered", False) and isinstance(sqlQuery, str) \
                and is_catalog_delta_ddl(sqlQuery):
            _refuse_catalog_table()
        return original_sql(self, sqlQuery, *args, **kwargs)

    session_cls.sql = sql  # type: ignore[attr-defined]
    try:
        from pyspark.sql.catalog import Catalog
    except ImportError:  # pragma: no cover
        return
    original_create = Catalog.createTable

    @functools.wraps(original_create)
    def create_table(self: Any, tableName: str, path: str | None = None, source: str | None = None,
                     *args: Any, **kwargs: Any) -> Any:
        if str(source or "").lower() == SOURCE_NAME and getattr(self._sparkSession, "_deltakernel_registered",
                                                                False):
            _refuse_catalog_table()
        return original_create(self, tableName, path, source, *args, **kwargs)

    Catalog.createTable = create_table  # type: ignore[method-assign]


def _is_delta(obj: Any) -> bool:
    return str(getattr(obj, "_dk_format", "") or "").lower() == SOURCE_NAME


def _patch(session_cls: type) -> None:
    global _PATCHED
    if _PATCHED:
        return
    _patch_catalog(session_cls)
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter

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

    original_load = DataFrameReader.load

    @functools.wraps(original_load)
    def load(self: Any, path: Any = None, format: str | None = None, schema: Any = None, **options: Any) -> Any:
        fmt = format or getattr(self, "_dk_format", None)
        if str(fmt or "").lower() != SOURCE_NAME or (path is not None and not isinstance(path, str)):
            return original_load(self, path, format, schema, **options)
        from .reader import read

        opts = {**_opts(self), **options}
        return read(self._spark, path, **opts)

    DataFrameReader.load = load  # type: ignore[method-assign]

    original_save = DataFrameWriter.save

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
        write(self._df, target, mode=mode or getattr(self, "_dk_mode", None) or "error", partitionBy=parts, **opts)
        return None

    DataFrameWriter.save = save  # type: ignore[method-assign]
    _PATCHED = True


def _opts(obj: Any) -> dict[str, Any]:
    d = obj.__dict__.get("_dk_options")
    if d is None:
        d = {}
        obj._dk_options = d
    return d


__all__ = ["enable"]
