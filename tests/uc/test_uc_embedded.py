"""The embedded engine on catalog-managed tables by name (`uc://catalog.schema.table`), against the real UC test
server (tests/uc_server: HTTP, SQLite, version checks, faults) on local storage and on moto S3 with vended STS
credentials: create, append, overwrite, DELETE / UPDATE / MERGE, OPTIMIZE, VACUUM, RESTORE, history, time travel,
CDF - each commit ratified by the catalog - plus concurrent writers, faults and what other readers see by path.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from uc_server.fixtures import CATALOG, SCHEMA, UC_TOKEN, client_for, start_server
from uc_server.vending import MotoStsVendor

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import CatalogManagedTableError, CommitConflictError, TableNotFoundError
from deltakernel.kernel.log.segment import STAGED_COMMITS_DIR, LogTail, commit_key
from deltakernel.kernel.scan.scan import Scan
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.committer import CatalogCommitter
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.storage import storage_for_uri
from deltakernel.unity import UCTableNotFoundError
from deltakernel.unity.committer import UCTableCatalog

URI = f"uc://{CATALOG}.{SCHEMA}.t"


@pytest.fixture(params=["local", "s3"])
def uc(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """(server, storage options) for a UC server whose managed tables live on local disk or on moto S3."""
    if request.param == "local":
        server = start_server(tmp_path)
        extra: dict[str, str] = {}
    else:
        endpoint = request.getfixturevalue("moto_endpoint")
        bucket = request.getfixturevalue("s3_bucket")
        server = start_server(tmp_path, vendor=MotoStsVendor(endpoint))
        server.store.storage_root = f"s3://{bucket}/uc"
        # the user's options name the endpoint only: keys come from the catalog (STS session credentials)
        extra = {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN, **extra}
    try:
        yield server, options
    finally:
        server.stop()
    assert not server.errors, server.errors


def _ids(dt: DeltaTable) -> list[int]:
    return sorted(dt.to_pyarrow_table()["id"].to_pylist())


def _ratified(server: Any, dt: DeltaTable) -> list[int]:
    return [v for v, _ in server.store.ratified(dt.metadata().configuration["io.unitycatalog.tableId"])]


def _ops(server: Any) -> list[str]:
    return [r.operation for r in server.requests]


def test_missing_table_is_not_found_for_readers(uc: Any) -> None:
    server, options = uc
    with pytest.raises(UCTableNotFoundError) as e:
        DeltaTable(URI, storage_options=options)
    assert isinstance(e.value, TableNotFoundError)
    assert "createStagingTable" not in _ops(server)  # a reader never creates anything


def test_create_write_dml_and_maintenance_through_the_catalog(uc: Any) -> None:
    server, options = uc
    client = client_for(server)
    dt = DeltaTable.create(URI, pa.schema([("id", pa.int64()), ("v", pa.string())]), storage_options=options,
                           configuration={"delta.enableChangeDataFeed": "true"})
    loaded = client.load_table(CATALOG, SCHEMA, "t")
    assert loaded.metadata.table_type == "MANAGED"
    proto = dt.protocol()
    assert "catalogManaged" in proto.reader_features and "inCommitTimestamp" in proto.writer_features
    assert dt.metadata().configuration["delta.enableInCommitTimestamps"] == "true"
    assert dt.metadata().configuration["io.unitycatalog.tableId"] == loaded.table_uuid

    write_deltalake(URI, pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}), mode="append", storage_options=options)
    write_deltalake(URI, pa.table({"id": [4, 5], "v": ["d", "e"]}), mode="append", storage_options=options)
    dt = DeltaTable(URI, storage_options=options)
    assert dt.version() == 2 and _ids(dt) == [1, 2, 3, 4, 5]
    dt.delete("id = 2")
    dt.update({"v": "'z'"}, predicate="id = 3")
    (dt.merge(pa.table({"id": [3, 9], "v": ["m", "n"]}), "t.id = s.id", source_alias="s", target_alias="t")
       .when_matched_update_all().when_not_matched_insert_all().execute())
    assert dt.version() == 5 and _ids(dt) == [1, 3, 4, 5, 9]
    metrics = dt.optimize.compact()
    assert metrics["numFilesRemoved"] > 1 and dt.version() == 6 and _ids(dt) == [1, 3, 4, 5, 9]
    # every version past 0 was ratified by the catalog, one commit each, and published afterwards
    assert _ratified(server, dt) == [1, 2, 3, 4, 5, 6]
    assert client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 6

    # history and time travel through the catalog's tail
    hist = DeltaTable(URI, storage_options=options).history()
    assert [h["version"] for h in hist] == [6, 5, 4, 3, 2, 1, 0]
    assert [h["operation"] for h in hist][:4] == ["OPTIMIZE", "MERGE", "UPDATE", "DELETE"]
    old = DeltaTable(URI, version=2, storage_options=options)
    assert _ids(old) == [1, 2, 3, 4, 5]
    old.load_as_version(hist[4]["timestamp"] if isinstance(hist[4]["timestamp"], str)
                        else _iso(hist[4]["timestamp"]))
    assert old.version() == 2

    # the change data feed of the DML
    cdf = dt.load_cdf(starting_version=3, ending_version=5).read_all()
    kinds = sorted(zip(cdf["_change_type"].to_pylist(), cdf["id"].to_pylist()))
    assert ("delete", 2) in kinds and ("update_postimage", 3) in kinds and ("insert", 9) in kinds

    # RESTORE is one more ratified commit; VACUUM (permitted by default) deletes the unreferenced files
    dt.restore(2)
    assert dt.version() == 7 and _ids(dt) == [1, 2, 3, 4, 5]
    removed = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    assert removed and _ids(DeltaTable(URI, storage_options=options)) == [1, 2, 3, 4, 5]
    # VACUUM START / VACUUM END are commits too: ratified like the rest
    assert _ratified(server, dt) == list(range(1, 10))
    assert [h["operation"] for h in DeltaTable(URI, storage_options=options).history(2)] == ["VACUUM END",
                                                                                             "VACUUM START"]

    # overwrite
    write_deltalake(URI, pa.table({"id": [42], "v": ["x"]}), mode="overwrite", storage_options=options)
    assert _ids(DeltaTable(URI, storage_options=options)) == [42]


def _iso(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat()


def test_vacuum_needs_the_users_permission_when_configured_off(uc: Any) -> None:
    server, options = uc
    write_deltalake(URI, pa.table({"id": [1]}), storage_options=options)
    dt = DeltaTable(URI, storage_options={**options, "unity_catalog_permitted_maintenance": ""})
    with pytest.raises(CatalogManagedTableError):
        dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)


def _unpublished_append(dt: DeltaTable, ids: list[int]) -> int:
    """A writer that ratifies and 'crashes' before publishing (auto_publish off): the commit exists only in the
    catalog and `_delta_log/_staged_commits/`."""
    storage = dt._storage
    snap = Snapshot.load(storage)
    txn = Transaction(storage, snap, operation="WRITE",
                      committer=CatalogCommitter(storage, storage.catalog, auto_publish=False))
    from deltakernel.operations.write.data_files import write_data

    adds, _rows, _ = write_data(storage, iter(pa.table({"id": ids}).to_batches()), snap.metadata, snap.protocol)
    txn.add_files(adds)
    return txn.commit().version


def test_crash_after_ratify_readers_see_the_tail_and_the_next_writer_publishes(uc: Any) -> None:
    server, options = uc
    write_deltalake(URI, pa.table({"id": [1]}), storage_options=options)
    dt = DeltaTable(URI, storage_options=options)
    assert _unpublished_append(dt, [2]) == 1
    assert _unpublished_append(dt, [3]) == 2
    storage = dt._storage
    assert not storage.exists(commit_key(1)) and not storage.exists(commit_key(2))
    assert len(list(storage.list_from(f"{STAGED_COMMITS_DIR}/"))) == 2
    reader = DeltaTable(URI, storage_options=options)
    assert reader.version() == 2 and _ids(reader) == [1, 2, 3]
    assert [h["version"] for h in reader.history()] == [2, 1, 0]
    assert len(client_for(server).load_table(CATALOG, SCHEMA, "t").commits) == 2
    # by path without the catalog: refused; published-only: version 0 only (never an unpublished commit)
    with pytest.raises(CatalogManagedTableError):
        Snapshot.load(storage_for_uri(reader.table_uri, dict(reader._storage.storage_options)))
    path_storage = reader._storage
    published = Snapshot.load(path_storage, log_tail=LogTail.published_only())
    assert published.version == 0
    # the next writer publishes everything ratified (and tells the catalog)
    write_deltalake(URI, pa.table({"id": [4]}), mode="append", storage_options=options)
    assert all(storage.exists(commit_key(v)) for v in (1, 2, 3))
    assert client_for(server).load_table(CATALOG, SCHEMA, "t").commits == ()
    assert _ids(DeltaTable(URI, storage_options=options)) == [1, 2, 3, 4]
    assert Scan(Snapshot.load(path_storage, log_tail=LogTail.published_only())).to_table().num_rows == 4


@pytest.mark.parametrize("kind", ["drop_after", "error_after", "error_before", "drop_before"])
def test_faults_on_ratify_give_exactly_one_commit(uc: Any, kind: str) -> None:
    """No answer / 500 after the catalog ratified, or before it did: the committer reloads the tail and the
    commit lands exactly once."""
    server, options = uc
    write_deltalake(URI, pa.table({"id": [1]}), storage_options=options)
    fault = server.inject("updateTable", kind, when=lambda body: any(u.get("action") == "add-commit"
                                                                     for u in body.get("updates") or []))
    write_deltalake(URI, pa.table({"id": [2]}), mode="append", storage_options=options)
    assert fault.times == 0  # the fault fired
    dt = DeltaTable(URI, storage_options=options)
    assert dt.version() == 1 and _ids(dt) == [1, 2]
    assert _ratified(server, dt) == [1]
    adds = [r for r in server.requests if r.operation == "updateTable"
            and any(u.get("action") == "add-commit" for u in (r.body or {}).get("updates") or [])]
    # ratified before the fault: the reloaded tail shows our file, no resend; refused before: offered once more
    assert len(adds) == (1 if kind.endswith("_after") else 2)


def test_two_writers_race_and_the_loser_rebases(uc: Any) -> None:
    server, options = uc
    write_deltalake(URI, pa.table({"id": [0]}), storage_options=options)
    a = DeltaTable(URI, storage_options=options)
    b = DeltaTable(URI, storage_options=options)
    write_deltalake(a, pa.table({"id": [1]}), mode="append")
    write_deltalake(b, pa.table({"id": [2]}), mode="append")  # 409 on version 1 -> rebased onto a's commit
    assert any(r.operation == "updateTable" and r.status == 409 for r in server.requests)
    dt = DeltaTable(URI, storage_options=options)
    assert dt.version() == 2 and _ids(dt) == [0, 1, 2] and _ratified(server, dt) == [1, 2]
    # a DELETE racing a DELETE of the same file: the loser's conflict surfaces as the usual CommitConflictError
    c = DeltaTable(URI, storage_options=options)
    d = DeltaTable(URI, storage_options=options)
    c.delete("id = 1")
    with pytest.raises(CommitConflictError):
        d.delete("id = 1")


def test_concurrent_writers_threads_one_commit_per_version(uc: Any) -> None:
    server, options = uc
    write_deltalake(URI, pa.table({"id": [0]}), storage_options=options)
    writers, errors = 4, []

    def append(i: int) -> None:
        try:
            write_deltalake(URI, pa.table({"id": [i]}), mode="append", storage_options=options)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=append, args=(i,)) for i in range(1, writers + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    dt = DeltaTable(URI, storage_options=options)
    assert dt.version() == writers and _ids(dt) == list(range(writers + 1))  # no lost update
    assert _ratified(server, dt) == list(range(1, writers + 1))  # one commit per version


def test_too_many_unpublished_commits_publishes_and_retries(tmp_path: Path) -> None:
    from uc_server.store import Policy

    server = start_server(tmp_path, policy=Policy(max_unpublished=2))
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
    try:
        write_deltalake(URI, pa.table({"id": [0]}), storage_options=options)
        dt = DeltaTable(URI, storage_options=options)
        assert [_unpublished_append(dt, [i]) for i in (1, 2)] == [1, 2]
        write_deltalake(URI, pa.table({"id": [3]}), mode="append", storage_options=options)  # 429 -> publish
        assert any(r.status == 429 for r in server.requests)
        assert _ids(DeltaTable(URI, storage_options=options)) == [0, 1, 2, 3]
    finally:
        server.stop()
    assert not server.errors


def test_published_table_by_path_in_other_readers(uc: Any) -> None:
    """deltalake (delta-rs) and DuckDB's delta extension refuse a catalog-managed table by path - as the spec asks
    of readers without the catalog (neither has a Python API to pass a log tail or maximum catalog version) -
    while deltakernel's published-only read of the same files gives the catalog's rows once all is published."""
    deltalake = pytest.importorskip("deltalake")
    server, options = uc
    write_deltalake(URI, pa.table({"id": [1, 2]}), storage_options=options)
    write_deltalake(URI, pa.table({"id": [3]}), mode="append", storage_options=options)
    dt = DeltaTable(URI, storage_options=options)
    published = Scan(Snapshot.load(dt._storage, log_tail=LogTail.published_only())).to_table()
    assert sorted(published["id"].to_pylist()) == _ids(dt) == [1, 2, 3]
    if dt.table_uri.startswith("s3://"):
        return  # the by-path refusals below are the same on S3; checked on local disk
    with pytest.raises(Exception, match="(?i)catalog version"):
        deltalake.DeltaTable(dt.table_uri).to_pyarrow_table()
    from helpers import duckdb_table

    with pytest.raises(Exception, match="(?i)catalog version|max_catalog_version"):
        duckdb_table(dt.table_uri)


def test_vended_credentials_are_refreshed_before_expiry(tmp_path: Path, moto_endpoint: str, s3_bucket: str) -> None:
    """STS credentials of 900 s: a handle whose credentials are within the skew re-vends on its next load."""
    server = start_server(tmp_path, vendor=MotoStsVendor(moto_endpoint))
    server.store.storage_root = f"s3://{s3_bucket}/uc"
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN,
               "AWS_ENDPOINT_URL": moto_endpoint, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    try:
        write_deltalake(URI, pa.table({"id": [1]}), storage_options=options)
        dt = DeltaTable(URI, storage_options=options)
        catalog = dt._storage.catalog
        assert isinstance(catalog, UCTableCatalog) and catalog.on_load is not None
        before = dict(dt._storage.storage_options)
        creds = catalog.credentials
        vends = creds.vends
        creds._refresh_at = time.time() - 1  # as if the skew before expiry was reached
        dt.update_incremental()
        after = dict(dt._storage.storage_options)
        # re-vended through the catalog (moto's STS hands out the same example session token every time)
        assert creds.vends == vends + 1 and after["aws_session_token"] and before["aws_session_token"]
        assert _ids(DeltaTable(URI, storage_options=options)) == [1]
        write_deltalake(dt, pa.table({"id": [2]}), mode="append")  # the refreshed store writes
        assert _ids(DeltaTable(URI, storage_options=options)) == [1, 2]
    finally:
        server.stop()


def _ids_of(dt: DeltaTable) -> list[int]:
    return sorted(dt.to_pyarrow_table()["id"].to_pylist())


def test_an_append_asks_the_catalog_twice_and_its_snapshot_equals_a_reload(uc_server: Any) -> None:
    """The writer's own commit: ratify + backfill report only (no loadTable to publish it, none to advance the
    table to it), and the advanced snapshot is what a fresh load through the catalog gives. With a rival's commit
    in between (a rebase), publishing and advancing go through the catalog's tail again - still one commit each."""
    opts = {"unity_catalog_url": uc_server.url, "unity_catalog_token": UC_TOKEN}
    write_deltalake(URI, pa.table({"id": pa.array([1], pa.int64())}), storage_options=opts)
    dt = DeltaTable(URI, storage_options=opts)
    n = len(uc_server.requests)
    write_deltalake(dt, pa.table({"id": pa.array([2], pa.int64())}), mode="append")
    assert [r.operation for r in uc_server.requests[n:]] == ["updateTable", "updateTable"]
    fresh = DeltaTable(URI, storage_options=opts)
    assert (dt.version(), _ids_of(dt)) == (fresh.version(), _ids_of(fresh)) == (1, [1, 2])
    assert dt._snapshot.log_tail is not None and dt._snapshot.catalog is not None  # still read via the catalog
    assert storage_for_uri(fresh.table_uri).exists(commit_key(1))  # published
    # a rival commits version 2 while `dt` is at 1: our append rebases to 3
    write_deltalake(fresh, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    write_deltalake(dt, pa.table({"id": pa.array([4], pa.int64())}), mode="append")
    again = DeltaTable(URI, storage_options=opts)
    assert (dt.version(), _ids_of(dt)) == (again.version(), _ids_of(again)) == (3, [1, 2, 3, 4])
    assert all(storage_for_uri(again.table_uri).exists(commit_key(v)) for v in (2, 3))
    table_id = again.metadata().configuration["io.unitycatalog.tableId"]
    assert [v for v, _ in uc_server.store.ratified(table_id)] == [1, 2, 3]
    # the write after it is again the short path
    n = len(uc_server.requests)
    write_deltalake(dt, pa.table({"id": pa.array([5], pa.int64())}), mode="append")
    assert [r.operation for r in uc_server.requests[n:]] == ["updateTable", "updateTable"]
    assert _ids_of(DeltaTable(URI, storage_options=opts)) == [1, 2, 3, 4, 5]
