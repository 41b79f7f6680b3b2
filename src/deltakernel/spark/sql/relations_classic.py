"""The classic session's side of relation rewriting (`relations.RelationKind`): uses found in Spark's own parsed
plan, frames bound to the native read plan.

Finding: Spark's parser (`plans.py`, through py4j) gives the unresolved plan with text spans; the Delta uses are
its UnresolvedRelation, RelationTimeTravel and UnresolvedTableValuedFunction (`table_changes`) nodes, WITH names
shadowing tables. Spark's parser is the authority on classic sessions: every statement Spark can parse is seen,
whatever sqlglot makes of it (the Connect kind has no such parser and uses sqlglot).
Binding: a plain catalog table stays as written, its latest plan in the relation cache (`resolves_catalog_names`);
anything else reads `catalog/table_frames.latest_frame` (the native plan over the Delta file index, or the change
data feed), one view per table and read options, re-registered with the latest plan at each statement and never
back to an older version (`table_frames.register_view`). The file index skips with whatever filters Spark pushes
down, so no conditions are pushed here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..catalog.tables import catalog_table, resolve
from ..kinds import kind_of
from . import plans as P
from .commands import evaluate_timestamp
from .relations import CHANGES_FUNCTIONS, MAX_VIEW_DEPTH, Found, RelationUse, StoredView, changes_source, default_alias


class ClassicRelations:
    """`RelationKind` of a classic session."""

    resolves_catalog_names = True
    bounded = False  # one view per table and read options
    scoped = False  # views registered through py4j cost no round trip

    def __init__(self, spark: Any, plan: Callable[[str], Any], plan_name: Callable[[str], str] | None = None) -> None:
        self.spark = spark
        self.plan = plan  # Spark's unresolved plan of a text (the parser's, kept per call)
        self.plan_name = plan_name or (lambda text: P.name(self.plan(text)))  # its node name (kept per call too)

    def find(self, text: str, run_sql: Callable[[str], Any]) -> Found | None:
        plan = self.plan(text)
        name = self.plan_name(text)
        names = P.relation_names(plan, text)  # one round trip; None: walk the plan node by node
        if names is not None and not any(_may_read_delta(self.spark, parts) for parts in _distinct(names)):
            uses: list[RelationUse] = []
        else:
            uses = find_uses(self.spark, plan, run_sql)
        return Found(uses, defines_view=name in ("CreateView", "AlterViewAs"),
                     persists=name.startswith(("Create", "Cache")))

    def push_conditions(self, found: Found, uses: list[RelationUse], bases: list[Any]) -> None:
        return None  # the file index sees Spark's pushed filters

    def bind(self, use: RelationUse, base: Any) -> tuple[Any, tuple[Any, ...]]:
        assert use.ref is not None
        return base, (use.ref.location, sorted(use.options.items()))

    def register(self, name: str, frame: Any) -> None:
        from ..catalog.table_frames import register_view

        register_view(self.spark, name, frame)

    def query(self, text: str, relations: dict[str, Any]) -> Any:
        raise NotImplementedError("classic sessions register views (scoped is False)")

    def statement_key(self, found: Found) -> Any:
        return None  # classic statements are analysed by `spark.sql()` itself, over py4j

    def analysed(self, key: Any) -> bool:
        return False

    def remember(self, key: Any) -> Callable[[], None]:
        return lambda: None

    def analyse(self, found: Found, send: Callable[[], Any]) -> bool:
        return False  # Spark's analysis names no data file: the native plan's file index lists when planned

    def filterable(self, found: Found, frame: Any, replan: Callable[[tuple[str, ...]], Any]) -> Any:
        return frame  # Spark's optimizer pushes chained conditions into the native plan's file index

    def qualify(self, text: str, database: str) -> str | None:
        return None  # views are expanded with the session switched to their database

    def after(self, found: Found) -> None:
        return None


def _distinct(names: list[list[str]]) -> list[list[str]]:
    seen: set[tuple[str, ...]] = set()
    out = []
    for parts in names:
        key = tuple(parts)  # as written: under spark.sql.caseSensitive `T` and `t` are two names
        if key not in seen:
            seen.add(key)
            out.append(parts)
    return out


def _may_read_delta(spark: Any, parts: list[str]) -> bool:
    """Could the table reference `parts` be a Delta use (`find_uses`: a Delta table, or a permanent view whose text
    may read one)? A one-part name of a temporary view is neither (one catalog question); anything else is asked as
    `find_uses` asks it."""
    if len(parts) == 1 and kind_of(spark).catalog.unqualified(parts[0]) is None:
        return False  # a temporary view (a CTE name never reaches here: statements with WITH are walked)
    return resolve(spark, parts) is not None or _permanent_view(spark, parts) is not None


def _literal(node: Any, run_sql: Any) -> Any:
    """A constant argument's value (Spark evaluates anything but a plain literal)."""
    if P.name(node) == "Literal":
        v = node.value()
        return None if v is None else (v if isinstance(v, (int, float)) else str(v))
    row = run_sql(f"SELECT {node.sql()} AS v").first()
    return row[0] if row is not None else None


def find_uses(spark: Any, plan: Any, run_sql: Any, database: str | None = None, depth: int = 0) -> list[RelationUse]:
    """The Delta references of a parsed statement, with the text span each one replaces; names without a
    database resolve in `database` (a view's own), else the current one."""
    ctes: set[str] = set()  # WITH names shadow tables; a WITH node is walked before the queries using it
    uses: list[RelationUse] = []
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
            uses.append(RelationUse(s[0], s[1], ref, opts, None if aliased else default_alias(ref)))
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
                uses.append(RelationUse(s[0], s[1], ref, {}, None if aliased else default_alias(ref)))
                continue
            view = _permanent_view(spark, qualify(parts))
            if view is None or depth >= MAX_VIEW_DEPTH:
                continue
            inner = find_uses(spark, P.parse_plan(spark, view.text), run_sql, view.database, depth + 1)
            if inner:
                uses.append(RelationUse(s[0], s[1], None, {}, None if aliased else view.table, view=view,
                                        inner=inner))
        elif n == "UnresolvedTableValuedFunction":
            fn = [str(p) for p in P.seq(node.name())]
            s = P.span(node)
            if len(fn) == 1 and fn[0].lower() in CHANGES_FUNCTIONS and s is not None:
                fn_name = fn[0].lower()
                ref, opts = changes_source(spark, fn_name, [_literal(a, run_sql) for a in P.seq(node.functionArgs())])
                uses.append(RelationUse(s[0], s[1], ref, opts, None))
    return uses


def _permanent_view(spark: Any, parts: list[str]) -> StoredView | None:
    """A permanent view of the session catalog named by `parts` (temp views are Spark's: None)."""
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
    return StoredView(db, str(ident.table()), str(text), database, [str(c) for c in md.schema().fieldNames()])


__all__ = ["ClassicRelations", "find_uses"]
