"""Bounding boxes of WKB values (ISO and EWKB, 2D/Z/M/ZM), for bbox statistics and the bbox row filter.

Why here and not shapely: shapely is not a dependency (docs/decisions.md), and a bounding box needs no
geometry engine - only the coordinates. Points (the common case: 21-byte little- or big-endian 2D points)
are decoded for the whole array at once with numpy; any other shape is walked value by value, each
coordinate run still read as one numpy view. Curves, surfaces and other types beyond the seven OGC simple
features raise `UnsupportedWkbError`: callers then write no bounds / refuse the filter, never guess.
"""

from __future__ import annotations

import struct

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError

FloatArray = npt.NDArray[np.float64]
_POINT_2D_SIZE = 21  # byte order (1) + type (4) + x, y (16)
_EWKB_Z, _EWKB_M, _EWKB_SRID = 0x80000000, 0x40000000, 0x20000000
_SMALL = 64  # coordinate runs up to this many vertices are read with struct, longer ones with numpy


class UnsupportedWkbError(DeltaError):
    """A WKB value this reader cannot bound (malformed, or not one of the OGC simple feature types)."""


def bounds(values: pa.Array | pa.ChunkedArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(xmin, ymin, xmax, ymax) per value; NaN for nulls and empty geometries."""
    if isinstance(values, pa.ChunkedArray):
        parts = [bounds(c) for c in values.chunks]
        if not parts:
            empty = np.empty(0, np.float64)
            return empty, empty, empty, empty
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))  # type: ignore[return-value]
    if isinstance(values, pa.ExtensionArray):
        values = values.storage
    if not pa.types.is_binary(values.type):
        values = values.cast(pa.binary())
    n = len(values)
    out = np.full((4, n), np.nan)
    if n == 0:
        return out[0], out[1], out[2], out[3]
    fast = _points(values)
    if fast is not None:
        x, y = fast
        return x, y, x.copy(), y.copy()
    for i, v in enumerate(values.to_pylist()):
        if v is None:
            continue
        box = [np.inf, np.inf, -np.inf, -np.inf]
        end = _walk(v, 0, box)
        if end != len(v):
            raise UnsupportedWkbError(f"WKB value {i} has {len(v) - end} trailing bytes")
        if box[0] <= box[2]:
            out[:, i] = box
    return out[0], out[1], out[2], out[3]


def _points(values: pa.Array) -> tuple[FloatArray, FloatArray] | None:
    """(x, y) of an array of 2D WKB points only, with one numpy gather; None when any value is not one."""
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    lengths = pc.binary_length(values).to_numpy(zero_copy_only=False)
    if not np.all(np.where(valid, lengths, _POINT_2D_SIZE) == _POINT_2D_SIZE):
        return None
    offsets = np.frombuffer(values.buffers()[1], np.int32)[values.offset:values.offset + len(values)]
    data = values.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.empty(0, np.uint8)
    starts = offsets[valid].astype(np.int64)
    rows = raw[starts[:, None] + np.arange(_POINT_2D_SIZE)]
    little = rows[:, 0] == 1
    if not np.all(little | (rows[:, 0] == 0)):
        return None
    kinds = np.where(little, rows[:, 1:5].copy().view("<u4")[:, 0], rows[:, 1:5].copy().view(">u4")[:, 0])
    if not np.all(kinds == 1):
        return None
    coords = np.where(little[:, None], rows[:, 5:].copy().view("<f8"), rows[:, 5:].copy().view(">f8"))
    x = np.full(len(values), np.nan)
    y = np.full(len(values), np.nan)
    x[valid], y[valid] = coords[:, 0], coords[:, 1]
    return x, y


def _walk(b: bytes, pos: int, box: list[float]) -> int:
    """Fold one WKB geometry at `pos` into `box` ([xmin, ymin, xmax, ymax]); returns the end position."""
    try:
        order = "<" if b[pos] == 1 else ">" if b[pos] == 0 else None
        if order is None:
            raise UnsupportedWkbError(f"bad WKB byte order {b[pos]}")
        (code,) = struct.unpack_from(order + "I", b, pos + 1)
        pos += 5
        has_z, has_m = bool(code & _EWKB_Z), bool(code & _EWKB_M)
        if code & _EWKB_SRID:
            pos += 4
        code &= 0x0FFFFFFF
        kind, dims = code % 1000, code // 1000
        if dims > 3:
            raise UnsupportedWkbError(f"unsupported WKB geometry type {code}")
        has_z, has_m = has_z or dims in (1, 3), has_m or dims in (2, 3)
        nd = 2 + has_z + has_m
        if kind == 1:
            return _coords(b, pos, 1, nd, order, box)
        if kind == 2:
            (count,) = struct.unpack_from(order + "I", b, pos)
            return _coords(b, pos + 4, count, nd, order, box)
        if kind == 3:
            (rings,) = struct.unpack_from(order + "I", b, pos)
            pos += 4
            for _ in range(rings):
                (count,) = struct.unpack_from(order + "I", b, pos)
                pos = _coords(b, pos + 4, count, nd, order, box)
            return pos
        if kind in (4, 5, 6, 7):
            (parts,) = struct.unpack_from(order + "I", b, pos)
            pos += 4
            for _ in range(parts):
                pos = _walk(b, pos, box)
            return pos
    except (struct.error, IndexError, ValueError) as e:
        raise UnsupportedWkbError(f"malformed WKB: {e}") from e
    raise UnsupportedWkbError(f"unsupported WKB geometry type {code} (only the OGC simple features)")


def _coords(b: bytes, pos: int, count: int, nd: int, order: str, box: list[float]) -> int:
    end = pos + 8 * nd * count
    if end > len(b):
        raise UnsupportedWkbError("truncated WKB coordinates")
    if not count:
        return end
    if count <= _SMALL:  # a few vertices: plain struct + min/max beat numpy's per-call overhead
        vals = struct.unpack_from(f"{order}{nd * count}d", b, pos)
        xs, ys = vals[0::nd], vals[1::nd]
        if any(x != x or y != y for x, y in zip(xs, ys)):  # POINT EMPTY is NaN, NaN
            pairs = [(x, y) for x, y in zip(xs, ys) if x == x and y == y]
            if not pairs:
                return end
            xs, ys = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        lo_x, lo_y, hi_x, hi_y = min(xs), min(ys), max(xs), max(ys)
    else:
        xy = np.frombuffer(b, dtype=order + "f8", count=nd * count, offset=pos).reshape(count, nd)[:, :2]
        finite = xy[~np.isnan(xy).any(axis=1)]
        if not len(finite):
            return end
        (lo_x, lo_y), (hi_x, hi_y) = finite.min(axis=0).tolist(), finite.max(axis=0).tolist()
    box[0], box[1] = min(box[0], lo_x), min(box[1], lo_y)
    box[2], box[3] = max(box[2], hi_x), max(box[3], hi_y)
    return end
