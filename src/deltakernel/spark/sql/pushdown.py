"""Which WHERE / ON conjuncts of a SQL statement filter each table reference's rows (Spark Connect skipping).

Over Connect the router plans each Delta reference's files before Spark sees the statement, so it needs, per
reference, the conjuncts that may drop that table's rows: those of its own SELECT, and those written outside a
CTE, a derived table, a UNION or a view that sqlglot's optimizer pushes down (`pushdown_predicates`, which does
not cross LIMIT, aggregates or outer joins' null-extended sides). The statement Spark runs is the user's text;
this analysis runs on a copy where each table of interest is renamed `__dk_t<i>` and given its columns, and
adds two inferences Spark's optimizer makes and sqlglot's does not: a conjunct on a UNION's output goes into
every branch (by position), and an inner-join equality with a derived table's constant column becomes a
constant comparison (`a.id = b.k`, `b` = `(SELECT 1134 AS k)`). Conjuncts come back as Spark SQL text over the
table's own column names; anything the analysis cannot follow gives no conjunct (no skipping, never a wrong
answer - Spark applies the whole statement).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

_log = logging.getLogger(__name__)
_PREFIX = "__dk_t"


def pushed_conjuncts(tree: Any, tables: list[tuple[Any, list[str]]], time_zone: Any = None,
                     text: str | None = None) -> list[list[str]] | None:
    """For each (sqlglot Table node of `tree`, its column names): the conjuncts filtering it; None when the
    statement cannot be analysed (the caller falls back to the table's own WHERE). `time_zone()`: the session's
    time zone (zone-less TIMESTAMP literals are in it). `text`: the statement `tree` was parsed from; given, the
    answer is remembered (`_Memo`)."""
    key = _MEMO.key(tree, tables, text) if text is not None else None
    if key is not None:
        hit = _MEMO.get(key, time_zone)
        if hit is not None:
            return hit[0]
    zones: list[str] = []

    def zone() -> Any:
        z = time_zone()
        zones.append(z)
        return z

    try:
        out = _pushed(tree, tables, zone if time_zone is not None else None)
    except Exception as e:  # sqlglot cannot qualify the statement: ambiguous names, unknown syntax...
        _log.debug("deltakernel: no pushdown analysis: %s", e)
        out = None
    if key is not None:
        _MEMO.put(key, out, zones[0] if zones else None)
    return out


class _Memo:
    """The answers of `pushed_conjuncts` by statement text, table positions and columns: the analysis is a pure
    function of those (and of the session time zone when a zone-less TIMESTAMP literal asked for it: then it is
    kept with the answer and checked). sqlglot's qualify + pushdown is 5-35 ms per TPC-H query (Q3, Q19: 34 ms),
    paid by every read of a Delta table over Connect; a query re-run (a dashboard, a benchmark round, a service's
    request) pays it once. Process-wide, an LRU of `SIZE` (answers are a few short strings)."""

    SIZE = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, tuple[list[list[str]] | None, Any]] = OrderedDict()

    @staticmethod
    def key(tree: Any, tables: list[tuple[Any, list[str]]], text: str) -> Any:
        from sqlglot import exp

        position = {id(t): i for i, t in enumerate(tree.find_all(exp.Table))}
        if any(id(t) not in position for t, _ in tables):
            return None
        return (text, tuple((position[id(t)], tuple(columns)) for t, columns in tables))

    def get(self, key: Any, time_zone: Any) -> tuple[list[list[str]] | None] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
        if found is None:
            return None
        out, zone = found
        if zone is not None and (time_zone is None or time_zone() != zone):
            return None
        return (None if out is None else [list(c) for c in out],)

    def put(self, key: Any, out: list[list[str]] | None, zone: Any) -> None:
        with self._lock:
            self._items[key] = ([list(c) for c in out] if out is not None else None, zone)
            self._items.move_to_end(key)
            while len(self._items) > self.SIZE:
                self._items.popitem(last=False)


_MEMO = _Memo()


def _pushed(tree: Any, tables: list[tuple[Any, list[str]]], time_zone: Any) -> list[list[str]]:
    from sqlglot import exp
    from sqlglot.optimizer.pushdown_predicates import pushdown_predicates
    from sqlglot.optimizer.qualify import qualify

    originals = list(tree.find_all(exp.Table))
    index = {id(t): i for i, t in enumerate(originals)}
    copy = tree.copy()
    copied = list(copy.find_all(exp.Table))
    if len(copied) != len(originals):
        raise ValueError("table nodes differ in the copy")
    schema: dict[str, dict[str, str]] = {}
    for n, (table, columns) in enumerate(tables):
        node = copied[index[id(table)]]
        name = f"{_PREFIX}{n}"
        alias = node.alias or node.name
        node.set("this", exp.to_identifier(name))
        node.set("db", None)
        node.set("catalog", None)
        for key in ("version", "when"):
            if node.args.get(key) is not None:
                node.set(key, None)
        node.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        schema[name] = {c: "string" for c in columns}  # types do not matter for the analysis
    qualified = qualify(copy, schema=schema, dialect="spark", validate_qualify_columns=False,
                        quote_identifiers=False, identify=False, expand_stars=True)
    _into_unions(qualified)
    _join_constants(qualified)
    pushed = pushdown_predicates(qualified)
    out: list[list[str]] = []
    for n in range(len(tables)):
        node = next((t for t in pushed.find_all(exp.Table) if t.name == f"{_PREFIX}{n}"), None)
        out.append(_conjuncts_for(node, [c.lower() for c in tables[n][1]], time_zone) if node is not None else [])
    return out


def _conjuncts_for(table: Any, columns: list[str], time_zone: Any = None) -> list[str]:
    """Conjuncts (over the table's own names) of the WHERE / ON next to `table` that filter its rows alone."""
    from sqlglot import exp

    from .text_plans import has_subquery, sql_text

    alias = (table.alias or table.name).lower()
    holder = table.parent
    select = holder.parent if isinstance(holder, (exp.From, exp.Join)) else None
    if not isinstance(select, exp.Select) or select.args.get("laterals"):
        return []
    joins = select.args.get("joins") or []
    sides = [(j.side or "").upper() for j in joins]
    kinds = [(j.kind or "").upper() for j in joins]
    if any(k not in ("", "INNER", "CROSS") for k in kinds):  # SEMI / ANTI: leave alone
        return []
    found: list[Any] = []
    where = select.args.get("where")
    if isinstance(holder, exp.From):
        where_ok = all(s in ("", "LEFT") for s in sides)  # the FROM side is preserved by LEFT joins
        on_ok = False
        for j, s in zip(joins, sides):  # an inner join's ON drops the FROM side's rows that fail it
            if s in ("", "RIGHT") and j.args.get("on") is not None:
                found += _flatten(j.args["on"])
    else:
        side = (holder.side or "").upper()
        where_ok = side == "" and all(s in ("", "LEFT") for s in sides if s)  # ours: an inner join
        where_ok = where_ok and not any(s in ("RIGHT", "FULL") for s in sides)
        on_ok = side in ("", "LEFT")  # our rows failing the ON never match (right of a LEFT JOIN: dropped)
        if on_ok and holder.args.get("on") is not None:
            found += _flatten(holder.args["on"])
    if where_ok and where is not None:
        found += _flatten(where.this)
    out = []
    for c in found:
        if has_subquery(c) or c.find(exp.Placeholder, exp.Parameter) is not None:
            continue
        cols = list(c.find_all(exp.Column))
        if not cols or any(col.table.lower() != alias or col.name.lower() not in columns for col in cols):
            continue
        stripped = c.copy()
        for col in stripped.find_all(exp.Column):
            col.set("table", None)
        for cast in list(stripped.find_all(exp.Cast)):
            typed = _typed_literal(cast, time_zone)
            if typed is not None:
                cast.replace(typed) if cast is not stripped else None
        text = sql_text(stripped)
        if text not in out:
            out.append(text)
    return out


def _typed_literal(cast: Any, time_zone: Any) -> Any:
    """sqlglot reads `DATE 'x'` / `TIMESTAMP 'x'` as CAST('x' AS ...), which the kernel does not read: the typed
    literal back (a zone-less timestamp gets the session zone's offset at that instant), or None."""
    import datetime as dt

    from sqlglot import exp

    from ...kernel.isotime import parse_datetime

    lit = cast.this
    if type(cast) is not exp.Cast or not isinstance(lit, exp.Literal) or not lit.is_string:
        return None
    kind = cast.to.this if isinstance(cast.to, exp.DataType) else None
    text = lit.name
    try:
        if kind == exp.DataType.Type.DATE:
            return exp.var(f"DATE '{dt.date.fromisoformat(text).isoformat()}'")
        if kind == exp.DataType.Type.TIMESTAMPNTZ:
            return exp.var(f"TIMESTAMP_NTZ '{parse_datetime(text).isoformat(sep=' ')}'")
        if kind in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ, exp.DataType.Type.TIMESTAMPLTZ) \
                and time_zone is not None:
            from zoneinfo import ZoneInfo

            instant = parse_datetime(text)
            if instant.tzinfo is not None:
                return None
            zone = time_zone() if callable(time_zone) else time_zone
            local = instant.replace(tzinfo=ZoneInfo(str(zone)))
            return exp.var(f"TIMESTAMP '{local.isoformat(sep=' ')}'")
    except Exception:  # text Spark reads but Python does not, an unknown zone
        return None
    return None


def _from(select: Any) -> Any:
    return select.args.get("from_") or select.args.get("from")  # the key's name depends on sqlglot's version


def _flatten(node: Any) -> list[Any]:
    from sqlglot import exp

    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _flatten(node.left) + _flatten(node.right)
    return [node]


def _into_unions(tree: Any) -> None:
    """A WHERE conjunct on a derived table whose body is a UNION (ALL or DISTINCT) of plain selects is copied into
    each branch's WHERE, with the branch's column at the same position (when that is a plain column)."""
    from sqlglot import exp

    for select in list(tree.find_all(exp.Select)):
        where = select.args.get("where")
        if where is None:
            continue
        sources = [_from(select), *list(select.args.get("joins") or [])]
        for src in sources:
            sub = src.this if src is not None else None
            if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Union):
                continue
            if isinstance(src, exp.Join) and ((src.side or "") or (src.kind or "").upper() not in ("", "INNER")):
                continue
            branches = _union_branches(sub.this)
            if branches is None:
                continue
            names = [p.alias_or_name.lower() for p in branches[0].expressions]
            alias = sub.alias.lower()
            for c in _flatten(where.this):
                cols = list(c.find_all(exp.Column))
                if not cols or any(col.table.lower() != alias or col.name.lower() not in names for col in cols):
                    continue
                if c.find(exp.Subquery, exp.Placeholder, exp.Parameter) is not None:
                    continue
                for branch in branches:
                    pushed = c.copy()
                    ok = True
                    for col in list(pushed.find_all(exp.Column)):
                        proj = branch.expressions[names.index(col.name.lower())]
                        inner = proj.this if isinstance(proj, exp.Alias) else proj
                        if not isinstance(inner, exp.Column):
                            ok = False
                            break
                        col.replace(inner.copy())
                    if ok:
                        branch.where(pushed, copy=False)


def _union_branches(node: Any) -> list[Any] | None:
    from sqlglot import exp

    if isinstance(node, exp.Union) and not isinstance(node, (exp.Intersect, exp.Except)):
        left, right = _union_branches(node.left), _union_branches(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, exp.Subquery):
        return _union_branches(node.this)
    if isinstance(node, exp.Select) and not node.args.get("limit") and not node.args.get("group") and \
            not node.args.get("having") and not node.args.get("distinct") and \
            not any(isinstance(p, exp.Star) or p.find(exp.AggFunc, exp.Window) for p in node.expressions):
        return [node]
    return None


def _join_constants(tree: Any) -> None:
    """`a JOIN (SELECT <literal> AS k ...) b ON a.x = b.k` (inner): adds `a.x = <literal>` to the ON."""
    from sqlglot import exp

    for join in list(tree.find_all(exp.Join)):
        if join.side or (join.kind or "").upper() not in ("", "INNER"):
            continue
        on = join.args.get("on")
        select = join.parent
        if on is None or not isinstance(select, exp.Select):
            continue
        constants = _constant_columns(select)
        for c in _flatten(on):
            if not isinstance(c, exp.EQ):
                continue
            for mine, theirs in ((c.left, c.right), (c.right, c.left)):
                if isinstance(mine, exp.Column) and isinstance(theirs, exp.Column):
                    value = constants.get((theirs.table.lower(), theirs.name.lower()))
                    if value is not None and (mine.table.lower(), mine.name.lower()) not in constants:
                        join.set("on", exp.and_(join.args["on"], exp.EQ(this=mine.copy(), expression=value.copy())))


def _constant_columns(select: Any) -> dict[tuple[str, str], Any]:
    """(alias, column) -> literal for derived tables of `select` whose column is a literal in every row."""
    from sqlglot import exp

    out: dict[tuple[str, str], Any] = {}
    sources = [_from(select), *list(select.args.get("joins") or [])]
    for src in sources:
        sub = src.this if src is not None else None
        if not isinstance(sub, exp.Subquery) or not isinstance(sub.this, exp.Select):
            continue
        inner = sub.this
        if inner.args.get("group") or inner.args.get("having"):
            continue
        for proj in inner.expressions:
            value = proj.this if isinstance(proj, exp.Alias) else None
            if isinstance(value, exp.Literal):
                out[(sub.alias.lower(), proj.alias.lower())] = value
    return out


__all__ = ["pushed_conjuncts"]
