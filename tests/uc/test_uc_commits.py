"""Ratifying commits through the Delta REST API and every outcome a catalog committer must handle: accepted,
409 (a race between two clients; etag / uuid requirements), 429 (too many unpublished commits), 500 before /
after the change, a lost response after ratify, a timeout, retries of reads - and never a double commit."""

from __future__ import annotations

import threading
import time

import pytest
from uc_helpers import create_managed_table, local_path, publish, stage_commit
from uc_server import Policy
from uc_server.fixtures import CATALOG, SCHEMA, client_for, start_server

from deltakernel.errors import CommitConflictError, CommitFailedError, CommitStateUnknownError
from deltakernel.unity import (
    AddCommit,
    AssertEtag,
    AssertTableUUID,
    SetLatestBackfilledVersion,
    SetProperties,
    SetTableComment,
    UCBadRequestError,
    UCCommitConflictError,
    UCCommitStateUnknownError,
    UCConnectionError,
    UCRequirementConflictError,
    UCServerError,
    UCTooManyUnpublishedCommitsError,
)
from deltakernel.unity.client import UnityCatalogClient
from deltakernel.unity.config import UCConfig


@pytest.fixture()
def table(uc_client):
    staging, loaded = create_managed_table(uc_client, CATALOG, SCHEMA, "t")
    return staging.location, loaded


def _ratified(server, table_uuid: str) -> list[tuple[int, str]]:
    return server.store.ratified(table_uuid)


def test_commits_are_ratified_in_order_and_listed_newest_first(uc_client, table) -> None:
    location, loaded = table
    c1, c2 = stage_commit(location, 1), stage_commit(location, 2)
    r1 = uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=loaded.etag)
    # a data-only commit keeps the etag (so assert-etag does not fail under concurrent ingest)
    assert r1.etag == loaded.etag and r1.latest_table_version == 1 and r1.commits == (c1,)
    # a commit that changes metadata moves it, and last-commit-version with it
    r2 = uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID(loaded.table_uuid), AssertEtag(r1.etag)],
                                [AddCommit(c2), SetProperties({"k": "v"})])
    got = uc_client.load_table(CATALOG, SCHEMA, "t")
    assert got.commits == (c2, c1) and got.latest_table_version == 2 and got.etag == r2.etag != r1.etag
    assert got.metadata.last_commit_version == 2 and got.metadata.properties["k"] == "v"


def test_set_latest_backfilled_version_trims_the_log_tail(uc_server, uc_client, table) -> None:
    location, loaded = table
    commits = [stage_commit(location, v) for v in (1, 2, 3)]
    for c in commits:
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c)
    with pytest.raises(UCBadRequestError, match="not published"):  # reporting before publishing is refused
        uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=2)
    publish(location, commits[:2])
    after = uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=2)
    assert after.commits == (commits[2],) and after.latest_table_version == 3
    # a lower value later does not bring commits back; above the latest ratified version is refused
    after = uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=1)
    assert after.commits == (commits[2],)
    with pytest.raises(UCBadRequestError):
        uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=9)
    # backfilling everything leaves an empty tail and the version known
    publish(location, commits)
    after = uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=3)
    assert after.commits == () and after.latest_table_version == 3


def test_a_version_that_is_not_latest_plus_one_is_a_conflict(uc_client, table) -> None:
    location, loaded = table
    with pytest.raises(UCCommitConflictError) as exc:
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=stage_commit(location, 2))
    assert exc.value.status == 409 and exc.value.error_type == "CommitVersionConflictException"
    assert isinstance(exc.value, CommitConflictError)


def test_race_between_two_clients_one_wins_the_other_gets_409(uc_server, table) -> None:
    location, loaded = table
    clients = [client_for(uc_server), client_for(uc_server)]
    staged = [stage_commit(location, 1, "a"), stage_commit(location, 1, "b")]
    barrier = threading.Barrier(2)
    outcome: dict[int, object] = {}

    def run(i: int) -> None:
        barrier.wait()
        try:
            outcome[i] = clients[i].add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid,
                                               commit=staged[i], etag=loaded.etag)
        except Exception as exc:
            outcome[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    losers = [i for i in (0, 1) if isinstance(outcome[i], Exception)]
    assert len(losers) == 1, outcome
    loser = losers[0]
    assert isinstance(outcome[loser], UCCommitConflictError)  # version taken or etag changed: both are 409
    winner = 1 - loser
    assert _ratified(uc_server, loaded.table_uuid) == [(1, staged[winner].file_name)]
    # the loser reloads (the winner's commit is in the log tail), rebases and takes the next version
    fresh = clients[loser].load_table(CATALOG, SCHEMA, "t")
    assert fresh.commits == (staged[winner],)
    retry = stage_commit(location, fresh.latest_table_version + 1, "b-rebased")
    clients[loser].add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=retry, etag=fresh.etag)
    assert [v for v, _ in _ratified(uc_server, loaded.table_uuid)] == [1, 2]


def test_many_writers_no_lost_update(uc_server, table) -> None:
    """4 writers x 5 commits each, reload-and-retry on 409: 20 contiguous versions, every commit exactly once."""
    location, loaded = table
    writers, per_writer = 4, 5
    done: list[str] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        client = client_for(uc_server)
        for i in range(per_writer):
            while True:
                cur = client.load_table(CATALOG, SCHEMA, "t")
                if cur.commits and len(cur.commits) >= 8:  # keep under the unpublished-commit limit
                    publish(location, cur.commits)  # cooperative publishing of everyone's commits
                    try:
                        client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=cur.table_uuid,
                                                             version=cur.latest_table_version)
                    except CommitConflictError:
                        pass
                    continue
                c = stage_commit(location, cur.latest_table_version + 1, f"w{w}-{i}")
                try:
                    client.add_commit(CATALOG, SCHEMA, "t", table_uuid=cur.table_uuid, commit=c, etag=cur.etag)
                except CommitConflictError:
                    continue
                with lock:
                    done.append(c.file_name)
                break

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ratified = _ratified(uc_server, loaded.table_uuid)
    assert [v for v, _ in ratified] == list(range(1, writers * per_writer + 1))
    assert sorted(f for _, f in ratified) == sorted(done) and len(set(done)) == len(done)


def test_etag_and_uuid_requirements(uc_client, table) -> None:
    location, loaded = table
    uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID(loaded.table_uuid)],
                           [AddCommit(stage_commit(location, 1)), SetTableComment("changed")])
    with pytest.raises(UCRequirementConflictError) as exc:  # etag from before that metadata change
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=stage_commit(location, 2),
                             etag=loaded.etag)
    assert exc.value.error_type == "UpdateRequirementConflictException"
    assert isinstance(exc.value, CommitConflictError)
    with pytest.raises(UCRequirementConflictError):  # the table was dropped and recreated: another uuid
        uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID("00000000-0000-0000-0000-000000000000")],
                               [AddCommit(stage_commit(location, 2))])
    assert uc_client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 1


def test_429_too_many_unpublished_commits_then_publish_and_retry(tmp_path) -> None:
    server = start_server(tmp_path, policy=Policy(max_unpublished=3))
    try:
        client = client_for(server)
        staging, loaded = create_managed_table(client, CATALOG, SCHEMA, "t")
        loc = staging.location
        commits = [stage_commit(loc, v) for v in (1, 2, 3)]
        for c in commits:
            client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c)
        c4 = stage_commit(loc, 4)
        with pytest.raises(UCTooManyUnpublishedCommitsError) as exc:
            client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c4)
        err = exc.value
        assert err.status == 429 and err.error_type == "ResourceExhaustedException"
        assert isinstance(err, CommitFailedError) and not isinstance(err, CommitConflictError)
        # what the caller needs to publish and retry
        assert err.table == f"{CATALOG}.{SCHEMA}.t" and err.version == 4
        assert err.unpublished_commits == commits and err.latest_table_version == 3
        assert [v for v, _ in server.store.ratified(loaded.table_uuid)] == [1, 2, 3]  # 4 was not ratified
        # publish (the committer copies the staged files to _delta_log/<v>.json), report it, retry: accepted
        publish(loc, err.unpublished_commits)
        client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=3)
        after = client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c4)
        assert after.commits == (c4,)
        # at the limit again, one request may backfill and commit together
        more = [c4] + [stage_commit(loc, v) for v in (5, 6)]
        for c in more[1:]:
            client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c)
        publish(loc, more)
        c7 = stage_commit(loc, 7)
        after = client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c7,
                                  latest_backfilled_version=6)
        assert after.commits == (c7,) and after.latest_table_version == 7
    finally:
        server.stop()


@pytest.mark.parametrize("status", [500, 503])
def test_5xx_before_the_change_is_outcome_unknown_and_reload_shows_not_ratified(uc_server, uc_client, table,
                                                                                status) -> None:
    location, loaded = table
    uc_server.inject("updateTable", "error_before", status=status, error_type="CommitStateUnknownException")
    c1 = stage_commit(location, 1)
    with pytest.raises(UCCommitStateUnknownError) as exc:
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=loaded.etag)
    assert exc.value.status == status and isinstance(exc.value, CommitStateUnknownError)
    assert [r.operation for r in uc_server.requests].count("updateTable") == 1  # never resent by the client
    assert uc_client.resolve_commit(CATALOG, SCHEMA, "t", c1).state == "not_ratified"  # re-send it
    reloaded = uc_client.load_table(CATALOG, SCHEMA, "t")
    assert reloaded.commits == () and reloaded.latest_table_version == 0
    uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=reloaded.etag)
    assert _ratified(uc_server, loaded.table_uuid) == [(1, c1.file_name)]


def test_500_after_the_change_is_outcome_unknown_and_reload_shows_ratified(uc_server, uc_client, table) -> None:
    location, loaded = table
    uc_server.inject("updateTable", "error_after", status=500)
    c1 = stage_commit(location, 1)
    with pytest.raises(UCCommitStateUnknownError):
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=loaded.etag)
    resolution = uc_client.resolve_commit(CATALOG, SCHEMA, "t", c1)
    assert resolution.state == "ratified" and resolution.winner == c1  # our file name is in the log tail
    # a writer that wrongly retried the same version with another file would be refused
    with pytest.raises(UCCommitConflictError):
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=stage_commit(location, 1))
    assert _ratified(uc_server, loaded.table_uuid) == [(1, c1.file_name)]


@pytest.mark.parametrize("idempotent_replay", [True, False])
def test_lost_response_after_ratify_then_resend(tmp_path, idempotent_replay) -> None:
    """delta.yaml: a resend of the accepted commit is a 200 no-op; the managed-tables spec 1.0: a 409. Either
    way the commit is ratified once, and resolve_commit tells the writer its commit won."""
    server = start_server(tmp_path, policy=Policy(idempotent_replay=idempotent_replay))
    try:
        client = client_for(server)
        staging, loaded = create_managed_table(client, CATALOG, SCHEMA, "t")
        server.inject("updateTable", "drop_after")
        c1 = stage_commit(staging.location, 1)
        with pytest.raises(UCCommitStateUnknownError) as exc:
            client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=loaded.etag)
        assert exc.value.status is None  # no answer at all
        assert [r.status for r in server.requests if r.operation == "updateTable"] == ["dropped"]
        if idempotent_replay:
            again = client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1,
                                      etag=loaded.etag)
            assert again.commits == (c1,) and again.latest_table_version == 1
        else:
            with pytest.raises(UCCommitConflictError):
                client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1, etag=loaded.etag)
        assert client.resolve_commit(CATALOG, SCHEMA, "t", c1).state == "ratified"
        assert server.store.ratified(loaded.table_uuid) == [(1, c1.file_name)]  # no double commit
    finally:
        server.stop()


def test_resolve_commit_tells_lost_and_published(uc_client, table) -> None:
    location, loaded = table
    mine, theirs = stage_commit(location, 1, "mine"), stage_commit(location, 1, "theirs")
    uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=theirs)
    lost = uc_client.resolve_commit(CATALOG, SCHEMA, "t", mine)
    assert (lost.state, lost.winner, lost.latest_table_version) == ("lost", theirs, 1)
    publish(location, [theirs])
    uc_client.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=1)
    # backfilled: the catalog forgot the file name; the caller compares _delta_log/<v>.json with its staged file
    assert uc_client.resolve_commit(CATALOG, SCHEMA, "t", mine).state == "published"


def test_lost_response_before_the_change(uc_server, uc_client, table) -> None:
    location, loaded = table
    uc_server.inject("updateTable", "drop_before")
    with pytest.raises(UCCommitStateUnknownError):
        uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=stage_commit(location, 1))
    assert uc_client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 0


def test_a_slow_commit_times_out_as_outcome_unknown(uc_server, table) -> None:
    """The client's read timeout (0.3 s) ends the wait; the server applies the commit after its 1.5 s delay."""
    location, loaded = table
    base = client_for(uc_server)
    quick = UnityCatalogClient(UCConfig(base.config.base_url, base.config.token, timeout=0.3, connect_timeout=5),
                               sleep=lambda s: None)
    uc_server.inject("updateTable", "delay", delay=1.5)
    c1 = stage_commit(location, 1)
    with pytest.raises(UCCommitStateUnknownError, match="timed out"):
        quick.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1)
    # resolve by reloading (the server finishes on its own time: poll, bounded)
    for _ in range(100):
        if base.load_table(CATALOG, SCHEMA, "t").commits == (c1,):
            break
        time.sleep(0.05)
    assert _ratified(uc_server, loaded.table_uuid) == [(1, c1.file_name)]


def test_reads_are_retried_on_5xx_and_lost_answers(uc_server, uc_client, table) -> None:
    uc_server.inject("loadTable", "error_before", status=503, error_type="ServiceUnavailable")
    uc_server.inject("loadTable", "drop_before")
    assert uc_client.load_table(CATALOG, SCHEMA, "t").latest_table_version == 0
    assert [r.status for r in uc_server.requests if r.operation == "loadTable"] == [503, "dropped", 200]
    uc_server.inject("loadTable", "error_before", status=500, times=5)
    with pytest.raises(UCServerError) as exc:
        uc_client.load_table(CATALOG, SCHEMA, "t")
    assert exc.value.status == 500 and not isinstance(exc.value, CommitStateUnknownError)
    assert [r.status for r in uc_server.requests if r.operation == "loadTable"][3:] == [500, 500, 500]


def test_unreachable_server_is_a_connection_error(tmp_path) -> None:
    server = start_server(tmp_path)
    client = client_for(server)
    server.stop()  # the port is closed now
    with pytest.raises(UCConnectionError) as exc:
        client.add_commit(CATALOG, SCHEMA, "t", table_uuid="u", commit=stage_commit((tmp_path / "x").as_uri(), 1))
    assert not isinstance(exc.value, CommitStateUnknownError)  # nothing was sent: not "outcome unknown"


def test_backfill_and_commit_updates_in_one_request_are_atomic(uc_client, table) -> None:
    location, loaded = table
    c1, c2 = stage_commit(location, 1), stage_commit(location, 2)
    uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1)
    publish(location, [c1])
    with pytest.raises(UCBadRequestError):  # backfill above the latest ratified version: the whole request fails
        uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID(loaded.table_uuid)],
                               [AddCommit(c2), SetLatestBackfilledVersion(5)])
    got = uc_client.load_table(CATALOG, SCHEMA, "t")
    assert got.commits == (c1,)
    uc_client.update_table(CATALOG, SCHEMA, "t", [AssertTableUUID(loaded.table_uuid), AssertEtag(got.etag)],
                           [AddCommit(c2), SetLatestBackfilledVersion(1)])
    assert uc_client.load_table(CATALOG, SCHEMA, "t").commits == (c2,)


def test_crash_between_staging_and_ratify_leaves_no_visible_commit(uc_server, uc_client, table) -> None:
    """A writer staged its commit file and died before updateTable: the file is on storage, the catalog knows
    nothing, readers see no new version, and the next writer takes that version."""
    location, loaded = table
    orphan = stage_commit(location, 1, "crashed")
    assert (local_path(location) / "_delta_log" / "_staged_commits" / orphan.file_name).exists()
    got = uc_client.load_table(CATALOG, SCHEMA, "t")
    assert got.commits == () and got.latest_table_version == 0
    assert uc_client.resolve_commit(CATALOG, SCHEMA, "t", orphan).state == "not_ratified"
    nxt = stage_commit(location, 1, "next writer")
    uc_client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=nxt)
    assert _ratified(uc_server, loaded.table_uuid) == [(1, nxt.file_name)]


def test_crash_after_ratify_before_publish_another_writer_publishes(uc_server, table) -> None:
    """A writer ratified v1 and died before publishing: readers get v1 from the log tail; the next writer
    publishes it (cooperative publishing), reports the backfill and commits v2."""
    location, loaded = table
    dead, other = client_for(uc_server), client_for(uc_server)
    c1 = stage_commit(location, 1, "ratified then crashed")
    dead.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c1)
    assert not (local_path(location) / "_delta_log" / f"{1:020d}.json").exists()
    tail = other.load_table(CATALOG, SCHEMA, "t")
    assert tail.commits == (c1,) and tail.latest_table_version == 1  # readers see v1 through the tail
    publish(location, tail.commits)
    other.set_latest_backfilled_version(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, version=1)
    c2 = stage_commit(location, 2)
    after = other.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c2)
    assert after.commits == (c2,)
    published = (local_path(location) / "_delta_log" / f"{1:020d}.json").read_bytes()
    assert published == (local_path(location) / "_delta_log" / "_staged_commits" / c1.file_name).read_bytes()
