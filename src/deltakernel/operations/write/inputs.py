"""What `write_deltalake` accepts as data, turned into one `pyarrow.RecordBatchReader`.

Everything is streamed: the writer pulls one batch at a time and nothing here holds on to batches it has
handed out, so input larger than memory works (a pyarrow Dataset is scanned batch by batch, a polars
LazyFrame runs on polars' streaming engine chunk by chunk, a generator is consumed as it goes). Objects that
are already in memory (Table, RecordBatch, pandas / polars DataFrame) are exported without copying where
Arrow allows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from ...errors import DeltaError

POLARS_CHUNK_ROWS = 128 * 1024  # rows per chunk asked of polars' streaming engine for a LazyFrame


def to_reader(data: Any, schema: pa.Schema | None = None) -> pa.RecordBatchReader:
    """Any supported input as a reader: Table, RecordBatch, RecordBatchReader, pandas DataFrame, polars
    DataFrame / LazyFrame, `pyarrow.dataset.Dataset` / `Scanner`, objects with `__arrow_c_stream__` /
    `__arrow_c_array__`, and an iterable of record batches (schema from `schema=`, else the first batch)."""
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data]).to_reader()
    mod = type(data).__module__
    if mod.startswith("pandas"):
        return pa.Table.from_pandas(data, preserve_index=False).to_reader()
    if mod.startswith("polars") and type(data).__name__ == "LazyFrame":
        return _from_lazyframe(data)
    if mod.startswith("pyarrow") and hasattr(data, "scanner") and hasattr(data, "schema"):
        return data.scanner().to_reader()  # pyarrow.dataset.Dataset: fragments read batch by batch
    if mod.startswith("pyarrow") and hasattr(data, "to_reader") and hasattr(data, "projected_schema"):
        return data.to_reader()  # pyarrow.dataset.Scanner
    if hasattr(data, "__arrow_c_stream__"):  # polars DataFrame, DuckDB relations, nanoarrow, ...
        return pa.RecordBatchReader.from_stream(data)
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.record_batch(data)]).to_reader()
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        return _from_iterable(data, schema)
    raise DeltaError(f"cannot write data of type {type(data).__name__}: expected an Arrow stream")


def _from_iterable(data: Iterable[Any], schema: pa.Schema | None) -> pa.RecordBatchReader:
    """A sequence or generator of record batches (or tables); the schema is `schema` or the first item's."""
    items = iter(data)
    if schema is not None:
        return pa.RecordBatchReader.from_batches(schema, _batches_of(items, schema))
    try:
        first = next(items)
    except StopIteration:
        raise DeltaError("cannot write an empty iterable of record batches without `schema=`") from None
    first_batches = _as_batches(first)
    head_schema = first.schema

    def chain() -> Iterator[pa.RecordBatch]:
        yield from first_batches
        yield from _batches_of(items, head_schema)

    return pa.RecordBatchReader.from_batches(head_schema, chain())


def _batches_of(items: Iterator[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    for item in items:
        for batch in _as_batches(item):
            if not batch.schema.equals(schema):
                raise DeltaError(f"record batch schema differs from the stream's: {batch.schema} vs {schema}")
            yield batch


def _as_batches(item: Any) -> list[pa.RecordBatch]:
    if isinstance(item, pa.RecordBatch):
        return [item]
    if isinstance(item, pa.Table):
        batches: list[pa.RecordBatch] = item.to_batches()
        return batches
    raise DeltaError(f"expected record batches in the iterable, got {type(item).__name__}")


def _from_lazyframe(lf: Any) -> pa.RecordBatchReader:
    """A polars LazyFrame run on polars' streaming engine, one chunk at a time (`collect_batches`).

    polars < 1.31 has no `collect_batches`: the frame is then collected with the streaming engine (bounded
    while it runs, but the result is held whole) and exported without copying.
    """
    collect_batches = getattr(lf, "collect_batches", None)
    if collect_batches is None:
        return pa.RecordBatchReader.from_stream(lf.collect(engine="streaming"))
    schema = pa.RecordBatchReader.from_stream(lf.clear().collect()).schema

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            frames = collect_batches(chunk_size=POLARS_CHUNK_ROWS, lazy=True)
        except TypeError:  # a polars without `lazy=`: the query starts now rather than at the first batch
            frames = collect_batches(chunk_size=POLARS_CHUNK_ROWS)
        for frame in frames:
            for batch in pa.RecordBatchReader.from_stream(frame):
                yield batch if batch.schema.equals(schema) else batch.cast(schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


__all__ = ["to_reader"]
