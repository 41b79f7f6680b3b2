"""UPDATE differential: deltakernel's `DeltaTable.update` against deltalake 1.6.6's on copies of the same
table — same rows afterwards (read by deltakernel, deltalake and DuckDB), same `num_updated_rows`, and on
copy-on-write tables the same files removed and rows copied; change data feed compared too."""

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
    rng = range(offset, offset + n)
    return dml_data(n, offset).append_column("n", pa.array([i % 13 for i in rng], pa.int32()))


def _make(path: Path, kind: str, configuration: dict[str, str] | None = None) -> None:
    make_dml_table(path, kind, _data, configuration)


CASES = [
    ({"v": "v * 2"}, "id > 70"),
    ({"s": "s || '_x'", "n": "n + 100"}, "id % 4 = 1"),
    ({"v": "0.5"}, "v is null"),
    ({"s": "'fixed'"}, "s = 's3' or id < 5"),
    ({"n": "n * 2"}, "p = 'b'"),
    ({"p": "'z'"}, "p = 'a' and id >= 40"),
    ({"v": "CASE WHEN n > 6 THEN v + 1 ELSE NULL END"}, "s in ('s1', 's2') and v > 20"),
    ({"v": "1.0"}, "id > 1000"),
    ({"n": "n - 1", "s": "NULL"}, None),
]


def _dl_rows(path: Path) -> pa.Table:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return pa.table(qb.execute("select * from t").read_all())


def _copies(tmp_path: Path, base: Path) -> tuple[Path, Path]:
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    return theirs, ours


@pytest.mark.parametrize("kind", ["unpartitioned", "partitioned", "checkpointed", "column_mapped"])
@pytest.mark.parametrize("updates, predicate", CASES)
def test_update_matches_deltalake(tmp_path: Path, kind: str, updates: dict, predicate: str | None) -> None:
    base = tmp_path / "base"
    _make(base, kind)
    theirs, ours = _copies(tmp_path, base)
    m_theirs = deltalake.DeltaTable(str(theirs)).update(updates=updates, predicate=predicate)
    m_ours = DeltaTable(str(ours)).update(updates=updates, predicate=predicate)
    what = f"{kind} {updates} {predicate}"
    assert m_ours["num_updated_rows"] == m_theirs["num_updated_rows"], what
    assert m_ours["num_copied_rows"] == m_theirs["num_copied_rows"], what
    assert m_ours["num_removed_files"] == m_theirs["num_removed_files"], what
    expected = DeltaTable(str(theirs)).to_pyarrow_table()
    assert_same_rows(_dl_rows(theirs), expected, f"{what}: deltalake reads theirs")
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected, what)
    assert_same_rows(_dl_rows(ours), expected, f"{what}: deltalake reads ours")
    assert_same_rows(duckdb_table(ours), expected, f"{what}: duckdb reads ours")


def test_new_values_match_deltalake(tmp_path: Path) -> None:
    base = tmp_path / "base"
    _make(base, "partitioned")
    theirs, ours = _copies(tmp_path, base)
    values = {"s": "fixed", "n": 7, "v": 2.25}
    m_theirs = deltalake.DeltaTable(str(theirs)).update(new_values=values, predicate="id % 3 = 2")
    m_ours = DeltaTable(str(ours)).update(new_values=values, predicate="id % 3 = 2")
    assert m_ours["num_updated_rows"] == m_theirs["num_updated_rows"] > 0
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), DeltaTable(str(theirs)).to_pyarrow_table())


@pytest.mark.parametrize("updates, predicate", [({"v": "v * 2"}, "id > 70"), ({"n": "n * 2"}, "p = 'b'"),
                                                ({"s": "'fixed'"}, "s = 's3' or id < 5")])
def test_dv_update_matches_deltalake_rows(tmp_path: Path, updates: dict, predicate: str) -> None:
    """deltalake updates copy-on-write on a DV table; we write DVs: same rows and updated-row count."""
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableDeletionVectors": "true"})
    DeltaTable(str(base)).delete("id % 9 = 0")  # the table already has DVs
    theirs, ours = _copies(tmp_path, base)
    m_theirs = deltalake.DeltaTable(str(theirs)).update(updates=updates, predicate=predicate)
    m_ours = DeltaTable(str(ours)).update(updates=updates, predicate=predicate)
    assert m_ours["num_updated_rows"] == m_theirs["num_updated_rows"]
    expected = _dl_rows(theirs)
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected, predicate)
    assert_same_rows(_dl_rows(ours), expected, f"{predicate}: deltalake reads ours")
    assert_same_rows(duckdb_table(ours), expected, f"{predicate}: duckdb reads ours")


@pytest.mark.parametrize("updates, predicate", [({"v": "v * 2"}, "id > 70"), ({"s": "'x'"}, "v is null"),
                                                ({"p": "'z'"}, "p = 'a' and id >= 40")])
def test_change_data_matches_deltalake(tmp_path: Path, updates: dict, predicate: str) -> None:
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableChangeDataFeed": "true"})
    theirs, ours = _copies(tmp_path, base)
    deltalake.DeltaTable(str(theirs)).update(updates=updates, predicate=predicate)
    DeltaTable(str(ours)).update(updates=updates, predicate=predicate)
    cols = ["id", "p", "v", "s", "n", "_change_type", "_commit_version"]
    theirs_cdf = pa.table(deltalake.DeltaTable(str(theirs)).load_cdf(starting_version=3).read_all()).select(cols)
    ours_cdf = DeltaTable(str(ours)).load_cdf(starting_version=3)
    ours_cdf = (ours_cdf.read_all() if hasattr(ours_cdf, "read_all") else ours_cdf).select(cols)
    assert ours_cdf.num_rows > 0
    # delta-spark records every updated row; delta-rs leaves out rows the update did not change (pre ==
    # post, e.g. NULL * 2): compare without those, and check that they are the only difference
    assert_same_rows(_changed_only(ours_cdf), theirs_cdf, f"cdf {predicate}")
    matched = DeltaTable(str(ours)).history(1)[0]["operationMetrics"]["numUpdatedRows"]
    assert ours_cdf.num_rows == 2 * int(matched)
    # deltalake reads our change data the same way
    dl_ours = pa.table(deltalake.DeltaTable(str(ours)).load_cdf(starting_version=3).read_all()).select(cols)
    assert_same_rows(dl_ours, ours_cdf, f"cdf {predicate}: deltalake reads ours")


def _changed_only(cdf: pa.Table) -> pa.Table:
    """Change rows without the pre/post pairs that are equal (ids are unique per version)."""
    rows = cdf.to_pylist()
    image = {}
    for r in rows:
        key = (r["id"], r["_commit_version"], r["_change_type"])
        image[key] = {k: v for k, v in r.items() if k != "_change_type"}
    same = {(i, c) for (i, c, t) in image if t == "update_preimage"
            and image.get((i, c, "update_postimage")) == image[(i, c, t)]}
    keep = [(r["id"], r["_commit_version"]) not in same for r in rows]
    return cdf.filter(pa.array(keep))
