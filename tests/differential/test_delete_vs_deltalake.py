"""DELETE differential: deltakernel's `DeltaTable.delete` against deltalake 1.6.6's on copies of the same
table — same remaining rows (read by deltakernel, deltalake and DuckDB), same `num_deleted_rows`, and on
copy-on-write tables the same files touched and rows copied; change data feed compared too."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, dml_data, duckdb_table, make_dml_table

from deltakernel import DeltaTable

deltalake = pytest.importorskip("deltalake")


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset)


def _make(path: Path, kind: str, configuration: dict[str, str] | None = None) -> None:
    make_dml_table(path, kind, _data, configuration)


PREDICATES = [
    "id > 70",
    "id % 4 = 1",
    "v is null",
    "s = 's3' or id < 5",
    "p = 'b'",
    "p = 'a' and id >= 40",
    "s in ('s1', 's2') and v > 20",
    "id > 1000",
]


def _dl_rows(path: Path) -> pa.Table:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return pa.table(qb.execute("select * from t").read_all())


@pytest.mark.parametrize("kind", ["unpartitioned", "partitioned", "checkpointed", "column_mapped"])
@pytest.mark.parametrize("predicate", PREDICATES)
def test_delete_matches_deltalake(tmp_path: Path, kind: str, predicate: str) -> None:
    base = tmp_path / "base"
    _make(base, kind)
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    m_theirs = deltalake.DeltaTable(str(theirs)).delete(predicate)
    m_ours = DeltaTable(str(ours)).delete(predicate)
    assert m_ours["num_deleted_rows"] == m_theirs["num_deleted_rows"]
    assert m_ours["num_removed_files"] == m_theirs["num_removed_files"]
    assert m_ours["num_copied_rows"] == m_theirs["num_copied_rows"]
    expected = DeltaTable(str(theirs)).to_pyarrow_table()
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected, f"{kind} {predicate}")
    assert_same_rows(_dl_rows(ours), expected, f"{kind} {predicate}: deltalake reads ours")
    assert_same_rows(duckdb_table(ours), expected, f"{kind} {predicate}: duckdb reads ours")


@pytest.mark.parametrize("predicate", ["id > 70", "id % 4 = 1", "p = 'b'", "s = 's3' or id < 5"])
def test_dv_delete_matches_deltalake_rows(tmp_path: Path, predicate: str) -> None:
    """deltalake deletes copy-on-write on a DV table; we write DVs: same rows and deleted-row count."""
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableDeletionVectors": "true"})
    DeltaTable(str(base)).delete("id % 9 = 0")  # the table already has DVs
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    m_theirs = deltalake.DeltaTable(str(theirs)).delete(predicate)
    m_ours = DeltaTable(str(ours)).delete(predicate)
    assert m_ours["num_deleted_rows"] == m_theirs["num_deleted_rows"]
    expected = _dl_rows(theirs)
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected, predicate)
    assert_same_rows(_dl_rows(ours), expected, f"{predicate}: deltalake reads ours")
    assert_same_rows(duckdb_table(ours), expected, f"{predicate}: duckdb reads ours")


@pytest.mark.parametrize("predicate", ["id > 70", "v is null", "p = 'a' and id >= 40"])
def test_change_data_matches_deltalake(tmp_path: Path, predicate: str) -> None:
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableChangeDataFeed": "true"})
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    deltalake.DeltaTable(str(theirs)).delete(predicate)
    DeltaTable(str(ours)).delete(predicate)
    cols = ["id", "p", "v", "s", "_change_type", "_commit_version"]
    theirs_cdf = pa.table(deltalake.DeltaTable(str(theirs)).load_cdf(starting_version=3).read_all()).select(cols)
    ours_cdf = DeltaTable(str(ours)).load_cdf(starting_version=3)
    ours_cdf = (ours_cdf.read_all() if hasattr(ours_cdf, "read_all") else ours_cdf).select(cols)
    assert ours_cdf.num_rows > 0
    assert_same_rows(ours_cdf, theirs_cdf, f"cdf {predicate}")
