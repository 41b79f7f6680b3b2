"""The session's kept latest snapshot (`scan/read_snapshot.latest_snapshot`, issue 32): every `load()` still reads
the latest commit at its start - new commits by another writer, a table dropped and created again at the same place
- and the store stays bounded. Both session kinds (the Connect client plans its reads in this process too)."""

from __future__ import annotations

import shutil

import pyarrow as pa

from deltakernel import write_deltalake
from deltakernel.spark.scan import read_snapshot


def _rows(spark, path) -> list[int]:
    return sorted(r[0] for r in spark.read.format("delta").load(path).select("id").collect())


def test_load_sees_new_commits_and_replaced_tables(spark, tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    assert _rows(spark, path) == [1, 2]
    first = spark.read.format("delta").load(path).snapshot
    assert spark.read.format("delta").load(path).snapshot is first  # nothing new: the kept snapshot
    write_deltalake(path, pa.table({"id": pa.array([3], pa.int64())}), mode="append")  # another writer
    assert _rows(spark, path) == [1, 2, 3]
    assert spark.read.format("delta").load(path).snapshot.version == 1
    # dropped and created again at the same place, back at version 0 and 1 with other rows
    shutil.rmtree(path)
    write_deltalake(path, pa.table({"id": pa.array([7], pa.int64())}))
    write_deltalake(path, pa.table({"id": pa.array([8, 9], pa.int64())}), mode="append")
    assert _rows(spark, path) == [7, 8, 9]
    # time travel never goes through the kept snapshot
    assert sorted(r[0] for r in spark.read.format("delta").option("versionAsOf", 0).load(path).collect()) == [7]


def test_kept_snapshots_are_bounded(spark, tmp_path):
    paths = []
    for i in range(read_snapshot.MAX_SNAPSHOTS + 3):
        path = str(tmp_path / f"t{i}")
        write_deltalake(path, pa.table({"id": pa.array([i], pa.int64())}))
        paths.append(path)
        assert _rows(spark, path) == [i]
    store = spark.__dict__["_dk_latest_snapshots"]
    assert len(store) <= read_snapshot.MAX_SNAPSHOTS
    assert any(key[0] == paths[-1] for key in store)
