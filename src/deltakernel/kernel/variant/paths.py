"""One path of a variant column (`variant_get(v, '$.a.b')` without the cast), shredded columns read column-wise.

Why: the point of shredding is that a query needing one path reads only that path's typed Parquet columns. For
a shredded file `path_columns` names the Parquet leaves a path needs (the reader projects to them) and
`extract_path` rebuilds the value at the path from them without unshredding the rest of the variant. Rows where
the path is not in the typed columns (a non-object row kept in `value`, a field left in the residual object)
and unshredded files are answered from the variant binary, one row at a time.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from . import binary as vb
from .gather import Piece, concat_rows
from .unshred import MetadataIndex, binary_piece, encode_group, is_shredded, validity


def path_columns(column: str, file_type: pa.DataType, path: tuple[str, ...]) -> list[str]:
    """Dotted Parquet column paths a read of `path` in variant `column` needs (the whole column if unshredded)."""
    if not is_shredded(file_type):
        return [column]
    out = [f"{column}.metadata"]
    prefix, t = column, file_type
    for key in path:
        if t.get_field_index("value") >= 0:
            out.append(f"{prefix}.value")
        tv = t.field("typed_value").type if t.get_field_index("typed_value") >= 0 else None
        if tv is None or not pa.types.is_struct(tv) or tv.get_field_index(key) < 0:
            return out
        prefix, t = f"{prefix}.typed_value.{key}", tv.field(key).type
    return [*out, prefix]


def extract_path(col: pa.Array, path: tuple[str, ...]) -> pa.StructArray:
    """The variant at `path` of every row (SQL NULL where the row is null, not an object, or lacks the path)."""
    n = len(col)
    metadata = col.field("metadata")
    meta = MetadataIndex(metadata)
    rows = meta.rows
    live = validity(col)  # rows still following the typed columns
    slow: list[tuple[int, bytes, tuple[str, ...]]] = []  # (row, bytes held in a `value`, the path left)
    node: pa.Array = col
    for depth, key in enumerate(path):
        t = node.type
        value = binary_piece(node.field("value")) if t.get_field_index("value") >= 0 else None
        typed = node.field("typed_value") if t.get_field_index("typed_value") >= 0 else None
        tvalid = validity(typed) if typed is not None else np.zeros(n, bool)
        shredded_key = typed is not None and pa.types.is_struct(typed.type) and typed.type.get_field_index(key) >= 0
        if value is not None:
            # rows held in the binary, and (key not shredded) residual objects next to typed fields
            wanted = live & (value.lens > 0) & (~tvalid if shredded_key else np.ones(n, bool))
            slow += [(int(i), value.buf[value.starts[i]:value.starts[i] + value.lens[i]].tobytes(), path[depth:])
                     for i in np.flatnonzero(wanted)]
        if not shredded_key:
            live = np.zeros(n, bool)
            break
        live = live & tvalid
        node = typed.field(key)  # type: ignore[union-attr]
    keep = np.zeros(n, bool)
    piece = Piece(np.empty(0, np.uint8), np.zeros(n, np.int64), np.zeros(n, np.int64))
    if live.any():
        piece, present = encode_group(node, meta, rows)
        keep = live & present
    starts, lens = piece.starts.copy(), np.where(keep, piece.lens, 0)
    extra = bytearray()
    for i, raw, rest in slow:
        found = _lookup(meta.keys(int(rows[i])), raw, rest)
        if found is not None:
            keep[i] = True
            starts[i], lens[i] = len(piece.buf) + len(extra), len(found)
            extra += found
    buf = np.concatenate([piece.buf, np.frombuffer(bytes(extra), np.uint8)])
    data, offsets = concat_rows([Piece(buf, starts, lens)])
    value_arr = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pa.StructArray.from_arrays([metadata, value_arr.cast(pa.binary())], names=["metadata", "value"],
                                      mask=pa.array(~keep))


def _lookup(keys: list[str], raw: bytes, path: tuple[str, ...]) -> bytes | None:
    """The bytes of the value at `path` inside one encoded variant value (None when absent)."""
    pos, end = 0, len(raw)
    for key in path:
        if raw[pos] & 0x03 != vb.OBJECT:
            return None
        match = next((f for f in vb.object_fields(raw, pos) if keys[f.key_id] == key), None)
        if match is None:
            return None
        pos, end = match.start, match.end
    return raw[pos:end]
