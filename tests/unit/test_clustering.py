"""Clustered tables: `DeltaTable.create(..., cluster_by=)` writes the `clustering` + `domainMetadata` features and
the `delta.clustering` domain (physical names as path parts); OPTIMIZE clusters the not-yet-clustered files by
those columns (Z-order), tags them, refuses Z-order by other columns; other readers still read the table."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, deltalake_table, duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, SchemaError
from deltakernel.operations.maintenance.optimize.clustering import CLUSTERED_BY_TAG, clustering_columns

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.float64())])


def _rows(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": pa.array(rng.integers(0, 10_000, n), pa.int64()),
                     "k": pa.array([f"key{v:05d}" for v in rng.integers(0, 10_000, n)], pa.string()),
                     "v": pa.array(rng.random(n), pa.float64())})


def _domain(path: Path) -> dict[str, object]:
    for a in read_actions(path, 0):
        if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.clustering":
            return json.loads(a["domainMetadata"]["configuration"])
    raise AssertionError("no delta.clustering domain")


def test_create_clustered_table(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, cluster_by=["id", "k"])
    proto = t.protocol()
    assert proto.min_writer_version == 7
    assert {"clustering", "domainMetadata"} <= set(proto.writer_features or [])
    assert _domain(tmp_path) == {"clusteringColumns": [["id"], ["k"]]}
    assert clustering_columns(t.snapshot) == ["id", "k"]
    assert not any(k.startswith("delta.feature.") for k in t.snapshot.configuration)


def test_create_clustered_with_column_mapping_uses_physical_names(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, cluster_by=["k"],
                          configuration={"delta.columnMapping.mode": "name"})
    phys = t.snapshot.schema.field("k").metadata["delta.columnMapping.physicalName"]
    assert phys != "k"
    assert _domain(tmp_path) == {"clusteringColumns": [[phys]]}
    assert clustering_columns(t.snapshot) == ["k"]


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"cluster_by": ["id"], "partition_by": ["k"]}, DeltaError, "partitioned and clustered"),
    ({"cluster_by": ["nope"]}, SchemaError, "not in the schema"),
    ({"cluster_by": []}, DeltaError, "at least one"),
    ({"cluster_by": ["id", "k", "v", "id", "k"]}, DeltaError, "at most 4"),
    ({"cluster_by": ["v"], "configuration": {"delta.dataSkippingNumIndexedCols": "1"}}, DeltaError, "statistics"),
])
def test_create_refuses_bad_clustering(tmp_path: Path, kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        DeltaTable.create(str(tmp_path), SCHEMA, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "_delta_log").exists() or not list((tmp_path / "_delta_log").glob("*.json"))


def test_optimize_clusters_new_files_only(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, cluster_by=["id", "k"])
    for i in range(8):
        write_deltalake(t, _rows(1500, i), mode="append")
    before = t.to_pyarrow_table()
    total = sum(int(s) for s in t.get_add_actions().column("size_bytes").to_pylist())
    probe = int(before.column("id")[11].as_py())
    scan = t.scan(filters=[("id", "=", probe)])
    scan.plan()
    assert scan.metrics.files_scanned == 8
    m = t.optimize.compact(target_size=max(1, total // 16))
    assert m["numFilesRemoved"] == 8 and m["plannerStrategy"] == "zOrder"
    info = t.history(1)[0]
    assert info["operation"] == "OPTIMIZE" and json.loads(info["operationParameters"]["clusterBy"]) == ["id", "k"]
    adds = [a["add"] for a in read_actions(tmp_path, t.version()) if "add" in a]
    assert all(a["clusteringProvider"] == "liquid" for a in adds)
    assert all(json.loads(a["tags"][CLUSTERED_BY_TAG]) == [["id"], ["k"]] for a in adds)
    scan = t.scan(filters=[("id", "=", probe)])
    scan.plan()
    assert scan.metrics.files_scanned < len(t.files()) / 2
    assert_same_rows(t.to_pyarrow_table(), before)
    # nothing new: no commit
    v = t.version()
    assert t.optimize.compact()["numFilesRemoved"] == 0 and t.version() == v
    # a new append: only it is clustered
    write_deltalake(t, _rows(500, 99), mode="append")
    n_before = len(t.files())
    m = t.optimize.compact()
    assert m["numFilesRemoved"] == 1 and m["totalFilesSkipped"] == n_before - 1
    # same columns through z_order is clustering; other columns are refused
    with pytest.raises(DeltaError, match="clustered by"):
        t.optimize.z_order(["v"])
    t.optimize.z_order(["id", "k"])
    # other engines read the clustered table
    expected = t.to_pyarrow_table()
    assert_same_rows(deltalake_table(tmp_path), expected, "deltalake")
    assert_same_rows(duckdb_table(tmp_path), expected, "duckdb")
