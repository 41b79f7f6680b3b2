"""`QueryBuilder`: deltalake's SQL API (`QueryBuilder().register(name, table).execute(sql)`) on DataFusion.

Each registered table is a `deltakernel.datafusion` dataset pinned to the table's loaded version, so file
skipping, deletion vectors and column mapping apply exactly as in `deltakernel.datafusion.register`. The
session also has `delta_scan(...)` / `delta_changes(...)` and `CREATE EXTERNAL TABLE ... STORED AS DELTA`.

Kept outside `deltakernel.datafusion` so `import deltakernel` does not import DataFusion: it is imported
on the first `QueryBuilder()`, and a missing install is a `DeltaError` naming the extra.

`execute` returns a `pyarrow.RecordBatchReader` (deltalake returns arro3's; both offer `read_all()`,
iteration, `schema` and the Arrow C stream interface, and `load_cdf` here also returns pyarrow's). The
result is streamed by DataFusion partition by partition, not collected first.

Beyond deltalake, `execute` also runs Delta DML in Spark SQL syntax on the registered tables — `INSERT INTO
/ OVERWRITE`, `DELETE FROM`, `UPDATE`, `MERGE INTO` (`deltakernel.datafusion.dml`) — returning one row of
delta-spark's metrics (`num_affected_rows`, ...) the same way, and re-pinning the registered table to the
version committed so the next query sees it (the `DeltaTable` object that was registered keeps its version).

A QueryBuilder works in a process forked from the one that made or used it: DataFusion's runtime does not
survive `fork()`, so the child loads a fresh DataFusion (`deltakernel.datafusion.forking`) and the builder
rebuilds its session there on first use, with the Delta tables registered in it (at their pinned versions).
Other objects of the parent's session (tables registered directly on `context`, DataFrames) do not carry over.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from .errors import DeltaError

_EXTRA_HINT = "QueryBuilder needs DataFusion: pip install 'deltakernel[datafusion]' (datafusion>=50,<60)"
_IDENT_NORMALIZATION = "datafusion.sql_parser.enable_ident_normalization"


class QueryError(DeltaError):
    """A statement DataFusion could not parse, plan or run."""


def _require_datafusion() -> Any:
    """The `datafusion` module usable in this process (re-imported over a fresh instance in a fork child)."""
    try:
        importlib.import_module("datafusion")
    except ImportError as e:
        raise DeltaError(f"{_EXTRA_HINT} ({e})") from e
    from .datafusion.forking import ensure_usable

    ensure_usable()
    return importlib.import_module("datafusion")


class QueryBuilder:
    """SQL over Delta tables (deltalake's `QueryBuilder` API), backed by DataFusion and the kernel.

        from deltakernel import DeltaTable, QueryBuilder
        qb = QueryBuilder().register("t", DeltaTable("path/to/table"))
        qb.execute("SELECT region, sum(amount) FROM t GROUP BY region").read_all()
        qb.execute("DELETE FROM t WHERE amount < 0").read_all()   # Delta DML: [{'num_affected_rows': ...}]
    """

    def __init__(self, session_config: dict[str, str] | None = None) -> None:
        # deltalake's QueryBuilder keeps the case of unquoted identifiers (`select submittedAt from t` finds the
        # column `submittedAt`; `NAME` does not find `name`); a caller's session_config may turn it back on
        self._config: dict[str, str] | None = {_IDENT_NORMALIZATION: "false"}
        self._config.update({str(k): str(v) for k, v in (session_config or {}).items()})
        self._ctx = self._new_context()
        self._pid = os.getpid()

    def _new_context(self) -> Any:
        _require_datafusion()
        from .datafusion import session_context
        from .datafusion.session_defaults import session_config

        return session_context(session_config(self._config))  # deltakernel's defaults, then the caller's

    def _session(self) -> Any:
        """The SessionContext; in a fork child, first rebuilt there (see the module docstring)."""
        if self._pid != os.getpid():
            from .datafusion.sql_tables import carry_over
            from .storage.forksafe import keep

            old, new = self._ctx, self._new_context()
            carry_over(old, new)
            keep(old)  # never finalized here: it belongs to the parent's DataFusion
            self._ctx, self._pid = new, os.getpid()
        return self._ctx

    @property
    def context(self) -> Any:
        """The underlying `datafusion.SessionContext` (for DataFusion's DataFrame API)."""
        return self._session()

    def register(self, table_name: str, delta_table: Any) -> QueryBuilder:
        """Make `delta_table` (its loaded version, pinned) queryable as `table_name`; returns self.

        Accepts a `deltakernel.DeltaTable`; a `deltalake.DeltaTable` is read by deltakernel at its
        `table_uri` and loaded `version()` (its storage options are not reachable: use deltakernel's).
        """
        from .datafusion import dataset
        from .datafusion.dml import remember_table
        from .datafusion.listing import register_in

        if not isinstance(table_name, str) or not table_name:
            raise DeltaError(f"table_name must be a non-empty string, got {table_name!r}")
        if hasattr(delta_table, "snapshot"):  # deltakernel.DeltaTable (duck-typed: no import cycle)
            ds = dataset(delta_table)
        elif hasattr(delta_table, "table_uri") and callable(getattr(delta_table, "version", None)):
            ds = dataset(delta_table.table_uri, version=delta_table.version())
        else:
            raise DeltaError(f"register() wants a DeltaTable, got {type(delta_table).__name__}")
        ctx = self._session()
        if ctx.table_exist(table_name):  # re-registering a name replaces it, as in deltalake
            ctx.deregister_table(table_name)
        register_in(ctx, table_name, ds)
        remember_table(ctx, table_name, ds)
        return self

    def execute(self, sql: str) -> pa.RecordBatchReader:
        """Plan `sql` and stream its result. Planning errors (unknown column, syntax) raise `QueryError`
        here; errors while reading raise `QueryError` (or the kernel's DeltaError) from the reader.

        Delta DML on a registered table (Spark SQL: `INSERT INTO|OVERWRITE`, `DELETE FROM`, `UPDATE`,
        `MERGE INTO`) runs here and returns its metrics row; its errors are DeltaErrors
        (`deltakernel.datafusion.DmlSyntaxError`, `DmlTargetError`, `DmlError`, or the operation's own such
        as `InvalidFilterError`) and leave the table unchanged."""
        from .datafusion import row_filters
        from .datafusion.dml import execute_dml
        from .datafusion.streams import reader

        ctx = self._session()
        metrics = execute_dml(ctx, sql)  # None: not Delta DML
        if metrics is not None:
            return metrics.to_reader()
        try:
            df = row_filters.query(ctx, sql)  # the Parquet row filter only where it pays (same rows)
            schema = df.schema()
            stream = reader(df)  # all partitions at once: a join's dynamic filter waits for each (streams.py)
        except DeltaError:
            raise
        except Exception as e:  # DataFusion raises plain Exception subclasses
            from .datafusion.sql_tables import udtf_error

            original = udtf_error(e)
            if original is not None:  # delta_scan / delta_changes raised it: keep its type and message
                raise original from e
            raise QueryError(f"{e} (in: {_head(sql)})") from e
        return pa.RecordBatchReader.from_batches(schema, _guarded(stream, sql))


def _guarded(stream: pa.RecordBatchReader, sql: str) -> Iterator[pa.RecordBatch]:
    """`stream`'s batches; DataFusion / Arrow errors while executing become `QueryError`. Each batch is pulled
    with garbage collection paused (`datafusion.dataset.gc_paused`; not across yields: the caller may hold
    a half-read reader for long)."""
    from .datafusion.dataset import gc_paused

    try:
        while True:
            with gc_paused():
                try:
                    batch = stream.read_next_batch()
                except StopIteration:
                    return
            yield batch
    except DeltaError:
        raise
    except Exception as e:
        raise QueryError(f"{e} (in: {_head(sql)})") from e
    finally:
        stream.close()


def _head(sql: str) -> str:
    first = sql.strip().splitlines()[0] if sql.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"


__all__ = ["QueryBuilder", "QueryError"]
