"""A generic reader and writer of Thrift's compact protocol, for the few Parquet structures pyarrow does not expose.

Why: pyarrow 26 does not give a column chunk's page-index locations, nor its OffsetIndex / ColumnIndex, nor a way
to decode part of a column chunk (page_index.py needs all three). The Parquet footer and page indexes are Thrift
structs in the compact protocol; this decodes them into plain values keyed by field id, keeping each value's wire
type so a changed struct can be written back (the footer of a one-column file made of some of a chunk's pages).

A struct is a `dict[int, Field]` (field id -> (wire type, value)); a list is `(element wire type, [values])`; a
map is kept as raw `(key type, value type, [(k, v)])`; binary is `bytes`, booleans `bool`, numbers `int` / `float`.
Malformed input raises `ThriftError` (callers fall back to reading without the page index).
"""

from __future__ import annotations

import struct
from typing import Any

from ...errors import DeltaError

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)

Field = tuple[int, Any]
Struct = dict[int, Field]


class ThriftError(DeltaError):
    """Bytes that are not the Thrift compact encoding expected."""


class Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ThriftError("truncated Thrift data")
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise ThriftError("varint too long")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, wire: int) -> Any:
        if wire in (TRUE, FALSE):  # a list element (a field's boolean is its header's type)
            return self.byte() == TRUE
        if wire == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if wire in (I16, I32, I64):
            return self.zigzag()
        if wire == DOUBLE:
            if self.pos + 8 > len(self.data):
                raise ThriftError("truncated double")
            v = struct.unpack_from("<d", self.data, self.pos)[0]
            self.pos += 8
            return v
        if wire == BINARY:
            n = self.varint()
            if self.pos + n > len(self.data):
                raise ThriftError("truncated binary")
            v = self.data[self.pos : self.pos + n]
            self.pos += n
            return bytes(v)
        if wire in (LIST, SET):
            head = self.byte()
            size, elem = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            return (elem, [self.value(elem) for _ in range(size)])
        if wire == MAP:
            size = self.varint()
            if not size:
                return (0, 0, [])
            kv = self.byte()
            kt, vt = kv >> 4, kv & 0x0F
            return (kt, vt, [(self.value(kt), self.value(vt)) for _ in range(size)])
        if wire == STRUCT:
            return self.struct()
        raise ThriftError(f"unknown Thrift compact type {wire}")

    def struct(self) -> Struct:
        out: Struct = {}
        last = 0
        while True:
            head = self.byte()
            wire = head & 0x0F
            if wire == STOP:
                return out
            delta = head >> 4
            fid = last + delta if delta else self.zigzag()
            if wire in (TRUE, FALSE):
                out[fid] = (TRUE, wire == TRUE)
            else:
                out[fid] = (wire, self.value(wire))
            last = fid


def read_struct(data: bytes, pos: int = 0) -> tuple[Struct, int]:
    """The struct at `pos` and the position after it."""
    r = Reader(data, pos)
    s = r.struct()
    return s, r.pos


class Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def varint(self, n: int) -> None:
        while True:
            if n < 0x80:
                self.out.append(n)
                return
            self.out.append((n & 0x7F) | 0x80)
            n >>= 7

    def zigzag(self, n: int) -> None:
        self.varint((n << 1) ^ (n >> 63))

    def value(self, wire: int, v: Any) -> None:
        if wire in (TRUE, FALSE):
            self.out.append(TRUE if v else FALSE)
        elif wire == BYTE:
            self.out.append(v & 0xFF)
        elif wire in (I16, I32, I64):
            self.zigzag(int(v))
        elif wire == DOUBLE:
            self.out += struct.pack("<d", v)
        elif wire == BINARY:
            self.varint(len(v))
            self.out += v
        elif wire in (LIST, SET):
            elem, items = v
            if len(items) < 15:
                self.out.append((len(items) << 4) | elem)
            else:
                self.out.append(0xF0 | elem)
                self.varint(len(items))
            for item in items:
                self.value(elem, item)
        elif wire == MAP:
            kt, vt, items = v
            self.varint(len(items))
            if items:
                self.out.append((kt << 4) | vt)
                for k, x in items:
                    self.value(kt, k)
                    self.value(vt, x)
        elif wire == STRUCT:
            self.struct(v)
        else:
            raise ThriftError(f"unknown Thrift compact type {wire}")

    def struct(self, s: Struct) -> None:
        last = 0
        for fid in sorted(s):
            wire, v = s[fid]
            head = (FALSE if not v else TRUE) if wire in (TRUE, FALSE) else wire
            if 0 < fid - last <= 15:
                self.out.append(((fid - last) << 4) | head)
            else:
                self.out.append(head)
                self.zigzag(fid)
            if wire not in (TRUE, FALSE):
                self.value(wire, v)
            last = fid
        self.out.append(STOP)


def write_struct(s: Struct) -> bytes:
    w = Writer()
    w.struct(s)
    return bytes(w.out)


__all__ = ["Field", "Struct", "ThriftError", "read_struct", "write_struct", "LIST", "STRUCT", "I32", "I64",
           "BINARY", "TRUE"]
