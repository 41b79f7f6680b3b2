"""Vectorized evaluation of the SQL AST (`kernel/expressions/sql/ast.py`) over an Arrow batch with `pyarrow.compute`.

Semantics follow Spark SQL with ANSI mode off, which is what Delta's constraints and generated
columns were written against: NULL propagates through operators and functions, AND/OR are Kleene,
`/` is fractional division, division or modulo by zero is NULL, `%` keeps the dividend's sign, an
invalid CAST from string is NULL, comparisons coerce a string to the other side's type. Time zone
dependent functions use UTC (the session time zone Delta tables are written with by deltalake).
One deliberate exception: integer arithmetic that overflows raises InvalidFilterError (non-ANSI Spark
wraps around silently; ANSI Spark, Spark 4's default, and DataFusion raise), so a DML never stores a
wrapped value. Functions live in `functions/` (one module per family), explicit CASTs in `casts.py`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidFilterError
from ..kernel.arrow_build import bool_to_arrow, broadcast, np_to_arrow, null_scalar, scalar, str_scalar
from ..kernel.expressions.sql.ast import (
    Between,
    Binary,
    Case,
    Cast,
    Col,
    Func,
    InList,
    IsNull,
    Like,
    Lit,
    SqlExpr,
    Unary,
)
from ..kernel.isotime import parse_datetime
from ..kernel.schema.arrow import to_arrow_type
from ..kernel.schema.types import parse_type
from .casts import cast_expr, java_double_string, timestamp_string
from .protocol import Value

_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
_LIT_TYPES = {
    "integer": pa.int32(), "long": pa.int64(), "double": pa.float64(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
}
_CMP = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
        ">=": pc.greater_equal}


def evaluate_expr(expr: SqlExpr, table: pa.Table | pa.RecordBatch) -> pa.Array:
    ev = Evaluator(table)
    out = ev.eval(expr)
    if isinstance(out, pa.Scalar):
        return broadcast(out, ev.n)  # a constant: broadcast in C++, no Python list of n values
    if isinstance(out, pa.ChunkedArray):
        return out.combine_chunks()
    return out


def _is_num(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t))


def _is_str(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _is_temporal(t: pa.DataType) -> bool:
    return bool(pa.types.is_date(t) or pa.types.is_timestamp(t))


def _null_of(t: pa.DataType) -> pa.Scalar:
    return scalar(None, type=t)


class Evaluator:
    """The Arrow evaluator of `ExpressionEvaluator` (protocol.py): one instance per table or batch."""

    def __init__(self, table: pa.Table | pa.RecordBatch) -> None:
        self.table = table
        self.n = table.num_rows
        self.names = {name.lower(): i for i, name in reversed(list(enumerate(table.schema.names)))}

    # ------------------------------------------------------------------ dispatch
    def eval(self, e: SqlExpr) -> Value:
        if isinstance(e, Lit):
            return _literal(e)
        if isinstance(e, Col):
            return self.column(e.path)
        if isinstance(e, Unary):
            v = self.eval(e.operand)
            if e.op == "NOT":
                return pc.invert(self.boolean(v, e))
            if e.op == "~":
                if not pa.types.is_integer(v.type):
                    raise InvalidFilterError(f"~ needs an integral operand, got {v.type}")
                return pc.bit_wise_not(v)
            return pc.negate_checked(v) if _is_num(v.type) else pc.negate(self.cast(v, pa.float64()))
        if isinstance(e, Binary):
            return self.binary(e)
        if isinstance(e, IsNull):
            v = self.eval(e.operand)
            return pc.is_valid(v) if e.negated else pc.is_null(v)
        if isinstance(e, InList):
            v = self.eval(e.operand)
            out: Value = scalar(False)
            for item in e.values:
                out = pc.or_kleene(out, self.compare("=", v, self.eval(item)))
            return pc.invert(out) if e.negated else out
        if isinstance(e, Between):
            v = self.eval(e.operand)
            res = pc.and_kleene(self.compare(">=", v, self.eval(e.low)), self.compare("<=", v, self.eval(e.high)))
            return pc.invert(res) if e.negated else res
        if isinstance(e, Like):
            pat = self.eval(e.pattern)
            if not isinstance(pat, pa.Scalar):
                raise InvalidFilterError("LIKE needs a constant pattern")
            v = self.to_string(self.eval(e.operand))
            if not pat.is_valid:
                return scalar(None, pa.bool_())
            res = pc.match_like(self.arr(v), pattern=str(pat.as_py()))
            return pc.invert(res) if e.negated else res
        if isinstance(e, Case):
            return self.case(e)
        if isinstance(e, Cast):
            return cast_expr(self, self.eval(e.operand), to_arrow_type(parse_type(e.type_name)), safe=e.safe)
        if isinstance(e, Func):
            return self.func(e)
        raise InvalidFilterError(f"cannot evaluate {e!r}")

    # ------------------------------------------------------------------ values
    def arr(self, v: Value) -> pa.Array:
        if isinstance(v, pa.Scalar):
            return broadcast(v, self.n)
        return v

    def column(self, path: tuple[str, ...]) -> Value:
        idx = self.names.get(path[0].lower())
        if idx is None:
            raise InvalidFilterError(f"column {'.'.join(path)!r} is not in the data (columns: "
                                     f"{self.table.schema.names})")
        v: Any = self.table.column(idx)
        if isinstance(v, pa.ChunkedArray):
            v = v.combine_chunks() if v.num_chunks != 1 else v.chunk(0)
            if v.type == pa.null() and self.n == 0:
                v = pa.nulls(0)
        for part in path[1:]:
            t = v.type
            if not pa.types.is_struct(t):
                raise InvalidFilterError(f"{'.'.join(path)!r}: {part!r} is not a field of a non-struct value")
            names = [t.field(i).name for i in range(t.num_fields)]
            match = [i for i, nm in enumerate(names) if nm == part] or \
                [i for i, nm in enumerate(names) if nm.lower() == part.lower()]
            if not match:
                raise InvalidFilterError(f"no field {part!r} in {'.'.join(path)!r} (fields: {names})")
            v = pc.struct_field(v, [match[0]])  # a null parent gives a null child
        return v

    def boolean(self, v: Value, e: SqlExpr) -> Value:
        if pa.types.is_boolean(v.type):
            return v
        if v.type == pa.null():
            return self.cast(v, pa.bool_())
        raise InvalidFilterError(f"{e!r} is not a boolean expression (type {v.type})")

    def cast(self, v: Value, t: pa.DataType) -> Value:
        if v.type == t:
            return v
        return pc.cast(v, t)

    def to_string(self, v: Value) -> Value:
        if _is_str(v.type):
            return v
        if pa.types.is_timestamp(v.type):
            return timestamp_string(v)
        if pa.types.is_floating(v.type):
            return java_double_string(v)
        return self.sql_cast(v, pa.string())

    def sql_cast(self, v: Value, t: pa.DataType) -> Value:
        """CAST with Spark's non-ANSI behaviour: an unparsable string becomes NULL instead of failing."""
        if v.type == t:
            return v
        if _is_str(t) and pa.types.is_timestamp(v.type):
            return self.to_string(v)
        if _is_str(v.type) and (pa.types.is_date(t) or pa.types.is_timestamp(t)):
            v = pc.utf8_trim_whitespace(v)
        if pa.types.is_date(t) and pa.types.is_timestamp(v.type):
            return pc.cast(pc.floor_temporal(v, unit="day"), t)  # UTC day, never an error for sub-day values
        if pa.types.is_integer(t) and pa.types.is_floating(v.type):
            v = pc.trunc(v)  # Spark truncates towards zero
        if pa.types.is_decimal(t) and pa.types.is_integer(v.type):
            v = pc.cast(v, pa.decimal128(38, 0))  # Arrow checks precision by type; Spark checks values
        try:
            return pc.cast(v, t)
        except _ARROW_ERRORS:
            if not _is_str(v.type) and not pa.types.is_floating(v.type) and not pa.types.is_decimal(v.type):
                raise
        items = [v.as_py()] if isinstance(v, pa.Scalar) else v.to_pylist()
        out: list[Any] = []
        for item in items:
            try:
                out.append(pc.cast(scalar(item, v.type), t).as_py() if item is not None else None)
            except _ARROW_ERRORS:
                out.append(_parse_temporal(item, t) if isinstance(item, str) else None)
        return scalar(out[0], t) if isinstance(v, pa.Scalar) else pa.array(out, t)

    def unify(self, a: Value, b: Value) -> tuple[Value, Value]:
        """Spark's implicit coercion for comparisons and CASE/COALESCE branches."""
        ta, tb = a.type, b.type
        if ta == tb:
            return a, b
        if ta == pa.null():
            return self.cast(a, tb), b
        if tb == pa.null():
            return a, self.cast(b, ta)
        if _is_str(ta) and not _is_str(tb):
            return self.sql_cast(a, tb if not pa.types.is_integer(tb) else pa.int64()), b
        if _is_str(tb) and not _is_str(ta):
            return a, self.sql_cast(b, ta if not pa.types.is_integer(ta) else pa.int64())
        if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
            return self.cast(a, tb), b
        if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
            return a, self.cast(b, ta)
        if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
            return self.cast(a, pa.timestamp("us", tz=ta.tz)), self.cast(b, pa.timestamp("us", tz=ta.tz))
        if _is_num(ta) and _is_num(tb):
            if pa.types.is_floating(ta) or pa.types.is_floating(tb):
                return self.cast(a, pa.float64()), self.cast(b, pa.float64())
            if pa.types.is_integer(ta) and pa.types.is_integer(tb):
                return self.cast(a, pa.int64()), self.cast(b, pa.int64())
        return a, b

    # ------------------------------------------------------------------ operators
    def compare(self, op: str, a: Value, b: Value) -> Value:
        a, b = self.unify(a, b)
        if a.type == pa.null() and b.type == pa.null():  # NULL <=> NULL
            a, b = self.cast(a, pa.int32()), self.cast(b, pa.int32())
        if op == "<=>":
            eq = pc.equal(a, b)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            return pc.if_else(both_null, True, pc.fill_null(eq, False))
        try:
            return _CMP[op](a, b)
        except _ARROW_ERRORS as e:
            raise InvalidFilterError(f"cannot compare {a.type} with {b.type}: {e}") from e

    def binary(self, e: Binary) -> Value:
        if e.op in ("AND", "OR"):
            left = self.boolean(self.eval(e.left), e.left)
            right = self.boolean(self.eval(e.right), e.right)
            return pc.and_kleene(left, right) if e.op == "AND" else pc.or_kleene(left, right)
        a, b = self.eval(e.left), self.eval(e.right)
        if e.op in _CMP or e.op == "<=>":
            return self.compare(e.op, a, b)
        if e.op == "||":
            return self.concat([a, b])
        if e.op in ("&", "|", "^", "DIV"):
            return self.integral(e.op, a, b)
        return self.arith(e.op, a, b)

    def integral(self, op: str, a: Value, b: Value) -> Value:
        """Bitwise & | ^ on integers (the wider type) and Spark's `a DIV b` (BIGINT, truncated, NULL for 0)."""
        if a.type == pa.null():
            a = self.cast(a, b.type if b.type != pa.null() else pa.int32())
        if b.type == pa.null():
            b = self.cast(b, a.type)
        if op == "DIV":
            if not all(pa.types.is_integer(x.type) or pa.types.is_decimal(x.type) for x in (a, b)):
                raise InvalidFilterError(f"DIV needs integral or decimal operands, got {a.type} and {b.type}")
            a, b = self.cast(a, pa.int64()) if pa.types.is_integer(a.type) else a, \
                self.cast(b, pa.int64()) if pa.types.is_integer(b.type) else b
            safe_b = pc.if_else(pc.equal(b, scalar(0).cast(b.type)), _null_of(b.type), b)
            if pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type):
                return pc.cast(pc.trunc(pc.divide(self.cast(a, pa.decimal128(38, 10)) if not
                                                  pa.types.is_decimal(a.type) else a, safe_b)), pa.int64(), safe=False)
            return pc.divide(a, safe_b)  # integer division truncates towards zero, as Java's
        if not (pa.types.is_integer(a.type) and pa.types.is_integer(b.type)):
            raise InvalidFilterError(f"{op} needs integral operands, got {a.type} and {b.type}")
        a, b = self.unify_integers(a, b)
        fn = {"&": pc.bit_wise_and, "|": pc.bit_wise_or, "^": pc.bit_wise_xor}[op]
        return fn(a, b)

    def unify_integers(self, a: Value, b: Value) -> tuple[Value, Value]:
        wide = a.type if a.type.bit_width >= b.type.bit_width else b.type
        return self.cast(a, wide), self.cast(b, wide)

    def arith(self, op: str, a: Value, b: Value) -> Value:
        if _is_str(a.type):
            a = self.sql_cast(a, pa.float64())
        if _is_str(b.type):
            b = self.sql_cast(b, pa.float64())
        if a.type == pa.null():
            a = self.cast(a, b.type if b.type != pa.null() else pa.int32())
        if b.type == pa.null():
            b = self.cast(b, a.type)
        if op in ("+", "-") and _is_temporal(a.type) and pa.types.is_integer(b.type) and pa.types.is_date(a.type):
            days = pc.cast(pc.cast(a, pa.int32()), pa.int64())
            res = (pc.add_checked if op == "+" else pc.subtract_checked)(days, b)
            return pc.cast(pc.cast(res, pa.int32()), pa.date32())
        try:
            if op in ("/", "%"):
                return self.divide(op, a, b)
            fn = {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op]
            return fn(a, b)
        except _ARROW_ERRORS as err:
            raise InvalidFilterError(f"cannot apply {op!r} to {a.type} and {b.type}: {err}") from err

    def divide(self, op: str, a: Value, b: Value) -> Value:
        decimal = pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)
        if op == "/" and not decimal:
            a, b = self.cast(a, pa.float64()), self.cast(b, pa.float64())
        zero = pc.equal(b, scalar(0, b.type) if not pa.types.is_decimal(b.type) else scalar(0).cast(b.type))
        safe_b = pc.if_else(zero, _null_of(b.type), b)
        if op == "/":
            return pc.divide(a, safe_b)
        if pa.types.is_integer(a.type) and pa.types.is_integer(b.type):
            a, safe_b = self.unify(a, safe_b)
            return pc.subtract(a, pc.multiply(pc.divide(a, safe_b), safe_b))  # integer divide truncates
        fa, fb = self.cast(a, pa.float64()), self.cast(safe_b, pa.float64())
        return pc.subtract(fa, pc.multiply(pc.trunc(pc.divide(fa, fb)), fb))

    def concat(self, parts: list[Value]) -> Value:
        strs = [self.cast(self.to_string(p), pa.string()) for p in parts]
        if not strs:
            return scalar("")
        return pc.binary_join_element_wise(*strs, "", null_handling="emit_null")

    def case(self, e: Case) -> Value:
        conds: list[Value] = []
        values: list[Value] = []
        subject = self.eval(e.operand) if e.operand is not None else None
        for cond, value in e.branches:
            c = self.eval(cond)
            c = self.compare("=", subject, c) if subject is not None else self.boolean(c, cond)
            conds.append(pc.fill_null(self.arr(c), False))
            values.append(self.eval(value))
        default = self.eval(e.default) if e.default is not None else scalar(None)
        values.append(default)
        values = self.common(values)
        if self.n == 0:
            return pa.array([], type=values[0].type)
        return pc.case_when(pc.make_struct(*conds), *[self.arr(v) for v in values])

    def common(self, values: list[Value]) -> list[Value]:
        target = next((v.type for v in values if v.type != pa.null()), pa.null())
        for v in values:
            if v.type != pa.null() and v.type != target:
                _, probe = self.unify(v, scalar(None, target))
                target = probe.type if probe.type != target else target
                if pa.types.is_floating(v.type) or (_is_num(v.type) and _is_num(target) and
                                                    pa.types.is_floating(target)):
                    target = pa.float64()
                elif pa.types.is_integer(v.type) and pa.types.is_integer(target):
                    target = pa.int64()
                elif _is_str(v.type) or _is_str(target):
                    target = pa.string()
        return [self.sql_cast(v, target) if v.type != target else v for v in values]

    # ------------------------------------------------------------------ functions
    def func(self, e: Func) -> Value:
        from .functions import FUNCTIONS

        name = e.name
        nargs = len(e.args)
        handler = FUNCTIONS.get(name)
        if handler is None:
            raise InvalidFilterError(f"unsupported SQL function {name.lower()}() (supported: docs/decisions.md, "
                                     "\"Spark SQL functions in DML\")")
        lo, hi = handler[0], handler[1]
        if not lo <= nargs <= hi:
            raise InvalidFilterError(f"{name}() takes {lo}..{hi} arguments, got {nargs}")
        args = [self.eval(a) for a in e.args]
        try:
            result: Value = handler[2](self, args, e)
        except _ARROW_ERRORS as err:
            raise InvalidFilterError(f"{name.lower()}(): {err}") from err
        return result


def _parse_temporal(text: str, t: pa.DataType) -> Any:
    """Spark's lenient string -> date/timestamp cast ('2024-01-01', '2024-01-01 10:00:00[.f][zone]'); else None."""
    if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        return None
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        value = parse_datetime(raw)
    except ValueError:
        return None
    if pa.types.is_date(t):
        return value.date()
    if t.tz is not None:
        return value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value
    return value.replace(tzinfo=None) if value.tzinfo is None else value.astimezone(dt.timezone.utc).replace(
        tzinfo=None)


def _literal(e: Lit) -> pa.Scalar:
    """The literal as an Arrow scalar; the common types are built from buffers (`pa.scalar` imports pandas)."""
    if e.value is None:
        return null_scalar(pa.null())
    typ = _LIT_TYPES.get(e.type or "")
    if isinstance(e.value, bool):
        return bool_to_arrow([e.value])[0]
    if isinstance(e.value, str) and typ is None:
        return str_scalar(e.value)
    if typ is None and isinstance(e.value, (int, float)):  # what pa.scalar would infer
        typ = pa.int64() if isinstance(e.value, int) else pa.float64()
    if typ in (pa.int32(), pa.int64(), pa.float64()) and isinstance(e.value, (int, float)):
        return np_to_arrow([e.value], typ)[0]
    if typ is not None:
        return scalar(e.value, typ)
    return scalar(e.value)
