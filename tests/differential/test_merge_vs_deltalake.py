"""MERGE differential: deltakernel's `DeltaTable.merge` against deltalake 1.6.6's on copies of the same table —
same rows afterwards (read by deltakernel, deltalake and DuckDB), same inserted / updated / deleted counts
(and copied rows on copy-on-write tables, where both rewrite exactly the touched files); change data too."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def _source() -> pa.Table:
    """Updates ids 5..40 step 5 (spread over the first two files), inserts 100..104 and a NULL-key row."""
    ids = [*range(5, 41, 5), 100, 101, 102, 103, 104, None]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": [["a", "b", "c"][(i or 0) % 3] for i in ids],
        "v": pa.array([None if i == 10 else -float(i or 1) for i in ids], pa.float64()),
        "s": [f"new{i}" for i in ids],
    })


Build = Callable[[Any, pa.Table], Any]

SCENARIOS: dict[str, Build] = {
    "upsert_all": lambda dt, src: dt.merge(src, "target.id = source.id", source_alias="source",
                                           target_alias="target").when_matched_update_all()
    .when_not_matched_insert_all(),
    "update_expr": lambda dt, src: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    .when_matched_update({"v": "t.v * 2 + coalesce(s.v, 0)", "s": "concat(coalesce(t.s, 'x'), '!')"}),
    "conditional_clauses": lambda dt, src: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    .when_matched_delete("t.id % 10 = 0")
    .when_matched_update({"s": "s.s"}, "s.v is not null")
    .when_not_matched_insert({"id": "s.id", "s": "'ins'"}, "s.id > 101")
    .when_not_matched_insert({"id": "s.id", "v": "1.0"}),
    "delete_only": lambda dt, src: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    .when_matched_delete(),
    "insert_only": lambda dt, src: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    .when_not_matched_insert_all(),
    "residual_predicate": lambda dt, src: dt.merge(src, "t.id = s.id and t.p = s.p and t.v > 10",
                                                   source_alias="s", target_alias="t")
    .when_matched_update({"v": "s.v"}).when_not_matched_insert_all(),
    "by_source": lambda dt, src: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
    .when_matched_update_all()
    .when_not_matched_by_source_delete("t.id > 80")
    .when_not_matched_by_source_update({"s": "'orphan'"}, "t.id < 3"),
}


def _dl_rows(path: Path) -> pa.Table:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return pa.table(qb.execute("select * from t").read_all())


def _compare(base: Path, tmp_path: Path, scenario: str, same_copied: bool) -> dict[str, Any]:
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    build = SCENARIOS[scenario]
    m_theirs = build(deltalake.DeltaTable(str(theirs)), _source()).execute()
    m_ours = build(DeltaTable(str(ours)), _source()).execute()
    for key in ("num_source_rows", "num_target_rows_inserted", "num_target_rows_updated",
                "num_target_rows_deleted"):
        assert m_ours[key] == m_theirs[key], (key, m_ours, m_theirs)
    if same_copied:
        assert m_ours["num_target_rows_copied"] == m_theirs["num_target_rows_copied"], (m_ours, m_theirs)
        assert m_ours["num_output_rows"] == m_theirs["num_output_rows"]
    expected = _dl_rows(theirs)
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected, scenario)
    assert_same_rows(_dl_rows(ours), expected, f"{scenario}: deltalake reads ours")
    assert_same_rows(duckdb_table(ours), expected, f"{scenario}: duckdb reads ours")
    return m_ours


@pytest.mark.parametrize("kind", ["unpartitioned", "partitioned", "checkpointed", "column_mapped"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_merge_matches_deltalake(tmp_path: Path, kind: str, scenario: str) -> None:
    base = tmp_path / "base"
    _make(base, kind)
    # both rewrite exactly the files holding touched rows on unpartitioned tables; with partitions
    # deltalake may rewrite files of a partition it cannot prune, so only the changed rows are compared
    _compare(base, tmp_path, scenario, same_copied=kind in ("unpartitioned", "column_mapped"))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_dv_merge_matches_deltalake_rows(tmp_path: Path, scenario: str) -> None:
    """deltalake merges copy-on-write on a DV table; we write DVs (on files already carrying one): same rows."""
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableDeletionVectors": "true"})
    DeltaTable(str(base)).delete("id % 9 = 0")
    m = _compare(base, tmp_path, scenario, same_copied=False)
    if m["num_target_rows_updated"] or m["num_target_rows_deleted"]:
        assert m["num_deletion_vectors_added"] > 0
        assert m["num_target_rows_copied"] == 0


@pytest.mark.parametrize("scenario", ["upsert_all", "conditional_clauses", "by_source"])
def test_change_data_matches_deltalake(tmp_path: Path, scenario: str) -> None:
    base = tmp_path / "base"
    _make(base, "partitioned", {"delta.enableChangeDataFeed": "true"})
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    SCENARIOS[scenario](deltalake.DeltaTable(str(theirs)), _source()).execute()
    SCENARIOS[scenario](DeltaTable(str(ours)), _source()).execute()
    cols = ["id", "p", "v", "s", "_change_type", "_commit_version"]
    theirs_cdf = pa.table(deltalake.DeltaTable(str(theirs)).load_cdf(starting_version=3).read_all()).select(cols)
    ours_cdf = DeltaTable(str(ours)).load_cdf(starting_version=3)
    ours_cdf = (ours_cdf.read_all() if hasattr(ours_cdf, "read_all") else ours_cdf).select(cols)
    assert ours_cdf.num_rows > 0
    assert_same_rows(ours_cdf, theirs_cdf, f"cdf {scenario}")
