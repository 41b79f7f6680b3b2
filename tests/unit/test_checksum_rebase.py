"""Version checksums of rebased commits: a transaction that lost the race to other writers (appends, deletes,
OPTIMIZE, DV updates, re-adds, domain changes; winners that wrote no crc) still writes `N.crc`, and it equals a
from-scratch recomputation of the state at N (a fresh replay), field by field as delta-spark writes them."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import ConcurrentDeleteDeleteError
from deltakernel.kernel.checksum import FILE_SIZE_BINS, checksum_after_commit, checksum_key
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.conflicts import WinningCommit
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.storage import storage_for_uri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

deltalake = pytest.importorskip("deltalake")


# ----------------------------------------------------------------------------- the oracle
def _recomputed(uri: str, version: int) -> dict[str, Any]:
    """The crc fields of `version` computed from scratch: a fresh replay, Python loops, no shared code."""
    snap = Snapshot.load(storage_for_uri(uri), version)
    rows = snap.files.select(["size", "deletion_vector"]).to_pylist()
    counts = [0] * len(FILE_SIZE_BINS)
    totals = [0] * len(FILE_SIZE_BINS)
    for r in rows:
        b = max(i for i, lo in enumerate(FILE_SIZE_BINS) if lo <= r["size"])
        counts[b] += 1
        totals[b] += r["size"]
    out: dict[str, Any] = {
        "tableSizeBytes": sum(r["size"] for r in rows),
        "numFiles": len(rows),
        "numMetadata": 1,
        "numProtocol": 1,
        "protocol": snap.protocol.to_json(),
        "domainMetadata": sorted(({"domain": d.domain, "configuration": d.configuration, "removed": False}
                                  for d in snap.domain_metadata.values()), key=lambda d: d["domain"]),
        "fileSizeHistogram": {"sortedBinBoundaries": list(FILE_SIZE_BINS), "fileCounts": counts,
                              "totalBytes": totals},
    }
    if snap.protocol.has_feature("deletionVectors"):
        dvs = [r["deletion_vector"] for r in rows if r["deletion_vector"]]
        out["numDeletionVectorsOpt"] = len(dvs)
        out["numDeletedRecordsOpt"] = sum(d["cardinality"] for d in dvs)
    md = {k: v for k, v in snap.metadata.to_json().items() if v is not None}
    out["metadata"] = md
    return out


def _assert_exact(uri: str, version: int) -> dict[str, Any]:
    path = Path(uri) / checksum_key(version)
    assert path.exists(), f"no crc for version {version}"
    crc = json.loads(path.read_text())
    want = _recomputed(uri, version)
    got = {k: crc.get(k) for k in want}
    got["domainMetadata"] = sorted(got["domainMetadata"] or [], key=lambda d: d["domain"])
    # metadata: the same action (createdTime etc. as committed)
    assert {k: v for k, v in got["metadata"].items() if v is not None} == want["metadata"]
    got.pop("metadata"), want.pop("metadata")
    assert got == want, version
    info = helpers.read_actions(uri, version)[0]["commitInfo"]
    assert crc["txnId"] == info["txnId"]
    if "inCommitTimestamp" in info:
        assert crc["inCommitTimestampOpt"] == info["inCommitTimestamp"]
    return crc


def _data(ids: range, p: str = "a") -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "p": [p] * len(ids)})


def _add(path: str, size: int, p: str = "a", rows: int = 1) -> dict[str, Any]:
    return helpers.add_action(path, size=size, partition_values={"p": p}, stats={"numRecords": rows})["add"]


def _remove(row: dict[str, Any]) -> dict[str, Any]:
    out = {"path": row["path"], "dataChange": True, "size": row["size"], "deletionTimestamp": 1,
           "extendedFileMetadata": True, "partitionValues": dict(row["partition_values"] or {})}
    if row.get("deletion_vector"):
        out["deletionVector"] = row["deletion_vector"]
    return out


def _files(uri: str, p: str | None = None) -> list[dict[str, Any]]:
    rows = Snapshot.load(storage_for_uri(uri)).files.to_pylist()
    return [r for r in rows if p is None or r["partition_values"]["p"] == p]


# ----------------------------------------------------------------------------- sequences
def test_delete_rebased_over_appends_by_a_writer_without_crcs(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(6), "a"), partition_by=["p"])
    write_deltalake(uri, _data(range(6, 9), "b"), mode="append")
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    victim = _files(uri, "a")[0]
    for i in range(3):  # deltalake writes no crc: our crc cannot lean on the previous version's
        deltalake.write_deltalake(uri, _data(range(100 + i, 101 + i), "c"), mode="append")
    assert not (Path(uri) / checksum_key(4)).exists()
    t = Transaction(storage, snap, operation="DELETE")
    t.read_files([victim["path"]])
    t.remove_files([_remove(victim)])
    t.add_files([_add("p=a/rewritten.parquet", 777, "a")])
    result = t.commit()
    assert (result.version, result.retries) == (5, 1)
    _assert_exact(uri, 5)


def test_rebased_over_deletes_optimize_and_dv_updates(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    conf = {"delta.enableDeletionVectors": "true"}
    write_deltalake(uri, _data(range(20), "a"), partition_by=["p"], configuration=conf)
    write_deltalake(uri, _data(range(20, 40), "b"), mode="append")
    write_deltalake(uri, _data(range(40, 50), "b"), mode="append")
    write_deltalake(uri, _data(range(50, 60), "c"), mode="append")
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    victim = _files(uri, "c")[0]
    dt = DeltaTable(uri)
    dt.delete("id = 3")  # a DV on the file of partition a
    DeltaTable(uri).delete("id = 4")  # the DV replaced (remove + add of the same path, new DV id)
    DeltaTable(uri).optimize.compact(partition_filters=[("p", "=", "b")])  # dataChange=false rewrite of b
    t = Transaction(storage, snap, operation="DELETE")
    t.read_files([victim["path"]])
    t.remove_files([_remove(victim)])
    result = t.commit()
    assert result.retries == 1 and result.version == snap.version + 4
    crc = _assert_exact(uri, result.version)
    assert crc["numDeletionVectorsOpt"] == 1 and crc["numDeletedRecordsOpt"] == 2
    helpers.assert_same_rows(helpers.duckdb_table(uri), DeltaTable(uri).to_pyarrow_table(), "DuckDB")


def test_same_key_across_winners_and_our_commit(tmp_path: Path) -> None:
    """Reconciliation by key across commits: a file a winner removed and we re-add, a file a winner added that we
    add again (the newest action decides, as in log replay)."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(4), "a"), partition_by=["p"])
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    existing = _files(uri, "a")[0]
    w = Transaction(storage, snap, operation="MANUAL")
    w.remove_files([dict(_remove(existing), dataChange=False)])
    w.add_files([_add("p=a/both.parquet", 1000)])
    w.commit()
    t = Transaction(storage, snap, operation="MANUAL")
    t.add_files([dict(_add(existing["path"], 5000), dataChange=False), _add("p=a/both.parquet", 3000)])
    assert t.commit().retries == 1
    crc = _assert_exact(uri, 2)
    assert crc["numFiles"] == 2 and crc["tableSizeBytes"] == 8000


def test_domain_metadata_of_winners_is_applied(tmp_path: Path) -> None:
    """Row tracking: the winners' and our commits move `delta.rowTracking`'s high-water mark (system-merged)."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(5)), configuration={"delta.enableRowTracking": "true"})
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    write_deltalake(uri, _data(range(5, 8)), mode="append")
    write_deltalake(uri, _data(range(8, 9)), mode="append")
    write_deltalake(DeltaTable(uri, version=snap.version), _data(range(100, 104)), mode="append")
    crc = _assert_exact(uri, snap.version + 3)
    hwm = json.loads(next(d for d in crc["domainMetadata"] if d["domain"] == "delta.rowTracking")["configuration"])
    assert hwm["rowIdHighWaterMark"] == 5 + 3 + 1 + 4 - 1


def test_a_chain_of_concurrent_writers_keeps_every_crc_exact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Several transactions read the same version and commit one after another: each is rebased over all the
    earlier ones; every version's crc is exact and strict validation accepts the table."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(10), "a"), partition_by=["p"])
    for p in "bcde":
        write_deltalake(uri, _data(range(10), p), mode="append")
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    txns = []
    for i, p in enumerate("abcde"):
        t = Transaction(storage, snap, operation="DELETE")
        row = _files(uri, p)[0]
        t.read_files([row["path"]])
        t.remove_files([_remove(row)])
        t.add_files([_add(f"p={p}/new-{i}.parquet", 100 * (i + 1) ** 3, p), _add(f"p={p}/big-{i}.parquet",
                                                                                 9_000_000 * (i + 1), p)])
        txns.append(t)
    for i, t in enumerate(txns):
        assert t.commit().retries == (1 if i else 0)
        _assert_exact(uri, snap.version + 1 + i)
    monkeypatch.setenv("DELTAKERNEL_VERIFY_CHECKSUMS", "strict")  # a mismatch would raise CorruptLogError
    for v in range(snap.version + 1, snap.version + 6):
        assert Snapshot.load(storage, v).num_files == 5 + (v - snap.version)


def test_a_conflicting_loser_writes_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(4), "a"), partition_by=["p"])
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    row = _files(uri, "a")[0]
    DeltaTable(uri).delete("p = 'a'")
    t = Transaction(storage, snap, operation="DELETE")
    t.remove_files([_remove(row)])
    with pytest.raises(ConcurrentDeleteDeleteError):
        t.commit()
    assert not (Path(uri) / checksum_key(2)).exists()
    _assert_exact(uri, 1)


def test_checksum_after_commit_needs_every_winner(tmp_path: Path) -> None:
    """Without the actions of every commit in between there is no exact state: no crc (never a wrong one)."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(4)))
    storage = storage_for_uri(uri)
    snap = Snapshot.load(storage)
    write_deltalake(uri, _data(range(4, 6)), mode="append")
    write_deltalake(uri, _data(range(6, 8)), mode="append")
    w1 = WinningCommit.parse(1, helpers.commit_file(uri, 1).read_bytes())
    w2 = WinningCommit.parse(2, helpers.commit_file(uri, 2).read_bytes())
    ours = [{"commitInfo": {}}, {"add": _add("x.parquet", 10)}]
    assert checksum_after_commit(storage, snap, 3, ours, "t", [w1]) is None
    full = checksum_after_commit(storage, snap, 3, ours, "t", [w1, w2])
    assert full is not None and full["numFiles"] == 4
    no_size = [{"commitInfo": {}}, {"add": {k: v for k, v in _add("y.parquet", 1).items() if k != "size"}}]
    assert checksum_after_commit(storage, snap, 3, no_size, "t", [w1, w2]) is None


def test_threads_racing_on_one_table_leave_an_exact_crc_at_every_version(tmp_path: Path) -> None:
    """Real races: writers on threads append and delete in their own partitions (compatible, so they rebase);
    every version gets a crc and each equals the recomputed state."""
    import threading

    uri = str(tmp_path / "t")
    write_deltalake(uri, _data(range(3), "w0"), partition_by=["p"])
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            for i in range(4):
                write_deltalake(uri, _data(range(i * 10, i * 10 + 3 + k), f"w{k}"), mode="append")
                if i % 2:
                    dt = DeltaTable(uri)
                    dt.delete(f"p = 'w{k}' AND id < {i * 10 + 1}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    last = DeltaTable(uri).version()
    assert last == 4 * (4 + 2)
    rebased = 0
    for v in range(last + 1):
        _assert_exact(uri, v)
        read = helpers.read_actions(uri, v)[0]["commitInfo"].get("readVersion")
        rebased += read is not None and read != v - 1
    assert rebased, "the writers raced (typically ~20 of 24 commits are rebased)"
