"""Shredded variant columns (Parquet VariantShredding.md) back to the unshredded `struct<metadata, value>`.

Why: Delta's `variantShredding` feature lets writers store paths of a variant as typed Parquet columns
(`typed_value`), keeping only what does not fit in the binary `value`. Readers must return the same variant
values as if nothing had been shredded. This module rebuilds each row's variant value from the typed columns,
column-wise (numpy gathers, see `gather.py`); only partially shredded objects (typed fields plus a residual
`value` object in the same row) are merged one row at a time, since their residual fields must be decoded.

Encoding choices (the rebuilt bytes are logically equal to what the writer shredded; byte-identical where the
writer used the same choices, which Spark's `parse_json` does for everything but object value order):
- the row's stored `metadata` is kept; every shredded field name must be in it (the spec requires it);
- integers take the smallest width holding them and decimals the smallest of decimal4/8/16 holding their digits
  (Spark's `VariantBuilder`), strings of at most 63 bytes are short strings;
- object fields are written in key order with the smallest id / offset widths.
Per the spec a row whose `value` and `typed_value` are both null is a missing object field; at the top level
and in arrays it is invalid and becomes a variant null.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import binary as vb
from .gather import I64, U8, Piece, concat_rows, fixed, gather, header_piece, int_size, le_bytes, materialise


def is_shredded(t: pa.DataType) -> bool:
    """True when a file's variant column (struct) carries a `typed_value` field."""
    return bool(pa.types.is_struct(t) and t.get_field_index("typed_value") >= 0)


def unshred(arr: pa.Array) -> pa.StructArray:
    """A shredded variant column as `struct<metadata: binary, value: binary>` (nulls kept)."""
    valid = validity(arr)
    metadata = arr.field("metadata")
    meta = MetadataIndex(metadata)
    piece, present = encode_group(arr, meta, meta.rows)
    missing = valid & ~present
    if missing.any():  # invalid per the spec; read as a variant null (a single 0x00 byte)
        nul = np.zeros(1, np.uint8)
        piece = Piece(np.concatenate([piece.buf, nul]), np.where(missing, len(piece.buf), piece.starts),
                      np.where(missing, 1, piece.lens))
    data, offsets = concat_rows([Piece(piece.buf, piece.starts, np.where(valid, piece.lens, 0))])
    value = _binary_array(data, offsets)
    mask = None if valid.all() else pa.array(~valid)
    return pa.StructArray.from_arrays([metadata, value], names=["metadata", "value"], mask=mask)


# ----------------------------------------------------------------------------- helpers
def validity(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)


def _binary_array(data: U8, offsets: I64) -> pa.Array:
    n = len(offsets) - 1
    if offsets[-1] < 2**31:
        return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                      pa.py_buffer(data)])
    return pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def binary_piece(arr: pa.Array) -> Piece:
    """The bytes of a binary / string column (null rows: length 0)."""
    if not pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.large_binary())
    bufs = arr.buffers()
    offs = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    lens = np.diff(offs) * validity(arr)
    return Piece(data, offs[:-1].astype(np.int64), lens.astype(np.int64))


class MetadataIndex:
    """The metadata column, deduplicated: key ids are looked up once per distinct metadata, not per row."""

    def __init__(self, metadata: pa.Array) -> None:
        enc = pc.dictionary_encode(metadata)
        self.rows: I64 = np.asarray(enc.indices.fill_null(0).to_numpy(zero_copy_only=False), np.int64)
        self._dicts: list[dict[str, int]] | None = None
        self._distinct = enc.dictionary
        self._cache: dict[str, I64] = {}

    def ids(self, key: str, rows: I64) -> I64:
        """The id of `key` in each row's metadata (-1 where the dictionary lacks it)."""
        if key not in self._cache:
            if self._dicts is None:
                # an empty metadata belongs to a null row (its bytes are never used)
                self._dicts = [{k: i for i, k in enumerate(vb.metadata_keys(m.as_py()))} if m.as_py() else {}
                               for m in self._distinct]
            self._cache[key] = np.array([d.get(key, -1) for d in self._dicts] or [-1], np.int64)
        per = self._cache[key]
        return per[np.minimum(rows, len(per) - 1)]

    def keys(self, distinct: int) -> list[str]:
        """The keys of one distinct metadata (`rows` values index them)."""
        return vb.metadata_keys(self._distinct[distinct].as_py())


def encode_group(node: pa.Array, meta: MetadataIndex, rows: I64) -> tuple[Piece, np.ndarray]:
    """One shredded group (`value` and / or `typed_value`): each row's variant bytes and whether it is present."""
    t = node.type
    value = node.field("value") if t.get_field_index("value") >= 0 else None
    typed = node.field("typed_value") if t.get_field_index("typed_value") >= 0 else None
    n = len(node)
    vpiece = binary_piece(value) if value is not None else Piece(np.empty(0, np.uint8), np.zeros(n, np.int64),
                                                                  np.zeros(n, np.int64))
    vvalid = vpiece.lens > 0
    if value is not None and value.null_count < n:
        vvalid = validity(value)
    if typed is None:
        return vpiece, vvalid
    tvalid = validity(typed)
    if not tvalid.any():
        return vpiece, vvalid
    tpiece = _encode_typed(typed, meta, rows)
    buf = np.concatenate([tpiece.buf, vpiece.buf])
    starts = np.where(tvalid, tpiece.starts, vpiece.starts + len(tpiece.buf))
    lens = np.where(tvalid, tpiece.lens, np.where(vvalid, vpiece.lens, 0))
    both = tvalid & vvalid
    if both.any():
        if not pa.types.is_struct(typed.type):
            raise vb.MalformedVariantError("a shredded variant has both value and a non-object typed_value")
        buf, starts, lens = _merge_partial(Piece(buf, starts, lens), vpiece, np.flatnonzero(both), meta, rows)
    return Piece(buf, starts, lens), tvalid | vvalid


def _merge_partial(p: Piece, residual: Piece, where: I64, meta: MetadataIndex, rows: I64) -> Piece:
    """Rows with typed fields and a residual object: their fields merged into one object (row at a time)."""
    extra = bytearray()
    starts, lens = p.starts.copy(), p.lens.copy()
    for i in where:
        typed_obj = p.buf[starts[i]:starts[i] + lens[i]].tobytes()
        rest = residual.buf[residual.starts[i]:residual.starts[i] + residual.lens[i]].tobytes()
        keys = meta.keys(int(rows[i]))
        entries = {}
        for src in (typed_obj, rest):
            for f in vb.object_fields(src):
                name = keys[f.key_id]
                if name in entries:
                    raise vb.MalformedVariantError(f"shredded field {name!r} is also in the residual value")
                entries[name] = (name, f.key_id, src[f.start:f.end])
        merged = vb.encode_object(list(entries.values()))
        starts[i], lens[i] = len(p.buf) + len(extra), len(merged)
        extra += merged
    return Piece(np.concatenate([p.buf, np.frombuffer(bytes(extra), np.uint8)]), starts, lens)


def _encode_typed(typed: pa.Array, meta: MetadataIndex, rows: I64) -> Piece:
    t = typed.type
    if pa.types.is_struct(t):
        return _encode_object(typed, meta, rows)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _encode_array(typed, meta, rows)
    return encode_scalars(typed)


def _encode_object(typed: pa.Array, meta: MetadataIndex, rows: I64) -> Piece:
    n = len(typed)
    names = sorted((typed.type.field(i).name for i in range(typed.type.num_fields)), key=lambda s: s.encode())
    tvalid = validity(typed)
    children, present, ids = [], [], []
    for name in names:
        piece, here = encode_group(typed.field(name), meta, rows)
        here = here & tvalid
        fid = meta.ids(name, rows)
        if (here & (fid < 0)).any():
            raise vb.MalformedVariantError(f"shredded field {name!r} is not in the variant metadata")
        children.append(piece)
        present.append(here)
        ids.append(np.where(here, fid, 0))
    count = np.sum(present, axis=0).astype(np.int64) if names else np.zeros(n, np.int64)
    sizes = [np.where(h, c.lens, 0) for c, h in zip(children, present)]
    data_size = np.sum(sizes, axis=0).astype(np.int64) if names else np.zeros(n, np.int64)
    isize = int_size(np.max(ids, axis=0)) if names else np.ones(n, np.int64)
    osize = int_size(data_size)
    large = count > 0xFF
    header = (large.astype(np.int64) << 6) | ((isize - 1) << 4) | ((osize - 1) << 2) | vb.OBJECT
    parts = [header_piece(header), fixed(le_bytes(count, 4), np.where(large, 4, 1))]
    for fid, h in zip(ids, present):
        parts.append(fixed(le_bytes(fid, 4), np.where(h, isize, 0)))
    running = np.zeros(n, np.int64)
    for s, h in zip(sizes, present):
        parts.append(fixed(le_bytes(running, 4), np.where(h, osize, 0)))
        running = running + s
    parts.append(fixed(le_bytes(data_size, 4), osize))
    parts.extend(Piece(c.buf, c.starts, s) for c, s in zip(children, sizes))
    data, offsets = concat_rows(parts)
    return Piece(data, offsets[:-1], np.diff(offsets))


def _encode_array(typed: pa.Array, meta: MetadataIndex, rows: I64) -> Piece:
    n = len(typed)
    offs = np.asarray(typed.offsets.to_numpy(zero_copy_only=False), np.int64)
    values = typed.values.slice(int(offs[0]), int(offs[-1] - offs[0]))
    offs = offs - offs[0]
    counts = np.diff(offs)
    elem_row = np.repeat(np.arange(n, dtype=np.int64), counts)
    epiece, epresent = encode_group(values, meta, rows[elem_row])
    if (~epresent).any():  # invalid per the spec: an array element is never missing
        nul = np.zeros(1, np.uint8)
        epiece = Piece(np.concatenate([epiece.buf, nul]), np.where(epresent, epiece.starts, len(epiece.buf)),
                       np.where(epresent, epiece.lens, 1))
    elems = materialise(epiece)
    eoff = np.concatenate([elems.starts, [elems.starts[-1] + elems.lens[-1]] if len(elems.lens) else [0]])
    lo, hi = eoff[offs[:-1]], eoff[offs[1:]]
    size = hi - lo
    osize = int_size(size)
    large = counts > 0xFF
    rel = le_bytes(eoff[:-1] - lo[elem_row], 4)
    eoffsets = materialise(fixed(rel, osize[elem_row]))
    ob = np.concatenate([eoffsets.starts, [len(eoffsets.buf)]]).astype(np.int64)
    header = (large.astype(np.int64) << 4) | ((osize - 1) << 2) | vb.ARRAY
    data, offsets = concat_rows([
        header_piece(header),
        fixed(le_bytes(counts, 4), np.where(large, 4, 1)),
        Piece(eoffsets.buf, ob[offs[:-1]], ob[offs[1:]] - ob[offs[:-1]]),
        fixed(le_bytes(size, 4), osize),
        Piece(elems.buf, lo, size),
    ])
    return Piece(data, offsets[:-1], np.diff(offsets))


# ----------------------------------------------------------------------------- scalars
def _prim(type_id: int) -> int:
    return type_id << 2


def _numeric(vals: np.ndarray, type_ids: np.ndarray, widths: np.ndarray) -> Piece:
    n = len(vals)
    mat = np.empty((n, 9), np.uint8)
    mat[:, 0] = type_ids << 2
    mat[:, 1:] = vals.view(np.uint8).reshape(n, -1)[:, :8] if vals.dtype.itemsize == 8 else \
        np.pad(vals.view(np.uint8).reshape(n, -1), ((0, 0), (0, 8 - vals.dtype.itemsize)))
    return fixed(mat, 1 + widths)


def encode_scalars(arr: pa.Array) -> Piece:
    """A typed (non-nested) column as variant primitives, one per row (null rows: undefined bytes)."""
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_boolean(t):
        v = np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), bool)
        return header_piece(np.where(v, _prim(vb.TRUE), _prim(vb.FALSE)))
    if pa.types.is_integer(t):
        v = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False)).astype("<i8")
        w = np.where((v >= -2**7) & (v < 2**7), 1, np.where((v >= -2**15) & (v < 2**15), 2,
                     np.where((v >= -2**31) & (v < 2**31), 4, 8)))
        return _numeric(v, np.select([w == 1, w == 2, w == 4], [vb.INT8, vb.INT16, vb.INT32], vb.INT64), w)
    simple: list[tuple[bool, int, str]] = [
        (pa.types.is_float64(t), vb.DOUBLE, "<f8"), (pa.types.is_float32(t), vb.FLOAT, "<f4"),
        (pa.types.is_date32(t), vb.DATE, "<i4"),
        (pa.types.is_time64(t) and getattr(t, "unit", "") == "us", vb.TIME_NTZ, "<i8"),
    ]
    if pa.types.is_timestamp(t):
        ts_id = {("us", True): vb.TIMESTAMP, ("us", False): vb.TIMESTAMP_NTZ, ("ns", True): vb.TIMESTAMP_NANOS,
               ("ns", False): vb.TIMESTAMP_NTZ_NANOS}.get((t.unit, t.tz is not None))
        if ts_id is None:
            arr = arr.cast(pa.timestamp("us", tz=t.tz))
            ts_id = vb.TIMESTAMP if t.tz is not None else vb.TIMESTAMP_NTZ
        simple.append((True, ts_id, "<i8"))
    for ok, tid, dt in simple:
        if ok:
            phys = pa.int64() if np.dtype(dt).itemsize == 8 else pa.int32()
            raw = np.asarray(arr.view(phys).fill_null(0).to_numpy(zero_copy_only=False))
            w = np.full(n, np.dtype(dt).itemsize)
            return _numeric(raw, np.full(n, tid), w)
    if pa.types.is_decimal(t):
        return _decimals(arr)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _strings(arr.cast(pa.large_string()).view(pa.large_binary()), is_string=True)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return _strings(arr.cast(pa.large_binary()), is_string=False)
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 16:  # uuid
        mat = np.empty((n, 17), np.uint8)
        mat[:, 0] = _prim(vb.UUID)
        b = arr.buffers()[1]
        mat[:, 1:] = np.frombuffer(b, np.uint8)[arr.offset * 16:(arr.offset + n) * 16].reshape(n, 16)
        return fixed(mat, np.full(n, 17))
    raise vb.MalformedVariantError(f"typed_value of Parquet/Arrow type {t} is not a variant shredding type")


def _strings(arr: pa.Array, is_string: bool) -> Piece:
    body = binary_piece(arr)
    n = len(arr)
    mat = np.empty((n, 5), np.uint8)
    mat[:, 1:] = le_bytes(body.lens, 4)
    if is_string:
        short = body.lens <= vb.MAX_SHORT_STRING
        mat[:, 0] = np.where(short, (body.lens << 2) | vb.SHORT_STRING, _prim(vb.STRING))
        hlen = np.where(short, 1, 5)
    else:
        mat[:, 0] = _prim(vb.BINARY)
        hlen = np.full(n, 5)
    data, offsets = concat_rows([fixed(mat, hlen), body])
    return Piece(data, offsets[:-1], np.diff(offsets))


def _decimals(arr: pa.Array) -> Piece:
    t = arr.type
    if not isinstance(t, pa.Decimal128Type):
        arr = arr.cast(pa.decimal128(max(t.precision, 1), t.scale))
        t = arr.type
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8)[arr.offset * 16:(arr.offset + n) * 16].reshape(n, 16)
    halves = raw.view("<i8").reshape(n, 2)
    low, high = halves[:, 0], halves[:, 1]
    fits64 = high == (low >> 63)
    d9 = fits64 & (low > -10**9) & (low < 10**9)
    d18 = fits64 & (low > -10**18) & (low < 10**18)
    s = t.scale
    w = np.where(d9 & (s <= 9), 4, np.where(d18 & (s <= 18), 8, 16))
    mat = np.empty((n, 18), np.uint8)
    mat[:, 0] = np.select([w == 4, w == 8], [vb.DECIMAL4, vb.DECIMAL8], vb.DECIMAL16) << 2
    mat[:, 1] = s
    mat[:, 2:] = raw
    return fixed(mat, 2 + w)


__all__ = ["encode_scalars", "gather", "is_shredded", "unshred"]
