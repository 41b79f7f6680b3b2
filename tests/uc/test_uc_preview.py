"""Servers without the Delta REST API: detected through getConfig's 404, then `/delta/preview/commits` (get commits /
commit) with the table id and location from GET /tables/{full_name}; the same typed outcomes."""

from __future__ import annotations

import pytest
from uc_helpers import stage_commit
from uc_server import Policy, older_api
from uc_server.fixtures import CATALOG, SCHEMA, client_for, start_server

from deltakernel.errors import CommitConflictError, CommitStateUnknownError
from deltakernel.unity import (
    UCAuthenticationError,
    UCBadRequestError,
    UCCommitConflictError,
    UCCommitStateUnknownError,
    UCConfigurationError,
    UCNotFoundError,
    UCTableNotFoundError,
    UCTooManyUnpublishedCommitsError,
)


@pytest.fixture()
def old_server(tmp_path):
    server = start_server(tmp_path, delta_api=False, policy=Policy(max_unpublished=3))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture()
def old_table(old_server, tmp_path):
    loc = (tmp_path / "uc-storage" / "t").as_uri()
    older_api.create_table_legacy(old_server.store, {"name": "t", "catalog_name": CATALOG, "schema_name": SCHEMA,
                                          "table_type": "MANAGED", "data_source_format": "DELTA",
                                          "storage_location": loc})
    client = client_for(old_server)
    return client, client.get_table(f"{CATALOG}.{SCHEMA}.t")


def test_an_old_server_is_detected_and_its_delta_v1_paths_are_404(old_server) -> None:
    client = client_for(old_server)
    assert client.supports_delta_api(CATALOG) is False
    with pytest.raises(UCNotFoundError):
        client.load_table(CATALOG, SCHEMA, "t")


def test_get_table_gives_the_id_and_location(old_table, tmp_path) -> None:
    client, info = old_table
    assert info.table_id and info.storage_location == (tmp_path / "uc-storage" / "t").as_uri()
    assert info.table_type == "MANAGED" and info.data_source_format == "DELTA"
    with pytest.raises(UCTableNotFoundError):
        client.get_table(f"{CATALOG}.{SCHEMA}.missing")


def test_preview_commit_get_commits_and_backfill(old_server, old_table) -> None:
    client, info = old_table
    tid, uri = info.table_id, info.storage_location
    empty = client.get_commits(tid, uri, 0)
    assert empty.commits == () and empty.latest_table_version == -1  # no commit through the catalog yet
    c1, c2 = stage_commit(uri, 1), stage_commit(uri, 2)
    client.commit(tid, uri, commit=c1)
    client.commit(tid, uri, commit=c2)
    got = client.get_commits(tid, uri, 0)
    assert got.commits == (c2, c1) and got.latest_table_version == 2
    assert client.get_commits(tid, uri, 2).commits == (c2,)
    assert client.get_commits(tid, uri, 0, end_version=1).commits == (c1,)
    client.commit(tid, uri, latest_backfilled_version=1)
    assert client.get_commits(tid, uri, 0).commits == (c2,)
    with pytest.raises(UCConfigurationError):
        client.commit(tid, uri)


def test_preview_conflict_replay_and_wrong_location(old_server, old_table) -> None:
    client, info = old_table
    tid, uri = info.table_id, info.storage_location
    c1 = stage_commit(uri, 1)
    client.commit(tid, uri, commit=c1)
    client.commit(tid, uri, commit=c1)  # the same commit again: idempotent
    with pytest.raises(UCCommitConflictError) as exc:
        client.commit(tid, uri, commit=stage_commit(uri, 1))
    assert exc.value.status == 409 and isinstance(exc.value, CommitConflictError)
    with pytest.raises(UCBadRequestError, match="location"):
        client.commit(tid, uri + "-moved", commit=stage_commit(uri, 2))
    assert old_server.store.ratified(tid) == [(1, c1.file_name)]


def test_preview_429_carries_the_unpublished_commits(old_server, old_table) -> None:
    client, info = old_table
    tid, uri = info.table_id, info.storage_location
    commits = [stage_commit(uri, v) for v in (1, 2, 3)]
    for c in commits:
        client.commit(tid, uri, commit=c)
    c4 = stage_commit(uri, 4)
    with pytest.raises(UCTooManyUnpublishedCommitsError) as exc:
        client.commit(tid, uri, commit=c4)
    assert exc.value.status == 429 and exc.value.error_type == "RESOURCE_EXHAUSTED"
    assert exc.value.unpublished_commits == commits and exc.value.latest_table_version == 3
    assert exc.value.version == 4 and exc.value.table == tid
    client.commit(tid, uri, commit=c4, latest_backfilled_version=3)  # publish reported + retry in one call
    assert client.get_commits(tid, uri, 0).commits == (c4,)


@pytest.mark.parametrize("kind", ["error_after", "drop_after"])
def test_preview_outcome_unknown_resolved_by_get_commits(old_server, old_table, kind) -> None:
    client, info = old_table
    tid, uri = info.table_id, info.storage_location
    old_server.inject("commit", kind)
    c1 = stage_commit(uri, 1)
    with pytest.raises(UCCommitStateUnknownError) as exc:
        client.commit(tid, uri, commit=c1)
    assert isinstance(exc.value, CommitStateUnknownError)
    assert client.get_commits(tid, uri, 0).commits == (c1,)  # it was ratified
    assert old_server.store.ratified(tid) == [(1, c1.file_name)]


def test_preview_needs_the_token(old_server, old_table) -> None:
    _, info = old_table
    with pytest.raises(UCAuthenticationError):
        client_for(old_server, token=None).get_commits(info.table_id, info.storage_location, 0)


def test_preview_commit_with_metadata_updates_the_table(old_server, old_table) -> None:
    client, info = old_table
    tid, uri = info.table_id, info.storage_location
    client.commit(tid, uri, commit=stage_commit(uri, 1),
                  metadata={"description": "events", "properties": {"properties": {"delta.appendOnly": "true"}}})
    after = client.get_table(f"{CATALOG}.{SCHEMA}.t")
    assert after.properties == {"delta.appendOnly": "true"}


def test_embedded_engine_end_to_end_through_preview_commits(old_server) -> None:
    """A server without the Delta REST API, from the embedded engine by name: create (POST /staging-tables, version
    0 with `catalogOwned-preview`, POST /tables), append, read, DELETE / UPDATE / MERGE, history and time travel -
    every commit after version 0 ratified through `/delta/preview/commits`, none through `/delta/v1`."""
    import pyarrow as pa

    from deltakernel import DeltaTable, write_deltalake

    opts = {"unity_catalog_url": old_server.url, "unity_catalog_token": "uc-test-token"}
    uri = f"uc://{CATALOG}.{SCHEMA}.p"
    write_deltalake(uri, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), storage_options=opts)
    write_deltalake(uri, pa.table({"id": pa.array([4], pa.int64())}), mode="append", storage_options=opts)
    dt = DeltaTable(uri, storage_options=opts)
    proto = dt.protocol()
    assert "catalogOwned-preview" in proto.reader_features and "inCommitTimestamp" in proto.writer_features
    info = client_for(old_server).get_table(f"{CATALOG}.{SCHEMA}.p")
    assert info.table_type == "MANAGED" and dt.metadata().configuration["io.unitycatalog.tableId"] == info.table_id
    dt.delete("id = 2")
    dt.update(updates={"id": "id + 10"}, predicate="id = 3")
    src = pa.table({"id": pa.array([4, 5], pa.int64())})
    dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t").when_not_matched_insert_all().execute()
    fresh = DeltaTable(uri, storage_options=opts)
    assert sorted(fresh.to_pyarrow_table()["id"].to_pylist()) == [1, 4, 5, 13]
    assert [h["operation"] for h in sorted(fresh.history(), key=lambda h: h["version"])] == [
        "WRITE", "WRITE", "DELETE", "UPDATE", "MERGE"]
    assert sorted(DeltaTable(uri, version=1, storage_options=opts).to_pyarrow_table()["id"].to_pylist()) == [
        1, 2, 3, 4]
    assert [v for v, _ in old_server.store.ratified(info.table_id)] == [1, 2, 3, 4]
    ops = {r.operation for r in old_server.requests}
    assert {"createStagingTableLegacy", "createTableLegacy", "commit", "getCommits"} <= ops
    assert not [r for r in old_server.requests if r.path.startswith("/api/2.1/unity-catalog/delta/v1/")
                and r.status == 200]


def test_list_tables_follows_every_page(uc_server) -> None:
    """GET /tables (the UC API's listTables, what Spark's SHOW TABLES on a UC catalog uses) page by page."""
    for name in ("b", "a", "c"):
        older_api.create_table_legacy(uc_server.store, {"name": name, "catalog_name": CATALOG, "schema_name": SCHEMA,
                                                        "table_type": "EXTERNAL", "storage_location": f"file:///x/{name}"})
    client = client_for(uc_server)
    assert [t.name for t in client.list_tables(CATALOG, SCHEMA, page_size=2)] == ["a", "b", "c"]
    assert sum(r.operation == "listTables" for r in uc_server.requests) == 2
    with pytest.raises(UCNotFoundError):
        client.list_tables(CATALOG, "missing")
