"""Spark SQL text -> the expression AST of `ast.py`, through sqlglot's Spark dialect.

Kept apart from `ast.py` / `parsing.py` / `translate.py` (the AST, the entry point, the translation) as the
only part that imports sqlglot, and only when first called: `import deltakernel` stays free of it. A small
dialect subclass keeps Spark's surface as written (function names, typed literals, numeric suffixes, `||`
precedence); `_Translator` maps sqlglot's tree onto the AST with Spark's literal typing, and raises
InvalidFilterError for what parses but has no exact meaning here (docs/decisions.md, "SQL parsing: sqlglot").
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, ClassVar

from ....errors import InvalidFilterError
from ...isotime import parse_datetime
from .ast import Between, Binary, Case, Cast, Col, Func, InList, IsNull, Like, Lit, SqlExpr, Unary

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
EXTRACT_FIELDS = {  # EXTRACT(field FROM x) parts whose Spark result is the matching function's
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
    "IntDiv": "DIV", "BitwiseAnd": "&", "BitwiseOr": "|", "BitwiseXor": "^",
}
_INTERVAL_UNITS = {  # unit -> (months, microseconds) per unit; Spark accepts singular and plural
    "YEAR": (12, 0), "MONTH": (1, 0), "WEEK": (0, 7 * 86_400_000_000), "DAY": (0, 86_400_000_000),
    "HOUR": (0, 3_600_000_000), "MINUTE": (0, 60_000_000), "SECOND": (0, 1_000_000),
    "MILLISECOND": (0, 1_000), "MICROSECOND": (0, 1),
}
_US_PER_DAY = 86_400_000_000


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
                                if k in ("CAST", "TRY_CAST", "EXTRACT", "TRIM", "POSITION")}
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
def parse_cached(text: str, double_quoted_identifiers: bool) -> SqlExpr:
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
        if isinstance(e, exp.BitwiseNot):
            return Unary("~", self.node(e.this))
        if isinstance(e, exp.Bracket) and len(e.expressions) == 1 and not e.args.get("safe"):
            return Func("[]", (self.node(e.this), self.node(e.expressions[0])))
        if isinstance(e, exp.Trim):
            return self.trim(e)
        if isinstance(e, exp.StrPosition) and e.args.get("substr") is not None and not e.args.get("occurrence"):
            args = [e.args["substr"], e.this] + ([e.args["position"]] if e.args.get("position") else [])
            return Func("LOCATE", tuple(self.node(a) for a in args))
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
            # malformed text); TRY_CAST too, with safe=True: an ANSI cast that is NULL where it would fail
            # (a fraction in '1.5' -> INT, overflow), where the non-ANSI CAST truncates or wraps around
            return Cast(self.node(e.this), self.type_name(e.args["to"]), bool(e.args.get("safe")))
        if isinstance(e, exp.Anonymous):
            name = e.this if isinstance(e.this, str) else e.this.name
            return Func(name.upper(), tuple(self.node(a) for a in e.expressions))
        if isinstance(e, exp.CurrentDate) and not e.args.get("this"):
            return Func("CURRENT_DATE", ())
        if isinstance(e, exp.CurrentTimestamp) and not e.args.get("this"):
            return Func("CURRENT_TIMESTAMP", ())
        if isinstance(e, exp.Extract):
            field = e.this.name.upper() if isinstance(e.this, (exp.Var, exp.Identifier, exp.Column)) else ""
            if field not in EXTRACT_FIELDS:
                raise self.unsupported(e, "EXTRACT field")
            return Func(EXTRACT_FIELDS[field], (self.node(e.expression),))
        if isinstance(e, (exp.RawString, exp.HexString, exp.Concat)):
            return self.string_like(e)
        if isinstance(e, exp.Interval):
            raise self.unsupported(e, "INTERVAL literal")
        if type(e) is exp.Cast and isinstance(e.this, exp.Literal) and e.this.is_string \
                and isinstance(e.args.get("to"), exp.DataType):  # `<type> 'text'`: `int'10'`, `decimal'1.5'`
            return self.other_typed_literal(e)
        raise self.unsupported(e)

    def binary_chain(self, e: Any) -> SqlExpr:
        """A left-deep chain (`a OR b OR c ...`, thousands long in generated predicates) without recursion.
        `x + INTERVAL ...` / `x - INTERVAL ...` become `+INTERVAL(x, months, days, microseconds)`."""
        rights: list[tuple[str, Any]] = []
        while type(e).__name__ in _BINARY_OPS and self.interval(e) is None:
            rights.append((_BINARY_OPS[type(e).__name__], e.expression))
            e = e.this
        rights.reverse()
        first = self.interval(e)
        if first is not None and rights and rights[0][0] == "+":  # INTERVAL ... + x
            out = self.shifted(self.node(rights.pop(0)[1]), first)
        else:
            out = self.node(e)
        for op, right in rights:
            iv = self.interval(right) if op in ("+", "-") else None
            if iv is not None:
                out = self.shifted(out, iv if op == "+" else (-iv[0], -iv[1], -iv[2]))
            else:
                out = Binary(op, out, self.node(right))
        return out

    def shifted(self, value: SqlExpr, iv: tuple[int, int, int]) -> SqlExpr:
        return Func("+INTERVAL", (value, Lit(iv[0], "long"), Lit(iv[1], "long"), Lit(iv[2], "long")))

    def interval(self, e: Any) -> tuple[int, int, int] | None:
        """(months, days, microseconds) of an interval literal (or a sum / negation of them), else None."""
        from sqlglot import exp

        if isinstance(e, exp.Paren):
            return self.interval(e.this)
        if isinstance(e, exp.Neg):
            inner = self.interval(e.this)
            return None if inner is None else (-inner[0], -inner[1], -inner[2])
        if isinstance(e, (exp.Add, exp.Sub)):
            left, right = self.interval(e.this), self.interval(e.expression)
            if left is None or right is None:
                return None
            sign = 1 if isinstance(e, exp.Add) else -1
            return left[0] + sign * right[0], left[1] + sign * right[1], left[2] + sign * right[2]
        if not isinstance(e, exp.Interval):
            return None
        unit = e.args.get("unit")
        value = e.this
        text = value.this if isinstance(value, exp.Literal) else None
        if text is None or (unit is not None and not isinstance(unit, exp.Var)):
            raise self.unsupported(e, "INTERVAL literal")
        if unit is None:  # INTERVAL '1 day 2 hours'
            words = str(text).split()
            if not words or len(words) % 2:
                raise self.error(f"invalid INTERVAL {text!r}")
            pairs = list(zip(words[::2], words[1::2]))
        else:
            pairs = [(str(text), unit.name)]
        months = days = micros = 0
        for amount, name in pairs:
            word = name.upper()
            word = word[:-1] if word.endswith("S") and word[:-1] in _INTERVAL_UNITS else word
            if word not in _INTERVAL_UNITS:
                raise self.error(f"unsupported INTERVAL unit {name!r}")
            per_month, per_us = _INTERVAL_UNITS[word]
            try:
                number = Decimal(amount.strip())
            except InvalidOperation as err:
                raise self.error(f"invalid INTERVAL value {amount!r}") from err
            if per_month:
                if number != number.to_integral_value():
                    raise self.error(f"INTERVAL {amount} {name}: a fractional number of months")
                months += int(number) * per_month
            elif number != number.to_integral_value() and word != "SECOND":
                raise self.error(f"INTERVAL {amount} {name}: only SECOND takes a fraction (Spark)")
            elif word in ("DAY", "WEEK"):
                days += int(number) * per_us // _US_PER_DAY
            else:
                us = number * per_us
                if us != us.to_integral_value():
                    raise self.error(f"INTERVAL {amount} {name} is finer than a microsecond")
                micros += int(us)
        return months, days, micros

    def trim(self, e: Any) -> SqlExpr:
        """TRIM([BOTH | LEADING | TRAILING] [chars] FROM s) and trim(s)."""
        position = str(e.args.get("position") or "BOTH").upper()
        name = {"BOTH": "TRIM", "LEADING": "LTRIM", "TRAILING": "RTRIM"}.get(position)
        if name is None or e.args.get("collation"):
            raise self.unsupported(e, "TRIM form")
        chars = e.args.get("expression")
        args = (self.node(e.this),) + ((self.node(chars),) if chars is not None else ())
        return Func(name, args)

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

    def other_typed_literal(self, e: Any) -> SqlExpr:
        """`<type> 'text'` beyond DATE / TIMESTAMP (deltalake / DataFusion users write `int'10'`,
        `decimal'1.5'`, `double'2.5'`, `boolean'true'`, `string'x'`): the text read strictly as a literal of
        that type, malformed text or a value out of range is an error (never NULL, unlike CAST)."""
        type_name = self.type_name(e.args["to"])
        raw = e.this.this
        text = raw.strip()
        try:
            if type_name in _INT_RANGES:
                n = int(text)
                if not -_INT_RANGES[type_name] <= n < _INT_RANGES[type_name]:
                    raise self.error(f"{type_name.upper()} literal {raw!r} is out of range")
                return Lit(n, type_name) if type_name in ("integer", "long") else Cast(Lit(n, "integer"), type_name)
            if type_name.startswith("decimal"):
                value = Decimal(text)
                if not value.is_finite():
                    raise ValueError(raw)
                if e.args["to"].expressions:  # decimal(p,s)'text': that type, the value must fit
                    return Cast(self.number(str(abs(value)), "BD", value < 0), type_name)
                return self.number(str(abs(value)), "BD", value.is_signed())  # `decimal'1.5'`: DECIMAL(2,1)
            if type_name in ("double", "float"):
                value_f = float(text)
                return Lit(value_f, "double") if type_name == "double" else Cast(Lit(value_f, "double"), "float")
            if type_name == "boolean" and text.lower() in ("true", "false"):
                return Lit(text.lower() == "true", "boolean")
            if type_name == "string":
                return Lit(raw, "string")
        except (ValueError, InvalidOperation) as err:
            raise self.error(f"invalid {type_name.upper()} literal {raw!r}") from err
        raise self.unsupported(e, "typed literal")

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
            value = parse_datetime(text)
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
