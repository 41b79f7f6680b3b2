"""Catalog-managed tables in the kernel: the Committer seam (stage → ratify → publish), snapshots from the
catalog's log tail, and every fault of the commit protocol, on local storage and on S3 (moto on loopback).

The catalog is `MemoryCatalog` (tests/unit/memory_catalog.py), an in-memory implementation of the kernel's
`CatalogCommitClient` with the spec's version checks; the HTTP Unity Catalog server is tested on its own.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltakernel.errors import (
    CatalogManagedTableError,
    CatalogTooManyUnpublishedError,
    ConcurrentDeleteDeleteError,
    DeltaError,
    DeltaProtocolError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltakernel.kernel.catalog_client import CatalogCommitClient, require_maintenance_permitted
from deltakernel.kernel.checkpoints.cleanup import cleanup_expired_logs
from deltakernel.kernel.checkpoints.write import write_checkpoint
from deltakernel.kernel.log.actions import Metadata, Protocol
from deltakernel.kernel.log.segment import STAGED_COMMITS_DIR, LogTail, commit_key
from deltakernel.kernel.scan.scan import Scan
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.table_changes import TableChanges
from deltakernel.kernel.transaction.committer import CatalogCommitter, FilesystemCommitter
from deltakernel.kernel.transaction.transaction import ABSENT, IN_DOUBT, Transaction
from deltakernel.storage import storage_for_uri
from deltakernel.storage.base import Storage

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_catalog import (
    CRASH_AFTER_RATIFY,
    CRASH_BEFORE_RATIFY,
    LOST_RESPONSE,
    UNAVAILABLE,
    MemoryCatalog,
    SimulatedCrash,
)

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
CM_PROTOCOL = Protocol(3, 7, frozenset({"catalogManaged", "vacuumProtocolCheck"}),
                       frozenset({"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"}))


# ----------------------------------------------------------------------------- helpers
@pytest.fixture(params=["local", "s3"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param == "local":
        return storage_for_uri(str(tmp_path / "t"))
    bucket = request.getfixturevalue("s3_bucket")
    return storage_for_uri(f"s3://{bucket}/t", request.getfixturevalue("s3_options"))


def _create(storage: Storage, catalog: MemoryCatalog, conf: dict[str, str] | None = None,
            protocol: Protocol = CM_PROTOCOL) -> int:
    txn = Transaction(storage, None, operation="CREATE TABLE", committer=CatalogCommitter(storage, catalog))
    txn.update_protocol(protocol)
    txn.update_metadata(Metadata(str(uuid.uuid4()), SCHEMA, (), {"delta.enableInCommitTimestamps": "true",
                                                                  **(conf or {})}))
    return txn.commit().version


def _add(storage: Storage, ids: list[int]) -> dict[str, Any]:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), buf)
    path = f"part-{uuid.uuid4()}.parquet"
    storage.put(path, buf.getvalue())
    return {"path": path, "partitionValues": {}, "size": len(buf.getvalue()), "modificationTime": 0,
            "dataChange": True, "stats": json.dumps({"numRecords": len(ids)})}


def _append_txn(storage: Storage, snap: Snapshot, ids: list[int], **kw: Any) -> Transaction:
    txn = Transaction(storage, snap, operation="WRITE", **kw)
    txn.add_files([_add(storage, ids)])
    return txn


def _ids(snap: Snapshot) -> list[int]:
    return sorted(Scan(snap).to_table().column("id").to_pylist())


def _published(storage: Storage) -> list[int]:
    return sorted(int(m.key.rsplit("/", 1)[-1][:20]) for m in storage.list_from("_delta_log/")
                  if m.key.count("/") == 1 and m.key.endswith(".json") and m.key.rsplit("/", 1)[-1][20:] == ".json")


def _staged(storage: Storage) -> list[str]:
    return sorted(m.key for m in storage.list_from(f"{STAGED_COMMITS_DIR}/"))


# ----------------------------------------------------------------------------- the happy path
def test_memory_catalog_is_a_catalog_commit_client() -> None:
    assert isinstance(MemoryCatalog(), CatalogCommitClient)


def test_create_append_publish(storage: Storage) -> None:
    cat = MemoryCatalog()
    assert _create(storage, cat) == 0
    assert _published(storage) == [0] and cat.latest == 0  # version 0: published put-if-absent, then registered
    for i in range(3):
        snap = Snapshot.load(storage, catalog=cat)
        res = _append_txn(storage, snap, [i]).commit()
        assert res.version == i + 1
    snap = Snapshot.load(storage, catalog=cat)
    assert snap.version == 3 and _ids(snap) == [0, 1, 2]
    # each commit was staged, ratified as its version, then published in order and the catalog told
    assert len(_staged(storage)) == 3 and _published(storage) == [0, 1, 2, 3]
    assert cat.ratified == {} and cat.published_up_to == 3
    for v in (1, 2, 3):
        info = json.loads(storage.read(commit_key(v)).splitlines()[0])["commitInfo"]
        assert info["txnId"] == cat.txn_ids[v] and "inCommitTimestamp" in info
    # a published table reads the same by path (published-only), and the writer's advance goes through the catalog
    assert _ids(Snapshot.load(storage, log_tail=LogTail.published_only())) == [0, 1, 2]
    assert snap.advance().version == 3


def test_unpublished_commits_read_through_the_tail_only(storage: Storage) -> None:
    cat = MemoryCatalog()
    _create(storage, cat, {"delta.enableChangeDataFeed": "true"})
    for i in range(2):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [i],
                    committer=CatalogCommitter(storage, cat, auto_publish=False)).commit()
    assert _published(storage) == [0] and sorted(cat.ratified) == [1, 2]
    assert _ids(Snapshot.load(storage, catalog=cat)) == [0, 1]
    # without the catalog: refused; published-only opt-out sees only what is published
    with pytest.raises(CatalogManagedTableError) as e:
        Snapshot.load(storage)
    assert e.value.feature == "catalogManaged" and isinstance(e.value, UnsupportedFeatureError)
    assert Snapshot.load(storage, log_tail=LogTail.published_only()).version == 0
    # time travel and the change data feed through the same segment (staged commits included)
    assert _ids(Snapshot.load(storage, 1, catalog=cat)) == [0]
    cdf = TableChanges(storage, 1, None, log_tail=cat.get_log_tail()).to_table()
    assert sorted(zip(cdf.column("id").to_pylist(), cdf.column("_commit_version").to_pylist())) == [(0, 1), (1, 2)]
    ts = Snapshot.load(storage, catalog=cat).commit_infos[1]["inCommitTimestamp"]
    at = dt.datetime.fromtimestamp(ts / 1000, dt.timezone.utc)
    assert Snapshot.load_at(storage, at, catalog=cat).version == 1


def test_versions_past_the_catalog_are_ignored(storage: Storage) -> None:
    cat = MemoryCatalog()
    _create(storage, cat)
    _append_txn(storage, Snapshot.load(storage, catalog=cat), [1]).commit()
    # a rogue filesystem writer publishes version 2 behind the catalog's back
    rogue = storage.read(commit_key(1)).replace(b'"WRITE"', b'"ROGUE"')
    storage.put_if_absent(commit_key(2), rogue)
    snap = Snapshot.load(storage, catalog=cat)
    assert snap.version == 1 and _ids(snap) == [1]
    with pytest.raises(VersionNotFoundError):
        Snapshot.load(storage, 2, catalog=cat)
    # and the catalog's commit wins over a published file of the same version
    tail = LogTail.of([(1, _staged(storage)[0], 1, 0)], 1)
    assert Snapshot.load(storage, log_tail=tail).version == 1


def test_operations_commit_through_the_catalog_of_their_snapshot(storage: Storage) -> None:
    # DELETE and RESTORE take a snapshot; loaded through the catalog, their commits are staged and ratified
    from deltakernel.operations.dml.delete import delete
    from deltakernel.operations.maintenance.restore import restore

    cat = MemoryCatalog()
    _create(storage, cat)
    committer = CatalogCommitter(storage, cat, auto_publish=False)
    _append_txn(storage, Snapshot.load(storage, catalog=cat), [1, 2], committer=committer).commit()
    _append_txn(storage, Snapshot.load(storage, catalog=cat), [3], committer=committer).commit()
    _, v = delete(storage, Snapshot.load(storage, catalog=cat), "id = 2")
    assert v == 3 and _ids(Snapshot.load(storage, catalog=cat)) == [1, 3]
    _, v = restore(storage, Snapshot.load(storage, catalog=cat), 1)  # version 1 is only staged, never published
    assert v == 4 and _ids(Snapshot.load(storage, catalog=cat)) == [1, 2]
    assert cat.latest == 4 and set(cat.txn_ids) == {0, 1, 2, 3, 4}
    assert _published(storage) == [0, 1, 2, 3, 4]  # the operations' own commits published the earlier ones


# ----------------------------------------------------------------------------- refusals
def test_filesystem_commit_to_a_catalog_managed_table_is_refused(storage: Storage) -> None:
    cat = MemoryCatalog()
    _create(storage, cat)
    snap = Snapshot.load(storage, log_tail=LogTail.published_only())  # no catalog
    txn = _append_txn(storage, snap, [1])
    with pytest.raises(CatalogManagedTableError) as e:
        txn.commit()
    assert e.value.feature == "catalogManaged" and "catalogManaged" in str(e.value)
    with pytest.raises(CatalogManagedTableError):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [1],
                    committer=FilesystemCommitter(storage)).commit()
    # creating a catalog-managed table without a catalog is refused too
    with pytest.raises(CatalogManagedTableError):
        t = Transaction(storage.child("other"), None, operation="CREATE TABLE")
        t.update_protocol(CM_PROTOCOL)
        t.update_metadata(Metadata("x", SCHEMA, (), {"delta.enableInCommitTimestamps": "true"}))
        t.commit()
    assert _published(storage) == [0] and _staged(storage) == []


def test_a_filesystem_table_loaded_through_a_catalog_commits_to_the_filesystem(tmp_path: Path) -> None:
    # a catalog's external table: not catalog-managed, so the log is the truth and commits are put-if-absent
    storage = storage_for_uri(str(tmp_path / "t"))
    txn = Transaction(storage, None, operation="CREATE TABLE")
    txn.update_protocol(Protocol(1, 2))
    txn.update_metadata(Metadata("x", SCHEMA, (), {}))
    txn.commit()
    cat = MemoryCatalog(latest=0)
    snap = Snapshot.load(storage, catalog=cat)
    assert _append_txn(storage, snap, [1]).commit().version == 1
    assert cat.ratify_calls == 0 and _staged(storage) == [] and _published(storage) == [0, 1]
    assert _ids(Snapshot.load(storage, catalog=cat)) == [1]


def test_in_commit_timestamps_are_required(tmp_path: Path) -> None:
    storage = storage_for_uri(str(tmp_path / "t"))
    txn = Transaction(storage, None, operation="CREATE TABLE", committer=CatalogCommitter(storage, MemoryCatalog()))
    txn.update_protocol(CM_PROTOCOL)
    txn.update_metadata(Metadata("x", SCHEMA, (), {}))
    with pytest.raises(DeltaProtocolError, match="in-commit timestamps"):
        txn.commit()


def test_catalog_committer_refuses_a_filesystem_table(tmp_path: Path) -> None:
    storage = storage_for_uri(str(tmp_path / "t"))
    txn = Transaction(storage, None, operation="CREATE TABLE", committer=CatalogCommitter(storage, MemoryCatalog()))
    txn.update_protocol(Protocol(1, 2))
    txn.update_metadata(Metadata("x", SCHEMA, (), {}))
    with pytest.raises(DeltaError, match="only to catalog-managed"):
        txn.commit()


def test_maintenance_is_publish_aware_and_needs_the_catalogs_consent(tmp_path: Path) -> None:
    storage = storage_for_uri(str(tmp_path / "t"))
    cat = MemoryCatalog()
    _create(storage, cat)
    committer = CatalogCommitter(storage, cat, auto_publish=False)
    _append_txn(storage, Snapshot.load(storage, catalog=cat), [1], committer=committer).commit()
    snap = Snapshot.load(storage, catalog=cat)
    with pytest.raises(DeltaError, match="not yet published"):
        write_checkpoint(snap)
    assert committer.publish() == 1 and _published(storage) == [0, 1]
    assert write_checkpoint(snap) == 1
    again = Snapshot.load(storage, catalog=cat)
    assert again.segment.checkpoint is not None and again.segment.checkpoint.version == 1 and _ids(again) == [1]
    for op, run in (("VACUUM", lambda: require_maintenance_permitted(snap, "VACUUM")),
                    ("METADATA CLEANUP", lambda: cleanup_expired_logs(snap))):
        with pytest.raises(CatalogManagedTableError, match=op):
            run()
    cat.permitted.add("METADATA CLEANUP")
    assert cleanup_expired_logs(snap) == []  # nothing expired, but allowed
    # everything expired: the checkpoint at 1 is kept, version 0 and the staged commit of 1 (published) go
    _append_txn(storage, again, [2], committer=committer).commit()  # version 2: staged, still served by the catalog
    latest = Snapshot.load(storage, catalog=cat)
    staged = _staged(storage)
    deleted = cleanup_expired_logs(latest, retention_ms=0, now_ms=latest.commit_infos[2]["inCommitTimestamp"] + 1)
    assert commit_key(0) in deleted and staged[0] in deleted and staged[1] not in deleted
    assert _ids(Snapshot.load(storage, catalog=cat)) == [1, 2]


def test_log_compaction_covers_published_commits_only(tmp_path: Path) -> None:
    from deltakernel.kernel.log.compaction import compact_logs

    storage = storage_for_uri(str(tmp_path / "t"))
    cat = MemoryCatalog()
    _create(storage, cat)
    committer = CatalogCommitter(storage, cat, auto_publish=False)
    for i in range(2):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [i], committer=committer).commit()
    snap = Snapshot.load(storage, catalog=cat)
    with pytest.raises(DeltaError, match="not in the log"):
        compact_logs(storage, snap, 1, 2)
    committer.publish()
    assert compact_logs(storage, snap, 1, 2) == "_delta_log/00000000000000000001.00000000000000000002.compacted.json"


def test_log_tail_must_be_contiguous_and_within_the_catalogs_version() -> None:
    from deltakernel.errors import CorruptLogError

    with pytest.raises(CorruptLogError, match="contiguous"):
        LogTail.of([(1, "00000000000000000001.a.json", 1, 0), (3, "00000000000000000003.b.json", 1, 0)], 3)
    with pytest.raises(CorruptLogError, match="past its latest"):
        LogTail.of([(2, "00000000000000000002.a.json", 1, 0)], 1)
    with pytest.raises(CorruptLogError, match="not a file of version"):
        LogTail.of([(2, "00000000000000000001.a.json", 1, 0)], 2)
    tail = LogTail.of([(1, "s3://b/t/_delta_log/_staged_commits/00000000000000000001.a.json", 5, 7)], 1)
    assert tail.commits[0].key == "_delta_log/_staged_commits/00000000000000000001.a.json" and tail.versions == [1]


# ----------------------------------------------------------------------------- faults
def test_crash_between_stage_and_ratify_leaves_no_commit(storage: Storage) -> None:
    cat = MemoryCatalog(faults=[CRASH_BEFORE_RATIFY])
    _create(storage, cat)
    txn = _append_txn(storage, Snapshot.load(storage, catalog=cat), [1])
    with pytest.raises(SimulatedCrash):
        txn.commit()
    assert txn.commit_state == IN_DOUBT and len(_staged(storage)) == 1  # the staged file is left behind
    snap = Snapshot.load(storage, catalog=cat)
    assert snap.version == 0 and _ids(snap) == []
    assert Snapshot.load(storage, log_tail=LogTail.published_only()).version == 0
    # the next writer takes version 1 with its own staged file; the orphan is never read
    assert _append_txn(storage, snap, [2]).commit().version == 1
    assert _ids(Snapshot.load(storage, catalog=cat)) == [2] and len(_staged(storage)) == 2


def test_crash_after_ratify_is_visible_through_the_tail_and_published_by_the_next_writer(storage: Storage) -> None:
    cat = MemoryCatalog(faults=[CRASH_AFTER_RATIFY])
    _create(storage, cat)
    with pytest.raises(SimulatedCrash):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [1]).commit()
    assert _published(storage) == [0] and sorted(cat.ratified) == [1]
    assert _ids(Snapshot.load(storage, catalog=cat)) == [1]  # readers with the tail see it
    assert Snapshot.load(storage, log_tail=LogTail.published_only()).version == 0  # by path: not yet
    assert _append_txn(storage, Snapshot.load(storage, catalog=cat), [2]).commit().version == 2
    assert _published(storage) == [0, 1, 2] and cat.ratified == {}  # published in order by the next writer
    assert _ids(Snapshot.load(storage, log_tail=LogTail.published_only())) == [1, 2]


def test_publish_call_publishes_a_crashed_writers_commit(tmp_path: Path) -> None:
    storage = storage_for_uri(str(tmp_path / "t"))
    cat = MemoryCatalog(faults=[CRASH_AFTER_RATIFY])
    _create(storage, cat)
    with pytest.raises(SimulatedCrash):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [1]).commit()
    committer = CatalogCommitter(storage, cat)
    assert committer.publish() == 1 and committer.publish() is None  # idempotent: nothing left to publish
    staged = storage.read(next(iter(_staged(storage))))
    assert storage.read(commit_key(1)) == staged  # a byte copy of the ratified commit


@pytest.mark.parametrize("fault", [LOST_RESPONSE, UNAVAILABLE])
def test_unknown_ratify_outcome_is_resolved_by_reloading_the_tail(storage: Storage, fault: str) -> None:
    cat = MemoryCatalog(faults=[fault])
    _create(storage, cat)
    res = _append_txn(storage, Snapshot.load(storage, catalog=cat), [7]).commit()
    assert res.version == 1 and cat.latest == 1  # exactly one commit: never ratified twice
    assert cat.ratify_calls == (1 if fault == LOST_RESPONSE else 2)
    assert _ids(Snapshot.load(storage, catalog=cat)) == [7] and _published(storage) == [0, 1]


def test_lost_response_then_retry_meeting_its_own_commit_is_one_commit(tmp_path: Path) -> None:
    # the response is lost and the first tail reload is stale (not ratified yet, seemingly): the committer offers
    # the same staged file again, the catalog answers 409, and the holder of the version is our own file
    storage = storage_for_uri(str(tmp_path / "t"))
    cat = MemoryCatalog()
    _create(storage, cat)
    snap = Snapshot.load(storage, catalog=cat)
    stale, real_tail, served = cat.get_log_tail(), cat.get_log_tail, []

    def tail() -> LogTail:
        if cat.ratify_calls == 1 and not served:
            served.append(1)
            return stale
        return real_tail()

    cat.get_log_tail = tail  # type: ignore[method-assign]
    cat.faults = [LOST_RESPONSE]
    res = _append_txn(storage, snap, [1], committer=CatalogCommitter(storage, cat, sleep=lambda s: None)).commit()
    assert res.version == 1 and res.retries == 0 and cat.latest == 1 and cat.conflicts == 1 and cat.ratify_calls == 2
    assert _ids(Snapshot.load(storage, catalog=cat)) == [1] and len(_staged(storage)) == 1


def test_two_writers_racing_one_commit_per_version_and_rebase(storage: Storage) -> None:
    cat = MemoryCatalog()
    _create(storage, cat)
    base = Snapshot.load(storage, catalog=cat)
    a, b = _append_txn(storage, base, [1]), _append_txn(storage, base, [2])
    assert a.commit().version == 1
    res = b.commit()  # 409 at version 1: the winner is read from the catalog, blind appends rebase
    assert res.version == 2 and res.retries == 1 and cat.conflicts == 1
    assert _ids(Snapshot.load(storage, catalog=cat)) == [1, 2]
    # a real conflict stays one: both delete the same file
    snap = Snapshot.load(storage, catalog=cat)
    path = snap.files.column("path").to_pylist()[0]
    d1, d2 = (Transaction(storage, snap, operation="DELETE") for _ in range(2))
    for d in (d1, d2):
        d.remove_files([{"path": path, "dataChange": True, "deletionTimestamp": 0}])
    d1.commit()
    with pytest.raises(ConcurrentDeleteDeleteError):
        d2.commit()
    assert d2.commit_state == ABSENT and cat.latest == 3


def test_concurrent_writers_threads(storage: Storage) -> None:
    cat = MemoryCatalog()
    _create(storage, cat)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for j in range(3):
                _append_txn(storage, Snapshot.load(storage, catalog=cat), [i * 10 + j]).commit()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    snap = Snapshot.load(storage, catalog=cat)
    assert snap.version == 12 and _ids(snap) == sorted(i * 10 + j for i in range(4) for j in range(3))
    assert len(set(cat.txn_ids.values())) == 13  # one distinct commit per version, no lost update


def test_too_many_unpublished_publishes_backs_off_and_retries(storage: Storage) -> None:
    cat = MemoryCatalog(max_unpublished=2)
    _create(storage, cat)
    sleeps: list[float] = []
    committer = CatalogCommitter(storage, cat, auto_publish=False, sleep=sleeps.append)
    for i in range(3):
        _append_txn(storage, Snapshot.load(storage, catalog=cat), [i], committer=committer).commit()
    assert cat.too_many == 1 and sleeps == [committer._backoff_s]
    assert _published(storage) == [0, 1, 2] and sorted(cat.ratified) == [3]
    assert _ids(Snapshot.load(storage, catalog=cat)) == [0, 1, 2]


def test_too_many_unpublished_gives_up_when_publishing_does_not_help(tmp_path: Path) -> None:
    storage = storage_for_uri(str(tmp_path / "t"))
    cat = MemoryCatalog(max_unpublished=0)
    _create(storage, cat)
    txn = _append_txn(storage, Snapshot.load(storage, catalog=cat), [1],
                      committer=CatalogCommitter(storage, cat, sleep=lambda s: None))
    with pytest.raises(CatalogTooManyUnpublishedError):
        txn.commit()
    assert cat.latest == 0 and _staged(storage) == []  # the staged file was discarded


# ----------------------------------------------------------------------------- conformance item 5
def test_conformance_catalog_managed_0_reads_with_its_log_tail(conformance_dir: Path) -> None:
    table = conformance_dir / "tables/kernel-rs/uc/catalog_managed_0"
    storage = storage_for_uri(str(table))
    staged = sorted((table / "_delta_log/_staged_commits").iterdir())
    tail = LogTail.of([(int(p.name[:20]), p.name, p.stat().st_size, int(p.stat().st_mtime * 1000)) for p in staged], 2)
    snap = Snapshot.load(storage, log_tail=tail)
    assert snap.version == 2 and snap.partition_columns == ["part1"]
    out = Scan(snap).to_table()
    rows = sorted(zip(out.column("part1").to_pylist(), out.column("col1").to_pylist()))
    assert rows == [(0, i) for i in range(100)] + [(1, i) for i in range(100, 200)]
    assert snap.commit_infos[2]["inCommitTimestamp"] == 1749830881799
    v1 = Scan(Snapshot.load(storage, 1, log_tail=tail)).to_table()
    assert sorted(v1.column("col1").to_pylist()) == list(range(100))
    # without the catalog: refused; published-only sees version 0 (empty)
    with pytest.raises(CatalogManagedTableError):
        Snapshot.load(storage)
    v0 = Snapshot.load(storage, log_tail=LogTail.published_only())
    assert v0.version == 0 and v0.num_files == 0
    # the catalog caps the version: a tail that ends at 1 never shows version 2
    assert Snapshot.load(storage, log_tail=LogTail(tail.commits[:1], 1)).version == 1


# ----------------------------------------------------------------------------- any interleaving of faults
_STEP = st.tuples(st.sampled_from([None, LOST_RESPONSE, UNAVAILABLE, CRASH_BEFORE_RATIFY, CRASH_AFTER_RATIFY]),
                  st.booleans(), st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_STEP, min_size=1, max_size=6))
def test_any_fault_sequence_keeps_one_commit_per_version(steps: list[tuple[str | None, bool, bool]]) -> None:
    """Each step appends one id, with a fault on its first ratify, from a fresh or a stale snapshot, publishing
    or not. Whatever happens: the catalog's versions are contiguous with one commit each, readers with the tail
    see exactly the commits that landed (a crash after ratify counts: the catalog holds it), readers by path see
    a prefix of them, and one publish() makes both the same."""
    with tempfile.TemporaryDirectory() as d:
        storage = storage_for_uri(str(Path(d) / "t"))
        cat = MemoryCatalog()
        _create(storage, cat)
        landed: list[int] = []
        stale = Snapshot.load(storage, catalog=cat)
        for i, (fault, from_stale, publish) in enumerate(steps):
            snap = stale if from_stale else Snapshot.load(storage, catalog=cat)
            cat.faults = [fault]
            committer = CatalogCommitter(storage, cat, auto_publish=publish, sleep=lambda s: None)
            try:
                _append_txn(storage, snap, [i], committer=committer).commit()
                landed.append(i)
            except SimulatedCrash:
                if fault == CRASH_AFTER_RATIFY:
                    landed.append(i)
            latest = Snapshot.load(storage, catalog=cat)
            assert latest.version == cat.latest == len(landed)
            assert _ids(latest) == landed
            assert len(set(cat.txn_ids.values())) == len(landed) + 1
            by_path = Snapshot.load(storage, log_tail=LogTail.published_only())
            assert by_path.version <= latest.version and _ids(by_path) == landed[:by_path.version]
        CatalogCommitter(storage, cat).publish()
        assert _published(storage) == list(range(len(landed) + 1)) and cat.ratified == {}
        assert _ids(Snapshot.load(storage, log_tail=LogTail.published_only())) == landed
