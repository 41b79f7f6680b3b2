"""Commit files parsed as one buffer: the fast path of `read_commits` for the common shape of a log.

Why: replaying hundreds of JSON commits (time travel to an old version, VACUUM, RESTORE) is bound by getting
the lines into Arrow. The general path (`action_tables.split_lines` + `parse_json_lines`) validates the text
with an Arrow cast, splits it into a string array, trims and filters it, then joins the bulk lines back into
one buffer for the JSON reader: four full copies of the log before parsing starts (half of a 31 MB replay).
Here the commits are concatenated once; line boundaries and the first bytes of every line (which action it
holds) come from numpy over that buffer; Arrow's JSON reader parses the file-action lines - on its thread
pool when the log is large enough to pay for it. Each kind of file action (add, remove, cdc) is parsed
on its own, its lines gathered a run at a time, with only its own struct in the schema. Only the few other
lines (commitInfo, metaData, ...) are decoded by Python.

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

#: the exact prefixes of file-action lines as every writer emits them (anything else: the general path)
_PREFIXES = {b'{"add":': 1, b'{"remove":': 2, b'{"cdc":': 3}
_WIDTH = max(len(p) for p in _PREFIXES)
_FILE_KEYS = ("add", "remove", "cdc")

#: at or above this size the JSON reader uses Arrow's thread pool (blocks parsed in parallel). Below it, the
#: pool's first start in a fresh process costs more than it saves (measured: see docs/decisions.md)
THREADED_BYTES = 4 << 20
#: kinds whose lines total at least this many bytes each are parsed side by side (`CommitIndex.parse_kinds`)
CONCURRENT_BYTES = 256 << 10
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

    def positions(self, kind: int) -> npt.NDArray[np.int64]:
        """The line numbers of the lines of one kind (1 add, 2 remove, 3 cdc), in log order."""
        out: npt.NDArray[np.int64] = np.flatnonzero(self.kind == kind).astype(np.int64)
        return out

    def gather(self, rows: npt.NDArray[np.int64]) -> bytes | bytearray:
        """The text of these lines (ascending line numbers), one per line, in one new buffer: copied a run of
        adjacent lines at a time (a commit's adds are one run), so one memcpy per run instead of a copy per line.
        The whole buffer itself when `rows` are all its lines."""
        if len(rows) == len(self.starts):
            return self.buffer
        if not len(rows):
            return b""
        cut = np.flatnonzero(np.diff(rows) != 1) + 1  # where a run of adjacent lines breaks
        firsts = rows[np.concatenate([[0], cut])]
        lasts = rows[np.concatenate([cut - 1, [len(rows) - 1]])]
        lo = self.starts[firsts]
        hi = self.ends[lasts]
        out = bytearray(int(np.sum(hi - lo)) + len(lo))
        src = memoryview(self.buffer)
        dst = memoryview(out)
        pos = 0
        for a, b in zip(lo.tolist(), hi.tolist()):  # (runs keep their inner newlines, "\r\n" endings too)
            dst[pos : pos + b - a] = src[a:b]
            pos += b - a
            out[pos] = 10
            pos += 1
        dst.release()
        src.release()
        return out

    def parse_kind(self, kind: int, name: str, typ: pa.StructType,
                   threads: bool | None = None) -> tuple[pa.ChunkedArray, npt.NDArray[np.int64]] | None:
        """The lines of one kind parsed as `{name: typ}` objects: (the `name` column, one valid row per line of
        that kind in log order; the line numbers of those rows). Only these lines are parsed, with only this
        kind's struct in the schema: every struct the reader knows but a line lacks costs a null append per
        field per row (parsing adds and removes in one pass with one schema took 220 ms where the two passes
        take 120 ms on the 31 MB time-travel log). None when the reader disagrees with the line index (a row
        count off, `{"add":null}`): the general path decides."""
        rows = self.positions(kind)
        if not len(rows):
            return pa.chunked_array([], typ), rows
        text = self.gather(rows)
        max_len = int(np.max(self.ends[rows] - self.starts[rows]))
        use_threads = len(text) >= THREADED_BYTES if threads is None else threads
        schema = pa.schema([pa.field(name, typ)])
        try:
            table = pajson.read_json(
                pa.BufferReader(pa.py_buffer(text)),
                # blocks of 1/8 of the text at least: enough to share among the cores, few chunks to carry along
                read_options=pajson.ReadOptions(block_size=max(_BLOCK, len(text) // 8, 2 * max_len + 16),
                                                use_threads=use_threads),
                parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
            )
        except (pa.ArrowInvalid, ValueError):
            return None
        col = table.column(0)
        if table.num_rows != len(rows) or col.null_count:
            return None
        return col, rows

    def parse_kinds(self, specs: Sequence[tuple[int, str, pa.StructType]]
                    ) -> list[tuple[pa.ChunkedArray, npt.NDArray[np.int64]] | None]:
        """`parse_kind` of each (kind, name, type), in order. Kinds of at least `CONCURRENT_BYTES` of lines each
        are parsed side by side, one thread per kind beyond the first (the reader releases the GIL): below
        `THREADED_BYTES` a kind parses on one core, so a VACUUM's two-commit log (2.8 MB of adds, 2 MB of removes)
        kept one of two cores idle for the whole parse."""
        sizes = [int(np.sum(self.ends[rows] - self.starts[rows])) for rows in (self.positions(k) for k, _, _ in specs)]
        big = [i for i, size in enumerate(sizes) if size >= CONCURRENT_BYTES]
        if len(big) < 2:
            return [self.parse_kind(*spec) for spec in specs]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=len(big) - 1) as pool:
            futures = {i: pool.submit(self.parse_kind, *specs[i]) for i in big[1:]}
            return [futures[i].result() if i in futures else self.parse_kind(*spec) for i, spec in enumerate(specs)]

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
        if not isinstance(obj, dict) or any(k in obj for k in _FILE_KEYS):  # (file lines are parsed by kind)
            return None
        rare.append((int(parents[i]), obj))
    return CommitIndex(buf, starts, ends, parents, kind, rare)


__all__ = ["CommitIndex", "THREADED_BYTES", "concatenate", "contains", "index_commits", "index_joined"]
