"""Spark SQL scalar functions for the Arrow evaluator (`evaluator.py`): strings, math, NULL handling and
casts by name; arrays and maps are in `collections.py`, date/time functions in `temporal.py`.
`FUNCTIONS` maps an upper-case name to (min args, max args, handler(evaluator, evaluated args, Func node)).

Spark semantics with ANSI mode off, checked against pyspark 4 (tests/unit/test_dml_functions.py pins the
values): NULL in, NULL out unless Spark says otherwise (`concat_ws` skips NULLs, `greatest` / `least` skip
NULLs, `size(NULL)` is -1, `isnan(NULL)` is false), out-of-range array indexes are NULL, `ln(0)` is NULL.
Patterns (LIKE, RLIKE, regexp_replace, ...) and positions must be constants; regular expressions are run by
RE2 (Arrow), which accepts the Java syntax DML predicates use except look-around and back-references.
Everything is vectorized: no Python loop per row.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError
from ...kernel.arrow_build import broadcast, scalar, str_scalar
from ...kernel.expressions.sql.ast import Func
from ..casts import cast_expr
from ..protocol import ExpressionEvaluator, Handler, Value
from . import temporal as sql_temporal

_NULL_STR = pa.nulls(1, pa.string())[0]


def _is_str(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _const_int(v: Value, what: str) -> int | None:
    if not isinstance(v, pa.Scalar) or not (pa.types.is_integer(v.type) or v.type == pa.null()):
        raise InvalidFilterError(f"{what} must be a constant integer")
    return None if not v.is_valid else int(v.as_py())


_const_str = sql_temporal.const_str


def _keep_nulls(v: Value, out: Value) -> Value:
    """`out` where `v` is not NULL, NULL where it is."""
    return pc.if_else(pc.is_valid(v), out, scalar(None, out.type))


# ----------------------------------------------------------------------------- strings
def _substring(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    s = ev.to_string(a[0])
    pos = _const_int(a[1], "SUBSTRING position")
    length = _const_int(a[2], "SUBSTRING length") if len(a) == 3 else None
    if pos is None or (len(a) == 3 and length is None):
        return scalar(None, pa.string())
    start = pos - 1 if pos > 0 else pos  # 1-based; 0 behaves as 1; negative counts from the end
    if length is not None and length <= 0:
        return pc.if_else(pc.is_valid(s), str_scalar(""), _NULL_STR)
    stop = None if length is None or (start < 0 <= start + length) else start + length
    return pc.utf8_slice_codeunits(s, start=start, stop=stop)


def _trim(fn: Any) -> Handler:
    """TRIM / LTRIM / RTRIM / BTRIM (s [, characters]): Spark trims spaces only by default."""
    def trim(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        chars = " " if len(a) == 1 else _const_str(a[1], f"{e.name} characters")
        s = ev.to_string(a[0])
        if chars is None:
            return scalar(None, pa.string())
        return fn(s, characters=chars) if chars else s
    return trim


def _concat_ws(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    sep = a[0]
    if not _is_str(sep.type) and sep.type != pa.null():
        raise InvalidFilterError("CONCAT_WS separator must be a string")
    parts = []
    for v in a[1:]:
        if pa.types.is_list(v.type) or pa.types.is_large_list(v.type):
            raise InvalidFilterError("CONCAT_WS over arrays is not supported; pass strings")
        parts.append(ev.cast(ev.to_string(v), pa.string()))
    if not parts:
        return pc.if_else(pc.is_valid(sep), str_scalar(""), _NULL_STR)
    return pc.binary_join_element_wise(*parts, ev.cast(sep, pa.string()), null_handling="skip")


def java_replacement(rep: str) -> str:
    """A Java regex replacement (`$1` groups, `\\x` literal x) as an RE2 rewrite string (`\\1`, `\\\\`)."""
    out, i = [], 0
    while i < len(rep):
        c = rep[i]
        if c == "\\" and i + 1 < len(rep):
            out.append("\\\\" if rep[i + 1] == "\\" else rep[i + 1])
            i += 2
        elif c == "$" and i + 1 < len(rep) and rep[i + 1].isdigit():
            out.append("\\" + rep[i + 1])
            i += 2
        elif c == "$":
            raise InvalidFilterError(f"illegal group reference in replacement {rep!r}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _regexp_replace(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    pattern = _const_str(a[1], "REGEXP_REPLACE pattern")
    rep = _const_str(a[2], "REGEXP_REPLACE replacement")
    s = ev.to_string(a[0])
    if pattern is None or rep is None:
        return scalar(None, pa.string())
    return pc.replace_substring_regex(s, pattern=pattern, replacement=java_replacement(rep))


def _rlike(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    pattern = _const_str(a[1], f"{e.name} pattern")
    s = ev.to_string(a[0])
    if pattern is None:
        return scalar(None, pa.bool_())
    return pc.match_substring_regex(s, pattern=pattern)  # Java's find(): anywhere in the string


def _regexp_extract(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    """regexp_extract(s, pattern [, group = 1]): '' when the pattern does not match (Spark)."""
    pattern = _const_str(a[1], "REGEXP_EXTRACT pattern")
    group = _const_int(a[2], "REGEXP_EXTRACT group") if len(a) == 3 else 1
    s = ev.to_string(a[0])
    if pattern is None or group is None:
        return scalar(None, pa.string())
    named = _name_group(pattern, group)
    found = pc.struct_field(pc.extract_regex(s, pattern=named), "g")
    return _keep_nulls(s, pc.fill_null(found, str_scalar("")))


def _name_group(pattern: str, group: int) -> str:
    """`pattern` with its `group`-th capturing group named `g` (group 0: the whole match) and every other
    capturing group made non-capturing (Arrow's extract_regex wants named groups only)."""
    out, count, i, in_class = [], 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(" and not pattern.startswith("(?", i):
            count += 1
            out.append("(?P<g>" if count == group else "(?:")
            i += 1
            continue
        out.append(c)
        i += 1
    if group == 0:
        return "(?P<g>" + "".join(out) + ")"
    if group > count:
        raise InvalidFilterError(f"REGEXP_EXTRACT: pattern {pattern!r} has {count} group(s), group {group} asked")
    return "".join(out)


def _replace(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    search = _const_str(a[1], "REPLACE search")
    rep = _const_str(a[2], "REPLACE replacement") if len(a) == 3 else ""
    s = ev.to_string(a[0])
    if search is None or rep is None:
        return scalar(None, pa.string())
    return pc.replace_substring(s, pattern=search, replacement=rep) if search else s


def _pad(fn: Any) -> Handler:
    """LPAD / RPAD (s, len [, pad = ' ']): a longer string is cut to `len` (Spark)."""
    def pad(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        width = _const_int(a[1], f"{e.name} length")
        fill = _const_str(a[2], f"{e.name} padding") if len(a) == 3 else " "
        s = ev.to_string(a[0])
        if width is None or fill is None:
            return scalar(None, pa.string())
        if width <= 0:
            return pc.if_else(pc.is_valid(s), str_scalar(""), _NULL_STR)
        if len(fill) > 1:
            raise InvalidFilterError(f"{e.name} with a padding of more than one character is not supported")
        cut = pc.utf8_slice_codeunits(s, 0, width)
        return fn(cut, width=width, padding=fill) if fill else cut
    return pad


def _left_right(left: bool) -> Handler:
    def side(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        n = _const_int(a[1], f"{e.name} length")
        s = ev.to_string(a[0])
        if n is None:
            return scalar(None, pa.string())
        if n <= 0:
            return pc.if_else(pc.is_valid(s), str_scalar(""), _NULL_STR)
        return pc.utf8_slice_codeunits(s, 0, n) if left else pc.utf8_slice_codeunits(s, -n)
    return side


def _position(s: Value, sub: str) -> Value:
    """1-based character position of the first `sub` in `s`, 0 when absent (code points, not bytes)."""
    import re

    prefix = pc.struct_field(pc.extract_regex(s, pattern="(?s)^(?P<p>.*?)" + re.escape(sub)), "p")
    pos = pc.add(pc.cast(pc.utf8_length(prefix), pa.int32()), scalar(1, pa.int32()))
    return _keep_nulls(s, pc.fill_null(pos, scalar(0, pa.int32())))


def _instr(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    sub = _const_str(a[1], "INSTR substring")
    s = ev.to_string(a[0])
    return scalar(None, pa.int32()) if sub is None else _position(s, sub)


def _locate(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    """locate(substr, s [, pos]) / position(substr IN s): 1-based, 0 when absent or pos < 1."""
    sub = _const_str(a[0], f"{e.name} substring")
    start = _const_int(a[2], f"{e.name} position") if len(a) == 3 else 1
    s = ev.to_string(a[1])
    if sub is None or start is None:
        return scalar(None, pa.int32())
    if start < 1:
        return _keep_nulls(s, broadcast(scalar(0, pa.int32()), ev.n) if not isinstance(s, pa.Scalar)
                           else scalar(0, pa.int32()))
    found = _position(pc.utf8_slice_codeunits(s, start - 1), sub)
    return pc.if_else(pc.equal(found, scalar(0, pa.int32())), found, pc.add(found, scalar(start - 1, pa.int32())))


def _str_test(fn: Any) -> Handler:
    def test(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        pattern = _const_str(a[1], f"{e.name} argument")
        s = ev.to_string(a[0])
        return scalar(None, pa.bool_()) if pattern is None else fn(s, pattern=pattern)
    return test


def _split_part(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    delim = _const_str(a[1], "SPLIT_PART delimiter")
    part = _const_int(a[2], "SPLIT_PART part")
    s = ev.to_string(a[0])
    if delim is None or part is None:
        return scalar(None, pa.string())
    if part == 0:
        raise InvalidFilterError("SPLIT_PART: the part number must not be 0")
    if not delim:
        return pc.if_else(pc.is_valid(s), s if part in (1, -1) else str_scalar(""), _NULL_STR)
    if part < 0:  # from the end: the same on the reversed string
        back = _split_part(ev, [pc.utf8_reverse(s), str_scalar(delim[::-1]), scalar(-part)], e)
        return pc.utf8_reverse(back)
    pieces = pc.list_slice(pc.split_pattern(s, pattern=delim), part - 1, part)
    return pc.binary_join(pieces, str_scalar(""))  # zero or one piece: '' when out of range, as Spark


def _repeat(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    n = a[1]
    if not pa.types.is_integer(n.type) and n.type != pa.null():
        raise InvalidFilterError("REPEAT count must be an integer")
    return pc.binary_repeat(ev.to_string(a[0]), pc.max_element_wise(pc.cast(n, pa.int64()), scalar(0)))


# ----------------------------------------------------------------------------- math
def _num(ev: ExpressionEvaluator, v: Value) -> Value:
    """A numeric argument; strings are cast to DOUBLE, NULL to INT (Spark's implicit casts)."""
    if _is_str(v.type):
        return ev.sql_cast(v, pa.float64())
    if v.type == pa.null():
        return ev.cast(v, pa.int32())
    if pa.types.is_boolean(v.type) or not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)
                                          or pa.types.is_decimal(v.type)):
        raise InvalidFilterError(f"expected a number, got {v.type}")
    return v


def _double(ev: ExpressionEvaluator, v: Value) -> Value:
    return ev.cast(_num(ev, v), pa.float64())


def _round(mode: str) -> Handler:
    def round_(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        digits = _const_int(a[1], f"{e.name} scale") if len(a) == 2 else 0
        v = _num(ev, a[0])
        if digits is None:
            return scalar(None, v.type)
        if pa.types.is_floating(v.type):
            return _round_double(v, digits, mode)
        return pc.round(v, ndigits=digits, round_mode=mode)
    return round_


def _round_double(v: Value, digits: int, mode: str) -> Value:
    """Spark rounds a double through its shortest decimal text (`round(2.675, 2)` is 2.68, `round(1.005, 2)`
    1.01, `round(1.5 * 1.1, 2)` 1.65), where Arrow rounds the binary value: the text is parsed as a decimal,
    rounded exactly, and turned back into a double (values outside DECIMAL(38, 18) use Arrow's rounding)."""
    arr = broadcast(v, 1) if isinstance(v, pa.Scalar) else v
    text = pc.cast(arr, pa.string())
    plain = pc.fill_null(pc.match_substring_regex(text, r"^-?\d{1,20}(\.\d{1,18})?$"), False)
    exact = pc.cast(pc.if_else(plain, text, scalar(None, pa.string())), pa.decimal128(38, 18))
    rounded = pc.cast(pc.cast(pc.round(exact, ndigits=digits, round_mode=mode), pa.string()), v.type)  # exact
    out = pc.if_else(plain, rounded, pc.round(arr, ndigits=digits, round_mode=mode))
    return out[0] if isinstance(v, pa.Scalar) else out


def _floor_ceil(fn: Any) -> Handler:
    """FLOOR / CEIL: BIGINT for floating point (NaN is 0, as Spark's cast), DECIMAL(p - s + 1, 0) for decimals."""
    def floor_ceil(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        v = _num(ev, a[0])
        if pa.types.is_integer(v.type):
            return ev.cast(v, pa.int64())
        if pa.types.is_decimal(v.type):
            return pc.cast(fn(v), pa.decimal128(min(38, v.type.precision - v.type.scale + 1), 0))
        return cast_expr(ev, fn(v), pa.int64())
    return floor_ceil


def _unary_double(fn: Any, domain: Any = None) -> Handler:
    """A double function; outside `domain` (a predicate on the argument) the result is NULL (Spark's ln,
    log10, log2 of values <= 0)."""
    def unary(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        x = _double(ev, a[0])
        out = fn(x)
        return out if domain is None else pc.if_else(domain(x), out, scalar(None, pa.float64()))
    return unary


def _positive(x: Value) -> Value:
    return pc.greater(x, scalar(0.0))


def _log(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    base, x = _double(ev, a[0]), _double(ev, a[1])
    out = pc.divide(pc.ln(x), pc.ln(base))
    return pc.if_else(pc.and_(_positive(base), _positive(x)), out, scalar(None, pa.float64()))


def _mod(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return ev.arith("%", _num(ev, a[0]), _num(ev, a[1]))


def _pmod(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    x, n = _num(ev, a[0]), _num(ev, a[1])
    r = ev.arith("%", x, n)
    neg = pc.less(r, scalar(0).cast(r.type))
    return pc.if_else(neg, ev.arith("%", ev.arith("+", r, n), n), r)


def _extreme(greatest: bool) -> Handler:
    """GREATEST / LEAST: NULLs are skipped (NULL only when every argument is NULL); NaN is larger than any
    number (Spark's ordering)."""
    def extreme(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        vals = ev.common(a)
        typ = vals[0].type
        if typ == pa.null():
            return vals[0]
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):  # no temporal kernel: compare the integers
            ints = [pc.cast(v, pa.int64() if pa.types.is_timestamp(typ) else pa.int32()) for v in vals]
            found = (pc.max_element_wise if greatest else pc.min_element_wise)(*ints, skip_nulls=True)
            return pc.cast(found, typ)
        out = (pc.max_element_wise if greatest else pc.min_element_wise)(*vals, skip_nulls=True)
        if greatest and pa.types.is_floating(out.type):  # Arrow skips NaN next to numbers: least is right
            nan = pc.fill_null(pc.is_nan(vals[0]), False)
            for v in vals[1:]:
                nan = pc.or_(nan, pc.fill_null(pc.is_nan(v), False))
            out = pc.if_else(nan, scalar(float("nan"), out.type), out)
        return out
    return extreme


def _sign(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return pc.cast(pc.sign(_double(ev, a[0])), pa.float64())


# ----------------------------------------------------------------------------- NULL handling
def _coalesce(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return pc.coalesce(*ev.common(a))


def _if(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    cond = pc.fill_null(ev.boolean(a[0], e.args[0]), False)
    x, y = ev.common([a[1], a[2]])
    return pc.if_else(cond, x, y)


def _nvl2(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    x, y = ev.common([a[1], a[2]])
    return pc.if_else(pc.is_valid(a[0]), x, y)


def _nullif(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    x, y = a
    eq = pc.fill_null(ev.compare("=", x, y), False)
    return pc.if_else(eq, scalar(None, x.type), x)


def _isnan(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if not pa.types.is_floating(v.type):
        v = _double(ev, v)
    return pc.fill_null(pc.is_nan(v), False)  # isnan(NULL) is false


def _nanvl(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    x, y = ev.common([_double(ev, a[0]), _double(ev, a[1])])
    return pc.if_else(pc.fill_null(pc.is_nan(x), False), y, x)


def _zero(ev: ExpressionEvaluator, v: Value) -> pa.Scalar:
    return scalar(0).cast(v.type) if v.type != pa.null() else scalar(0, pa.int32())


# ----------------------------------------------------------------------------- casts by name
def _cast_to(type_name: str) -> Handler:
    def cast(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        from ...kernel.schema.arrow import to_arrow_type
        from ...kernel.schema.types import parse_type

        return cast_expr(ev, a[0], to_arrow_type(parse_type(type_name)))
    return cast


_STRING_FUNCS: dict[str, tuple[int, int, Handler]] = {
    "CONCAT": (1, 255, lambda ev, a, e: ev.concat(a)),
    "CONCAT_WS": (1, 255, _concat_ws),
    "UPPER": (1, 1, lambda ev, a, e: pc.utf8_upper(ev.to_string(a[0]))),
    "UCASE": (1, 1, lambda ev, a, e: pc.utf8_upper(ev.to_string(a[0]))),
    "LOWER": (1, 1, lambda ev, a, e: pc.utf8_lower(ev.to_string(a[0]))),
    "LCASE": (1, 1, lambda ev, a, e: pc.utf8_lower(ev.to_string(a[0]))),
    "SUBSTRING": (2, 3, _substring),
    "SUBSTR": (2, 3, _substring),
    "LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "LEN": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "CHAR_LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "CHARACTER_LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.utf8_length(ev.to_string(a[0])), pa.int32())),
    "OCTET_LENGTH": (1, 1, lambda ev, a, e: pc.cast(pc.binary_length(ev.to_string(a[0])), pa.int32())),
    "BIT_LENGTH": (1, 1, lambda ev, a, e: pc.multiply(pc.cast(pc.binary_length(ev.to_string(a[0])), pa.int32()),
                                                      scalar(8, pa.int32()))),
    "TRIM": (1, 2, _trim(pc.utf8_trim)),
    "BTRIM": (1, 2, _trim(pc.utf8_trim)),
    "LTRIM": (1, 2, _trim(pc.utf8_ltrim)),
    "RTRIM": (1, 2, _trim(pc.utf8_rtrim)),
    "REGEXP_REPLACE": (3, 3, _regexp_replace),
    "RLIKE": (2, 2, _rlike),
    "REGEXP": (2, 2, _rlike),
    "REGEXP_LIKE": (2, 2, _rlike),
    "REGEXP_EXTRACT": (2, 3, _regexp_extract),
    "REPLACE": (2, 3, _replace),
    "LPAD": (2, 3, _pad(pc.utf8_lpad)),
    "RPAD": (2, 3, _pad(pc.utf8_rpad)),
    "LEFT": (2, 2, _left_right(True)),
    "RIGHT": (2, 2, _left_right(False)),
    "INSTR": (2, 2, _instr),
    "LOCATE": (2, 3, _locate),
    "POSITION": (2, 3, _locate),
    "REVERSE": (1, 1, lambda ev, a, e: pc.utf8_reverse(ev.to_string(a[0]))),
    "REPEAT": (2, 2, _repeat),
    "STARTSWITH": (2, 2, _str_test(pc.starts_with)),
    "ENDSWITH": (2, 2, _str_test(pc.ends_with)),
    "CONTAINS": (2, 2, _str_test(pc.match_substring)),
    "SPLIT_PART": (3, 3, _split_part),
}
_MATH_FUNCS: dict[str, tuple[int, int, Handler]] = {
    "ABS": (1, 1, lambda ev, a, e: pc.abs_checked(_num(ev, a[0]))),
    "ROUND": (1, 2, _round("half_towards_infinity")),  # Spark: HALF_UP
    "BROUND": (1, 2, _round("half_to_even")),
    "FLOOR": (1, 1, _floor_ceil(pc.floor)),
    "CEIL": (1, 1, _floor_ceil(pc.ceil)),
    "CEILING": (1, 1, _floor_ceil(pc.ceil)),
    "POW": (2, 2, lambda ev, a, e: pc.power(_double(ev, a[0]), _double(ev, a[1]))),
    "POWER": (2, 2, lambda ev, a, e: pc.power(_double(ev, a[0]), _double(ev, a[1]))),
    "MOD": (2, 2, _mod),
    "PMOD": (2, 2, _pmod),
    "GREATEST": (2, 255, _extreme(True)),
    "LEAST": (2, 255, _extreme(False)),
    "SQRT": (1, 1, _unary_double(pc.sqrt)),
    "CBRT": (1, 1, _unary_double(lambda x: pc.multiply(pc.sign(x), pc.power(pc.abs(x), scalar(1.0 / 3.0))))),
    "EXP": (1, 1, _unary_double(pc.exp)),
    "LN": (1, 1, _unary_double(pc.ln, _positive)),
    "LOG10": (1, 1, _unary_double(pc.log10, _positive)),
    "LOG2": (1, 1, _unary_double(pc.log2, _positive)),
    "LOG": (1, 2, lambda ev, a, e: _log(ev, a, e) if len(a) == 2 else _unary_double(pc.ln, _positive)(ev, a, e)),
    "SIGN": (1, 1, _sign),
    "SIGNUM": (1, 1, _sign),
    "NEGATIVE": (1, 1, lambda ev, a, e: pc.negate_checked(_num(ev, a[0]))),
    "POSITIVE": (1, 1, lambda ev, a, e: _num(ev, a[0])),
    "E": (0, 0, lambda ev, a, e: scalar(math.e)),
    "PI": (0, 0, lambda ev, a, e: scalar(math.pi)),
    "TRY_DIVIDE": (2, 2, lambda ev, a, e: ev.arith("/", a[0], a[1])),  # `/` is NULL for 0 already
}
_NULL_FUNCS: dict[str, tuple[int, int, Handler]] = {
    "COALESCE": (1, 255, _coalesce),
    "NVL": (2, 2, _coalesce),
    "IFNULL": (2, 2, _coalesce),
    "NVL2": (3, 3, _nvl2),
    "IF": (3, 3, _if),
    "NULLIF": (2, 2, _nullif),
    "ISNULL": (1, 1, lambda ev, a, e: pc.is_null(a[0])),
    "ISNOTNULL": (1, 1, lambda ev, a, e: pc.is_valid(a[0])),
    "ISNAN": (1, 1, _isnan),
    "NANVL": (2, 2, _nanvl),
    "EQUAL_NULL": (2, 2, lambda ev, a, e: ev.compare("<=>", a[0], a[1])),
    "ZEROIFNULL": (1, 1, lambda ev, a, e: _coalesce(ev, [a[0], _zero(ev, a[0])], e)),
    "NULLIFZERO": (1, 1, lambda ev, a, e: _nullif(ev, [a[0], _zero(ev, a[0])], e)),
}
_CAST_FUNCS: dict[str, tuple[int, int, Handler]] = {
    name.upper(): (1, 1, _cast_to(type_name)) for name, type_name in (
        ("string", "string"), ("int", "integer"), ("bigint", "long"), ("smallint", "short"),
        ("tinyint", "byte"), ("double", "double"), ("float", "float"), ("boolean", "boolean"),
        ("timestamp", "timestamp"), ("binary", "binary"), ("decimal", "decimal(10,0)"))
}

FUNCTIONS: dict[str, tuple[int, int, Handler]] = {**_STRING_FUNCS, **_MATH_FUNCS, **_NULL_FUNCS, **_CAST_FUNCS}

__all__ = ["FUNCTIONS", "java_replacement"]
