"""Spark SQL expressions: parsing (sqlglot), an Arrow evaluator (`sql_eval.py`) and predicate translation.

Delta stores CHECK constraints, invariants, generated-column expressions and column defaults as Spark
SQL text, and deltalake's `predicate=` / `replaceWhere` / DML strings are SQL too. The text is parsed
by sqlglot's Spark dialect (imported on first use; `docs/decisions.md`, "SQL parsing: sqlglot") and
translated into the tiny immutable AST below, which `sql_eval.py` evaluates vectorized with
`pyarrow.compute` with Spark's (non-ANSI) semantics, and which translates, when it can do so exactly,
into the kernel predicate AST (`predicate.py`) for partition pruning and data skipping.

Accepted: OR / AND / NOT (`!`); comparisons = == != <> < <= > >= <=>, IS [NOT] DISTINCT FROM,
IS [NOT] NULL / TRUE / FALSE / UNKNOWN, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE / ILIKE [ESCAPE 'c'],
RLIKE / REGEXP; + - * / % ||; unary - and +; literals (strings with Spark's escapes and '' for a quote,
adjacent strings concatenated, r'raw', X'hex' binary, numbers typed as Spark with the L S Y D F BD
suffixes, `DATE 'x'` / `TIMESTAMP 'x'` / `TIMESTAMP_NTZ 'x'` / `TIMESTAMP_LTZ 'x'`, TRUE, FALSE, NULL);
column references plain, `backticked` (`` `a``b` ``) or dotted `a.b.c`; function calls by name (kept as
written, upper-cased: the evaluator dispatches on it); CAST / TRY_CAST / `x::type`; CASE; EXTRACT.
Double-quoted text is a string literal as in Spark unless `double_quoted_identifiers=True`
(deltalake / DataFusion style). What sqlglot parses but has no exact meaning here (INTERVAL, DIV,
bitwise operators, subqueries, lambdas, `a[0]`, ...) raises InvalidFilterError, as do syntax errors.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar, Union

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

# ----------------------------------------------------------------------------- parser (sqlglot)
# sqlglot (Spark dialect) does the lexing and parsing; a small dialect subclass keeps Spark's surface as
# our callers rely on it, and `_Translator` maps sqlglot's tree onto the AST above. Anything sqlglot
# parses that the evaluator has no exact Spark meaning for raises InvalidFilterError here.
_TYPE_NAMES = {  # sqlglot DType name -> Delta type name
    "TEXT": "string", "VARCHAR": "string", "CHAR": "string", "NVARCHAR": "string", "NCHAR": "string",
    "INT": "integer", "BIGINT": "long", "SMALLINT": "short", "TINYINT": "byte", "FLOAT": "float",
    "DOUBLE": "double", "BOOLEAN": "boolean", "DATE": "date", "TIMESTAMP": "timestamp",
    "TIMESTAMPTZ": "timestamp", "TIMESTAMPLTZ": "timestamp", "TIMESTAMPNTZ": "timestamp_ntz", "BINARY": "binary",
    "VARBINARY": "binary",
}
_TYPED_LITERALS = {"DATE": "DATE", "TIMESTAMP": "TIMESTAMP", "TIMESTAMPTZ": "TIMESTAMP", "TIMESTAMPLTZ": "TIMESTAMP",
                   "TIMESTAMPNTZ": "TIMESTAMP_NTZ"}
_SUFFIXES = frozenset({"L", "S", "Y", "D", "F", "BD"})  # Spark's 1L 1S 1Y 1.5D 1.5F 1.5BD
_INT_RANGES = {"integer": 2**31, "long": 2**63, "short": 2**15, "byte": 2**7}
_EXTRACT_FIELDS = {  # EXTRACT(field FROM x) parts whose Spark result is the matching function's
    "YEAR": "YEAR", "Y": "YEAR", "YEARS": "YEAR", "YR": "YEAR", "YRS": "YEAR",
    "QUARTER": "QUARTER", "QTR": "QUARTER",
    "MONTH": "MONTH", "MON": "MONTH", "MONS": "MONTH", "MONTHS": "MONTH",
    "DAY": "DAY", "D": "DAY", "DAYS": "DAY",
    "HOUR": "HOUR", "H": "HOUR", "HOURS": "HOUR", "HR": "HOUR", "HRS": "HOUR",
    "MINUTE": "MINUTE", "M": "MINUTE", "MIN": "MINUTE", "MINS": "MINUTE", "MINUTES": "MINUTE",
}
_BINARY_OPS = {
    "EQ": "=", "NEQ": "!=", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=", "NullSafeEQ": "<=>",
    "Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "Mod": "%", "DPipe": "||", "And": "AND", "Or": "OR",
}


@dataclass(frozen=True)
class _Sqlglot:
    """The lazily built sqlglot pieces: one dialect per quoting mode and our two marker node classes."""

    spark: Any
    spark_dq: Any
    typed_literal: type[Any]
    suffixed_number: type[Any]


@functools.lru_cache(maxsize=1)
def _sqlglot() -> _Sqlglot:
    from sqlglot import exp
    from sqlglot.dialects.spark import Spark
    from sqlglot.tokenizer_core import TokenType

    class TypedLiteral(exp.Expression):
        """`DATE 'x'` / `TIMESTAMP 'x'` / `TIMESTAMP_NTZ 'x'`: sqlglot makes them CAST(...), which is NULL for
        bad text where Spark's typed literal is a parse error, so they are kept apart."""

        arg_types: ClassVar[dict[str, bool]] = {"this": True, "kind": True}

    class SuffixedNumber(exp.Expression):
        """`1L`, `1.5BD`, ...: sqlglot rewrites the suffix into `::type`; kept apart for Spark's range checks."""

        arg_types: ClassVar[dict[str, bool]] = {"this": True, "suffix": True}

    def typed_literal(kind: str) -> Any:
        return lambda parser, this, _type: TypedLiteral(this=this, kind=kind)

    def dcolon(parser: Any, this: Any, to: Any) -> Any:
        suffix = parser._prev.text.upper()
        if suffix in _SUFFIXES and isinstance(this, exp.Literal) and not this.is_string:
            return SuffixedNumber(this=this, suffix=suffix)  # the tokenizer turned `1L` into `1::BIGINT`
        return parser.build_cast(strict=parser.STRICT_CAST, this=this, to=to)

    base_parser: Any = Spark.Parser
    base_tokenizer: Any = Spark.Tokenizer

    class DeltakernelSpark(Spark):
        class Tokenizer(base_tokenizer):  # type: ignore[misc]
            # Spark 4 reads '' inside a quoted string as one quote (verified with pyspark 4); Hive's
            # tokenizer knew only backslash escapes
            STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'", '"']

        class Parser(base_parser):  # type: ignore[misc]
            # Every call stays a generic function call named as written: the evaluator dispatches on the
            # name and sqlglot's typed function nodes would rewrite arguments (formats, implicit casts)
            FUNCTIONS: ClassVar[dict[str, Any]] = {}
            FUNCTION_PARSERS: ClassVar[dict[str, Any]] = {k: v for k, v in base_parser.FUNCTION_PARSERS.items()
                                if k in ("CAST", "TRY_CAST", "EXTRACT")}
            TYPE_LITERAL_PARSERS: ClassVar[dict[Any, Any]] = {
                **base_parser.TYPE_LITERAL_PARSERS,
                **{getattr(exp.DType, name): typed_literal(kind) for name, kind in _TYPED_LITERALS.items()},
            }
            COLUMN_OPERATORS: ClassVar[dict[Any, Any]] = {**base_parser.COLUMN_OPERATORS, TokenType.DCOLON: dcolon}
            # Spark gives || the precedence of + and - (sqlglot a lower one): 'x' || 1 + 2 is ('x' || 1) + 2
            TERM: ClassVar[dict[Any, Any]] = {**base_parser.TERM, TokenType.DPIPE: exp.DPipe}

    class DeltakernelSparkDQ(DeltakernelSpark):
        """deltalake / DataFusion style: "x" is an identifier."""

        class Tokenizer(DeltakernelSpark.Tokenizer):
            QUOTES: ClassVar[list[str]] = ["'"]
            IDENTIFIERS: ClassVar[list[str]] = ["`", '"']
            RAW_STRINGS: ClassVar[list[tuple[str, str]]] = [("r'", "'"), ("R'", "'")]
            STRING_ESCAPES: ClassVar[list[str]] = ["\\", "'"]

    return _Sqlglot(DeltakernelSpark(), DeltakernelSparkDQ(), TypedLiteral, SuffixedNumber)


def _syntax_error(text: str, err: Any) -> InvalidFilterError:
    """sqlglot's ParseError as our error: what was wrong and where (column; line too when multi-line)."""
    errors = getattr(err, "errors", None) or []
    if not errors:
        return InvalidFilterError(f"cannot parse SQL expression {text!r}: {err}")
    first = errors[0]
    desc = str(first.get("description") or "syntax error")
    near = str(first.get("highlight") or "")
    if desc.startswith("Required keyword"):
        desc = f"missing operand for {near!r}" if near else "incomplete expression"
    elif desc.startswith("Invalid expression / Unexpected token"):
        desc = f"unexpected {near!r}" if near else "unexpected token"
    else:
        desc = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", desc) + (f" (near {near!r})" if near else "")
    where = f"line {first.get('line')}, column {first.get('col')}" if "\n" in text.strip() else \
        f"column {first.get('col')}"
    return InvalidFilterError(f"cannot parse SQL expression {text!r}: {desc} at {where}")


@functools.lru_cache(maxsize=1024)
def _parse_cached(text: str, double_quoted_identifiers: bool) -> SqlExpr:
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError
    from sqlglot.tokenizer_core import TokenType

    sg = _sqlglot()
    dialect = sg.spark_dq if double_quoted_identifiers else sg.spark
    try:
        tokens = dialect.tokenize(text)
    except TokenError as e:
        detail = str(e.__cause__ or e)
        missing = re.match(r"Missing (.+) from \d+:(\d+)", detail)
        if missing:
            detail = f"no closing {missing.group(1)} for the one at offset {missing.group(2)}"
        raise InvalidFilterError(f"cannot parse SQL expression {text!r}: {detail}") from e
    if not tokens:
        raise InvalidFilterError(f"empty SQL expression {text!r}")
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:  # one expression, not statements
            raise InvalidFilterError(f"cannot parse SQL expression {text!r}: unexpected ';' at column {tok.col}")
    try:
        try:
            tree = dialect.parser().parse_into(exp.Condition, tokens, text)[0]
        except ParseError as e:
            raise _syntax_error(text, e) from e
        if tree is None:
            raise InvalidFilterError(f"empty SQL expression {text!r}")
        return _Translator(text, sg).node(tree)
    except RecursionError as e:  # sqlglot recurses ~20 frames per parenthesis level
        raise InvalidFilterError(f"SQL expression {text[:80]!r}... is nested too deeply to parse") from e


def parse_sql(text: str, *, double_quoted_identifiers: bool = False) -> SqlExpr:
    """Parse a Spark SQL expression; raises InvalidFilterError (a DeltaError) on malformed text.

    Parsed trees are immutable and cached by text: constraints, generated columns and DML predicates
    are parsed once per distinct text, however many batches evaluate them.
    """
    if not isinstance(text, str):
        raise InvalidFilterError(f"a SQL expression must be a string, got {type(text).__name__}")
    return _parse_cached(text, bool(double_quoted_identifiers))


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


class _Translator:
    """sqlglot's expression tree -> our AST, with Spark's literal typing."""

    def __init__(self, text: str, sg: _Sqlglot) -> None:
        self.text = text
        self.sg = sg

    def error(self, what: str) -> InvalidFilterError:
        return InvalidFilterError(f"{what} in SQL expression {self.text!r}")

    def unsupported(self, node: Any, what: str = "construct") -> InvalidFilterError:
        try:
            shown = node.sql(dialect="spark")
        except Exception:  # best effort: only used to word the error
            shown = type(node).__name__
        return self.error(f"unsupported {what} {shown!r}")

    def node(self, e: Any) -> SqlExpr:
        from sqlglot import exp

        if type(e).__name__ in _BINARY_OPS:
            return self.binary_chain(e)
        if isinstance(e, exp.Paren):
            return self.node(e.this)
        if isinstance(e, (exp.Column, exp.Dot)):
            return Col(self.path(e))
        if isinstance(e, exp.Literal):
            return Lit(e.this) if e.is_string else self.number(e.this, "", False)
        if isinstance(e, exp.Boolean):
            return Lit(bool(e.this))
        if isinstance(e, exp.Null):
            return Lit(None)
        if isinstance(e, self.sg.suffixed_number):
            return self.number(e.this.this, e.args["suffix"], False)
        if isinstance(e, self.sg.typed_literal):
            return self.typed_literal(e)
        if isinstance(e, exp.Neg):
            return self.negate(e.this)
        if isinstance(e, exp.Not):
            return self.not_(e.this)
        if isinstance(e, exp.NullSafeNEQ):  # IS DISTINCT FROM
            return Unary("NOT", Binary("<=>", self.node(e.this), self.node(e.expression)))
        if isinstance(e, exp.Is):
            return self.is_(e, False)
        if isinstance(e, exp.In):
            return self.in_(e, False)
        if isinstance(e, exp.Between):
            return self.between(e, False)
        if isinstance(e, (exp.Like, exp.ILike, exp.Escape)):
            return self.like(e)
        if isinstance(e, exp.RegexpLike) and set(e.args) <= {"this", "expression"}:
            return Func("RLIKE", (self.node(e.this), self.node(e.expression)))
        if isinstance(e, exp.Case):
            return self.case(e)
        if isinstance(e, exp.If):  # if(c, a, b): sqlglot parses it as a conditional, not a call
            args = [e.this, e.args.get("true"), e.args.get("false")]
            return Func("IF", tuple(self.node(a) for a in args if a is not None))
        if type(e) is exp.TryCast and isinstance(e.args.get("to"), exp.DataType):
            # CAST and `::` come out as TryCast in sqlglot's Spark dialect (non-ANSI CAST gives NULL for
            # malformed text); TRY_CAST too (safe=True): our Cast is Spark's non-ANSI CAST, which
            # TRY_CAST equals except where a non-ANSI CAST would wrap around on overflow
            return Cast(self.node(e.this), self.type_name(e.args["to"]))
        if isinstance(e, exp.Anonymous):
            name = e.this if isinstance(e.this, str) else e.this.name
            return Func(name.upper(), tuple(self.node(a) for a in e.expressions))
        if isinstance(e, exp.CurrentDate) and not e.args.get("this"):
            return Func("CURRENT_DATE", ())
        if isinstance(e, exp.CurrentTimestamp) and not e.args.get("this"):
            return Func("CURRENT_TIMESTAMP", ())
        if isinstance(e, exp.Extract):
            field = e.this.name.upper() if isinstance(e.this, (exp.Var, exp.Identifier, exp.Column)) else ""
            if field not in _EXTRACT_FIELDS:
                raise self.unsupported(e, "EXTRACT field")
            return Func(_EXTRACT_FIELDS[field], (self.node(e.expression),))
        if isinstance(e, (exp.RawString, exp.HexString, exp.Concat)):
            return self.string_like(e)
        if isinstance(e, exp.Interval):
            raise self.unsupported(e, "INTERVAL literal")
        if type(e) is exp.Cast and isinstance(e.this, exp.Literal):  # `<type> 'text'` for any other type
            raise self.unsupported(e, "typed literal")
        raise self.unsupported(e)

    def binary_chain(self, e: Any) -> SqlExpr:
        """A left-deep chain (`a OR b OR c ...`, thousands long in generated predicates) without recursion."""
        rights: list[tuple[str, Any]] = []
        while type(e).__name__ in _BINARY_OPS:
            rights.append((_BINARY_OPS[type(e).__name__], e.expression))
            e = e.this
        out = self.node(e)
        for op, right in reversed(rights):
            out = Binary(op, out, self.node(right))
        return out

    # ------------------------------------------------------------------ names
    def path(self, e: Any) -> tuple[str, ...]:
        """`a.b.c` -> ("a", "b", "c"); sqlglot splits up to four parts into Column and chains Dots after."""
        from sqlglot import exp

        if isinstance(e, exp.Dot):
            if not isinstance(e.expression, exp.Identifier):
                raise self.unsupported(e)
            return (*self.path(e.this), e.expression.this)
        if isinstance(e, exp.Identifier):
            return (e.this,)
        if isinstance(e, exp.Column):
            parts = [e.args.get(k) for k in ("catalog", "db", "table", "this")]
            if not all(p is None or isinstance(p, exp.Identifier) for p in parts):
                raise self.unsupported(e, "column reference")
            return tuple(p.this for p in parts if p is not None)
        raise self.unsupported(e, "field access on")

    def type_name(self, t: Any) -> str:
        from sqlglot import exp

        dtype = t.this
        name = dtype.name if isinstance(dtype, exp.DType) else ""
        if name == "DECIMAL":
            params = []
            for p in t.expressions:
                value = p.this if isinstance(p, exp.DataTypeParam) else p
                if not isinstance(value, exp.Literal) or value.is_string or not value.this.isdigit():
                    raise self.unsupported(t, "DECIMAL parameters in")
                params.append(int(value.this))
            if len(params) > 2:
                raise self.unsupported(t, "CAST type")
            precision, scale = (params + [10, 0][len(params):]) if params else (10, 0)
            if not 1 <= precision <= 38 or not 0 <= scale <= precision:
                raise self.error(f"invalid decimal({precision},{scale}): precision must be 1..38 and scale "
                                 "0..precision")
            return f"decimal({precision},{scale})"
        if name not in _TYPE_NAMES or (t.expressions and name not in ("TEXT", "VARCHAR", "CHAR")):
            raise self.unsupported(t, "CAST type")
        return _TYPE_NAMES[name]

    # ------------------------------------------------------------------ literals
    def number(self, body: str, suffix: str, negative: bool) -> SqlExpr:
        """Spark's numeric literal types: an integer is INT, else BIGINT, else DECIMAL(p,0); with a `.` or
        an exponent DOUBLE (Spark reads `1.5` as DECIMAL(2,1): see docs/decisions.md); suffixes
        L (BIGINT), S (SMALLINT), Y (TINYINT), D (DOUBLE), F (FLOAT), BD (DECIMAL)."""
        text = ("-" if negative else "") + body
        is_integral = body.isdigit()
        shown = text + suffix
        if suffix == "BD":
            try:
                value = Decimal(text)
            except InvalidOperation as e:
                raise self.error(f"invalid numeric literal {shown!r}") from e
            _, digits, exponent = value.as_tuple()
            assert isinstance(exponent, int)
            precision, scale = len(digits), -exponent
            if scale < 0:  # 1E3BD: DECIMAL(4,0), as Spark (negative scales are off by default)
                precision, scale, value = precision - scale, 0, value.quantize(Decimal(1))
            precision = max(precision, scale)
            if precision > 38:
                raise self.error(f"numeric literal {shown!r} is outside the range of DECIMAL(38)")
            return Lit(value, f"decimal({precision},{scale})")
        if suffix in ("D", "F") or (not suffix and not is_integral):
            value_f = float(text)
            limit = 3.4028234663852886e38 if suffix == "F" else 1.7976931348623157e308
            if not math.isfinite(value_f) or abs(value_f) > limit:
                raise self.error(f"numeric literal {shown!r} is outside the range of "
                                 f"{'FLOAT' if suffix == 'F' else 'DOUBLE'}")
            return Lit(value_f, "double") if suffix != "F" else Cast(Lit(value_f, "double"), "float")
        if not is_integral:
            raise self.error(f"invalid numeric literal {shown!r}")
        n = int(text)
        if not suffix:
            for type_name in ("integer", "long"):
                if -_INT_RANGES[type_name] <= n < _INT_RANGES[type_name]:
                    return Lit(n, type_name)
            if len(body) > 38:
                raise self.error(f"numeric literal {shown!r} is outside the range of DECIMAL(38)")
            return Lit(Decimal(n), f"decimal({len(body.lstrip('0')) or 1},0)")
        type_name = {"L": "long", "S": "short", "Y": "byte"}[suffix]
        if not -_INT_RANGES[type_name] <= n < _INT_RANGES[type_name]:
            raise self.error(f"numeric literal {shown!r} is outside the range of {type_name.upper()}")
        return Lit(n, "long") if type_name == "long" else Cast(Lit(n, "integer"), type_name)

    def negate(self, operand: Any) -> SqlExpr:
        from sqlglot import exp

        if isinstance(operand, exp.Literal) and not operand.is_string:
            return self.number(operand.this, "", True)  # -2147483648 is an INT, as in Spark
        if isinstance(operand, self.sg.suffixed_number):
            return self.number(operand.this.this, operand.args["suffix"], True)
        inner = self.node(operand)
        if isinstance(inner, Lit) and isinstance(inner.value, (int, float, Decimal)) and \
                not isinstance(inner.value, bool):
            value = -inner.value
            if inner.type == "integer" and not -(2**31) <= value < 2**31:
                return Lit(value, "long")
            return Lit(value, inner.type)
        return Unary("-", inner)

    def typed_literal(self, e: Any) -> Lit:
        from sqlglot import exp

        word = e.args["kind"]
        lit = e.this
        if not isinstance(lit, exp.Literal) or not lit.is_string:
            raise self.error(f"{word} must be followed by a quoted string")
        raw = lit.this
        try:
            if word == "DATE":
                return Lit(dt.date.fromisoformat(raw.strip()), "date")
            text = raw.strip()
            if text.endswith(("Z", "z")):
                text = text[:-1] + "+00:00"
            value = dt.datetime.fromisoformat(text)
        except ValueError as err:
            raise self.error(f"invalid {word} literal {raw!r}") from err
        if word == "TIMESTAMP_NTZ":
            return Lit(value.replace(tzinfo=None), "timestamp_ntz")
        value = value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else \
            value.astimezone(dt.timezone.utc)
        return Lit(value, "timestamp")

    def string_like(self, e: Any) -> SqlExpr:
        from sqlglot import exp

        if isinstance(e, exp.RawString):  # r'...': no escape processing
            return Lit(e.this)
        if isinstance(e, exp.HexString):  # X'..' is BINARY; an odd digit count gets a leading 0 as in Spark
            digits = e.this if len(e.this) % 2 == 0 else "0" + e.this
            try:
                return Lit(bytes.fromhex(digits), "binary")
            except ValueError as err:
                raise self.error(f"invalid binary literal X'{e.this}'") from err
        parts = [self.node(p) for p in e.expressions]  # 'a' 'b': adjacent literals are one string
        if all(isinstance(p, Lit) and isinstance(p.value, str) and p.type is None for p in parts):
            return Lit("".join(str(p.value) for p in parts if isinstance(p, Lit)))
        return Func("CONCAT", tuple(parts))

    # ------------------------------------------------------------------ predicates
    def not_(self, operand: Any) -> SqlExpr:
        from sqlglot import exp

        if isinstance(operand, exp.In):
            return self.in_(operand, True)
        if isinstance(operand, exp.Between):
            return self.between(operand, True)
        if isinstance(operand, exp.Is):
            return self.is_(operand, True)
        return Unary("NOT", self.node(operand))

    def is_(self, e: Any, negated: bool) -> SqlExpr:
        from sqlglot import exp

        target = e.expression
        if isinstance(target, exp.Null):  # IS NULL, IS UNKNOWN
            return IsNull(self.node(e.this), negated)
        if isinstance(target, exp.Boolean):  # IS TRUE / IS FALSE are never NULL: `x <=> TRUE`
            cmp = Binary("<=>", self.node(e.this), Lit(bool(target.this)))
            return Unary("NOT", cmp) if negated else cmp
        raise self.unsupported(e)

    def in_(self, e: Any, negated: bool) -> SqlExpr:
        if any(e.args.get(k) for k in ("query", "unnest", "field")):
            raise self.unsupported(e, "IN form")
        if not e.expressions:
            raise self.error("IN needs at least one value")
        return InList(self.node(e.this), tuple(self.node(v) for v in e.expressions), negated)

    def between(self, e: Any, negated: bool) -> SqlExpr:
        if e.args.get("symmetric"):
            raise self.unsupported(e, "BETWEEN form")
        return Between(self.node(e.this), self.node(e.args["low"]), self.node(e.args["high"]), negated)

    def like(self, e: Any) -> SqlExpr:
        """LIKE; ILIKE as Spark defines it (LIKE over lower(x) and lower(pattern)); ESCAPE 'c' rewritten
        into the backslash escapes the evaluator's LIKE uses (Spark's default escape is backslash too)."""
        from sqlglot import exp

        escape = None
        if isinstance(e, exp.Escape):
            escape, e = e.expression, e.this
            if not isinstance(e, (exp.Like, exp.ILike)):
                raise self.unsupported(e, "ESCAPE on")
        if isinstance(e.expression, (exp.Any, exp.All)):
            raise self.unsupported(e, "LIKE form")  # LIKE ANY / SOME / ALL (...)
        operand, pattern = self.node(e.this), self.node(e.expression)
        if escape is not None:
            pattern = self.escaped_pattern(pattern, escape)
        if isinstance(e, exp.ILike):
            operand, pattern = Func("LOWER", (operand,)), Func("LOWER", (pattern,))
        return Like(operand, pattern, bool(e.args.get("negate")))

    def escaped_pattern(self, pattern: SqlExpr, escape: Any) -> SqlExpr:
        from sqlglot import exp

        if not (isinstance(escape, exp.Literal) and escape.is_string and len(escape.this) == 1):
            raise self.error("ESCAPE needs a single-character string")
        if not (isinstance(pattern, Lit) and isinstance(pattern.value, str)):
            raise self.error("LIKE ... ESCAPE needs a constant pattern")
        esc, text, out, i = escape.this, pattern.value, [], 0
        while i < len(text):
            c = text[i]
            if c == esc:
                if i + 1 >= len(text) or text[i + 1] not in ("_", "%", esc):
                    raise self.error(f"the escape character {esc!r} must precede '_', '%' or itself in LIKE "
                                     f"pattern {text!r}")
                nxt = text[i + 1]
                out.append("\\" + nxt if nxt in "_%\\" else nxt)
                i += 2
                continue
            out.append("\\\\" if c == "\\" else c)
            i += 1
        return Lit("".join(out))

    def case(self, e: Any) -> SqlExpr:
        branches = tuple((self.node(b.this), self.node(b.args["true"])) for b in e.args.get("ifs") or [])
        if not branches:
            raise self.error("CASE without WHEN")
        default = e.args.get("default")
        operand = e.this
        return Case(branches, self.node(default) if default is not None else None,
                    self.node(operand) if operand is not None else None)


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
