"""The Parquet variant binary encoding (apache/parquet-format VariantEncoding.md), decoded one value at a time.

Why here: unshredding a partially shredded object (typed fields plus a residual `value` object) must merge the
residual's fields, and `to_json` must walk a value; both need the byte layout. Everything hot (typed columns to
variant bytes) is vectorised in `unshred.py`; this module is the per-value reference the rest is checked against.

Layout summary. metadata: header (version 1 in bits 0-3, sorted flag bit 4, offset size - 1 in bits 6-7),
dictionary size, size + 1 offsets, UTF-8 key bytes. value: header byte, basic type in bits 0-1 (0 primitive,
1 short string, 2 object, 3 array), the other six bits type-specific; integers little-endian.
"""

from __future__ import annotations

import datetime as _dt
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...errors import DeltaError

PRIMITIVE, SHORT_STRING, OBJECT, ARRAY = 0, 1, 2, 3

# primitive type ids (value header bits 2-7 when the basic type is PRIMITIVE)
NULL, TRUE, FALSE, INT8, INT16, INT32, INT64, DOUBLE = 0, 1, 2, 3, 4, 5, 6, 7
DECIMAL4, DECIMAL8, DECIMAL16, DATE, TIMESTAMP, TIMESTAMP_NTZ, FLOAT, BINARY = 8, 9, 10, 11, 12, 13, 14, 15
STRING, TIME_NTZ, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS, UUID = 16, 17, 18, 19, 20

#: fixed payload sizes of primitives (strings and binaries carry a 4-byte length instead)
FIXED_SIZE = {NULL: 0, TRUE: 0, FALSE: 0, INT8: 1, INT16: 2, INT32: 4, INT64: 8, DOUBLE: 8, DECIMAL4: 5,
              DECIMAL8: 9, DECIMAL16: 17, DATE: 4, TIMESTAMP: 8, TIMESTAMP_NTZ: 8, FLOAT: 4, TIME_NTZ: 8,
              TIMESTAMP_NANOS: 8, TIMESTAMP_NTZ_NANOS: 8, UUID: 16}

MAX_SHORT_STRING = 63


class MalformedVariantError(DeltaError):
    """A variant (or its shredded Parquet form) breaks the Parquet variant / shredding specification."""


def integer_size(v: int) -> int:
    """Bytes needed for an unsigned offset / id / size (1 to 4), the writer's choice in the encoding spec."""
    return 1 if v <= 0xFF else 2 if v <= 0xFFFF else 3 if v <= 0xFFFFFF else 4


def _uint(buf: bytes, pos: int, size: int) -> int:
    return int.from_bytes(buf[pos:pos + size], "little")


def metadata_keys(metadata: bytes) -> list[str]:
    """The metadata dictionary's keys, in id order."""
    if not metadata or metadata[0] & 0x0F != 1:
        raise MalformedVariantError("variant metadata has an unsupported version")
    osize = ((metadata[0] >> 6) & 0x03) + 1
    n = _uint(metadata, 1, osize)
    base = 1 + (n + 2) * osize
    offs = [_uint(metadata, 1 + (i + 1) * osize, osize) for i in range(n + 1)]
    return [metadata[base + offs[i]:base + offs[i + 1]].decode("utf-8") for i in range(n)]


def value_size(value: bytes, pos: int = 0) -> int:
    """Length in bytes of the value starting at `pos`."""
    h = value[pos]
    basic, rest = h & 0x03, h >> 2
    if basic == SHORT_STRING:
        return 1 + rest
    if basic == PRIMITIVE:
        if rest in (BINARY, STRING):
            return 5 + _uint(value, pos + 1, 4)
        if rest not in FIXED_SIZE:
            raise MalformedVariantError(f"unknown variant primitive type {rest}")
        return 1 + FIXED_SIZE[rest]
    large = (rest >> (4 if basic == OBJECT else 2)) & 1
    osize = (rest & 0x03) + 1
    nsize = 4 if large else 1
    n = _uint(value, pos + 1, nsize)
    ids = n * (((rest >> 2) & 0x03) + 1) if basic == OBJECT else 0
    start = pos + 1 + nsize + ids
    data = start + (n + 1) * osize
    return data - pos + _uint(value, start + n * osize, osize)


@dataclass(frozen=True)
class ObjectField:
    key_id: int
    start: int  # absolute position of the field's value in the buffer
    end: int


def object_fields(value: bytes, pos: int = 0) -> list[ObjectField]:
    """The fields of the object at `pos`, in the order stored (sorted by key)."""
    h = value[pos]
    if h & 0x03 != OBJECT:
        raise MalformedVariantError("variant value is not an object")
    rest = h >> 2
    osize, isize, nsize = (rest & 0x03) + 1, ((rest >> 2) & 0x03) + 1, 4 if (rest >> 4) & 1 else 1
    n = _uint(value, pos + 1, nsize)
    ids_at = pos + 1 + nsize
    offs_at = ids_at + n * isize
    data = offs_at + (n + 1) * osize
    out = []
    for i in range(n):
        start = data + _uint(value, offs_at + i * osize, osize)
        out.append(ObjectField(_uint(value, ids_at + i * isize, isize), start, start + value_size(value, start)))
    return out


def array_elements(value: bytes, pos: int = 0) -> list[tuple[int, int]]:
    """(start, end) of each element of the array at `pos`."""
    rest = value[pos] >> 2
    osize, nsize = (rest & 0x03) + 1, 4 if (rest >> 2) & 1 else 1
    n = _uint(value, pos + 1, nsize)
    offs_at = pos + 1 + nsize
    data = offs_at + (n + 1) * osize
    starts = [data + _uint(value, offs_at + i * osize, osize) for i in range(n)]
    return [(s, s + value_size(value, s)) for s in starts]


def encode_object(entries: list[tuple[str, int, bytes]]) -> bytes:
    """An object from (key, key id, encoded value) entries: sorted by key, smallest widths (as Spark writes)."""
    entries = sorted(entries, key=lambda e: e[0].encode("utf-8"))
    n = len(entries)
    data = b"".join(e[2] for e in entries)
    isize = integer_size(max((e[1] for e in entries), default=0))
    osize = integer_size(len(data))
    large = n > 0xFF
    header = ((1 if large else 0) << 6) | ((isize - 1) << 4) | ((osize - 1) << 2) | OBJECT
    out = bytearray([header])
    out += n.to_bytes(4 if large else 1, "little")
    for e in entries:
        out += e[1].to_bytes(isize, "little")
    off = 0
    for e in entries:
        out += off.to_bytes(osize, "little")
        off += len(e[2])
    out += off.to_bytes(osize, "little")
    return bytes(out + data)


# ----------------------------------------------------------------------------- decoding to Python
_EPOCH = _dt.datetime(1970, 1, 1)


def decode(metadata: bytes, value: bytes) -> Any:
    """The variant as Python values (dict / list / scalars); tests and the renderer compare with it."""
    return _decode(metadata_keys(metadata), value, 0)


def _decode(keys: list[str], v: bytes, pos: int) -> Any:
    h = v[pos]
    basic, rest = h & 0x03, h >> 2
    if basic == SHORT_STRING:
        return v[pos + 1:pos + 1 + rest].decode("utf-8")
    if basic == OBJECT:
        return {keys[f.key_id]: _decode(keys, v, f.start) for f in object_fields(v, pos)}
    if basic == ARRAY:
        return [_decode(keys, v, s) for s, _ in array_elements(v, pos)]
    return decode_primitive(rest, v, pos + 1)


def decode_primitive(type_id: int, v: bytes, p: int) -> Any:
    """One primitive's payload (at `p`, after the header) as a Python value."""
    if type_id == NULL:
        return None
    if type_id in (TRUE, FALSE):
        return type_id == TRUE
    if type_id in (INT8, INT16, INT32, INT64):
        return int.from_bytes(v[p:p + FIXED_SIZE[type_id]], "little", signed=True)
    if type_id == DOUBLE:
        return struct.unpack_from("<d", v, p)[0]
    if type_id == FLOAT:
        return struct.unpack_from("<f", v, p)[0]
    if type_id in (DECIMAL4, DECIMAL8, DECIMAL16):
        scale = v[p]
        unscaled = int.from_bytes(v[p + 1:p + FIXED_SIZE[type_id]], "little", signed=True)
        return Decimal(unscaled).scaleb(-scale)
    if type_id == DATE:
        return _dt.date(1970, 1, 1) + _dt.timedelta(days=int.from_bytes(v[p:p + 4], "little", signed=True))
    if type_id in (TIMESTAMP, TIMESTAMP_NTZ, TIME_NTZ, TIMESTAMP_NANOS, TIMESTAMP_NTZ_NANOS):
        raw = int.from_bytes(v[p:p + 8], "little", signed=True)
        if type_id == TIME_NTZ:
            return (_dt.datetime.min + _dt.timedelta(microseconds=raw)).time()
        micros, nanos = (raw, 0) if type_id in (TIMESTAMP, TIMESTAMP_NTZ) else divmod(raw, 1000)
        ts = _EPOCH + _dt.timedelta(microseconds=micros)
        tz = _dt.timezone.utc if type_id in (TIMESTAMP, TIMESTAMP_NANOS) else None
        return (ts.replace(tzinfo=tz), nanos) if nanos else ts.replace(tzinfo=tz)
    if type_id in (BINARY, STRING):
        size = int.from_bytes(v[p:p + 4], "little")
        payload = bytes(v[p + 4:p + 4 + size])
        return payload.decode("utf-8") if type_id == STRING else payload
    if type_id == UUID:
        import uuid

        return uuid.UUID(bytes=bytes(v[p:p + 16]))
    raise MalformedVariantError(f"unknown variant primitive type {type_id}")
