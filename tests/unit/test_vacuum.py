"""VACUUM: what is deleted, what must survive (current and retained versions, concurrent writers' fresh files,
`_delta_log`, files outside the table), retention refusal, the protocol check, history, S3."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, commit_file, deltalake_table, duckdb_table, read_actions, write_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, UnsupportedFeatureError
from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor
from deltakernel.operations.maintenance.vacuum import VacuumRetentionError, plan_vacuum

DAY_MS = 86_400_000
NOW_MS = int(time.time() * 1000)


def _files(root: Path) -> set[str]:
    """Every file under the table root except the log, as '/'-separated relative paths."""
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root).replace(os.sep, "/")
            if not rel.startswith("_delta_log/"):
                out.add(rel)
    return out


def _log_files(root: Path) -> dict[str, bytes]:
    log = root / "_delta_log"
    return {p.name: p.read_bytes() for p in log.iterdir() if p.is_file()}


def _age_removes(table: Path, version: int, days: float) -> None:
    """Make the remove actions of commit `version` `days` old (as if that commit were that old)."""
    actions = read_actions(table, version)
    for a in actions:
        if "remove" in a:
            a["remove"]["deletionTimestamp"] = NOW_MS - int(days * DAY_MS)
    write_actions(table, version, actions)


def _age_file(path: Path, days: float) -> None:
    t = time.time() - days * 86_400
    os.utime(path, (t, t))


def _age_all(root: Path, days: float) -> None:
    for rel in _files(root):
        _age_file(root / rel, days)


def _three_versions(path: Path, **kw: object) -> None:
    for i in range(3):
        write_deltalake(path, pa.table({"x": [i, i + 10], "p": ["a", "b"]}), mode="overwrite",
                        partition_by=["p"], **kw)  # type: ignore[arg-type]


def _ids(path: Path, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(str(path), version=version).to_pyarrow_table().column("x").to_pylist())


# ----------------------------------------------------------------------------- lite
def test_lite_deletes_expired_tombstones_and_keeps_retained_versions(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    v0_files = {f for f in _files(t)} - {a["add"]["path"] for v in (1, 2) for a in read_actions(t, v) if "add" in a}
    _age_removes(t, 1, days=10)  # version 0's files were removed 10 days ago; version 1's just now
    _age_all(t, days=10)
    before = _files(t)
    dt = DeltaTable(str(t))
    planned = dt.vacuum()  # dry run by default, default retention 7 days
    assert set(planned) == v0_files
    assert _files(t) == before, "a dry run deletes nothing"
    assert dt.version() == 2, "a dry run commits nothing"

    deleted = dt.vacuum(dry_run=False)
    assert set(deleted) == v0_files
    assert _files(t) == before - v0_files
    assert dt.version() == 4
    # time travel inside the retention still works: version 1's files were removed only now
    assert _ids(t, 1) == [1, 11]
    assert_same_rows(DeltaTable(str(t), version=1).to_pyarrow_table(), deltalake_table(t, version=1))
    assert _ids(t) == [2, 12]
    assert_same_rows(duckdb_table(t).select(["x", "p"]), DeltaTable(str(t)).to_pyarrow_table().select(["x", "p"]))


def test_nothing_to_delete_commits_nothing(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    dt = DeltaTable(str(t))
    assert dt.vacuum(dry_run=False) == []
    assert dt.vacuum(dry_run=False, full=True) == []
    assert dt.version() == 2 and DeltaTable(str(t)).version() == 2


def test_history_has_vacuum_start_and_end(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    dt = DeltaTable(str(t))
    progress: list[tuple[int, int]] = []
    deleted = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, progress=lambda d, n:
                        progress.append((d, n)))
    assert len(deleted) == 4
    assert progress[-1] == (4, 4)
    end, start = dt.history(2)
    assert start["operation"] == "VACUUM START" and end["operation"] == "VACUUM END"
    assert start["operationParameters"] == {"retentionCheckEnabled": "false", "specifiedRetentionMillis": "0",
                                            "defaultRetentionMillis": str(7 * DAY_MS)}
    assert {k: int(v) for k, v in start["operationMetrics"].items()} == {
        "numFilesToDelete": 4, "sizeOfDataToDelete": sum(
            a["remove"]["size"] for v in (1, 2) for a in read_actions(t, v) if "remove" in a)}
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert {k: int(v) for k, v in end["operationMetrics"].items()} == {"numDeletedFiles": 4,
                                                                       "numVacuumedDirectories": 0}
    assert [a for a in read_actions(t, 3) if "commitInfo" not in a] == []  # commitInfo-only commits
    assert DeltaTable(str(t)).version() == dt.version() == 4
    assert _ids(t) == [2, 12]


def test_retention_shorter_than_table_property_is_refused(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t, configuration={"delta.deletedFileRetentionDuration": "interval 2 days"})
    before = _files(t)
    dt = DeltaTable(str(t))
    with pytest.raises(VacuumRetentionError, match="delta.deletedFileRetentionDuration") as e:
        dt.vacuum(retention_hours=47, dry_run=False)
    assert isinstance(e.value, DeltaError)
    with pytest.raises(VacuumRetentionError):
        dt.vacuum(retention_hours=-1, enforce_retention_duration=False)
    assert dt.vacuum(retention_hours=48) == []  # equal to the property is fine
    assert _files(t) == before and DeltaTable(str(t)).version() == 2
    assert len(dt.vacuum(retention_hours=0, enforce_retention_duration=False)) == 4  # override accepted


def test_default_retention_follows_the_table_property(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t, configuration={"delta.deletedFileRetentionDuration": "interval 1 hour"})
    _age_removes(t, 1, days=1 / 12)  # two hours ago
    plan = plan_vacuum(DeltaTable(str(t))._storage, DeltaTable(str(t)).snapshot)
    assert plan.retention_ms == plan.default_retention_ms == 3_600_000
    assert len(plan.files) == 2  # version 0's two files; version 1's were removed now


def test_keep_versions_keeps_their_files(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    dt = DeltaTable(str(t))
    all_old = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False))
    kept = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False, keep_versions=[1]))
    v1 = {a["add"]["path"] for a in read_actions(t, 1) if "add" in a}
    assert kept == all_old - v1 and len(v1) == 2
    dt.vacuum(retention_hours=0, enforce_retention_duration=False, keep_versions=[1], dry_run=False)
    assert _ids(t, 1) == [1, 11]


# ----------------------------------------------------------------------------- full
def test_full_deletes_old_orphans_but_never_a_concurrent_writers_fresh_files(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    _age_all(t, days=30)
    (t / "p=a" / "old-orphan.parquet").write_bytes(b"old")
    (t / "old-root-orphan.parquet").write_bytes(b"old")
    _age_file(t / "p=a" / "old-orphan.parquet", 8)
    _age_file(t / "old-root-orphan.parquet", 8)
    # a writer that has written its files but not committed yet
    (t / "p=a" / "part-uncommitted.parquet").write_bytes(b"new")
    (t / "p=new").mkdir()
    (t / "p=new" / "part-uncommitted.parquet").write_bytes(b"new")
    before = _files(t)
    dt = DeltaTable(str(t))
    assert set(dt.vacuum(full=True)) == {"p=a/old-orphan.parquet", "old-root-orphan.parquet"}
    assert set(dt.vacuum()) == set(), "lite never lists storage: orphans are full mode's job"
    deleted = set(dt.vacuum(full=True, dry_run=False))
    assert deleted == {"p=a/old-orphan.parquet", "old-root-orphan.parquet"}
    assert _files(t) == before - deleted
    assert (t / "p=a" / "part-uncommitted.parquet").exists() and (t / "p=new" / "part-uncommitted.parquet").exists()
    # every version is still readable: all tombstones are fresh (removed "now")
    for v in range(3):
        assert _ids(t, v) == [v, v + 10]


def test_full_keeps_log_hidden_files_and_files_outside_the_table(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    DeltaTable(str(t)).create_checkpoint()
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"x")
    sibling = tmp_path / "t2" / "part-0.parquet"  # a prefix sibling of the table root
    sibling.parent.mkdir()
    sibling.write_bytes(b"x")
    for rel in ("_SUCCESS", ".part-0.parquet.crc", "_tmp/part-0.parquet", ".staging/part-0.parquet",
                "p=a/_committed_1", "p=a/.hidden/x.parquet"):
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_bytes(b"x")
    # an expired tombstone naming a file outside the table root (a shallow clone's source)
    v = DeltaTable(str(t)).version() + 1
    write_actions(t, v, [{"commitInfo": {"timestamp": NOW_MS, "operation": "DELETE"}},
                         {"remove": {"path": outside.as_uri(), "deletionTimestamp": NOW_MS - 30 * DAY_MS,
                                     "dataChange": True}}])
    _age_all(t, days=30)
    _age_file(outside, 30)
    _age_file(sibling, 30)
    log_before = _log_files(t)
    dt = DeltaTable(str(t))
    deleted = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False, full=True, dry_run=False))
    assert deleted and all(d.startswith(("p=a/part-", "p=b/part-")) for d in deleted)
    assert outside.exists() and sibling.exists()
    for rel in ("_SUCCESS", ".part-0.parquet.crc", "_tmp/part-0.parquet", ".staging/part-0.parquet",
                "p=a/_committed_1", "p=a/.hidden/x.parquet"):
        assert (t / rel).exists(), rel
    log_after = _log_files(t)
    assert {k: log_after[k] for k in log_before} == log_before, "_delta_log files are never touched"
    assert _ids(t) == [2, 12]


def test_underscore_partition_directories_are_not_hidden(tmp_path: Path) -> None:
    t = tmp_path / "t"
    for i in range(2):
        write_deltalake(t, pa.table({"x": [i], "_p": ["a"]}), mode="overwrite", partition_by=["_p"])
    (t / "_p=a" / "orphan.parquet").write_bytes(b"x")
    _age_all(t, days=30)
    deleted = set(DeltaTable(str(t)).vacuum(retention_hours=0, enforce_retention_duration=False, full=True))
    assert "_p=a/orphan.parquet" in deleted and len(deleted) == 2


def test_deletion_vector_and_change_data_files_are_vacuumed_once_expired(tmp_path: Path) -> None:
    t = tmp_path / "t"
    write_deltalake(t, pa.table({"x": list(range(20))}),
                    configuration={"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"})
    DeltaTable(str(t)).delete("x = 1")  # DV 1
    DeltaTable(str(t)).delete("x = 2")  # DV 2 replaces DV 1
    dvs = sorted(f for f in _files(t) if f.startswith("deletion_vector_"))
    cdcs = sorted(f for f in _files(t) if f.startswith("_change_data/"))
    assert len(dvs) == 2 and len(cdcs) == 2
    live_dv = DeletionVectorDescriptor.from_dict(
        next(a["add"]["deletionVector"] for a in read_actions(t, 2) if "add" in a)).relative_key()
    assert live_dv in dvs
    dt = DeltaTable(str(t))
    assert dt.vacuum() == [] and dt.vacuum(full=True) == [], "nothing has expired under the default retention"
    for full in (False, True):
        planned = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False, full=full))
        assert set(dvs) - planned == {live_dv}, (full, planned)  # the replaced DV goes, the live one stays
        assert set(cdcs) <= planned
        assert not any(p.startswith("part-") for p in planned), "the data file is live (with DV 2)"
    deleted = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False))
    remaining = _files(t)
    assert [f for f in remaining if f.startswith("deletion_vector_")] == [live_dv]
    assert not any(f.startswith("_change_data/") for f in remaining)
    assert set(dvs) - {live_dv} <= deleted
    expected = [x for x in range(20) if x not in (1, 2)]
    assert _ids(t) == expected
    assert sorted(duckdb_table(t).column("x").to_pylist()) == expected


# ----------------------------------------------------------------------------- pending writers (issue 22 §2)
def test_full_vacuum_with_zero_retention_spares_a_paused_writers_files(tmp_path: Path, monkeypatch:
                                                                       pytest.MonkeyPatch) -> None:
    """A writer has written its data files but not committed; a full VACUUM with retention 0 runs; the writer
    then commits. Its files are younger than the minimum unreferenced-file age, so the commit lands on files
    that exist and the table reads back whole (delta-spark and deltalake delete them: the write is lost)."""
    import threading

    import deltakernel.operations.write.commit as write_module

    t = tmp_path / "t"
    _three_versions(t)  # versions 0 and 1's files are tombstones now
    tombstoned = _files(t) - {a["add"]["path"] for a in read_actions(t, 2) if "add" in a}
    (t / "p=a" / "old-orphan.parquet").write_bytes(b"x")  # a failed writer's leftover from 2 hours ago
    _age_file(t / "p=a" / "old-orphan.parquet", 2 / 24)
    before = _files(t)

    real_commit = write_module.commit_with
    written, release = threading.Event(), threading.Event()

    def paused_commit(*args: object, **kwargs: object) -> object:
        written.set()  # data files are on storage, the commit has not been attempted
        assert release.wait(60)
        return real_commit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(write_module, "commit_with", paused_commit)
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            write_deltalake(t, pa.table({"x": [100, 101], "p": ["a", "new"]}), mode="append")
        except BaseException as e:  # reported to the test thread
            failures.append(e)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert written.wait(60)
        pending = _files(t) - before
        assert len(pending) == 2 and all(f.endswith(".parquet") for f in pending)
        dt = DeltaTable(str(t))
        zero = {"retention_hours": 0, "enforce_retention_duration": False, "full": True}
        # the guard is what protects them: without a minimum age they would be planned
        assert pending <= set(dt.vacuum(**zero, min_unreferenced_age_hours=0))  # type: ignore[arg-type]
        deleted = set(dt.vacuum(**zero, dry_run=False))  # type: ignore[arg-type]
        # expired tombstones go by the retention (fresh files, but named by the log), the old orphan by its age
        assert deleted == tombstoned | {"p=a/old-orphan.parquet"}
        assert _files(t) == (before | pending) - deleted
        assert [h["operation"] for h in dt.history(2)] == ["VACUUM END", "VACUUM START"]
    finally:
        release.set()
        thread.join(60)
    assert not thread.is_alive() and not failures, failures
    out = DeltaTable(str(t))
    assert out.version() == 5 and out.history(1)[0]["operation"] == "WRITE"
    assert _ids(t) == [2, 12, 100, 101]
    assert_same_rows(out.to_pyarrow_table(), deltalake_table(t))
    assert sorted(deltalake_table(t).column("x").to_pylist()) == [2, 12, 100, 101]


def test_full_vacuum_deletes_unreferenced_files_only_past_the_minimum_age(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    _age_all(t, days=30)
    ages = {"p=a/orphan-3h.parquet": 3, "p=b/orphan-90m.parquet": 1.5, "orphan-30m.parquet": 0.5,
            "_change_data/cdc-orphan-30m.parquet": 0.5, "deletion_vector_orphan-3h.bin": 3}
    for rel, hours in ages.items():
        (t / rel).parent.mkdir(parents=True, exist_ok=True)
        (t / rel).write_bytes(b"x")
        _age_file(t / rel, hours / 24)
    tombstoned = _files(t) - set(ages) - {a["add"]["path"] for a in read_actions(t, 2) if "add" in a}
    dt = DeltaTable(str(t))
    zero = {"retention_hours": 0, "enforce_retention_duration": False, "full": True}

    def orphans(**kw: object) -> set[str]:
        planned = set(dt.vacuum(**zero, **kw))  # type: ignore[arg-type]
        assert tombstoned <= planned, "expired tombstones go by the retention alone"
        return planned - tombstoned

    def older_than(hours: float) -> set[str]:
        return {rel for rel, age in ages.items() if age > hours}

    assert orphans() == older_than(1)  # default: 1 hour, whatever the retention
    assert orphans(min_unreferenced_age_hours=2) == older_than(2)
    assert orphans(min_unreferenced_age_hours=0) == set(ages)
    # the retention still applies when it is the longer of the two
    assert set(dt.vacuum(retention_hours=2, enforce_retention_duration=False, full=True)) - tombstoned \
        == older_than(2)
    with pytest.raises(VacuumRetentionError, match="min_unreferenced_age_hours"):
        dt.vacuum(**zero, min_unreferenced_age_hours=-1)  # type: ignore[arg-type]
    # lite mode never lists storage: the age is irrelevant there
    assert set(dt.vacuum(retention_hours=0, enforce_retention_duration=False)) == tombstoned

    # the table property sets the default for every engine (the CLI, Spark's VACUUM)
    dt.alter.set_table_properties({"deltakernel.vacuum.minUnreferencedFileAge": "interval 2 hours"})
    assert orphans() == older_than(2)
    assert orphans(min_unreferenced_age_hours=0.25) == older_than(0.25)  # the argument wins
    dt.alter.set_table_properties({"deltakernel.vacuum.minUnreferencedFileAge": "soon"})
    with pytest.raises(DeltaError, match="deltakernel.vacuum.minUnreferencedFileAge"):
        dt.vacuum(**zero)  # type: ignore[arg-type]
    dt.alter.set_table_properties({"deltakernel.vacuum.minUnreferencedFileAge": "0 hours"})
    before = _files(t)
    deleted = set(dt.vacuum(**zero, dry_run=False))  # type: ignore[arg-type]
    assert deleted == tombstoned | set(ages) and _files(t) == before - deleted
    assert _ids(t) == [2, 12]


# ----------------------------------------------------------------------------- protocol
def test_vacuum_protocol_check_refuses_unsupported_features(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _three_versions(t)
    v = DeltaTable(str(t)).version() + 1
    write_actions(t, v, [{"commitInfo": {"timestamp": NOW_MS, "operation": "SET TBLPROPERTIES"}},
                         {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                       "readerFeatures": ["vacuumProtocolCheck"],
                                       "writerFeatures": ["vacuumProtocolCheck", "someFutureFeature"]}}])
    before = _files(t)
    dt = DeltaTable(str(t))  # readable: the unknown feature is writer-only
    with pytest.raises(UnsupportedFeatureError) as e:
        dt.vacuum(retention_hours=0, enforce_retention_duration=False, full=True)
    assert e.value.feature == "someFutureFeature" and "vacuumProtocolCheck" in str(e.value)
    assert _files(t) == before and not commit_file(t, v + 1).exists()


# ----------------------------------------------------------------------------- S3
pytest.importorskip("moto")
try:  # pytest's default "prepend" import mode puts this directory on sys.path
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401


def test_vacuum_on_s3(s3_bucket: str, s3_options: dict[str, str]) -> None:
    from deltakernel.storage import storage_for_uri

    uri = f"s3://{s3_bucket}/tbl"
    for i in range(3):
        write_deltalake(uri, pa.table({"x": [i, i + 10], "p": ["a", "b"]}), mode="overwrite", partition_by=["p"],
                        storage_options=s3_options)
    store = storage_for_uri(uri, s3_options)
    store.put_if_absent("p=a/orphan.parquet", b"x")
    storage_for_uri(f"s3://{s3_bucket}/tbl-other", s3_options).put_if_absent("part-0.parquet", b"x")

    def keys() -> set[str]:
        return {m.key for page in store.walk("") for m in page if not m.key.startswith("_delta_log/")}

    before = keys()
    dt = DeltaTable(uri, storage_options=s3_options)
    assert dt.vacuum(full=True) == [], "fresh orphans survive under the default retention"
    lite = set(dt.vacuum(retention_hours=0, enforce_retention_duration=False))
    assert set(dt.vacuum(retention_hours=0, enforce_retention_duration=False, full=True)) == lite, \
        "a fresh orphan (maybe a pending writer's) survives any retention: it is younger than the minimum age"
    zero = {"retention_hours": 0, "enforce_retention_duration": False, "full": True, "min_unreferenced_age_hours": 0}
    full = set(dt.vacuum(**zero))  # type: ignore[arg-type]
    assert len(lite) == 4 and full == lite | {"p=a/orphan.parquet"}
    deleted = set(dt.vacuum(**zero, dry_run=False))  # type: ignore[arg-type]
    assert deleted == full and keys() == before - full
    assert storage_for_uri(f"s3://{s3_bucket}/tbl-other", s3_options).exists("part-0.parquet")
    assert [h["operation"] for h in dt.history(2)] == ["VACUUM END", "VACUUM START"]
    out = DeltaTable(uri, storage_options=s3_options).to_pyarrow_table()
    assert sorted(out.column("x").to_pylist()) == [2, 12]


# ----------------------------------------------------------------------------- storage additions
def test_local_walk_prunes_and_delete_many_refuses_escapes(tmp_path: Path) -> None:
    from deltakernel.errors import InvalidPathError
    from deltakernel.storage import storage_for_uri

    for rel in ("a.parquet", "d/b.parquet", "d/e/c.parquet", "_skip/x.parquet", "d/_skip/y.parquet"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    (tmp_path / "outside.parquet").write_bytes(b"x")
    store = storage_for_uri(str(tmp_path / "d"))
    keys = {m.key for page in store.walk("", skip_dir=lambda k: k.rsplit("/", 1)[-1].startswith("_")) for m in page}
    assert keys == {"b.parquet", "e/c.parquet"}
    assert {m.key for page in store.walk("e") for m in page} == {"e/c.parquet"}
    with pytest.raises(InvalidPathError):
        store.delete_many(["../outside.parquet"])
    with pytest.raises(InvalidPathError):  # one escaping key among many safe ones is still caught
        store.delete_many([*(f"gone{i}.parquet" for i in range(50)), "x/../../outside.parquet", "more.parquet"])
    store.delete_many(["b.parquet", "e/../e/c.parquet", "missing.parquet"])
    assert not (tmp_path / "d" / "b.parquet").exists() and not (tmp_path / "d" / "e" / "c.parquet").exists()
    assert (tmp_path / "outside.parquet").exists() and (tmp_path / "d" / "_skip" / "y.parquet").exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="./a\x00\n", max_size=6), max_size=4))
def test_one_scan_flags_every_key_the_per_key_check_flags(keys: list[str]) -> None:
    """`any_unsafe` (substrings of the joined keys) is True whenever some key matches the per-key pattern, and
    for keys without newlines exactly then."""
    from deltakernel.storage.local import _UNSAFE_KEY, any_unsafe

    per_key = any(_UNSAFE_KEY.search(k) for k in keys)
    if per_key:
        assert any_unsafe(keys)
    if not any("\n" in k for k in keys):
        assert any_unsafe(keys) == per_key


def test_local_delete_many_of_many_keys(tmp_path: Path) -> None:
    """Many keys at once (one safety scan over all of them): every one goes (missing ones too), nothing else; an
    escaping key among hundreds of safe ones is still refused and the files outside stay."""
    from deltakernel.errors import InvalidPathError
    from deltakernel.storage import storage_for_uri

    (tmp_path / "d" / "p=1").mkdir(parents=True)
    names = [f"p=1/f{i}.parquet" if i % 2 else f"f{i}.parquet" for i in range(1600)]
    for n in names + ["keep.parquet"]:
        (tmp_path / "d" / n).write_bytes(b"x")
    (tmp_path / "outside.parquet").write_bytes(b"x")
    store = storage_for_uri(str(tmp_path / "d"))
    store.delete_many([*names[:900], "missing.parquet"])
    left = sorted(str(p.relative_to(tmp_path / "d")) for p in (tmp_path / "d").rglob("*.parquet"))
    assert left == sorted([*names[900:], "keep.parquet"])
    with pytest.raises(InvalidPathError):
        store.delete_many([*names[900:1350], "x/../../outside.parquet", *names[1350:1500]])
    assert (tmp_path / "outside.parquet").exists() and (tmp_path / "d" / "keep.parquet").exists()


def test_memory_store_walk_and_delete_many() -> None:
    import uuid

    from deltakernel.storage import storage_for_uri

    root = f"memory:///vacuum-{uuid.uuid4().hex}"
    store = storage_for_uri(root + "/t")
    for i in range(2500):
        store.put_if_absent(f"p={i % 3}/f{i}.parquet", b"x")
    store.put_if_absent("_hidden/h.parquet", b"x")
    storage_for_uri(root + "/t2").put_if_absent("f.parquet", b"x")  # a prefix sibling
    keys = [m.key for page in store.walk("", skip_dir=lambda k: k.startswith("_")) for m in page]
    assert len(keys) == len(set(keys)) == 2500
    store.delete_many(keys[:2100])
    left = {m.key for page in store.walk("") for m in page}
    assert left == set(keys[2100:]) | {"_hidden/h.parquet"}
    assert storage_for_uri(root + "/t2").exists("f.parquet")
