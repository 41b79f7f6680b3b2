"""`enable(spark)` / `disable(spark)`: the one registry of everything deltakernel changes in pyspark.

Why one registry: routing `format("delta")`, `spark.sql`, catalog tables and streams through deltakernel means
replacing methods of pyspark's classes (classic and Spark Connect: readers, writers, sessions, catalogs,
DataFrames, stream readers and writers) - Spark has no hook for them. Patches spread over modules, each with its
own "already done?" flag, cannot be undone and race when two threads enable at once. Here:
- every patch is declared once, in `PATCHES`: (module, class - or None for a module function -, attribute,
  factory). A factory (`"module:function"`, resolved lazily) gets pyspark's original and returns the
  replacement; the replacement bodies stay next to what they route (`routing.py`, `streaming/routing.py`,
  `writer_v2.py`, `_errors.py`). Classes a pyspark build lacks (no Connect extra) are skipped.
- patches are applied under one lock, once per process (`applications()` counts it), whatever the number of
  sessions or threads enabling; sessions are enabled one by one (routing is per session: every replacement
  asks `is_enabled(session)` and otherwise calls pyspark's original).
- `disable(spark)`: the session is routed no more, the session confs `enable` set are put back (unset when they
  were unset; left alone when the user changed them since); when no enabled session remains in the process,
  every patched attribute is restored exactly (the class's `__dict__` holds pyspark's own objects again, a
  method the class inherited is removed again). An attribute something else replaced over our replacement is
  left as it is (logged): restoring it would drop the other library's patch.
What stays: the "delta" Python data source registered in the session (Spark cannot unregister one), so
`format("delta")` after `disable` reaches Spark's Python source path - not the native plan; Delta SQL (MERGE,
DESCRIBE HISTORY, ...) is Spark's again (refused by its parser). Nothing process-wide is changed besides the
patched attributes: PySpark's call-site capture is switched off per thread (`_errors.internal_plans`), not
process-wide.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import Any

from ..scan.datasource import register
from .state import MISSING as _MISSING
from .state import Applied as _Applied
from .state import State as _State
from .state import applications, is_enabled, original, patched

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Patch:
    """One replaced attribute: `owner` in `module` (a class name, or None for the module itself), `attr`, and the
    factory (`"module:function"` under deltakernel.spark) that turns pyspark's original into the replacement."""

    module: str
    owner: str | None
    attr: str
    factory: str


def _both(classic: str, connect: str, owner: str, attrs: dict[str, str]) -> list[Patch]:
    return [Patch(module, owner, attr, factory) for module in (classic, connect) for attr, factory in attrs.items()]


def _routing(**attrs: str) -> dict[str, str]:
    """{attribute: factory} for factories of `install/routing.py`."""
    return {attr: f"install.routing:{function}" for attr, function in attrs.items()}


#: every patch `enable()` applies (pyspark 4.x; classic and Connect classes)
PATCHES: tuple[Patch, ...] = (
    # format("delta") reads and writes, by path and by catalog name
    *_both("pyspark.sql.readwriter", "pyspark.sql.connect.readwriter", "DataFrameReader", _routing(
        format="record_format", option="record_option", options="record_options", load="reader_load",
        table="reader_table")),
    *_both("pyspark.sql.readwriter", "pyspark.sql.connect.readwriter", "DataFrameWriter", _routing(
        format="record_format", option="record_option", options="record_options", mode="record_mode",
        partitionBy="record_partition_by", save="writer_save", saveAsTable="writer_save_as_table",
        insertInto="writer_insert_into")),
    # Delta SQL and catalog tables
    *_both("pyspark.sql.session", "pyspark.sql.connect.session", "SparkSession", _routing(
        sql="session_sql", table="session_table")),
    *_both("pyspark.sql.catalog", "pyspark.sql.connect.catalog", "Catalog", _routing(
        createTable="catalog_create_table")),
    Patch("pyspark.sql.connect.catalog", "Catalog", "listColumns", "install.routing:catalog_list_columns"),
    # df.writeTo(name) and df.explain()
    Patch("pyspark.sql.classic.dataframe", "DataFrame", "writeTo", "api.writer_v2:classic_write_to"),
    Patch("pyspark.sql.connect.dataframe", "DataFrame", "writeTo", "api.writer_v2:connect_write_to"),
    Patch("pyspark.sql.classic.dataframe", "DataFrame", "explain", "install.routing:frame_explain"),
    # streams
    *_both("pyspark.sql.streaming.readwriter", "pyspark.sql.connect.streaming.readwriter", "DataStreamWriter", {
        "format": "streaming.routing:stream_format", "partitionBy": "streaming.routing:stream_partition_by",
        "start": "streaming.routing:stream_start", "toTable": "streaming.routing:stream_to_table"}),
    *_both("pyspark.sql.streaming.readwriter", "pyspark.sql.connect.streaming.readwriter", "DataStreamReader", {
        "format": "streaming.routing:stream_format", "load": "streaming.routing:stream_reader_load",
        "table": "streaming.routing:stream_reader_table"}),
    # Connect: Delta reads are lazy leaves of the client plan, planned when the plan is serialized (the command
    # classes' `command` too: `all_patches`); temporary views over them are remembered (scan/connect_plan.py)
    Patch("pyspark.sql.connect.plan", "LogicalPlan", "to_proto", "scan.connect_plan:serialize_hook"),
    Patch("pyspark.sql.connect.dataframe", "DataFrame", "createTempView", "scan.connect_plan:temp_view_hook"),
    Patch("pyspark.sql.connect.dataframe", "DataFrame", "createOrReplaceTempView",
          "scan.connect_plan:temp_view_hook"),
    Patch("pyspark.sql.connect.catalog", "Catalog", "dropTempView", "scan.connect_plan:drop_temp_view_hook"),
    *(Patch("pyspark.sql.connect.dataframe", "DataFrame", m, "scan.connect_plan:cache_hook")
      for m in ("persist", "unpersist", "storageLevel")),
    # Connect: a session's kept catalog answers go when the session may have changed the catalog
    # (kinds/catalog_cache.py): every command its client sends, every spark.catalog call
    Patch("pyspark.sql.connect.client.core", "SparkConnectClient", "execute_command",
          "kinds.catalog_cache:client_command_hook"),
    Patch("pyspark.sql.connect.client.core", "SparkConnectClient", "execute_command_as_iterator",
          "kinds.catalog_cache:client_command_iterator_hook"),
    Patch("pyspark.sql.connect.catalog", "Catalog", "_execute_and_fetch", "kinds.catalog_cache:catalog_call_hook"),
    Patch("pyspark.sql.connect.client.core", "SparkConnectClient", "config", "kinds.catalog_cache:client_config_hook"),
    # PySpark's call-site capture, asked per thread (see `_errors.internal_plans`)
    Patch("pyspark.errors.utils", None, "is_debugging_enabled", "common.task_errors:thread_debugging"),
    # classic: Spark's SQL functions looked up once per gateway, not twice per Column (common/jvm_functions.py)
    Patch("pyspark.sql.functions.builtin", None, "_get_jvm_function", "common.jvm_functions:cached_jvm_function"),
)

#: session confs `enable()` sets: column mapping id mode matches Parquet field ids (files without ids - older
#: writers - read by name); the registered Python source skips files with pushed filters
ID_CONFS = {
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.read.ignoreMissing": "true",
    "spark.sql.python.filterPushdown.enabled": "true",
}

def enable(spark: Any) -> Any:
    """Make `spark.read.format("delta")` / `df.write.format("delta")`, Delta SQL and Delta catalog tables
    deltakernel's in this session. Idempotent and thread-safe; undone by `disable(spark)`. Returns `spark`."""
    with _State.lock:
        if is_enabled(spark):
            return spark
        _register_source(spark)
        changed = _set_confs(spark)
        try:
            from .python_workers import check_python_workers

            check_python_workers(spark)
            _apply_patches()
        except BaseException:
            _restore_confs(spark, changed)
            raise
        _State.sessions[spark] = changed
    return spark


def disable(spark: Any) -> Any:
    """Undo `enable(spark)` for this session: no routing, its confs back; when no enabled session remains in the
    process, pyspark's classes are restored exactly (module docstring). A session not enabled: no-op."""
    with _State.lock:
        changed = _State.sessions.pop(spark, None) if is_enabled(spark) else None
        if changed is None:
            return spark
        _restore_confs(spark, changed)
        spark.__dict__.pop("_dk_sent_views", None)  # views dropped while disabled must be made again
        if not len(_State.sessions):
            _restore_patches()
    return spark


def patch_owners() -> list[Any]:
    """Every class or module `PATCHES` names that this pyspark has (patched or not)."""
    owners: list[Any] = []
    for patch in all_patches():
        owner = _owner(patch)
        if owner is not None and all(o is not owner for o in owners):
            owners.append(owner)
    return owners


# ----------------------------------------------------------------------------- sessions
def _register_source(spark: Any) -> None:
    try:
        register(spark)
    except Exception as e:  # a delta-spark jar owns "delta" already, or a Spark without Python sources
        if _State.source_registered and "DATA_SOURCE_ALREADY_EXISTS" in str(e):
            spark._deltakernel_registered = True  # spark.newSession() of an enabled session: the source is shared
        else:
            from ...errors import DeltaError

            raise DeltaError(f"cannot register the 'delta' Python data source: {e}") from e
    _State.source_registered = True


def _session_confs(spark: Any) -> dict[str, str]:
    confs = dict(ID_CONFS)
    from ..kinds.session import is_connect

    if is_connect(spark):
        from ..scan.public_plan import keep_file_listing_on_driver

        before = _conf(spark, _DISCOVERY_THRESHOLD)
        keep_file_listing_on_driver(spark)  # decides whether to raise it; undone by disable like the others
        after = _conf(spark, _DISCOVERY_THRESHOLD)
        if after is not None and after != before:
            _restore_one(spark, _DISCOVERY_THRESHOLD, before)
            confs[_DISCOVERY_THRESHOLD] = after
    return confs


_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


def _conf(spark: Any, key: str) -> str | None:
    """The session's explicitly set value of `key`, None when unset."""
    try:
        value = spark.conf.get(key, None)
    except Exception:
        return None
    return None if value is None else str(value)


def _set_confs(spark: Any) -> dict[str, tuple[str | None, str]]:
    changed: dict[str, tuple[str | None, str]] = {}
    for key, value in _session_confs(spark).items():
        before = _conf(spark, key)
        if before == value:
            continue
        try:
            spark.conf.set(key, value)
        except Exception:  # a Spark without the setting
            continue
        changed[key] = (before, value)
    return changed


def _restore_one(spark: Any, key: str, before: str | None) -> None:
    try:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
    except Exception:  # a stopped session: nothing to restore
        pass


def _restore_confs(spark: Any, changed: dict[str, tuple[str | None, str]]) -> None:
    for key, (before, ours) in changed.items():
        if _conf(spark, key) == ours:  # the user's own change since enable() stays
            _restore_one(spark, key, before)


# ----------------------------------------------------------------------------- patches
def _owner(patch: Patch) -> Any:
    try:
        module = importlib.import_module(patch.module)
    except ImportError:  # pyspark without the connect extra (grpc), or another major version
        return None
    if patch.owner is None:
        return module
    return getattr(module, patch.owner, None)


def _factory(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(f"deltakernel.spark.{module}"), function)


def all_patches() -> list[Patch]:
    """`PATCHES` plus one serialization hook per Connect command class (their set depends on the pyspark line)."""
    from ..scan.connect_plan import command_classes

    return [*PATCHES, *(Patch("pyspark.sql.connect.plan", name, "command", "scan.connect_plan:serialize_hook")
                        for name in command_classes())]


def _apply_patches() -> None:
    if _State.applied:
        return
    done: list[_Applied] = []
    try:
        for patch in all_patches():
            owner = _owner(patch)
            if owner is None or not hasattr(owner, patch.attr):
                continue
            before = vars(owner).get(patch.attr, _MISSING)
            replacement = _factory(patch.factory)(getattr(owner, patch.attr))
            setattr(owner, patch.attr, replacement)
            done.append(_Applied(owner, patch.attr, before, replacement))
    except BaseException:
        _undo(done)
        raise
    _State.applied = done
    _State.applications += 1


def _undo(applied: list[_Applied]) -> None:
    for a in reversed(applied):
        current = vars(a.owner).get(a.attr, _MISSING)
        if current is not a.replacement:
            _log.warning("not restoring %s.%s: replaced by something else since enable()",
                         getattr(a.owner, "__qualname__", getattr(a.owner, "__name__", a.owner)), a.attr)
            continue
        if a.before is _MISSING:
            delattr(a.owner, a.attr)
        else:
            setattr(a.owner, a.attr, a.before)


def _restore_patches() -> None:
    applied, _State.applied = _State.applied, []
    _undo(applied)


__all__ = ["ID_CONFS", "PATCHES", "Patch", "all_patches", "applications", "disable", "enable", "is_enabled", "original",
           "patch_owners", "patched"]
