"""The Delta streaming source's planning without Spark: offsets, admission, delta-spark's commit rules."""

from __future__ import annotations

import deltalake
import pyarrow as pa
import pytest

from deltakernel.errors import DeltaError
from deltakernel.spark.common.schema import Options
from deltakernel.spark.streaming.log_walk import LogWalk
from deltakernel.spark.streaming.offsets import Budget, SourceOffset, SourceOptions, StreamingSourceError, parse_bytes
from deltakernel.storage import storage_for_uri


def _append(path, ids, part="a"):
    deltalake.write_deltalake(path, pa.table({"id": pa.array(ids, pa.int64()), "p": [part] * len(ids)}),
                              mode="append", partition_by=["p"])


def _walk(path, **opts) -> LogWalk:
    return LogWalk(storage_for_uri(str(path)), SourceOptions.parse(Options(opts)))


def _paths(pieces):
    out = []
    for kind, piece in pieces:
        files = piece[2] if kind == "snapshot" else piece
        out.extend(files.column("path").to_pylist())
    return out


def test_offset_json_round_trip_and_table_id_check():
    o = SourceOffset("tid", 3, 7, False, (1, True))
    assert SourceOffset.from_json(o.to_json(), "tid") == o
    assert o.to_json()["isStartingVersion"] is False and o.to_json()["sourceVersion"] == 1
    # delta-spark's in-memory base index is read as -1
    assert SourceOffset.from_json({**o.to_json(), "index": -100}, "tid").index == -1
    with pytest.raises(StreamingSourceError, match="replaced"):
        SourceOffset.from_json(o.to_json(), "other")


def test_options():
    assert parse_bytes("1g") == 1 << 30 and parse_bytes("512m") == 512 << 20 and parse_bytes("100") == 100
    assert parse_bytes("2GiB") == 2 << 30
    with pytest.raises(DeltaError):
        parse_bytes("lots")
    o = SourceOptions.parse(Options({"startingversion": "latest", "maxFilesPerTrigger": "5", "ignoreChanges": "true"}))
    assert o.starting_latest and o.max_files == 5 and o.ignore_changes and o.ignore_deletes
    with pytest.raises(DeltaError, match="not both"):
        SourceOptions.parse(Options({"startingVersion": "1", "startingTimestamp": "2024-01-01"}))
    with pytest.raises(DeltaError, match="maxFilesPerTrigger"):
        SourceOptions.parse(Options({"maxFilesPerTrigger": "0"}))


def test_snapshot_then_commits_in_batches(tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        _append(path, [i * 10 + j for j in range(3)])
    walk = _walk(path)
    tid = walk.table_id
    start = SourceOffset(tid, 2, -1, True)  # the initial snapshot of version 2
    end1 = walk.advance(start, Budget(2, None), None)
    assert (end1.version, end1.index, end1.initial) == (2, 1, True)
    end2 = walk.advance(end1, Budget(2, None), None)
    assert (end2.version, end2.index, end2.initial) == (3, -1, False)  # snapshot done, nothing newer yet
    assert walk.advance(end2, Budget(2, None), None) == end2
    _append(path, [100, 101])
    _append(path, [200])
    end3 = walk.advance(end2, None, None)
    assert (end3.version, end3.index) == (5, -1)
    everything = _paths(walk.between(start, end1)) + _paths(walk.between(end1, end2)) + _paths(walk.between(end2, end3))
    live = deltalake.DeltaTable(path).file_uris()
    assert len(everything) == len(set(everything)) == len(live) == 5
    # until (availableNow): nothing past version 3
    assert walk.advance(end2, None, 3).version == 4


def test_bytes_budget_is_soft(tmp_path):
    path = str(tmp_path / "t")
    for i in range(4):
        _append(path, [i])
    walk = _walk(path, startingVersion="0")
    start = SourceOffset(walk.table_id, 0, -1, False)
    size = walk.changes(0).files.column("size")[0].as_py()
    end = walk.advance(start, Budget(None, size + 1), None)  # a second file overshoots the budget, as delta-spark
    assert end.version == 2 and end.index == -1
    end = walk.advance(start, Budget(None, 1), None)  # one file at least
    assert end.version == 1


def test_deletes_and_updates_follow_delta_spark(tmp_path):
    path = str(tmp_path / "t")
    _append(path, [1, 2], "a")
    _append(path, [3, 4], "b")
    deltalake.DeltaTable(path).delete("p = 'a'")  # version 2: removes only
    _append(path, [5], "a")  # version 3
    deltalake.DeltaTable(path).update({"id": "id + 100"}, predicate="id = 3")  # version 4: remove + add
    _append(path, [6], "c")  # version 5

    walk = _walk(path, startingVersion="0")
    tid = walk.table_id
    end = walk.advance(SourceOffset(tid, 0, -1, False), None, None)
    assert end.version == 2  # stops before the delete, delivering versions 0 and 1
    with pytest.raises(StreamingSourceError, match="ignoreDeletes"):
        walk.advance(end, None, None)

    walk = _walk(path, startingVersion="0", ignoreDeletes="true")
    end = walk.advance(SourceOffset(tid, 0, -1, False), None, None)
    assert end.version == 4
    with pytest.raises(StreamingSourceError, match="version 4.*skipChangeCommits"):
        walk.advance(end, None, None)

    walk = _walk(path, startingVersion="0", skipChangeCommits="true")
    end = walk.advance(SourceOffset(tid, 0, -1, False), None, None)
    assert end.version == 6
    assert len(_paths(walk.between(SourceOffset(tid, 0, -1, False), end))) == 4  # versions 0, 1, 3, 5

    walk = _walk(path, startingVersion="0", ignoreChanges="true")
    end = walk.advance(SourceOffset(tid, 0, -1, False), None, None)
    assert len(_paths(walk.between(SourceOffset(tid, 0, -1, False), end))) == 5  # + the rewritten file of v4


def test_schema_change_is_an_error_until_restart(tmp_path):
    path = str(tmp_path / "t")
    _append(path, [1])
    walk = _walk(path, startingVersion="0")
    tid = walk.table_id
    deltalake.write_deltalake(path, pa.table({"id": pa.array([2], pa.int64()), "p": ["a"], "x": ["new"]}),
                              mode="append", schema_mode="merge")
    end = walk.advance(SourceOffset(tid, 0, -1, False), None, None)
    assert end.version == 1
    with pytest.raises(StreamingSourceError, match="schema change at version 1"):
        walk.advance(end, None, None)
    restarted = _walk(path, startingVersion="0")  # reads with the new schema: the old commits fit in it
    assert restarted.advance(SourceOffset(tid, 0, -1, False), None, None).version == 2


def test_optimize_is_not_delivered(tmp_path):
    path = str(tmp_path / "t")
    _append(path, [1])
    _append(path, [2])
    deltalake.DeltaTable(path).optimize.compact()  # dataChange=false
    walk = _walk(path, startingVersion="0")
    start = SourceOffset(walk.table_id, 0, -1, False)
    end = walk.advance(start, None, None)
    assert end.version == 3 and len(_paths(walk.between(start, end))) == 2


def test_cleaned_up_commit_is_named(tmp_path):
    path = tmp_path / "t"
    for i in range(3):
        _append(str(path), [i])
    deltalake.DeltaTable(str(path)).create_checkpoint()
    for v in (0, 1):  # what log cleanup does once a checkpoint covers them
        (path / "_delta_log" / f"{v:020d}.json").unlink()
    walk = _walk(str(path), startingVersion="0")
    walk.refresh()
    with pytest.raises(StreamingSourceError, match="version 1 .*no longer exists"):
        walk.advance(SourceOffset(walk.table_id, 1, -1, False), None, None)
