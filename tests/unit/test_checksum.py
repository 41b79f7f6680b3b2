"""Version checksum files (`N.crc`): written on every commit with the state after it, in delta-spark's format,
checked against the corpus' Spark / delta-rs crc files, and used to validate snapshots on load."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import CorruptLogError
from deltakernel.kernel.checksum import (
    FILE_SIZE_BINS,
    checksum_key,
    checksum_mismatches,
    read_checksum,
    verify_snapshot,
)
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.storage import storage_for_uri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers


def _crc(uri: str | Path, version: int) -> dict[str, Any]:
    return json.loads((Path(uri) / checksum_key(version)).read_text())


def _assert_matches_state(uri: str | Path, version: int) -> dict[str, Any]:
    """The crc at `version` equals the state a fresh replay computes (counts, sizes, histogram, P&M)."""
    crc = _crc(uri, version)
    snap = Snapshot.load(storage_for_uri(str(uri)), version)
    sizes = snap.files.column("size").to_pylist()
    assert crc["numFiles"] == snap.num_files == len(sizes)
    assert crc["tableSizeBytes"] == sum(sizes)
    assert crc["numMetadata"] == 1 and crc["numProtocol"] == 1
    assert checksum_mismatches(crc, num_files=len(sizes), table_size=sum(sizes), protocol=snap.protocol,
                               metadata=snap.metadata) == []
    hist = crc["fileSizeHistogram"]
    assert hist["sortedBinBoundaries"] == list(FILE_SIZE_BINS)
    assert sum(hist["fileCounts"]) == len(sizes) and sum(hist["totalBytes"]) == sum(sizes)
    for s in sizes:  # each file in its bin
        b = max(i for i, lo in enumerate(FILE_SIZE_BINS) if lo <= s)
        assert hist["fileCounts"][b] >= 1
    live_domains = {d.domain: d.configuration for d in snap.domain_metadata.values()}
    assert {d["domain"]: d["configuration"] for d in crc["domainMetadata"]} == live_domains
    return crc


def _data(n: int, off: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(off, off + n), pa.int64()), "p": [f"k{i % 3}" for i in range(n)]})


def test_every_commit_writes_an_exact_crc(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(10), partition_by=["p"])
    write_deltalake(uri, _data(5, 100), mode="append")
    k1 = pa.table({"id": pa.array([200, 201], pa.int64()), "p": ["k1", "k1"]})
    write_deltalake(uri, k1, mode="overwrite", predicate="p = 'k1'")
    write_deltalake(uri, _data(3, 300), mode="overwrite")
    for v in range(4):
        crc = _assert_matches_state(uri, v)
        assert crc["txnId"] == helpers.read_actions(uri, v)[0]["commitInfo"]["txnId"]
    # the crc's metaData / protocol are exactly the committed actions
    first = {k: v for a in helpers.read_actions(uri, 0) for k, v in a.items()}
    assert _crc(uri, 0)["metadata"] == {k: v for k, v in first["metaData"].items() if v is not None}
    assert _crc(uri, 0)["protocol"] == first["protocol"]


def test_crc_has_spark_format(tmp_path: Path, conformance_dir: Path) -> None:
    """Our crc uses delta-spark's field names and value types (compared with Spark's crc in the corpus)."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(10), configuration={"delta.enableDeletionVectors": "true",
                                                   "delta.enableInCommitTimestamps": "true"})
    DeltaTable(uri).delete("id < 3")
    ours = _crc(uri, 1)
    spark_files = [p for p in conformance_dir.glob("tables/**/_delta_log/*.crc") if p.name[0].isdigit()]
    spark = [json.loads(p.read_text()) for p in spark_files if p.read_text().startswith("{")]
    spark_keys = {k for c in spark for k in c}
    assert set(ours) <= spark_keys | {"fileSizeHistogram"}, set(ours) - spark_keys
    full = next(c for c in spark if "inCommitTimestampOpt" in c and "numDeletionVectorsOpt" in c)
    for key in ("txnId", "tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "numDeletedRecordsOpt",
                "numDeletionVectorsOpt", "inCommitTimestampOpt", "domainMetadata", "metadata", "protocol"):
        assert key in ours, key
        assert type(ours[key]) is type(full[key]), key
    assert set(ours["metadata"]) == set(full["metadata"])
    hist = full.get("fileSizeHistogram") or full["histogramOpt"]
    assert ours["fileSizeHistogram"]["sortedBinBoundaries"] == hist["sortedBinBoundaries"]
    snap = DeltaTable(uri).snapshot
    dv = snap.files.column("deletion_vector")
    assert ours["numDeletionVectorsOpt"] == len(dv) - dv.null_count == 1
    assert ours["numDeletedRecordsOpt"] == pc.sum(pc.struct_field(dv, "cardinality")).as_py() == 3
    assert ours["inCommitTimestampOpt"] == helpers.read_actions(uri, 1)[0]["commitInfo"]["inCommitTimestamp"]
    _assert_matches_state(uri, 1)


def test_corpus_crcs_match_our_replay(conformance_dir: Path) -> None:
    """Every Spark / delta-rs crc at a table's latest version agrees with our replay (except the kernel-rs
    fixture whose crc deliberately disagrees with its log, which must be detected)."""
    checked = 0
    for crc_path in sorted(conformance_dir.glob("tables/**/_delta_log/*.crc")):
        if not crc_path.name[0].isdigit():
            continue
        table = crc_path.parent.parent
        version = int(crc_path.name[:20])
        try:
            snap = Snapshot.load(storage_for_uri(str(table)), version)
        except Exception:
            continue  # unreadable fixtures (expected errors, missing files) are covered elsewhere
        crc = read_checksum(snap.storage, version)
        if crc is None:
            continue
        sizes = pc.sum(snap.files.column("size")).as_py() or 0
        bad = checksum_mismatches(crc, num_files=snap.num_files, table_size=sizes, protocol=snap.protocol,
                                  metadata=snap.metadata)
        if table.name == "crc-full":
            assert bad and any("numFiles" in b for b in bad)
        else:
            assert bad == [], (str(crc_path), bad)
            checked += 1
    assert checked >= 50


def test_mismatch_warns_or_raises_in_strict_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6))
    path = Path(uri) / checksum_key(0)
    crc = json.loads(path.read_text())
    crc["numFiles"] += 1
    path.write_text(json.dumps(crc))
    with caplog.at_level(logging.WARNING):
        assert DeltaTable(uri).count() == 6  # the log wins
    assert "does not match its version checksum" in caplog.text
    monkeypatch.setenv("DELTAKERNEL_VERIFY_CHECKSUMS", "strict")
    with pytest.raises(CorruptLogError, match="numFiles"):
        DeltaTable(uri)
    monkeypatch.setenv("DELTAKERNEL_VERIFY_CHECKSUMS", "false")
    assert verify_snapshot(Snapshot.load(storage_for_uri(uri))) == []


def test_unparsable_crc_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6))
    (Path(uri) / checksum_key(0)).write_text("malformed")
    monkeypatch.setenv("DELTAKERNEL_VERIFY_CHECKSUMS", "strict")
    assert DeltaTable(uri).count() == 6


def test_crc_is_written_without_fsync_and_a_torn_one_is_ignored(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit is made durable (fsync); the crc, a cache readers validate, is not: a crc a power failure
    left empty is ignored, even in strict mode."""
    import os

    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6))
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    write_deltalake(uri, _data(3), mode="append")
    assert len(synced) == 1  # the commit's temp file only
    assert _crc(uri, 1)["numFiles"] == 2
    (Path(uri) / checksum_key(1)).write_bytes(b"")
    monkeypatch.setenv("DELTAKERNEL_VERIFY_CHECKSUMS", "strict")
    assert DeltaTable(uri).count() == 9


def test_rebased_append_derives_from_previous_crc(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6), partition_by=["p"])
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    write_deltalake(uri, _data(3, 50), mode="append")  # the winner: version 1
    t = Transaction(storage, snap, operation="WRITE")
    t.add_files([helpers.add_action("p=k0/new.parquet", size=4321, partition_values={"p": "k0"})["add"]])
    assert t.commit().version == 2
    crc1, crc2 = _crc(uri, 1), _crc(uri, 2)
    assert crc2["numFiles"] == crc1["numFiles"] + 1
    assert crc2["tableSizeBytes"] == crc1["tableSizeBytes"] + 4321
    assert crc2["metadata"] == crc1["metadata"]


def test_rebased_commit_with_removes_writes_an_exact_crc(tmp_path: Path) -> None:
    """(Was: no crc.) The winners' actions are applied too, so a rebased commit with removes gets its crc
    (more sequences in test_checksum_rebase.py)."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6), partition_by=["p"])
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    row = next(r for r in snap.files.to_pylist() if r["partition_values"]["p"] == "k0")
    write_deltalake(uri, _data(3, 50), mode="append")
    t = Transaction(storage, snap, operation="DELETE")
    t.remove_files([{"path": row["path"], "dataChange": True, "size": row["size"], "deletionTimestamp": 1}])
    assert t.commit().version == 2
    _assert_matches_state(uri, 2)
    assert DeltaTable(uri).count() == 9 - 2  # k0 held rows 0 and 3


def test_existing_crc_is_never_overwritten(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(6))
    (Path(uri) / checksum_key(1)).write_text('{"numFiles":-1}')  # a stray crc for the next version
    write_deltalake(uri, _data(2), mode="append")
    assert _crc(uri, 1) == {"numFiles": -1}


def test_deltalake_and_duckdb_read_tables_with_our_crc(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(10))
    write_deltalake(uri, _data(5, 10), mode="append")
    assert (Path(uri) / checksum_key(1)).exists()
    expected = DeltaTable(uri).to_pyarrow_table()
    helpers.assert_same_rows(helpers.deltalake_table(uri), expected, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(uri), expected, "duckdb")
