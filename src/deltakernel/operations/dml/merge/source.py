"""The MERGE source: read once as a stream, kept in memory while small, spilled to a local Arrow file when not.

MERGE needs two things from its source: the join keys (and the few columns the join residual / clause
conditions read), for every row, to find matches; and whole rows, by index, for the updated and inserted
rows. The first is narrow and stays in memory. The second is what makes a source "larger than memory":
once the rows read exceed `memory_limit` bytes (default 256 MiB, env `DELTAKERNEL_MERGE_SOURCE_MEMORY`) they
are written to an uncompressed Arrow IPC file in a temporary directory (`DELTAKERNEL_SPILL_DIR`, else the
system's) and read back memory-mapped, so the operating system's page cache, not the Python heap, holds
them and evicts them under pressure. A source that already is an in-memory `pyarrow.Table` is used as is.

View types (polars, DuckDB) become their plain Arrow types on the way in: take/join kernels need those.
See docs/decisions.md, "MERGE source larger than memory".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ....errors import SchemaError

DEFAULT_MEMORY_LIMIT = 256 * 1024 * 1024


def _plain(t: pa.DataType) -> pa.DataType:
    if t == pa.string_view():
        return pa.large_string()
    if t == pa.binary_view():
        return pa.large_binary()
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(_plain(f.type)) for f in schema], metadata=schema.metadata)


def _memory_limit() -> int:
    text = os.environ.get("DELTAKERNEL_MERGE_SOURCE_MEMORY")
    return int(text) if text else DEFAULT_MEMORY_LIMIT


class MergeSource:
    """The source rows of one MERGE. `load(narrow)` consumes the stream (once); afterwards `column(name)`
    gives a narrow column for every row and `take(indices)` whole rows. `close()` removes any spill file."""

    def __init__(self, data: pa.Table | pa.RecordBatchReader, memory_limit: int | None = None) -> None:
        self.schema = plain_schema(data.schema)
        self._data = data
        self._limit = _memory_limit() if memory_limit is None else memory_limit
        self._rows: pa.Table | None = None
        self._narrow: dict[str, pa.ChunkedArray] = {}
        self._spill_dir: str | None = None
        self._batches: list[pa.RecordBatch] | None = None
        self._offsets: npt.NDArray[np.int64] = np.zeros(1, np.int64)
        self.spilled_bytes = 0

    # ------------------------------------------------------------------ loading
    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.schema):
            return batch
        try:
            return batch.cast(self.schema) if batch.schema.names == self.schema.names else \
                pa.RecordBatch.from_arrays([batch.column(n).cast(self.schema.field(n).type)
                                            for n in self.schema.names], schema=self.schema)
        except (KeyError, pa.ArrowException) as e:
            raise SchemaError(f"MERGE source: a batch does not match the source schema {self.schema}: {e}") from e

    def load(self, narrow: Iterable[str]) -> None:
        """Read the source; `narrow` names the columns kept in memory even when the rows are spilled."""
        if self._rows is not None:
            return
        names = list(dict.fromkeys(narrow))
        data = self._data
        if isinstance(data, pa.Table):
            self._rows = data.cast(self.schema) if data.schema != self.schema else data
            self._narrow = {n: pa.chunked_array([self._rows.column(n).combine_chunks()]) for n in names}
            return
        kept: list[pa.RecordBatch] = []
        held = 0
        writer: pa.ipc.RecordBatchFileWriter | None = None
        path = ""
        narrow_parts: dict[str, list[pa.Array]] = {n: [] for n in names}
        try:
            for batch in data:
                batch = self._conform(batch)
                if batch.num_rows == 0:
                    continue
                for n in names:
                    narrow_parts[n].append(batch.column(n))
                if writer is None:
                    kept.append(batch)
                    held += batch.nbytes
                    if held > self._limit:
                        self._spill_dir = tempfile.mkdtemp(prefix="deltakernel-merge-",
                                                           dir=os.environ.get("DELTAKERNEL_SPILL_DIR") or None)
                        path = os.path.join(self._spill_dir, "source.arrow")
                        writer = pa.ipc.new_file(path, self.schema)
                        for b in kept:
                            writer.write_batch(b)
                            self.spilled_bytes += b.nbytes
                        kept = []
                else:
                    writer.write_batch(batch)
                    self.spilled_bytes += batch.nbytes
            if writer is not None:
                writer.close()
                writer = None
                self._rows = pa.ipc.open_file(pa.memory_map(path, "r")).read_all()
            else:
                self._rows = pa.Table.from_batches(kept, schema=self.schema)
        except BaseException:
            if writer is not None:
                writer.close()
            self.close()
            raise
        self._narrow = {n: pa.chunked_array([pa.chunked_array(parts, type=self.schema.field(n).type).combine_chunks()])
                        for n, parts in narrow_parts.items()}

    # ------------------------------------------------------------------ access
    @property
    def rows(self) -> pa.Table:
        if self._rows is None:
            raise RuntimeError("MergeSource.load() was not called")
        return self._rows

    @property
    def num_rows(self) -> int:
        return int(self.rows.num_rows)

    @property
    def spilled(self) -> bool:
        return self._spill_dir is not None

    def column(self, name: str) -> pa.ChunkedArray:
        """A narrow column (named in `load`) for every source row, from memory."""
        col = self._narrow.get(name)
        return col if col is not None else self.rows.column(name)

    def take(self, indices: npt.NDArray[np.int64]) -> pa.Table:
        """Whole source rows by index, in the order given (from memory or the memory-mapped spill file).

        Taken batch by batch: `Table.take` would first concatenate every chunk of every column, i.e. copy
        (or page in) the whole source for each call."""
        idx = np.asarray(indices, dtype=np.int64)
        if self._batches is None:
            self._batches = self.rows.to_batches()
            self._offsets = np.cumsum([0] + [b.num_rows for b in self._batches], dtype=np.int64)
        batches, offsets = self._batches, self._offsets
        if len(batches) <= 1 or idx.size == 0:
            return self.rows.take(pa.array(idx, pa.int64()))
        chunk = np.searchsorted(offsets, idx, "right") - 1
        order = np.argsort(chunk, kind="stable")
        bounds = np.searchsorted(chunk[order], np.arange(len(batches) + 1))
        parts = []
        for c in np.flatnonzero(np.diff(bounds)):
            sel = order[bounds[c]:bounds[c + 1]]
            parts.append(batches[c].take(pa.array(idx[sel] - offsets[c], pa.int64())))
        out = pa.Table.from_batches(parts, schema=self.schema)
        if np.all(order[1:] > order[:-1]):
            return out
        inverse = np.empty_like(order)
        inverse[order] = np.arange(order.size, dtype=np.int64)
        return out.take(pa.array(inverse, pa.int64()))

    def close(self) -> None:
        self._rows = None
        self._batches = None
        self._narrow = {}
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None


def as_merge_source(data: Any) -> MergeSource:
    """Any Arrow input (Table, reader, pandas, polars, DataFusion DataFrame, C stream) as a MergeSource."""
    if isinstance(data, MergeSource):
        return data
    if isinstance(data, pa.Table):
        return MergeSource(data)
    from ...write.inputs import to_reader

    return MergeSource(to_reader(data))


__all__ = ["MergeSource", "as_merge_source", "plain_schema"]
