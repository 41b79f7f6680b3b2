"""Lite VACUUM beside deltalake 1.6.6 on tables with change data and deletion vectors.

Ours follows delta-spark's `VACUUM LITE` (VacuumCommand.getFilesFromDeltaLog: every expired remove's data file
*and its deletion-vector file*, plus the commits' `cdc` files): deltalake's lite mode deletes only the data
files of expired tombstones. Everything else is the same: the data files chosen, the VACUUM START / END
commits and their parameter and metric keys (docs/decisions.md "VACUUM LITE: deletion vectors and change
data")."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, deltalake_table, duckdb_table

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor

deltalake = pytest.importorskip("deltalake")

ZERO = {"retention_hours": 0, "enforce_retention_duration": False}


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")
            if p.is_file() and not p.relative_to(root).as_posix().startswith("_delta_log/")}


def _keys(entry: dict[str, object], field: str) -> set[str]:
    value = entry.get(field) or {}
    assert isinstance(value, dict)
    return set(value)


def test_change_data_files_are_vacuumed_by_lite_mode(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_deltalake(ours, pa.table({"x": list(range(20)), "p": [f"k{i % 2}" for i in range(20)]}),
                    partition_by=["p"], configuration={"delta.enableChangeDataFeed": "true"})
    DeltaTable(str(ours)).delete("x = 1")
    DeltaTable(str(ours)).update(updates={"x": "x + 100"}, predicate="x = 4")
    shutil.copytree(ours, theirs)
    cdc = {f for f in _files(ours) if f.startswith("_change_data/")}
    assert len(cdc) == 2
    planned = set(DeltaTable(str(ours)).vacuum(**ZERO))
    their_lite = set(deltalake.DeltaTable(str(theirs)).vacuum(**ZERO))
    their_full = set(deltalake.DeltaTable(str(theirs)).vacuum(**ZERO, full=True))
    assert their_lite and not any(f.startswith("_change_data/") for f in their_lite)
    assert planned == their_lite | cdc == their_full  # lite finds what deltalake's listing finds
    deleted = set(DeltaTable(str(ours)).vacuum(**ZERO, dry_run=False))
    deltalake.DeltaTable(str(theirs)).vacuum(**ZERO, dry_run=False)
    assert deleted == planned and _files(theirs) - _files(ours) == cdc
    mine, dl = DeltaTable(str(ours)).history(2), deltalake.DeltaTable(str(theirs)).history(2)
    assert [h["operation"] for h in mine] == [h["operation"] for h in dl] == ["VACUUM END", "VACUUM START"]
    for a, b in zip(mine, dl):
        assert _keys(a, "operationParameters") == _keys(b, "operationParameters")
        assert _keys(a, "operationMetrics") == _keys(b, "operationMetrics")
    start, their_start = mine[1]["operationMetrics"], dl[1]["operationMetrics"]
    assert int(start["numFilesToDelete"]) == int(their_start["numFilesToDelete"]) + len(cdc)
    expected = DeltaTable(str(ours)).to_pyarrow_table()
    assert_same_rows(deltalake_table(ours), expected, "deltalake")
    assert_same_rows(duckdb_table(ours), expected, "duckdb")


def test_replaced_deletion_vector_files_are_vacuumed_and_the_live_one_kept(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_deltalake(ours, pa.table({"x": list(range(20))}), configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(str(ours)).delete("x = 1")
    DeltaTable(str(ours)).delete("x = 2")  # the file's DV is replaced: the first DV file is garbage
    shutil.copytree(ours, theirs)
    dv_files = {f for f in _files(ours) if f.startswith("deletion_vector_")}
    live = DeletionVectorDescriptor.from_dict(
        DeltaTable(str(ours)).snapshot.files.column("deletion_vector")[0].as_py()).relative_key()
    assert len(dv_files) == 2 and live in dv_files
    planned = set(DeltaTable(str(ours)).vacuum(**ZERO))
    assert planned == dv_files - {live}
    # deltalake's lite mode leaves the replaced DV file; its full mode also lists the *live* one (it does not
    # count deletion-vector files as referenced, delta-io/delta-rs#1817): pinned, see docs/decisions.md
    assert deltalake.DeltaTable(str(theirs)).vacuum(**ZERO) == []
    assert set(deltalake.DeltaTable(str(theirs)).vacuum(**ZERO, full=True)) == dv_files
    DeltaTable(str(ours)).vacuum(**ZERO, dry_run=False)
    assert {f for f in _files(ours) if f.startswith("deletion_vector_")} == {live}
    assert sorted(DeltaTable(str(ours)).to_pyarrow_table().column("x").to_pylist()) == [
        x for x in range(20) if x not in (1, 2)]
    assert sorted(duckdb_table(ours).column("x").to_pylist()) == [x for x in range(20) if x not in (1, 2)]
