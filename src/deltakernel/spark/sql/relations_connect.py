"""The Spark Connect session's side of relation rewriting (`relations.RelationKind`): uses found with sqlglot,
frames bound to client-planned scans with the statement's conjuncts.

Over Connect Spark cannot resolve a Delta table by itself: not `delta`.`/path`, not time travel, not
`table_changes`, and not even a Delta catalog table (a classic session puts its plan in the relation cache, which a
Connect client cannot reach). So every Delta use is rewritten (`resolves_catalog_names` is False).
Finding: the statement is parsed with sqlglot (`text_plans.py`; a Connect client has no Spark parser), each table
name resolved (`catalog.lookup`: `delta`.`/path`, or a session-catalog entry whose provider is delta), its text (name
and `VERSION | TIMESTAMP AS OF ...`) located by sqlglot's token offsets; `EXPLAIN <statement>` is looked into.
Temporary views recorded by this client shadow catalog names: one made from a DataFrame with Delta leaves
(`scan/connect_plan.py` records it) becomes that DataFrame filtered with the statement's conjuncts on it; one made by
`CREATE [OR REPLACE] TEMPORARY VIEW v AS <query>` reading Delta tables has its text recorded once the statement
ran (`after`) and is expanded like a permanent view, with the statement's conjuncts on it (so its files are chosen
per query, at the table's latest version, not fixed when it was made); Spark's own copy of such a view (what Spark
reads without the router: `spark.table(v)`, DESCRIBE) reads its tables through the registered Python data source,
so making it names no data file. Not recorded (Spark's own view is read, its files fixed when it was made -
skipping less, never a wrong answer): views with a column list, global temporary views, `USING delta OPTIONS`
views.
Conditions: a Connect scan's files are fixed when its view is made, so each use gets the conjuncts that filter its
rows anywhere in the statement - its own WHERE, the ON of inner joins, what sqlglot's predicate pushdown carries into
CTEs, derived tables and unions (`pushdown.py`) - as a kernel predicate (`scan/connect_filters.condition_predicate`).
A conjunct the kernel cannot translate exactly - e.g. a function of a partition column the kernel has no rule for -
is left to Spark (no skipping by it, never a wrong answer: Spark still applies the whole statement).
Binding: `scan/connect_plan.delta_frame` with that predicate; views are named by table, version, options and
predicate, so a DataFrame returned earlier keeps reading what it read (Connect re-analyses its SQL per action); the
plain queries' views are an LRU of `relations.MAX_VIEWS` (measured: benchmarks/long_session.py), views read by a
statement that keeps referring to them (CREATE TEMPORARY VIEW, CACHE TABLE) are never dropped.

Limits: a DataFrame of a plain query re-run after `MAX_VIEWS` newer distinct Delta references of its session fails
with Spark's TABLE_OR_VIEW_NOT_FOUND (re-run the SQL); references in text sqlglot cannot parse are not seen (the
statement then reaches Spark as written).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..catalog.tables import DeltaRef, delta_ref, lookup, path_of
from ..catalog.unity import unity_location
from . import text_plans as T
from .commands import evaluate_timestamp
from .grammar import DeltaSqlError, DeltaSqlSyntaxError
from .public_catalog import original_sql
from .relations import (
    CHANGES_FUNCTIONS,
    MAX_VIEW_DEPTH,
    Found,
    RelationUse,
    StoredView,
    changes_source,
    default_alias,
    quote,
)

_EXPLAIN = re.compile(r"^\s*EXPLAIN(?:\s+(?:EXTENDED|FORMATTED|CODEGEN|COST|LOGICAL))?\s+", re.I)


class ConnectRelations:
    """`RelationKind` of a Spark Connect session."""

    resolves_catalog_names = False
    bounded = True  # views per predicate

    def __init__(self, spark: Any, tree: Callable[[str], Any]) -> None:
        from ..kinds.connect_internals import sql_references

        self.spark = spark
        self.tree = tree  # sqlglot's tree of a text (the parser's, kept per call)
        self._defining = False  # rewriting a recorded temporary view's definition (and the views it expands)
        self.scoped = sql_references()  # SQL carries its frames (`WithRelations`, pyspark 4.0+)
        self._schemas: dict[tuple[Any, ...], str] = {}  # (location, options) -> the schema its use was bound to

    def find(self, text: str, run_sql: Callable[[str], Any]) -> Found | None:
        from sqlglot import exp

        try:
            tree = self.tree(text)
        except DeltaSqlSyntaxError:
            return None
        offset = 0
        if isinstance(tree, exp.Command):
            m = _EXPLAIN.match(text)  # EXPLAIN <statement>: the statement's Delta references
            if m is None:
                return None  # other commands sqlglot keeps as text: Spark's
            offset, text = m.end(), text[m.end():]
            try:
                tree = T.parse(text)
            except DeltaSqlSyntaxError:
                return None
        _forget_replaced_views(self.spark, tree)
        uses = find_uses(self.spark, text, tree, run_sql)
        for use in uses:
            use.start, use.stop = use.start + offset, use.stop + offset
        view = _view_kind(tree) if not offset else None  # EXPLAIN CREATE VIEW creates nothing
        return Found(uses, defines_view=view == "permanent", persists=isinstance(tree, (exp.Create, exp.Cache)),
                     state=(tree, text, view, bool(offset)), names=frozenset(_cte_names(tree)))

    def push_conditions(self, found: Found, uses: list[RelationUse], bases: list[Any]) -> None:
        """Each use's conjuncts from the whole statement (CTEs, derived tables, unions, joins: `pushdown.py`);
        none for views when the statement cannot be analysed."""
        from .pushdown import pushed_conjuncts

        if self._defining or found.state[2] == "temporary":  # reads of the view expand its text with their own
            self._defining = True  # conditions: its definition plans no files
            return
        tables: list[tuple[Any, list[str]]] = []
        owners: list[RelationUse] = []
        for use, base in zip(uses, bases):
            columns = _columns(self.spark, use, base) if use.node is not None else None
            if columns is not None:
                tables.append((use.node, columns))
                owners.append(use)
        zone: list[str] = []

        def time_zone() -> str:
            if not zone:
                zone.append(str(self.spark.conf.get("spark.sql.session.timeZone")))
            return zone[0]

        pushed = pushed_conjuncts(found.state[0], tables, time_zone, found.state[1]) if tables else None
        if pushed is None:
            for use in uses:
                if use.view is not None or use.frame_view is not None:
                    use.conditions = []  # their own SELECT's WHERE is not known here: push nothing
            return
        for use, conjuncts in zip(owners, pushed):
            use.conditions = conjuncts

    def bind(self, use: RelationUse, base: Any) -> tuple[Any, tuple[Any, ...]]:
        """The table's scan, planned with the use's conjuncts the kernel can read."""
        from ...kernel.expressions.predicate import And
        from ..scan.connect_filters import condition_predicate
        from ..scan.connect_plan import delta_frame
        from ..scan.reader import DeltaFrame

        assert use.ref is not None
        if not isinstance(base, DeltaFrame):  # the change data feed
            return base, (use.ref.location, -1, sorted(use.options.items()), [])
        snapshot = base.snapshot
        if self._defining:  # Spark's copy of a recorded view (`register`)
            return base, (use.ref.location, snapshot.version, sorted(use.options.items()), "source")
        predicate = None
        kept: list[str] = []
        for text in use.conditions:
            p = condition_predicate(text, snapshot.schema)
            if p is None:
                continue
            predicate = p if predicate is None else And(predicate, p)
            kept.append(text)
        self._schemas[(use.ref.location, tuple(sorted(use.options.items())))] = snapshot.metadata.schema_string
        if predicate is None:
            return base, (use.ref.location, snapshot.version, sorted(use.options.items()), kept)
        frame = delta_frame(self.spark, snapshot, predicate=predicate)
        frame._plan.planned(None)  # the files now, as when the statement is sent at once (kernel errors raise here)
        return frame, (use.ref.location, snapshot.version, sorted(use.options.items()), kept)

    def register(self, name: str, frame: Any) -> None:
        """A view over a frame's Delta scans as planned here (not a user's view: see connect_plan); in a recorded
        temporary view's definition, over the Python data source (no data file named when it is made)."""
        from ..scan.connect_plan import native_temp_view

        native_temp_view(frame, name, native=not self._defining)

    def query(self, text: str, relations: dict[str, Any]) -> Any:
        """A lazy frame of `text` with `relations` as its references (analysed with the statement reading it)."""
        from ..kinds.connect_internals import sql_frame

        return sql_frame(self.spark, text, [(frame, name) for name, frame in relations.items()])

    def qualify(self, text: str, database: str) -> str | None:
        return T.qualify_tables(text, database)

    def statement_key(self, found: Found) -> Any:
        """The key of a query over Delta relations this call planned (`statement_keys.py`), else None."""
        from sqlglot import exp

        from .statement_keys import reads_only, shape

        tree, _, view, explained = found.state
        if explained or view is not None or found.persists or found.defines_view or not isinstance(tree, exp.Query):
            return None
        if not reads_only(tree, [u.node for u in found.uses]):
            return None
        uses = [self._use_key(u) for u in found.uses]
        if any(k is None for k in uses):
            return None
        return ("statement", shape(tree), tuple(uses))

    def _use_key(self, use: RelationUse) -> Any:
        """What analysis sees of one use: a table's schema, a recorded DataFrame view's leaf, a view's definition."""
        from ..scan.connect_plan import DeltaScan

        if use.frame_view is not None:
            leaf = use.frame_view._plan
            if not isinstance(leaf, DeltaScan):  # a chain: its plan with what analysis sees of its leaves
                from ..scan.frame_keys import plan_key

                key = plan_key(leaf, self.spark.client)
                return None if key is None else ("chain", key)
            if leaf.predicate is not None:
                return None
            return ("frame", leaf.snapshot.storage.root_uri, leaf.snapshot.metadata.schema_string, leaf.row_tracking)
        if use.view is not None:
            v = use.view
            inner = [self._use_key(u) for u in use.inner]
            if not use.closed or any(k is None for k in inner):
                return None
            return ("view", v.db, v.table, v.text, v.database, tuple(v.columns or ()), v.renames, tuple(inner))
        assert use.ref is not None
        options = tuple(sorted(use.options.items()))
        schema = self._schemas.get((use.ref.location, options))
        return None if schema is None else ("table", use.ref.location, options, schema)

    def analysed(self, key: Any) -> bool:
        """Kept in the session's catalog cache: dropped by the same DDL, `SET`, `REFRESH` and catalog changes as
        its catalog answers, and by conf changes (`kinds/catalog_cache.py`); off with the cache (lifetime 0)."""
        from ..kinds.catalog_cache import MISSING, cache_for

        return cache_for(self.spark).get(key, expires=False) is not MISSING

    def remember(self, key: Any) -> Callable[[], None]:
        import time

        from ..kinds.catalog_cache import cache_for

        cache = cache_for(self.spark)
        epoch = cache.epoch  # a change of the catalog or a conf while Spark analyses: not recorded
        return lambda: cache.put(key, True, epoch, time.monotonic())  # its lifetime starts when analysis succeeded

    def analyse(self, found: Found, send: Callable[[], Any]) -> bool:
        """A query's eager analysis (Spark Connect's `spark.sql()` sends a `sql_command`: analysis errors raise
        there, as on a classic session) with every Delta scan in it read through the Python data source
        (`connect_plan.analysis_scans`), so Spark checks no data file; the command's result - that plan - is not
        used: the caller returns the unsent statement, whose action plans the files. Should Spark refuse the
        statement so (something the Python source's relation lacks that a Parquet scan has, such as its hidden
        `_metadata` column), it is analysed again with its scans as planned: that error, or success, is Spark's
        answer (one more request, only on an analysis error).
        Anything but a query (commands, EXPLAIN, views) is not analysed apart."""
        from pyspark.errors import AnalysisException

        from ..scan.connect_plan import analysis_scans

        if not _query(found):
            return False
        try:
            with analysis_scans():
                send()
        except AnalysisException:
            send()
        return True

    def filterable(self, found: Found, frame: Any, replan: Callable[[tuple[str, ...]], Any]) -> Any:
        """A query's frame as a `connect_plan.RoutedQuery`: conditions chained after it reach the statement's
        scans when it is sent (replanned with them); anything but a query (commands, EXPLAIN, views) as it is."""
        from ..scan.connect_plan import routed_frame

        return routed_frame(frame, replan) if _query(found) else frame

    def after(self, found: Found) -> None:
        """CREATE [OR REPLACE] TEMPORARY VIEW v AS <query over Delta tables> ran: v's text is recorded."""
        tree, text, view, _ = found.state
        if view != "temporary" or not found.uses:
            return
        parts = T.table_parts(tree.this)
        query = tree.args.get("expression")
        body = T.query_text(text, query) if query is not None else None
        if parts is None or len(parts) != 1 or body is None:
            return
        from ..scan.connect_plan import record_text_view

        database = str(self.spark.catalog.currentDatabase())
        try:  # its output names, asked once here rather than by every statement reading it
            columns: list[str] | None = list(original_sql(self.spark, f"SELECT * FROM {quote(parts[0])}").columns)
        except Exception:  # asked again when read
            columns = None
        record_text_view(self.spark, parts[0], StoredView(None, parts[0], body, database, columns))


def _query(found: Found) -> bool:
    """Is the statement a query (not a command, EXPLAIN, a view definition, nor one that keeps its views)?"""
    from sqlglot import exp

    tree, _, view, explained = found.state
    return not (explained or view is not None or found.persists or found.defines_view) and isinstance(tree, exp.Query)


def _view_kind(tree: Any) -> str | None:
    """"permanent" for CREATE VIEW / ALTER VIEW AS; "temporary" for a local temporary view this module records
    (`CREATE [OR REPLACE] TEMPORARY VIEW v AS query`, no column list); None otherwise."""
    from sqlglot import exp

    if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "").upper() == "VIEW":
        return "permanent" if any(isinstance(a, exp.Query) for a in tree.args.get("actions") or []) else None
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind") or "").upper() != "VIEW":
        return None
    props = tree.args.get("properties")
    props = list(props.expressions) if props is not None else []
    if not any(isinstance(p, exp.TemporaryProperty) for p in props):
        return "permanent"
    if isinstance(tree.this, exp.Schema) or any(isinstance(p, exp.GlobalProperty) for p in props) \
            or tree.args.get("expression") is None:
        return None
    return "temporary"


def _targets(tree: Any) -> set[int]:
    """ids of the Table nodes a statement writes or names as an object (not read as a relation)."""
    from sqlglot import exp

    out: set[int] = set()
    this = tree.args.get("this")
    if isinstance(this, exp.Schema):
        this = this.this
    if isinstance(this, exp.Table) and not isinstance(tree, (exp.Select, exp.Union)):
        out.add(id(this))
    if isinstance(tree, (exp.Drop, exp.TruncateTable)):
        out.update(id(t) for t in tree.expressions)
        out.update(id(t) for t in tree.args.get("tables") or [])
    return out


def _cte_names(tree: Any) -> set[str]:
    from sqlglot import exp

    return {c.alias.lower() for c in tree.find_all(exp.CTE) if c.alias}


def _changes_use(spark: Any, text: str, toks: list[Any], i: int, run_sql: Any) -> tuple[RelationUse, int]:
    """A `table_changes[_by_path](...)` call at token `i`: its use and the token index after it."""
    import sqlglot
    from sqlglot import exp

    end = T.closing(toks, i + 1)
    start, stop = toks[i].start, toks[end].end + 1
    call = sqlglot.parse_one(text[start:stop], read="spark")
    fn = toks[i].text.lower()
    args = [_literal(a, run_sql) for a in (call.expressions if isinstance(call, exp.Anonymous) else [])]
    ref, opts = changes_source(spark, fn, args)
    return RelationUse(start, stop, ref, opts, None), end + 1


def _literal(node: Any, run_sql: Any) -> Any:
    """A constant argument's value (Spark evaluates anything but a plain literal)."""
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.name if node.is_string else int(node.name) if node.name.isdigit() else float(node.name)
    if isinstance(node, exp.Null):
        return None
    row = run_sql(f"SELECT {T.sql_text(node)} AS v").first()
    return row[0] if row is not None else None


def find_uses(spark: Any, text: str, tree: Any, run_sql: Any, database: str | None = None, depth: int = 0,
              temporary: bool = True) -> list[RelationUse]:
    """The Delta references of a parsed statement, with the text span each one replaces; single-part names
    resolve in `database` (a view's own) when given, else the current one; `temporary`: this session's temporary
    views are visible (not inside a permanent view's text)."""
    from sqlglot import TokenType, exp

    from ..scan.connect_plan import frame_view, text_view

    toks = T.tokens(text)
    skip = _targets(tree)
    ctes = _cte_names(tree)
    uses: list[RelationUse] = []
    for table in tree.find_all(exp.Table):
        if id(table) in skip:
            continue
        parts = T.table_parts(table)
        if parts is None or (len(parts) == 1 and parts[0].lower() in ctes):
            continue
        label = ".".join(parts)
        temp = temporary and len(parts) == 1
        recorded = frame_view(spark, parts[0]) if temp else None
        stored = text_view(spark, parts[0]) if temp and recorded is None else None
        entry = None
        view: StoredView | None = None
        inner: list[RelationUse] = []
        ref: DeltaRef | None = None
        closed = False
        names: frozenset[str] = frozenset()
        if recorded is None and stored is not None:  # a temporary view shadows catalog names
            view, (inner, closed, names) = stored, _view_uses(spark, stored, run_sql, depth, True)
            if not inner:
                continue
        elif recorded is None:
            uc = unity_location(spark, parts) if len(parts) == 3 else None  # a configured Unity Catalog's table
            if path_of(parts) is not None:
                ref = DeltaRef(str(path_of(parts)), label)
            elif uc is not None:
                ref = DeltaRef(uc, label)
            else:
                entry = lookup(spark, [database, *parts] if database is not None and len(parts) == 1 else parts)
                ref = delta_ref(entry, label)
            if ref is None:
                if entry is None or not entry.view_text:
                    continue
                view = StoredView(entry.db, entry.table, entry.view_text, entry.view_database,
                                  list(entry.view_columns) if entry.view_columns else None, entry.view_renames)
                inner, closed, names = _view_uses(spark, view, run_sql, depth, False)
                if not inner:
                    continue
        use = T.table_use(text, table, toks)
        if use is None:
            raise DeltaSqlError(f"cannot locate the table {label} in the statement")
        if recorded is not None or view is not None:
            uses.append(RelationUse(use.start, use.stop, None, {}, None if use.alias else (view.table if view else
                                    parts[0]), view=view, inner=inner, frame_view=recorded, name=parts[0],
                                    node=table, closed=closed, names=names))
            continue
        assert ref is not None
        opts: dict[str, str] = {}
        if use.version is not None:
            opts["versionAsOf"] = str(use.version)
        elif use.timestamp_sql is not None:
            opts["timestampAsOf"] = evaluate_timestamp(run_sql, use.timestamp_sql)
        uses.append(RelationUse(use.start, use.stop, ref, opts, None if use.alias else default_alias(ref),
                                node=table))
    i = 0
    while i < len(toks) - 1:
        t = toks[i]
        if t.text.lower() in CHANGES_FUNCTIONS and toks[i + 1].token_type == TokenType.L_PAREN and i > 0 \
                and toks[i - 1].token_type in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA):
            found, i = _changes_use(spark, text, toks, i, run_sql)
            uses.append(found)
            continue
        i += 1
    return uses


def _view_uses(spark: Any, view: StoredView, run_sql: Any, depth: int,
               temporary: bool) -> tuple[list[RelationUse], bool, frozenset[str]]:
    """The Delta uses of a view's text (none when it reads no Delta table, or cannot be read), whether the
    text reads nothing else (`statement_keys.reads_only`), and the CTE names it and the views it reads define.
    The text's tree is shared (`text_plans.shared_tree`: a view's text is read by every statement using it)."""
    from .statement_keys import reads_only

    if depth >= MAX_VIEW_DEPTH:
        return [], False, frozenset()
    try:
        tree = T.shared_tree(view.text)
    except DeltaSqlSyntaxError:
        return [], False, frozenset()
    uses = find_uses(spark, view.text, tree, run_sql, view.database, depth + 1, temporary)
    names = frozenset(_cte_names(tree)).union(*(u.names for u in uses))
    return uses, reads_only(tree, [u.node for u in uses]), names


def _columns(spark: Any, use: RelationUse, base: Any) -> list[str] | None:
    """The columns a use exposes to the statement (for the pushdown analysis), None when unknown."""
    from ..scan.connect_plan import output_names
    from ..scan.reader import DeltaFrame

    if use.frame_view is not None:
        return output_names(use.frame_view._plan) or _frame_columns(spark, use.frame_view)
    if use.view is not None:
        if use.view.columns is not None:  # from its catalog entry, or recorded when the statement made it
            return list(use.view.columns)
        name = f"{quote(use.view.db)}.{quote(use.view.table)}" if use.view.db else quote(use.view.table)
        return list(original_sql(spark, f"SELECT * FROM {name}").columns)
    if isinstance(base, DeltaFrame):
        return [f.name for f in base.snapshot.schema.fields]
    return None


def _frame_columns(spark: Any, frame: Any) -> list[str]:
    """A DataFrame view's output names when the client cannot tell them (joins, aggregates...): asked once per
    plan (`frame_keys.plan_key`: what analysis sees of it), kept with the statement keys in the catalog cache -
    a view made again before every query then asks nothing."""
    import time

    from ..kinds.catalog_cache import MISSING, cache_for
    from ..scan.frame_keys import plan_key

    key = plan_key(frame._plan, spark.client)
    if key is None:
        return list(frame.columns)
    cache = cache_for(spark)
    found = cache.get(("statement", "columns", key), expires=False)
    if found is not MISSING:
        return list(found)
    epoch = cache.epoch
    columns = list(frame.columns)
    cache.put(("statement", "columns", key), tuple(columns), epoch, time.monotonic())
    return columns


def _forget_replaced_views(spark: Any, tree: Any) -> None:
    """DROP VIEW v / CREATE [OR REPLACE] TEMP VIEW v: a DataFrame or a text recorded as `v` no longer defines it."""
    from sqlglot import exp

    from ..scan.connect_plan import forget_view

    names: list[Any] = []
    if isinstance(tree, exp.Drop) and str(tree.args.get("kind") or "").upper() == "VIEW":
        names = [tree.this, *list(tree.expressions or [])]
    elif isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "VIEW":
        names = [tree.this.this if isinstance(tree.this, exp.Schema) else tree.this]
    for n in names:
        parts = T.table_parts(n)
        if parts and len(parts) == 1:
            forget_view(spark, parts[0])


__all__ = ["ConnectRelations", "find_uses"]
