"""Byte-level building blocks for assembling variant values column-wise, with numpy instead of per-row loops.

Why: a shredded variant column is many typed Arrow columns; turning them back into one variant binary per row is
a concatenation, per row, of a few byte strings (headers, sizes, ids, offsets, child values). A `Piece` says
where each row's bytes for one part are (`buf[starts[i]:starts[i] + lens[i]]`); `concat_rows` lays several
pieces side by side for every row with one numpy gather, whatever the number of rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

U8 = npt.NDArray[np.uint8]
I64 = npt.NDArray[np.int64]


class Piece(NamedTuple):
    """Row i's bytes are `buf[starts[i]:starts[i] + lens[i]]` (length 0: nothing for that row)."""

    buf: U8
    starts: I64
    lens: I64


def gather(buf: U8, starts: I64, lens: I64) -> U8:
    """The concatenation of `buf[starts[i]:starts[i] + lens[i]]` over i, in one vectorised take."""
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, np.uint8)
    # 32-bit indices while they fit: half the memory traffic of the per-byte index
    it = np.int32 if total < 2**31 and len(buf) < 2**31 else np.int64
    before = np.cumsum(lens) - lens
    idx = np.repeat((starts - before).astype(it), lens)
    idx += np.arange(total, dtype=it)
    return buf[idx]


def concat_rows(pieces: list[Piece]) -> tuple[U8, I64]:
    """Every row's pieces joined in order: (data, offsets with n + 1 entries)."""
    n = len(pieces[0].starts)
    sizes = [len(p.buf) for p in pieces]
    bases = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    big = np.concatenate([p.buf for p in pieces]) if len(pieces) > 1 else pieces[0].buf
    starts = np.stack([p.starts + b for p, b in zip(pieces, bases)], axis=1).reshape(-1)
    lens = np.stack([p.lens for p in pieces], axis=1)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens.sum(axis=1), out=offsets[1:])
    return gather(big, starts, lens.reshape(-1)), offsets


def materialise(p: Piece) -> Piece:
    """The same bytes copied contiguous (row i right after row i - 1), so rows can be addressed as ranges."""
    data, offsets = concat_rows([p])
    return Piece(data, offsets[:-1], np.diff(offsets))


def fixed(matrix: U8, lens: I64) -> Piece:
    """A piece from an (n, w) byte matrix, row i using its first `lens[i]` bytes."""
    n, w = matrix.shape
    return Piece(np.ascontiguousarray(matrix).reshape(-1), np.arange(n, dtype=np.int64) * w, lens.astype(np.int64))


def le_bytes(values: npt.NDArray[np.integer], width: int = 8) -> U8:
    """(n, width) little-endian bytes of integers (two's complement, truncated to `width`)."""
    return values.astype("<i8").view(np.uint8).reshape(-1, 8)[:, :width]


def int_size(v: I64) -> I64:
    """Vectorised `binary.integer_size`: 1-4 bytes for unsigned sizes, offsets and ids."""
    return np.where(v <= 0xFF, 1, np.where(v <= 0xFFFF, 2, np.where(v <= 0xFFFFFF, 3, 4))).astype(np.int64)


def header_piece(headers: npt.NDArray[np.integer]) -> Piece:
    """One header byte per row."""
    h = headers.astype(np.uint8).reshape(-1, 1)
    return fixed(h, np.ones(len(h), np.int64))
