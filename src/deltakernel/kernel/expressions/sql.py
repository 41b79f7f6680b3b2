"""A small SQL expression language: parser, Arrow evaluator (`sql_eval.py`) and predicate translation.

Why our own: Delta stores CHECK constraints, invariants, generated-column expressions and column
defaults as Spark SQL text, and deltalake's `predicate=` / `replaceWhere` strings are SQL too. We
need to evaluate them vectorized over Arrow batches without a SQL engine dependency, so the text is
parsed here into a tiny immutable AST and evaluated with `pyarrow.compute` (Kleene AND/OR, SQL NULL
propagation). The same AST translates, when it can do so exactly, into the kernel predicate AST
(`expressions.py`) for partition pruning and data skipping.

Grammar (Spark SQL precedence, lowest first): OR; AND; NOT; comparisons (= == != <> < <= > >= <=>),
IS [NOT] NULL, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE; + - ||; * / %; unary -; primaries
(literals, `DATE 'x'` / `TIMESTAMP 'x'` / `TIMESTAMP_NTZ 'x'`, column references plain, `backticked`
or dotted `a.b`, function calls, CAST(x AS type), CASE, parentheses). Double-quoted text is a string
literal as in Spark unless `double_quoted_identifiers=True` (deltalake / DataFusion style).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
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


@dataclass(frozen=True)
class Func:
    name: str  # upper case
    args: tuple[SqlExpr, ...]


SqlExpr = Union[Lit, Col, Unary, Binary, IsNull, InList, Between, Like, Case, Cast, Func]

COMPARISONS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
_TYPE_ALIASES = {
    "string": "string", "varchar": "string", "char": "string", "text": "string",
    "int": "integer", "integer": "integer", "long": "long", "bigint": "long", "short": "short",
    "smallint": "short", "byte": "byte", "tinyint": "byte", "float": "float", "real": "float",
    "double": "double", "boolean": "boolean", "bool": "boolean", "date": "date", "timestamp": "timestamp",
    "timestamp_ltz": "timestamp", "timestamp_ntz": "timestamp_ntz", "binary": "binary", "decimal": "decimal(10,0)",
    "dec": "decimal(10,0)", "numeric": "decimal(10,0)",
}

# ----------------------------------------------------------------------------- tokenizer
_TOKEN_RE = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[LlDd]?)"
    r"|(?P<str>'(?:[^'\\]|\\.|'')*')|(?P<dq>\"(?:[^\"\\]|\\.|\"\")*\")|(?P<bq>`(?:[^`]|``)+`)"
    r"|(?P<op><=>|<=|>=|<>|!=|==|\|\||[=<>+\-*/%(),.])|(?P<id>[A-Za-z_][A-Za-z0-9_]*))"
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}
_KEYWORDS = frozenset({"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "CASE", "WHEN", "THEN", "ELSE",
                       "END", "TRUE", "FALSE", "AS"})


def _unquote_string(tok: str) -> str:
    """Spark string literal body: `''` doubles and backslash escapes."""
    q = tok[0]
    body = tok[1:-1].replace(q + q, q)
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _tokenize(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise InvalidFilterError(f"cannot parse SQL expression {text!r} at {text[pos:pos + 20].strip()!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        tokens.append((kind, m.group(kind)))
    return tokens


# ----------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str, double_quoted_identifiers: bool) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.dq_ident = double_quoted_identifiers

    def error(self, what: str) -> InvalidFilterError:
        return InvalidFilterError(f"{what} in SQL expression {self.text!r}")

    def peek_kw(self, *words: str, ahead: int = 0) -> bool:
        j = self.i + ahead
        if j >= len(self.tokens):
            return False
        kind, val = self.tokens[j]
        return (kind == "id" and val.upper() in words) or (kind == "op" and val in words)

    def take(self, *words: str) -> str | None:
        if self.peek_kw(*words):
            val = self.tokens[self.i][1]
            self.i += 1
            return val.upper()
        return None

    def expect(self, word: str) -> None:
        if not self.take(word):
            found = self.tokens[self.i][1] if self.i < len(self.tokens) else "end of input"
            raise self.error(f"expected {word!r}, found {found!r}")

    def parse(self) -> SqlExpr:
        if not self.tokens:
            raise self.error("empty expression")
        e = self.or_()
        if self.i != len(self.tokens):
            raise self.error(f"unexpected {self.tokens[self.i][1]!r}")
        return e

    def or_(self) -> SqlExpr:
        e = self.and_()
        while self.take("OR"):
            e = Binary("OR", e, self.and_())
        return e

    def and_(self) -> SqlExpr:
        e = self.not_()
        while self.take("AND"):
            e = Binary("AND", e, self.not_())
        return e

    def not_(self) -> SqlExpr:
        if self.take("NOT"):
            return Unary("NOT", self.not_())
        return self.predicate()

    def predicate(self) -> SqlExpr:
        left = self.additive()
        while True:
            if self.i < len(self.tokens) and self.tokens[self.i][0] == "op" and self.tokens[self.i][1] in (
                    "=", "==", "!=", "<>", "<", "<=", ">", ">=", "<=>"):
                op = self.tokens[self.i][1]
                self.i += 1
                op = {"==": "=", "<>": "!="}.get(op, op)
                left = Binary(op, left, self.additive())
                continue
            if self.take("IS"):
                neg = self.take("NOT") is not None
                self.expect("NULL")
                left = IsNull(left, neg)
                continue
            negated = False
            if self.peek_kw("NOT") and self.peek_kw("IN", "BETWEEN", "LIKE", ahead=1):
                self.i += 1
                negated = True
            if self.take("IN"):
                self.expect("(")
                values = [self.or_()]
                while self.take(","):
                    values.append(self.or_())
                self.expect(")")
                left = InList(left, tuple(values), negated)
            elif self.take("BETWEEN"):
                low = self.additive()
                self.expect("AND")
                left = Between(left, low, self.additive(), negated)
            elif self.take("LIKE"):
                left = Like(left, self.additive(), negated)
            else:
                return left

    def additive(self) -> SqlExpr:
        e = self.multiplicative()
        while True:
            op = self.take("+", "-", "||")
            if op is None:
                return e
            e = Binary(op, e, self.multiplicative())

    def multiplicative(self) -> SqlExpr:
        e = self.unary()
        while True:
            op = self.take("*", "/", "%")
            if op is None:
                return e
            e = Binary(op, e, self.unary())

    def unary(self) -> SqlExpr:
        if self.take("-"):
            inner = self.unary()
            if isinstance(inner, Lit) and isinstance(inner.value, (int, float)) and not isinstance(inner.value, bool):
                return Lit(-inner.value, inner.type)
            return Unary("-", inner)
        if self.take("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> SqlExpr:
        if self.i >= len(self.tokens):
            raise self.error("unexpected end of input")
        kind, val = self.tokens[self.i]
        self.i += 1
        if kind == "op" and val == "(":
            e = self.or_()
            self.expect(")")
            return e
        if kind == "num":
            return _number(val)
        if kind == "str" or (kind == "dq" and not self.dq_ident):
            return Lit(_unquote_string(val))
        if kind in ("bq", "dq"):
            q = val[0]
            return self.column(val[1:-1].replace(q + q, q))
        if kind != "id":
            raise self.error(f"unexpected {val!r}")
        word = val.upper()
        if word in ("TRUE", "FALSE"):
            return Lit(word == "TRUE")
        if word == "NULL":
            return Lit(None)
        if word in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ") and self.i < len(self.tokens) \
                and self.tokens[self.i][0] == "str":
            raw = _unquote_string(self.tokens[self.i][1])
            self.i += 1
            return _typed_literal(word, raw, self)
        if word == "CASE":
            return self.case()
        if word == "CAST" and self.peek_kw("("):
            self.i += 1
            operand = self.or_()
            self.expect("AS")
            type_name = self.type_name()
            self.expect(")")
            return Cast(operand, type_name)
        if self.peek_kw("("):
            if word in _KEYWORDS:
                raise self.error(f"unexpected {val!r}")
            self.i += 1
            args: list[SqlExpr] = []
            if not self.take(")"):
                args.append(self.or_())
                while self.take(","):
                    args.append(self.or_())
                self.expect(")")
            return Func(word, tuple(args))
        if word in _KEYWORDS:
            raise self.error(f"unexpected keyword {val!r}")
        if word in ("CURRENT_DATE", "CURRENT_TIMESTAMP"):
            return Func(word, ())
        return self.column(val)

    def column(self, first: str) -> Col:
        parts = [first]
        while self.peek_kw("."):
            self.i += 1
            if self.i >= len(self.tokens) or self.tokens[self.i][0] not in ("id", "bq", "dq"):
                raise self.error("expected a field name after '.'")
            kind, val = self.tokens[self.i]
            self.i += 1
            parts.append(val if kind == "id" else val[1:-1].replace(val[0] * 2, val[0]))
        return Col(tuple(parts))

    def case(self) -> SqlExpr:
        operand = None if self.peek_kw("WHEN") else self.or_()
        branches: list[tuple[SqlExpr, SqlExpr]] = []
        while self.take("WHEN"):
            cond = self.or_()
            self.expect("THEN")
            branches.append((cond, self.or_()))
        if not branches:
            raise self.error("CASE without WHEN")
        default = self.or_() if self.take("ELSE") else None
        self.expect("END")
        return Case(tuple(branches), default, operand)

    def type_name(self) -> str:
        if self.i >= len(self.tokens) or self.tokens[self.i][0] != "id":
            raise self.error("expected a type name")
        name = self.tokens[self.i][1].lower()
        self.i += 1
        if name in ("decimal", "dec", "numeric") and self.take("("):
            p = self._int()
            s = 0
            if self.take(","):
                s = self._int()
            self.expect(")")
            return f"decimal({p},{s})"
        if name in ("varchar", "char") and self.take("("):
            self._int()
            self.expect(")")
        if name not in _TYPE_ALIASES:
            raise self.error(f"unsupported CAST type {name!r}")
        return _TYPE_ALIASES[name]

    def _int(self) -> int:
        if self.i >= len(self.tokens) or self.tokens[self.i][0] != "num":
            raise self.error("expected an integer")
        val = self.tokens[self.i][1]
        self.i += 1
        return int(val)


def _number(tok: str) -> Lit:
    suffix = tok[-1].upper() if tok[-1].isalpha() and tok[-1].upper() in "LD" else ""
    body = tok[:-1] if suffix else tok
    if suffix == "D" or any(c in body for c in ".eE"):
        return Lit(float(body), "double")
    n = int(body)
    if suffix == "L" or not -(2**31) <= n < 2**31:
        return Lit(n, "long")
    return Lit(n, "integer")


def _typed_literal(word: str, raw: str, p: _Parser) -> Lit:
    try:
        if word == "DATE":
            return Lit(dt.date.fromisoformat(raw.strip()), "date")
        text = raw.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        value = dt.datetime.fromisoformat(text)
    except ValueError as e:
        raise p.error(f"invalid {word} literal {raw!r}") from e
    if word == "TIMESTAMP_NTZ":
        return Lit(value.replace(tzinfo=None), "timestamp_ntz")
    value = value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value.astimezone(dt.timezone.utc)
    return Lit(value, "timestamp")


def parse_sql(text: str, *, double_quoted_identifiers: bool = False) -> SqlExpr:
    """Parse a Spark SQL expression; raises InvalidFilterError (a DeltaError) on malformed text."""
    if not isinstance(text, str):
        raise InvalidFilterError(f"a SQL expression must be a string, got {type(text).__name__}")
    return _Parser(text, double_quoted_identifiers).parse()


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
    "evaluate", "parse_sql", "referenced_columns", "to_predicate", "to_pyarrow_filter",
]
