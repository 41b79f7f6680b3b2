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
