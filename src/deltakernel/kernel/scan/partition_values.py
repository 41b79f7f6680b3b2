"""Partition values (PROTOCOL.md "Partition Value Serialization"): strings in the log <-> typed values.

An empty string (or null) is a null partition value for every type. Timestamps come in two shapes:
`YYYY-MM-DD HH:MM:SS[.ffffff]` (no zone: the writer's zone; we read it as UTC, like the Rust and Java kernels)
or ISO-8601 adjusted to UTC (`...T...Z` / with an offset). Binary values are the bytes' UTF-8 text (Spark casts
binary to string); bytes that are not UTF-8 round-trip through Python's `surrogateescape`.

The vectorized path uses Arrow casts; if a value is outside what Arrow's parsers accept (e.g. `+5`, nanosecond
digits) the column falls back to the scalar parser so results never depend on which path ran.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import SchemaError
from ..schema.arrow import to_arrow_type
from ..schema.column_mapping import physical_name
from ..schema.types import DataType, DecimalType, PrimitiveType, StructField

_INT_RANGES = {
    "byte": (-(2**7), 2**7 - 1),
    "short": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}
_TS_RE = re.compile(
    r"^\s*(-?\d{4,})-(\d{1,2})-(\d{1,2})"
    r"(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}(?::?\d{2})?)?\s*$"
)
_OFFSET_SUFFIX = r"(Z|[+-]\d{2}(:?\d{2})?)\s*$"
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)


def _type_name(dtype: DataType) -> str:
    if isinstance(dtype, DecimalType):
        return "decimal"
    if isinstance(dtype, PrimitiveType):
        return dtype.name
    raise SchemaError(f"type {dtype!r} cannot be a partition column")


# ----------------------------------------------------------------------------- scalar parsing
def _parse_timestamp(raw: str, utc: bool) -> dt.datetime:
    m = _TS_RE.match(raw)
    if not m:
        raise ValueError(f"not a timestamp: {raw!r}")
    year, month, day, hh, mm, ss, frac, zone = m.groups()
    micros = int((frac or "").ljust(6, "0")[:6] or 0)
    value = dt.datetime(int(year), int(month), int(day), int(hh or 0), int(mm or 0), int(ss or 0), micros)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        value = value - sign * offset  # to UTC wall clock
    return value.replace(tzinfo=dt.timezone.utc) if utc else value


def _context(column: str | None, path: str | None) -> str:
    """` of column 'p' in data file x.parquet`: where an unparsable value comes from, for its message."""
    return (f" of column {column!r}" if column else "") + (f" in data file {path}" if path else "")


def parse_partition_value(raw: str | None, dtype: DataType, *, column: str | None = None,
                          path: str | None = None) -> Any:
    """One serialized partition value as a Python value (None for null / empty string).

    `column` and `path` (the add action's) are only named in the error for a value that does not parse.
    """
    name = _type_name(dtype)
    if raw is None or raw == "" or name == "void":
        return None
    try:
        if name == "string":
            return raw
        if name in _INT_RANGES:
            value = int(raw.strip())
            lo, hi = _INT_RANGES[name]
            if not lo <= value <= hi:
                raise ValueError(f"{value} out of range for {name}")
            return value
        if name in ("float", "double"):
            value_f = float(raw.strip())
            return float(np.float32(value_f)) if name == "float" else value_f
        if name == "boolean":
            low = raw.strip().lower()
            if low not in ("true", "false"):
                raise ValueError(f"not a boolean: {raw!r}")
            return low == "true"
        if name == "date":
            return dt.date.fromisoformat(raw.strip())
        if name == "timestamp":
            return _parse_timestamp(raw, utc=True)
        if name == "timestamp_ntz":
            return _parse_timestamp(raw, utc=False)
        if name == "decimal":
            assert isinstance(dtype, DecimalType)
            return _parse_decimal(raw, dtype)
        if name == "binary":
            return raw.encode("utf-8", "surrogateescape")
    except (ValueError, ArithmeticError) as e:
        raise SchemaError(f"invalid partition value {raw!r}{_context(column, path)} for type {name}: {e}") from e
    raise SchemaError(f"type {name!r} cannot be a partition column")


def _parse_decimal(raw: str, dtype: DecimalType) -> decimal.Decimal:
    value = decimal.Decimal(raw.strip())
    if not value.is_finite():
        raise ValueError("decimal partition values must be finite")
    ctx = decimal.Context(prec=max(dtype.precision, 1) + 2)
    quantized = value.quantize(decimal.Decimal(1).scaleb(-dtype.scale), context=ctx)
    if quantized != value:
        raise ValueError(f"more than {dtype.scale} fractional digits")
    if len(quantized.as_tuple().digits) > dtype.precision and quantized != 0:
        raise ValueError(f"more than {dtype.precision} digits")
    return quantized


# ----------------------------------------------------------------------------- vectorized parsing
def _as_string_array(raw: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(raw, pa.ChunkedArray):
        raw = raw.combine_chunks() if raw.num_chunks != 1 else raw.chunk(0)
    if pa.types.is_dictionary(raw.type):
        raw = raw.dictionary_decode()
    if not pa.types.is_string(raw.type):
        raw = raw.cast(pa.string())
    return raw


def _nullify_empty(arr: pa.Array) -> pa.Array:
    empty = pc.equal(arr, "")
    if not pc.any(empty).as_py():
        return arr
    return pc.if_else(empty, pa.scalar(None, pa.string()), arr)


def _cast_timestamps(arr: pa.Array, utc: bool) -> pa.Array:
    """Strings in either protocol shape -> timestamp[us] (UTC-labelled when `utc`)."""
    target = pa.timestamp("us", tz="UTC") if utc else pa.timestamp("us")
    has_zone = pc.fill_null(pc.match_substring_regex(arr, _OFFSET_SUFFIX), False)
    n_zoned = pc.sum(has_zone).as_py() or 0
    if n_zoned == 0:
        return arr.cast(pa.timestamp("us")).view(target)
    null_str = pa.scalar(None, pa.string())
    zoned = pc.if_else(has_zone, arr, null_str).cast(pa.timestamp("us", tz="UTC")).view(pa.int64())
    if n_zoned == len(arr) - arr.null_count:
        return zoned.view(target)
    naive = pc.if_else(has_zone, null_str, arr).cast(pa.timestamp("us")).view(pa.int64())
    return pc.if_else(has_zone, zoned, naive).view(target)


def _vectorized(arr: pa.Array, dtype: DataType, target: pa.DataType) -> pa.Array:
    name = _type_name(dtype)
    if name == "string":
        return arr
    if name == "binary":
        return arr.cast(pa.binary())
    if name == "timestamp":
        return _cast_timestamps(arr, utc=True)
    if name == "timestamp_ntz":
        return _cast_timestamps(arr, utc=False)
    if name == "boolean":
        low = pc.utf8_lower(arr)
        ok = pc.or_kleene(pc.equal(low, "true"), pc.equal(low, "false"))
        if not pc.all(pc.fill_null(ok, True)).as_py():
            raise pa.ArrowInvalid("not a boolean")
        return pc.equal(low, "true")
    return arr.cast(target)


def parse_partition_array(raw: pa.Array | pa.ChunkedArray, dtype: DataType, *, column: str | None = None,
                          paths: pa.Array | pa.ChunkedArray | None = None) -> pa.Array:
    """A column of serialized partition values (strings, nulls) as a typed Arrow array.

    `column` and `paths` (the files' paths, row-aligned with `raw`) name where a value that does not parse
    comes from.
    """
    target = to_arrow_type(dtype)
    name = _type_name(dtype)
    if name == "void":
        return pa.nulls(len(raw), pa.null())
    arr = _nullify_empty(_as_string_array(raw))
    if arr.null_count == len(arr):
        return pa.nulls(len(arr), target)
    try:
        return _vectorized(arr, dtype, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        # rare shapes Arrow's parsers reject: the scalar parser decides (and raises a precise error)
        values = arr.to_pylist()
        try:
            parsed = [parse_partition_value(v, dtype) for v in values]
        except SchemaError:  # again, naming the column and the file of the first bad value
            for i, v in enumerate(values):
                parse_partition_value(v, dtype, column=column, path=_path_at(paths, i))
            raise
        return pa.array(parsed, type=target)


def _path_at(paths: pa.Array | pa.ChunkedArray | None, i: int) -> str | None:
    if paths is None or i >= len(paths):
        return None
    value = paths[i].as_py()
    return None if value is None else str(value)


def partition_columns_table(
    raw_struct: pa.StructArray | pa.ChunkedArray | pa.Table | pa.RecordBatch,
    partition_fields: list[StructField],
    mode: str,
    *,
    paths: pa.Array | pa.ChunkedArray | None = None,
) -> dict[str, pa.Array]:
    """Typed partition columns (logical name -> array) from the raw `partition_values` strings.

    `raw_struct` is keyed by physical names (column mapping); a missing key yields nulls. `paths` (the
    file table's `path` column) names the data file of a value that does not parse.
    """
    if isinstance(raw_struct, pa.ChunkedArray):
        raw_struct = (
            (raw_struct.combine_chunks() if raw_struct.num_chunks != 1 else raw_struct.chunk(0))
            if raw_struct.num_chunks
            else pa.array([], raw_struct.type)
        )
    names: list[str]
    if isinstance(raw_struct, (pa.Table, pa.RecordBatch)):
        names = list(raw_struct.column_names)
        n = raw_struct.num_rows
        parent_nulls = None

        def column(i: int) -> pa.Array | pa.ChunkedArray:
            return raw_struct.column(i)

    elif pa.types.is_struct(raw_struct.type):
        names = [raw_struct.type.field(i).name for i in range(raw_struct.type.num_fields)]
        n = len(raw_struct)
        parent_nulls = raw_struct.is_null() if raw_struct.null_count else None

        def column(i: int) -> pa.Array | pa.ChunkedArray:
            return raw_struct.field(i)

    else:
        raise SchemaError(f"partition values must be a struct or table, got {raw_struct.type}")
    exact = {nm: i for i, nm in enumerate(names)}
    lower = {nm.lower(): i for i, nm in reversed(list(enumerate(names)))}
    out: dict[str, pa.Array] = {}
    for f in partition_fields:
        pname = physical_name(f, mode)
        idx = exact.get(pname, lower.get(pname.lower()))
        if idx is None:
            out[f.name] = pa.nulls(n, to_arrow_type(f.type))
            continue
        col = column(idx)
        if parent_nulls is not None:
            col = pc.if_else(parent_nulls, pa.scalar(None, col.type), col)
        out[f.name] = parse_partition_array(col, f.type, column=f.name, paths=paths)
    return out


# ----------------------------------------------------------------------------- serialization
def _to_utc_naive(value: Any) -> dt.datetime:
    if isinstance(value, (int, np.integer)):
        return _EPOCH_NAIVE + dt.timedelta(microseconds=int(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return value  # type: ignore[no-any-return]
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    raise TypeError(f"not a timestamp: {value!r}")


def _format_float(value: float, name: str) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if name == "float":
        return str(np.float32(value))  # shortest text that round-trips through float32
    return repr(float(value))


def serialize_partition_value(value: Any, dtype: DataType) -> str | None:
    """A Python value as its partition-value string (None for null; inverse of `parse_partition_value`).

    Timestamps are written in the recommended ISO-8601 UTC form; empty strings/bytes become null, as the
    protocol cannot tell them apart.
    """
    if value is None:
        return None
    name = _type_name(dtype)
    try:
        if name == "void":
            return None
        if name == "string":
            return str(value) or None
        if name in _INT_RANGES:
            return str(int(value))
        if name in ("float", "double"):
            return _format_float(float(value), name)
        if name == "boolean":
            return "true" if bool(value) else "false"
        if name == "date":
            if isinstance(value, dt.datetime):
                value = value.date()
            return str(value.isoformat())
        if name == "timestamp":
            return _to_utc_naive(value).isoformat(timespec="microseconds") + "Z"
        if name == "timestamp_ntz":
            return _to_utc_naive(value).isoformat(sep=" ", timespec="microseconds")
        if name == "decimal":
            assert isinstance(dtype, DecimalType)
            d = decimal.Decimal(value) if not isinstance(value, float) else decimal.Decimal(repr(value))
            return format(_parse_decimal(format(d, "f"), dtype), "f")
        if name == "binary":
            return bytes(value).decode("utf-8", "surrogateescape") or None
    except (TypeError, ValueError, ArithmeticError) as e:
        raise SchemaError(f"cannot serialize {value!r} as a {name} partition value: {e}") from e
    raise SchemaError(f"type {name!r} cannot be a partition column")
