"""Spark's explicit `CAST(x AS type)` (ANSI off), where it differs from storing a value in a column.

`ExpressionEvaluator.sql_cast` is the cast used to store a value (UPDATE SET, MERGE, generated columns): it must
refuse what does not fit (Spark's ANSI store assignment), so an out-of-range integer raises there. An
explicit CAST in an expression follows Spark's non-ANSI CAST instead, checked with pyspark 4 (non-ANSI, UTC):

- integers narrow by wrapping (`CAST(2147483647 AS TINYINT)` is -1); floating point to integer truncates,
  NaN is 0 and out-of-range values saturate (Java's conversion); decimals truncate;
- strings to integers are trimmed and may have a fraction, which is dropped (`' 1.5 '` is 1); overflow or
  anything else is NULL;
- strings to booleans: t/true/y/yes/1 and f/false/n/no/0 (trimmed, any case), else NULL;
- a timestamp to a number is seconds since the epoch (floored for integers), a number to a timestamp the
  reverse; a date to a number is NULL;
- doubles to strings are written as Java's `Double.toString` (`2.0`, `1.0E7`, `NaN`, `Infinity`), timestamps
  as `yyyy-MM-dd HH:mm:ss[.ffffff]` with trailing zeros of the fraction dropped;
- to DECIMAL(p, s): rounded half-up to s digits, NULL when it does not fit.

Every conversion is vectorized with pyarrow.compute; Arrow errors become InvalidFilterError.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InvalidFilterError
from ..kernel.arrow_build import broadcast, scalar, str_scalar
from .protocol import ExpressionEvaluator, Value

ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)
_INT_STRING = r"^[+-]?(\d+\.?\d*|\.\d+)$"  # what Spark's string -> integral cast accepts (after trimming)
_TRUE = ("t", "true", "y", "yes", "1")
_FALSE = ("f", "false", "n", "no", "0")
_US_PER_S = 1_000_000


def _is_str(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _int_range(t: pa.DataType) -> tuple[int, int]:
    bits = t.bit_width
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _as_array(v: Value) -> pa.Array:
    return broadcast(v, 1) if isinstance(v, pa.Scalar) else v


def _like_input(v: Value, out: pa.Array) -> Value:
    """`out` (computed on `_as_array(v)`) as a scalar again when `v` was one."""
    return out[0] if isinstance(v, pa.Scalar) else out


def cast_expr(ev: ExpressionEvaluator, v: Value, t: pa.DataType, *, safe: bool = False) -> Value:
    """`CAST(v AS t)` with Spark's non-ANSI semantics (module docstring); `safe`: TRY_CAST, NULL where
    Spark's ANSI cast fails (integers out of range, a fraction in a string for an integer). Unsupported
    pairs raise InvalidFilterError naming both types."""
    src = v.type
    if src == t:
        return v
    try:
        if src == pa.null():
            return pc.cast(v, t)
        if pa.types.is_integer(t) and safe:
            return _try_integer(ev, v, t)
        if pa.types.is_integer(t):
            return _to_integer(ev, v, t)
        if pa.types.is_floating(t) and (pa.types.is_integer(src) or pa.types.is_decimal(src)):
            return pc.cast(v, t, safe=False)  # may round: a FLOAT holds 24 bits of an INT
        if pa.types.is_floating(t) and (pa.types.is_timestamp(src) or pa.types.is_date(src)):
            if pa.types.is_date(src):
                return scalar(None, t)
            return pc.cast(pc.divide(pc.cast(pc.cast(v, pa.timestamp("us", tz=src.tz)), pa.int64()),
                                     scalar(float(_US_PER_S))), t)
        if pa.types.is_boolean(t) and _is_str(src):
            low = pc.utf8_lower(pc.utf8_trim_whitespace(v))
            truth = pc.is_in(low, value_set=pa.array(_TRUE))
            known = pc.or_(truth, pc.is_in(low, value_set=pa.array(_FALSE)))
            return pc.if_else(known, truth, scalar(None, pa.bool_()))
        if pa.types.is_boolean(t) and pa.types.is_date(src):
            return scalar(None, t) if isinstance(v, pa.Scalar) else pa.nulls(len(v), t)
        if _is_str(t) and pa.types.is_floating(src):
            return pc.cast(java_double_string(v), t)
        if _is_str(t) and pa.types.is_timestamp(src):
            return pc.cast(timestamp_string(v), t)
        if _is_str(t) and (pa.types.is_struct(src) or pa.types.is_list(src) or pa.types.is_map(src)):
            raise InvalidFilterError(f"CAST of {src} to STRING is not supported")
        if pa.types.is_timestamp(t) and (pa.types.is_integer(src) or pa.types.is_floating(src)
                                         or pa.types.is_decimal(src)):
            return _seconds_to_timestamp(v, t)
        if pa.types.is_decimal(t) and not _is_str(src):
            return _to_decimal(ev, v, t)
        if pa.types.is_decimal(t):  # string -> decimal: parse exactly, then round to the scale
            parsed = ev.sql_cast(pc.utf8_trim_whitespace(v), pa.decimal128(38, min(38 - (t.precision - t.scale),
                                                                                    max(t.scale, 18))))
            return _to_decimal(ev, parsed, t)
        return ev.sql_cast(v, t)
    except ARROW_ERRORS as e:
        raise InvalidFilterError(f"cannot CAST {src} to {t}: {e}") from e


def _to_integer(ev: ExpressionEvaluator, v: Value, t: pa.DataType) -> Value:
    src = v.type
    lo, hi = _int_range(t)
    if pa.types.is_integer(src) or pa.types.is_boolean(src):
        return pc.cast(v, t, safe=False)  # wraps, as Java's narrowing conversion
    if pa.types.is_date(src):
        return scalar(None, t) if isinstance(v, pa.Scalar) else pa.nulls(len(v), t)
    if pa.types.is_timestamp(src):
        micros = pc.cast(pc.cast(v, pa.timestamp("us", tz=src.tz)), pa.int64())
        return pc.cast(floor_div(micros, _US_PER_S), t, safe=False)
    if pa.types.is_decimal(src):
        whole = pc.trunc(v)
        big = pc.cast(whole, pa.decimal128(38, 0), safe=False) if src.precision <= 38 else whole
        return pc.cast(pc.cast(big, pa.int64()), t, safe=False)
    if pa.types.is_floating(src):
        return _float_to_integer(v, t, lo, hi)
    if _is_str(src):
        arr = _as_array(v)
        trimmed = pc.utf8_trim_whitespace(arr)
        ok = pc.match_substring_regex(trimmed, _INT_STRING)
        whole = pc.replace_substring_regex(trimmed, r"\..*$", "")
        whole = pc.if_else(pc.match_substring_regex(whole, r"^[+-]?$"), scalar("0"), whole)
        # at most 19 digits reach the int64 parse; longer ones are NULL unless they are zeros
        whole = pc.replace_substring_regex(whole, r"^([+-]?)0+(\d)", r"\1\2")
        fits = pc.less_equal(pc.utf8_length(pc.replace_substring_regex(whole, r"^[+-]", "")), scalar(19))
        usable = pc.and_(pc.fill_null(ok, False), fits)
        text = pc.if_else(usable, whole, scalar(None, pa.string()))
        wide = _parse_int64(text)
        in_range = pc.and_(pc.greater_equal(wide, scalar(lo)), pc.less_equal(wide, scalar(hi)))
        return _like_input(v, pc.cast(pc.if_else(in_range, wide, scalar(None, pa.int64())), t))
    return ev.sql_cast(v, t)


def _try_integer(ev: ExpressionEvaluator, v: Value, t: pa.DataType) -> Value:
    """TRY_CAST to an integer type: NULL for what does not fit or is not an integer (strings)."""
    src = v.type
    lo, hi = _int_range(t)
    if _is_str(src):
        arr = _as_array(v)
        trimmed = pc.utf8_trim_whitespace(arr)
        ok = pc.and_(pc.fill_null(pc.match_substring_regex(trimmed, r"^[+-]?\d{1,19}$"), False),
                     pc.invert(pc.fill_null(pc.match_substring_regex(trimmed, r"^[+-]?\d{19}$"), False)))
        wide = _parse_int64(pc.if_else(ok, trimmed, scalar(None, pa.string())))
        return _like_input(v, _fit(wide, t, lo, hi))
    if pa.types.is_floating(src):
        f = pc.cast(v, pa.float64())
        fits = pc.and_(pc.greater(f, scalar(float(lo) - 1.0)), pc.less(f, scalar(float(hi) + 1.0)))
        f = pc.if_else(pc.fill_null(fits, False), pc.trunc(f), scalar(None, pa.float64()))
        return pc.cast(f, t)
    if pa.types.is_integer(src) or pa.types.is_decimal(src):
        whole = pc.trunc(v) if pa.types.is_decimal(src) else v
        limit_type = pa.decimal128(38, 0) if pa.types.is_decimal(src) else pa.int64()
        wide = pc.cast(whole, limit_type, safe=False) if pa.types.is_decimal(src) else pc.cast(whole, pa.int64())
        return _fit(wide, t, lo, hi)
    return _to_integer(ev, v, t)


def _fit(wide: Value, t: pa.DataType, lo: int, hi: int) -> Value:
    bound = wide.type
    fits = pc.and_(pc.greater_equal(wide, scalar(lo).cast(bound)), pc.less_equal(wide, scalar(hi).cast(bound)))
    return pc.cast(pc.if_else(fits, wide, scalar(None, bound)), t)


def floor_div(a: Value, b: int) -> Value:
    """Integer division rounding towards negative infinity (Arrow's integer division truncates)."""
    q = pc.divide(a, scalar(b))
    r = pc.subtract(a, pc.multiply(q, scalar(b)))
    return pc.subtract(q, pc.cast(pc.less(r, scalar(0)), q.type))


def _parse_int64(text: pa.Array) -> pa.Array:
    """Decimal strings of at most 19 digits -> int64; values beyond int64 are NULL."""
    try:
        return pc.cast(text, pa.int64())
    except ARROW_ERRORS:  # a 19-digit value beyond int64: parse as decimal, keep what fits
        dec = pc.cast(text, pa.decimal128(20, 0))
        lo, hi = _int_range(pa.int64())
        fits = pc.and_(pc.greater_equal(dec, scalar(lo).cast(dec.type)), pc.less_equal(dec, scalar(hi).cast(dec.type)))
        return pc.cast(pc.if_else(fits, dec, scalar(None, dec.type)), pa.int64())


def _float_to_integer(v: Value, t: pa.DataType, lo: int, hi: int) -> Value:
    """Java's double -> int / long: truncation, NaN -> 0, saturation; byte / short go through int and wrap."""
    wide = pa.int64() if t.bit_width == 64 else pa.int32()
    wlo, whi = _int_range(wide)
    f = pc.cast(v, pa.float64())
    f = pc.if_else(pc.is_nan(f), scalar(0.0), pc.trunc(f))
    over = pc.greater_equal(f, scalar(float(whi)))  # float(2**63 - 1) rounds up: compare, never cast it
    safe_f = pc.if_else(over, scalar(0.0), pc.max_element_wise(f, scalar(float(wlo))))
    as_wide = pc.if_else(over, scalar(whi, wide), pc.cast(safe_f, wide))
    return pc.cast(as_wide, t, safe=False)


def _seconds_to_timestamp(v: Value, t: pa.DataType) -> Value:
    f = pc.cast(v, pa.float64())
    valid = pc.and_(pc.is_finite(f), pc.less(pc.abs(f), scalar(9.2e12)))
    micros = pc.cast(pc.round(pc.multiply(pc.if_else(valid, f, scalar(0.0)), scalar(float(_US_PER_S)))), pa.int64())
    if pa.types.is_integer(v.type):  # exact for integers (a double holds 2**53 microseconds exactly only)
        micros = pc.multiply_checked(pc.cast(v, pa.int64()), scalar(_US_PER_S))
    out = pc.cast(pc.cast(micros, pa.timestamp("us")), pa.timestamp("us", tz=t.tz) if t.tz else pa.timestamp("us"))
    out = pc.if_else(valid, out, scalar(None, out.type))
    return pc.cast(out, t)


def _to_decimal(ev: ExpressionEvaluator, v: Value, t: pa.DataType) -> Value:
    """Round half-up to the scale; NULL when the value does not fit DECIMAL(p, s) (or is NaN / infinite)."""
    src = v.type
    if pa.types.is_floating(src):
        v = pc.if_else(pc.is_finite(v), v, scalar(None, src))
    if pa.types.is_floating(src) or pa.types.is_decimal(src):
        v = pc.round(v, ndigits=t.scale, round_mode="half_towards_infinity")
    try:
        return pc.cast(v, t)
    except ARROW_ERRORS:  # some values do not fit: NULL for those only
        limit = 10 ** (t.precision - t.scale)
        fits = pc.less(pc.abs(pc.cast(v, pa.float64())), scalar(float(limit)))
        kept = pc.if_else(fits, v, scalar(None, v.type))
        try:
            return pc.cast(kept, t)
        except ARROW_ERRORS:
            return ev.sql_cast(kept, t)


def java_double_string(v: Value) -> Value:
    """Doubles / floats written as Java's `Double.toString`: plain notation with at least one fraction digit
    for 1e-3 <= |x| < 1e7, else `d.dddE[-]n`; `NaN`, `Infinity`, `-Infinity`. Built from Arrow's shortest
    round-trip digits, vectorized."""
    arr = _as_array(v)
    text = pc.cast(arr, pa.string())
    parts = pc.extract_regex(text, r"^(?P<sign>-?)(?P<int>\d+)(?:\.(?P<frac>\d+))?(?:e\+?(?P<exp>-?\d+))?$")
    sign, whole = pc.struct_field(parts, "sign"), pc.struct_field(parts, "int")
    frac = pc.fill_null(pc.struct_field(parts, "frac"), "")
    exp_text = pc.struct_field(parts, "exp")  # '' when absent (Arrow's non-participating group)
    exp = pc.cast(pc.if_else(pc.greater(pc.utf8_length(exp_text), scalar(0, pa.int32())), exp_text,
                             str_scalar("0")), pa.int64())
    digits = pc.binary_join_element_wise(whole, frac, "")
    lead = pc.subtract(pc.utf8_length(digits), pc.utf8_length(pc.utf8_ltrim(digits, characters="0")))
    sig = pc.utf8_rtrim(pc.utf8_ltrim(digits, characters="0"), characters="0")
    # decimal exponent of the first significant digit
    e10 = pc.subtract(pc.add(exp, pc.cast(pc.utf8_length(whole), pa.int64())), pc.add(pc.cast(lead, pa.int64()), 1))
    zero = pc.equal(pc.utf8_length(sig), 0)
    plain_range = pc.and_(pc.greater_equal(e10, -3), pc.less_equal(e10, 6))
    plain = pc.if_else(pc.match_substring(text, "."), text, pc.binary_join_element_wise(text, ".0", ""))
    rest = pc.utf8_slice_codeunits(sig, 1)
    mantissa = pc.binary_join_element_wise(pc.utf8_slice_codeunits(sig, 0, 1), ".",
                                           pc.if_else(pc.equal(pc.utf8_length(rest), 0), "0", rest), "")
    sci = pc.binary_join_element_wise(sign, mantissa, "E", pc.cast(e10, pa.string()), "")
    out = pc.if_else(pc.and_(plain_range, pc.invert(pc.match_substring(text, "e"))), plain, sci)
    out = pc.if_else(zero, pc.binary_join_element_wise(sign, "0.0", ""), out)
    special = pc.if_else(pc.equal(text, "nan"), "NaN",
                         pc.if_else(pc.equal(text, "inf"), "Infinity",
                                    pc.if_else(pc.equal(text, "-inf"), "-Infinity", scalar(None, pa.string()))))
    out = pc.coalesce(special, out)
    return _like_input(v, pc.if_else(pc.is_valid(arr), out, scalar(None, pa.string())))


def timestamp_string(v: Value) -> Value:
    """`yyyy-MM-dd HH:mm:ss[.ffffff]` (UTC wall time), trailing zeros of the fraction dropped, as Spark."""
    t = v.type
    us = pc.cast(v, pa.timestamp("us", tz=t.tz))
    text = pc.strftime(us, format="%Y-%m-%d %H:%M:%S")  # %S carries the 6-digit fraction for microseconds
    text = pc.replace_substring_regex(text, r"(\.\d*?)0+$", r"\1")
    return pc.replace_substring_regex(text, r"\.$", "")


__all__ = ["ARROW_ERRORS", "cast_expr", "java_double_string", "timestamp_string"]
