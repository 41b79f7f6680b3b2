"""Queries that read Delta tables: Spark resolves them natively, or reads temporary views over the native plan.

Spark cannot resolve `delta`.`/path`, time travel (`t VERSION AS OF n` / `TIMESTAMP AS OF ...`) on Delta tables,
or `table_changes(...)`; and it resolves a Delta catalog table through the session catalog's relation cache
only (`table_frames.cache_catalog_plan`). The router finds the Delta references in Spark's parsed plan
(UnresolvedRelation, RelationTimeTravel, UnresolvedTableValuedFunction nodes, with their text spans):
- a plain catalog-table reference stays as written: its latest native plan is put in the relation cache, and
  Spark resolves it (qualified column names, permanent views over it, everything);
- the others get one temporary view per distinct (table, version / timestamp / change range) over `reader.read`
  (the native plan with the Delta file index, or the change data feed), and each reference's text is replaced
  by the view's name;
- a permanent view is looked into (its stored text, in its own database): the catalog tables it reads are
  cached; a view reading paths or time travel (which only deltakernel resolves) is replaced by a temporary view
  of its text, routed.
Everything else (joins, subqueries, CTEs, parameters, EXPLAIN, CACHE, temp views) is Spark's own; the file
index skips files with whatever filters Spark pushes down. Plans are the latest version at each statement.

Limits: a permanent view (`CREATE VIEW`) must name Delta catalog tables, which Spark resolves by itself; one over
a path or a time-travel reference is refused with an explanation (views over paths made by delta-spark in a
shared metastore are expanded as above). References inside SQL functions or in text Spark never parses (e.g.
strings built at run time) are not seen.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog.tables import DeltaRef, require, resolve, split_name
from . import plans as P
from .commands import evaluate_timestamp
from .grammar import DeltaSqlError

CHANGES_FUNCTIONS = ("table_changes", "table_changes_by_path")
MAX_VIEW_DEPTH = 16  # permanent views expanded inside views, at most


@dataclass
class RelationUse:
    """A Delta reference in a statement's text, and the span `[start, stop)` of the text it replaces."""

    start: int
    stop: int
    ref: DeltaRef | None  # None for a permanent view expanded (`view`)
    options: dict[str, str]
    alias: str | None  # added after the view name when the statement gave none


@dataclass
class _Use(RelationUse):
    view: _View | None = None

    @property
    def rewrites(self) -> bool:
        """Does the text change (else a catalog table Spark resolves from the relation cache)?"""
        return self.view is not None or self.ref is None or not self.ref.is_catalog or bool(self.options)


@dataclass
class _View:
    """A permanent view whose text only deltakernel can run (paths, time travel): expanded."""

    name: list[str]
    text: str
    database: str
    columns: list[str]


def _literal(node: Any, run_sql: Any) -> Any:
    """A constant argument's value (Spark evaluates anything but a plain literal)."""
    if P.name(node) == "Literal":
        v = node.value()
        return None if v is None else (v if isinstance(v, (int, float)) else str(v))
    row = run_sql(f"SELECT {node.sql()} AS v").first()
    return row[0] if row is not None else None


def _changes_use(spark: Any, node: Any, run_sql: Any) -> tuple[DeltaRef, dict[str, str]]:
    fn = [str(p) for p in P.seq(node.name())][-1].lower()
    return changes_source(spark, fn, [_literal(a, run_sql) for a in P.seq(node.functionArgs())])


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


def find_uses(spark: Any, plan: Any, run_sql: Any, database: str | None = None, depth: int = 0) -> list[_Use]:
    """The Delta references of a parsed statement, with the text span each one replaces; names without a
    database resolve in `database` (a view's own), else the current one."""
    ctes: set[str] = set()  # WITH names shadow tables; a WITH node is walked before the queries using it
    uses: list[_Use] = []
    covered: list[tuple[int, int]] = []

    def qualify(parts: list[str]) -> list[str]:
        return [database, *parts] if database is not None and len(parts) == 1 else parts

    for node, parent in P.walk(plan):
        n = P.name(node)
        if n == "UnresolvedWith":
            ctes.update(str(c.alias()).lower() for c in P.seq(node.innerChildren()) if P.name(c) == "SubqueryAlias")
            continue
        if n not in ("RelationTimeTravel", "UnresolvedRelation", "UnresolvedTableValuedFunction"):
            continue
        aliased = parent is not None and P.name(parent) == "SubqueryAlias"
        if n == "RelationTimeTravel":
            parts = P.identifier_parts(node.relation())
            if parts is None or (len(parts) == 1 and parts[0].lower() in ctes):
                continue
            ref = resolve(spark, qualify(parts))
            s = P.relation_span(node)
            if ref is None or s is None:
                continue
            version = P.opt(node.version())
            opts: dict[str, str]
            if version is not None:
                opts = {"versionAsOf": str(version)}
            else:
                ts = P.opt(node.timestamp())
                opts = {"timestampAsOf": evaluate_timestamp(run_sql, str(ts.sql()))}
            uses.append(_Use(s[0], s[1], ref, opts, None if aliased else _default_alias(ref)))
            covered.append(s)
        elif n == "UnresolvedRelation":
            parts = P.identifier_parts(node) or []
            if len(parts) == 1 and parts[0].lower() in ctes:
                continue
            s = P.span(node)
            if s is None or any(a <= s[0] and s[1] <= b for a, b in covered):
                continue
            ref = resolve(spark, qualify(parts))
            if ref is not None:
                uses.append(_Use(s[0], s[1], ref, {}, None if aliased else _default_alias(ref)))
                continue
            view = _permanent_view(spark, qualify(parts))
            if view is None or depth >= MAX_VIEW_DEPTH:
                continue
            inner = find_uses(spark, P.parse_plan(spark, view.text), run_sql, view.database, depth + 1)
            if any(u.rewrites for u in inner):
                uses.append(_Use(s[0], s[1], None, {}, None if aliased else view.name[-1], view))
            else:
                uses.extend(_Use(-1, -1, u.ref, {}, None) for u in inner)  # catalog tables: cache them
        elif n == "UnresolvedTableValuedFunction":
            fn = [str(p) for p in P.seq(node.name())]
            s = P.span(node)
            if len(fn) == 1 and fn[0].lower() in CHANGES_FUNCTIONS and s is not None:
                ref, opts = _changes_use(spark, node, run_sql)
                uses.append(_Use(s[0], s[1], ref, opts, None))
    return uses


def _permanent_view(spark: Any, parts: list[str]) -> _View | None:
    """A permanent view of the session catalog named by `parts` (temp views are Spark's: None)."""
    from ..catalog.tables import catalog_table

    md = catalog_table(spark, parts)
    if md is None or str(md.tableType().name()) != "VIEW":
        return None
    text = P.opt(md.viewText())
    if text is None:
        return None
    ident = md.identifier()
    db = str(ident.database().get()) if ident.database().isDefined() else "default"
    ns = [str(x) for x in P.seq(md.viewCatalogAndNamespace())]
    database = ns[-1] if len(ns) >= 2 else db
    return _View([db, str(ident.table())], str(text), database, [str(c) for c in md.schema().fieldNames()])


def _default_alias(ref: DeltaRef) -> str | None:
    return ref.table if ref.is_catalog else None


def view_name(ref: DeltaRef, options: dict[str, str]) -> str:
    key = repr((ref.location, sorted(options.items())))
    return "__delta_" + hashlib.sha1(key.encode()).hexdigest()[:16]


def rewrite(spark: Any, text: str, plan: Any, run_sql: Any, route: Any = None) -> str | None:
    """`text` with every Delta reference Spark cannot resolve replaced by a temporary view over it (registered
    here), the catalog tables it names cached for Spark; None when the text needs no change. `run_sql` runs
    text on Spark as it is, `route` through the router (for expanded views; default `run_sql`)."""
    uses = find_uses(spark, plan, run_sql)
    if not uses:
        return None
    from ..catalog.table_frames import cache_catalog_plan

    for use in uses:
        if not use.rewrites and use.ref is not None:
            cache_catalog_plan(spark, use.ref)
    rewritten = [u for u in uses if u.rewrites and u.start >= 0]
    if not rewritten:
        return None
    if P.name(plan) in ("CreateView", "AlterViewAs"):
        _refuse_permanent_view(rewritten)
    from ..catalog.table_frames import register_view

    frames: dict[str, Any] = {}
    for use in rewritten:
        name = _view_name(use)
        if name not in frames:  # a view never goes back to an older version (another thread's statement)
            frames[name] = _frame(spark, use, route or run_sql)
            register_view(spark, name, frames[name])
    out = text
    for use in sorted(rewritten, key=lambda u: u.start, reverse=True):
        name = _view_name(use)
        replacement = name if use.alias is None else f"{name} AS {P.quote(use.alias)}"
        out = out[:use.start] + replacement + out[use.stop:]
    return out


def _refuse_permanent_view(uses: list[_Use]) -> None:
    """A permanent view must be resolvable by Spark itself: over Delta catalog tables it is (their plans are in
    the relation cache); over paths, time travel or change feeds it is not."""
    if any(u.options for u in uses):
        raise UnsupportedFeatureError("views over Delta time travel", "a permanent view cannot pin a version "
                                      "(VERSION / TIMESTAMP AS OF, table_changes) of a Delta table; use a "
                                      "temporary view")
    labels = sorted({u.ref.label if u.ref is not None else ".".join(u.view.name if u.view else []) for u in uses})
    raise UnsupportedFeatureError("permanent views over Delta paths", f"a permanent view cannot read {labels} by "
                                  "path: Spark must resolve a stored view by itself, which it does for Delta catalog "
                                  "tables; register the table first (CREATE TABLE name USING delta LOCATION "
                                  "'/path') and name it in the view, or use CREATE TEMPORARY VIEW")


def _view_name(use: _Use) -> str:
    if use.view is not None:
        key = repr(("view", use.view.name, use.view.text))
        return "__delta_view_" + hashlib.sha1(key.encode()).hexdigest()[:16]
    assert use.ref is not None
    return view_name(use.ref, use.options)


def _frame(spark: Any, use: _Use, run_sql: Any) -> Any:
    """The DataFrame a rewritten reference reads: the table's plan, or an expanded view's routed text."""
    if use.view is None:
        assert use.ref is not None
        from ..catalog.table_frames import latest_frame

        return latest_frame(spark, use.ref.location, use.options)
    catalog = spark._jsparkSession.sessionState().catalog()
    current = str(catalog.getCurrentDatabase())
    catalog.setCurrentDatabase(use.view.database)  # the view's text names tables relative to its database
    try:
        frame = run_sql(use.view.text)
    finally:
        catalog.setCurrentDatabase(current)
    return frame.toDF(*use.view.columns) if len(frame.columns) == len(use.view.columns) else frame


__all__ = ["CHANGES_FUNCTIONS", "MAX_VIEW_DEPTH", "RelationUse", "changes_source", "find_uses", "rewrite",
           "view_name"]
