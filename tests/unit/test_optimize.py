"""OPTIMIZE compaction (`DeltaTable.optimize.compact`): bins, rows kept, log actions, DVs purged, row ids kept,
column mapping, change data feed, intermediate commits, progress, failure cleanup, and concurrency with two
handles (appends do not conflict; a concurrent delete of a rewritten file does, whichever commits first)."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import CommitConflictError, ConcurrentDeleteReadError, DeltaError
from deltakernel.kernel.transaction import transaction as txn_mod

METRIC_KEYS = {"numFilesAdded", "numFilesRemoved", "filesAdded", "filesRemoved", "partitionsOptimized",
               "numBatches", "totalConsideredFiles", "totalFilesSkipped", "preserveInsertionOrder",
               "plannerStrategy", "preservedStableOrder", "maxBinSpanFiles"}


def _data(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [["a", "b"][i % 2] for i in ids],
                     "s": [f"s{i % 13}" for i in ids]})


def _make(path: Path, appends: int = 5, rows: int = 20, partition_by: list[str] | None = None,
          configuration: dict[str, str] | None = None) -> DeltaTable:
    for i in range(appends):
        write_deltalake(str(path), _data(rows, i * rows), mode="append", partition_by=partition_by,
                        configuration=configuration if i == 0 else None)
    return DeltaTable(str(path))


def _data_files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def test_compact_unpartitioned_keeps_rows_and_order(tmp_path: Path) -> None:
    dt = _make(tmp_path)
    before = dt.to_pyarrow_table()
    v = dt.version()
    m = dt.optimize.compact()
    assert set(m) == METRIC_KEYS
    assert (m["numFilesRemoved"], m["numFilesAdded"], m["partitionsOptimized"]) == (5, 1, 1)
    assert json.loads(m["filesRemoved"])["totalFiles"] == 5
    assert dt.version() == v + 1 and len(dt.files()) == 1
    # one file, rows in insertion order (contiguous bins keep the order)
    assert dt.to_pyarrow_table().column("id").to_pylist() == before.column("id").to_pylist()
    actions = read_actions(tmp_path, v + 1)
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    assert len(adds) == 1 and len(removes) == 5
    assert all(a["dataChange"] is False for a in adds) and all(r["dataChange"] is False for r in removes)
    assert json.loads(adds[0]["stats"])["numRecords"] == 100
    info = dt.history(1)[0]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {"predicate": "[]", "targetSize": str(100 * 1024 * 1024)}
    assert info["operationMetrics"]["numFilesRemoved"] == "5"
    # idempotent: nothing left to compact, no commit
    m2 = dt.optimize.compact()
    assert (m2["numFilesAdded"], m2["numFilesRemoved"], m2["totalFilesSkipped"]) == (0, 0, 1)
    assert dt.version() == v + 1


def test_compact_partitioned_and_filters(tmp_path: Path) -> None:
    dt = _make(tmp_path, partition_by=["p"])
    before = dt.to_pyarrow_table()
    m = dt.optimize.compact(partition_filters=[("p", "=", "a")])
    assert (m["numFilesRemoved"], m["numFilesAdded"], m["partitionsOptimized"]) == (5, 1, 1)
    assert m["totalConsideredFiles"] == 5
    assert dt.history(1)[0]["operationParameters"]["predicate"] == json.dumps(["p = 'a'"])
    assert len(dt.files([("p", "=", "b")])) == 5 and len(dt.files([("p", "=", "a")])) == 1
    m = dt.optimize.compact()
    assert (m["numFilesRemoved"], m["numFilesAdded"], m["totalFilesSkipped"]) == (5, 1, 1)
    assert_same_rows(dt.to_pyarrow_table(), before, "partitioned compaction")
    add = next(a["add"] for a in read_actions(tmp_path, dt.version()) if "add" in a)
    assert add["partitionValues"] == {"p": "b"} and add["path"].startswith("p=b/")


def test_target_size_bins_and_skips(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=6)
    sizes = [int(s) for s in dt.get_add_actions().column("size_bytes").to_pylist()]
    target = max(sizes) * 2 + 1  # two files per bin
    before = dt.to_pyarrow_table()
    m = dt.optimize.compact(target_size=target)
    assert m["numFilesRemoved"] == 6 and m["numFilesAdded"] == 3 and m["maxBinSpanFiles"] == 2
    assert dt.history(1)[0]["operationParameters"]["targetSize"] == str(target)
    assert_same_rows(dt.to_pyarrow_table(), before)
    # the new files are larger than a tiny target: all skipped
    m = dt.optimize.compact(target_size=10)
    assert m["numFilesRemoved"] == 0 and m["totalFilesSkipped"] == 3
    # delta.targetFileSize is the default target
    dt.alter.set_table_properties({"delta.targetFileSize": "1000000"})
    write_deltalake(dt, _data(20, 1000), mode="append")
    m = dt.optimize.compact()
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (4, 1)
    assert dt.history(1)[0]["operationParameters"]["targetSize"] == "1000000"


def test_deletion_vectors_are_purged(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=2, rows=50, configuration={"delta.enableDeletionVectors": "true"})
    dt.optimize.compact()  # one file
    dt.delete("id % 10 = 0")
    assert any(a["add"].get("deletionVector") for a in read_actions(tmp_path, dt.version()) if "add" in a)
    before = dt.to_pyarrow_table()
    assert before.num_rows == 90
    m = dt.optimize.compact()  # a single file, but its DV deletes 10 %: rewritten alone
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (1, 1)
    assert dt.history(1)[0]["operationMetrics"]["numDeletionVectorsRemoved"] == "1"
    removes = [a["remove"] for a in read_actions(tmp_path, dt.version()) if "remove" in a]
    assert removes[0].get("deletionVector") is not None
    adds = [a["add"] for a in read_actions(tmp_path, dt.version()) if "add" in a]
    assert "deletionVector" not in adds[0] and json.loads(adds[0]["stats"])["numRecords"] == 90
    assert_same_rows(dt.to_pyarrow_table(), before, "after purge")


def test_row_tracking_keeps_row_ids(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=4, configuration={"delta.enableRowTracking": "true"})
    before = dt.to_pyarrow_table(row_tracking=True)
    dt.optimize.compact()
    after = dt.to_pyarrow_table(row_tracking=True)
    assert len(dt.files()) == 1
    key = lambda t: sorted(zip(t["id"].to_pylist(), t["_row_id"].to_pylist(),
                               t["_row_commit_version"].to_pylist()))
    assert key(after) == key(before)
    info = dt.history(1)[0]
    assert info["tags"]["delta.rowTracking.preserved"] == "true"


def test_column_mapping(tmp_path: Path) -> None:
    dt = _make(tmp_path, partition_by=["p"], configuration={"delta.columnMapping.mode": "name"})
    before = dt.to_pyarrow_table()
    m = dt.optimize.compact()
    assert m["numFilesAdded"] == 2
    assert_same_rows(dt.to_pyarrow_table(), before, "column mapping")
    import pyarrow.parquet as pq

    adds = [a["add"] for a in read_actions(tmp_path, dt.version()) if "add" in a]
    names = pq.read_schema(tmp_path / adds[0]["path"]).names
    assert names and all(n.startswith("col-") for n in names)
    assert set(adds[0]["partitionValues"]) == {dt.snapshot.schema.field("p").metadata[
        "delta.columnMapping.physicalName"]}


def test_change_data_feed_writes_nothing(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=3, configuration={"delta.enableChangeDataFeed": "true"})
    v = dt.version()
    dt.optimize.compact()
    actions = read_actions(tmp_path, v + 1)
    assert not any("cdc" in a for a in actions)
    assert dt.load_cdf(starting_version=v + 1).read_all().num_rows == 0


def test_min_commit_interval_commits_per_bin(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=6)
    sizes = [int(s) for s in dt.get_add_actions().column("size_bytes").to_pylist()]
    before = dt.to_pyarrow_table()
    v = dt.version()
    calls: list[tuple[int, int]] = []
    m = dt.optimize.compact(target_size=max(sizes) * 2 + 1, min_commit_interval=timedelta(0),
                            max_concurrent_tasks=1, progress=lambda d, t: calls.append((d, t)))
    assert m["numFilesAdded"] == 3
    assert dt.version() == v + 3  # one commit per bin
    assert [h["operation"] for h in dt.history(3)] == ["OPTIMIZE"] * 3
    assert_same_rows(dt.to_pyarrow_table(), before)
    assert calls[0] == (0, 6) and calls[-1] == (6, 6)
    # a long interval: a single commit
    dt2 = _make(tmp_path / "t2", appends=6)
    v2 = dt2.version()
    dt2.optimize.compact(target_size=max(sizes) * 2 + 1, min_commit_interval=3600)
    assert dt2.version() == v2 + 1


def test_failed_commit_leaves_table_and_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dt = _make(tmp_path, appends=3)
    files = _data_files(tmp_path)
    v = dt.version()

    def boom(self: object, *a: object, **k: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(txn_mod.Transaction, "commit", boom)
    with pytest.raises(RuntimeError):
        dt.optimize.compact()
    assert DeltaTable(str(tmp_path)).version() == v
    assert _data_files(tmp_path) == files  # the new file was deleted: its commit is known absent


def test_z_order_argument_errors(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=2, partition_by=["p"])
    with pytest.raises(DeltaError, match="at least one"):
        dt.optimize.z_order([])
    with pytest.raises(DeltaError, match="not in the table schema"):
        dt.optimize.z_order(["nope"])
    with pytest.raises(DeltaError, match="partition column"):
        dt.optimize.z_order(["p"])
    with pytest.raises(DeltaError, match="target_size"):
        dt.optimize.compact(target_size=0)


def test_append_only_table_can_be_optimized(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=3, configuration={"delta.appendOnly": "true"})
    before = dt.to_pyarrow_table()
    assert dt.optimize.compact()["numFilesAdded"] == 1
    assert_same_rows(dt.to_pyarrow_table(), before)


# ----------------------------------------------------------------------------- concurrency
def test_concurrent_append_does_not_conflict(tmp_path: Path) -> None:
    a = _make(tmp_path, appends=3)
    b = DeltaTable(str(tmp_path))
    write_deltalake(b, _data(20, 500), mode="append")  # lands while `a` plans at the older version
    m = a.optimize.compact()
    assert m["numFilesRemoved"] == 3
    fresh = DeltaTable(str(tmp_path))
    assert fresh.to_pyarrow_table().num_rows == 80
    assert len(fresh.files()) == 2  # the compacted file + the concurrent append
    assert fresh.history(1)[0]["readVersion"] == 2


def test_concurrent_delete_of_a_rewritten_file_conflicts(tmp_path: Path) -> None:
    a = _make(tmp_path, appends=3)
    b = DeltaTable(str(tmp_path))
    b.delete("id = 5")  # copy-on-write: removes one of the files `a` compacts
    files = _data_files(tmp_path)
    with pytest.raises(ConcurrentDeleteReadError):
        a.optimize.compact()
    fresh = DeltaTable(str(tmp_path))
    assert fresh.history(1)[0]["operation"] == "DELETE"
    assert fresh.to_pyarrow_table().num_rows == 59
    assert _data_files(tmp_path) == files  # OPTIMIZE's file deleted, commit known absent


def test_delete_after_concurrent_optimize_conflicts(tmp_path: Path) -> None:
    a = _make(tmp_path, appends=3)
    b = DeltaTable(str(tmp_path))
    a.optimize.compact()  # removes (dataChange=false) every file `b` is about to rewrite
    with pytest.raises(CommitConflictError):
        b.delete("id = 5")
    fresh = DeltaTable(str(tmp_path))
    assert fresh.to_pyarrow_table().num_rows == 60  # no rows resurrected or lost
    assert fresh.history(1)[0]["operation"] == "OPTIMIZE"


def test_two_concurrent_optimizes_conflict(tmp_path: Path) -> None:
    a = _make(tmp_path, appends=3)
    b = DeltaTable(str(tmp_path))
    a.optimize.compact()
    with pytest.raises(CommitConflictError):
        b.optimize.compact()
    fresh = DeltaTable(str(tmp_path))
    assert fresh.to_pyarrow_table().num_rows == 60 and len(fresh.files()) == 1


def test_parallel_bins(tmp_path: Path) -> None:
    dt = _make(tmp_path, appends=8, partition_by=["p"])
    before = dt.to_pyarrow_table()
    m = dt.optimize.compact(max_concurrent_tasks=max(2, os.cpu_count() or 2))
    assert m["numFilesAdded"] == 2 and m["numFilesRemoved"] == 16
    assert_same_rows(dt.to_pyarrow_table(), before)


def test_compact_after_schema_evolution(tmp_path: Path) -> None:
    """Old files lack a column added later: the compacted file has it as nulls for their rows."""
    write_deltalake(str(tmp_path), pa.table({"id": [1, 2]}), mode="append")
    write_deltalake(str(tmp_path), pa.table({"id": [3], "extra": ["x"]}), mode="append", schema_mode="merge")
    dt = DeltaTable(str(tmp_path))
    before = dt.to_pyarrow_table()
    dt.optimize.compact()
    after = dt.to_pyarrow_table()
    assert_same_rows(after, before)
    assert sorted(after.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "extra": None}, {"id": 2, "extra": None}, {"id": 3, "extra": "x"}]


def test_compact_with_checkpoint_does_not_import_pandas(tmp_path: Path) -> None:
    """pyarrow imports pandas (0.2 s) on its first Python->Arrow conversion or `pyarrow.dataset` import:
    compaction and the checkpoint its commit writes avoid both, in a fresh process."""
    _make(tmp_path, appends=4, configuration={"delta.checkpointInterval": "2"})
    code = ("import sys\nfrom deltakernel import DeltaTable\n"
            f"m = DeltaTable({str(tmp_path)!r}).optimize.compact()\n"
            "print(m['numFilesRemoved'], 'pandas' in sys.modules)")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["4", "False"]
    assert (tmp_path / "_delta_log" / "00000000000000000004.checkpoint.parquet").exists()
    assert_same_rows(DeltaTable(str(tmp_path)).to_pyarrow_table(), pa.concat_tables([_data(20, i * 20) for i in range(4)]))
