"""DataFusion integration: pushdown proofs, time travel, SQL DDL, table function, catalog, write loop, CLI.

Pushdown on the pyarrow-Dataset provider (`provider="dataset"`; the listing path has its own tests in
test_listing_provider.py) is shown three ways: EXPLAIN puts the filter inside `DatasetExec` (no `FilterExec` above it),
the dataset's planning metrics show files skipped before any open, and a counting filesystem shows
which Parquet files were really opened (and how many bytes were read, for row-group pruning).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

datafusion = pytest.importorskip("datafusion")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaTable, write_deltalake
from deltakernel.operations.files.parquet_writer import WriterProperties


class CountingHandler(pafs.FileSystemHandler):
    """Delegates to the local filesystem and records every opened file (once per open) and the bytes read.

    A file is opened twice on a dataset's first scan (footer/schema check, then the read), so tests
    count distinct paths."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        self.opened: list[str] = []
        self.bytes_read = 0

    def get_type_name(self) -> str:
        return "counting"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.fs.get_file_info(selector)

    def open_input_file(self, path: str) -> Any:
        self.opened.append(path)
        return pa.PythonFile(_CountingFile(self, open(path, "rb")), mode="r")

    def open_input_stream(self, path: str) -> Any:
        return self.open_input_file(path)

    def create_dir(self, *a: Any) -> None: raise NotImplementedError
    def delete_dir(self, *a: Any) -> None: raise NotImplementedError
    def delete_dir_contents(self, *a: Any) -> None: raise NotImplementedError
    def delete_root_dir_contents(self, *a: Any) -> None: raise NotImplementedError
    def delete_file(self, *a: Any) -> None: raise NotImplementedError
    def move(self, *a: Any) -> None: raise NotImplementedError
    def copy_file(self, *a: Any) -> None: raise NotImplementedError
    def open_output_stream(self, *a: Any) -> Any: raise NotImplementedError
    def open_append_stream(self, *a: Any) -> Any: raise NotImplementedError


class _CountingFile:
    def __init__(self, handler: CountingHandler, f: Any) -> None:
        self.h, self.f = handler, f
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.h.bytes_read += len(data)
        return bytes(data)

    def seek(self, pos: int, whence: int = 0) -> int:
        return int(self.f.seek(pos, whence))

    def tell(self) -> int:
        return int(self.f.tell())

    def close(self) -> None:
        self.closed = True
        self.f.close()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


def counting(dataset: dkdf.DeltaDataset) -> CountingHandler:
    handler = CountingHandler()
    dataset._fs = pafs.PyFileSystem(handler)
    return handler


@pytest.fixture(scope="module")
def sales(tmp_path_factory: pytest.TempPathFactory) -> str:
    """8 files: parts a..d, two appends each, ids disjoint per file (stats skipping on `id` works)."""
    path = str(tmp_path_factory.mktemp("df") / "sales")
    for round_ in range(2):
        for k, part in enumerate("abcd"):
            base = (round_ * 4 + k) * 1000
            write_deltalake(path, pa.table({
                "id": pa.array(range(base, base + 1000), pa.int64()),
                "part": [part] * 1000,
                "amount": pa.array([float(i % 97) for i in range(1000)]),
            }), partition_by=["part"], mode="append")
    return path


def explain(ctx: Any, sql: str) -> str:
    rows = ctx.sql(f"EXPLAIN {sql}").to_pylist()
    return next(r["plan"] for r in rows if r["plan_type"] == "physical_plan")


def test_partition_filter_pushed_and_files_skipped(sales: str) -> None:
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "sales", sales, provider="dataset")
    sql = "SELECT count(*) AS n, sum(amount) AS s FROM sales WHERE part = 'b'"
    plan = explain(ctx, sql)
    # the literal prints as "b" (string) or b (string_view, the default view_types=True)
    assert "DatasetExec" in plan and re.search(r'filter_expr=\(part == "?b"?\)', plan) and "FilterExec" not in plan
    assert dataset.metrics.files_total == 8 and dataset.metrics.files_skipped == 6
    fs = counting(dataset)
    row = ctx.sql(sql).to_pylist()[0]
    assert row["n"] == 2000
    assert len(set(fs.opened)) == 2 and all("part=b" in p for p in fs.opened)


def test_stats_filter_skips_files_and_row_groups(sales: str) -> None:
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "sales", sales, provider="dataset")
    fs = counting(dataset)
    got = ctx.sql("SELECT id, part FROM sales WHERE id >= 5100 AND id < 5110 ORDER BY id").to_pylist()
    assert [r["id"] for r in got] == list(range(5100, 5110)) and {r["part"] for r in got} == {"b"}
    assert dataset.metrics.files_skipped == 7 and len(set(fs.opened)) == 1


def test_row_group_pruning(tmp_path: Path) -> None:
    path = str(tmp_path / "rg")
    t = pa.table({"id": pa.array(range(200_000), pa.int64()), "s": [f"v{i}" for i in range(200_000)]})
    write_deltalake(path, pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=20_000)),
                    writer_properties=WriterProperties(max_row_group_size=20_000))
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "t", path, provider="dataset")
    fs = counting(dataset)
    assert ctx.sql("SELECT count(*) AS n FROM t WHERE s IS NOT NULL").to_pylist()[0]["n"] == 200_000
    full = fs.bytes_read
    fs.bytes_read = 0
    assert ctx.sql("SELECT s FROM t WHERE id = 123456").to_pylist() == [{"s": "v123456"}]
    assert fs.bytes_read < full / 4, (fs.bytes_read, full)


def test_deletion_vectors_and_pushdown_on_kernel_path(conformance_dir: Path) -> None:
    path = conformance_dir / "tables/delta-rs/table-with-dv-small"
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "t", str(path))
    assert sorted(r["value"] for r in ctx.sql("SELECT value FROM t").to_pylist()) == \
        sorted(r["value"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist())
    assert "FilterExec" not in explain(ctx, "SELECT * FROM t WHERE value > 5")
    got = ctx.sql("SELECT value FROM t WHERE value > 5").to_pylist()
    assert sorted(r["value"] for r in got) == [v for v in range(6, 10) if v not in (0, 9)]
    assert dataset.metrics.files_kernel_path >= 1


def test_column_mapping_logical_names(conformance_dir: Path) -> None:
    path = conformance_dir / "tables/delta-rs/table_with_column_mapping"
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "t", str(path))
    names = ctx.sql("SELECT * FROM t LIMIT 1").to_arrow_table().column_names
    assert "Company Very Short" in names and not any(n.startswith("col-") for n in names)
    n = ctx.sql("SELECT count(*) AS n FROM t WHERE \"Company Very Short\" = 'BMS'").to_pylist()[0]["n"]
    assert n == DeltaTable(str(path)).count(filters=[("Company Very Short", "=", "BMS")])


def test_time_travel_register_ddl_and_udtf(sales: str) -> None:
    ctx = dkdf.session_context()
    dkdf.register(ctx, "v0", sales, version=0)
    assert ctx.sql("SELECT count(*) AS n FROM v0").to_pylist()[0]["n"] == 1000
    ctx.sql(f"CREATE EXTERNAL TABLE v3 STORED AS DELTA LOCATION '{sales}' OPTIONS ('version' '3')")
    assert ctx.sql("SELECT count(*) AS n FROM v3").to_pylist()[0]["n"] == 4000
    ctx.sql(f"CREATE EXTERNAL TABLE latest STORED AS DELTA LOCATION '{sales}'")
    assert ctx.sql("SELECT count(*) AS n FROM latest").to_pylist()[0]["n"] == 8000
    n = ctx.sql(f"SELECT count(*) AS n FROM delta_scan('{sales}', 1) WHERE part = 'b'").to_pylist()[0]["n"]
    assert n == 1000
    assert ctx.sql(f"SELECT count(*) AS n FROM delta_scan('{sales}')").to_pylist()[0]["n"] == 8000


def test_snapshot_pinned(tmp_path: Path) -> None:
    path = str(tmp_path / "pin")
    write_deltalake(path, pa.table({"x": [1, 2]}))
    ctx = datafusion.SessionContext()
    DeltaTable(path).register(ctx, "t")
    write_deltalake(path, pa.table({"x": [3]}), mode="append")
    assert ctx.sql("SELECT sum(x) AS s FROM t").to_pylist()[0]["s"] == 3


def test_catalog_over_directory(tmp_path: Path) -> None:
    write_deltalake(str(tmp_path / "one"), pa.table({"a": [1, 2, 3]}))
    write_deltalake(str(tmp_path / "two"), pa.table({"b": ["x"]}))
    write_deltalake(str(tmp_path / "sub" / "three"), pa.table({"c": [7]}))
    (tmp_path / "not_a_table").mkdir()
    ctx = datafusion.SessionContext()
    dkdf.register_catalog(ctx, "lake", str(tmp_path))
    assert ctx.sql("SELECT sum(a) AS s FROM lake.public.one").to_pylist() == [{"s": 6}]
    assert ctx.sql("SELECT b FROM lake.public.two").to_pylist() == [{"b": "x"}]
    assert ctx.sql("SELECT c FROM lake.sub.three").to_pylist() == [{"c": 7}]


def test_write_loop_streams_dataframe_into_delta(sales: str, tmp_path: Path) -> None:
    """Compute in DataFusion, commit in deltakernel: the DataFrame is an Arrow C stream source."""
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "sales", sales)
    df = ctx.sql("SELECT part, count(*) AS n, sum(amount) AS total FROM sales GROUP BY part")
    assert hasattr(df, "__arrow_c_stream__")
    out = str(tmp_path / "summary")
    write_deltalake(out, df, mode="overwrite")
    got = sorted(DeltaTable(out).to_pyarrow_table().to_pylist(), key=lambda r: r["part"])
    assert [(r["part"], r["n"]) for r in got] == [(p, 2000) for p in "abcd"]
    # read-modify-write of the same table: the read snapshot is pinned, the overwrite is a new version
    ctx2 = datafusion.SessionContext()
    dkdf.register(ctx2, "s", out)
    write_deltalake(out, ctx2.sql("SELECT part, n * 2 AS n, total FROM s WHERE part <> 'a'"), mode="overwrite")
    again = DeltaTable(out)
    assert again.version() == 1
    assert sorted((r["part"], r["n"]) for r in again.to_pyarrow_table().to_pylist()) == \
        [("b", 4000), ("c", 4000), ("d", 4000)]


def test_empty_result_and_projection_only(sales: str) -> None:
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "sales", sales)
    assert ctx.sql("SELECT * FROM sales WHERE part = 'zzz'").to_arrow_table().num_rows == 0
    assert dataset.metrics.fragments == 0
    assert ctx.sql("SELECT count(*) AS n FROM sales").to_pylist()[0]["n"] == 8000
    assert dataset.to_table(columns=["id"]).num_rows == 8000
    assert dataset.count_rows() == 8000


def test_grouping_small_files(sales: str) -> None:
    ctx = datafusion.SessionContext()
    dataset = dkdf.register(ctx, "sales", sales, target_partitions=3, provider="dataset")
    assert ctx.sql("SELECT count(*) AS n FROM sales").to_pylist()[0]["n"] == 8000
    assert dataset.metrics.fragments == 3
    assert "number_of_fragments=3" in explain(ctx, "SELECT * FROM sales")


def test_cli_sql(sales: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "deltakernel.cli", "sql",
         "SELECT part, count(*) AS n FROM s GROUP BY part ORDER BY part", "--table", f"s={sales}@1"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "| part | n    |" in proc.stdout and "| a    | 1000 |" in proc.stdout and "(2 rows)" in proc.stdout
