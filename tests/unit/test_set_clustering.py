"""`DeltaTable.alter.cluster_by(columns)` — delta-spark's `ALTER TABLE ... CLUSTER BY (cols)` / `CLUSTER BY NONE`:
the `delta.clustering` domain is rewritten in a "CLUSTER BY" commit (no data rewritten), an unclustered table
becomes clustered, and the next OPTIMIZE clusters every file by the new columns."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, deltalake_table, duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import ConcurrentTransactionError, DeltaError, SchemaError
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.operations.maintenance.optimize.clustering import (
    CLUSTERED_BY_TAG,
    alter_clustering,
    clustering_columns,
)

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.float64())])


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(rng.integers(0, 10_000, n), pa.int64()),
                     "k": pa.array([f"key{v:05d}" for v in rng.integers(0, 10_000, n)], pa.string()),
                     "v": pa.array(rng.random(n), pa.float64())})


def _domain(path: Path, version: int) -> Any:
    for a in read_actions(path, version):
        if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.clustering":
            return json.loads(a["domainMetadata"]["configuration"])
    return None


def _files_opened(t: DeltaTable, column: str, value: Any) -> int:
    scan = t.scan(filters=[(column, "=", value)])
    scan.plan()
    return int(scan.metrics.files_scanned)


def _clustered_table(path: Path, columns: list[str], files: int = 8) -> DeltaTable:
    t = DeltaTable.create(str(path), SCHEMA, cluster_by=columns)
    for i in range(files):
        write_deltalake(t, _rows(1500, i), mode="append")
    return t


def test_change_columns_then_optimize_clusters_by_them(tmp_path: Path) -> None:
    t = _clustered_table(tmp_path, ["id"])
    total = sum(int(s) for s in t.get_add_actions().column("size_bytes").to_pylist())
    t.optimize.compact(target_size=max(1, total // 16))
    before = t.to_pyarrow_table()
    probe_k = before.column("k")[7].as_py()
    opened_by_id_clustering = _files_opened(t, "k", probe_k)
    v = t.version()
    t.alter.cluster_by(["k"])
    assert t.version() == v + 1 and clustering_columns(t.snapshot) == ["k"]
    assert _domain(tmp_path, v + 1) == {"clusteringColumns": [["k"]]}
    info = t.history(1)[0]
    assert info["operation"] == "CLUSTER BY"
    assert info["operationParameters"] == {"oldClusteringColumns": "id", "newClusteringColumns": "k"}
    assert not any("add" in a or "remove" in a for a in read_actions(tmp_path, v + 1)), "no data rewritten"
    # OPTIMIZE now reclusters every file (their tag names the old columns)
    n = len(t.files())
    m = t.optimize.compact(target_size=max(1, total // 16))
    assert m["numFilesRemoved"] == n and m["totalFilesSkipped"] == 0
    assert json.loads(t.history(1)[0]["operationParameters"]["clusterBy"]) == ["k"]
    adds = [a["add"] for a in read_actions(tmp_path, t.version()) if "add" in a]
    assert all(json.loads(a["tags"][CLUSTERED_BY_TAG]) == [["k"]] for a in adds)
    opened = _files_opened(t, "k", probe_k)
    assert opened < opened_by_id_clustering and opened < len(t.files()) / 2, (opened, opened_by_id_clustering)
    assert_same_rows(t.to_pyarrow_table(), before)
    assert t.optimize.compact()["numFilesRemoved"] == 0  # clustered by the current columns: nothing to do
    assert_same_rows(deltalake_table(tmp_path), before, "deltalake")
    assert_same_rows(duckdb_table(tmp_path), before, "duckdb")


def test_cluster_by_none(tmp_path: Path) -> None:
    t = _clustered_table(tmp_path, ["id", "k"], files=3)
    v = t.version()
    t.alter.cluster_by(None)
    assert _domain(tmp_path, v + 1) == {"clusteringColumns": []}
    assert t.history(1)[0]["operationParameters"] == {"oldClusteringColumns": "id,k", "newClusteringColumns": ""}
    assert "clustering" in (t.protocol().writer_features or [])  # still a clustered table (as delta-spark)
    m = t.optimize.compact()
    assert m["numFilesRemoved"] == 3 and "clusterBy" not in t.history(1)[0]["operationParameters"]
    # CLUSTER BY NONE on a table that is not clustered: nothing to do, no commit (delta-spark skips it)
    plain = tmp_path / "plain"
    write_deltalake(plain, _rows(10, 1))
    DeltaTable(str(plain)).alter.cluster_by([])
    assert DeltaTable(str(plain)).version() == 0


def test_an_unclustered_table_becomes_clustered(tmp_path: Path) -> None:
    for i in range(4):
        write_deltalake(tmp_path, _rows(1000, i), mode="append")
    t = DeltaTable(str(tmp_path))
    assert t.protocol().min_writer_version == 2
    t.alter.cluster_by(["v", "id"], custom_metadata={"why": "test"})
    proto = t.protocol()
    assert proto.min_writer_version == 7 and {"clustering", "domainMetadata"} <= set(proto.writer_features or [])
    assert clustering_columns(t.snapshot) == ["v", "id"]
    info = t.history(1)[0]
    assert info["operationParameters"] == {"oldClusteringColumns": "", "newClusteringColumns": "v,id"}
    assert info["why"] == "test"
    assert not any(k.startswith("delta.feature.") for k in t.snapshot.configuration)
    before = t.to_pyarrow_table()
    m = t.optimize.compact()
    assert m["numFilesRemoved"] == 4 and json.loads(t.history(1)[0]["operationParameters"]["clusterBy"]) == [
        "v", "id"]
    assert_same_rows(t.to_pyarrow_table(), before)
    assert_same_rows(deltalake_table(tmp_path), before, "deltalake")
    assert_same_rows(duckdb_table(tmp_path), before, "duckdb")


def test_column_mapping_stores_physical_names(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, cluster_by=["id"], configuration={"delta.columnMapping.mode": "name"})
    t.alter.rename_column("k", "key")
    t.alter.cluster_by(["key"])
    phys = t.snapshot.schema.field("key").metadata["delta.columnMapping.physicalName"]
    assert phys != "key" and _domain(tmp_path, t.version()) == {"clusteringColumns": [[phys]]}
    assert clustering_columns(t.snapshot) == ["key"]
    assert t.history(1)[0]["operationParameters"]["newClusteringColumns"] == "key"


@pytest.mark.parametrize(("columns", "error", "match"), [
    (["nope"], SchemaError, "not in the schema"),
    (["id", "k", "v", "id", "k"], DeltaError, "at most 4"),
    (["id", "ID"], DeltaError, "duplicate"),
])
def test_bad_columns_are_refused_and_nothing_is_committed(tmp_path: Path, columns: list[str], error: type,
                                                          match: str) -> None:
    t = _clustered_table(tmp_path, ["id"], files=1)
    v = t.version()
    with pytest.raises(error, match=match):
        t.alter.cluster_by(columns)
    assert DeltaTable(str(tmp_path)).version() == v and clustering_columns(t.snapshot) == ["id"]


def test_partitioned_and_stats_less_columns_are_refused(tmp_path: Path) -> None:
    part = tmp_path / "part"
    write_deltalake(part, _rows(20, 1), partition_by=["k"])
    with pytest.raises(DeltaError, match="partitioned and clustered"):
        DeltaTable(str(part)).alter.cluster_by(["id"])
    nostats = tmp_path / "nostats"
    write_deltalake(nostats, _rows(20, 1), configuration={"delta.dataSkippingNumIndexedCols": "1"})
    with pytest.raises(DeltaError, match="statistics"):
        DeltaTable(str(nostats)).alter.cluster_by(["v"])
    assert DeltaTable(str(part)).version() == DeltaTable(str(nostats)).version() == 0


def test_concurrent_changes_of_the_columns_conflict(tmp_path: Path) -> None:
    t = _clustered_table(tmp_path, ["id"], files=1)
    snap = Snapshot.load(t.snapshot.storage)
    alter_clustering(snap.storage, snap, ["k"])
    with pytest.raises(ConcurrentTransactionError):
        alter_clustering(snap.storage, snap, ["v"])
    assert clustering_columns(DeltaTable(str(tmp_path)).snapshot) == ["k"]
    # an append landing in between does not conflict with ALTER CLUSTER BY
    snap = Snapshot.load(t.snapshot.storage)
    write_deltalake(tmp_path, _rows(10, 5), mode="append")
    assert alter_clustering(snap.storage, snap, ["v"]) == snap.version + 2
