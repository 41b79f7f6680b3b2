"""Damaged and hostile tables: every failure is a typed DeltaError naming what is wrong, never rows.

Tables are written with deltalake into tmp_path and then damaged by hand.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import helpers

deltalake = pytest.importorskip("deltalake")

from deltakernel.errors import (
    CorruptLogError,
    DeltaError,
    InvalidPathError,
    MissingFileError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.storage import LocalStorage
from deltakernel.table import DeltaTable


def _make_table(path: pathlib.Path, commits: int = 3, rows: int = 4, **kw: object) -> str:
    p = str(path)
    for k in range(commits):
        t = pa.table({"id": pa.array([k * 100 + j for j in range(rows)], pa.int64()),
                      "s": pa.array([f"v{k}"] * rows)})
        deltalake.write_deltalake(p, t, mode="append", **kw)  # type: ignore[arg-type]
    return p


def _expected_rows(p: str, version: int | None = None) -> list[tuple]:
    return helpers.canon_rows(helpers.deltalake_table(p, version=version))


def _expected_rows_v0(p: str) -> list[tuple]:
    return helpers.canon_rows(pa.table({"id": pa.array([0, 1, 2, 3], pa.int64()), "s": ["v0"] * 4}))


def _read(p: str, version: int | None = None) -> pa.Table:
    return DeltaTable(p, version=version).to_pyarrow_table()


# ----------------------------------------------------------------------------- corrupt commits


def test_truncated_commit_json(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t")
    before = _expected_rows(p, 1)
    f = helpers.commit_file(p, 2)
    data = f.read_bytes().rstrip(b"\n")
    last_nl = data.rfind(b"\n")
    last_line = data[last_nl + 1:]
    f.write_bytes(data[: last_nl + 1] + last_line[: len(last_line) // 2])
    with pytest.raises(CorruptLogError) as ei:
        _read(p)
    assert f.name in str(ei.value)
    with pytest.raises(CorruptLogError, match=f.name):
        Snapshot.load(LocalStorage(p))
    # versions before the damaged commit are still readable
    assert helpers.canon_rows(_read(p, 1)) == before


def test_truncated_commit_info_line(tmp_path: pathlib.Path) -> None:
    """The cut line is a non-file action (commitInfo last), parsed on the json.loads path."""
    p = _make_table(tmp_path / "t")
    actions = helpers.read_actions(p, 2)
    ci = [a for a in actions if "commitInfo" in a]
    rest = [a for a in actions if "commitInfo" not in a]
    f = helpers.commit_file(p, 2)
    text = "".join(json.dumps(a) + "\n" for a in rest) + json.dumps(ci[0])[:25]
    f.write_text(text)
    with pytest.raises(CorruptLogError, match=f.name):
        _read(p)


def test_truncated_add_line_in_the_middle(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", rows=4, partition_by=["s"])
    f = helpers.commit_file(p, 1)
    lines = f.read_text().splitlines()
    idx = next(i for i, line in enumerate(lines) if line.startswith('{"add"'))
    lines[idx] = lines[idx][: len(lines[idx]) // 2]
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorruptLogError, match=f.name):
        _read(p)
    with pytest.raises(CorruptLogError, match=f.name):
        _read(p, 1)
    assert helpers.canon_rows(_read(p, 0)) == _expected_rows(p, 0)


@pytest.mark.parametrize(
    "garbage",
    [b"this is not json\n", b"\x00\x01\x02garbage\xff\xfe\n", b"\xff\xfe\xfd", b"[1, 2, 3]\n", b'"just a string"\n',
     b"{not json either}\n"],
    ids=["text", "binary", "binary-only", "array", "string", "braces"],
)
def test_garbage_in_commit(tmp_path: pathlib.Path, garbage: bytes) -> None:
    p = _make_table(tmp_path / "t")
    f = helpers.commit_file(p, 1)
    if garbage == b"\xff\xfe\xfd":
        f.write_bytes(garbage)  # the whole commit is garbage
    else:
        f.write_bytes(f.read_bytes() + garbage)
    for version in (None, 1):
        with pytest.raises(DeltaError) as ei:
            _read(p, version)
        assert isinstance(ei.value, CorruptLogError), repr(ei.value)
        assert f.name in str(ei.value)
    # version 0 does not include the damaged commit
    assert helpers.canon_rows(_read(p, 0)) == _expected_rows_v0(p)


def test_empty_commit_file_is_corrupt(tmp_path: pathlib.Path) -> None:
    """A zero-byte latest commit has no protocol/metaData (v0) — or is a damaged commit (v>0)."""
    p = _make_table(tmp_path / "t", commits=1)
    f = helpers.commit_file(p, 0)
    f.write_bytes(b"")
    with pytest.raises(CorruptLogError):
        _read(p)


# ----------------------------------------------------------------------------- multi-part checkpoints


def _split_checkpoint(p: str, version: int, parts: int) -> list[pathlib.Path]:
    """Replace the classic checkpoint at `version` with an equivalent `parts`-part checkpoint."""
    classic = helpers.log_dir(p) / f"{version:020d}.checkpoint.parquet"
    table = pq.read_table(classic)
    n = table.num_rows
    out = []
    for k in range(parts):
        lo, hi = n * k // parts, n * (k + 1) // parts
        path = helpers.log_dir(p) / f"{version:020d}.checkpoint.{k + 1:010d}.{parts:010d}.parquet"
        pq.write_table(table.slice(lo, hi - lo), path)
        out.append(path)
    classic.unlink()
    return out


def _table_with_checkpoint(path: pathlib.Path, commits: int = 6, checkpoint_at: int = 3) -> str:
    p = _make_table(path, commits=checkpoint_at + 1)
    deltalake.DeltaTable(p).create_checkpoint()
    for k in range(checkpoint_at + 1, commits):
        deltalake.write_deltalake(p, pa.table({"id": pa.array([k * 100], pa.int64()), "s": [f"v{k}"]}),
                                  mode="append")
    return p


def _set_last_checkpoint(p: str, obj: dict) -> None:
    (helpers.log_dir(p) / "_last_checkpoint").write_text(json.dumps(obj))


def test_complete_multipart_checkpoint_reads(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    _split_checkpoint(p, 3, 3)
    _set_last_checkpoint(p, {"version": 3, "size": 1, "parts": 3})
    # the commits before the checkpoint are gone: only the multi-part checkpoint can rebuild the state
    for v in range(3):
        helpers.commit_file(p, v).unlink()
    snap = Snapshot.load(LocalStorage(p))
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind == "multipart"
    assert len(snap.segment.checkpoint.files) == 3
    assert helpers.canon_rows(_read(p)) == expected


def test_incomplete_multipart_checkpoint_falls_back_to_commits(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    expected3 = _expected_rows(p, 3)
    parts = _split_checkpoint(p, 3, 2)
    parts[1].unlink()
    _set_last_checkpoint(p, {"version": 3, "size": 1, "parts": 2})
    snap = Snapshot.load(LocalStorage(p))
    assert snap.segment.checkpoint is None  # the incomplete checkpoint is ignored
    assert snap.segment.commit_versions == list(range(6))
    assert helpers.canon_rows(_read(p)) == expected
    assert helpers.canon_rows(_read(p, 3)) == expected3


def test_incomplete_multipart_checkpoint_falls_back_to_older_checkpoint(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=3)
    deltalake.DeltaTable(p).create_checkpoint()  # classic at 2
    for k in range(3, 6):
        deltalake.write_deltalake(p, pa.table({"id": pa.array([k], pa.int64()), "s": [f"v{k}"]}), mode="append")
    deltalake.DeltaTable(p).create_checkpoint()  # classic at 5, to be split
    deltalake.write_deltalake(p, pa.table({"id": pa.array([6], pa.int64()), "s": ["v6"]}), mode="append")
    expected = _expected_rows(p)
    parts = _split_checkpoint(p, 5, 3)
    parts[0].unlink()
    _set_last_checkpoint(p, {"version": 5, "size": 1, "parts": 3})
    for v in range(2):  # commits before the older checkpoint were cleaned up
        helpers.commit_file(p, v).unlink()
    snap = Snapshot.load(LocalStorage(p))
    assert snap.segment.checkpoint is not None
    assert snap.segment.checkpoint.version == 2 and snap.segment.checkpoint.kind == "classic"
    assert snap.segment.commit_versions == [3, 4, 5, 6]
    assert helpers.canon_rows(_read(p)) == expected


def test_incomplete_multipart_checkpoint_without_commits_is_an_error(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    parts = _split_checkpoint(p, 3, 2)
    parts[1].unlink()
    _set_last_checkpoint(p, {"version": 3, "size": 1, "parts": 2})
    for v in range(3):
        helpers.commit_file(p, v).unlink()
    with pytest.raises((CorruptLogError, VersionNotFoundError)) as ei:
        _read(p)
    msg = str(ei.value)
    assert p in msg
    # the message points at the real cause: the checkpoint (its missing part) or the missing commits
    assert "checkpoint" in msg.lower() or helpers.commit_file(p, 0).name in msg or "0" in msg


def test_missing_checkpoint_file_named_by_last_checkpoint_with_commits(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    (helpers.log_dir(p) / f"{3:020d}.checkpoint.parquet").unlink()
    assert (helpers.log_dir(p) / "_last_checkpoint").exists()
    assert helpers.canon_rows(_read(p)) == expected


def test_missing_checkpoint_without_commits_is_an_error(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    (helpers.log_dir(p) / f"{3:020d}.checkpoint.parquet").unlink()
    for v in range(3):
        helpers.commit_file(p, v).unlink()
    with pytest.raises((CorruptLogError, VersionNotFoundError)) as ei:
        _read(p)
    assert p in str(ei.value)


# ----------------------------------------------------------------------------- _last_checkpoint hints


@pytest.mark.parametrize(
    "hint",
    [
        {"version": 3, "size": 1, "checksum": "00000000000000000000000000000000"},
        {"version": 99, "size": 1},
        {"version": 2, "size": 1},  # names a checkpoint that does not exist (stale/wrong)
        {"version": 3, "size": 1, "parts": 4},  # wrong part count
        {"version": 3, "size": 1, "v2Checkpoint": {"path": "nope.json"}},
        "not json at all",
        "",
        {"size": 1},
        {"version": "3"},
        [3],
    ],
    ids=["bad-checksum", "beyond-latest", "missing-cp", "wrong-parts", "v2-missing", "garbage", "empty",
         "no-version", "string-version", "array"],
)
def test_bad_last_checkpoint_hint_still_reads(tmp_path: pathlib.Path, hint: object) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    expected4 = _expected_rows(p, 4)
    f = helpers.log_dir(p) / "_last_checkpoint"
    f.write_text(hint if isinstance(hint, str) else json.dumps(hint))
    assert helpers.canon_rows(_read(p)) == expected
    assert helpers.canon_rows(_read(p, 4)) == expected4
    assert DeltaTable(p).version() == 5


def test_correct_checksum_is_accepted(tmp_path: pathlib.Path) -> None:
    from deltakernel.kernel.log.segment import last_checkpoint_checksum

    p = _table_with_checkpoint(tmp_path / "t")
    obj = json.loads((helpers.log_dir(p) / "_last_checkpoint").read_text())
    obj["checksum"] = last_checkpoint_checksum(obj)
    _set_last_checkpoint(p, obj)
    snap = Snapshot.load(LocalStorage(p))
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 3
    assert helpers.canon_rows(_read(p)) == _expected_rows(p)


def test_bad_checksum_hint_ignored_even_when_commits_gone(tmp_path: pathlib.Path) -> None:
    """A hint failing its checksum is ignored; the listing still finds the real checkpoint."""
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    _set_last_checkpoint(p, {"version": 3, "size": 1, "checksum": "deadbeef"})
    for v in range(3):
        helpers.commit_file(p, v).unlink()
    assert helpers.canon_rows(_read(p)) == expected


# ----------------------------------------------------------------------------- data files


def test_missing_data_file(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", partition_by=["s"])
    victim = pathlib.Path(DeltaTable(p).file_uris()[0])
    victim.unlink()
    with pytest.raises(MissingFileError) as ei:
        _read(p)
    assert victim.name in str(ei.value)
    with pytest.raises(MissingFileError, match=victim.name):
        list(DeltaTable(p).to_batches())
    with pytest.raises(MissingFileError, match=victim.name):
        DeltaTable(p).to_pandas()


def test_data_file_replaced_by_garbage(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t")
    victim = pathlib.Path(DeltaTable(p).file_uris()[0])
    victim.write_bytes(b"definitely not parquet")
    with pytest.raises(DeltaError) as ei:
        _read(p)
    assert victim.name in str(ei.value)


# ----------------------------------------------------------------------------- protocol


def _rewrite_protocol(p: str, protocol: dict) -> None:
    actions = helpers.read_actions(p, 0)
    actions = [{"protocol": protocol} if "protocol" in a else a for a in actions]
    helpers.write_actions(p, 0, actions)


def test_unknown_reader_feature(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t")
    _rewrite_protocol(p, {"minReaderVersion": 3, "minWriterVersion": 7,
                          "readerFeatures": ["fancyNewFeature"], "writerFeatures": ["fancyNewFeature"]})
    with pytest.raises(UnsupportedFeatureError) as ei:
        _read(p)
    assert ei.value.feature == "fancyNewFeature"
    assert "fancyNewFeature" in str(ei.value)
    with pytest.raises(UnsupportedFeatureError):
        Snapshot.load(LocalStorage(p))
    with pytest.raises(UnsupportedFeatureError):
        DeltaTable(p, version=0)


def test_unknown_reader_feature_in_later_protocol_upgrade(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=2)
    helpers.write_actions(p, 2, [{"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                                               "readerFeatures": ["fancyNewFeature", "deletionVectors"],
                                               "writerFeatures": ["fancyNewFeature", "deletionVectors"]}},
                                 helpers.commit_info("SET TBLPROPERTIES")])
    with pytest.raises(UnsupportedFeatureError) as ei:
        _read(p)
    assert ei.value.feature == "fancyNewFeature"
    assert helpers.canon_rows(_read(p, 1)) == _expected_rows(p, 1)  # before the upgrade it is readable


def test_unknown_writer_only_feature_is_readable(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t")
    expected = _expected_rows(p)
    _rewrite_protocol(p, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["fancyWriterThing"]})
    assert helpers.canon_rows(_read(p)) == expected


def test_reader_version_too_new(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t")
    _rewrite_protocol(p, {"minReaderVersion": 4, "minWriterVersion": 7})
    with pytest.raises(UnsupportedFeatureError):
        _read(p)


# ----------------------------------------------------------------------------- paths outside the table


# Absolute paths anywhere in the table's own store are read (shallow clones, docs/decisions.md
# "Absolute paths (supersedes Paths)"); relative paths may not climb out, other stores need an opt-in.
@pytest.mark.parametrize(
    "bad_path",
    ["../outside.parquet", "%2E%2E/outside.parquet", "sub/../../outside.parquet", "s3://other-bucket/x.parquet"],
)
def test_add_path_outside_table(tmp_path: pathlib.Path, bad_path: str) -> None:
    p = _make_table(tmp_path / "t", commits=2)
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([666], pa.int64()), "s": ["evil"]}), outside)
    if bad_path == "OUTSIDE_ABS":
        bad_path = outside.as_uri()  # a real, readable Parquet file outside the table root
    actions = helpers.read_actions(p, 1)
    for a in actions:
        if "add" in a:
            a["add"]["path"] = bad_path
            break
    helpers.write_actions(p, 1, actions)
    with pytest.raises(InvalidPathError) as ei:
        _read(p)
    assert bad_path in str(ei.value)
    with pytest.raises(InvalidPathError):
        DeltaTable(p).file_uris()
    with pytest.raises(InvalidPathError):
        list(DeltaTable(p).to_batches())


def test_absolute_path_inside_table_is_fine(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=2)
    expected = _expected_rows(p)
    actions = helpers.read_actions(p, 1)
    for a in actions:
        if "add" in a:
            a["add"]["path"] = (pathlib.Path(p) / a["add"]["path"]).as_uri()
    helpers.write_actions(p, 1, actions)
    assert helpers.canon_rows(_read(p)) == expected


def test_sibling_directory_with_common_prefix_is_outside(tmp_path: pathlib.Path) -> None:
    """`/x/t-evil/f.parquet` is not inside table root `/x/t` even though the strings share a prefix: it is
    read as a file elsewhere on the same filesystem (its own location), never as a key under the root."""
    from deltakernel.kernel.paths import resolve_key

    p = _make_table(tmp_path / "t", commits=2)
    evil = tmp_path / "t-evil"
    evil.mkdir()
    pq.write_table(pa.table({"id": pa.array([666], pa.int64()), "s": ["evil"]}), evil / "f.parquet")
    with pytest.raises(InvalidPathError):
        resolve_key(p, (evil / "f.parquet").as_uri())
    actions = helpers.read_actions(p, 1)
    for a in actions:
        if "add" in a:
            a["add"]["path"] = (evil / "f.parquet").as_uri()
    helpers.write_actions(p, 1, actions)
    assert str(evil / "f.parquet") in DeltaTable(p).file_uris()
    assert 666 in _read(p).column("id").to_pylist()


@pytest.mark.parametrize("style", ["uri", "file:/", "bare"])
def test_absolute_local_path_outside_table_is_read(tmp_path: pathlib.Path, style: str) -> None:
    p = _make_table(tmp_path / "t", commits=2)
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"id": pa.array([666], pa.int64()), "s": ["evil"]}), outside)
    path = {"uri": outside.as_uri(), "file:/": f"file:{outside}", "bare": str(outside)}[style]
    actions = helpers.read_actions(p, 1)
    for a in actions:
        if "add" in a:
            a["add"]["path"] = path
            break
    helpers.write_actions(p, 1, actions)
    assert str(outside) in DeltaTable(p).file_uris()
    assert 666 in _read(p).column("id").to_pylist()


# ----------------------------------------------------------------------------- versions and gaps


def test_gap_in_versions(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=6)
    for v in (1, 2, 3):
        helpers.commit_file(p, v).unlink()
    with pytest.raises(CorruptLogError) as ei:
        _read(p)
    assert "1" in str(ei.value) and p in str(ei.value)
    with pytest.raises(CorruptLogError):
        _read(p, 4)
    assert helpers.canon_rows(_read(p, 0)) == helpers.canon_rows(
        pa.table({"id": pa.array([0, 1, 2, 3], pa.int64()), "s": ["v0"] * 4}))


def test_leading_commits_deleted_without_checkpoint(tmp_path: pathlib.Path) -> None:
    """00..03.json of 6 commits deleted, no checkpoint: the state cannot be rebuilt -> CorruptLogError."""
    p = _make_table(tmp_path / "t", commits=6)
    for v in range(4):
        helpers.commit_file(p, v).unlink()
    with pytest.raises(CorruptLogError) as ei:
        _read(p)
    assert p in str(ei.value)


def test_single_missing_commit_after_checkpoint(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t", commits=7)
    helpers.commit_file(p, 5).unlink()
    with pytest.raises(CorruptLogError) as ei:
        _read(p)
    assert "5" in str(ei.value)
    assert helpers.canon_rows(_read(p, 4)) == _expected_rows(p, 4)


def test_time_travel_before_cleaned_up_log(tmp_path: pathlib.Path) -> None:
    p = _table_with_checkpoint(tmp_path / "t")
    expected = _expected_rows(p)
    for v in range(3):
        helpers.commit_file(p, v).unlink()
    assert helpers.canon_rows(_read(p)) == expected
    assert helpers.canon_rows(_read(p, 3)) == _expected_rows(p, 3)
    with pytest.raises(VersionNotFoundError):
        _read(p, 1)


def test_nonexistent_table(tmp_path: pathlib.Path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(TableNotFoundError) as ei:
        DeltaTable(missing)
    assert "nope" in str(ei.value)
    assert not DeltaTable.is_deltatable(missing)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "empty"))
    (tmp_path / "emptylog" / "_delta_log").mkdir(parents=True)
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "emptylog"))
    (tmp_path / "junklog" / "_delta_log").mkdir(parents=True)
    (tmp_path / "junklog" / "_delta_log" / "README.txt").write_text("hi")
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "junklog"))


def test_plain_file_is_not_a_table(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "file.parquet"
    pq.write_table(pa.table({"a": [1]}), f)
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(f))


@pytest.mark.parametrize("version", [3, 4, 100, -1])
def test_version_not_found(tmp_path: pathlib.Path, version: int) -> None:
    p = _make_table(tmp_path / "t", commits=3)
    with pytest.raises(VersionNotFoundError) as ei:
        DeltaTable(p, version=version)
    assert str(version) in str(ei.value)
    dt_ = DeltaTable(p)
    with pytest.raises(VersionNotFoundError):
        dt_.load_as_version(version)
    assert dt_.version() == 2  # a failed load leaves the table where it was


def test_timestamp_before_first_commit(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=2)
    t = DeltaTable(p)
    t.load_as_version("1990-01-01T00:00:00Z")  # deltalake's API loads the first commit (issue 24)
    assert t.version() == 0
    from deltakernel.kernel.snapshot import Snapshot

    with pytest.raises(VersionNotFoundError):  # delta-spark's resolution (the kernel default) refuses it
        Snapshot.load_at(t.snapshot.storage, "1990-01-01T00:00:00Z")


def test_no_protocol_or_metadata(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=1)
    actions = [a for a in helpers.read_actions(p, 0) if "metaData" not in a]
    helpers.write_actions(p, 0, actions)
    with pytest.raises(CorruptLogError, match="metaData"):
        _read(p)


def test_missing_table_dir_after_open(tmp_path: pathlib.Path) -> None:
    p = _make_table(tmp_path / "t", commits=1)
    dt_ = DeltaTable(p)
    shutil.rmtree(p)
    with pytest.raises(DeltaError):
        dt_.to_pyarrow_table()
    assert not os.path.exists(p)
