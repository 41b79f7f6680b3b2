"""Z-order keys: rows of a bin sorted along a Morton (Z-order) curve over several columns.

Why ranks and not raw values: each column is first mapped to its *dense rank* among the bin's rows
(`pyarrow.compute.rank`, any orderable Arrow type: integers, floats, decimals, strings, binary, dates,
timestamps, booleans; nulls rank last, NaN before numbers), and the rank is scaled to the same number of bits
for every column. Interleaving the bits of those scaled ranks gives each column the same weight whatever its
range or distribution (delta-spark's range-partition ids do the same), so skewed columns, long strings that
share prefixes, and decimals need no per-type bit tricks. The z-value is one unsigned 64-bit word per row
(`64 // k` bits per column for k columns, 16 at most), its big-endian bytes are the binary z-value; one
vectorized numpy pass per bit, never a Python loop per row.

The rank is local to the bin being sorted, which is all a sort needs: OPTIMIZE sorts each bin on its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ....errors import DeltaError

#: bits per column at most (65,536 ranges per column: finer than any file layout can use)
MAX_BITS_PER_COLUMN = 16


def _orderable(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_date(t)
                or pa.types.is_timestamp(t) or pa.types.is_boolean(t) or pa.types.is_null(t)
                or pa.types.is_time(t))


def check_zorder_type(name: str, t: pa.DataType) -> None:
    """Refuse columns that have no order (structs, lists, maps) before anything is read."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if not _orderable(t):
        raise DeltaError(f"cannot z-order by column {name!r}: type {t} has no order (use a primitive column)")


def scaled_ranks(column: pa.Array | pa.ChunkedArray, bits: int) -> np.ndarray:
    """Dense ranks of `column` scaled to [0, 2**bits) as uint64 (equal values share a rank; nulls last)."""
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if pa.types.is_null(arr.type):
        return np.zeros(n, dtype=np.uint64)
    check_zorder_type("?", arr.type)
    ranks = pc.rank(arr, sort_keys="ascending", tiebreaker="dense").to_numpy(zero_copy_only=False)
    ranks = ranks.astype(np.uint64) - np.uint64(1)  # 0-based
    distinct = int(ranks.max()) + 1
    if distinct <= 1:
        return np.zeros(n, dtype=np.uint64)
    # spread the `distinct` ranks over the full 2**bits range: every column weighs the same in the curve
    scaled = (ranks.astype(np.float64) * float(1 << bits) / float(distinct)).astype(np.uint64)
    out: np.ndarray = np.minimum(scaled, np.uint64((1 << bits) - 1))
    return out


def zorder_key(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """The Z-order value of every row of `table` over `columns` (uint64; sorting by it clusters the rows)."""
    if not columns:
        raise DeltaError("Z-order needs at least one column")
    k = len(columns)
    if k > 64:
        raise DeltaError(f"Z-order supports at most 64 columns, got {k}")
    bits = min(MAX_BITS_PER_COLUMN, 64 // k)
    ranks = [scaled_ranks(table.column(c), bits) for c in columns]
    key = np.zeros(table.num_rows, dtype=np.uint64)
    # bit b of column j goes to position (b * k + (k - 1 - j)): most significant bits of all columns first,
    # the first column leading within each group
    for b in range(bits - 1, -1, -1):
        for j, r in enumerate(ranks):
            bit = (r >> np.uint64(b)) & np.uint64(1)
            key |= bit << np.uint64(b * k + (k - 1 - j))
    return key


def zorder_binary(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    """The z-values as Arrow binary (8 big-endian bytes per row): byte order equals curve order."""
    key = zorder_key(table, columns).astype(">u8")
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(key), [None, pa.py_buffer(key.tobytes())])


def zorder_indices(table: pa.Table, columns: Sequence[str]) -> pa.Array:
    """Row indices that sort `table` along the Z-order curve (stable: ties keep their input order)."""
    key = zorder_key(table, columns)
    return pa.array(np.argsort(key, kind="stable"), type=pa.int64())


def zorder_sort(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    """`table` sorted along the Z-order curve over `columns`."""
    if table.num_rows <= 1:
        return table
    return table.take(zorder_indices(table, columns))


def key_bits(num_columns: int) -> int:
    """Bits of the z-value used for `num_columns` columns."""
    return min(MAX_BITS_PER_COLUMN, 64 // num_columns) * num_columns


def zorder_split(table: pa.Table, columns: Sequence[str], parts: int) -> list[pa.Table]:
    """`table` sorted along the curve and cut into `parts` slices of about equal rows, each cut moved (by at
    most half a slice) to the nearest boundary of the curve's cells at that depth: a slice that straddles two
    cells spans both cells' ranges in every column, which costs skipping; one that stays inside its cell
    does not."""
    n = table.num_rows
    parts = max(1, min(parts, n))
    if n <= 1:
        return [table]
    key = zorder_key(table, columns)
    order = np.argsort(key, kind="stable")
    data = table.take(pa.array(order, type=pa.int64()))
    if parts == 1:
        return [data]
    depth = min(key_bits(len(columns)), max(1, int(np.ceil(np.log2(parts)))))
    prefix = key[order] >> np.uint64(key_bits(len(columns)) - depth)
    boundaries = np.flatnonzero(np.diff(prefix)) + 1  # first row of each new cell
    step = n / parts
    cuts = [0]
    for i in range(1, parts):
        target = round(i * step)
        if boundaries.size:
            j = int(np.searchsorted(boundaries, target))
            near = [int(boundaries[x]) for x in (j - 1, j) if 0 <= x < boundaries.size]
            best = min(near, key=lambda b: abs(b - target))
            if abs(best - target) <= step / 2:
                target = best
        if target > cuts[-1] and target < n:
            cuts.append(target)
    cuts.append(n)
    return [data.slice(a, b - a) for a, b in itertools.pairwise(cuts)]


__all__ = ["MAX_BITS_PER_COLUMN", "check_zorder_type", "key_bits", "scaled_ranks", "zorder_binary",
           "zorder_indices", "zorder_key", "zorder_sort", "zorder_split"]
