"""The Spark SQL expression AST: immutable nodes and the walks every user needs (children, conjuncts,
referenced columns).

Delta stores CHECK constraints, invariants, generated-column expressions and column defaults as Spark SQL
text, and deltalake's `predicate=` / `replaceWhere` / DML strings are SQL too. `parsing.py` turns the text
into these nodes (sqlglot's Spark dialect, or a fast path for the simplest texts), `translate.py` turns them,
when exact, into the kernel predicate AST for pruning and skipping, and `deltakernel.sqleval` evaluates them
over Arrow data (engine work, outside the kernel).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Union


# ----------------------------------------------------------------------------- AST
@dataclass(frozen=True)
class Lit:
    """A constant; `type` is None (inferred from the Python value) or a Delta type name."""

    value: Any
    type: str | None = None


@dataclass(frozen=True)
class Col:
    """A column reference by name path as written (resolved case-insensitively at evaluation)."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Unary:
    op: str  # "-" or "NOT"
    operand: SqlExpr


@dataclass(frozen=True)
class Binary:
    op: str  # + - * / % || = != < <= > >= <=> AND OR
    left: SqlExpr
    right: SqlExpr


@dataclass(frozen=True)
class IsNull:
    operand: SqlExpr
    negated: bool = False


@dataclass(frozen=True)
class InList:
    operand: SqlExpr
    values: tuple[SqlExpr, ...]
    negated: bool = False


@dataclass(frozen=True)
class Between:
    operand: SqlExpr
    low: SqlExpr
    high: SqlExpr
    negated: bool = False


@dataclass(frozen=True)
class Like:
    operand: SqlExpr
    pattern: SqlExpr
    negated: bool = False


@dataclass(frozen=True)
class Case:
    """CASE [operand] WHEN c THEN v ... [ELSE e] END; with an operand, `c` is compared for equality."""

    branches: tuple[tuple[SqlExpr, SqlExpr], ...]
    default: SqlExpr | None = None
    operand: SqlExpr | None = None


@dataclass(frozen=True)
class Cast:
    operand: SqlExpr
    type_name: str  # normalized Delta type name: long, integer, decimal(10,2), ...
    safe: bool = False  # TRY_CAST: NULL where an ANSI cast fails (CAST wraps / truncates instead)


@dataclass(frozen=True)
class Func:
    name: str  # upper case
    args: tuple[SqlExpr, ...]


SqlExpr = Union[Lit, Col, Unary, Binary, IsNull, InList, Between, Like, Case, Cast, Func]

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=", "<=>")


# ----------------------------------------------------------------------------- helpers
def children(e: SqlExpr) -> Iterator[SqlExpr]:
    """Direct sub-expressions, in source order."""
    if isinstance(e, Unary):
        yield e.operand
    elif isinstance(e, Binary):
        yield e.left
        yield e.right
    elif isinstance(e, (IsNull, Cast)):
        yield e.operand
    elif isinstance(e, InList):
        yield e.operand
        yield from e.values
    elif isinstance(e, Between):
        yield from (e.operand, e.low, e.high)
    elif isinstance(e, Like):
        yield from (e.operand, e.pattern)
    elif isinstance(e, Case):
        if e.operand is not None:
            yield e.operand
        for c, v in e.branches:
            yield c
            yield v
        if e.default is not None:
            yield e.default
    elif isinstance(e, Func):
        yield from e.args


def conjuncts(e: SqlExpr) -> Iterator[SqlExpr]:
    """The parts of a top-level AND chain (the expression itself when it is not an AND)."""
    if isinstance(e, Binary) and e.op == "AND":
        yield from conjuncts(e.left)
        yield from conjuncts(e.right)
    else:
        yield e


def referenced_columns(expr: SqlExpr) -> set[tuple[str, ...]]:
    """Column paths the expression reads, as written (generated columns and constraints need them)."""
    out: set[tuple[str, ...]] = set()
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Col):
            out.add(e.path)
        stack.extend(children(e))
    return out


__all__ = [
    "Between", "Binary", "Case", "Cast", "Col", "Func", "InList", "IsNull", "Like", "Lit", "SqlExpr", "Unary",
    "COMPARISONS", "children", "conjuncts", "referenced_columns",
]
