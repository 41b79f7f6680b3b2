"""What Spark's analysis of a read-only query depends on, as a key (Spark Connect's one-request path).

Why: Spark Connect's own `spark.sql()` sends the statement eagerly (a `sql_command`: the server parses and analyses
it, so analysis errors raise at `spark.sql()` as on a classic session), and the first action sends it again to be
analysed and executed - two round trips and two analyses per point query, the main part of Connect's cost over
classic for SQL shapes (benchmarks/README.md, "Point query per shape"). The router knows more than Spark Connect's
client: it parsed the statement and planned every Delta relation in it. When a statement of the same shape - the
same text except the values its conditions compare with, over relations of the same schemas and definitions - was
analysed by Spark without error in this session, this one will be too, so the router returns it as an unsent frame
and the action is its only request (`relations.run`). Anything the key cannot vouch for is analysed eagerly as
before: statements reading a relation the router did not plan (a Parquet table, a plain temporary view, a table
function), statements calling a function sqlglot does not know (a UDF, which can be registered again with another
signature), EXPLAIN, commands.

Only the values of plain literals compared with something (`=`, `<>`, `<`, `<=`, `>`, `>=`, `<=>`, IN, BETWEEN,
LIKE) are left out, each replaced by a literal of the same Spark type: such a value never changes what analysis
decides (a string that does not cast fails when executed, not when analysed). Literals anywhere else - the select
list, LIMIT, function arguments, typed literals such as DATE '...', negated numbers - stay in the key as written.
"""

from __future__ import annotations

import re
from typing import Any

_INT32 = 2**31
_INT64 = 2**63


def _comparisons() -> tuple[type, ...]:
    from sqlglot import exp

    return (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.In, exp.Between, exp.Like,
            exp.ILike)


def _typed_placeholder(literal: Any) -> Any:
    """A literal of the same Spark type as `literal`, whatever its value."""
    from sqlglot import exp

    if literal.is_string:
        return exp.Literal.string("")
    text = str(literal.this)
    if text.isdigit():  # Spark types an integer literal by its size: INT, BIGINT, else DECIMAL(digits, 0)
        value = int(text)
        return exp.Literal.number("0" if value < _INT32 else "2147483648" if value < _INT64 else "9" * len(text))
    return exp.Literal.number(re.sub(r"\d", "9", text))  # decimals and doubles: the same digits shape


def shape(tree: Any) -> str:
    """The statement as Spark SQL with the values its conditions compare with replaced by typed placeholders."""
    from sqlglot import exp

    comparisons = _comparisons()
    copy = tree.copy()
    for literal in list(copy.find_all(exp.Literal)):
        if isinstance(literal.parent, comparisons):
            literal.replace(_typed_placeholder(literal))
    return str(copy.sql(dialect="spark"))


def reads_only(tree: Any, nodes: list[Any]) -> bool:
    """Is every relation `tree` reads one of the table nodes `nodes` (the router's Delta uses) or one of its CTEs,
    and every function one sqlglot knows?"""
    from sqlglot import exp

    if any(n is None for n in nodes) or next(tree.find_all(exp.Anonymous), None) is not None:
        return False
    ctes = {c.alias.lower() for c in tree.find_all(exp.CTE) if c.alias}
    known = {id(n) for n in nodes}
    for table in tree.find_all(exp.Table):
        if id(table) in known:
            continue
        if isinstance(table.this, exp.Identifier) and not table.args.get("db") and table.name.lower() in ctes:
            continue
        return False
    return True


__all__ = ["reads_only", "shape"]
