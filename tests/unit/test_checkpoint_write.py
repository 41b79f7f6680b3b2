"""Checkpoint writing and metadata cleanup (kernel/checkpoint_write.py).

The oracle for a checkpoint is the replay it replaces: the file table, tombstones, txns and domains
replayed from our checkpoint alone must equal the ones replayed from the commits, and deltalake and
DuckDB's delta extension must read the same rows as before.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import helpers

from deltakernel import DeltaTable
from deltakernel.kernel.checkpoints.cleanup import cleanup_expired_logs
from deltakernel.kernel.checkpoints.write import struct_to_map, write_checkpoint
from deltakernel.kernel.log.action_tables import file_schema
from deltakernel.kernel.log.replay import ReplayResult
from deltakernel.kernel.log.retention import parse_interval_ms
from deltakernel.kernel.log.segment import LogSegment, last_checkpoint_checksum, read_last_checkpoint
from deltakernel.kernel.log.time_travel import commit_timestamps
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.stats.parse import parse_stats, stats_from_struct
from deltakernel.storage import LocalStorage

DAY = 86_400_000
LOG = "_delta_log"


# ----------------------------------------------------------------------------- helpers
def _load(path: pathlib.Path | str, version: int | None = None) -> Snapshot:
    return Snapshot.load(LocalStorage(str(path)), version)


def _canon_files(snap: Snapshot, stats: bool = True) -> list[Any]:
    cols = ["path", "size", "modification_time", "partition_values", "deletion_vector",
            "base_row_id", "default_row_commit_version", "tags"] + (["stats"] if stats else [])
    return list(helpers.canon_rows(snap.files.select(cols)))


def _canon_tombstones(snap: Snapshot) -> list[Any]:
    cols = ["path", "deletion_timestamp", "deletion_vector", "partition_values"]
    return list(helpers.canon_rows(snap.tombstones.select(cols)))


def _stats_view(snap: Snapshot) -> list[Any]:
    """Typed stats per file (JSON and/or stats_parsed), so struct-only stats compare with JSON ones."""
    files = snap.files
    fs = parse_stats(files.column("stats"), snap.schema, snap.column_mapping_mode)
    if "stats_parsed" in files.column_names:
        fs = fs.coalesce(stats_from_struct(files.column("stats_parsed"), snap.schema, snap.column_mapping_mode))
    cols: dict[str, Any] = {"path": files.column("path"), "numRecords": fs.num_records}
    for kind, d in (("min", fs.min_values), ("max", fs.max_values), ("nulls", fs.null_count)):
        for k, v in d.items():
            if k[0] not in snap.partition_columns:
                cols[f"{kind}:{'.'.join(k)}"] = v
    return list(helpers.canon_rows(pa.table(cols)))


def _state(snap: Snapshot) -> dict[str, Any]:
    return {
        "files": _canon_files(snap),
        "tombstones": _canon_tombstones(snap),
        "txns": snap.txns,
        "domains": snap.domain_metadata,
        "protocol": snap.protocol,
        "metadata": snap.metadata,
    }


def _rows(path: pathlib.Path | str) -> list[Any]:
    return list(helpers.canon_rows(DeltaTable(str(path)).to_pyarrow_table()))


def _drop_commits_through(path: pathlib.Path, version: int) -> None:
    """Remove every commit and checksum file at or below `version` (as if cleaned up)."""
    for f in (path / LOG).iterdir():
        name = f.name
        if name[:20].isdigit() and int(name[:20]) <= version and (name.endswith(".json") or name.endswith(".crc")) \
                and ".checkpoint." not in name:
            f.unlink()


def _checkpoint_only_copy(src: pathlib.Path, dst: pathlib.Path, snap: Snapshot, **kw: Any) -> Snapshot:
    """Copy the data (not the log) and write a checkpoint of `snap` as the whole log of the copy."""
    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n == LOG and d == str(src)])
    storage = LocalStorage(str(dst))
    moved = Snapshot(storage, LogSegment(storage, snap.version, None, []), snap._result)
    write_checkpoint(moved, **kw)
    return _load(dst)


def _write_table(path: pathlib.Path, commits: int = 6, **kw: Any) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    for i in range(commits):
        t = pa.table({
            "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
            "part": pa.array([f"p{j % 3}" for j in range(10)]),
            "value": pa.array([float(j) * 1.5 for j in range(10)]),
            "ts": pa.array([1_700_000_000_000_000 + i * 1000 + j for j in range(10)], pa.timestamp("us", tz="UTC")),
        })
        write_deltalake(str(path), t, mode="append", partition_by=["part"],
                        commit_properties=CommitProperties(app_transactions=[
                            Transaction(app_id=f"app{i % 2}", version=i, last_updated=1_700_000_000_000 + i)]),
                        **(kw if i == 0 else {}))


# ----------------------------------------------------------------------------- intervals
@pytest.mark.parametrize("text,ms", [
    ("interval 7 days", 7 * DAY), ("interval 1 week", 7 * DAY), ("interval 168 hours", 7 * DAY),
    ("INTERVAL 30 DAYS", 30 * DAY), ("1 day", DAY), ("interval 1 day 12 hours", DAY + DAY // 2),
    ("interval 90 minutes", 90 * 60_000), ("interval 2 seconds", 2000), ("interval 500 milliseconds", 500),
])
def test_parse_interval(text: str, ms: int) -> None:
    assert parse_interval_ms(text) == ms


@pytest.mark.parametrize("text", ["interval 1 month", "interval", "7", "interval seven days", "1 fortnight"])
def test_parse_interval_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval_ms(text)


def test_struct_to_map_keeps_null_values_and_slices() -> None:
    s = pa.StructArray.from_arrays([pa.array(["a", None, "c"]), pa.array(["1", "2", None])], names=["x", "y"])
    assert struct_to_map(s.slice(1)).to_pylist() == [[("x", None), ("y", "2")], [("x", "c"), ("y", None)]]
    assert struct_to_map(pa.array([{}] * 2, pa.struct([]))).to_pylist() == [[], []]


# ----------------------------------------------------------------------------- deltalake-written tables
def test_classic_checkpoint_matches_replay_and_all_readers(tmp_path: pathlib.Path) -> None:
    import deltalake

    p = tmp_path / "t"
    _write_table(p, commits=8)
    deltalake.DeltaTable(str(p)).delete("id < 25")  # removes -> tombstones and rewritten files
    before = _load(p)
    rows = _rows(p)
    dl_rows = helpers.canon_rows(helpers.deltalake_table(p))
    duck_rows = helpers.canon_rows(helpers.duckdb_table(p))
    assert before.tombstones.num_rows > 0 and before.txns

    assert write_checkpoint(before) == before.version
    cp = p / LOG / f"{before.version:020d}.checkpoint.parquet"
    schema = pq.read_schema(cp)
    assert schema.names == ["txn", "add", "remove", "metaData", "protocol", "domainMetadata"]
    assert [f.name for f in schema.field("add").type][:10] == [
        "path", "partitionValues", "size", "modificationTime", "dataChange", "tags", "deletionVector",
        "baseRowId", "defaultRowCommitVersion", "clusteringProvider"]
    assert "stats_parsed" not in {f.name for f in schema.field("add").type}

    hint = read_last_checkpoint(LocalStorage(str(p)))
    assert hint is not None and hint["version"] == before.version
    assert hint["checksum"] == last_checkpoint_checksum(hint)
    assert hint["numOfAddFiles"] == before.num_files
    assert hint["sizeInBytes"] == cp.stat().st_size
    assert hint["size"] == pq.ParquetFile(cp).metadata.num_rows

    _drop_commits_through(p, before.version)
    after = _load(p)
    assert after.segment.checkpoint is not None and not after.segment.commits
    assert _state(after) == _state(before)
    assert after.files.column("data_change").to_pylist() == [False] * after.num_files
    assert _rows(p) == rows == dl_rows
    assert helpers.canon_rows(helpers.deltalake_table(p)) == dl_rows
    assert deltalake.DeltaTable(str(p)).transaction_version("app1") == before.txns["app1"].version
    helpers._DUCKDB_CON = None
    assert helpers.canon_rows(helpers.duckdb_table(p)) == duck_rows


def test_existing_checkpoint_is_left_alone(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=2)
    snap = _load(p)
    write_checkpoint(snap)
    cp = p / LOG / f"{snap.version:020d}.checkpoint.parquet"
    cp.write_bytes(cp.read_bytes())  # same content, new mtime
    mtime = cp.stat().st_mtime_ns
    write_checkpoint(snap)
    assert cp.stat().st_mtime_ns == mtime


def test_last_checkpoint_never_moves_backwards(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=4)
    write_checkpoint(_load(p, 3))
    write_checkpoint(_load(p, 1))
    hint = read_last_checkpoint(LocalStorage(str(p)))
    assert hint is not None and hint["version"] == 3
    assert _state(_load(p, 1)) == _state(_load(p, 1))  # the older checkpoint is usable for time travel


def test_expired_tombstones_dropped(tmp_path: pathlib.Path) -> None:
    import deltalake

    p = tmp_path / "t"
    _write_table(p, commits=3, configuration={"delta.deletedFileRetentionDuration": "interval 1 hour"})
    deltalake.DeltaTable(str(p)).delete("id < 15")
    snap = _load(p)
    n_tomb = snap.tombstones.num_rows
    newest = pc.max(snap.tombstones.column("deletion_timestamp")).as_py()
    oldest = pc.min(snap.tombstones.column("deletion_timestamp")).as_py()
    assert n_tomb > 0

    def removes_in(version_dir: pathlib.Path, now_ms: int) -> int:
        shutil.rmtree(version_dir, ignore_errors=True)
        _checkpoint_only_copy(p, version_dir, snap, now_ms=now_ms)
        return int(_load(version_dir).tombstones.num_rows)

    assert removes_in(tmp_path / "a", oldest + 30 * 60_000) == n_tomb  # within an hour: all kept
    assert removes_in(tmp_path / "b", newest + 2 * 3_600_000) == 0  # all older than an hour: dropped


def test_default_tombstone_retention_is_one_week(tmp_path: pathlib.Path) -> None:
    import deltalake

    p = tmp_path / "t"
    _write_table(p, commits=2)
    deltalake.DeltaTable(str(p)).delete("id < 5")
    snap = _load(p)
    ts = pc.max(snap.tombstones.column("deletion_timestamp")).as_py()
    kept = _checkpoint_only_copy(p, tmp_path / "a", snap, now_ms=ts + 6 * DAY)
    gone = _checkpoint_only_copy(p, tmp_path / "b", snap, now_ms=ts + 8 * DAY)
    assert kept.tombstones.num_rows == snap.tombstones.num_rows and gone.tombstones.num_rows == 0


def test_txn_retention_only_when_configured(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=3)
    snap = _load(p)
    now = 1_700_000_000_000 + 10 * DAY
    assert _checkpoint_only_copy(p, tmp_path / "a", snap, now_ms=now).txns == snap.txns
    conf = dict(snap.configuration, **{"delta.setTransactionRetentionDuration": "interval 1 day"})
    from dataclasses import replace

    snap._result.metadata = replace(snap.metadata, configuration=conf)
    assert _checkpoint_only_copy(p, tmp_path / "b", snap, now_ms=now).txns == {}


def test_stats_as_struct(tmp_path: pathlib.Path) -> None:
    import deltalake

    p = tmp_path / "t"
    _write_table(p, commits=3, configuration={
        "delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"})
    before = _load(p)
    rows = _rows(p)
    write_checkpoint(before)
    add_type = pq.read_schema(p / LOG / f"{before.version:020d}.checkpoint.parquet").field("add").type
    names = {f.name for f in add_type}
    assert "stats" not in names and {"stats_parsed", "partitionValues_parsed"} <= names
    sp = add_type.field("stats_parsed").type
    assert sp.field("minValues").type.field("ts").type == pa.timestamp("us", tz="UTC")
    assert add_type.field("partitionValues_parsed").type == pa.struct([("part", pa.string())])

    _drop_commits_through(p, before.version)
    after = _load(p)
    assert after.files.column("stats").null_count == after.num_files  # struct only
    assert _stats_view(after) == _stats_view(before)
    assert _rows(p) == rows
    # skipping works from stats_parsed alone
    scan = DeltaTable(str(p)).scan(filters=[("id", ">=", 25)])
    planned = scan.plan()
    assert scan.metrics.files_skipped > 0 and planned.num_rows < after.num_files
    helpers._DUCKDB_CON = None
    assert helpers.canon_rows(helpers.duckdb_table(p)) == rows
    # deltalake reads the struct stats
    actions = deltalake.DeltaTable(str(p)).get_add_actions(flatten=True)
    actions = pa.table(actions) if not isinstance(actions, pa.Table) else actions
    assert "min.id" in actions.column_names and actions.column("min.id").null_count == 0
    assert helpers.canon_rows(helpers.deltalake_table(p)) == rows

    # a later checkpoint with default settings keeps struct-only stats (nothing to write them as JSON from)
    snap2 = _load(p)
    snap2._result.metadata = type(snap2.metadata)(
        **{**snap2.metadata.__dict__, "configuration": {}})
    again = _checkpoint_only_copy(p, tmp_path / "again", snap2)
    assert _stats_view(again) == _stats_view(before)


def test_stats_json_and_struct_together(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=2, configuration={"delta.checkpoint.writeStatsAsStruct": "true"})
    before = _load(p)
    after = _checkpoint_only_copy(p, tmp_path / "c", before)
    assert _canon_files(after) == _canon_files(before)
    sp = after.files.column("stats_parsed")
    assert sp.null_count == 0
    assert _stats_view(after) == _stats_view(before)


def test_stats_as_struct_with_column_mapping(conformance_dir: pathlib.Path, tmp_path: pathlib.Path) -> None:
    from dataclasses import replace

    src = conformance_dir / "tables" / "delta-rs" / "table_with_partitioning_mapping"
    if not src.is_dir():
        pytest.skip("table not present")
    shutil.copytree(src, tmp_path / "src")
    before = _load(tmp_path / "src")
    assert before.column_mapping_mode != "none" and before.partition_columns
    conf = dict(before.configuration, **{"delta.checkpoint.writeStatsAsStruct": "true"})
    before._result.metadata = replace(before.metadata, configuration=conf)
    after = _checkpoint_only_copy(tmp_path / "src", tmp_path / "dst", before)
    cp = next((tmp_path / "dst" / LOG).glob("*.checkpoint.parquet"))
    add_type = pq.read_schema(cp).field("add").type
    physical = {f.name: f.metadata.get("delta.columnMapping.physicalName") for f in before.schema.fields}
    pv_names = [f.name for f in add_type.field("partitionValues_parsed").type]
    assert pv_names == [physical[c] for c in before.partition_columns]
    min_names = {f.name for f in add_type.field("stats_parsed").type.field("nullCount").type}
    assert min_names and min_names <= {v for k, v in physical.items() if k not in before.partition_columns}
    assert _stats_view(after) == _stats_view(before)
    assert _rows(tmp_path / "dst") == _rows(tmp_path / "src")


# ----------------------------------------------------------------------------- V2 checkpoints
def _upgrade_to_v2(path: pathlib.Path) -> int:
    snap = _load(path)
    v = int(snap.version) + 1
    conf = dict(snap.configuration, **{"delta.checkpointPolicy": "v2"})
    md = snap.metadata.to_json()
    md["configuration"] = conf
    lines = [
        {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
                      "writerFeatures": ["v2Checkpoint", "appendOnly", "invariants"]}},
        {"metaData": md},
    ]
    (path / LOG / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return v


@pytest.mark.parametrize("threshold", [0, 10**9])
def test_v2_checkpoint_with_and_without_sidecars(tmp_path: pathlib.Path, threshold: int) -> None:
    import deltalake

    p = tmp_path / "t"
    _write_table(p, commits=4)
    _upgrade_to_v2(p)
    before = _load(p)
    rows = _rows(p)
    write_checkpoint(before, sidecar_threshold=threshold)
    log = p / LOG
    mains = list(log.glob(f"{before.version:020d}.checkpoint.*.parquet"))
    assert len(mains) == 1 and len(mains[0].name.split(".")) == 4  # N.checkpoint.<uuid>.parquet
    sidecars = list((log / "_sidecars").glob("*.parquet")) if (log / "_sidecars").exists() else []
    main = pq.read_table(mains[0])
    assert main.column("checkpointMetadata").drop_null().to_pylist() == [{"version": before.version, "tags": None}]
    if threshold == 0:
        assert sidecars and main.column("add").null_count == main.num_rows
        refs = {r["path"] for r in main.column("sidecar").drop_null().to_pylist()}
        assert refs == {s.name for s in sidecars}
        assert pq.read_schema(sidecars[0]).names == ["add", "remove"]
    else:
        assert not sidecars and main.column("sidecar").null_count == main.num_rows
    hint = read_last_checkpoint(LocalStorage(str(p)))
    assert hint is not None and hint["version"] == before.version
    assert hint["sizeInBytes"] == mains[0].stat().st_size + sum(s.stat().st_size for s in sidecars)

    _drop_commits_through(p, before.version)
    after = _load(p)
    assert after.segment.checkpoint is not None and after.segment.checkpoint.kind == "v2"
    assert _state(after) == _state(before)
    assert _rows(p) == rows
    helpers._DUCKDB_CON = None
    assert helpers.canon_rows(helpers.duckdb_table(p)) == rows
    try:
        dl = helpers.canon_rows(helpers.deltalake_table(p))
    except Exception as e:
        if "v2Checkpoint" in str(e) or "eature" in str(e):
            pytest.skip(f"deltalake cannot read v2 checkpoints: {e}")
        raise
    assert dl == rows
    assert deltalake.DeltaTable(str(p)).version() == before.version


def test_classic_checkpoint_of_v2_table_carries_checkpoint_metadata(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=2)
    _upgrade_to_v2(p)
    before = _load(p)
    write_checkpoint(before, kind="classic")
    t = pq.read_table(p / LOG / f"{before.version:020d}.checkpoint.parquet")
    assert t.column("checkpointMetadata").drop_null().to_pylist() == [{"version": before.version, "tags": None}]
    _drop_commits_through(p, before.version)
    assert _state(_load(p)) == _state(before)


def test_v2_kind_needs_the_feature(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=1)
    with pytest.raises(Exception, match="v2Checkpoint"):
        write_checkpoint(_load(p), kind="v2")
    with pytest.raises(ValueError):
        write_checkpoint(_load(p), kind="multipart")


# ----------------------------------------------------------------------------- conformance tables
CONFORMANCE_TABLES = [
    "dat/column_mapping/delta", "dat/deletion_vectors/delta", "dat/with_checkpoint/delta",
    "dat/stats_as_struct/delta", "dat/multi_partitioned/delta", "dat/partitioned_with_null/delta",
    "dat/timestamp_ntz/delta", "dat/nested_types/delta", "dat/all_primitive_types/delta",
    "delta-rs/table_with_column_mapping", "delta-rs/table_with_partitioning_mapping",
    "delta-rs/table-with-dv-small", "delta-rs/table-with-domain-metadata", "delta-rs/checkpoints_vacuumed",
    "delta-rs/delta-0.8.0-special-partition", "delta-rs/delta-2.2.0-partitioned-types",
    "kernel-rs/data/v2-checkpoints-parquet-with-sidecars", "kernel-rs/data/v2-checkpoints-json-with-sidecars",
    "kernel-rs/data/v1-single-part-struct-stats-only", "kernel-rs/data/v2-parquet-sidecars-struct-stats-only",
    "kernel-rs/data/app-txn-with-last-updated", "kernel-rs/data/with-short-dv", "kernel-rs/data/partition_cm",
    "kernel-rs/data/parsed-stats", "kernel-rs/data/type-widening", "kernel-rs/data/table-with-dv-small",
]


@pytest.mark.parametrize("name", CONFORMANCE_TABLES)
def test_conformance_table_checkpoint_roundtrip(name: str, conformance_dir: pathlib.Path,
                                                tmp_path: pathlib.Path) -> None:
    src = conformance_dir / "tables" / name
    if not (src / LOG).is_dir():
        pytest.skip(f"{name} not present")
    work = tmp_path / "src"
    shutil.copytree(src, work)
    try:
        before = _load(work)
    except Exception as e:  # tables deltakernel cannot load are not this module's concern
        pytest.skip(f"deltakernel cannot load {name}: {e}")
    try:
        rows: list[Any] | None = _rows(work)
    except Exception:  # some corpus tables are logs without their data files
        rows = None
    after = _checkpoint_only_copy(work, tmp_path / "dst", before, now_ms=0)  # now=0: keep every tombstone
    assert after.segment.checkpoint is not None and not after.segment.commits
    json_stats = before.configuration.get("delta.checkpoint.writeStatsAsJson", "true") == "true"
    assert _canon_files(after, json_stats) == _canon_files(before, json_stats)
    assert _stats_view(after) == _stats_view(before)
    expected_tombs = [r for r in _canon_tombstones(before) if dict(r)["deletion_timestamp"] is not None]
    assert _canon_tombstones(after) == expected_tombs
    for key in ("txns", "domains", "protocol", "metadata"):
        assert _state(after)[key] == _state(before)[key]
    if rows is not None:
        assert _rows(tmp_path / "dst") == rows


# ----------------------------------------------------------------------------- metadata cleanup
_PROTOCOL = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
_METADATA = {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                          "schemaString": json.dumps({"type": "struct", "fields": [
                              {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
                          "configuration": {}, "createdTime": 0}}


def _add(i: int) -> dict[str, Any]:
    return {"add": {"path": f"f{i}.parquet", "partitionValues": {}, "size": 100 + i, "modificationTime": i,
                    "dataChange": True, "stats": json.dumps({"numRecords": 1, "minValues": {"id": i}})}}


def _remove(i: int) -> dict[str, Any]:
    return {"remove": {"path": f"f{i}.parquet", "deletionTimestamp": 1_000 + i, "dataChange": True}}


def _write_log(root: pathlib.Path, n: int) -> None:
    log = root / LOG
    log.mkdir(parents=True)
    for v in range(n):
        actions: list[dict[str, Any]] = [{"commitInfo": {"timestamp": v}}]
        if v == 0:
            actions += [_PROTOCOL, _METADATA]
        actions.append(_add(v))
        if v >= 2 and v % 2 == 0:
            actions.append(_remove(v - 2))
        if v % 3 == 0:
            actions.append({"txn": {"appId": "a", "version": v}})
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        (log / f"{v:020d}.crc").write_text("{}")


def _paths(snap: Snapshot) -> list[str]:
    return sorted(snap.files.column("path").to_pylist())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(3, 14),
    gaps=st.lists(st.integers(-3, 5), min_size=14, max_size=14),  # minutes between commits (may go back)
    checkpoints=st.sets(st.integers(1, 13), min_size=1, max_size=4),
    retention_pct=st.integers(0, 110),  # of the time since the first commit
    snapshot_back=st.integers(0, 3),
)
def test_cleanup_never_breaks_retained_versions(n: int, gaps: list[int], checkpoints: set[int],
                                                retention_pct: int, snapshot_back: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        root = pathlib.Path(d) / "t"
        _write_log(root, n)
        for v in sorted(c for c in checkpoints if c < n):
            write_checkpoint(_load(root, v), now_ms=0)
        base = 1_600_000_000_000
        t = base
        for v in range(n):
            t += gaps[v] * 60_000
            os.utime(root / LOG / f"{v:020d}.json", ns=(t * 1_000_000, t * 1_000_000))
        storage = LocalStorage(str(root))
        stamps = commit_timestamps(storage)
        expected = {v: _paths(_load(root, v)) for v in range(n)}
        now = t + 10 * 60_000
        retention = (now - base) * retention_pct // 100
        cutoff = now - retention
        snap_version = max(0, n - 1 - snapshot_back)

        deleted = cleanup_expired_logs(_load(root, snap_version), retention_ms=retention, now_ms=now)

        older = [v for v, ts in stamps.items() if ts <= cutoff and v <= snap_version]
        retained = [v for v in range(n) if v not in older] + ([max(older)] if older else [])
        for v in retained:
            assert _paths(_load(root, v)) == expected[v], (v, deleted)
        assert _paths(_load(root)) == expected[n - 1]
        # exactly the log files before the newest checkpoint at or below the cutoff commit are gone
        cps = [c for c in checkpoints if c < n and older and c <= max(older)]
        keep_from = max(cps) if cps else 0
        expected_deleted = {f"{LOG}/{v:020d}.{ext}" for v in range(keep_from) for ext in ("json", "crc")}
        expected_deleted |= {f"{LOG}/{c:020d}.checkpoint.parquet" for c in checkpoints if c < keep_from}
        assert set(deleted) == expected_deleted
        assert (root / LOG / f"{keep_from:020d}.json").exists()  # the cutoff checkpoint's commit stays


def test_cleanup_deletes_expired_files_and_orphan_sidecars(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=5)
    v2 = _upgrade_to_v2(p)
    write_checkpoint(_load(p, 2), kind="classic")
    write_checkpoint(_load(p, v2), sidecar_threshold=0)
    orphan = p / LOG / "_sidecars" / "orphan.parquet"
    orphan.write_bytes(b"x")
    old = time.time() - 40 * 86400
    for f in (p / LOG).iterdir():
        if f.is_file() and f.name != "_last_checkpoint":
            os.utime(f, (old, old))
    os.utime(orphan, (old, old))
    rows = _rows(p)
    deleted = cleanup_expired_logs(_load(p))
    names = sorted(k.rsplit("/", 1)[-1] for k in deleted)
    assert names == sorted([f"{v:020d}.json" for v in range(v2)] + [f"{2:020d}.checkpoint.parquet",
                                                                      "orphan.parquet"])
    assert list((p / LOG / "_sidecars").glob("*.parquet"))  # referenced sidecars stay
    assert _rows(p) == rows
    assert cleanup_expired_logs(_load(p)) == []


def test_cleanup_without_checkpoint_deletes_nothing(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=3)
    assert cleanup_expired_logs(_load(p), retention_ms=0, now_ms=int(time.time() * 1000) + DAY) == []


def test_table_api(tmp_path: pathlib.Path) -> None:
    p = tmp_path / "t"
    _write_table(p, commits=3)
    dt = DeltaTable(str(p))
    dt.create_checkpoint()
    assert (p / LOG / f"{dt.version():020d}.checkpoint.parquet").exists()
    dt.cleanup_metadata()  # nothing is 30 days old
    assert (p / LOG / f"{0:020d}.json").exists()


# ----------------------------------------------------------------------------- scale
def synthetic_snapshot(root: pathlib.Path, n: int, *, partitions: int = 100, version: int = 10) -> Snapshot:
    """A snapshot of `n` live files built directly as a file table (no log replay)."""
    import numpy as np

    root.mkdir(parents=True, exist_ok=True)
    storage = LocalStorage(str(root))
    md = dict(_METADATA["metaData"], partitionColumns=["part"], schemaString=json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}}]}))
    from deltakernel.kernel.log.actions import Metadata, Protocol

    idx = pa.array(np.arange(n, dtype=np.int64))
    sidx = idx.cast(pa.string())
    part = pc.binary_join_element_wise("p", pc.cast(pa.array(np.arange(n) % partitions), pa.string()), "")
    path = pc.binary_join_element_wise("part=", part, "/part-", sidx, "-c000.snappy.parquet", "")
    stats = pc.binary_join_element_wise('{"numRecords":', sidx, ',"minValues":{"id":', sidx,
                                        ',"name":"a', sidx, '"},"maxValues":{"id":', sidx,
                                        ',"name":"z"},"nullCount":{"id":0,"name":1}}', "")
    schema = file_schema(["part"])
    cols = {
        "path": path, "size": idx, "modification_time": idx, "data_change": pa.nulls(n, pa.bool_()),
        "partition_values": pa.StructArray.from_arrays([part], names=["part"]), "stats": stats,
    }
    files = pa.table([cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in schema], schema=schema)
    tombs = file_schema(["part"], [("deletion_timestamp", "", pa.int64())]).empty_table()
    result = ReplayResult(Protocol(1, 2), Metadata.from_json(md), files, tombs)
    return Snapshot(storage, LogSegment(storage, version, None, []), result)


def _rss_mb() -> tuple[int, int] | None:
    """(current, peak) resident set size in MB on Linux, else None."""
    try:
        vals = {k: int(v.split()[0]) // 1024 for k, v in (ln.split(":", 1) for ln in open("/proc/self/status"))
                if k in ("VmRSS", "VmHWM")}
        return vals["VmRSS"], vals["VmHWM"]
    except (OSError, KeyError, ValueError):
        return None


@pytest.mark.parametrize("n", [100_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_large_checkpoint_bounded_memory(tmp_path: pathlib.Path, n: int) -> None:
    """Reports time and peak RSS above the snapshot (not asserted: machines differ)."""
    snap = synthetic_snapshot(tmp_path / "big", n)
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the peak RSS counter
    except OSError:
        pass
    before = _rss_mb()
    start = time.perf_counter()
    write_checkpoint(snap)
    elapsed = time.perf_counter() - start
    after_rss = _rss_mb()
    after = _load(tmp_path / "big")
    assert after.num_files == n
    cols = ["path", "stats", "partition_values", "size"]
    assert helpers.canon_rows(after.files.slice(n - 1000).select(cols)) == \
        helpers.canon_rows(snap.files.slice(n - 1000).select(cols))
    extra = f", peak RSS +{after_rss[1] - before[0]} MB over {before[0]} MB" if before and after_rss else ""
    print(f"{n}-file checkpoint: {elapsed:.2f}s{extra}")
