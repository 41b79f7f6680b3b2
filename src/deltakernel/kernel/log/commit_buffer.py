"""Commit files parsed as one buffer: the fast path of `read_commits` for the common shape of a log.

Why: replaying hundreds of JSON commits (time travel to an old version, VACUUM, RESTORE) is bound by getting
the lines into Arrow. The general path (`action_tables.split_lines` + `parse_json_lines`) validates the text
with an Arrow cast, splits it into a string array, trims and filters it, then joins the bulk lines back into
one buffer for the JSON reader: four full copies of the log before parsing starts (half of a 31 MB replay).
Here the commits are concatenated once; line boundaries and the first bytes of every line (which action it
holds) come from numpy over that buffer; Arrow's JSON reader parses the whole buffer in place - on its
thread pool when the log is large enough to pay for it - and the rows of the non-file lines (commitInfo,
metaData, ...; null in every parsed column) are dropped after. Only those few lines are decoded by Python.

The fast path declines (returns None; the caller takes the general path, which also produces the precise
errors) whenever the log is not in the canonical one-action-per-line, no-leading-whitespace shape, a non-file
line turns out to hold a file action, or the reader does not give one row per non-empty line.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.json as pajson

from ..arrow_build import np_to_arrow

#: the exact prefixes of file-action lines as every writer emits them (anything else: the general path)
_PREFIXES = {b'{"add":': 1, b'{"remove":': 2, b'{"cdc":': 3}
_WIDTH = max(len(p) for p in _PREFIXES)
_FILE_KEYS = ("add", "remove", "cdc")

#: at or above this size the JSON reader uses Arrow's thread pool (blocks parsed in parallel). Below it, the
#: pool's first start in a fresh process costs more than it saves (measured: see docs/decisions.md)
THREADED_BYTES = 4 << 20
_BLOCK = 1 << 20
_SCAN = 1 << 20


@dataclass
class CommitIndex:
    """A run of commit files as one buffer: where each non-empty line starts and ends, which commit file it
    came from, which action its first bytes name (0: another action, 1 add, 2 remove, 3 cdc), and the
    decoded other lines."""

    buffer: bytes | bytearray
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    parents: npt.NDArray[np.int64]
    kind: npt.NDArray[np.int8]
    rare: list[tuple[int, dict[str, Any]]]  # (commit index, decoded object) of every other line, in log order

    @property
    def bulk(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = self.kind != 0
        return out

    @property
    def row_order(self) -> npt.NDArray[np.int64]:
        """Per line: its index among the file-action lines (meaningless on the other lines)."""
        return np.cumsum(self.bulk, dtype=np.int64) - 1

    def parse(self, typ: pa.StructType, threads: bool | None = None) -> pa.Table | None:
        """Every line parsed into the fields of `typ` (add / remove / cdc structs), one row per line in log
        order, the other lines' rows null (checked); None when the reader disagrees with the line index (the
        general path decides). Not combined into one chunk: the caller filters each kind (one copy)."""
        if not bool(np.any(self.bulk)):
            return pa.Table.from_batches([], schema=pa.schema(list(typ)))  # (empty_table() imports pandas)
        max_len = int(np.max(self.ends - self.starts))
        use_threads = len(self.buffer) >= THREADED_BYTES if threads is None else threads
        try:
            table = pajson.read_json(
                pa.BufferReader(pa.py_buffer(self.buffer)),
                read_options=pajson.ReadOptions(block_size=max(_BLOCK, 2 * max_len + 16), use_threads=use_threads),
                parse_options=pajson.ParseOptions(explicit_schema=pa.schema(list(typ)),
                                                  unexpected_field_behavior="ignore"),
            )
        except (pa.ArrowInvalid, ValueError):
            return None
        if table.num_rows != len(self.starts):
            return None
        other = np.flatnonzero(~self.bulk)
        if len(other):  # the other lines' rows must be empty (a commitInfo holding an "add" key)
            rows = table.take(np_to_arrow(other))
            if any(c.null_count != len(c) for c in rows.columns):
                return None
        return table

    def lines(self) -> pa.Array:
        """Every line's text, zero-copy (each value runs up to the next line: its newline kept)."""
        offsets = np.concatenate([self.starts, [len(self.buffer)]]).astype(np.int64)
        return pa.Array.from_buffers(pa.large_string(), len(self.starts),
                                     [None, pa.py_buffer(offsets), pa.py_buffer(self.buffer)])


def _libc_memmem() -> Any:
    try:
        fn = ctypes.CDLL(None).memmem
    except (OSError, AttributeError, TypeError):  # no C library exposing memmem (Windows)
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return fn


_MEMMEM = _libc_memmem()


def contains(buf: bytes | bytearray, needle: bytes) -> bool:
    """`needle in buf`; through the C library's memmem where there is one (vectorized: ~3x faster than
    CPython's search for the short keys looked up in a 31 MB log)."""
    if _MEMMEM is None or len(buf) < (1 << 16):
        return needle in buf
    if isinstance(buf, bytearray):
        cbuf = (ctypes.c_char * len(buf)).from_buffer(buf)
        try:
            return _MEMMEM(ctypes.addressof(cbuf), len(buf), needle, len(needle)) is not None
        finally:
            del cbuf
    return _MEMMEM(ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p), len(buf), needle, len(needle)) is not None


def concatenate(blobs: Sequence[bytes]) -> tuple[bytes, list[int]]:
    """All blobs in one buffer, each ending in a newline, and each blob's end offset (what
    `Storage.read_joined` returns)."""
    from ...storage.base import join_lines

    return join_lines(blobs)


def index_commits(blobs: Sequence[bytes]) -> CommitIndex | None:
    """The line index of `blobs` with the non-file lines decoded, or None (see the module docstring)."""
    return index_joined(*concatenate(blobs))


def index_joined(buf: bytes | bytearray, blob_ends: Sequence[int]) -> CommitIndex | None:
    """`index_commits` over commits already joined (`Storage.read_joined`): `blob_ends` are their end offsets."""
    if not buf.isascii():  # a cheap word-at-a-time scan; only non-ASCII logs pay for a full decode
        try:
            buf.decode("utf-8")
        except UnicodeDecodeError:  # the general path names the file
            return None
    data = np.frombuffer(buf, dtype=np.uint8)
    # newlines found a block at a time: one reused 1 MiB mask instead of a fresh one the size of the log (each
    # fresh page is a page fault: a third of the replay's system time on a 31 MB log)
    nl = np.concatenate([np.flatnonzero(data[o : o + _SCAN] == 10) + o for o in range(0, len(data), _SCAN)]
                        or [np.zeros(0, np.int64)])
    starts = np.zeros(len(nl), dtype=np.int64)
    starts[1:] = nl[:-1] + 1
    ends = nl.astype(np.int64)
    has_cr = ends > starts  # a "\r\n" ending: the "\r" is not part of the line
    has_cr[has_cr] = data[ends[has_cr] - 1] == 13
    ends[has_cr] -= 1
    nonempty = ends > starts
    starts, ends = starts[nonempty], ends[nonempty]
    if len(starts) and not bool(np.all(data[starts] == ord("{"))):  # leading whitespace, blanks, not JSON
        return None
    heads = data[np.minimum(starts[:, None] + np.arange(_WIDTH)[None, :], len(data) - 1)]
    kind = np.zeros(len(starts), dtype=np.int8)
    for prefix, k in _PREFIXES.items():
        pat = np.frombuffer(prefix, dtype=np.uint8)
        kind[np.all(heads[:, : len(pat)] == pat, axis=1)] = k
    parents = np.searchsorted(np.asarray(blob_ends, dtype=np.int64), starts, side="right").astype(np.int64)
    rare: list[tuple[int, dict[str, Any]]] = []
    for i in np.flatnonzero(kind == 0).tolist():
        try:
            obj = json.loads(buf[starts[i] : ends[i]])
        except ValueError:
            return None
        if not isinstance(obj, dict) or (obj and next(iter(obj)) in _FILE_KEYS):
            return None
        rare.append((int(parents[i]), obj))
    return CommitIndex(buf, starts, ends, parents, kind, rare)


__all__ = ["CommitIndex", "THREADED_BYTES", "concatenate", "contains", "index_commits", "index_joined"]
