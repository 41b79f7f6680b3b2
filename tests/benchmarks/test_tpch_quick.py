"""Smoke test of `benchmarks/tpch.py --quick` on the embedded engines: the benchmark runs end to end and every
TPC-H query returns the same rows on the Delta tables (converted over the same files, and written by
deltakernel) as on the plain Parquet files - through deltakernel's DataFusion integration, deltalake's
QueryBuilder and DuckDB's delta extension. Rows only: no time is asserted (benchmarks measure, tests check)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _tpchgen_available() -> bool:
    return Path(sys.executable).with_name("tpchgen-cli").exists() or shutil.which("tpchgen-cli") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _tpchgen_available(), reason="tpchgen-cli is not installed (test extra)")
def test_tpch_quick_embedded_rows_equal(tmp_path: Path) -> None:
    pytest.importorskip("datafusion")
    pytest.importorskip("deltalake")
    pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_delta")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import tpch
    finally:
        sys.path.remove(str(BENCHMARKS))
    # --runs 0: the warm-up alone runs every contender once and compares the rows
    results = tpch.main(["--quick", "--engine", "embedded", "--runs", "0", "--data-dir", str(tmp_path / "data")])
    assert len(results) == 1 and "error" not in results[0], results
    queries = results[0]["queries"]
    assert sorted(map(int, queries)) == list(range(1, 23))
    contenders = {"datafusion:parquet", "datafusion:converted", "datafusion:written", "deltalake-qb:converted",
                  "deltalake-qb:written", "duckdb:parquet", "duckdb:converted", "duckdb:written"}
    for q, entry in queries.items():
        assert entry["errors"] == {}, (q, entry["errors"])
        assert set(entry["rows"]) == contenders, q
        assert entry["mismatch"] == [], (q, entry["mismatch"], entry["digest"])
    # every query returns rows at SF 0.01 (an empty result would make the comparison vacuous)
    assert all(max(e["rows"].values()) > 0 for e in queries.values())
    # the written variant is a Delta table written by deltakernel, partitioned as the benchmark says
    assert (tmp_path / "data" / "written" / "customer" / "_delta_log").is_dir()
    assert any(p.name.startswith("c_nationkey=") for p in (tmp_path / "data" / "written" / "customer").iterdir())
    # the settings A/B of the embedded path (benchmarks/tpch_embedded_ab.py) on the same tables: every arm (here
    # deltakernel's session, the same with Parquet filter pushdown off, and dkdf.sql's per-table row filter choice
    # with its policy off: `ctx.sql`'s plan through the other entry point) returns the same rows
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import tpch_embedded_ab
    finally:
        sys.path.remove(str(BENCHMARKS))
    ab = tpch_embedded_ab.main(["--data-dir", str(tmp_path / "data"), "--sf", "0.01", "--queries", "6,17",
                                "--runs", "1", "--b", "datafusion.execution.parquet.pushdown_filters=false",
                                "--b", "deltakernel.row_filters=off"])
    assert sorted(ab["queries"]) == ["converted:Q17", "converted:Q6", "written:Q17", "written:Q6"]
    assert all(e["rows_differ"] == [] and len(e["wall"]) == 3 for e in ab["queries"].values()), ab
