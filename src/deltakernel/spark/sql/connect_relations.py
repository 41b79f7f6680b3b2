"""Queries reading Delta tables on a Spark Connect session: temporary views over client-planned scans.

Over Connect Spark cannot resolve a Delta table by itself: not `delta`.`/path`, not time travel, not
`table_changes`, and not even a Delta catalog table (classic sessions put its plan in the session catalog's
relation cache, which a Connect client cannot reach). So every Delta reference of a statement the router
passes to Spark is rewritten: the statement is parsed with sqlglot (`text_plans.py`), each table name is
resolved (`catalog.resolve`: `delta`.`/path`, or a session-catalog entry whose provider is delta), and its text
(name and `VERSION | TIMESTAMP AS OF ...`) is replaced by a temporary view over `reader.read`'s frame - Spark's
Parquet scan of the files the kernel keeps (`scan/connect_plan.DeltaScan`), or the change data feed.

File skipping: a classic file index sees the filters Spark pushes down; a Connect scan's files are fixed when the
view is made. So the router gives each reference the conjuncts that filter that table's rows anywhere in the
statement - its own WHERE, the ON of inner joins, and what sqlglot's predicate pushdown carries into CTEs, derived
tables and unions (`pushdown.py`) - as a kernel predicate (`connect_filters.condition_predicate`); a conjunct the
kernel cannot read is left to Spark (never a wrong answer: Spark still applies the whole statement). Views are
named by table, version, options and predicate, so a DataFrame returned earlier keeps reading what it read
(Connect re-analyses its SQL per action). A temporary view made from a DataFrame with Delta leaves
(`scan/connect_plan.py` records it) is replaced by that DataFrame filtered with the statement's conjuncts on it.

Permanent views: Spark creates a view over Delta catalog tables by itself (only their schemas are needed), so
`CREATE VIEW` reaches it as written; reading one expands its stored text (with the statement's conjuncts on the
view around it) in its own database.

Lifetime: each distinct (table, version, options, predicate) is a view, so a session's point queries would add
one per query (measured: benchmarks/long_session.py). The views a session's plain queries made are an LRU of
`MAX_VIEWS` names; the least recently used beyond that are dropped (`spark.catalog.dropTempView`). Views named
by a statement that keeps a reference to them (CREATE TEMPORARY VIEW, CACHE TABLE) are never dropped.

Limits: a DataFrame of a plain query re-run after `MAX_VIEWS` newer distinct Delta references of its session
fails with Spark's TABLE_OR_VIEW_NOT_FOUND (re-run the SQL); references in text sqlglot cannot parse are not seen
(the statement then reaches Spark as written).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog.entry import CatalogEntry
from ..catalog.tables import DeltaRef, delta_ref, lookup, path_of
from ..catalog.unity import unity_location
from . import text_plans as T
from .commands import evaluate_timestamp
from .grammar import DeltaSqlError
from .public_catalog import original_sql
from .relations import CHANGES_FUNCTIONS, MAX_VIEW_DEPTH, RelationUse, changes_source

MAX_VIEWS = 256  # temporary views of plain queries kept per session (see the module docstring)
_views_lock = threading.Lock()


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


def _persists(tree: Any) -> bool:
    """Does the statement keep referring to the views it reads (a view's text, a cached table)?"""
    from sqlglot import exp

    return isinstance(tree, (exp.Create, exp.Cache))


def frame_view(spark: Any, name: str) -> Any:
    from ..scan.connect_plan import frame_view as recorded

    return recorded(spark, name)


def native_temp_view(frame: Any, name: str) -> None:
    """A temporary view over a frame's Delta scans as planned here (not a user's view: see connect_plan)."""
    from ..scan.connect_plan import native_temp_view as create

    create(frame, name)


@dataclass
class _Use(RelationUse):
    conditions: list[str] = field(default_factory=list)  # WHERE conjuncts filtering this table alone
    view: CatalogEntry | None = None  # a permanent view reading Delta tables: its text, routed
    node: Any = None  # the sqlglot Table node
    frame_view: Any = None  # a temporary view made from a DataFrame reading Delta tables (connect_plan)
    name: str = ""  # that view's name

    @property
    def label(self) -> str:
        return self.ref.label if self.ref is not None else f"{self.view.db}.{self.view.table}" if self.view else ""


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


def _changes_use(spark: Any, text: str, toks: list[Any], i: int, run_sql: Any) -> tuple[_Use, int] | None:
    """A `table_changes[_by_path](...)` call at token `i`: its use and the token index after it."""
    import sqlglot
    from sqlglot import exp

    end = T.closing(toks, i + 1)
    start, stop = toks[i].start, toks[end].end + 1
    call = sqlglot.parse_one(text[start:stop], read="spark")
    fn = toks[i].text.lower()
    args = [_literal(a, run_sql) for a in (call.expressions if isinstance(call, exp.Anonymous) else [])]
    ref, opts = changes_source(spark, fn, args)
    return _Use(start, stop, ref, opts, None), end + 1


def _literal(node: Any, run_sql: Any) -> Any:
    """A constant argument's value (Spark evaluates anything but a plain literal)."""
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.name if node.is_string else int(node.name) if node.name.isdigit() else float(node.name)
    if isinstance(node, exp.Null):
        return None
    row = run_sql(f"SELECT {T.sql_text(node)} AS v").first()
    return row[0] if row is not None else None


def find_uses(spark: Any, text: str, tree: Any, run_sql: Any, database: str | None = None,
              depth: int = 0) -> list[_Use]:
    """The Delta references of a parsed statement, with the text span each one replaces; single-part names
    resolve in `database` (a view's own) when given, else the current one."""
    from sqlglot import exp

    toks = T.tokens(text)
    skip = _targets(tree)
    ctes = _cte_names(tree)
    uses: list[_Use] = []
    for table in tree.find_all(exp.Table):
        if id(table) in skip:
            continue
        parts = T.table_parts(table)
        if parts is None or (len(parts) == 1 and parts[0].lower() in ctes):
            continue
        label = ".".join(parts)
        entry = None
        recorded = frame_view(spark, parts[0]) if len(parts) == 1 and depth == 0 else None
        if recorded is not None:  # a temporary view shadows catalog names
            span = T.table_use(text, table, toks)
            if span is None:
                raise DeltaSqlError(f"cannot locate the table {label} in the statement")
            uses.append(_Use(span.start, span.stop, None, {}, None if span.alias else parts[0], node=table,
                             frame_view=recorded, name=parts[0]))
            continue
        uc = unity_location(spark, parts) if len(parts) == 3 else None  # a configured Unity Catalog's table
        if path_of(parts) is not None:
            ref: DeltaRef | None = DeltaRef(str(path_of(parts)), label)
        elif uc is not None:
            ref = DeltaRef(uc, label)
        else:
            entry = lookup(spark, [database, *parts] if database is not None and len(parts) == 1 else parts)
            ref = delta_ref(entry, label)
        if ref is None and not _reads_delta(spark, entry, run_sql, depth):
            continue
        use = T.table_use(text, table, toks)
        if use is None:
            raise DeltaSqlError(f"cannot locate the table {label} in the statement")
        if ref is None:
            assert entry is not None
            uses.append(_Use(use.start, use.stop, None, {}, None if use.alias else entry.table, view=entry,
                             node=table))
            continue
        opts: dict[str, str] = {}
        if use.version is not None:
            opts["versionAsOf"] = str(use.version)
        elif use.timestamp_sql is not None:
            opts["timestampAsOf"] = evaluate_timestamp(run_sql, use.timestamp_sql)
        alias = None if use.alias else (ref.table if ref.is_catalog else None)
        uses.append(_Use(use.start, use.stop, ref, opts, alias, _conditions(table, ref, use.alias), node=table))
    from sqlglot import TokenType

    i = 0
    while i < len(toks) - 1:
        t = toks[i]
        if t.text.lower() in CHANGES_FUNCTIONS and toks[i + 1].token_type == TokenType.L_PAREN and i > 0 \
                and toks[i - 1].token_type in (TokenType.FROM, TokenType.JOIN, TokenType.COMMA):
            found = _changes_use(spark, text, toks, i, run_sql)
            if found is not None:
                uses.append(found[0])
                i = found[1]
                continue
        i += 1
    return uses


def _reads_delta(spark: Any, entry: CatalogEntry | None, run_sql: Any, depth: int) -> bool:
    """Is `entry` a permanent view whose text reads Delta tables (made by a classic session, where Spark resolves
    them through the relation cache)? Over Connect it is then expanded: its text, routed, as a temporary view."""
    if entry is None or not entry.view_text or depth >= MAX_VIEW_DEPTH:
        return False
    try:
        tree = T.parse(entry.view_text)
    except DeltaSqlError:
        return False
    return bool(find_uses(spark, entry.view_text, tree, run_sql, entry.view_database, depth + 1))


def _conditions(table: Any, ref: DeltaRef, alias: str | None) -> list[str]:
    """WHERE conjuncts (Spark SQL text, qualifiers removed) that filter `table`'s rows alone."""
    from sqlglot import exp

    holder = table.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select) or select.args.get("laterals"):
        return []
    where = select.args.get("where")
    if where is None:
        return []
    joins = select.args.get("joins") or []
    if any(j.side or (j.kind and j.kind.upper() not in ("INNER", "CROSS")) for j in joins):
        return []
    names: set[tuple[str, ...]] = {(alias.lower(),)} if alias else {(p.lower(),) for p in [ref.table or ""] if p}
    if not alias and ref.is_catalog:
        names |= {((ref.db or "").lower(), (ref.table or "").lower())}
    conjuncts = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    out = []
    for c in conjuncts:
        if T.has_subquery(c) or c.find(exp.Placeholder, exp.Parameter) is not None:
            continue
        cols = list(c.find_all(exp.Column))
        quals = {tuple(p.name.lower() for p in col.parts[:-1]) for col in cols}
        if joins and not (cols and quals <= names):
            continue  # joined: only conjuncts naming this table's columns by its alias
        if not quals <= (names | {()}):
            continue
        out.append(T.sql_text(T.strip_qualifier(c, names, set())))
    return out


def view_name(ref: DeltaRef, version: int, options: dict[str, str], conditions: list[str]) -> str:
    key = repr((ref.location, version, sorted(options.items()), conditions))
    return "__delta_" + hashlib.sha1(key.encode()).hexdigest()[:16]


def _view_frame(spark: Any, view: CatalogEntry, route: Any, conditions: list[str] | None = None) -> str:
    """An expanded permanent view: its text routed in its own database, registered as a temporary view (while
    that database is current, so Spark resolves the rest of its names there); returns the view's name.
    `conditions`: the statement's conjuncts on the view's rows, routed with its text (they skip files)."""
    catalog = spark.catalog
    current = str(catalog.currentDatabase())
    if view.view_database:
        catalog.setCurrentDatabase(view.view_database)
    try:
        text = view.view_text or ""
        if conditions:
            text = f"SELECT * FROM ({text}) AS __dk_view WHERE " + " AND ".join(f"({c})" for c in conditions)
        tree = T.parse(text)
        rewritten = rewrite(spark, text, tree, route) or text
        name = "__delta_view_" + hashlib.sha1(repr((view.db, view.table, rewritten)).encode()).hexdigest()[:16]
        original_sql(spark, rewritten).createOrReplaceTempView(name)  # no Delta reference is left in it
    finally:
        catalog.setCurrentDatabase(current)
    return name


def _base_frame(spark: Any, use: _Use) -> Any:
    """The reference's frame before its conditions (the table's latest or time-travelled scan, or its CDF)."""
    from ..catalog.table_frames import latest_frame
    from ..scan.reader import read

    assert use.ref is not None
    opts: dict[str, Any] = dict(use.options)
    return read(spark, use.ref.location, **opts) if opts else latest_frame(spark, use.ref.location)


def _columns(spark: Any, use: _Use, base: Any) -> list[str] | None:
    """The columns a reference exposes to the statement (for the pushdown analysis), None when unknown."""
    from ..scan.connect_plan import output_names
    from ..scan.reader import DeltaFrame

    if use.frame_view is not None:
        return output_names(use.frame_view._plan) or list(use.frame_view.columns)
    if use.view is not None:
        return None
    if isinstance(base, DeltaFrame):
        return [f.name for f in base.snapshot.schema.fields]
    return None


def _frame(spark: Any, use: _Use, base: Any = None) -> tuple[str, Any]:
    """(view name, frame) of one reference: the table's scan, planned with the reference's conjuncts."""
    from ..scan.reader import DeltaFrame

    assert use.ref is not None
    from ..scan.connect_filters import condition_predicate
    from ..scan.connect_plan import delta_frame

    frame = base if base is not None else _base_frame(spark, use)
    if not isinstance(frame, DeltaFrame):  # the change data feed
        return view_name(use.ref, -1, use.options, []), frame
    snapshot = frame.snapshot
    predicate = None
    kept: list[str] = []
    for text in use.conditions:
        p = condition_predicate(text, snapshot.schema)
        if p is None:
            continue
        from ...kernel.expressions.predicate import And

        predicate = p if predicate is None else And(predicate, p)
        kept.append(text)
    if predicate is not None:
        frame = delta_frame(spark, snapshot, predicate=predicate)
    return view_name(use.ref, snapshot.version, use.options, kept), frame


def rewrite(spark: Any, text: str, tree: Any, run_sql: Any) -> str | None:
    """`text` with every Delta reference replaced by a temporary view over it (registered here); None when the
    statement reads no Delta table."""
    from sqlglot import exp

    _forget_replaced_views(spark, tree)
    uses = find_uses(spark, text, tree, run_sql)
    if not uses:
        return None
    if isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "VIEW" and not _temporary(tree):
        return _permanent_view(uses)
    bases = [_base_frame(spark, u) if u.ref is not None else None for u in uses]
    _push_conditions(spark, tree, uses, bases)
    frames: dict[str, Any] = {}
    names: list[str] = []
    for use, base in zip(uses, bases):
        if use.view is not None:
            names.append(_view_frame(spark, use.view, run_sql, use.conditions))
            continue
        if use.frame_view is not None:
            name, frame = _frame_view(use)
        else:
            name, frame = _frame(spark, use, base)
        names.append(name)
        if name not in frames:
            frames[name] = frame
            native_temp_view(frame, name)
    _keep_views(spark, names, _persists(tree))
    out = text
    for use, name in sorted(zip(uses, names), key=lambda p: p[0].start, reverse=True):
        replacement = name if use.alias is None else f"{name} AS {_quote(use.alias)}"
        out = out[:use.start] + replacement + out[use.stop:]
    return out


def _push_conditions(spark: Any, tree: Any, uses: list[_Use], bases: list[Any]) -> None:
    """Each reference's conjuncts from the whole statement (CTEs, derived tables, unions, joins: `pushdown.py`);
    left as found in its own SELECT when the statement cannot be analysed."""
    from .pushdown import pushed_conjuncts

    tables: list[tuple[Any, list[str]]] = []
    owners: list[_Use] = []
    for use, base in zip(uses, bases):
        if use.node is None:
            continue
        columns = _columns(spark, use, base)
        if columns is None and use.view is not None:
            columns = list(original_sql(spark, f"SELECT * FROM {use.view.db}.{use.view.table}").columns)
        if columns is None:
            continue
        tables.append((use.node, columns))
        owners.append(use)
    zone: list[str] = []

    def time_zone() -> str:
        if not zone:
            zone.append(str(spark.conf.get("spark.sql.session.timeZone")))
        return zone[0]

    pushed = pushed_conjuncts(tree, tables, time_zone) if tables else None
    if pushed is None:
        for use in uses:
            if use.view is not None or use.frame_view is not None:
                use.conditions = []  # their own SELECT's WHERE is not known here: push nothing
        return
    for use, conjuncts in zip(owners, pushed):
        use.conditions = conjuncts


def _frame_view(use: _Use) -> tuple[str, Any]:
    """A temporary view made from a DataFrame, filtered with the statement's conjuncts on it (they reach its
    Delta leaves through the client plan's pushdown, `scan/connect_plan.py`)."""
    df = use.frame_view
    for c in use.conditions:
        df = df.where(c)
    key = repr((use.name.lower(), id(use.frame_view), use.conditions))
    return "__delta_fv_" + hashlib.sha1(key.encode()).hexdigest()[:16], df


def _permanent_view(uses: list[_Use]) -> None:
    """CREATE VIEW over Delta catalog tables: Spark stores the text as written (it resolves the catalog tables'
    schemas by itself); reads of the view are expanded from that text (`_view_frame`). Paths, time travel and
    temporary views cannot be stored in a permanent view."""
    bad = sorted({u.label or u.name for u in uses if u.frame_view is not None or u.options or
                  (u.ref is not None and not u.ref.is_catalog)})
    if bad:
        raise UnsupportedFeatureError("permanent views over Delta paths on Spark Connect", f"a permanent view "
                                      f"cannot read {bad}: name the table in the catalog first (CREATE TABLE name "
                                      "USING delta LOCATION '...') and read it by that name")
    return None


def _forget_replaced_views(spark: Any, tree: Any) -> None:
    """DROP VIEW v / CREATE [OR REPLACE] TEMP VIEW v: a DataFrame recorded as `v` no longer defines it."""
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


def _temporary(tree: Any) -> bool:
    from sqlglot import exp

    props = tree.args.get("properties")
    return props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions)


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


__all__ = ["MAX_VIEWS", "find_uses", "rewrite", "view_name"]
