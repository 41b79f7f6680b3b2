"""FSCK (`DeltaTable.repair`): live files missing from storage are removed from the table in one commit."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import (
    add_action,
    assert_same_rows,
    commit_file,
    commit_info,
    duckdb_table,
    metadata_action,
    protocol_action,
    read_actions,
    write_actions,
    write_data_file,
)

from deltakernel import DeltaTable, write_deltalake


def _table(t: Path) -> None:
    write_deltalake(t, pa.table({"x": [1, 2], "p": ["a b", "c"]}), partition_by=["p"])
    write_deltalake(t, pa.table({"x": [3], "p": ["c"]}), mode="append", partition_by=["p"])




def test_repair_removes_missing_files(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _table(t)
    d = DeltaTable(str(t))
    (victim,) = [u for u in d.file_uris() if "/p=a" in u]
    os.remove(victim)
    key = os.path.relpath(victim, t).replace(os.sep, "/")
    assert d.repair(dry_run=True) == {"dry_run": True, "files_removed": [key]}
    assert not commit_file(t, 2).exists() and d.version() == 1
    assert d.repair() == {"dry_run": False, "files_removed": [key]}
    assert d.version() == 2
    h = d.history(1)[0]
    assert h["operation"] == "FSCK"
    assert h["operationMetrics"]["dry_run"] == "false"
    assert json.loads(h["operationMetrics"]["files_removed"]) == [key]
    (rem,) = [a["remove"] for a in read_actions(t, 2) if "remove" in a]
    assert rem["partitionValues"] == {"p": "a b"} and rem["dataChange"] is True
    assert sorted(d.to_pyarrow_table().column("x").to_pylist()) == [2, 3]
    assert_same_rows(duckdb_table(t), d.to_pyarrow_table())
    # nothing missing any more: no commit
    assert d.repair() == {"dry_run": False, "files_removed": []}
    assert d.version() == 2 and not commit_file(t, 3).exists()


def test_repair_with_many_files_uses_one_listing(tmp_path: Path) -> None:
    t = tmp_path / "t"
    size = write_data_file(t, "part-0.parquet", {"x": [1]})
    names = [f"part-{i}.parquet" for i in range(1500)]
    for n in names[1:]:
        shutil.copyfile(t / names[0], t / n)
    write_actions(t, 0, [commit_info(), protocol_action(), metadata_action([("x", "long")]),
                         *[add_action(n, size=size, stats={"numRecords": 1}) for n in names]])
    for n in names[:3]:
        os.remove(t / n)
    d = DeltaTable(str(t))
    assert sorted(d.repair()["files_removed"]) == sorted(names[:3])
    assert d.count() == 1497 and DeltaTable(str(t)).version() == 1
