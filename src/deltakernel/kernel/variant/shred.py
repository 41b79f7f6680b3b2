"""Shredding a variant column into the Parquet layout (`metadata`, `value`, `typed_value`), column-wise.

Why column-wise: a write of millions of rows cannot afford a Python step per variant. Every level of the
shredding schema works on *slots* - one variant value per row (or per array element) located in the column's
value buffer by its start offset - and reads headers, sizes, field ids and offsets of all slots at once with
numpy (`_uint`). Scalars are decoded into typed Arrow columns in bulk, object fields are found by comparing
each object's field ids with the key's id in that row's metadata (looked up once per distinct metadata), and
the fields a schema does not shred are re-assembled into residual objects with the same gathers the reader's
unshredding uses (`gather.py`).

What goes to `typed_value` (the writer's choice under the Parquet spec): only values whose variant type the
typed column holds exactly - any integer width in a `long` column, a decimal of the column's scale that fits
its precision, a string in a string column, and so on. Spark also moves integers into decimal columns and
rescales decimals when numerically equal; we keep those in `value` so every variant reads back as the same
type and scale it was written with. Integers and decimals are rebuilt at their smallest width on read (as
Spark rebuilds them), so a value written with a wider encoding than needed reads back equal but narrower.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import binary as vb
from .gather import I64, U8, Piece, concat_rows, fixed, header_piece, int_size, le_bytes, materialise
from .shred_schema import Shape, file_type, typed_type
from .unshred import MetadataIndex, binary_piece, validity

_FIXED = np.full(64, -1, np.int64)
for _t, _n in vb.FIXED_SIZE.items():
    _FIXED[_t] = _n


class _Column:
    """The value buffer of one column (padded so fixed-width reads never run past its end) and its metadata."""

    def __init__(self, value: Piece, meta: MetadataIndex) -> None:
        self.buf = np.concatenate([value.buf, np.zeros(32, np.uint8)])
        self.meta = meta


def _uint(buf: U8, pos: I64, width: I64 | int) -> I64:
    """Little-endian unsigned integers of 1-4 (or 8) bytes at `pos` (`width` per position or one for all)."""
    if len(pos) == 0:
        return np.zeros(0, np.int64)
    w = np.broadcast_to(np.asarray(width, np.int64), pos.shape)
    out = np.zeros(len(pos), np.uint64)
    for k in range(int(w.max())):
        byte = buf[pos + k].astype(np.uint64)
        out |= np.where(k < w, byte << np.uint64(8 * k), np.uint64(0))
    return out.astype(np.int64)


def _sizes(buf: U8, starts: I64) -> I64:
    """Byte length of the values at `starts` (vectorised `binary.value_size`)."""
    h = buf[starts].astype(np.int64)
    basic, rest = h & 3, h >> 2
    size = np.zeros(len(starts), np.int64)
    short = basic == vb.SHORT_STRING
    size[short] = 1 + rest[short]
    prim = basic == vb.PRIMITIVE
    var = prim & ((rest == vb.STRING) | (rest == vb.BINARY))
    size[var] = 5 + _uint(buf, starts[var] + 1, 4)
    fix = prim & ~var
    fixed_size = _FIXED[rest[fix]]
    if (fixed_size < 0).any():
        raise vb.MalformedVariantError("unknown variant primitive type")
    size[fix] = 1 + fixed_size
    for kind in (vb.OBJECT, vb.ARRAY):
        m = basic == kind
        if not m.any():
            continue
        r, s = rest[m], starts[m]
        large = (r >> (4 if kind == vb.OBJECT else 2)) & 1
        osize = (r & 3) + 1
        nsize = np.where(large == 1, 4, 1)
        n = _uint(buf, s + 1, nsize)
        ids = n * (((r >> 2) & 3) + 1) if kind == vb.OBJECT else 0
        offs_at = s + 1 + nsize + ids
        data = offs_at + (n + 1) * osize
        size[m] = data - s + _uint(buf, offs_at + n * osize, osize)
    return size


def _binary(buf: U8, starts: I64, lens: I64, valid: np.ndarray) -> pa.Array:
    """A nullable binary array of `buf[starts:starts+lens]` where `valid`."""
    lens = np.where(valid, lens, 0)
    data, offsets = concat_rows([Piece(buf, starts, lens)])
    return _from_parts(pa.binary(), data, offsets, valid)


def _from_parts(t: pa.DataType, data: U8, offsets: I64, valid: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    big = offsets[-1] >= 2**31
    off = pa.py_buffer(offsets if big else offsets.astype(np.int32))
    typ = (pa.large_binary() if t == pa.binary() else pa.large_string()) if big else t
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    arr = pa.Array.from_buffers(typ, n, [mask, off, pa.py_buffer(data)], null_count=-1 if mask else 0)
    return arr.cast(t) if big else arr


def _nulls(n: int, t: pa.DataType) -> pa.Array:
    return pa.nulls(n, t)


# ----------------------------------------------------------------------------- scalars
def _scalar(col: _Column, starts: I64, present: np.ndarray, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """(typed column, which slots it holds) for scalar type `t`; other present slots go to `value`."""
    buf = col.buf
    n = len(starts)
    s = np.where(present, starts, 0)
    h = buf[s].astype(np.int64)
    basic, tid = h & 3, h >> 2
    prim = present & (basic == vb.PRIMITIVE)
    mask = np.zeros(n, bool)
    if pa.types.is_boolean(t):
        mask = prim & ((tid == vb.TRUE) | (tid == vb.FALSE))
        return pa.array(tid == vb.TRUE, pa.bool_(), mask=~mask), mask
    if pa.types.is_integer(t):  # any integer width that holds the value (Spark's rule)
        width = np.select([tid == vb.INT8, tid == vb.INT16, tid == vb.INT32, tid == vb.INT64], [1, 2, 4, 8], 0)
        mask = prim & (width > 0)
        raw = _uint(buf, s + 1, np.where(mask, width, 1)).astype(np.uint64)
        bits = (np.where(mask, width, 8) * 8).astype(np.uint64)
        vals = raw.astype(np.int64)
        small = bits < 64
        sign = np.uint64(1) << (bits[small] - np.uint64(1))
        vals[small] = ((raw[small] ^ sign).astype(np.int64) - sign.astype(np.int64))
        if t.bit_width < 64:
            lim = 1 << (t.bit_width - 1)
            mask &= (vals >= -lim) & (vals < lim)
        return pa.array(np.where(mask, vals, 0), pa.int64(), mask=~mask).cast(t), mask
    if pa.types.is_decimal(t):
        width = np.select([tid == vb.DECIMAL4, tid == vb.DECIMAL8, tid == vb.DECIMAL16], [4, 8, 16], 0)
        scale = buf[s + 1].astype(np.int64)
        mask = prim & (width > 0) & (scale == t.scale)
        return _decimals(buf, s, width, mask, t)
    if pa.types.is_string(t):
        long_str = prim & (tid == vb.STRING)
        short = present & (basic == vb.SHORT_STRING)
        mask = long_str | short
        body_start = np.where(short, s + 1, s + 5)
        body_len = np.where(short, tid, np.where(long_str, _uint(buf, s + 1, np.where(long_str, 4, 1)), 0))
        data, offsets = concat_rows([Piece(buf, body_start, np.where(mask, body_len, 0))])
        return _from_parts(pa.string(), data, offsets, mask), mask
    if pa.types.is_binary(t):
        mask = prim & (tid == vb.BINARY)
        body_len = np.where(mask, _uint(buf, s + 1, np.where(mask, 4, 1)), 0)
        data, offsets = concat_rows([Piece(buf, s + 5, body_len)])
        return _from_parts(pa.binary(), data, offsets, mask), mask
    fixed_types = [(pa.float64(), vb.DOUBLE, "<f8", 8), (pa.float32(), vb.FLOAT, "<f4", 4),
                   (pa.date32(), vb.DATE, "<i4", 4), (pa.timestamp("us", tz="UTC"), vb.TIMESTAMP, "<i8", 8),
                   (pa.timestamp("us"), vb.TIMESTAMP_NTZ, "<i8", 8)]
    for typ, want, dtype, w in fixed_types:
        if t == typ:
            mask = prim & (tid == want)
            idx = (np.where(mask, s + 1, 0)[:, None] + np.arange(w)).reshape(-1)
            raw = np.ascontiguousarray(buf[idx]).view(dtype)
            phys = pa.array(raw, mask=~mask)
            return (phys if typ in (pa.float64(), pa.float32()) else phys.view(typ)), mask
    raise vb.MalformedVariantError(f"no variant shredding for Arrow type {t}")


def _decimals(buf: U8, s: I64, width: I64, mask: np.ndarray, t: pa.DataType) -> tuple[pa.Array, np.ndarray]:
    """Variant decimals (scale byte, then 4/8/16 little-endian bytes) as Arrow decimal128, sign-extended."""
    n = len(s)
    w = np.where(mask, width, 0)
    raw = buf[(s + 2)[:, None] + np.arange(16)]
    top = raw[np.arange(n), np.maximum(w - 1, 0)]
    fill = np.where((w > 0) & (top >= 0x80), 0xFF, 0).astype(np.uint8)[:, None]
    raw = np.ascontiguousarray(np.where(np.arange(16)[None, :] < w[:, None], raw, fill).astype(np.uint8))
    if t.precision <= 18:  # a decimal16 may not fit decimal(18, s)
        halves = raw.view("<i8").reshape(n, 2)
        low, high = halves[:, 0], halves[:, 1]
        mask = mask & (high == (low >> 63)) & (low > -10**18) & (low < 10**18)
    bitmap = None if mask.all() else pa.py_buffer(np.packbits(mask, bitorder="little"))
    arr = pa.Array.from_buffers(pa.decimal128(t.precision, t.scale), n, [bitmap, pa.py_buffer(raw.reshape(-1))],
                                null_count=-1 if bitmap is not None else 0)
    return arr, mask


# ----------------------------------------------------------------------------- groups
def _group(col: _Column, starts: I64, present: np.ndarray, rows: I64, shape: Shape
           ) -> tuple[pa.Array, pa.Array | None]:
    """(`value`, `typed_value`) of present slots under `shape` (absent slots: both null)."""
    n = len(starts)
    s = np.where(present, starts, 0)
    if shape.kind == "variant":
        return _binary(col.buf, s, _sizes(col.buf, s) * present, present), None
    if shape.kind == "scalar":
        assert shape.arrow is not None
        typed, held = _scalar(col, s, present, shape.arrow)
        rest = present & ~held
        value = _binary(col.buf, s, np.where(rest, _sizes(col.buf, s), 0), rest) if rest.any() \
            else _nulls(n, pa.binary())
        return value, typed
    if shape.kind == "object":
        return _object(col, s, present, rows, shape)
    return _array(col, s, present, rows, shape)


def _container(buf: np.ndarray, s: I64, present: np.ndarray, basic_type: int, *, large_bit: int
               ) -> tuple[np.ndarray, np.ndarray, I64, I64, I64, I64, I64]:
    """Decode the headers of the variant slots at `s` that are containers of `basic_type` (object or array):
    (is that container, present but another type, the header's type-specific bits, element-count width,
    element count, then one entry per element of every such slot: its slot and its index in the slot)."""
    h = buf[s].astype(np.int64)
    is_kind = present & ((h & 3) == basic_type)
    rest = h >> 2
    nsize = np.where((rest >> large_bit) & 1, 4, 1)
    count = np.where(is_kind, _uint(buf, s + 1, nsize), 0)
    eslot = np.repeat(np.arange(len(s), dtype=np.int64), count)
    ek = np.arange(len(eslot), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    return is_kind, present & ~is_kind, rest, nsize, count, eslot, ek


def _object(col: _Column, s: I64, present: np.ndarray, rows: I64, shape: Shape) -> tuple[pa.Array, pa.Array]:
    buf, n = col.buf, len(s)
    # object header: offset size (2 bits), field id size (2 bits), is_large (1 bit)
    is_obj, other, rest, nsize, count, eslot, ek = _container(buf, s, present, vb.OBJECT, large_bit=4)
    osize, isize = (rest & 3) + 1, ((rest >> 2) & 3) + 1
    ids_at = s + 1 + nsize
    offs_at = ids_at + count * isize
    data_at = offs_at + (count + 1) * osize
    eid = _uint(buf, ids_at[eslot] + ek * isize[eslot], isize[eslot])
    estart = data_at[eslot] + _uint(buf, offs_at[eslot] + ek * osize[eslot], osize[eslot])
    shredded = np.zeros(len(eslot), bool)
    children, names = [], []
    for name, sub in shape.fields:
        want = col.meta.ids(name, rows)  # the key's id in each slot's metadata (-1: not there)
        hit = eid == want[eslot]
        shredded |= hit
        cpresent = np.zeros(n, bool)
        cstart = np.zeros(n, np.int64)
        cpresent[eslot[hit]] = True
        cstart[eslot[hit]] = estart[hit]
        value, typed = _group(col, cstart, cpresent, rows, sub)
        arrays = [value] if typed is None else [value, typed]
        children.append(pa.StructArray.from_arrays(arrays, names=["value", "typed_value"][:len(arrays)]))
        names.append(name)
    fields = [pa.field(nm, c.type, nullable=False) for nm, c in zip(names, children)]
    typed = pa.StructArray.from_arrays(children, fields=fields, mask=pa.array(~is_obj))
    # `value`: the whole variant for non-objects, the unshredded fields (an object) for objects that have some
    residual = ~shredded
    value = _residual(col, n, eslot[residual], eid[residual], estart[residual], other, s)
    return value, typed


def _residual(col: _Column, n: int, eslot: I64, eid: I64, estart: I64, other: np.ndarray, s: I64) -> pa.Array:
    """Per slot: the residual object of its unshredded fields (in stored, i.e. key, order), the whole value for
    non-object slots, null otherwise."""
    buf = col.buf
    has = np.zeros(n, bool)
    has[eslot] = True
    if not has.any():
        if not other.any():
            return _nulls(n, pa.binary())
        return _binary(buf, s, np.where(other, _sizes(buf, s), 0), other)
    keep = np.flatnonzero(has | other)
    if len(keep) == n:
        data, offsets = _residual_bytes(buf, n, eslot, eid, estart, other, s, has)
        return _from_parts(pa.binary(), data, offsets, has | other)
    # usually few rows have a residual: assemble those rows only, then place them
    where = np.full(n, -1, np.int64)
    where[keep] = np.arange(len(keep), dtype=np.int64)
    data, part = _residual_bytes(buf, len(keep), where[eslot], eid, estart, other[keep], s[keep], has[keep])
    lens = np.zeros(n, np.int64)
    lens[keep] = np.diff(part)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    return _from_parts(pa.binary(), data, offsets, has | other)


def _residual_bytes(buf: U8, n: int, eslot: I64, eid: I64, estart: I64, other: np.ndarray, s: I64,
                    has: np.ndarray) -> tuple[U8, I64]:
    """(data, offsets) of `_residual`'s values for `n` slots that each have a residual or are not objects."""
    count = np.bincount(eslot, minlength=n).astype(np.int64)
    elen = _sizes(buf, estart)
    total = np.bincount(eslot, weights=elen, minlength=n).astype(np.int64)
    maxid = np.zeros(n, np.int64)
    np.maximum.at(maxid, eslot, eid)
    isize, osize = int_size(maxid), int_size(total)
    large = count > 0xFF
    before = np.cumsum(elen) - elen  # running offset within the slot
    first = np.repeat(np.cumsum(count) - count, count)
    rel = before - (np.cumsum(elen) - elen)[first]
    ids = materialise(fixed(le_bytes(eid, 4), isize[eslot]))
    offs = materialise(fixed(le_bytes(rel, 4), osize[eslot]))
    data = materialise(Piece(buf, estart, elen))

    def per_slot(p: Piece) -> Piece:
        ends = np.concatenate([p.starts, [len(p.buf)]]).astype(np.int64)
        lo = np.zeros(n, np.int64)
        hi = np.zeros(n, np.int64)
        first_e = np.cumsum(count) - count
        lo[has] = ends[first_e[has]]
        hi[has] = ends[(first_e + count)[has]]
        return Piece(p.buf, lo, hi - lo)

    header = (large.astype(np.int64) << 6) | ((isize - 1) << 4) | ((osize - 1) << 2) | vb.OBJECT
    whole = np.where(other, _sizes(buf, s), 0)
    return concat_rows([
        Piece(header_piece(header).buf, np.arange(n, dtype=np.int64), has.astype(np.int64)),
        fixed(le_bytes(count, 4), np.where(has, np.where(large, 4, 1), 0)),
        per_slot(ids), per_slot(offs),
        fixed(le_bytes(total, 4), np.where(has, osize, 0)),
        per_slot(data),
        Piece(buf, s, whole),  # non-object slots: the variant as it is
    ])


def _array(col: _Column, s: I64, present: np.ndarray, rows: I64, shape: Shape) -> tuple[pa.Array, pa.Array]:
    buf, n = col.buf, len(s)
    # array header: offset size (2 bits), is_large (1 bit)
    is_arr, other, rest, nsize, count, eslot, ek = _container(buf, s, present, vb.ARRAY, large_bit=2)
    osize = (rest & 3) + 1
    offs_at = s + 1 + nsize
    data_at = offs_at + (count + 1) * osize
    estart = data_at[eslot] + _uint(buf, offs_at[eslot] + ek * osize[eslot], osize[eslot])
    assert shape.element is not None
    value, typed = _group(col, estart, np.ones(len(eslot), bool), rows[eslot], shape.element)
    arrays = [value] if typed is None else [value, typed]
    elem = pa.StructArray.from_arrays(arrays, names=["value", "typed_value"][:len(arrays)])
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(count, out=offsets[1:])
    list_type = typed_type(shape)
    lst = pa.ListArray.from_arrays(pa.array(offsets), elem, type=list_type, mask=pa.array(~is_arr))
    whole = np.where(other, _sizes(buf, s), 0)
    return (_binary(buf, s, whole, other) if other.any() else _nulls(n, pa.binary())), lst


# ----------------------------------------------------------------------------- top level
def shred(col: pa.Array, shape: Shape) -> pa.StructArray:
    """An unshredded variant column (`struct<metadata, value>`) in the shredded layout of `shape`; null rows
    stay null (their required `metadata` slot holds empty bytes, never read)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    valid = validity(col)
    metadata = col.field("metadata")
    meta = MetadataIndex(metadata)
    value = binary_piece(col.field("value"))
    c = _Column(value, meta)
    present = valid & (value.lens > 0)
    v, typed = _group(c, value.starts, present, meta.rows, shape)
    if metadata.null_count:
        metadata = metadata.fill_null(b"")
    arrays = [metadata, v] if typed is None else [metadata, v, typed]
    t = file_type(shape)
    return pa.StructArray.from_arrays(arrays, fields=list(t), mask=None if valid.all() else pa.array(~valid)) \
        if n else pa.array([], t)


__all__ = ["shred"]
