"""Vectorized evaluation of the SQL AST (`sql.py`) over an Arrow batch with `pyarrow.compute`.

Semantics follow Spark SQL with ANSI mode off, which is what Delta's constraints and generated
columns were written against: NULL propagates through operators and functions, AND/OR are Kleene,
`/` is fractional division, division or modulo by zero is NULL, `%` keeps the dividend's sign, an
invalid CAST from string is NULL, comparisons coerce a string to the other side's type. Time zone
dependent functions use UTC (the session time zone Delta tables are written with by deltalake).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError
from ..arrow_build import bool_to_arrow, broadcast, np_to_arrow, null_scalar, scalar, str_scalar
from ..schema.arrow import to_arrow_type
from ..schema.types import parse_type
from .sql import Between, Binary, Case, Cast, Col, Func, InList, IsNull, Like, Lit, SqlExpr, Unary

Value = Union[pa.Array, pa.Scalar]
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
_LIT_TYPES = {
    "integer": pa.int32(), "long": pa.int64(), "double": pa.float64(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
}
_CMP = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
        ">=": pc.greater_equal}


def evaluate_expr(expr: SqlExpr, table: pa.Table | pa.RecordBatch) -> pa.Array:
    ev = _Evaluator(table)
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


class _Evaluator:
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
            return self.sql_cast(self.eval(e.operand), to_arrow_type(parse_type(e.type_name)))
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
            return pc.strftime(pc.cast(v, pa.timestamp("s", tz=v.type.tz)), format="%Y-%m-%d %H:%M:%S")
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
        return self.arith(e.op, a, b)

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
        name = e.name
        nargs = len(e.args)
        handler = _FUNCS.get(name)
        if handler is None:
            raise InvalidFilterError(f"unsupported SQL function {name}()")
        lo, hi = handler[0], handler[1]
        if not lo <= nargs <= hi:
            raise InvalidFilterError(f"{name}() takes {lo}..{hi} arguments, got {nargs}")
        args = [self.eval(a) for a in e.args]
        result: Value = handler[2](self, args, e)
        return result


def _parse_temporal(text: str, t: pa.DataType) -> Any:
    """Spark's lenient string -> date/timestamp cast ('2024-01-01', '2024-01-01 10:00:00[.f][zone]'); else None."""
    if not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
        return None
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        value = dt.datetime.fromisoformat(raw)
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


# ----------------------------------------------------------------------------- function table
_JAVA_FORMAT = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                ("ss", "%S"), ("EEEE", "%A"), ("EEE", "%a"), ("MMMM", "%B"), ("MMM", "%b")]


def _java_to_strftime(fmt: str) -> str:
    """Spark datetime patterns -> strftime, for the common subset used by generated columns."""
    out = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "'":
            j = fmt.find("'", i + 1)
            j = len(fmt) if j < 0 else j
            out.append(fmt[i + 1:j].replace("%", "%%") or "'")
            i = j + 1
            continue
        for pat, rep in sorted(_JAVA_FORMAT, key=lambda p: -len(p[0])):
            if fmt.startswith(pat, i):
                out.append(rep)
                i += len(pat)
                break
        else:
            if fmt[i].isalpha():
                raise InvalidFilterError(f"unsupported datetime pattern letter {fmt[i]!r} in {fmt!r}")
            out.append("%%" if fmt[i] == "%" else fmt[i])
            i += 1
    return "".join(out)


def _const_str(ev: _Evaluator, v: Value, what: str) -> str | None:
    if not isinstance(v, pa.Scalar):
        raise InvalidFilterError(f"{what} must be a constant")
    return None if not v.is_valid else str(v.as_py())


def _const_int(v: Value, what: str) -> int | None:
    if not isinstance(v, pa.Scalar) or not (pa.types.is_integer(v.type) or v.type == pa.null()):
        raise InvalidFilterError(f"{what} must be a constant integer")
    return None if not v.is_valid else int(v.as_py())


def _temporal(ev: _Evaluator, v: Value) -> Value:
    if _is_str(v.type):
        return ev.sql_cast(v, pa.timestamp("us", tz="UTC"))
    if v.type == pa.null():
        return ev.cast(v, pa.timestamp("us", tz="UTC"))
    return v


def _part(fn: Any) -> Any:
    return lambda ev, a, e: pc.cast(fn(_temporal(ev, a[0])), pa.int32())


def _to_date(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if len(a) == 2 and _is_str(v.type):
        fmt = _const_str(ev, a[1], "TO_DATE format")
        if fmt is None:
            return scalar(None, pa.date32())
        parsed = pc.strptime(v, format=_java_to_strftime(fmt), unit="us", error_is_null=True)
        return pc.cast(parsed, pa.date32())
    return ev.sql_cast(v, pa.date32()) if v.type != pa.null() else ev.cast(v, pa.date32())


def _to_timestamp(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if len(a) == 2 and _is_str(v.type):
        fmt = _const_str(ev, a[1], "TO_TIMESTAMP format")
        if fmt is None:
            return scalar(None, pa.timestamp("us", tz="UTC"))
        parsed = pc.strptime(v, format=_java_to_strftime(fmt), unit="us", error_is_null=True)
        return pc.assume_timezone(parsed, "UTC") if parsed.type.tz is None else parsed
    return ev.sql_cast(v, pa.timestamp("us", tz="UTC"))


def _date_format(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    fmt = _const_str(ev, a[1], "DATE_FORMAT format")
    v = _temporal(ev, a[0])
    if fmt is None:
        return scalar(None, pa.string())
    if pa.types.is_timestamp(v.type):
        v = pc.cast(v, pa.timestamp("s", tz=v.type.tz))  # %S must not print fractions
    return pc.strftime(v, format=_java_to_strftime(fmt))


def _substring(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    s = ev.to_string(a[0])
    pos = _const_int(a[1], "SUBSTRING position")
    length = _const_int(a[2], "SUBSTRING length") if len(a) == 3 else None
    if pos is None or (len(a) == 3 and length is None):
        return scalar(None, pa.string())
    start = pos - 1 if pos > 0 else pos  # 1-based; 0 behaves as 1; negative counts from the end
    if length is not None and length <= 0:
        return pc.if_else(pc.is_valid(s), "", scalar(None, pa.string()))
    stop = None if length is None or (start < 0 <= start + length) else start + length
    return pc.utf8_slice_codeunits(s, start=start, stop=stop)


def _coalesce(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    vals = ev.common(a)
    return pc.coalesce(*vals)


def _round(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    digits = _const_int(a[1], "ROUND scale") if len(a) == 2 else 0
    if digits is None:
        return scalar(None, a[0].type)
    return pc.round(a[0], ndigits=digits, round_mode="half_towards_infinity")  # Spark: HALF_UP


def _if(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    cond = pc.fill_null(ev.boolean(a[0], e.args[0]), False)
    x, y = ev.common([a[1], a[2]])
    return pc.if_else(cond, x, y)


def _nullif(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    x, y = a
    eq = pc.fill_null(ev.compare("=", x, y), False)
    return pc.if_else(eq, _null_of(x.type), x)


def _now(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    return scalar(dt.datetime.now(dt.timezone.utc), pa.timestamp("us", tz="UTC"))


def _today(ev: _Evaluator, a: list[Value], e: Func) -> Value:
    return scalar(dt.datetime.now(dt.timezone.utc).date(), pa.date32())


def _trim(fn: Any) -> Any:
    return lambda ev, a, e: fn(ev.to_string(a[0]), characters=" ")


_FUNCS: dict[str, tuple[int, int, Any]] = {
    "YEAR": (1, 1, _part(pc.year)),
    "MONTH": (1, 1, _part(pc.month)),
    "DAY": (1, 1, _part(pc.day)),
    "DAYOFMONTH": (1, 1, _part(pc.day)),
    "HOUR": (1, 1, _part(pc.hour)),
    "MINUTE": (1, 1, _part(pc.minute)),
    "SECOND": (1, 1, _part(pc.second)),
    "QUARTER": (1, 1, _part(pc.quarter)),
    "TO_DATE": (1, 2, _to_date),
    "DATE": (1, 1, _to_date),
    "TO_TIMESTAMP": (1, 2, _to_timestamp),
    "DATE_FORMAT": (2, 2, _date_format),
    "CONCAT": (1, 255, lambda ev, a, e: ev.concat(a)),
    "UPPER": (1, 1, lambda ev, a, e: pc.utf8_upper(ev.to_string(a[0]))),
    "UCASE": (1, 1, lambda ev, a, e: pc.utf8_upper(ev.to_string(a[0]))),
    "LOWER": (1, 1, lambda ev, a, e: pc.utf8_lower(ev.to_string(a[0]))),
    "LCASE": (1, 1, lambda ev, a, e: pc.utf8_lower(ev.to_string(a[0]))),
    "SUBSTRING": (2, 3, _substring),
    "SUBSTR": (2, 3, _substring),
    "LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "CHAR_LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "ABS": (1, 1, lambda ev, a, e: pc.abs_checked(a[0])),
    "COALESCE": (1, 255, _coalesce),
    "TRIM": (1, 1, _trim(pc.utf8_trim)),
    "LTRIM": (1, 1, _trim(pc.utf8_ltrim)),
    "RTRIM": (1, 1, _trim(pc.utf8_rtrim)),
    "FLOOR": (1, 1, lambda ev, a, e: pc.cast(pc.floor(a[0]), pa.int64()) if not pa.types.is_integer(a[0].type)
              else a[0]),
    "CEIL": (1, 1, lambda ev, a, e: pc.cast(pc.ceil(a[0]), pa.int64()) if not pa.types.is_integer(a[0].type)
             else a[0]),
    "ROUND": (1, 2, _round),
    "IF": (3, 3, _if),
    "NULLIF": (2, 2, _nullif),
    "ISNULL": (1, 1, lambda ev, a, e: pc.is_null(a[0])),
    "ISNOTNULL": (1, 1, lambda ev, a, e: pc.is_valid(a[0])),
    "CURRENT_TIMESTAMP": (0, 0, _now),
    "NOW": (0, 0, _now),
    "CURRENT_DATE": (0, 0, _today),
}
SUPPORTED_FUNCTIONS = frozenset(_FUNCS)

