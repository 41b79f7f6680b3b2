"""Variant values as JSON text, exactly as Spark's `to_json(variant)` prints them.

Why: users compare what deltakernel reads with what Spark shows; a variant printed with Python's `json` would
differ in floats (`1.0E300` vs `1e+300`), decimals (scale kept: `1.500`), timestamps (`2024-01-01
12:34:56.789+00:00`) and binaries (base64). Rendering walks one value at a time (text building is per row).
"""

from __future__ import annotations

import base64
import datetime as _dt
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from . import binary as vb

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _quote(s: str) -> str:
    out = []
    for ch in s:
        e = _ESCAPES.get(ch)
        if e is not None:
            out.append(e)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def java_float_str(x: float, single: bool = False) -> str:
    """Java's `Double.toString` / `Float.toString`: shortest digits, `E` notation outside [1e-3, 1e7)."""
    if x == 0:
        return "-0.0" if np.signbit(x) else "0.0"
    sci = np.format_float_scientific(np.float32(x) if single else np.float64(x), unique=True, trim="0")
    mant, exp_s = sci.split("e")
    exp = int(exp_s)
    neg = mant.startswith("-")
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    sign = "-" if neg else ""
    if -3 <= exp < 7:
        if exp >= 0:
            whole = digits[:exp + 1].ljust(exp + 1, "0")
            frac = digits[exp + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exp - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp}"


def _fraction(micros: int) -> str:
    return f".{micros:06d}".rstrip("0") if micros else ""


def _ts(raw: int, nanos_unit: bool, tz: _dt.tzinfo | None) -> str:
    micros = raw // 1000 if nanos_unit else raw
    extra = raw % 1000 if nanos_unit else 0
    t = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros)
    if tz is not None:
        t = t.astimezone(tz)
    frac = f".{t.microsecond:06d}{extra:03d}".rstrip("0") if nanos_unit and extra else _fraction(t.microsecond)
    s = t.strftime("%Y-%m-%d %H:%M:%S") + frac
    if tz is None:
        return s
    off = t.utcoffset() or _dt.timedelta(0)
    mins = int(off.total_seconds()) // 60
    return s + f"{'+' if mins >= 0 else '-'}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"


def to_json(metadata: bytes, value: bytes, tz: _dt.tzinfo = _dt.timezone.utc) -> str:
    """One variant as Spark's `to_json` prints it (timestamps with a zone shown in `tz`, Spark's session zone)."""
    out: list[str] = []
    _render(vb.metadata_keys(metadata), value, 0, out, tz)
    return "".join(out)


def _render(keys: list[str], v: bytes, pos: int, out: list[str], tz: _dt.tzinfo) -> None:
    h = v[pos]
    basic, t = h & 0x03, h >> 2
    if basic == vb.SHORT_STRING:
        out.append(_quote(v[pos + 1:pos + 1 + t].decode("utf-8")))
    elif basic == vb.OBJECT:
        out.append("{")
        for i, f in enumerate(vb.object_fields(v, pos)):
            if i:
                out.append(",")
            out.append(_quote(keys[f.key_id]) + ":")
            _render(keys, v, f.start, out, tz)
        out.append("}")
    elif basic == vb.ARRAY:
        out.append("[")
        for i, (s, _) in enumerate(vb.array_elements(v, pos)):
            if i:
                out.append(",")
            _render(keys, v, s, out, tz)
        out.append("]")
    else:
        out.append(_primitive(t, v, pos + 1, tz))


def _primitive(t: int, v: bytes, p: int, tz: _dt.tzinfo) -> str:
    if t in (vb.DOUBLE, vb.FLOAT):
        x = struct.unpack_from("<d" if t == vb.DOUBLE else "<f", v, p)[0]
        s = java_float_str(x, single=t == vb.FLOAT)
        return s if np.isfinite(x) else f'"{"NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")}"'
    if t in (vb.TIMESTAMP, vb.TIMESTAMP_NTZ, vb.TIMESTAMP_NANOS, vb.TIMESTAMP_NTZ_NANOS):
        raw = int.from_bytes(v[p:p + 8], "little", signed=True)
        zone = tz if t in (vb.TIMESTAMP, vb.TIMESTAMP_NANOS) else None
        return '"' + _ts(raw, t in (vb.TIMESTAMP_NANOS, vb.TIMESTAMP_NTZ_NANOS), zone) + '"'
    if t == vb.TIME_NTZ:
        micros = int.from_bytes(v[p:p + 8], "little", signed=True)
        secs, us = divmod(micros, 1_000_000)
        return f'"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}{_fraction(us)}"'
    val: Any = vb.decode_primitive(t, v, p)
    if val is None:
        return "null"
    if isinstance(val, bool):
        return "true" if val else "false"
    if isinstance(val, int):
        return str(val)
    if t in (vb.DECIMAL4, vb.DECIMAL8, vb.DECIMAL16):
        return format(val, "f")
    if t == vb.DATE:
        return f'"{val.isoformat()}"'
    if t == vb.BINARY:
        return '"' + base64.b64encode(val).decode("ascii") + '"'
    if t == vb.STRING:
        return _quote(val)
    return f'"{val}"'  # uuid


def to_json_column(arr: pa.Array, tz: _dt.tzinfo = _dt.timezone.utc) -> pa.Array:
    """A variant column (`struct<metadata, value>`, unshredded) as a string column of Spark's JSON text."""
    meta, val = arr.field("metadata"), arr.field("value")
    valid = arr.is_valid().to_pylist()
    out = [to_json(m, x, tz) if ok else None
           for ok, m, x in zip(valid, meta.to_pylist(), val.to_pylist())]
    return pa.array(out, pa.string())
