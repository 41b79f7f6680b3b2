"""RESTORE: the target's rows, files, metadata and (never-downgraded) protocol come back in one commit."""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, commit_file, deltalake_table, duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import MissingFileError, VersionNotFoundError
from deltakernel.operations.maintenance.restore import RestoreError


def _x(path: Path, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(str(path), version=version).to_pyarrow_table().column("x").to_pylist())


def _history_table(path: Path) -> None:
    write_deltalake(path, pa.table({"x": [1, 2]}))  # v0
    write_deltalake(path, pa.table({"x": [3]}), mode="append")  # v1
    write_deltalake(path, pa.table({"x": [4]}), mode="overwrite")  # v2


def test_restore_to_a_version(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _history_table(t)
    dt_ = DeltaTable(str(t))
    metrics = dt_.restore(1)
    assert metrics == {"numRemovedFile": 1, "numRestoredFile": 2}
    assert dt_.version() == 3 and _x(t) == [1, 2, 3]
    h = dt_.history(1)[0]
    assert h["operation"] == "RESTORE" and h["operationParameters"] == {"version": "1"}
    assert int(h["operationMetrics"]["numRestoredFile"]) == 2 and int(h["operationMetrics"]["numRemovedFile"]) == 1
    actions = read_actions(t, 3)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert {a["path"] for a in adds} == {a["add"]["path"] for v in (0, 1) for a in read_actions(t, v) if "add" in a}
    assert all(a["dataChange"] and a.get("stats") for a in adds)
    assert [r["path"] for r in removes] == [a["add"]["path"] for a in read_actions(t, 2) if "add" in a]
    assert all(r["dataChange"] and r["deletionTimestamp"] > 0 for r in removes)
    assert_same_rows(deltalake_table(t), dt_.to_pyarrow_table())
    assert_same_rows(duckdb_table(t), dt_.to_pyarrow_table())
    # restoring again to where it already is changes no file (and still commits, as deltalake does)
    assert dt_.restore(1) == {"numRemovedFile": 0, "numRestoredFile": 0}
    assert dt_.version() == 4 and _x(t) == [1, 2, 3]


def test_restore_by_datetime_and_string(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": [1]}))
    time.sleep(0.05)
    mid = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.05)
    write_deltalake(t, pa.table({"x": [2]}), mode="overwrite")
    d = DeltaTable(str(t))
    assert d.restore(mid) == {"numRemovedFile": 1, "numRestoredFile": 1}
    assert _x(t) == [1]
    params = d.history(1)[0]["operationParameters"]
    assert params == {"datetime": str(int(mid.timestamp() * 1000))}
    write_deltalake(t, pa.table({"x": [5]}), mode="overwrite")
    d = DeltaTable(str(t))
    d.restore(mid.isoformat())
    assert _x(t) == [1]


def test_bad_targets_are_refused_and_leave_the_table(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _history_table(t)
    d = DeltaTable(str(t))
    with pytest.raises(RestoreError, match="earlier than the current version"):
        d.restore(2)
    with pytest.raises(VersionNotFoundError):
        d.restore(7)
    with pytest.raises(VersionNotFoundError):
        d.restore(-1)
    with pytest.raises(RestoreError):
        d.restore(dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1))
    assert not commit_file(t, 3).exists() and d.version() == 2


def test_missing_files_refuse_unless_ignored(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _history_table(t)
    gone = next(a["add"]["path"] for a in read_actions(t, 1) if "add" in a)
    os.remove(t / gone)
    d = DeltaTable(str(t))
    with pytest.raises(MissingFileError, match=gone):
        d.restore(1)
    assert not commit_file(t, 3).exists()
    metrics = d.restore(1, ignore_missing_files=True)
    assert metrics == {"numRemovedFile": 1, "numRestoredFile": 1}
    assert _x(t) == [1, 2]  # restored without the missing file: the table stays readable
    assert_same_rows(duckdb_table(t), d.to_pyarrow_table())


def test_metadata_comes_back(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": [1]}), configuration={"delta.appendOnly": "false"})
    write_deltalake(t, pa.table({"x": [2], "y": ["b"]}), mode="append", schema_mode="merge")
    DeltaTable(str(t)).alter.add_constraint({"x_pos": "x > 0"})
    d = DeltaTable(str(t))
    assert d.schema().names == ["x", "y"]
    d.restore(0)
    assert d.schema().names == ["x"]
    assert "delta.constraints.x_pos" not in d.metadata().configuration
    assert d.to_pyarrow_table().column_names == ["x"] and _x(t) == [1]
    write_deltalake(t, pa.table({"x": [-1]}), mode="append")  # the constraint is gone with the metadata
    assert _x(t) == [-1, 1]


def test_deletion_vectors_are_matched_by_path_and_dv(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": list(range(10))}), configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(str(t)).delete("x < 3")  # v1: same path, new DV
    DeltaTable(str(t)).delete("x = 9")  # v2: same path, newer DV
    d = DeltaTable(str(t))
    assert d.restore(1) == {"numRemovedFile": 1, "numRestoredFile": 1}
    actions = read_actions(t, 3)
    (add,) = [a["add"] for a in actions if "add" in a]
    (rem,) = [a["remove"] for a in actions if "remove" in a]
    assert add["path"] == rem["path"] and add["deletionVector"] != rem["deletionVector"]
    assert _x(t) == list(range(3, 10))
    assert sorted(duckdb_table(t).column("x").to_pylist()) == list(range(3, 10))
    d.restore(0)
    assert _x(t) == list(range(10))


def test_protocol_is_never_downgraded_unless_allowed(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": [1, 2]}))  # v0: (1, 2)
    DeltaTable(str(t)).alter.set_table_properties({"delta.enableDeletionVectors": "true"})  # v1
    DeltaTable(str(t)).delete("x = 1")  # v2 with a DV
    d = DeltaTable(str(t))
    upgraded = d.protocol()
    assert upgraded.has_feature("deletionVectors")
    d.restore(0)
    assert d.protocol() == upgraded, "the protocol never goes down by default"
    assert _x(t) == [1, 2]
    write_deltalake(t, pa.table({"x": [3]}), mode="append")
    d = DeltaTable(str(t))
    d.restore(0, protocol_downgrade_allowed=True)
    assert (d.protocol().min_reader_version, d.protocol().min_writer_version) == (1, 2)
    assert _x(t) == [1, 2]
    assert_same_rows(deltalake_table(t), d.to_pyarrow_table())
    # a target whose data has DVs keeps the feature even when downgrades are allowed
    DeltaTable(str(t)).restore(2, protocol_downgrade_allowed=True)
    assert DeltaTable(str(t)).protocol().has_feature("deletionVectors")
    assert _x(t) == [2]


def test_restore_keeps_row_ids(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": [10, 20, 30]}), configuration={"delta.enableRowTracking": "true"})
    before = DeltaTable(str(t)).to_pyarrow_table(columns=None)
    DeltaTable(str(t)).delete("x = 20")
    d = DeltaTable(str(t))
    d.restore(0)
    (add,) = [a["add"] for a in read_actions(t, 2) if "add" in a]
    assert add["baseRowId"] == 0
    assert_same_rows(d.to_pyarrow_table(), before)
