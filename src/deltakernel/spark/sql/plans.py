"""Reading the plans Spark's own SQL parser builds (through py4j), for the statements Spark 4 knows.

`SparkSession.sessionState().sqlParser().parsePlan(text)` gives the *unresolved* logical plan: the
statement's class (MergeIntoTable, DeleteFromTable, CreateTable, ...), its table identifiers as name parts
(`delta`.`/p` is `[delta, /p]`), its clauses, and for each node the span of text it came from
(`origin.startIndex/stopIndex`). Nothing is resolved, so a Delta path or a catalog Delta table is just a
name here. Expressions and queries are handed on as SQL text: the original slice when re-parsing that slice
gives the same tree (spans of some nodes are partial, e.g. `IS NULL` of `c IS NULL`), else Spark's own
`.sql()` rendering of the node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_EXPR_ID = re.compile(r"#\d+L?")


def sql_parser(spark: Any) -> Any:
    """The session's JVM parser (fetched once per session: `kinds.classic.session_state`)."""
    from ..kinds.classic import session_state

    return session_state(spark, "sqlParser")


def parse_plan(spark: Any, text: str) -> Any:
    """The unresolved plan; Spark's ParseException (pyspark's) when Spark cannot parse `text`."""
    return sql_parser(spark).parsePlan(text)


def parse_error_types() -> tuple[type[BaseException], ...]:
    from pyspark.errors import ParseException

    return (ParseException,)


# ----------------------------------------------------------------------------- scala values
def seq(value: Any) -> list[Any]:
    """A Scala Seq / Iterable as a list."""
    out = []
    it = value.iterator()
    while it.hasNext():
        out.append(it.next())
    return out


def opt(value: Any) -> Any:
    """A Scala Option's value, or None."""
    if value is None:
        return None
    return value.get() if value.isDefined() else None


def scala_map(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    it = value.iterator()
    while it.hasNext():
        pair = it.next()
        out[str(pair._1())] = pair._2()
    return out


def call(node: Any, *methods: str) -> Any:
    """The first of `methods` the JVM object has, called (py4j objects answer every attribute, so `hasattr`
    cannot tell); None when none exists."""
    for m in methods:
        try:
            return getattr(node, m)()
        except Exception as e:
            if "does not exist" not in str(e):
                raise
    return None


def name(node: Any) -> str:
    return str(node.nodeName())


def class_name(node: Any) -> str:
    return str(node.getClass().getSimpleName())


# ----------------------------------------------------------------------------- spans and text
def span(node: Any) -> tuple[int, int] | None:
    """The span `[start, stop)` (stop exclusive, as Python slices and `relations.RelationUse` and the Connect
    rewriter's `text_plans.TableUse` count) of the text `node` was parsed from, when Spark recorded it (Spark's own
    `Origin.stopIndex` is inclusive: converted here, once)."""
    o = node.origin()
    start, stop = opt(o.startIndex()), opt(o.stopIndex())
    if start is None or stop is None:
        return None
    return int(start), int(stop) + 1


def relation_span(node: Any) -> tuple[int, int] | None:
    """Span of a relation reference: a time-travel node's own span is only `VERSION AS OF n`, so it starts at
    the relation it wraps."""
    if name(node) == "RelationTimeTravel":
        inner, outer = span(node.relation()), span(node)
        if inner is None or outer is None:
            return None
        return inner[0], outer[1]
    return span(node)


def _clean(tree: str) -> str:
    return _EXPR_ID.sub("", tree)


def expr_text(spark: Any, text: str, expr: Any) -> str:
    """SQL text of an expression: the original slice if it re-parses to the same expression, else `.sql()`."""
    s = span(expr)
    if s is not None and 0 <= s[0] < s[1] <= len(text):
        piece = text[s[0]:s[1]].strip()
        try:
            if _clean(str(sql_parser(spark).parseExpression(piece).toString())) == _clean(str(expr.toString())):
                return piece
        except Exception:  # a partial span that does not parse on its own
            pass
    return str(expr.sql())


def query_text(spark: Any, text: str, plan: Any) -> str | None:
    """The original text of a query node (INSERT's query, CTAS's AS SELECT, a MERGE source subquery), checked
    by re-parsing; None when Spark recorded no usable span."""
    s = span(plan)
    if s is None or not (0 <= s[0] < s[1] <= len(text)):
        return None
    piece = text[s[0]:s[1]].strip()
    try:
        if _clean(str(parse_plan(spark, piece).toString())) == _clean(str(plan.toString())):
            return piece
    except Exception:
        pass
    return None


# ----------------------------------------------------------------------------- identifiers
def identifier_parts(node: Any) -> list[str] | None:
    """Name parts of a table reference node (UnresolvedRelation / UnresolvedTable / UnresolvedTableOrView /
    UnresolvedIdentifier), or None for anything else."""
    n = name(node)
    if n in ("UnresolvedRelation", "UnresolvedTable", "UnresolvedTableOrView", "UnresolvedView"):
        return [str(p) for p in seq(node.multipartIdentifier())]
    if n == "UnresolvedIdentifier":
        return [str(p) for p in seq(node.nameParts())]
    return None


def unwrap_alias(node: Any) -> tuple[str | None, Any]:
    """(alias, inner plan) of `SubqueryAlias`, else (None, node)."""
    if name(node) == "SubqueryAlias":
        return str(node.alias()), node.child()
    return None, node


def quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def quote_name(parts: list[str] | tuple[str, ...]) -> str:
    return ".".join(quote(p) for p in parts)


# ----------------------------------------------------------------------------- walking
_WRAPPED = {"ExplainCommand": ("logicalPlan",), "CacheTableAsSelect": ("plan",), "CacheTable": ("table",),
            "DescribeQueryCommand": ("plan",)}

def walk(plan: Any) -> Iterator[tuple[Any, Any]]:
    """(node, parent) for every plan node: children, inner children (CTE definitions, subquery plans in
    expressions) and the relation a time-travel node wraps."""
    stack: list[tuple[Any, Any]] = [(plan, None)]
    while stack:
        node, parent = stack.pop()
        n = name(node)
        yield node, parent
        kids = seq(node.children()) + seq(node.innerChildren())
        if n == "RelationTimeTravel":
            kids.append(node.relation())
        elif n in _WRAPPED:  # commands holding their query outside children (EXPLAIN, CACHE TABLE ... AS)
            inner = call(node, *_WRAPPED[n])
            if inner is not None:
                kids.append(inner)
        for kid in reversed(kids):
            stack.append((kid, node))


# ----------------------------------------------------------------------------- the relations of a plan, in one call
_LOGICAL = "org.apache.spark.sql.catalyst.plans.logical."
_ANALYSIS = "org.apache.spark.sql.catalyst.analysis."
_EXPRESSIONS = "org.apache.spark.sql.catalyst.expressions."
#: parsed query nodes whose every plan and expression is in their `toJSON` (children in the pre-order list, the
#: others - a subquery's plan, a filter's condition - as nested fields); nodes that keep plans where the JSON
#: renderer drops them (UnresolvedWith's CTE definitions, inline tables' rows: sequences of tuples / of sequences),
#: commands and anything not named here make `relation_names` answer None
_PLANS_IN_JSON = frozenset({
    _LOGICAL + n for n in ("Project", "Filter", "Aggregate", "Join", "Sort", "GlobalLimit", "LocalLimit", "Offset",
                           "SubqueryAlias", "Distinct", "Union", "Intersect", "Except", "Deduplicate",
                           "OneRowRelation", "Window", "RepartitionByExpression", "Repartition", "Sample",
                           "ResolvedHint", "UnresolvedHint")}) | frozenset({
    _ANALYSIS + n for n in ("UnresolvedRelation", "UnresolvedHaving", "UnresolvedSubqueryColumnAliases")})
#: expression classes of `catalyst.analysis` (unresolved names and functions: no plan inside)
_ANALYSIS_EXPRESSIONS = frozenset({
    _ANALYSIS + n for n in ("UnresolvedAttribute", "UnresolvedFunction", "UnresolvedStar", "UnresolvedAlias",
                            "UnresolvedOrdinal", "UnresolvedExtractValue", "UnresolvedRegex", "UnresolvedStarExcept",
                            "UnresolvedNamedLambdaVariable", "UnresolvedSeed")})


def relation_names(plan: Any, text: str) -> list[list[str]] | None:
    """The name parts of every table reference of a parsed query, read from one `toJSON` call instead of a py4j
    walk of the tree (~8 round trips per node, plus a finalizer delete per object fetched); None when the JSON
    cannot vouch for the whole statement - a node kind outside `_PLANS_IN_JSON`, quoted identifiers (a name part
    may then hold `, `, which the JSON renders as the separator), a JSON Spark cannot render - and the caller walks
    the plan (`walk`)."""
    if "`" in text or '"' in text:  # quoted identifiers (backquotes; double quotes under ANSI identifiers)
        return None
    try:
        flat = json.loads(str(plan.toJSON()))
    except Exception:
        return None
    names: list[list[str]] = []
    return names if _collect(flat, names) else None


def _collect(value: Any, names: list[list[str]]) -> bool:
    """Walk a `toJSON` value, appending each UnresolvedRelation's name parts; False when it meets a node whose plans
    the JSON may not hold (see `_PLANS_IN_JSON`)."""
    if isinstance(value, list):
        return all(_collect(v, names) for v in value)
    if not isinstance(value, dict):
        return True
    cls = value.get("class")
    if isinstance(cls, str):
        if cls.startswith(_EXPRESSIONS) or cls in _ANALYSIS_EXPRESSIONS:
            pass  # an expression: its children are in the list, a subquery's plan is a field rendered below
        elif cls not in _PLANS_IN_JSON:
            return False
        if cls == _ANALYSIS + "UnresolvedRelation":
            parts = _name_parts(value.get("multipartIdentifier"))
            if parts is None:
                return False
            names.append(parts)
    return all(_collect(v, names) for k, v in value.items() if k != "class")


def _name_parts(rendered: Any) -> list[str] | None:
    """`[a, b]` (Spark's rendering of a `Seq[String]` field) as ["a", "b"]; None when it cannot be exact."""
    if not isinstance(rendered, str) or not (rendered.startswith("[") and rendered.endswith("]")):
        return None
    parts = rendered[1:-1].split(", ")
    if not parts or any(not p or p != p.strip() or "," in p or "[" in p or "]" in p for p in parts) or \
            "more field" in rendered:
        return None
    return parts


def cte_names(plan: Any) -> set[str]:
    """Names defined by WITH clauses anywhere in the statement (lower-cased)."""
    out: set[str] = set()
    for node, parent in walk(plan):
        if parent is not None and name(parent) == "UnresolvedWith" and name(node) == "SubqueryAlias":
            out.add(str(node.alias()).lower())
    return out


__all__ = [
    "call",
    "class_name",
    "cte_names",
    "expr_text",
    "identifier_parts",
    "name",
    "opt",
    "parse_error_types",
    "parse_plan",
    "query_text",
    "quote",
    "quote_name",
    "relation_names",
    "relation_span",
    "scala_map",
    "seq",
    "span",
    "sql_parser",
    "unwrap_alias",
    "walk",
]
