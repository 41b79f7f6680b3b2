"""Bounding-box intersection, sound across the antimeridian, and the WKT points Delta stores boxes as.

Delta's geometry statistics are the box corners as WKT points: `minValues` holds `POINT(xmin ymin)`,
`maxValues` `POINT(xmax ymax)` (the geospatial RFC). A box whose xmin is greater than its xmax wraps around
the antimeridian (GeoParquet's and Parquet's convention): its x extent is [xmin, +inf) and (-inf, xmax]. Every
test here treats both the query box and the file box that way, so a wrapping box never loses a match.
"""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError

FloatArray = npt.NDArray[np.float64]
POINT_TYPE = pa.struct([pa.field("x", pa.float64()), pa.field("y", pa.float64())])
_WKT_POINT = r"^\s*POINT\s*(?:ZM|Z|M)?\s*\(\s*(?P<x>[^\s)]+)\s+(?P<y>[^\s)]+)"
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def check_box(box: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    """A query box (xmin, ymin, xmax, ymax) as floats: finite, ymin <= ymax (xmin > xmax wraps)."""
    try:
        xmin, ymin, xmax, ymax = (float(v) for v in box)
    except (TypeError, ValueError) as e:
        raise InvalidFilterError(f"a bounding box is (xmin, ymin, xmax, ymax) numbers, got {box!r}") from e
    if not all(math.isfinite(v) for v in (xmin, ymin, xmax, ymax)) or ymin > ymax:
        raise InvalidFilterError(f"invalid bounding box {box!r}: finite values with ymin <= ymax needed")
    return xmin, ymin, xmax, ymax


def x_overlaps(amin: FloatArray, amax: FloatArray, bmin: float, bmax: float) -> npt.NDArray[np.bool_]:
    """Whether x extents overlap, per element of (amin, amax), either side wrapping when min > max."""
    a_wraps, b_wraps = amin > amax, bmin > bmax
    plain = (amin <= bmax) & (bmin <= amax)  # neither wraps
    if b_wraps:  # b = [bmin, inf) | (-inf, bmax]: a plain range meets it unless inside (bmax, bmin)
        return np.where(a_wraps, True, (amax >= bmin) | (amin <= bmax))
    return np.where(a_wraps, (bmax >= amin) | (bmin <= amax), plain)


def intersects(xmin: FloatArray, ymin: FloatArray, xmax: FloatArray, ymax: FloatArray,
               box: tuple[float, float, float, float]) -> npt.NDArray[np.bool_]:
    """Per element: does the box [xmin..xmax] x [ymin..ymax] meet `box`? (NaN coordinates: False.)"""
    qx0, qy0, qx1, qy1 = box
    with np.errstate(invalid="ignore"):
        y_ok = (ymin <= qy1) & (qy0 <= ymax)
        out: npt.NDArray[np.bool_] = x_overlaps(xmin, xmax, qx0, qx1) & y_ok
    nan = np.isnan(xmin) | np.isnan(ymin) | np.isnan(xmax) | np.isnan(ymax)
    return out & ~nan


def wkt_points(values: pa.Array) -> pa.StructArray:
    """`POINT(x y)` strings (Z/M ignored) -> struct<x, y> doubles; anything else is null (no bound)."""
    if not pa.types.is_string(values.type):
        values = values.cast(pa.string())
    parts = pc.extract_regex(values, _WKT_POINT)
    mask = pc.is_null(parts).to_numpy(zero_copy_only=False)
    x, y = (pa.array([None if m or t is None or not _NUMBER.match(t) else float(t)
                      for t, m in zip(parts.field(name).to_pylist(), mask)], pa.float64()) for name in ("x", "y"))
    both = pc.and_(pc.is_valid(x), pc.is_valid(y))
    return pa.StructArray.from_arrays([x, y], fields=list(POINT_TYPE), mask=pc.invert(both))


def wkt_point(x: float, y: float) -> str:
    """The WKT text of one corner (shortest round-tripping float text)."""
    return f"POINT({_num(x)} {_num(y)})"


def _num(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 1e15 else repr(v)


# ----------------------------------------------------------------------------- the row filter
_UDF_NAME = "deltakernel_wkb_bbox_intersects"
_registered = False


def _udf(ctx: object, wkb_values: pa.Array, *box: pa.Scalar | pa.Array) -> pa.Array:
    from .wkb import bounds

    q = tuple(float((b[0] if isinstance(b, pa.Array) else b).as_py()) for b in box)
    if isinstance(wkb_values, pa.Scalar):
        wkb_values = pa.array([wkb_values.as_py()], pa.binary())
    hit = intersects(*bounds(wkb_values), q)  # type: ignore[arg-type]
    valid = pc.is_valid(wkb_values).to_numpy(zero_copy_only=False)
    return pa.array(hit, pa.bool_(), mask=~valid)


def row_filter(field: pc.Expression, box: tuple[float, float, float, float]) -> pc.Expression:
    """A pyarrow expression: TRUE where the WKB value's bounding box meets `box`, NULL for NULL values.

    A registered scalar UDF (pyarrow has no WKB kernels); registered once per process on first use.
    """
    global _registered
    if not _registered:
        try:
            pc.register_scalar_function(
                _udf, _UDF_NAME,
                {"summary": "WKB bounding box intersects a box",
                 "description": "deltakernel.geo.intersects: bbox of each WKB value meets (xmin, ymin, xmax, ymax)"},
                {"wkb": pa.binary(), "xmin": pa.float64(), "ymin": pa.float64(), "xmax": pa.float64(),
                 "ymax": pa.float64()},
                pa.bool_(),
            )
        except pa.ArrowKeyError:
            pass  # already registered (a module reload)
        _registered = True
    args = [pc.scalar(pa.scalar(v, pa.float64())) for v in box]
    return pc.Expression._call(_UDF_NAME, [field, *args])
