"""Spark SQL date and time functions and INTERVAL arithmetic for the Arrow evaluator (`evaluator.py`).

Spark semantics with ANSI mode off and the session time zone UTC (how deltalake writes tables): invalid
dates (`make_date(2023, 2, 29)`, `to_date('2024-02-30')`) are NULL, `add_months` clamps the day to the
month's last day, a DATE plus an interval of whole days stays a DATE, `date_trunc` with an unknown unit is
NULL. Calendar arithmetic is done on Arrow's integer fields (year / month / day), never per row in Python.
Results were checked against pyspark 4 (non-ANSI, UTC); see tests/unit/test_dml_functions.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError
from ...kernel.arrow_build import scalar, str_scalar
from ...kernel.expressions.sql.ast import Func
from ..casts import floor_div
from ..protocol import ExpressionEvaluator, Handler, Value

TS = pa.timestamp("us", tz="UTC")
_US_PER_DAY = 86_400_000_000
_JAVA_FORMAT = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                ("ss", "%S"), ("EEEE", "%A"), ("EEE", "%a"), ("MMMM", "%B"), ("MMM", "%b")]
_DEFAULT_FORMAT = "yyyy-MM-dd HH:mm:ss"
_TRUNC_UNITS = {"YEAR": "year", "YYYY": "year", "YY": "year", "QUARTER": "quarter", "MONTH": "month",
                "MM": "month", "MON": "month", "WEEK": "week", "DAY": "day", "DD": "day", "HOUR": "hour",
                "MINUTE": "minute", "SECOND": "second", "MILLISECOND": "millisecond",
                "MICROSECOND": "microsecond"}
_DATE_TRUNC_UNITS = ("year", "quarter", "month", "week")  # trunc(date, fmt): coarser than a day only


def java_to_strftime(fmt: str) -> str:
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


def const_str(v: Value, what: str) -> str | None:
    if not isinstance(v, pa.Scalar):
        raise InvalidFilterError(f"{what} must be a constant")
    return None if not v.is_valid else str(v.as_py())


def _is_str(t: pa.DataType) -> bool:
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def _i64(v: int) -> pa.Scalar:
    return scalar(v, pa.int64())


# ----------------------------------------------------------------------------- conversions
def as_timestamp(ev: ExpressionEvaluator, v: Value) -> Value:
    """A value as TIMESTAMP: strings parsed leniently (NULL when malformed), dates at midnight UTC."""
    if _is_str(v.type) or v.type == pa.null():
        return ev.sql_cast(v, TS)
    if pa.types.is_date(v.type):
        return pc.cast(v, TS)
    if not pa.types.is_timestamp(v.type):
        raise InvalidFilterError(f"expected a date or timestamp, got {v.type}")
    return v


def as_date(ev: ExpressionEvaluator, v: Value) -> Value:
    if pa.types.is_date32(v.type):
        return v
    if _is_str(v.type) or v.type == pa.null() or pa.types.is_timestamp(v.type) or pa.types.is_date(v.type):
        return ev.sql_cast(v, pa.date32())
    raise InvalidFilterError(f"expected a date, got {v.type}")


def _days(d: Value) -> Value:
    """Days since the epoch (int64) of a date32."""
    return pc.cast(pc.cast(d, pa.int32()), pa.int64())


def _from_days(n: Value) -> Value:
    return pc.cast(pc.cast(n, pa.int32()), pa.date32())


def _int_arg(ev: ExpressionEvaluator, v: Value, what: str) -> Value:
    if pa.types.is_integer(v.type):
        return pc.cast(v, pa.int64())
    if v.type == pa.null() or _is_str(v.type):
        return ev.sql_cast(v, pa.int64())
    raise InvalidFilterError(f"{what} must be an integer, got {v.type}")


def _pad(v: Value, width: int) -> Value:
    return pc.utf8_lpad(pc.cast(v, pa.string()), width=width, padding="0")


def make_date(y: Value, m: Value, d: Value) -> Value:
    """DATE from integer year / month / day; NULL when not a valid date (year 1..9999)."""
    ok = pc.and_(pc.greater_equal(y, _i64(1)), pc.less_equal(y, _i64(9999)))
    text = pc.binary_join_element_wise(_pad(y, 4), _pad(m, 2), _pad(d, 2), str_scalar("-"))
    text = pc.if_else(ok, text, scalar(None, pa.string()))
    parsed = pc.cast(pc.strptime(text, format="%Y-%m-%d", unit="s", error_is_null=True), pa.date32())
    exact = pc.equal(pc.cast(pc.day(parsed), pa.int64()), pc.cast(d, pa.int64()))  # strptime rolls Feb 30 over
    return pc.if_else(exact, parsed, scalar(None, pa.date32()))


def _days_in_month(y: Value, m: Value) -> Value:
    leap = pc.or_(pc.and_(pc.equal(pc.bit_wise_and(y, _i64(3)), _i64(0)),
                          pc.not_equal(pc.subtract(y, pc.multiply(pc.divide(y, _i64(100)), _i64(100))), _i64(0))),
                  pc.equal(pc.subtract(y, pc.multiply(pc.divide(y, _i64(400)), _i64(400))), _i64(0)))
    short = pc.is_in(m, value_set=pa.array([4, 6, 9, 11], pa.int64()))
    feb = pc.equal(m, _i64(2))
    out = pc.subtract(_i64(31), pc.cast(short, pa.int64()))
    return pc.if_else(feb, pc.add(_i64(28), pc.cast(leap, pa.int64())), out)


def _ymd(d: Value) -> tuple[Value, Value, Value]:
    return (pc.cast(pc.year(d), pa.int64()), pc.cast(pc.month(d), pa.int64()), pc.cast(pc.day(d), pa.int64()))


def add_months(d: Value, n: Value) -> Value:
    """Spark's add_months on a date32: the day is clamped to the last day of the resulting month."""
    y, m, day = _ymd(d)
    total = pc.add_checked(pc.add(pc.multiply(y, _i64(12)), pc.subtract(m, _i64(1))), n)
    ny = floor_div(total, 12)
    nm = pc.add(pc.subtract(total, pc.multiply(ny, _i64(12))), _i64(1))
    return make_date(ny, nm, pc.min_element_wise(day, _days_in_month(ny, nm)))


def _micros(ts: Value) -> Value:
    return pc.cast(pc.cast(ts, pa.timestamp("us", tz=ts.type.tz)), pa.int64())


def _from_micros(n: Value, like: pa.DataType) -> Value:
    return pc.cast(pc.cast(n, pa.timestamp("us")), pa.timestamp("us", tz=like.tz) if like.tz else pa.timestamp("us"))


def add_interval(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    """`x + INTERVAL ...` (the parser folds the interval into months, days, microseconds, signs applied):
    months first (day clamped), then days, then microseconds, as Spark. A DATE plus whole days (and
    months) stays a DATE; with a time part it becomes a TIMESTAMP."""
    v, months, days, micros = a[0], *(int(x.as_py()) for x in a[1:])
    if pa.types.is_date(v.type) and micros == 0:
        d = as_date(ev, v)
        if months:
            d = add_months(d, _i64(months))
        return _from_days(pc.add_checked(_days(d), _i64(days))) if days else d
    ts = as_timestamp(ev, v)
    if months:
        us = _micros(ts)
        day_us = floor_div(us, _US_PER_DAY)
        time_of_day = pc.subtract(us, pc.multiply(day_us, _i64(_US_PER_DAY)))
        shifted = add_months(_from_days(day_us), _i64(months))
        ts = _from_micros(pc.add(pc.multiply(_days(shifted), _i64(_US_PER_DAY)), time_of_day), ts.type)
    shift = days * _US_PER_DAY + micros
    if shift:
        ts = _from_micros(pc.add_checked(_micros(ts), _i64(shift)), ts.type)
    return ts


# ----------------------------------------------------------------------------- functions
def _part(fn: Any) -> Handler:
    def part(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        v = a[0] if pa.types.is_date(a[0].type) else as_timestamp(ev, a[0])
        return pc.cast(fn(v), pa.int32())
    return part


def _to_date(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if len(a) == 2 and _is_str(v.type):
        fmt = const_str(a[1], "TO_DATE format")
        if fmt is None:
            return scalar(None, pa.date32())
        parsed = pc.strptime(v, format=java_to_strftime(fmt), unit="us", error_is_null=True)
        return pc.cast(parsed, pa.date32())
    return ev.sql_cast(v, pa.date32()) if v.type != pa.null() else ev.cast(v, pa.date32())


def _parse_with(v: Value, fmt: str) -> Value:
    parsed = pc.strptime(v, format=java_to_strftime(fmt), unit="us", error_is_null=True)
    return pc.assume_timezone(parsed, "UTC") if parsed.type.tz is None else parsed


def _to_timestamp(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if len(a) == 2 and _is_str(v.type):
        fmt = const_str(a[1], "TO_TIMESTAMP format")
        return scalar(None, TS) if fmt is None else _parse_with(v, fmt)
    return ev.sql_cast(v, TS)


def format_timestamp(v: Value, fmt: str) -> Value:
    if pa.types.is_timestamp(v.type):  # whole seconds: %S must not print the fraction
        v = pc.cast(pc.floor_temporal(v, unit="second"), pa.timestamp("s", tz=v.type.tz))
    return pc.strftime(v, format=java_to_strftime(fmt))


def _date_format(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    fmt = const_str(a[1], "DATE_FORMAT format")
    v = a[0] if pa.types.is_date(a[0].type) else as_timestamp(ev, a[0])
    return scalar(None, pa.string()) if fmt is None else format_timestamp(v, fmt)


def _now(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return scalar(dt.datetime.now(dt.timezone.utc), TS)


def _today(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return scalar(dt.datetime.now(dt.timezone.utc).date(), pa.date32())


def _date_add(sign: int) -> Handler:
    def date_add(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        n = _int_arg(ev, a[1], f"{e.name} days")
        n = pc.negate_checked(n) if sign < 0 else n
        return _from_days(pc.add_checked(_days(as_date(ev, a[0])), n))
    return date_add


def _datediff(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return pc.cast(pc.subtract(_days(as_date(ev, a[0])), _days(as_date(ev, a[1]))), pa.int32())


def _date_trunc(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    unit = _TRUNC_UNITS.get((const_str(a[0], "DATE_TRUNC unit") or "").upper())
    ts = as_timestamp(ev, a[1])
    if unit is None:  # Spark: an unknown unit gives NULL
        return scalar(None, ts.type)
    return pc.floor_temporal(ts, unit=unit, week_starts_monday=True)


def _trunc(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    unit = _TRUNC_UNITS.get((const_str(a[1], "TRUNC format") or "").upper())
    d = as_date(ev, a[0])
    if unit not in _DATE_TRUNC_UNITS:
        return scalar(None, pa.date32())
    return pc.floor_temporal(d, unit=unit, week_starts_monday=True)


def _make_date(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    y, m, d = (_int_arg(ev, x, "MAKE_DATE field") for x in a)
    return make_date(y, m, d)


def _add_months(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    return add_months(as_date(ev, a[0]), _int_arg(ev, a[1], "ADD_MONTHS months"))


def _last_day(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    y, m, _ = _ymd(as_date(ev, a[0]))
    return make_date(y, m, _days_in_month(y, m))


def _unix_timestamp(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    if not a:
        return scalar(int(dt.datetime.now(dt.timezone.utc).timestamp()), pa.int64())
    v = a[0]
    if _is_str(v.type):
        fmt = const_str(a[1], f"{e.name} format") if len(a) == 2 else _DEFAULT_FORMAT
        if fmt is None:
            return scalar(None, pa.int64())
        v = _parse_with(v, fmt)
    return floor_div(_micros(as_timestamp(ev, v)), 1_000_000)


def _from_unixtime(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    fmt = const_str(a[1], "FROM_UNIXTIME format") if len(a) == 2 else _DEFAULT_FORMAT
    secs = _int_arg(ev, a[0], "FROM_UNIXTIME seconds")
    ts = _from_micros(pc.multiply_checked(secs, _i64(1_000_000)), TS)
    return scalar(None, pa.string()) if fmt is None else format_timestamp(ts, fmt)


def _epoch_to_ts(unit_us: int) -> Handler:
    def epoch_to_ts(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        v = a[0]
        if pa.types.is_floating(v.type) or pa.types.is_decimal(v.type):
            if unit_us != 1_000_000:
                raise InvalidFilterError(f"{e.name} needs an integer")
            f = pc.cast(v, pa.float64())
            return _from_micros(pc.cast(pc.round(pc.multiply(f, scalar(1e6))), pa.int64()), TS)
        return _from_micros(pc.multiply_checked(_int_arg(ev, v, e.name), _i64(unit_us)), TS)
    return epoch_to_ts


def _ts_to_epoch(unit_us: int) -> Handler:
    return lambda ev, a, e: floor_div(_micros(as_timestamp(ev, a[0])), unit_us)


def _date_part(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    from ...kernel.expressions.sql.sqlglot_parse import EXTRACT_FIELDS

    field = EXTRACT_FIELDS.get((const_str(a[0], "DATE_PART field") or "").upper())
    if field is None:
        raise InvalidFilterError(f"unsupported DATE_PART field {a[0]}")
    handler: Handler = FUNCTIONS[field][2]
    return handler(ev, a[1:], e)


FUNCTIONS: dict[str, tuple[int, int, Handler]] = {
    "YEAR": (1, 1, _part(pc.year)),
    "MONTH": (1, 1, _part(pc.month)),
    "DAY": (1, 1, _part(pc.day)),
    "DAYOFMONTH": (1, 1, _part(pc.day)),
    "HOUR": (1, 1, _part(pc.hour)),
    "MINUTE": (1, 1, _part(pc.minute)),
    "SECOND": (1, 1, _part(pc.second)),
    "QUARTER": (1, 1, _part(pc.quarter)),
    "DAYOFWEEK": (1, 1, _part(lambda v: pc.day_of_week(v, count_from_zero=False, week_start=7))),
    "WEEKDAY": (1, 1, _part(pc.day_of_week)),
    "DAYOFYEAR": (1, 1, _part(pc.day_of_year)),
    "WEEKOFYEAR": (1, 1, _part(pc.iso_week)),
    "DATE_PART": (2, 2, _date_part),
    "DATEPART": (2, 2, _date_part),
    "TO_DATE": (1, 2, _to_date),
    "DATE": (1, 1, _to_date),
    "TO_TIMESTAMP": (1, 2, _to_timestamp),
    "DATE_FORMAT": (2, 2, _date_format),
    "CURRENT_TIMESTAMP": (0, 0, _now),
    "NOW": (0, 0, _now),
    "CURRENT_DATE": (0, 0, _today),
    "DATE_ADD": (2, 2, _date_add(1)),
    "DATEADD": (2, 2, _date_add(1)),
    "DATE_SUB": (2, 2, _date_add(-1)),
    "DATEDIFF": (2, 2, _datediff),
    "DATE_DIFF": (2, 2, _datediff),
    "DATE_TRUNC": (2, 2, _date_trunc),
    "TRUNC": (2, 2, _trunc),
    "MAKE_DATE": (3, 3, _make_date),
    "ADD_MONTHS": (2, 2, _add_months),
    "LAST_DAY": (1, 1, _last_day),
    "UNIX_TIMESTAMP": (0, 2, _unix_timestamp),
    "TO_UNIX_TIMESTAMP": (1, 2, _unix_timestamp),
    "FROM_UNIXTIME": (1, 2, _from_unixtime),
    "TIMESTAMP_SECONDS": (1, 1, _epoch_to_ts(1_000_000)),
    "TIMESTAMP_MILLIS": (1, 1, _epoch_to_ts(1_000)),
    "TIMESTAMP_MICROS": (1, 1, _epoch_to_ts(1)),
    "UNIX_SECONDS": (1, 1, _ts_to_epoch(1_000_000)),
    "UNIX_MILLIS": (1, 1, _ts_to_epoch(1_000)),
    "UNIX_MICROS": (1, 1, _ts_to_epoch(1)),
    "UNIX_DATE": (1, 1, lambda ev, a, e: pc.cast(_days(as_date(ev, a[0])), pa.int32())),
    "DATE_FROM_UNIX_DATE": (1, 1, lambda ev, a, e: _from_days(_int_arg(ev, a[0], e.name))),
    "+INTERVAL": (4, 4, add_interval),  # from `x +/- INTERVAL ...` (the parser), not callable by name
}

__all__ = ["FUNCTIONS", "add_months", "as_date", "as_timestamp", "const_str", "java_to_strftime", "make_date"]
