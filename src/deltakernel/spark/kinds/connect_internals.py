"""The Spark Connect client internals `enable()`'s patches cannot do without, named in one place.

pyspark has no public way to build a Connect DataFrame from a logical plan, to run a SQL statement together with
the `{df}` frames its formatter collected, or to reach the plan a Connect writer holds. The patches in
`routing.py`, `streaming/routing.py` and `writer_v2.py` need each of these; they call the functions below and
never touch the private names themselves, so a pyspark release that moves one of them breaks one module, checked
by one test run (tests/spark/test_spark_install.py, tests/spark/test_spark_connect*.py).

Written for pyspark 4.0, 4.1, 4.2 and 4.3 (`TESTED_PYSPARK`): every name below has the same shape in the
sources of pyspark 4.0.4 and 4.1.3 (checked when this module was written) and the test suite runs it on the
installed release (4.3). What is used, per function:
- `plan_frame`: `pyspark.sql.connect.dataframe.DataFrame(plan, session)`; `plan_and_session`: its `_plan` and
  `_session` (the Connect `DataFrameWriterV2(plan, session, table)` that `writer_v2.py` subclasses).
- `writer_frame`: `DataFrameWriter._df` (a classic DataFrame, or a Connect `LogicalPlan`) and `._spark`.
- `stream_writer_frame`: Connect `DataStreamWriter._write_stream._child` (the plan) and `._session`.
- `format_sql` / `run_sql` / `sql_frame` / `sql_references`: Connect's `SQLStringFormatter(session)._temp_views`,
  `plan.SQL` (and its `views` parameter), `plan.SubqueryAlias`,
  `plan.CachedRelation`, `session.client.execute_command`, `session._client`, `DataFrame._execution_info`.
- `parse_ddl`: Connect `SparkSession._parse_ddl` (the server parses; bound to that session, which the public
  `DataType.fromDDL` is not: it uses the process's active session).
- `inline_rows`: the rows of an eager SQL command's result that came back in the command's own response
  (`DataFrame._plan` a `plan.CachedRelation` whose `_plan` is a proto `local_relation` holding Arrow IPC bytes), so
  a catalog statement costs one round trip instead of two (`sql` + `collect`).
- `command_effect`: the kind of a proto `Command` (`command_type` oneof; `sql_command.input.sql.query`, under
  `input.with_relations.root` when frames travel with the statement, or the older `sql_command.sql`;
  `create_dataframe_view.name` / `.is_global`; `write_operation`'s `save_type`) - what
  `SparkConnectClient.execute_command` / `execute_command_as_iterator` send (patched by `catalog_cache.py`);
  `config_changes`: a `ConfigRequest.Operation`'s `op_type`, `set.pairs` and `unset.keys`
  (`SparkConnectClient.config`, patched likewise);
  `catalog_session`: Connect `Catalog._sparkSession` (its `_execute_and_fetch(plan)` runs every catalog call,
  patched likewise; `Catalog.currentDatabase` reads `[0][0]` of the Arrow table it returns, `setCurrentDatabase`
  ignores it); `set_database_name`: `plan.SetCurrentDatabase._db_name`.
- `config_get` / `config_set`: `spark.conf._client.config(op)` with a proto `ConfigRequest.Operation`
  (`get_with_default` / `set` / `unset` of many `KeyValue` pairs: what Connect's `RuntimeConf._set_all` sends).
`session.owner_session` reads the readers' and writers' session attributes (`_spark`, `_session`, `_client`).
"""

from __future__ import annotations

import functools
from typing import Any

TESTED_PYSPARK = ("4.0", "4.1", "4.2", "4.3")


def plan_frame(plan: Any, session: Any) -> Any:
    """A Connect DataFrame over a Connect logical plan."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectFrame

    return ConnectFrame(plan, session)


def plan_and_session(df: Any) -> tuple[Any, Any]:
    """A Connect DataFrame's logical plan and session (what Connect's writers are built from)."""
    return df._plan, df._session


def writer_frame(writer: Any) -> Any:
    """The DataFrame a (classic or Connect) DataFrameWriter writes: Connect's writer holds its logical plan."""
    df = writer._df
    if hasattr(df, "sparkSession"):
        return df
    return plan_frame(df, writer._spark)


def stream_writer_frame(writer: Any) -> Any:
    """The streaming DataFrame a (classic or Connect) DataStreamWriter writes."""
    df = writer.__dict__.get("_df")
    if df is not None:
        return df
    return plan_frame(writer._write_stream._child, writer._session)


def format_sql(session: Any, text: str, kwargs: dict[str, Any]) -> tuple[str, list[tuple[Any, str]]]:
    """Connect's `{df}` formatting of `spark.sql(text, **kwargs)`: the text and the (frame, view name) pairs that
    must travel with the statement."""
    from pyspark.sql.connect.sql_formatter import SQLStringFormatter

    formatter = SQLStringFormatter(session)
    formatted = formatter.format(text, **kwargs)
    return formatted, list(formatter._temp_views)


def run_sql(session: Any, text: str, args: Any, views: list[tuple[Any, str]]) -> Any:
    """Connect's `SparkSession.sql` of an already formatted `text` with the `{df}` frames `views` (pyspark's own
    `sql` would format the text again)."""
    from pyspark.sql.connect import functions as CF
    from pyspark.sql.connect.plan import CachedRelation

    named = {k: CF.lit(v) for k, v in args.items()} if isinstance(args, dict) else {}
    positional = [CF.lit(v) for v in args] if isinstance(args, list) else []
    cmd = _sql_plan(text, positional, named, views)
    _data, properties, info = session.client.execute_command(cmd.command(session._client))
    if "sql_command_result" in properties:
        df = plan_frame(CachedRelation(properties["sql_command_result"]), session)
        df._execution_info = info
        return df
    return plan_frame(cmd, session)


def _sql_plan(text: str, positional: list[Any], named: dict[str, Any], views: list[tuple[Any, str]]) -> Any:
    """Connect's `SQL` plan of `text` with its parameters and the (frame, name) pairs travelling as references."""
    from pyspark.sql.connect.plan import SQL, SubqueryAlias

    return SQL(text, positional, named, [SubqueryAlias(df._plan, name) for df, name in views])


@functools.cache
def sql_references() -> bool:
    """Can a Connect SQL plan carry frames as references (`plan.SQL(..., views)`, `WithRelations`: pyspark 4.0+)?"""
    import inspect

    try:
        from pyspark.sql.connect.plan import SQL
    except ImportError:  # pragma: no cover - pyspark without the connect extra
        return False
    return "views" in inspect.signature(SQL.__init__).parameters


def sql_frame(session: Any, text: str, views: list[tuple[Any, str]]) -> Any:
    """A lazy Connect DataFrame of the query `text` with the (frame, name) pairs `views` as its references: nothing
    is sent until the frame is (a view's text read by a statement: analysed with it)."""
    return plan_frame(_sql_plan(text, [], {}, views), session)


def parse_ddl(session: Any, text: str) -> Any:
    """A DDL type or column list parsed by the Connect server of `session` (a pyspark DataType)."""
    return session._parse_ddl(text)


def inline_rows(df: Any) -> Any:
    """The Arrow table of an eager SQL command's result (`spark.sql("SHOW ...")` on Connect) when the server sent
    the rows inline with the command's response; None when it did not (read them with `collect`)."""
    rel = getattr(getattr(df, "_plan", None), "_plan", None)
    try:
        if rel is None or rel.WhichOneof("rel_type") != "local_relation" or not rel.local_relation.HasField("data"):
            return None
    except (AttributeError, ValueError, TypeError):  # not a proto Relation: another plan shape
        return None
    import pyarrow as pa

    return pa.ipc.open_stream(rel.local_relation.data).read_all()


def command_effect(command: Any) -> tuple[str, str | None]:
    """What a Connect proto `Command` is, as far as the session catalog is concerned: ("sql", text),
    ("temp_view", name) for a session-local `createOrReplaceTempView`, ("path_write", None) for a write by path,
    else (the command's type, None)."""
    try:
        kind = command.WhichOneof("command_type") or ""
    except (AttributeError, ValueError, TypeError):
        return "", None
    if kind == "sql_command":
        sc = command.sql_command
        if not sc.HasField("input"):
            return "sql", str(sc.sql)
        rel = sc.input.with_relations.root if sc.input.WhichOneof("rel_type") == "with_relations" else sc.input
        return "sql", str(rel.sql.query)
    if kind == "create_dataframe_view":
        view = command.create_dataframe_view
        return ("global_view", None) if view.is_global else ("temp_view", str(view.name))
    if kind == "write_operation" and command.write_operation.WhichOneof("save_type") == "path":
        return "path_write", None
    return kind, None


def config_changes(operation: Any) -> list[str] | None:
    """The session confs a Connect proto `ConfigRequest.Operation` (what `SparkConnectClient.config` sends) sets or
    unsets (`op_type` oneof: `set.pairs`, `unset.keys`); None when it changes none ([""]: unknown, may change)."""
    try:
        kind = operation.WhichOneof("op_type")
        if kind == "set":
            return [str(p.key) for p in operation.set.pairs]
        if kind == "unset":
            return [str(k) for k in operation.unset.keys]
        return None
    except (AttributeError, ValueError, TypeError):  # another shape: assume it may
        return [""]


def catalog_session(catalog: Any) -> Any:
    """The Connect SparkSession of a Connect `spark.catalog`."""
    return catalog._sparkSession


def set_database_name(plan: Any) -> str | None:
    """The database a Connect `SetCurrentDatabase` catalog plan switches to."""
    name = getattr(plan, "_db_name", None)
    return name if isinstance(name, str) else None


def _config_client(spark: Any) -> Any:
    client = getattr(spark.conf, "_client", None)
    if client is None or not hasattr(client, "config"):
        raise AttributeError("this Connect client has no config request")
    return client


def config_get(spark: Any, keys: list[str]) -> dict[str, str | None]:
    """Many session confs in one config request (None: unset)."""
    from pyspark.sql.connect.proto import base_pb2 as pb

    op = pb.ConfigRequest.Operation(get_with_default=pb.ConfigRequest.GetWithDefault(
        pairs=[pb.KeyValue(key=k) for k in keys]))
    pairs = _config_client(spark).config(op).pairs
    return {k: (None if v is None else str(v)) for k, v in pairs}


def config_set(spark: Any, values: dict[str, str | None]) -> None:
    """Set many session confs (None: unset) in at most two config requests."""
    from pyspark.sql.connect.proto import base_pb2 as pb

    to_set = {k: v for k, v in values.items() if v is not None}
    to_unset = [k for k, v in values.items() if v is None]
    client = _config_client(spark)
    if to_set:
        client.config(pb.ConfigRequest.Operation(set=pb.ConfigRequest.Set(
            pairs=[pb.KeyValue(key=k, value=v) for k, v in to_set.items()])))
    if to_unset:
        client.config(pb.ConfigRequest.Operation(unset=pb.ConfigRequest.Unset(keys=to_unset)))


__all__ = ["TESTED_PYSPARK", "catalog_session", "command_effect", "config_changes", "config_get", "config_set",
           "format_sql",
           "inline_rows", "parse_ddl",
           "plan_and_session", "plan_frame", "run_sql", "set_database_name", "stream_writer_frame", "writer_frame"]
