"""A Spark Connect session's catalog answers, kept for a few seconds (issue 31: catalog names at classic speed).

Why: a Connect client has no py4j handle on the session catalog; every lookup of a table name is a statement sent
to the server (`sql/public_catalog.py`: `SHOW TABLE EXTENDED`, `databaseExists`, `currentDatabase`), ~0.1-0.3 s each
on a local server, and a statement naming a catalog table asked them every time (profile in benchmarks/README.md,
"Spark Connect vs classic per query shape"). Classic sessions ask the driver's JVM (microseconds).

The rule (docs/decisions.md, "Connect catalog cache"):
- per session (keyed by its Connect client), bounded (`CAPACITY` answers, least recently used evicted), holding
  what `ConnectCatalog` asked: entries (found or not) per name as written, whether a database exists, the current
  database;
- **this session's own changes are never missed**: every command the session's client sends and every catalog call
  it makes passes the two hooks below (patched by `enable()`'s registry, restored by `disable()`), and anything that
  may change what a name denotes clears the cache after it ran (success or failure): SQL other than a read-only
  statement (`READ_ONLY_SQL`: SELECT / WITH / VALUES / FROM / TABLE / SHOW / DESCRIBE / EXPLAIN / INSERT / MERGE /
  UPDATE / DELETE) - so CREATE / DROP / ALTER / REPLACE / RENAME / USE / SET / REFRESH / CACHE and SQL scripts
  do -, table writes (`saveAsTable`, `insertInto`, `writeTo`, `toTable`: any write command not by path), catalog
  calls other than reads (`setCurrentCatalog`, `createTable`, `dropTempView`, `refreshTable`, `clearCache`, ...).
  Two changes are narrower: a temporary view made from a DataFrame (`createOrReplaceTempView(v)`, the router's
  own views too) forgets only the one-part name `v` (the only name it can shadow; once made, `v` is known to be
  that view: its lookup answers "no catalog entry" without asking), and
  `spark.catalog.setCurrentDatabase` only the current database and the one-part names (multipart names do not
  depend on it; the router switches databases around every permanent view it expands). The current database is
  this session's own state (no other client changes it): `spark.catalog.currentDatabase()` is answered from the
  cache when known, and `setCurrentDatabase` to the database already current sends nothing. Clearing bumps an
  epoch, and an answer asked before a clear is not stored after it (a lookup racing a DDL in another thread);
- **another client's DDL** (another Connect client of the same server, or a classic session on its JVM) is not
  seen by these hooks: an answer is used for at most `lifetime` seconds after it was asked (default
  `DEFAULT_LIFETIME_S`; the session conf `spark.deltakernel.catalogCacheSeconds`, read when the session's first
  lookup runs; 0 turns the cache off), and `REFRESH TABLE t` / `spark.catalog.refreshTable(t)` /
  `spark.catalog.clearCache()` drop everything at once - Spark's own word for "the table changed elsewhere".
  So that a session using a name steadily never waits for that re-ask, an answer used when older than
  `REFRESH_AFTER` of its lifetime is asked again **in the background** (one daemon thread per key at a time; the
  statement goes on with the kept answer, which is still within its lifetime): the re-ask replaces it unless the
  cache was cleared meanwhile (epoch), so the bound stays "at most `lifetime` seconds old" while the statements
  of a busy session stop paying the catalog's round trips every `lifetime` seconds (docs/decisions.md, "Connect
  view shapes: catalog answers refreshed ahead");
- what only this session can change never expires: the current database, and "no catalog entry" for the name of
  a temporary view this client made (until a command about that name, or any clear);
- it also keeps the keys of read-only queries Spark analysed without error (`sql/relations.run`,
  `sql/statement_keys.py`), dropped like its answers and by `spark.conf.set` / `unset` (`client_config_hook`), but
  not by the lifetime: what a key depends on - table schemas, catalog answers - is read afresh by every statement
  (the key only says that analysis of that combination succeeded).
"""

from __future__ import annotations

import functools
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

DEFAULT_LIFETIME_S = 10.0
#: an answer used when older than this fraction of its lifetime is asked again in the background
REFRESH_AFTER = 0.5
LIFETIME_CONF = "spark.deltakernel.catalogCacheSeconds"
CAPACITY = 512

#: first keywords of SQL statements that cannot change what a name denotes
READ_ONLY_SQL = frozenset({"SELECT", "WITH", "VALUES", "FROM", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN",
                           "INSERT", "MERGE", "UPDATE", "DELETE"})
#: Connect catalog plans (`pyspark.sql.connect.plan` class names) that only read the catalog
READ_ONLY_CATALOG = frozenset({"CurrentCatalog", "ListCatalogs", "CurrentDatabase", "ListDatabases", "GetDatabase",
                               "DatabaseExists", "ListTables", "GetTable", "ListFunctions", "GetFunction",
                               "FunctionExists", "ListColumns", "TableExists", "IsCached", "ListPartitions",
                               "ListViews", "GetTableProperties"})
#: Connect command types (proto `Command.command_type`) that cannot change the session catalog
READ_ONLY_COMMANDS = frozenset({"register_function", "register_table_function", "register_data_source",
                                "streaming_query_command", "streaming_query_manager_command",
                                "streaming_query_listener_bus_command", "get_resources_command", "checkpoint_command",
                                "remove_cached_remote_relation_command", "merge_into_table_command", "ml_command",
                                "path_write", "global_view"})

#: session confs that do not change how Spark analyses a statement, which deltakernel sets around its own work
#: (`scan/report.py`: plan text with whole paths; `scan/public_plan.py`: file listing on the driver)
ANALYSIS_NEUTRAL_CONFS = frozenset({"spark.sql.maxMetadataStringLength",
                                    "spark.sql.sources.parallelPartitionDiscovery.threshold"})

_MISSING = object()
#: kinds of keys that hold this session's own state (no other client changes them): never expire
_LASTING = frozenset({"current_database", "statement"})
_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.S)
_WORD = re.compile(r"[A-Za-z_]+")


def first_keyword(text: str) -> str:
    """The statement's first word, upper case (after blanks, comments and opening parentheses); "" if none."""
    m = _WORD.match(text, _LEADING.match(text).end())  # type: ignore[union-attr]  # `*` always matches
    return m.group(0).upper() if m else ""


class CatalogCache:
    """Bounded, epoch-guarded answers of one Connect session's catalog (module docstring).

    `clock` and `spawn` (how a background re-ask is started: a daemon thread by default) are seams for tests."""

    def __init__(self, lifetime: float, capacity: int = CAPACITY, clock: Callable[[], float] = time.monotonic,
                 spawn: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.lifetime = lifetime
        self.capacity = capacity
        self.epoch = 0
        self._clock = clock
        self._spawn = spawn or _daemon
        self._lock = threading.Lock()
        self._answers: OrderedDict[Hashable, tuple[Any, float, bool]] = OrderedDict()  # value, asked at, lasting
        self._refreshing: set[Hashable] = set()
        self._idle = threading.Condition(self._lock)

    def get(self, key: Hashable, expires: bool = True) -> Any:
        """The answer kept for `key`, or `MISSING` (never asked, evicted, or older than the lifetime; `expires`
        False: kept until evicted or dropped - a statement key, whose parts every use reads afresh)."""
        return self._lookup(key, expires, False)

    def _lookup(self, key: Hashable, expires: bool, refresh: bool) -> Any:
        """`get`; with `refresh`, returns (answer, whether the caller must start its background re-ask)."""
        with self._lock:
            hit = self._answers.get(key)
            if hit is None:
                return (_MISSING, False) if refresh else _MISSING
            value, asked_at, lasting = hit
            age = self._clock() - asked_at
            if expires and not lasting and age > self.lifetime:
                del self._answers[key]
                return (_MISSING, False) if refresh else _MISSING
            self._answers.move_to_end(key)
            if not refresh:
                return value
            due = (expires and not lasting and age > self.lifetime * REFRESH_AFTER and key not in self._refreshing)
            if due:
                self._refreshing.add(key)
            return value, due

    def put(self, key: Hashable, value: Any, epoch: int, asked_at: float, lasting: bool = False) -> None:
        """Keep `value`, asked at `asked_at` (`clock`) in `epoch`: dropped when the cache was cleared since.
        `lasting`: this session's own state (never expires; keys of the `_LASTING` kinds always are)."""
        if self.lifetime <= 0:
            return
        with self._lock:
            if epoch != self.epoch:
                return
            self._answers[key] = (value, asked_at, lasting or _kind(key) in _LASTING)
            self._answers.move_to_end(key)
            while len(self._answers) > self.capacity:
                self._answers.popitem(last=False)

    def answer(self, key: Hashable, ask: Callable[[], Any]) -> Any:
        """The kept answer for `key`, else `ask()`'s (kept). A kept answer past `REFRESH_AFTER` of its lifetime is
        returned and asked again in the background."""
        value, due = self._lookup(key, True, True)
        if value is not _MISSING:
            if due:
                self._start_refresh(key, ask)
            return value
        epoch, asked_at = self.epoch, self._clock()
        value = ask()
        self.put(key, value, epoch, asked_at)
        return value

    def _start_refresh(self, key: Hashable, ask: Callable[[], Any]) -> None:
        epoch, asked_at = self.epoch, self._clock()  # from now: a clear before the thread asks drops its answer

        def refresh() -> None:
            try:
                value = ask()
                self.put(key, value, epoch, asked_at)  # not kept when the cache was cleared since (epoch)
            except Exception:  # the kept answer expires as before; the next use asks (and raises) itself
                pass
            finally:
                with self._lock:
                    self._refreshing.discard(key)
                    self._idle.notify_all()

        try:
            self._spawn(refresh)
        except Exception:  # no thread available (interpreter shutting down): the answer expires as before
            with self._lock:
                self._refreshing.discard(key)

    def settle(self, timeout: float = 30.0) -> bool:
        """Wait until no background re-ask runs (tests); False when some still ran after `timeout` seconds."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._refreshing, timeout)

    def clear(self) -> None:
        with self._lock:
            self.epoch += 1
            self._answers.clear()

    def forget_name(self, name: str) -> None:
        """Drop the answers about the one-part name `name` (a temporary view of that name came or went)."""
        low = name.lower()
        self._forget(lambda key: key[0] == "entry" and len(key[1]) == 1 and str(key[1][0]).lower() == low)

    def forget_statements(self) -> None:
        """Drop the keys of statements Spark analysed (`sql/relations.run`): a session conf changed."""
        self._forget(lambda key: key[0] == "statement")

    def forget_unqualified(self) -> None:
        """Drop what depends on the current database: it and the answers about one-part names."""
        self._forget(lambda key: key[0] == "current_database" or (key[0] == "entry" and len(key[1]) == 1))

    def _forget(self, which: Callable[[Any], bool]) -> None:
        with self._lock:
            self.epoch += 1
            for key in [k for k in self._answers if which(k)]:
                del self._answers[key]

    def __len__(self) -> int:
        return len(self._answers)


def _kind(key: Hashable) -> Any:
    return key[0] if isinstance(key, tuple) and key else None


def _daemon(fn: Callable[[], None]) -> None:
    threading.Thread(target=fn, name="deltakernel-catalog-refresh", daemon=True).start()


MISSING = _MISSING
_CACHES: weakref.WeakKeyDictionary[Any, CatalogCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(spark: Any) -> CatalogCache:
    """The cache of a Connect session (made on first use, with the lifetime its conf asks for)."""
    client = spark.client
    cache = _CACHES.get(client)
    if cache is None:
        lifetime = _lifetime(spark)
        with _CACHES_LOCK:
            cache = _CACHES.setdefault(client, CatalogCache(lifetime))
    return cache


def _lifetime(spark: Any) -> float:
    try:
        value = spark.conf.get(LIFETIME_CONF, None)
        return DEFAULT_LIFETIME_S if value is None else max(0.0, float(value))
    except Exception:  # an unparsable value or a server refusing the key: the default
        return DEFAULT_LIFETIME_S


def _apply(client: Any, kind: str, detail: str | None, done: bool = False) -> None:
    cache = _CACHES.get(client)
    if cache is None:
        return
    if kind == "temp_view" and detail is not None:
        cache.forget_name(detail)
        if done:  # the one-part name is that temporary view now: no catalog entry of that name is read
            cache.put(("entry", (detail,)), None, cache.epoch, time.monotonic(), lasting=True)
    elif kind == "SetCurrentDatabase":
        cache.forget_unqualified()
    else:
        cache.clear()


def _effect(command: Any) -> tuple[str, str | None] | None:
    """None when the command cannot change the catalog, else its (kind, detail)."""
    from .connect_internals import command_effect

    kind, detail = command_effect(command)
    if kind in READ_ONLY_COMMANDS or (kind == "sql" and first_keyword(detail or "") in READ_ONLY_SQL):
        return None
    return kind, detail


# ----------------------------------------------------------------------------- the registry's factories
def client_command_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    """`SparkConnectClient.execute_command`: after a command that may change the catalog, its answers go."""

    @functools.wraps(original)
    def execute_command(self: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        effect = _effect(command) if self in _CACHES else None
        if effect is None:
            return original(self, command, *args, **kwargs)
        done = False
        try:
            out = original(self, command, *args, **kwargs)
            done = True
            return out
        finally:
            _apply(self, *effect, done=done)

    return execute_command


def client_command_iterator_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    """`SparkConnectClient.execute_command_as_iterator` (streaming starts, `toTable`): as above, once the command's
    responses are read."""

    @functools.wraps(original)
    def execute_command_as_iterator(self: Any, command: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        effect = _effect(command) if self in _CACHES else None
        if effect is None:
            yield from original(self, command, *args, **kwargs)
            return
        try:
            yield from original(self, command, *args, **kwargs)
        finally:
            _apply(self, *effect)

    return execute_command_as_iterator


def client_config_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    """`SparkConnectClient.config` (`spark.conf.set` / `unset`): a conf may change how Spark analyses a statement
    (`spark.sql.caseSensitive`, ANSI mode...), so the statements known to analyse go; catalog answers stay."""

    @functools.wraps(original)
    def config(self: Any, operation: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, operation, *args, **kwargs)
        finally:
            cache = _CACHES.get(self)
            if cache is not None:
                from .connect_internals import config_changes

                keys = config_changes(operation)
                if keys is not None and not all(k in ANALYSIS_NEUTRAL_CONFS or k.startswith("spark.deltakernel.")
                                                for k in keys):
                    cache.forget_statements()

    return config


def catalog_call_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    """Connect `Catalog._execute_and_fetch` (every `spark.catalog.*` call): after a call that is not a read, the
    session's answers go. The current database is session state no other client can change: it is answered from
    the cache when known, and switching to the database that is current sends nothing."""

    @functools.wraps(original)
    def _execute_and_fetch(self: Any, plan: Any) -> Any:
        name = type(plan).__name__
        cache = _catalog_cache(self) if name in ("CurrentDatabase", "SetCurrentDatabase") else None
        if cache is not None and name == "CurrentDatabase":
            return _current_database(cache, lambda: original(self, plan))
        if cache is not None:
            from .connect_internals import set_database_name

            current = cache.get(("current_database",))
            if current is not MISSING and current == set_database_name(plan):
                import pyarrow as pa

                return pa.table({})  # `setCurrentDatabase` ignores the result
        if name in READ_ONLY_CATALOG:
            return original(self, plan)
        done = False
        try:
            out = original(self, plan)
            done = True
            return out
        finally:
            client = _catalog_client(self)
            if client is not None:
                _apply(client, name, None)
            if cache is not None and done:
                _switched(cache, plan)

    return _execute_and_fetch


_PLAIN_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _switched(cache: CatalogCache, plan: Any) -> None:
    """After `setCurrentDatabase(db)`: a plain lower-case `db` is what `currentDatabase()` answers now (Spark parses
    the name, lower-cases it unless case-sensitive, and quotes only names that need it); others are asked."""
    from .connect_internals import set_database_name

    db = set_database_name(plan)
    if db is not None and _PLAIN_NAME.fullmatch(db):
        cache.put(("current_database",), db, cache.epoch, time.monotonic())


def _current_database(cache: CatalogCache, ask: Callable[[], Any]) -> Any:
    import pyarrow as pa

    value = cache.get(("current_database",))
    if value is not MISSING:
        return pa.table({"current_database": pa.array([value], pa.string())})
    epoch, asked_at = cache.epoch, time.monotonic()
    table = ask()
    cache.put(("current_database",), table.column(0)[0].as_py(), epoch, asked_at)
    return table


def _catalog_client(catalog: Any) -> Any:
    from .connect_internals import catalog_session

    try:
        return catalog_session(catalog).client
    except Exception:  # a closed session: nothing kept for it matters
        return None


def _catalog_cache(catalog: Any) -> CatalogCache | None:
    client = _catalog_client(catalog)
    return _CACHES.get(client) if client is not None else None


__all__ = ["ANALYSIS_NEUTRAL_CONFS",
           "CAPACITY", "DEFAULT_LIFETIME_S", "LIFETIME_CONF", "MISSING", "READ_ONLY_CATALOG", "READ_ONLY_COMMANDS",
           "REFRESH_AFTER",
           "READ_ONLY_SQL", "CatalogCache", "cache_for", "catalog_call_hook", "client_command_hook",
           "client_config_hook",
           "client_command_iterator_hook", "first_keyword"]
