"""Spark SQL expressions: the AST, parsing, an Arrow evaluator (`sql_eval.py`) and predicate translation.

Delta stores CHECK constraints, invariants, generated-column expressions and column defaults as Spark
SQL text, and deltalake's `predicate=` / `replaceWhere` / DML strings are SQL too. The text is parsed
by sqlglot's Spark dialect (`sql_parse.py`, imported on first use; `docs/decisions.md`, "SQL parsing:
sqlglot") and translated into the tiny immutable AST below, which `sql_eval.py` evaluates vectorized with
`pyarrow.compute` with Spark's (non-ANSI) semantics, and which translates, when it can do so exactly,
into the kernel predicate AST (`predicate.py`) for partition pruning and data skipping.

Accepted: OR / AND / NOT (`!`); comparisons = == != <> < <= > >= <=>, IS [NOT] DISTINCT FROM,
IS [NOT] NULL / TRUE / FALSE / UNKNOWN, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE / ILIKE [ESCAPE 'c'],
RLIKE / REGEXP; + - * / % || DIV & | ^ ~; `x +/- INTERVAL n unit` (folded into a `+INTERVAL` call);
`a[i]` / `m[key]` (a `[]` call); TRIM(BOTH | LEADING | TRAILING c FROM s); POSITION(a IN b); unary - and +;
literals (strings with Spark's escapes and '' for a quote,
adjacent strings concatenated, r'raw', X'hex' binary, numbers typed as Spark with the L S Y D F BD
suffixes, `DATE 'x'` / `TIMESTAMP 'x'` / `TIMESTAMP_NTZ 'x'` / `TIMESTAMP_LTZ 'x'`, TRUE, FALSE, NULL);
column references plain, `backticked` (`` `a``b` ``) or dotted `a.b.c`; function calls by name (kept as
written, upper-cased: the evaluator dispatches on it); CAST / TRY_CAST / `x::type`; CASE; EXTRACT.
Double-quoted text is a string literal as in Spark unless `double_quoted_identifiers=True`
(deltalake / DataFusion style). What sqlglot parses but has no exact meaning here (an INTERVAL on its
own, subqueries, lambdas, slices, ...) raises InvalidFilterError, as do syntax errors. The functions are
in `sql_functions.py` / `sql_temporal.py`, explicit casts in `sql_casts.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa

from ...errors import InvalidFilterError
from ..schema.types import DataType, StructType
from . import predicate as ex


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


def parse_sql(text: str, *, double_quoted_identifiers: bool = False) -> SqlExpr:
    """Parse a Spark SQL expression; raises InvalidFilterError (a DeltaError) on malformed text.

    Parsed trees are immutable and cached by text: constraints, generated columns and DML predicates
    are parsed once per distinct text, however many batches evaluate them.
    """
    if not isinstance(text, str):
        raise InvalidFilterError(f"a SQL expression must be a string, got {type(text).__name__}")
    from .sql_fast import parse_simple  # the simplest texts without importing sqlglot (~0.12 s)

    simple = parse_simple(text)
    if simple is not None:
        return simple
    from .sql_parse import parse_cached

    return parse_cached(text, bool(double_quoted_identifiers))


def quote_column_identifiers(text: str, column_names: Iterable[str]) -> str:
    """deltalake-facing SQL -> Spark SQL: a double-quoted token naming an existing column (case-insensitive)
    becomes a backticked identifier; every other double-quoted token stays a Spark string literal.

    deltalake (DataFusion) reads `"high price" >= 0` as a column; Spark reads double quotes as a string.
    Rewriting only the tokens that name a column accepts both spellings, and what is stored (constraints)
    is Spark's form, which Spark and every Delta reader parse the same way.
    """
    if '"' not in text:
        return text
    names = {n.lower() for n in column_names}
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ("'", "`", '"'):
            j = i + 1
            chars: list[str] = []
            while j < n:
                if text[j] == "\\" and c != "`" and j + 1 < n:
                    chars.append(text[j + 1])
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:  # doubled quote: one literal quote
                        chars.append(c)
                        j += 2
                        continue
                    break
                chars.append(text[j])
                j += 1
            token = text[i:j + 1]
            content = "".join(chars)
            if c == '"' and j < n and content.lower() in names:
                token = "`" + content.replace("`", "``") + "`"
            out.append(token)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


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


def evaluate(expr: SqlExpr | str, table: pa.Table | pa.RecordBatch) -> pa.Array:
    """Evaluate over every row of `table` with SQL semantics; one Arrow array of `num_rows` values."""
    from .sql_eval import evaluate_expr

    node = parse_sql(expr) if isinstance(expr, str) else expr
    return evaluate_expr(node, table)


# ----------------------------------------------------------------------------- to kernel predicate
def _resolve(schema: StructType, path: tuple[str, ...]) -> tuple[tuple[str, ...], DataType]:
    struct: DataType = schema
    out: list[str] = []
    for part in path:
        if not isinstance(struct, StructType) or not struct.has(part):
            raise InvalidFilterError(f"column {'.'.join(path)!r} is not in the table schema (columns: "
                                     f"{schema.names})")
        f = struct.field(part)
        out.append(f.name)
        struct = f.type
    return tuple(out), struct


def _literal_value(e: SqlExpr) -> tuple[bool, Any]:
    """(is a constant, its value) for literals and negated numeric literals."""
    if isinstance(e, Lit):
        return True, e.value
    return False, None


def to_predicate(expr: SqlExpr, schema: StructType) -> ex.Expr | None:
    """The exact kernel predicate for `expr`, or None when any part has no exact kernel form.

    Exactness matters: callers prune files with it (replaceWhere), so an approximation would be a
    silent data bug. Unknown columns raise InvalidFilterError instead of returning None.
    """
    for path in referenced_columns(expr):
        _resolve(schema, path)
    try:
        return _to_pred(expr, schema)
    except _Untranslatable:
        return None


class _Untranslatable(Exception):
    pass


def _operand(e: SqlExpr, schema: StructType, other: SqlExpr | None) -> ex.Column | ex.Literal:
    if isinstance(e, Col):
        return ex.Column(_resolve(schema, e.path)[0])
    is_lit, value = _literal_value(e)
    if not is_lit:
        raise _Untranslatable
    if isinstance(other, Col):
        return ex.coerce_literal(value, _resolve(schema, other.path)[1], ".".join(other.path))
    return ex.Literal(value)


def _to_pred(e: SqlExpr, schema: StructType) -> ex.Expr:
    if isinstance(e, Lit):
        if e.value is True:
            return ex.AlwaysTrue()
        if e.value is False:
            return ex.AlwaysFalse()
        raise _Untranslatable
    if isinstance(e, Col):
        path, dtype = _resolve(schema, e.path)
        if getattr(dtype, "name", None) != "boolean":
            raise _Untranslatable
        return ex.Comparison("=", ex.Column(path), ex.Literal(True, pa.bool_()))
    if isinstance(e, Unary) and e.op == "NOT":
        return ex.Not(_to_pred(e.operand, schema))
    if isinstance(e, Binary) and e.op in ("AND", "OR"):
        parts = (_to_pred(e.left, schema), _to_pred(e.right, schema))
        return ex.And(*parts) if e.op == "AND" else ex.Or(*parts)
    if isinstance(e, Binary) and e.op in COMPARISONS and e.op != "<=>":
        if not isinstance(e.left, Col) and not isinstance(e.right, Col):
            raise _Untranslatable
        left = _operand(e.left, schema, e.right)
        right = _operand(e.right, schema, e.left)
        if (isinstance(left, ex.Literal) and left.value is None) or (isinstance(right, ex.Literal) and \
                right.value is None):
            raise _Untranslatable  # `x = NULL` is NULL for every row; leave it to the evaluator
        return ex.Comparison(e.op, left, right)
    if isinstance(e, IsNull) and isinstance(e.operand, Col):
        return ex.IsNull(ex.Column(_resolve(schema, e.operand.path)[0]), e.negated)
    if isinstance(e, InList) and isinstance(e.operand, Col):
        path, dtype = _resolve(schema, e.operand.path)
        values: list[Any] = []
        for v in e.values:
            is_lit, value = _literal_value(v)
            if not is_lit:
                raise _Untranslatable
            values.append(None if value is None else ex.coerce_literal(value, dtype, ".".join(path)).value)
        lits = [ex.coerce_literal(v, dtype) for v in values if v is not None]
        vtype = lits[0].arrow_type if lits and all(x.arrow_type == lits[0].arrow_type for x in lits) else None
        return ex.In(ex.Column(path), tuple(values), e.negated, value_type=vtype)
    if isinstance(e, Between) and isinstance(e.operand, Col):
        col = e.operand
        inner = ex.And(_to_pred(Binary(">=", col, e.low), schema), _to_pred(Binary("<=", col, e.high), schema))
        return ex.Not(inner) if e.negated else inner
    raise _Untranslatable


def to_pyarrow_filter(text: str, schema: StructType, *, double_quoted_identifiers: bool = False) -> Any:
    """A SQL predicate as a `pyarrow.compute.Expression` (via the kernel AST); InvalidFilterError if inexact."""
    pred = to_predicate(parse_sql(text, double_quoted_identifiers=double_quoted_identifiers), schema)
    if pred is None:
        raise InvalidFilterError(f"predicate {text!r} uses forms that cannot be pushed into a row filter "
                                 "(only comparisons of columns with literals, IN, BETWEEN, IS NULL, AND/OR/NOT)")
    return ex.to_pyarrow(pred, schema)


__all__ = [
    "Between", "Binary", "Case", "Cast", "Col", "Func", "InList", "IsNull", "Like", "Lit", "SqlExpr", "Unary",
    "evaluate", "parse_sql", "quote_column_identifiers", "referenced_columns", "to_predicate", "to_pyarrow_filter",
]
