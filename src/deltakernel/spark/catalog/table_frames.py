"""The latest read plan of each Delta table a session uses, and Delta catalog tables Spark resolves by itself.

Every statement naming a table reads its latest version. Building a plan costs a snapshot load; checking that a
plan is still current costs one log listing (`has_commit_after`), so plans are kept per session and rebuilt
only when the table has a new commit, or its latest commit file changed (a table dropped and created again);
time travel and change-feed reads are never kept.

Delta catalog tables: Spark resolves a catalog table through its session catalog, and for a table whose provider
is a Python data source it would call that source without a path (Spark 4 passes no options to it). But Spark
consults the session catalog's relation cache first (`SessionCatalog.cacheTable` / `getCachedPlan`, what the
Hive metastore uses for its tables). `cache_catalog_plan` puts the table's native plan (Delta file index, DVs,
column mapping) there, so Spark's own analysis - permanent views, SQL Spark runs by itself, `spark.table` - reads
the Delta table with file skipping. The entry is refreshed whenever deltakernel sees the name (every routed
statement, including the views it reads, `spark.table`, `DeltaTable.forName`); `REFRESH TABLE` or `DROP TABLE`
drop it, and the next routed access puts it back.

Lifetime and threads: the kept plans are a small LRU per session (`MAX_KEPT` tables; a table's entry is replaced
when it moves on, so one plan per table and options). Two threads of one session may build plans of one table
at once; a plan never replaces a newer one (kept plan, relation-cache entry, `register_view`), so a statement
never reads an older version than one an earlier statement of the session read (issue 31, item 5).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ...kernel.log.segment import commits_from
from .entry import SESSION_CATALOG

_lock = threading.RLock()
MAX_KEPT = 64  # plans kept per session (each holds a snapshot's file table and a JVM plan)
_TIME_TRAVEL = {"versionasof", "timestampasof", "readchangefeed", "readchangedata", "startingversion",
                "startingtimestamp", "endingversion", "endingtimestamp"}


@dataclass
class _Kept:
    frame: Any
    storage: Any
    version: int
    commit: Any = None  # ObjectMeta of the version's commit file when the frame was built
    cached_as: Any = None  # the JVM plan last put in the relation cache for this frame

    def current(self) -> bool:
        """Still the latest version, from the same commit file (one listing)?"""
        try:
            tail = commits_from(self.storage, self.version)
        except Exception:
            return False
        meta = tail.get(self.version)
        return list(tail) == [self.version] and meta is not None and self.commit is not None and \
            (meta.size, meta.last_modified_ms) == (self.commit.size, self.commit.last_modified_ms)


def _kept(spark: Any) -> OrderedDict[tuple[Any, ...], _Kept]:
    store = spark.__dict__.get("_dk_latest_frames")
    if store is None:
        store = spark.__dict__.setdefault("_dk_latest_frames", OrderedDict())
    return store  # type: ignore[no-any-return]


def _get(store: OrderedDict[tuple[Any, ...], _Kept], key: tuple[Any, ...]) -> _Kept | None:
    with _lock:
        kept = store.get(key)
        if kept is not None:
            store.move_to_end(key)
        return kept


def _exists(storage: Any, version: int) -> bool:
    """Is `version` still in the table's log (a newer plan of a table dropped and created again is not)?"""
    if storage is None:
        return False
    try:
        return version in commits_from(storage, version)
    except Exception:
        return False


def _put(store: OrderedDict[tuple[Any, ...], _Kept], key: tuple[Any, ...], kept: _Kept) -> _Kept:
    """Keep `kept` unless a newer plan of the table is kept already (then that one); least recently used
    entries beyond MAX_KEPT are dropped."""
    with _lock:
        old = store.get(key)
        if old is not None and old.version > kept.version and _exists(old.storage, old.version):
            store.move_to_end(key)
            return old
        store[key] = kept
        store.move_to_end(key)
        while len(store) > MAX_KEPT:
            store.popitem(last=False)
        return kept


def latest_frame(spark: Any, location: str, options: dict[str, Any] | None = None,
                 table: tuple[str, str] | None = None) -> Any:
    """`reader.read(spark, location, **options)`, reusing the session's plan while the table has no newer commit;
    `table`: the catalog table at `location` (its plan is then tied to the catalog entry)."""
    from ..scan.reader import DeltaFrame, read

    options = dict(options or {})
    if any(k.lower() in _TIME_TRAVEL for k in options):
        return read(spark, location, table=table, **options)
    key = (location, table, tuple(sorted((k.lower(), str(v)) for k, v in options.items())))
    store = _kept(spark)
    kept = _get(store, key)
    if kept is not None and kept.current():
        return kept.frame
    frame = read(spark, location, table=table, **options)
    if isinstance(frame, DeltaFrame):
        snap = frame.snapshot
        try:
            commit = commits_from(snap.storage, snap.version).get(snap.version)
        except Exception:
            commit = None
        return _put(store, key, _Kept(frame, snap.storage, snap.version, commit)).frame
    return frame


def cache_catalog_plan(spark: Any, ref: Any) -> Any:
    """Put the latest plan of Delta catalog table `ref` in Spark's relation cache (see the module docstring);
    returns the frame."""
    from ..scan.frames import DeltaFrame
    from ..scan.read_plans import read_plans

    if not ref.is_catalog or not read_plans(spark).caches_catalog_plans:  # Connect: the router rewrites names
        return latest_frame(spark, ref.location)
    table = (ref.db or "default", str(ref.table))
    frame = latest_frame(spark, ref.location, table=table)
    key = (ref.location, table, ())
    store = _kept(spark)
    kept = _get(store, key)
    entry_key = ("catalog", ref.db or "default", ref.table)
    version = frame.snapshot.version if isinstance(frame, DeltaFrame) else -1
    with _lock:  # check and replace at once: a slower thread never puts back an older plan
        cached = _get(store, entry_key)
        newer = cached is not None and cached.version > version and _exists(cached.storage, cached.version)
        if cached is not None and (cached.frame is frame or newer) and _still_cached(spark, ref):
            return cached.frame
        from ..kinds.classic import session_state

        name = _qualified_name(spark, ref)
        catalog = session_state(spark, "catalog")
        plan = frame._jdf.queryExecution().analyzed()
        catalog.invalidateCachedTable(name)
        catalog.cacheTable(name, plan)
        _put(store, entry_key, _Kept(frame, kept.storage if kept else None, version, plan))
    return frame


def register_view(spark: Any, name: str, frame: Any) -> None:
    """`frame.createOrReplaceTempView(name)` unless the view already reads a newer snapshot of the same table
    (another thread of the session registered it)."""
    from ..scan.frames import DeltaFrame

    if not isinstance(frame, DeltaFrame):  # the change data feed, an expanded view: not versioned
        frame.createOrReplaceTempView(name)
        return
    version = frame.snapshot.version
    views = spark.__dict__.get("_dk_view_versions")
    if views is None:
        views = spark.__dict__.setdefault("_dk_view_versions", {})
    storage = frame.snapshot.storage
    with _lock:
        registered = views.get(name)
        if registered is not None and registered[0] > version and registered[1].root_uri == storage.root_uri \
                and _exists(storage, registered[0]):
            return
        frame.createOrReplaceTempView(name)
        views[name] = (version, storage)


def _still_cached(spark: Any, ref: Any) -> bool:
    """Is our plan still in Spark's relation cache (REFRESH TABLE / DROP TABLE / eviction remove it)?"""
    from ..kinds.classic import session_state

    try:
        return session_state(spark, "catalog").getCachedTable(_qualified_name(spark, ref)) is not None
    except Exception:
        return False


def _qualified_name(spark: Any, ref: Any) -> Any:
    """The relation cache's key of catalog table `ref` (one round trip: the class resolved once per gateway, not
    one package segment at a time on every statement naming the table)."""
    from ..scan.jvm_refs import jclass

    return jclass(spark._jvm, "org.apache.spark.sql.catalyst.QualifiedTableName")(
        SESSION_CATALOG, ref.db or "default", ref.table)


__all__ = ["MAX_KEPT", "cache_catalog_plan", "latest_frame", "register_view"]
