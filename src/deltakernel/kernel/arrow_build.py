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
import pyarrow.compute as pc

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


def _json_type(t: pa.DataType) -> pa.DataType:
    """`t` with every map replaced by list<struct<key, value>> (what `pyarrow.json` can parse)."""
    if pa.types.is_map(t):
        entry = pa.struct([pa.field("key", _json_type(t.key_type)), pa.field("value", _json_type(t.item_type))])
        return pa.list_(entry)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_json_type(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        make = pa.large_list if pa.types.is_large_list(t) else pa.list_
        return make(t.value_field.with_type(_json_type(t.value_type)))
    return t


def _json_value(v: Any, t: pa.DataType) -> Any:
    if v is None:
        return None
    if pa.types.is_map(t):
        items = v.items() if isinstance(v, dict) else v
        return [{"key": _json_value(k, t.key_type), "value": _json_value(x, t.item_type)} for k, x in items]
    if pa.types.is_struct(t):
        return {f.name: _json_value(v.get(f.name), f.type) for f in t if v.get(f.name) is not None}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_json_value(x, t.value_type) for x in v]
    return v


def _restore_maps(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """Undo `_json_type` on a parsed array: rebuild maps (and the structs/lists holding them) as type `t`."""
    if arr.type == t:
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(t):
        entries = arr.flatten()
        keys = _restore_maps(entries.field("key"), t.key_type)
        values = _restore_maps(entries.field("value"), t.item_type)
        offsets = arr.offsets if arr.offset == 0 else pc.subtract(arr.offsets, arr.offsets[0])
        return pa.MapArray.from_arrays(offsets, keys, values, type=t, mask=mask)
    if pa.types.is_struct(t):
        children = [_restore_maps(arr.field(i), f.type) for i, f in enumerate(t)]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        values = _restore_maps(arr.flatten(), t.value_type)
        offsets = arr.offsets if arr.offset == 0 else pc.subtract(arr.offsets, arr.offsets[0])
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(offsets, values, type=t, mask=mask)
    return arr.cast(t)


def rows_to_table(rows: Sequence[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """`pa.Table.from_pylist(rows, schema)` for a few JSON-like rows (log actions) without importing pandas:
    the rows go through `pyarrow.json` against `schema` (maps parsed as key/value lists, then rebuilt)."""
    import json

    import pyarrow.json as pajson

    parse_schema = pa.schema([f.with_type(_json_type(f.type)) for f in schema])
    text = "".join(json.dumps({f.name: _json_value(r.get(f.name), f.type) for f in schema
                               if r.get(f.name) is not None}) + "\n" for r in rows)
    if not rows:
        return schema.empty_table()
    read_options = pajson.ReadOptions(use_threads=False, block_size=max(1 << 16, len(text) + 16))
    parse_options = pajson.ParseOptions(explicit_schema=parse_schema, unexpected_field_behavior="error")
    parsed = pajson.read_json(pa.BufferReader(text.encode()), read_options=read_options, parse_options=parse_options)
    columns = [_restore_maps(parsed.column(f.name).combine_chunks(), f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)
