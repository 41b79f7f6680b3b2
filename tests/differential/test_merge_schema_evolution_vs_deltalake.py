"""MERGE schema evolution differential: deltakernel's `merge(..., merge_schema=True)` against deltalake 1.6.6's on
copies of the same table — same evolved schema (column and nested field order) and the same rows.

deltalake 1.6.6 evolves nested structs too, but loses data on the way: rows it *copies* out of a rewritten file
come back with a NULL struct (the file is written without the target-only fields). Those rows are checked
against the expected values, the rows it updates or inserts against deltalake. It also fills new columns a
clause does not assign from the source; delta-spark (and deltakernel) leave them as the clause says. deltalake also reads the table
deltakernel wrote (no deletion vectors / column mapping / type widening: its pyarrow reader lacks them)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import deltalake_table, duckdb_table

from deltakernel import DeltaTable

deltalake = pytest.importorskip("deltalake")

S_YZ = pa.struct([("y", pa.int32()), ("z", pa.string())])


def _by_id(t: pa.Table) -> dict[Any, dict[str, Any]]:
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in pa.table(t).to_pylist()}


def _pair(tmp_path: Path, data: pa.Table) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    deltalake.write_deltalake(str(ours), data)
    shutil.copytree(ours, theirs)
    return ours, theirs


def _both(ours: Path, theirs: Path, build: Any, src: pa.Table) -> None:
    build(DeltaTable(str(ours)).merge(src, "t.id = s.id", source_alias="s", target_alias="t",
                                      merge_schema=True)).execute()
    build(deltalake.DeltaTable(str(theirs)).merge(src, "t.id = s.id", source_alias="s", target_alias="t",
                                                  merge_schema=True)).execute()


def _schema(path: Path) -> str:
    return DeltaTable(str(path)).schema().json()


def test_top_level_columns_only_the_assigned_ones(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([1, 2, 3], pa.int32())})
    ours, theirs = _pair(tmp_path, data)
    src = pa.table({"id": pa.array([2, 9], pa.int64()), "v": pa.array([20, 90], pa.int32()),
                    "e1": ["a", "b"], "e2": pa.array([1.5, 2.5]), "unused": ["x", "y"]})
    _both(ours, theirs, lambda m: m.when_matched_update({"v": "s.v", "e1": "s.e1"})
          .when_not_matched_insert({"id": "s.id", "e2": "s.e2"}), src)
    assert DeltaTable(str(ours)).schema().names == ["id", "v", "e1", "e2"]
    assert _schema(ours) == _schema(theirs)
    got = _by_id(DeltaTable(str(ours)).to_pyarrow_table())
    # delta-spark: a clause writes only the columns it assigns (an UPDATE keeps the others, an INSERT leaves
    # them NULL). deltalake 1.6.6 also copies the source's value into a new column a clause does not assign
    # (row 2 gets e2, row 9 gets e1), so only `v` is compared with it.
    assert got == {1: {"v": 1, "e1": None, "e2": None}, 2: {"v": 20, "e1": "a", "e2": None},
                   3: {"v": 3, "e1": None, "e2": None}, 9: {"v": None, "e1": None, "e2": 2.5}}
    assert {i: r["v"] for i, r in got.items()} == {i: r["v"] for i, r in _by_id(deltalake_table(theirs)).items()}
    assert got == _by_id(deltalake_table(ours)) == _by_id(duckdb_table(ours))


def test_insert_all_new_nested_field(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"y": 1, "z": "a"}, None], S_YZ)})
    ours, theirs = _pair(tmp_path, data)
    src_type = pa.struct([("x", pa.float64()), ("z", pa.string()), ("y", pa.int32())])
    src = pa.table({"id": pa.array([2, 3, 4], pa.int64()),
                    "s": pa.array([{"x": 2.5, "z": "b", "y": 2}, {"x": 3.5, "z": "c", "y": 3}, None], src_type)})
    _both(ours, theirs, lambda m: m.when_not_matched_insert_all(), src)
    assert [f.name for f in DeltaTable(str(ours)).schema().field("s").type.fields] == ["y", "z", "x"]
    assert _schema(ours) == _schema(theirs)
    got = _by_id(DeltaTable(str(ours)).to_pyarrow_table())
    assert got == _by_id(deltalake_table(theirs))
    assert got == _by_id(deltalake_table(ours)) == _by_id(duckdb_table(ours))


def test_upsert_new_nested_field(tmp_path: Path) -> None:
    rows = {i: {"y": i, "z": f"z{i}"} for i in range(4)}
    data = pa.table({"id": pa.array(list(rows), pa.int64()), "s": pa.array(list(rows.values()), S_YZ)})
    ours, theirs = _pair(tmp_path, data)
    src_type = pa.struct([("x", pa.int64()), ("y", pa.int32()), ("z", pa.string())])
    src = pa.table({"id": pa.array([1, 7], pa.int64()),
                    "s": pa.array([{"x": 10, "y": 11, "z": "n1"}, {"x": 70, "y": 77, "z": "n7"}], src_type)})
    _both(ours, theirs, lambda m: m.when_matched_update_all().when_not_matched_insert_all(), src)
    assert _schema(ours) == _schema(theirs)
    got = _by_id(DeltaTable(str(ours)).to_pyarrow_table())
    want = {i: {"s": {**r, "x": None}} for i, r in rows.items()}
    want[1] = {"s": {"y": 11, "z": "n1", "x": 10}}
    want[7] = {"s": {"y": 77, "z": "n7", "x": 70}}
    assert got == want
    theirs_rows = _by_id(deltalake_table(theirs))
    for i in (1, 7):  # updated and inserted rows: deltalake agrees (its copied rows lose their struct)
        assert got[i] == theirs_rows[i]
    assert got == _by_id(deltalake_table(ours)) == _by_id(duckdb_table(ours))
