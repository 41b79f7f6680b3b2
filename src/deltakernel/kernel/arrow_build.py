"""Building Arrow arrays and scalars without `pa.array` / `pa.scalar`.

pyarrow imports pandas (~0.1-0.9 s) on its first conversion of a Python or numpy object (pa.array, pa.scalar,
a Python literal passed to a compute function). Opening a table, planning a scan and evaluating SQL literals
build their arrays from buffers instead, so they do not pay for that import (benchmarks/bench_time_travel.py,
bench_dml.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

_INT64, _INT32, _STRING, _LARGE_BINARY = pa.int64(), pa.int32(), pa.string(), pa.large_binary()
_NP_DTYPES = {_INT64: np.int64, _INT32: np.int32, pa.uint64(): np.uint64, pa.float64(): np.float64}


def np_to_arrow(values: object, typ: pa.DataType = _INT64, mask: object = None) -> pa.Array:
    """A fixed-width Arrow array from numpy/list data (`mask` True = null), without pa.array."""
    arr = np.ascontiguousarray(values, dtype=_NP_DTYPES[typ])
    validity = None
    if mask is not None:
        valid = ~np.asarray(mask, dtype=np.bool_)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, len(arr), [validity, pa.py_buffer(arr)])


def bool_to_arrow(values: object) -> pa.Array:
    arr = np.asarray(values, dtype=np.bool_)
    return pa.Array.from_buffers(pa.bool_(), len(arr), [None, pa.py_buffer(np.packbits(arr, bitorder="little"))])


def bytes_to_arrow(blobs: Sequence[bytes], typ: pa.DataType = _LARGE_BINARY) -> pa.Array:
    """A (large_)binary/string array of `blobs`, one copy, without pa.array."""
    large = typ in (pa.large_binary(), pa.large_string())
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum(np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs)), out=offsets[1:])
    return pa.Array.from_buffers(typ, len(blobs), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(blobs))])


def arrow_to_np(arr: pa.Array) -> npt.NDArray[Any]:
    """A numpy view/copy of a fixed-width or boolean array without nulls (Array.to_numpy imports pandas)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    n, off = len(arr), arr.offset
    if arr.null_count:
        raise ValueError("arrow_to_np needs an array without nulls")
    buf = arr.buffers()[1]
    if pa.types.is_boolean(arr.type):
        if n == 0:
            return np.zeros(0, dtype=np.bool_)
        bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
        return bits[off : off + n].astype(np.bool_)
    if arr.type not in _NP_DTYPES:
        return np.asarray(arr.to_numpy(zero_copy_only=False))
    dtype = np.dtype(_NP_DTYPES[arr.type])
    if n == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(buf, dtype=dtype, count=off + n)[off:]


def str_scalar(value: str, typ: pa.DataType = _STRING) -> pa.Scalar:
    return bytes_to_arrow([value.encode()], typ)[0]


def null_scalar(typ: pa.DataType) -> pa.Scalar:
    return pa.nulls(1, typ)[0]


def int_scalar(value: int, typ: pa.DataType = _INT64) -> pa.Scalar:
    return np_to_arrow([value], typ)[0]




_NUMERIC: dict[pa.DataType, Any] = {
    pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
    pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
    pa.float32(): np.float32, pa.float64(): np.float64,
}


def scalar(value: Any, type: pa.DataType | None = None) -> pa.Scalar:
    """`pa.scalar(value, type)` for the common cases (None, bool, numbers, strings) without importing pandas;
    anything else goes to `pa.scalar`."""
    if value is None:
        return pa.nulls(1, type if type is not None else pa.null())[0]
    if isinstance(value, bool) and (type is None or type == pa.bool_()):
        return bool_to_arrow([value])[0]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        typ = type if type is not None else (pa.int64() if isinstance(value, int) else pa.float64())
        dtype = _NUMERIC.get(typ)
        if dtype is not None:
            try:
                arr = np.array([value], dtype=dtype)
            except OverflowError:
                return pa.scalar(value, typ)
            if arr[0] == value:  # no silent wrap-around or truncation: pa.scalar raises for those
                return pa.Array.from_buffers(typ, 1, [None, pa.py_buffer(arr)])[0]
    if isinstance(value, str) and (type is None or type in (pa.string(), pa.large_string())):
        return str_scalar(value, type if type is not None else _STRING)
    return pa.scalar(value, type)


def broadcast(value: pa.Scalar, n: int) -> pa.Array:
    """`n` copies of a scalar, built in C++ (no Python list of n values); `pa.repeat` refuses n=0 for nested
    types, so an empty array of the type is returned then."""
    return pa.repeat(value, n) if n else pa.nulls(0, value.type)
