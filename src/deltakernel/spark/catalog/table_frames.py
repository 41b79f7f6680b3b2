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
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from ...kernel.log.segment import commits_from
from .entry import SESSION_CATALOG

_lock = threading.Lock()
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


def _kept(spark: Any) -> dict[tuple[Any, ...], _Kept]:
    store = spark.__dict__.get("_dk_latest_frames")
    if store is None:
        store = spark.__dict__.setdefault("_dk_latest_frames", {})
    return store  # type: ignore[no-any-return]


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
    with _lock:
        kept = store.get(key)
    if kept is not None and kept.current():
        return kept.frame
    frame = read(spark, location, table=table, **options)
    if isinstance(frame, DeltaFrame):
        snap = frame.snapshot
        try:
            commit = commits_from(snap.storage, snap.version).get(snap.version)
        except Exception:
            commit = None
        with _lock:
            store[key] = _Kept(frame, snap.storage, snap.version, commit)
    return frame


def cache_catalog_plan(spark: Any, ref: Any) -> Any:
    """Put the latest plan of Delta catalog table `ref` in Spark's relation cache (see the module docstring);
    returns the frame."""
    from ..scan.read_plans import read_plans

    if not ref.is_catalog or not read_plans(spark).caches_catalog_plans:  # Connect: the router rewrites names
        return latest_frame(spark, ref.location)
    table = (ref.db or "default", str(ref.table))
    frame = latest_frame(spark, ref.location, table=table)
    key = (ref.location, table, ())
    store = _kept(spark)
    with _lock:
        kept = store.get(key)
        entry_key = ("catalog", ref.db or "default", ref.table)
        cached = store.get(entry_key)
    if cached is not None and cached.frame is frame and _still_cached(spark, ref):
        return frame
    jvm = spark._jvm
    name = jvm.org.apache.spark.sql.catalyst.QualifiedTableName(SESSION_CATALOG, ref.db or "default", ref.table)
    catalog = spark._jsparkSession.sessionState().catalog()
    plan = frame._jdf.queryExecution().analyzed()
    catalog.invalidateCachedTable(name)
    catalog.cacheTable(name, plan)
    with _lock:
        store[entry_key] = _Kept(frame, kept.storage if kept else None, kept.version if kept else -1, plan)
    return frame


def _still_cached(spark: Any, ref: Any) -> bool:
    """Is our plan still in Spark's relation cache (REFRESH TABLE / DROP TABLE / eviction remove it)?"""
    jvm = spark._jvm
    name = jvm.org.apache.spark.sql.catalyst.QualifiedTableName(SESSION_CATALOG, ref.db or "default", ref.table)
    try:
        return spark._jsparkSession.sessionState().catalog().getCachedTable(name) is not None
    except Exception:
        return False


__all__ = ["cache_catalog_plan", "latest_frame"]
