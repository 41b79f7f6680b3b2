"""alter.drop_feature: writer-only features drop in one commit once unused; deletionVectors is purged, then
dropped only with truncate_history after the retention period; the protocol never loses anything else."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, UnsupportedFeatureError
from deltakernel.kernel.protocol.select import features_in_effect
from deltakernel.operations.alter.drop_feature import FeatureDropWaitError, drop_feature

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers


def _data(n: int = 10) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64())})


def _feats(t: DeltaTable) -> set[str]:
    return features_in_effect(t.protocol())


def test_writer_only_feature_drops_in_one_commit(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(), configuration={"delta.enableChangeDataFeed": "true", "delta.appendOnly": "true"})
    t = DeltaTable(uri)
    before = _feats(t)
    assert {"changeDataFeed", "appendOnly"} <= before
    t.alter.drop_feature("changeDataFeed", allow_protocol_versions_increase=True)  # legacy (1, 4) -> features
    t = DeltaTable(uri)
    assert _feats(t) == before - {"changeDataFeed"}
    assert "delta.enableChangeDataFeed" not in t.metadata().configuration
    h = t.history(1)[0]
    assert h["operation"] == "DROP FEATURE"
    assert h["operationParameters"] == {"featureName": "changeDataFeed", "truncateHistory": "false"}
    t.alter.drop_feature("appendOnly")
    t = DeltaTable(uri)
    assert "appendOnly" not in _feats(t) and "delta.appendOnly" not in t.metadata().configuration
    t.delete("id < 2")  # appendOnly is gone: deletes work
    assert t.count() == 8
    helpers.assert_same_rows(helpers.deltalake_table(uri), t.to_pyarrow_table(), "deltalake")


def test_refused_while_used(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data())
    t = DeltaTable(uri)
    t.alter.add_constraint({"pos": "id >= 0"})
    t = DeltaTable(uri)
    v = t.version()
    with pytest.raises(DeltaError, match="CHECK constraints"):
        t.alter.drop_feature("checkConstraints")
    assert DeltaTable(uri).version() == v
    t.alter.drop_constraint("pos")
    t = DeltaTable(uri)
    t.alter.drop_feature("checkConstraints", allow_protocol_versions_increase=True)
    assert "checkConstraints" not in _feats(DeltaTable(uri))


def test_legacy_protocol_needs_versions_increase(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(), configuration={"delta.enableChangeDataFeed": "true"})
    t = DeltaTable(uri)
    proto = t.protocol()
    if proto.min_writer_version >= 7:
        pytest.skip("table created with table features")
    with pytest.raises(DeltaError, match="allow_protocol_versions_increase"):
        t.alter.drop_feature("appendOnly")
    assert DeltaTable(uri).protocol() == proto
    t.alter.drop_feature("appendOnly", allow_protocol_versions_increase=True)
    after = _feats(DeltaTable(uri))
    assert after == features_in_effect(proto) - {"appendOnly"}


def test_absent_unknown_and_unsupported(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(), configuration={"delta.columnMapping.mode": "name"})
    t = DeltaTable(uri)
    with pytest.raises(DeltaError, match="does not have it"):
        t.alter.drop_feature("deletionVectors")
    with pytest.raises(UnsupportedFeatureError) as e:
        t.alter.drop_feature("columnMapping")
    assert e.value.feature == "columnMapping"
    with pytest.raises(DeltaError, match="unknown table feature"):
        t.alter.drop_feature("noSuchFeature")


def _dv_table(uri: str) -> DeltaTable:
    write_deltalake(uri, _data(20), configuration={"delta.enableDeletionVectors": "true"})
    t = DeltaTable(uri)
    t.delete("id < 5")
    t = DeltaTable(uri)
    assert t.snapshot.files.column("deletion_vector").null_count == 0
    return t


def test_deletion_vectors_purged_then_wait(tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    t = _dv_table(uri)
    expected = t.to_pyarrow_table()
    with pytest.raises(FeatureDropWaitError, match="truncate_history=True"):
        t.alter.drop_feature("deletionVectors")
    t = DeltaTable(uri)
    assert "deletionVectors" in _feats(t)  # still in the protocol
    assert t.metadata().configuration["delta.enableDeletionVectors"] == "false"
    assert t.snapshot.files.column("deletion_vector").null_count == t.snapshot.files.num_rows  # purged
    assert [h["operation"] for h in t.history(2)] == ["REORG", "SET TBLPROPERTIES"]
    helpers.assert_same_rows(t.to_pyarrow_table(), expected)
    # truncation too early: the purge is newer than 24 hours
    with pytest.raises(FeatureDropWaitError, match="try again after"):
        t.alter.drop_feature("deletionVectors", truncate_history=True)
    assert "deletionVectors" in _feats(DeltaTable(uri))


def test_deletion_vectors_dropped_after_retention(tmp_path: Path) -> None:
    uri = str(tmp_path / "dv")
    t = _dv_table(uri)
    expected = t.to_pyarrow_table()
    with pytest.raises(FeatureDropWaitError):
        t.alter.drop_feature("deletionVectors")
    later = int(time.time() * 1000) + 25 * 3600 * 1000  # 25 hours on
    t = DeltaTable(uri)
    drop_feature(t.snapshot.storage, t.snapshot, "deletionVectors", truncate_history=True, now_ms=later)
    t = DeltaTable(uri)
    assert "deletionVectors" not in _feats(t)
    assert t.protocol().min_reader_version < 3 or not (t.protocol().reader_features or ())
    helpers.assert_same_rows(t.to_pyarrow_table(), expected)
    log = sorted(p.name for p in (Path(uri) / "_delta_log").iterdir())
    commits = [int(n[:20]) for n in log if n.endswith(".json") and len(n) == 25]
    assert min(commits) >= 3  # history with DVs (versions 0..2 and the purge) deleted, a checkpoint kept
    assert any("checkpoint.parquet" in n for n in log)
    assert t.history(1)[0]["operationParameters"] == {"featureName": "deletionVectors", "truncateHistory": "true"}
    # readers without DV support read it now
    helpers.assert_same_rows(helpers.deltalake_table(uri), expected, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(uri), expected, "duckdb")
    protocol = json.loads(next(ln for ln in (Path(uri) / "_delta_log" / f"{t.version():020d}.json").read_text()
                           .splitlines() if '"protocol"' in ln))["protocol"]
    assert "deletionVectors" not in json.dumps(protocol)
