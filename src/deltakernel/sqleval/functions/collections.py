"""Spark SQL array and map functions for the Arrow evaluator (`evaluator.py`): `array_contains`, `size` /
`cardinality`, `element_at` / `try_element_at`, `get`, `a[i]` / `m[key]`, `map_keys`, `map_values`,
`map_contains_key`.

Spark semantics with ANSI mode off (checked against pyspark 4): an index out of range is NULL (`element_at`
is 1-based and counts from the end when negative, index 0 is an error; `[]` and `get` are 0-based),
`size(NULL)` is -1, `array_contains` is NULL when the value is absent but the array holds a NULL. Lists are
handled through their flat values and offsets (Arrow's list kernels, numpy scatter for the per-row result):
no Python loop per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InvalidFilterError
from ...kernel.arrow_build import arrow_to_np, bool_to_arrow, broadcast, np_to_arrow, scalar
from ...kernel.expressions.sql.ast import Func
from ..protocol import ExpressionEvaluator, Handler, Value


def _keep_nulls(v: Value, out: Value) -> Value:
    """`out` where `v` is not NULL, NULL where it is."""
    return pc.if_else(pc.is_valid(v), out, scalar(None, out.type))


def _list_parts(v: Value) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(values, offsets, lengths) of a list array (offsets index `values`; lengths 0 for NULL lists)."""
    arr = broadcast(v, 1) if isinstance(v, pa.Scalar) else v
    lengths = pc.fill_null(pc.list_value_length(arr), 0)
    return arr.values, arr.offsets, lengths


def _check_list(v: Value, name: str) -> None:
    if not (pa.types.is_list(v.type) or pa.types.is_large_list(v.type) or pa.types.is_map(v.type)):
        raise InvalidFilterError(f"{name} needs an array (or map), got {v.type}")


def _element(ev: ExpressionEvaluator, arr: Value, index: Value, one_based: bool, name: str) -> Value:
    """Element `index` of each list (1-based and negative from the end for element_at; 0-based for `[]` and
    get); out of range is NULL. `index` may be a column."""
    values, offsets, lengths = _list_parts(arr)
    if not (pa.types.is_integer(index.type) or index.type == pa.null()):
        raise InvalidFilterError(f"{name}: the index must be an integer, got {index.type}")
    idx = ev.cast(index, pa.int64())
    if one_based:
        if pc.any(pc.equal(idx, scalar(0))).as_py():
            raise InvalidFilterError(f"{name}: SQL array indices start at 1 (an index is 0)")
        pos = pc.if_else(pc.less(idx, scalar(0)), pc.add(pc.cast(lengths, pa.int64()), idx),
                         pc.subtract(idx, scalar(1)))
    else:
        pos = idx
    ok = pc.and_(pc.greater_equal(pos, scalar(0)), pc.less(pos, pc.cast(lengths, pa.int64())))
    starts = pc.cast(offsets[:-1] if len(offsets) else offsets, pa.int64())
    flat = pc.if_else(ok, pc.add(starts, pos), scalar(None, pa.int64()))
    out = pc.take(values, flat)
    out = out if not isinstance(arr, pa.Scalar) else out[0]
    return _keep_nulls(arr, out) if not isinstance(arr, pa.Scalar) else out


def _map_lists(m: pa.Array) -> tuple[pa.Array, pa.Array]:
    """A map array as two list arrays (keys, values) with the same offsets: Arrow's list kernels do not take
    maps."""
    offsets = m.offsets
    start = int(offsets[0].as_py()) if len(offsets) else 0
    stop = int(offsets[-1].as_py()) if len(offsets) else 0
    rel = pc.subtract(offsets, scalar(start, pa.int32()))
    mask = pc.is_null(m) if m.null_count else None
    keys = pa.ListArray.from_arrays(rel, m.keys.slice(start, stop - start), mask=mask)
    items = pa.ListArray.from_arrays(rel, m.items.slice(start, stop - start), mask=mask)
    return keys, items


def _map_lookup(ev: ExpressionEvaluator, m: Value, key: Value) -> Value:
    arr = broadcast(m, 1) if isinstance(m, pa.Scalar) else m
    n = len(arr)
    klist, ilist = _map_lists(arr)
    parents = pc.list_parent_indices(klist)
    k = key if isinstance(key, pa.Scalar) else pc.take(key, parents)
    keys_u, k = ev.unify(klist.values, k)
    hit = arrow_to_np(pc.fill_null(pc.equal(keys_u, k), False))
    where = np.full(n, -1, dtype=np.int64)
    hits = np.flatnonzero(hit)  # map keys are unique: at most one hit per row
    where[arrow_to_np(parents)[hits]] = hits
    index = np_to_arrow(np.where(where < 0, 0, where), pa.int64(), mask=where < 0)
    out = pc.take(ilist.values, index)
    return out[0] if isinstance(m, pa.Scalar) else out


def _element_at(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    _check_list(a[0], e.name)
    if pa.types.is_map(a[0].type):
        return _map_lookup(ev, a[0], a[1])
    return _element(ev, a[0], a[1], True, e.name)


def _subscript(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    """`arr[i]` (0-based) / `map[key]` / `get(arr, i)`."""
    _check_list(a[0], "[]")
    if pa.types.is_map(a[0].type):
        return _map_lookup(ev, a[0], a[1])
    return _element(ev, a[0], a[1], False, e.name)


def _array_contains(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    """TRUE when found; else NULL when the array holds a NULL; else FALSE; NULL for a NULL array or value."""
    arr, value = a
    _check_list(arr, "ARRAY_CONTAINS")
    lists = broadcast(arr, 1) if isinstance(arr, pa.Scalar) else arr
    n = len(lists)
    flat = pc.list_flatten(lists)
    parent_ids = pc.list_parent_indices(lists)
    parents = arrow_to_np(parent_ids)
    v = value if isinstance(value, pa.Scalar) else pc.take(value, parent_ids)
    flat_u, v_u = ev.unify(flat, v)
    hit = arrow_to_np(pc.fill_null(pc.equal(flat_u, v_u), False))
    null = arrow_to_np(pc.is_null(flat))
    found = np.zeros(n, dtype=bool)
    found[parents[hit]] = True
    has_null = np.zeros(n, dtype=bool)
    has_null[parents[null]] = True
    out = pc.if_else(bool_to_arrow(found), scalar(True),
                     pc.if_else(bool_to_arrow(has_null), scalar(None, pa.bool_()), scalar(False)))
    out = _keep_nulls(lists, out)
    if isinstance(value, pa.Scalar):
        out = out if value.is_valid else pa.nulls(n, pa.bool_())
    else:
        out = _keep_nulls(value, out)
    return out[0] if isinstance(arr, pa.Scalar) else out


def _size(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    v = a[0]
    if v.type == pa.null():
        return scalar(-1, pa.int32())
    _check_list(v, e.name)
    if pa.types.is_map(v.type):
        v = _map_lists(broadcast(v, 1) if isinstance(v, pa.Scalar) else v)[0] if not isinstance(v, pa.Scalar) \
            else _map_lists(broadcast(v, 1))[0][0]
    return pc.fill_null(pc.cast(pc.list_value_length(v), pa.int32()), scalar(-1, pa.int32()))  # non-ANSI


def _map_part(items: bool) -> Handler:
    def part(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
        m = a[0]
        if not pa.types.is_map(m.type):
            raise InvalidFilterError(f"{e.name} needs a map, got {m.type}")
        arr = broadcast(m, 1) if isinstance(m, pa.Scalar) else m
        out = _map_lists(arr)[1 if items else 0]
        return out[0] if isinstance(m, pa.Scalar) else out
    return part


def _map_contains_key(ev: ExpressionEvaluator, a: list[Value], e: Func) -> Value:
    keys = _map_part(False)(ev, a[:1], e)
    return _array_contains(ev, [keys, a[1]], e)


FUNCTIONS: dict[str, tuple[int, int, Handler]] = {
    "ARRAY_CONTAINS": (2, 2, _array_contains),
    "SIZE": (1, 1, _size),
    "CARDINALITY": (1, 1, _size),
    "ELEMENT_AT": (2, 2, _element_at),
    "TRY_ELEMENT_AT": (2, 2, _element_at),
    "GET": (2, 2, _subscript),
    "[]": (2, 2, _subscript),  # `a[i]` / `m[k]` (the parser), not callable by name
    "MAP_KEYS": (1, 1, _map_part(False)),
    "MAP_VALUES": (1, 1, _map_part(True)),
    "MAP_CONTAINS_KEY": (2, 2, _map_contains_key),
}

__all__ = ["FUNCTIONS"]
