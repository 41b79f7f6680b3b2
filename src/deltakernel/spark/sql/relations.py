"""Queries that read Delta tables: the one relation rewriter, for both session kinds.

Spark by itself cannot resolve `delta`.`/path`, time travel (`t VERSION AS OF n` / `TIMESTAMP AS OF ...`) on Delta
tables or `table_changes(...)`; a Delta catalog table it resolves only through the relation cache, which a classic
session reaches (`catalog/table_frames.cache_catalog_plan`) and a Spark Connect client does not. So a statement
that is no Delta statement (the router's step 3) reaches Spark with its Delta references rewritten here, by one
algorithm:
1. collect the statement's uses (`RelationUse`: the span `[start, stop)` of text it replaces, the Delta table and
   its read options - time travel, change feed - or a permanent / recorded temporary view, its alias);
2. decide what each becomes: a plain catalog table stays as written when the session resolves catalog names by
   itself (its latest plan cached for Spark); a view is expanded when anything inside it must be rewritten (its
   text, with the statement's conjuncts on it, rewritten in its own database), else the tables inside it are cached;
   everything else becomes a temporary view over the table's frame (`reader.read` / the latest plan), named by
   what it reads so a DataFrame returned earlier keeps reading what it read; where the frames travel with the
   statement (`RelationKind.scoped`), a view reading only rewritten Delta uses is spliced into the statement as a
   derived table of its rewritten text (`_expand`: Spark parses and analyses one statement, not two);
3. a permanent view definition (`CREATE VIEW`, `ALTER VIEW ... AS`) is stored by Spark as written, so it may only
   name Delta catalog tables: paths, time travel, change feeds and recorded temporary views are refused;
4. splice the view names into the text (right to left, spans exclusive at `stop`).

What differs between the session kinds is one small protocol, `RelationKind`, implemented with the other kind
implementations of the statement seam (`StatementParser.relations`): `relations_classic.py` (uses found in Spark's
own parsed plan, with its text spans; frames bound to the native plan over the Delta file index, which skips with
whatever filters Spark pushes down; views one per table and read options) and `relations_connect.py` (uses found
with sqlglot; each use's conjuncts from the whole statement, `pushdown.py`, planned into a client-side `DeltaScan`;
views per table, version, options and predicate, an LRU of `MAX_VIEWS`; temporary views recorded from DataFrames
and from `CREATE TEMPORARY VIEW ... AS` text expanded with the statement's conjuncts). Plans are the latest version
at each statement.

Limits: references inside SQL functions or in text the session's parser never sees (strings built at run time) are
not found; a permanent view stored by Spark over a path or time travel (delta-spark in a shared metastore) is
expanded on read, but cannot be created here.
"""

from __future__ import annotations

import contextvars
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import UnsupportedFeatureError
from ..catalog.tables import DeltaRef, require, split_name
from .grammar import DeltaSqlError

CHANGES_FUNCTIONS = ("table_changes", "table_changes_by_path")
MAX_VIEW_DEPTH = 16  # views expanded inside views, at most
MAX_VIEWS = 256  # views of plain queries kept per session where views are per predicate (`RelationKind.bounded`)
_views_lock = threading.Lock()
_depth: contextvars.ContextVar[int] = contextvars.ContextVar("dk_view_depth", default=0)
#: the relation names (CTEs) defined around the text being rewritten when it is a view spliced into a statement:
#: a view spliced inside it must define none of them either (`_splices`)
_scope: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("dk_view_scope", default=frozenset())
#: the table frames a statement read, by (location, read options): recorded while a statement is rewritten, and
#: required when it is planned again with conditions on its output (`replanner`: the same versions)
_pinned: contextvars.ContextVar[_Pins | None] = contextvars.ContextVar("dk_pinned_tables", default=None)


class _Pins:
    """The table frames one statement read (`_pinned`); `frozen`: nothing may be read afresh."""

    def __init__(self) -> None:
        self.frames: dict[tuple[Any, ...], Any] = {}
        self.frozen = False


class _Unpinned(Exception):
    """A replanned statement reads a table its first plan did not: it is not planned again."""


@dataclass
class StoredView:
    """A view whose text is expanded: a permanent view of the session catalog, or a temporary view whose text
    this session recorded (`db` None)."""

    db: str | None
    table: str
    text: str
    database: str | None  # the database its names resolve in
    columns: list[str] | None = None  # its output names, when known for free (renamed to them when read)
    renames: bool = False  # `columns` rename its query's output (a column list: `CREATE VIEW v (a, b) AS ...`)

    @property
    def label(self) -> str:
        return f"{self.db}.{self.table}" if self.db else self.table


@dataclass
class RelationUse:
    """A Delta reference in a statement's text, and the span `[start, stop)` of the text it replaces (-1, -1: a
    table inside a view, never spliced)."""

    start: int
    stop: int
    ref: DeltaRef | None  # None for a view (`view`) or a recorded DataFrame view (`frame_view`)
    options: dict[str, str]
    alias: str | None  # added after the view name when the statement gave none
    view: StoredView | None = None
    inner: list[RelationUse] = field(default_factory=list)  # a view's own uses
    frame_view: Any = None  # a temporary view made from a DataFrame reading Delta tables (Connect)
    name: str = ""  # that view's name
    node: Any = None  # the parser's node of the reference (for the kind's condition analysis)
    conditions: list[str] = field(default_factory=list)  # conjuncts filtering this use's rows alone (Spark SQL)
    closed: bool = False  # a view whose text reads only Delta relations and CTEs (`RelationKind.statement_key`)
    #: the relation names a view's text defines (its CTEs and those of the views it reads, lower case): it is
    #: spliced into a statement only where none of them is defined around it too (`_splices`)
    names: frozenset[str] = frozenset()

    @property
    def label(self) -> str:
        return self.ref.label if self.ref is not None else self.view.label if self.view else self.name

    @property
    def pinned(self) -> bool:
        """Does it read what a stored view cannot name (a path, a version, a change feed, a temporary view)?"""
        if self.frame_view is not None or self.options or (self.view is not None and self.view.db is None):
            return True
        if self.ref is not None:
            return not self.ref.is_catalog
        return any(u.pinned for u in self.inner)


@dataclass
class Found:
    """A statement's uses, and what the statement does with them."""

    uses: list[RelationUse]
    defines_view: bool = False  # CREATE VIEW / ALTER VIEW AS: Spark stores the text
    persists: bool = False  # the statement keeps referring to the views it reads (a temp view, a cached table)
    state: Any = None  # the kind's parse of the statement (for `push_conditions`, `after`)
    names: frozenset[str] = frozenset()  # the relation names the statement defines (its CTEs, lower case)


class RelationKind(Protocol):
    """What differs between session kinds in relation rewriting (`relations_classic.py`, `relations_connect.py`)."""

    #: Spark resolves a plain Delta catalog table's name by itself (classic: the relation cache)
    resolves_catalog_names: bool
    #: views are named per predicate: the plain queries' ones are an LRU of MAX_VIEWS
    bounded: bool

    def find(self, text: str, run_sql: Callable[[str], Any]) -> Found | None:
        """The Delta uses of `text` (None: the kind cannot read it; Spark gets it as written)."""

    def push_conditions(self, found: Found, uses: list[RelationUse], bases: list[Any]) -> None:
        """Set each use's `conditions` (its conjuncts anywhere in the statement) where the kind plans files
        before Spark sees the statement; `bases` are the uses' table frames (None for views)."""

    def bind(self, use: RelationUse, base: Any) -> tuple[Any, tuple[Any, ...]]:
        """(the frame a table use reads, the key naming its view) from its table frame `base`."""

    #: a statement can carry the frames it reads with it (`scoped` relations: Connect's SQL with references, one
    #: round trip for the statement instead of one more per temporary view); never for a statement that keeps
    #: referring to them (`Found.persists`): Spark stores such a view's text, not the frames
    scoped: bool

    def register(self, name: str, frame: Any) -> None:
        """A temporary view `name` over a frame this module made."""

    def query(self, text: str, relations: dict[str, Any]) -> Any:
        """A lazy frame of the query `text` reading `relations` (name -> frame): a view's rewritten text
        (`scoped` kinds only)."""

    def qualify(self, text: str, database: str) -> str | None:
        """`text` with its unqualified table names resolving in `database` without switching the session's current
        database (a scoped view's text is analysed with the statement, after the switch would be undone); None
        when it cannot be done (the caller switches)."""

    def after(self, found: Found) -> None:
        """The rewritten statement ran: remember what it defined (Connect: a temporary view's text)."""

    def statement_key(self, found: Found) -> Any:
        """What Spark's analysis of a read-only query depends on - its text with the values its conditions compare
        with left out, and the schema and definition of every relation it reads - or None when the kind cannot
        tell (anything but a query over Delta relations it planned, CTEs and views over them): such statements
        are always analysed when `spark.sql()` is called. Only scoped kinds return keys."""

    def analysed(self, key: Any) -> bool:
        """Did Spark analyse a statement of this key without error in this session, recently enough to trust?"""

    def remember(self, key: Any) -> Callable[[], None]:
        """Called before a statement of this key is analysed; the returned callable records that it was (not
        recorded when what the key depends on may have changed in between)."""

    def analyse(self, found: Found, send: Callable[[], Any]) -> bool:
        """Have Spark analyse a read-only query now without naming a data file, when the kind's `spark.sql()`
        analyses eagerly with the scans as planned (Connect's `sql_command`: an unfiltered statement's scans name
        every file, which Spark checks): `send()` sends the statement, the kind choosing how its scans are
        serialized; True when done so - the caller then returns the unsent statement, whose action plans the
        files (with the conditions chained after it). False: the statement is sent as it is and its result
        returned (classic: Spark's analysis lists no file; anything but a query). Called only with `lazy`."""

    def filterable(self, found: Found, frame: Any, replan: Callable[[tuple[str, ...]], Any]) -> Any:
        """The frame a read-only query returns, such that conditions chained after it (`.where(...)`) choose the
        files of the tables it reads: on Connect a plan node that sends `replan(conditions)` (a frame of the
        statement planned with them) when there are some (`connect_plan.RoutedQuery`); on classic the frame as
        it is (Spark's optimizer pushes the conditions into the file index). Called only for scoped statements
        without parameters or `{df}` frames (`lazy` given to `run`)."""


def changes_source(spark: Any, fn: str, args: list[Any]) -> tuple[DeltaRef, dict[str, str]]:
    """The table and the change-feed read options of a `table_changes[_by_path](table, start [, end])` call
    (`fn` in lower case), from its argument values: an integer bound is a version, anything else a timestamp."""
    if len(args) not in (2, 3) or args[0] is None:
        raise DeltaSqlError(f"{fn}(table, start [, end]) takes 2 or 3 arguments")
    if fn == "table_changes_by_path":
        ref = DeltaRef(str(args[0]), str(args[0]))
    else:
        name = str(args[0])
        ref = require(spark, split_name(spark, name), name)
    opts = {"readChangeFeed": "true"}
    for bound, value in (("starting", args[1]), ("ending", args[2] if len(args) > 2 else None)):
        if value is None:
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            opts[f"{bound}Version"] = str(int(value))
        else:
            opts[f"{bound}Timestamp"] = str(value)
    return ref, opts


def default_alias(ref: DeltaRef) -> str | None:
    """The alias a rewritten catalog table keeps (`t.col` still resolves); paths get none."""
    return ref.table if ref.is_catalog else None


def view_name(key: tuple[Any, ...], prefix: str = "__delta_") -> str:
    return prefix + hashlib.sha1(repr(key).encode()).hexdigest()[:16]


def rewrites(use: RelationUse, kind: RelationKind) -> bool:
    """Does the use's text change (else Spark resolves it as written, its catalog tables cached)?"""
    if use.view is not None:
        return any(rewrites(u, kind) for u in use.inner)
    if use.ref is None:
        return True  # a recorded DataFrame view
    return not (kind.resolves_catalog_names and use.ref.is_catalog and not use.options)


def run(spark: Any, text: str, kind: RelationKind, passthrough: Callable[..., Any],
        lazy: Callable[[str, dict[str, Any]], Any] | None = None) -> Any:
    """Run `text` on Spark with its Delta references rewritten (`rewrite`); then let the kind remember what the
    statement defined.

    `lazy(text, relations)` (scoped kinds, a call without parameters) builds the rewritten query as a frame that is
    sent by its first action: one round trip per query instead of Spark Connect's eager analysis and then the
    execution. It is used only for a query whose `statement_key` Spark already analysed without error in this
    session (`analysed`): so a statement that fails analysis - a wrong column, a type error - still raises at
    `spark.sql()` as it does on a classic session (docs/decisions.md, "Connect: one request per point query").
    Any other query is analysed at `spark.sql()` by the kind (`analyse`: on Connect with its scans read through the
    Python source, so the analysis names no data file) and returned unsent as well: its action plans the files."""
    found = kind.find(text, passthrough)
    pins = _Pins()
    token = _pinned.set(pins)
    try:
        rewritten = rewrite(spark, text, kind, found, passthrough) if found is not None else None
    finally:
        _pinned.reset(token)
    if rewritten is None:
        out = passthrough(text)
    else:
        assert found is not None
        key = kind.statement_key(found) if lazy is not None and rewritten.relations and not rewritten.registered \
            else None
        if key is not None and kind.analysed(key):
            assert lazy is not None
            out = lazy(rewritten.text, rewritten.relations)
        else:
            done = kind.remember(key) if key is not None else None
            sent = rewritten
            if lazy is not None and not rewritten.registered and \
                    kind.analyse(found, lambda: passthrough(sent.text, sent.relations)):
                out = lazy(rewritten.text, rewritten.relations)  # analysed without a file named: the action plans
            else:
                out = passthrough(rewritten.text, rewritten.relations)
            if done is not None:
                done()
        if lazy is not None and not rewritten.registered:
            pins.frozen = True
            out = kind.filterable(found, out, replanner(spark, text, kind, passthrough, lazy, pins))
    if found is not None:
        kind.after(found)
    return out


#: how a statement is wrapped to plan it with conditions on its output (newlines: a trailing `--` comment ends)
_OUTER = ("SELECT * FROM (\n", "\n) AS __dk_q WHERE ")


def replanner(spark: Any, text: str, kind: RelationKind, passthrough: Callable[..., Any],
              lazy: Callable[[str, dict[str, Any]], Any], pins: _Pins) -> Callable[[tuple[str, ...]], Any]:
    """`replan(conditions)`: the plan of the query `text` whose output rows are filtered by `conditions` (Spark SQL
    over its output names), each table read planned with the conjuncts that reach it, or None.

    How: the router rewrites `SELECT * FROM (<text>) AS __dk_q WHERE <conditions>` - the statement the user could
    have written, so the one analysis (`RelationKind.push_conditions`: CTEs, derived tables, unions, joins, views)
    decides which conjuncts filter which table, and views are expanded with theirs - at the versions the statement
    first read (`_pinned`; a table it did not read: None). The wrapper is then cut off again: the statement Spark
    runs is `text` with its relations replaced (the conditions stay where the user chained them, and a name the
    analysis cannot place is never sent inside the statement). None when the rewritten text does not keep the
    wrapper as it was, or when it registered temporary views."""

    def replan(conditions: tuple[str, ...]) -> Any:
        suffix = _OUTER[1] + " AND ".join(f"({c})" for c in conditions)
        wrapped = _OUTER[0] + text + suffix
        token = _pinned.set(pins)
        try:
            found = kind.find(wrapped, passthrough)
            done = rewrite(spark, wrapped, kind, found, passthrough) if found is not None else None
        except _Unpinned:
            return None
        finally:
            _pinned.reset(token)
        if done is None or done.registered or not done.text.startswith(_OUTER[0]) or not done.text.endswith(suffix):
            return None
        return lazy(done.text[len(_OUTER[0]):len(done.text) - len(suffix)], done.relations)._plan

    return replan


def _table_frame(spark: Any, use: RelationUse) -> Any:
    """The frame a table use reads: the latest plan, or the one the statement read first (`_pinned`)."""
    from ..catalog.table_frames import latest_frame

    assert use.ref is not None
    pins = _pinned.get()
    key = (use.ref.location, tuple(sorted(use.options.items())))
    if pins is not None and key in pins.frames:
        return pins.frames[key]
    if pins is not None and pins.frozen:
        raise _Unpinned(use.label)
    frame = latest_frame(spark, use.ref.location, use.options)
    if pins is not None:
        pins.frames[key] = frame
    return frame


@dataclass
class Rewritten:
    """A statement's text with its Delta references replaced by view names, and the frames those names denote
    when they travel with the statement (`RelationKind.scoped`; else they are registered temporary views)."""

    text: str
    relations: dict[str, Any] = field(default_factory=dict)
    registered: bool = False  # some names are temporary views registered here (an LRU: a lazy frame may outlive them)


def rewrite(spark: Any, text: str, kind: RelationKind, found: Found,
            passthrough: Callable[..., Any]) -> Rewritten | None:
    """`text` with every Delta reference Spark cannot resolve replaced by a view over it (registered here, or
    carried with the statement: `Rewritten.relations`), the catalog tables it names cached for Spark; None when the
    text needs no change. `passthrough(text[, relations])` runs text on Spark as it is (the user's statement is no
    Delta statement, nor is a view's text)."""
    uses = found.uses
    if not uses:
        return None
    for use in uses:
        if not rewrites(use, kind):
            _cache_catalog_tables(spark, use)
    if found.defines_view:
        _refuse_pinned(uses)
        return None  # Spark stores the text as written; reads expand it
    rewritten = [u for u in uses if u.start >= 0 and rewrites(u, kind)]
    if not rewritten:
        return None
    bases = [_table_frame(spark, u) if u.ref is not None else None for u in rewritten]
    kind.push_conditions(found, rewritten, bases)
    frames: set[str] = set()
    names: list[str] = []  # what replaces each use: a view name, or a spliced view's derived table
    scoped = kind.scoped and not found.persists
    relations: dict[str, Any] = {}
    registered = False
    outer = found.names | _scope.get()
    for use, base in zip(rewritten, bases):
        if use.view is not None:
            done = _expand(spark, use, kind, passthrough, found.persists, outer)
            names.append(done.text)
            if done.frame is not None:
                relations[done.text] = done.frame
            relations.update(done.relations)
            registered = registered or (done.frame is None and not done.spliced) or done.registered
            continue
        if use.frame_view is not None:
            from ..scan.scan_conditions import with_scan_conditions

            # they reach its Delta leaves through the client plan's pushdown, and choose files only: a Filter here
            # would put them before the statement's own conditions in Spark's plan (scan_conditions.py)
            frame = with_scan_conditions(use.frame_view, use.conditions)
            name = view_name((use.name.lower(), id(use.frame_view), use.conditions), "__delta_fv_")
        else:
            frame, key = kind.bind(use, base)
            name = view_name(key)
        names.append(name)
        if name not in frames:
            frames.add(name)
            if scoped:
                relations[name] = frame
            else:
                kind.register(name, frame)
                registered = True
    if kind.bounded and not scoped:
        _keep_views(spark, names, found.persists)  # never spliced: splicing needs a scoped statement
    out = text
    for use, name in sorted(zip(rewritten, names), key=lambda p: p[0].start, reverse=True):
        replacement = name if use.alias is None else f"{name} AS {quote(use.alias)}"
        out = out[:use.start] + replacement + out[use.stop:]
    return Rewritten(out, relations, registered)


def _cache_catalog_tables(spark: Any, use: RelationUse) -> None:
    """A use Spark resolves as written: its Delta catalog tables' latest plans in the relation cache."""
    from ..catalog.table_frames import cache_catalog_plan

    if use.ref is not None:
        cache_catalog_plan(spark, use.ref)
    for inner in use.inner:
        _cache_catalog_tables(spark, inner)


def _refuse_pinned(uses: list[RelationUse]) -> None:
    """A permanent view must be resolvable by Spark itself: over Delta catalog tables it is; over paths, time
    travel, change feeds or temporary views it is not."""
    if any(u.options for u in uses):
        raise UnsupportedFeatureError("views over Delta time travel", "a permanent view cannot pin a version "
                                      "(VERSION / TIMESTAMP AS OF, table_changes) of a Delta table; use a "
                                      "temporary view")
    labels = sorted({u.label for u in uses if u.pinned})
    if labels:
        raise UnsupportedFeatureError("permanent views over Delta paths", f"a permanent view cannot read {labels}: "
                                      "Spark must resolve a stored view by itself, which it does for Delta catalog "
                                      "tables; register the table first (CREATE TABLE name USING delta LOCATION "
                                      "'/path') and name it in the view, or use CREATE TEMPORARY VIEW")


@dataclass
class _Expansion:
    """What a view use becomes: `text` replaces its name in the statement - the name of a view over its rewritten
    text (`frame`: that text's lazy frame travelling with the statement; None: registered as a temporary view
    here), or that text itself as a derived table (`spliced`; the relations it reads then travel with the
    statement: `relations`). `registered`: the text names temporary views registered here."""

    text: str
    frame: Any = None
    relations: dict[str, Any] = field(default_factory=dict)
    registered: bool = False
    spliced: bool = False


#: how a view's text is wrapped when conditions or a column list apply to it (newlines: a trailing `--` comment)
_VIEW = ("SELECT * FROM (\n", "\n) AS __dk_view")


def _splices(use: RelationUse, kind: RelationKind, outer: frozenset[str]) -> bool:
    """May a view's rewritten text replace its name in the statement as a derived table? Only when every relation
    it reads is a Delta use rewritten to a relation travelling with the statement (`closed`, and nothing in it
    resolved by Spark as written) - so the only names left in the text are its relations' and its own CTEs' - and
    none of its CTE names is also defined around it (`outer`: Spark's CTE precedence policy would decide which one
    a name in it reads)."""

    def rewritten(u: RelationUse) -> bool:
        return all(rewritten(i) for i in u.inner) if u.view is not None else rewrites(u, kind)

    return use.closed and not (use.names & outer) and rewritten(use)


def _expand(spark: Any, use: RelationUse, kind: RelationKind, passthrough: Callable[..., Any],
            persists: bool, outer: frozenset[str] = frozenset()) -> _Expansion:
    """A view's text rewritten to read in the view's own database, the statement's conjuncts on the view around it
    (they choose its tables' files).

    A scoped kind qualifies the text's names with that database, and a closed view (`_splices`) is **spliced**:
    its rewritten text, without those conjuncts (the statement applies them), replaces its name as a derived
    table, and its relations travel with the statement - Spark parses and analyses one statement (a nested
    reference, `SQL(statement, [SQL(view text, [scans])])`, is a second statement on the server; measured
    ~120 ms of Spark CPU per point query, docs/decisions.md "Connect: a closed view spliced into the statement").
    Other scoped views travel as that nested reference. Otherwise the text runs with the session switched to
    the view's database and is registered as a temporary view before switching back (Spark resolves its names
    then). `outer`: the CTE names defined around the use (the statement's, and those of views it is spliced
    into)."""
    view = use.view
    assert view is not None
    depth = _depth.get()
    if depth >= MAX_VIEW_DEPTH:
        raise DeltaSqlError(f"views nested more than {MAX_VIEW_DEPTH} deep (at {view.label})")
    text = view.text
    scoped = kind.scoped and not persists
    switch = False
    current = ""
    if view.database is not None:
        catalog = spark.catalog
        current = str(catalog.currentDatabase())
        if view.database.lower() != current.lower():
            qualified = kind.qualify(text, view.database) if scoped else None
            if qualified is None:
                switch, scoped = True, False
            else:
                text = qualified
    splice = scoped and _splices(use, kind, outer)
    alias = f"({', '.join(quote(c) for c in view.columns)})" if scoped and view.renames and view.columns else ""
    where = " WHERE " + " AND ".join(f"({c})" for c in use.conditions) if use.conditions else ""
    wrapped = bool(where or alias)  # the view's column list as the alias's: the conditions name its columns
    if wrapped:
        text = f"{_VIEW[0]}{text}{_VIEW[1]}{alias}{where}"
    token = _depth.set(depth + 1)
    scope = _scope.set(outer if splice else frozenset())  # a nested reference is a statement of its own
    if switch:
        spark.catalog.setCurrentDatabase(view.database)
    try:
        found = kind.find(text, passthrough)
        if found is not None and (persists or not scoped):  # the statement keeps referring to the view's views
            found.persists = True
        done = rewrite(spark, text, kind, found, passthrough) if found is not None else None
        rewritten = done.text if done is not None else text
        if splice and done is not None:
            head, tail = (_VIEW[0], _VIEW[1] + where) if wrapped and not alias else ("", where)
            if rewritten.startswith(head) and rewritten.endswith(tail):
                body = rewritten[len(head):len(rewritten) - len(tail)]
                return _Expansion(f"(\n{body}\n)", None, done.relations, done.registered, True)
        name = view_name(("view", view.db, view.table, rewritten), "__delta_view_")
        frame = kind.query(rewritten, done.relations if done is not None else {}) if scoped \
            else passthrough(rewritten)
        if not scoped:
            if not use.conditions and view.columns and len(frame.columns) == len(view.columns):
                frame = frame.toDF(*view.columns)  # a view's column list (`CREATE VIEW v (a, b) AS ...`)
            kind.register(name, frame)
    finally:
        if switch:
            spark.catalog.setCurrentDatabase(current)
        _scope.reset(scope)
        _depth.reset(token)
    return _Expansion(name, frame if scoped else None, {}, done is not None and done.registered)


def _keep_views(spark: Any, names: list[str], pinned: bool) -> None:
    """Mark `names` used (pinned: never dropped); drop the least recently used unpinned views beyond MAX_VIEWS."""
    store = spark.__dict__.get("_dk_connect_views")
    if store is None:
        store = spark.__dict__.setdefault("_dk_connect_views", OrderedDict())
    evicted = []
    with _views_lock:
        for name in names:
            store[name] = pinned or store.get(name, False)
            store.move_to_end(name)
        unpinned = [n for n, p in store.items() if not p]
        for name in unpinned[:max(0, len(unpinned) - MAX_VIEWS)]:
            del store[name]
            evicted.append(name)
    for name in evicted:
        try:
            spark.catalog.dropTempView(name)
        except Exception:
            pass


def quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


__all__ = ["CHANGES_FUNCTIONS", "MAX_VIEWS", "MAX_VIEW_DEPTH", "Found", "RelationKind", "RelationUse", "Rewritten",
           "StoredView",
           "changes_source", "default_alias", "quote", "rewrite", "rewrites", "run", "view_name"]
