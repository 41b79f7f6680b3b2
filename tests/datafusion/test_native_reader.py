"""DataFusion's own Parquet reader for plain files (`deltakernel.datafusion.native`).

The native reader must be chosen only where it is exact (no deletion vector, no column mapping, every
data column present with its logical name and type, local files) and must give the same rows as the
pyarrow / kernel path (`native_reader=False`) on the same table and query: partitioned tables (typed
and NULL partition values), deletion vectors, column mapping, schema evolution, NULL semantics of
pushed filters. The kernel's file skipping still runs first (metrics), and EXPLAIN still shows the
filter inside `DatasetExec`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

datafusion = pytest.importorskip("datafusion")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaTable, write_deltalake
from deltakernel.datafusion import native
from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal


def _query(path: str, sql: str, **opts: Any) -> tuple[list[str], dkdf.DeltaDataset]:
    ctx = datafusion.SessionContext()
    opts.setdefault("provider", "dataset")  # this file tests the dataset provider's reader
    ds = dkdf.register(ctx, "t", path, **opts)
    rows = ctx.sql(sql).to_arrow_table().to_pylist()
    return sorted(map(str, rows)), ds


def _both(path: str, sql: str) -> tuple[list[str], dkdf.DeltaDataset, dkdf.DeltaDataset]:
    """Rows from the native reader and from the pyarrow / kernel path; asserts they are the same."""
    got, ds_native = _query(path, sql)
    want, ds_plain = _query(path, sql, native_reader=False)
    assert got == want, sql
    listed, _ = _query(path, sql, provider="auto")  # the listing path where it applies: the same rows
    assert listed == want, sql
    assert ds_plain.metrics.files_native_path == 0
    return got, ds_native, ds_plain


def explain(ctx: Any, sql: str) -> str:
    rows = ctx.sql(f"EXPLAIN {sql}").to_pylist()
    return next(r["plan"] for r in rows if r["plan_type"] == "physical_plan")


def test_native_reader_chosen_after_kernel_skipping(ranges: str) -> None:
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", ranges, provider="dataset")
    sql = "SELECT id, s FROM t WHERE id >= 2100 AND id < 2110"
    plan = explain(ctx, sql)
    assert "DatasetExec" in plan and "filter_expr=" in plan and "FilterExec" not in plan
    got = ctx.sql(sql).to_pylist()
    assert [r["id"] for r in sorted(got, key=lambda r: r["id"])] == list(range(2100, 2110))
    m = ds.metrics
    assert m.files_total == 6 and m.files_skipped == 5
    assert m.files_opened == 1 and m.files_native_path == 1 and m.files_kernel_path == 0


def test_native_matches_pyarrow_path_with_null_semantics(ranges: str) -> None:
    queries = [
        "SELECT * FROM t",
        "SELECT id, x FROM t WHERE x <> 2",
        "SELECT id FROM t WHERE NOT (x > 1)",
        "SELECT id FROM t WHERE x IN (1, 3)",
        "SELECT id FROM t WHERE x NOT IN (1, 3)",
        "SELECT id FROM t WHERE x IS NULL OR s = 's3'",
        "SELECT id, s FROM t WHERE s >= 's7' AND x IS NOT NULL",
        "SELECT id FROM t WHERE x BETWEEN 1 AND 2 AND id < 3000",
        "SELECT id FROM t WHERE ts >= TIMESTAMP '1970-01-01T01:00:00Z'",
        "SELECT id, d FROM t WHERE d > 4000.125",
        "SELECT count(*) AS n, sum(x) AS sx, max(s) AS ms FROM t WHERE id % 3 = 0",
    ]
    for sql in queries:
        _, ds_native, _ = _both(ranges, sql)
        assert ds_native.metrics.files_native_path == ds_native.metrics.files_opened > 0, sql
    # NULL semantics against an independent evaluation
    rows, _ = _query(ranges, "SELECT id FROM t WHERE x <> 2")
    expected = sum(1 for i in range(6000) if i % 7 != 0 and i % 5 != 2)
    assert len(rows) == expected


def test_partitioned_table_typed_and_null_partitions(tmp_path: Path, parts_table: Callable[[str], str]) -> None:
    path = parts_table(str(tmp_path / "parts"))
    for sql in ["SELECT * FROM t", "SELECT v, p FROM t WHERE p = 'b'", "SELECT v FROM t WHERE p IS NULL",
                "SELECT v, q FROM t WHERE q > 1 OR p IS NULL", "SELECT p, q, count(*) AS n FROM t GROUP BY p, q"]:
        _, ds_native, _ = _both(path, sql)
        assert ds_native.metrics.files_native_path > 0, sql
    rows, ds = _query(path, "SELECT v FROM t WHERE p IS NULL AND q IS NULL")
    assert rows == [str({"v": 11})] and ds.metrics.files_skipped == ds.metrics.files_total - 1


def test_schema_evolution_file_without_new_column_falls_back(tmp_path: Path) -> None:
    path = str(tmp_path / "evolved")
    write_deltalake(path, pa.table({"a": pa.array([1, 2], pa.int64())}))
    write_deltalake(path, pa.table({"a": pa.array([3], pa.int64()), "b": ["x"]}), mode="append",
                    schema_mode="merge")
    rows, ds_native, _ = _both(path, "SELECT a, b FROM t")
    assert rows == sorted(map(str, [{"a": 1, "b": None}, {"a": 2, "b": None}, {"a": 3, "b": "x"}]))
    assert ds_native.metrics.files_opened == 2 and ds_native.metrics.files_native_path == 1


def test_limit_reuse_and_explain_then_query(ranges: str) -> None:
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", ranges, provider="dataset")
    assert ctx.sql("SELECT * FROM t LIMIT 3").to_arrow_table().num_rows == 3
    df = ctx.sql("SELECT count(*) AS n FROM t WHERE s IS NOT NULL")
    first = df.to_pylist()
    assert df.to_pylist() == first and first[0]["n"] == sum(1 for i in range(6000) if i % 11 != 0)
    explain(ctx, "SELECT id FROM t WHERE id = 5")  # plans streams that are never consumed
    assert ctx.sql("SELECT id FROM t WHERE id = 5").to_pylist() == [{"id": 5}]
    assert ds.metrics.files_native_path > 0


@pytest.mark.parametrize("native_reader", [True, False])
def test_view_types_option(ranges: str, native_reader: bool) -> None:
    ctx = datafusion.SessionContext()
    views = dkdf.register(ctx, "views", ranges, native_reader=native_reader, provider="dataset")
    plain = dkdf.register(ctx, "plain", ranges, view_types=False, native_reader=native_reader,
                          provider="dataset")
    for sql in ("SELECT s FROM {} WHERE id < 20", "SELECT id, s FROM {} WHERE s = 's3' AND id < 1000",
                "SELECT id FROM {} WHERE s IN ('s1', 's2') AND id >= 5000"):
        a = ctx.sql(sql.format("views")).to_arrow_table()
        b = ctx.sql(sql.format("plain")).to_arrow_table()
        assert sorted(map(str, a.to_pylist())) == sorted(map(str, b.to_pylist())) and a.num_rows > 0, sql
        # the kernel's file skipping works with either string type
        assert views.metrics.files_skipped == plain.metrics.files_skipped == 5, sql
    a = ctx.sql("SELECT s FROM views LIMIT 1").to_arrow_table()
    b = ctx.sql("SELECT s FROM plain LIMIT 1").to_arrow_table()
    assert a.schema.field("s").type == pa.string_view() and b.schema.field("s").type == pa.string()


CONFORMANCE_TABLES = [
    # (table, where the native reader may be used)
    ("tables/dat/multi_partitioned/delta", True),
    ("tables/dat/partitioned_with_null/delta", True),
    ("tables/delta-rs/delta-2.2.0-partitioned-types", True),
    ("tables/delta-rs/partition-type-primitives", True),
    ("tables/delta-rs/delta-0.8.0-special-partition", True),
    ("tables/kernel-rs/data/timestamp-partitioned-table", True),
    ("tables/dat/deletion_vectors/delta", True),  # only the files without a DV
    ("tables/kernel-rs/data/table-with-dv-small", True),
    ("tables/dat/column_mapping/delta", False),
    ("tables/kernel-rs/data/partition_cm/name", False),
]


@pytest.mark.conformance
@pytest.mark.parametrize("table,native_allowed", CONFORMANCE_TABLES, ids=[t for t, _ in CONFORMANCE_TABLES])
def test_conformance_tables_same_on_both_paths(table: str, native_allowed: bool, conformance_dir: Path) -> None:
    path = conformance_dir / table
    if not (path / "_delta_log").exists():
        pytest.skip(f"{table} not in the corpus")
    dt = DeltaTable(str(path))
    full = dt.to_pyarrow_table()
    with_dv = sum(1 for dv in dt.snapshot.files.column("deletion_vector").to_pylist() if dv is not None)
    rows, ds_native, _ = _both(str(path), "SELECT * FROM t")
    assert len(rows) == full.num_rows
    if not native_allowed:
        assert ds_native.metrics.files_native_path == 0
    assert ds_native.metrics.files_native_path <= ds_native.metrics.files_opened - min(with_dv,
                                                                                        ds_native.metrics.files_opened)
    for field in full.schema:
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_floating(t)
                or pa.types.is_date(t)):
            continue
        values = pc.drop_null(full.column(field.name))
        if len(values) == 0:
            continue
        pivot = values[len(values) // 2].as_py()
        lit = f"'{pivot}'" if isinstance(pivot, str) else (f"DATE '{pivot}'" if pa.types.is_date(t) else repr(pivot))
        name = '"' + field.name.replace('"', '""') + '"'
        for cond in (f"{name} >= {lit}", f"{name} <> {lit}", f"{name} IS NULL", f"NOT ({name} < {lit})"):
            _both(str(path), f"SELECT * FROM t WHERE {cond}")


def test_to_datafusion_translation() -> None:
    types = {"a": pa.int64()}
    assert native.to_datafusion(Comparison(">", Column("a"), Literal(3)), types) is not None
    assert native.to_datafusion(Comparison(">", Column(("s", "f")), Literal(3)), types) is None  # nested
    assert native.to_datafusion(Comparison(">", Column("missing"), Literal(3)), types) is None


def test_native_path_rules() -> None:
    assert native.safe_path("/data/t/part=a/x.parquet") and not native.safe_path("/data/t/x[1].parquet")
    assert not native.safe_path("relative/x.parquet")
    import pyarrow.fs as pafs

    assert native.available(pafs.LocalFileSystem()) or (os.cpu_count() or 1) < 2
    assert not native.available(pafs.SubTreeFileSystem("/", pafs.LocalFileSystem()))


def test_native_filter_semantics_are_datafusions(tmp_path: Path) -> None:
    """Float comparisons with NaN follow DataFusion (NaN is the largest value, as in Spark): the exact
    filter the native reader applies is the one DataFusion itself would have applied."""
    path = str(tmp_path / "nan")
    write_deltalake(path, pa.table({"f": pa.array([1.0, float("nan"), None, 5.0]), "i": [1, 2, 3, 4]}))
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", path, provider="dataset")
    ctx.register_parquet("raw", path + "/")
    for cond in ("f > 2", "f <> 1", "f <= 5", "f IS NULL"):
        got = sorted(r["i"] for r in ctx.sql(f"SELECT i FROM t WHERE {cond}").to_pylist())
        want = sorted(r["i"] for r in ctx.sql(f"SELECT i FROM raw WHERE {cond}").to_pylist())
        assert got == want, cond
    assert ds.metrics.files_native_path == ds.metrics.files_opened > 0


def test_concurrent_queries_and_streaming_consumers(ranges: str) -> None:
    """Inner streams are planned on helper threads and pulled without a runtime worker: concurrent
    queries from Python threads, streamed results and partitioned streams must neither deadlock nor mix."""
    import threading

    queries = {
        "SELECT count(*) AS n, sum(x) AS sx FROM t WHERE id % 2 = 0": None,
        "SELECT id, s FROM t WHERE id >= 3000 AND id < 3050": None,
        "SELECT max(s) AS m FROM t WHERE id < 4000": None,
    }
    for sql in queries:
        queries[sql] = _both(ranges, sql)[0]
    errors: list[Any] = []

    def worker(k: int) -> None:
        try:
            for j, sql in enumerate(queries):
                if (j + k) % 2 == 0 and _query(ranges, sql)[0] != queries[sql]:
                    errors.append(sql)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and errors == []

    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", ranges, provider="dataset")
    n = sum(b.to_pyarrow().num_rows for b in ctx.sql("SELECT id, s FROM t WHERE id < 2500").execute_stream())
    assert n == 2500
    parts = ctx.sql("SELECT id FROM t WHERE id >= 1000").execute_stream_partitioned()
    assert sum(b.to_pyarrow().num_rows for s in parts for b in s) == 5000
    assert pa.RecordBatchReader.from_stream(ctx.sql("SELECT id FROM t WHERE id < 700")).read_all().num_rows == 700
    assert ds.metrics.files_native_path > 0
