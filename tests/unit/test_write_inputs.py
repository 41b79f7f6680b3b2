"""`write_deltalake` inputs: streamed with bounded memory, and every accepted input type.

The memory test runs with the cycle collector disabled and tracks the numpy arrays behind each yielded batch
through weak references, and Arrow's memory pool (for the copies the writer makes): a batch must be freed by
reference counting once it is written, not kept alive by a reference cycle until the cycle collector happens
to run (a recursive closure in the stats collector held every batch of a long stream).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import DeltaError
from deltakernel.operations.files.writer_options import WriterProperties
from deltakernel.operations.write.api import write_deltalake

ROWS_PER_BATCH = 20_000
N_BATCHES = 60
ROW_GROUP = 2 * ROWS_PER_BATCH  # the writer buffers at most one row group per file


def _tracked_stream(refs: list[weakref.ref[np.ndarray]], alive: list[int], pool: list[int],
                    extra: dict[str, pa.Array]) -> Iterator[pa.RecordBatch]:
    """Batches whose `x` column is a zero-copy view of a numpy array we hold a weak reference to."""
    for i in range(N_BATCHES):
        alive.append(sum(r() is not None for r in refs))  # batches still alive when batch i is requested
        pool.append(pa.total_allocated_bytes())  # Arrow memory (copies made by the writer, e.g. split)
        a = np.arange(i * ROWS_PER_BATCH, (i + 1) * ROWS_PER_BATCH, dtype=np.int64)
        refs.append(weakref.ref(a))
        cols = {"x": pa.array(a), **{k: v for k, v in extra.items()}}
        del a
        yield pa.record_batch(cols)


@pytest.mark.parametrize("case", ["plain", "constraint", "partitioned"])
def test_streamed_append_frees_written_batches_without_cycle_collector(tmp_path: Path, case: str) -> None:
    n = ROWS_PER_BATCH
    extra = {"s": pa.array([f"v{j % 97}" for j in range(n)])}
    if case == "partitioned":
        extra["p"] = pa.array(np.arange(n) % 3)
    schema = pa.record_batch({"x": pa.array([0], pa.int64()), **{k: v.slice(0, 1) for k, v in extra.items()}}).schema
    uri = str(tmp_path / "t")
    conf = {"delta.constraints.x_nonneg": "x >= 0"} if case == "constraint" else None
    write_deltalake(uri, pa.table({k: pa.array([], t) for k, t in zip(schema.names, schema.types)}),
                    partition_by=["p"] if case == "partitioned" else None, configuration=conf)
    refs: list[weakref.ref[np.ndarray]] = []
    alive: list[int] = []
    pool: list[int] = []
    gc.collect()
    gc.disable()
    try:
        write_deltalake(uri, pa.RecordBatchReader.from_batches(schema, _tracked_stream(refs, alive, pool, extra)),
                        mode="append", writer_properties=WriterProperties(max_row_group_size=ROW_GROUP))
    finally:
        gc.enable()
    assert len(alive) == N_BATCHES
    # the row group being buffered (2 batches), the one being encoded (one pending job per file), one split
    # ahead and the one being prepared: a few batches at most, however long the stream (margin left for
    # scheduling); before the fix every batch stayed alive (alive[i] == i)
    assert max(alive) <= 8, alive
    assert all(r() is None for r in refs[:-8])
    # the copies the writer makes (the partition split takes rows) must not pile up either: Arrow's pool
    # stays level over the stream instead of growing with every batch (3x from first to last third before)
    third = N_BATCHES // 3
    assert max(pool[-third:]) < 1.8 * max(pool[:third]), [x // 1000 for x in pool]
    assert DeltaTable(uri).to_pyarrow_table().num_rows == N_BATCHES * n


def _rows(uri: str) -> list[dict[str, object]]:
    """The rows read back by deltakernel, checked against deltalake (delta-rs) reading the same table."""
    import deltalake

    ours = sorted(DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["a"])
    theirs = sorted(deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["a"])
    assert ours == theirs
    return ours


def test_generator_of_batches_without_schema(tmp_path: Path) -> None:
    def gen() -> Iterator[pa.RecordBatch]:
        for i in range(3):
            yield pa.record_batch({"a": pa.array([i * 2, i * 2 + 1], pa.int64()), "b": ["x", "y"]})

    write_deltalake(str(tmp_path), gen())
    assert _rows(str(tmp_path)) == [{"a": i, "b": "xy"[i % 2]} for i in range(6)]
    assert DeltaTable(str(tmp_path)).schema().to_arrow().names == ["a", "b"]


def test_sequence_of_batches_and_tables_without_schema(tmp_path: Path) -> None:
    b = pa.record_batch({"a": pa.array([1, 2], pa.int64())})
    write_deltalake(str(tmp_path), [b, pa.table({"a": pa.array([3], pa.int64())})])
    assert [r["a"] for r in _rows(str(tmp_path))] == [1, 2, 3]


def test_empty_iterable_without_schema_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DeltaError, match="empty iterable"):
        write_deltalake(str(tmp_path), iter([]))
    assert not (tmp_path / "_delta_log").exists()


def test_empty_iterable_with_schema_creates_the_table(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path), [], schema=pa.schema([("a", pa.int64())]))
    assert DeltaTable(str(tmp_path)).to_pyarrow_table().num_rows == 0


def test_iterable_with_a_batch_of_another_schema_is_refused(tmp_path: Path) -> None:
    batches = [pa.record_batch({"a": pa.array([1], pa.int64())}), pa.record_batch({"a": ["x"]})]
    with pytest.raises(DeltaError, match="schema differs"):
        write_deltalake(str(tmp_path), batches)
    assert not (tmp_path / "_delta_log").exists()


def test_iterable_of_something_else_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DeltaError, match="expected record batches"):
        write_deltalake(str(tmp_path), [{"a": 1}])


def test_pyarrow_dataset_is_scanned_batch_by_batch(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ds.write_dataset(pa.table({"a": pa.array(range(10), pa.int64()), "b": [str(i) for i in range(10)]}), src,
                     format="parquet", max_rows_per_file=4, max_rows_per_group=4)
    dataset = ds.dataset(src, format="parquet")
    assert len(dataset.files) == 3
    uri = str(tmp_path / "t")
    write_deltalake(uri, dataset)
    assert _rows(uri) == [{"a": i, "b": str(i)} for i in range(10)]
    write_deltalake(uri, dataset.scanner(columns=["a", "b"], filter=ds.field("a") < 2), mode="append")
    assert [r["a"] for r in _rows(uri)] == [0, 0, 1, 1, *range(2, 10)]


def test_polars_dataframe(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    df = pl.DataFrame({"a": [1, 2, 3], "b": ["x", None, "z"], "c": [1.5, 2.5, None]})
    write_deltalake(str(tmp_path), df)
    assert _rows(str(tmp_path)) == [{"a": 1, "b": "x", "c": 1.5}, {"a": 2, "b": None, "c": 2.5},
                                    {"a": 3, "b": "z", "c": None}]
    assert DeltaTable(str(tmp_path)).schema().to_arrow().field("b").type == pa.string()


def test_polars_lazyframe_is_streamed_in_chunks(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    from deltakernel.operations.write import inputs

    n = 3 * inputs.POLARS_CHUNK_ROWS + 5
    lf = pl.LazyFrame({"a": np.arange(n, dtype=np.int64)}).with_columns(b=(pl.col("a") % 7).cast(pl.String))
    reader = inputs.to_reader(lf.filter(pl.col("a") >= 0))
    sizes = [b.num_rows for b in reader]
    assert sum(sizes) == n and len(sizes) > 1 and max(sizes) <= inputs.POLARS_CHUNK_ROWS
    write_deltalake(str(tmp_path), lf.filter(pl.col("a") % 2 == 0))
    got = DeltaTable(str(tmp_path)).to_pyarrow_table()
    assert got.num_rows == (n + 1) // 2
    assert sorted(got.column("a").to_pylist()) == list(range(0, n, 2))
    assert got.schema.field("b").type == pa.string()
    assert got.filter(pc.equal(got["a"], 10))["b"].to_pylist() == ["3"]


def test_polars_empty_lazyframe_creates_the_table_with_its_schema(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    lf = pl.LazyFrame({"a": pl.Series([], dtype=pl.Int32), "b": pl.Series([], dtype=pl.String)})
    write_deltalake(str(tmp_path), lf)
    dt = DeltaTable(str(tmp_path))
    assert dt.to_pyarrow_table().num_rows == 0
    assert [f.name for f in dt.schema().fields] == ["a", "b"]


def test_stats_collector_keeps_no_reference_to_a_folded_batch() -> None:
    from deltakernel.kernel.schema.arrow import from_arrow_schema
    from deltakernel.kernel.stats.collect import StatsCollector

    a = np.arange(1000, dtype=np.int64)
    ref = weakref.ref(a)
    batch = pa.record_batch({"x": pa.array(a), "s": pa.array([{"y": 1}] * 1000)})
    collector = StatsCollector(from_arrow_schema(batch.schema))
    del a
    gc.collect()
    gc.disable()
    try:
        collector.update(batch)
        del batch
        assert ref() is None  # freed by reference counting alone (a recursive closure made it a cycle)
    finally:
        gc.enable()
    assert collector.num_records == 1000
