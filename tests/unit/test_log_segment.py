"""Log segment selection (PROTOCOL.md "Checkpoints", "Last Checkpoint File") and the `_last_checkpoint`
checksum. Listing-only cases use empty placeholder files: segment selection never opens them."""

from __future__ import annotations

import json
import pathlib
import sys
import uuid

import pyarrow as pa
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import helpers

from deltakernel.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from deltakernel.kernel.log.segment import build_log_segment, last_checkpoint_checksum, read_last_checkpoint
from deltakernel.storage import LocalStorage

# ----------------------------------------------------------------------------- checksum


def test_protocol_checksum_example() -> None:
    obj = json.loads(
        '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", '
        '"k1":{"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
    )
    assert last_checkpoint_checksum(obj) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


def test_checksum_ignores_key_order_and_checksum_field() -> None:
    a = {"version": 10, "size": 3, "parts": 2, "sizeInBytes": 100}
    b = {"sizeInBytes": 100, "parts": 2, "checksum": "whatever", "size": 3, "version": 10}
    assert last_checkpoint_checksum(a) == last_checkpoint_checksum(b)
    c = dict(a, size=4)
    assert last_checkpoint_checksum(a) != last_checkpoint_checksum(c)


def test_checksum_only_top_level_checksum_excluded() -> None:
    a = {"version": 1, "tags": {"checksum": "x"}}
    b = {"version": 1, "tags": {"checksum": "y"}}
    assert last_checkpoint_checksum(a) != last_checkpoint_checksum(b)


def _touch(root: pathlib.Path, *names: str) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    for n in names:
        (log / n).write_bytes(b"")


def _c(v: int) -> str:
    return f"{v:020d}.json"


def _cp(v: int) -> str:
    return f"{v:020d}.checkpoint.parquet"


def _mp(v: int, part: int, parts: int) -> str:
    return f"{v:020d}.checkpoint.{part:010d}.{parts:010d}.parquet"


def _v2(v: int, ext: str = "parquet", u: str | None = None) -> str:
    return f"{v:020d}.checkpoint.{u or uuid.uuid4()}.{ext}"


def _hint(root: pathlib.Path, obj: dict, with_checksum: bool = True) -> None:
    if with_checksum:
        obj = dict(obj, checksum=last_checkpoint_checksum(obj))
    (root / "_delta_log" / "_last_checkpoint").write_text(json.dumps(obj))


def _seg(root: pathlib.Path, version: int | None = None):  # type: ignore[no-untyped-def]
    return build_log_segment(LocalStorage(str(root)), version)


def _names(metas) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.key.rsplit("/", 1)[-1] for m in metas]


def test_read_last_checkpoint_checksum(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, _c(0))
    _hint(tmp_path, {"version": 0, "size": 1})
    assert read_last_checkpoint(LocalStorage(str(tmp_path)))["version"] == 0  # type: ignore[index]
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 0, "size": 1,
                                                                          "checksum": "bad"}))
    assert read_last_checkpoint(LocalStorage(str(tmp_path))) is None
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 0, "size": 1}))
    assert read_last_checkpoint(LocalStorage(str(tmp_path)))["version"] == 0  # type: ignore[index]


# ----------------------------------------------------------------------------- selection


def test_commits_only(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(5)])
    seg = _seg(tmp_path)
    assert seg.version == 4 and seg.checkpoint is None
    assert seg.commit_versions == [0, 1, 2, 3, 4]
    seg = _seg(tmp_path, 2)
    assert seg.version == 2 and seg.commit_versions == [0, 1, 2]


def test_newest_classic_checkpoint_at_or_below_version(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(11)], _cp(5), _cp(8))
    seg = _seg(tmp_path)
    assert seg.version == 10
    assert seg.checkpoint is not None and seg.checkpoint.version == 8 and seg.checkpoint.kind == "classic"
    assert seg.commit_versions == [9, 10]
    seg = _seg(tmp_path, 8)
    assert seg.checkpoint.version == 8 and seg.commit_versions == []  # type: ignore[union-attr]
    seg = _seg(tmp_path, 7)
    assert seg.checkpoint.version == 5 and seg.commit_versions == [6, 7]  # type: ignore[union-attr]
    seg = _seg(tmp_path, 4)
    assert seg.checkpoint is None and seg.commit_versions == [0, 1, 2, 3, 4]


def test_hint_used_and_time_travel_before_hinted_checkpoint(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(11)], _cp(5), _cp(8))
    _hint(tmp_path, {"version": 8, "size": 10})
    assert _seg(tmp_path).checkpoint.version == 8  # type: ignore[union-attr]
    seg = _seg(tmp_path, 6)
    assert seg.version == 6 and seg.checkpoint.version == 5 and seg.commit_versions == [6]  # type: ignore[union-attr]
    seg = _seg(tmp_path, 3)
    assert seg.checkpoint is None and seg.commit_versions == [0, 1, 2, 3]


def test_stale_hint_still_finds_newer_checkpoint(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(11)], _cp(5), _cp(8))
    _hint(tmp_path, {"version": 5, "size": 10})
    seg = _seg(tmp_path)
    assert seg.checkpoint.version == 8 and seg.commit_versions == [9, 10]  # type: ignore[union-attr]


def test_time_travel_before_last_checkpoint_after_cleanup(tmp_path: pathlib.Path) -> None:
    # commits 0..4 cleaned up; checkpoints at 5 and 8
    _touch(tmp_path, *[_c(v) for v in range(5, 11)], _cp(5), _cp(8))
    _hint(tmp_path, {"version": 8, "size": 10})
    seg = _seg(tmp_path, 7)
    assert seg.checkpoint.version == 5 and seg.commit_versions == [6, 7]  # type: ignore[union-attr]
    seg = _seg(tmp_path, 5)
    assert seg.checkpoint.version == 5 and seg.commit_versions == []  # type: ignore[union-attr]
    with pytest.raises(VersionNotFoundError):
        _seg(tmp_path, 4)


def test_checkpoint_without_its_commit(tmp_path: pathlib.Path) -> None:
    """The commit at the checkpoint version may be cleaned up; the checkpoint alone holds the state."""
    _touch(tmp_path, _cp(10), _c(11), _c(12))
    seg = _seg(tmp_path)
    assert seg.version == 12 and seg.checkpoint.version == 10  # type: ignore[union-attr]
    assert seg.commit_versions == [11, 12]
    seg = _seg(tmp_path, 10)
    assert seg.version == 10 and seg.commit_versions == []


def test_multipart_only_when_complete(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(13)],
           _mp(8, 1, 2), _mp(8, 2, 2),  # complete
           _mp(10, 1, 3), _mp(10, 3, 3))  # part 2 missing
    seg = _seg(tmp_path)
    assert seg.checkpoint is not None and seg.checkpoint.version == 8 and seg.checkpoint.kind == "multipart"
    assert _names(seg.checkpoint.files) == [_mp(8, 1, 2), _mp(8, 2, 2)]
    assert seg.commit_versions == [9, 10, 11, 12]


def test_incomplete_multipart_named_by_hint_is_ignored(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(13)], _cp(4), _mp(10, 1, 3), _mp(10, 3, 3))
    _hint(tmp_path, {"version": 10, "size": 10, "parts": 3})
    seg = _seg(tmp_path)
    assert seg.checkpoint.version == 4 and seg.commit_versions == list(range(5, 13))  # type: ignore[union-attr]


def test_multipart_two_part_counts_same_version(tmp_path: pathlib.Path) -> None:
    """Two multi-part checkpoints at one version (different writers): the complete one is used."""
    _touch(tmp_path, *[_c(v) for v in range(8)], _mp(6, 1, 2), _mp(6, 1, 3), _mp(6, 2, 3), _mp(6, 3, 3))
    seg = _seg(tmp_path)
    assert seg.checkpoint.version == 6  # type: ignore[union-attr]
    assert _names(seg.checkpoint.files) == [_mp(6, 1, 3), _mp(6, 2, 3), _mp(6, 3, 3)]  # type: ignore[union-attr]


def test_incomplete_multipart_without_commits_is_error(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, _mp(10, 1, 2), _c(11))
    with pytest.raises((CorruptLogError, VersionNotFoundError)):
        _seg(tmp_path)


@pytest.mark.parametrize("ext", ["parquet", "json"])
def test_v2_uuid_checkpoint_preferred(tmp_path: pathlib.Path, ext: str) -> None:
    v2 = _v2(8, ext)
    _touch(tmp_path, *[_c(v) for v in range(10)], _cp(8), _mp(8, 1, 1), v2)
    seg = _seg(tmp_path)
    assert seg.checkpoint is not None and seg.checkpoint.kind == "v2"
    assert _names(seg.checkpoint.files) == [v2]
    assert seg.commit_versions == [9]


def test_v2_classic_name_and_newer_uuid(tmp_path: pathlib.Path) -> None:
    """A V2 table may also write a classic-named checkpoint; the newest version wins regardless of kind."""
    v2 = _v2(5)
    _touch(tmp_path, *[_c(v) for v in range(10)], v2, _cp(8))
    assert _seg(tmp_path).checkpoint.version == 8  # type: ignore[union-attr]
    seg = _seg(tmp_path, 7)
    assert seg.checkpoint.kind == "v2" and seg.checkpoint.version == 5  # type: ignore[union-attr]


def test_ignores_unrelated_files(tmp_path: pathlib.Path) -> None:
    _touch(
        tmp_path,
        *[_c(v) for v in range(4)],
        f"{3:020d}.crc",
        f"{2:020d}.json.tmp",
        f".{4:020d}.json.crc",
        f"{4:020d}.json.6e1e3b1c.tmp",
        f"{1:020d}.{3:020d}.compacted.json",
        "README.md",
        f"{9:020d}.checkpoint.parquet.crc",
        "_last_vacuum_info",
    )
    (tmp_path / "_delta_log" / "_commits").mkdir()
    (tmp_path / "_delta_log" / "_commits" / f"{7:020d}.{uuid.uuid4()}.json").write_bytes(b"")
    seg = _seg(tmp_path)
    assert seg.version == 3 and seg.checkpoint is None and seg.commit_versions == [0, 1, 2, 3]


def test_gap_after_checkpoint(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(10) if v != 7], _cp(5))
    with pytest.raises(CorruptLogError, match="7"):
        _seg(tmp_path)
    assert _seg(tmp_path, 6).commit_versions == [6]


def test_gap_without_checkpoint(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, _c(0), _c(1), _c(3))
    with pytest.raises(CorruptLogError, match="2"):
        _seg(tmp_path)


@pytest.mark.parametrize("version", [5, 6, 1000, -1])
def test_version_out_of_range(tmp_path: pathlib.Path, version: int) -> None:
    _touch(tmp_path, *[_c(v) for v in range(5)])
    with pytest.raises(VersionNotFoundError):
        _seg(tmp_path, version)


def test_empty_log(tmp_path: pathlib.Path) -> None:
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(TableNotFoundError):
        _seg(tmp_path)


def test_hint_beyond_listing(tmp_path: pathlib.Path) -> None:
    _touch(tmp_path, *[_c(v) for v in range(4)], _cp(2))
    _hint(tmp_path, {"version": 20, "size": 1})
    seg = _seg(tmp_path)
    assert seg.version == 3 and seg.checkpoint.version == 2 and seg.commit_versions == [3]  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- with a real table


def test_real_table_segment_and_time_travel(tmp_path: pathlib.Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    from deltakernel.table import DeltaTable

    p = str(tmp_path / "t")
    for k in range(12):
        deltalake.write_deltalake(p, pa.table({"x": [k]}), mode="append",
                                  configuration={"delta.checkpointInterval": "5"} if k == 0 else None)
    cps = sorted(f.name for f in helpers.log_dir(p).glob("*.checkpoint*.parquet"))
    assert cps, "deltalake wrote no checkpoints"
    last_cp = max(int(n[:20]) for n in cps)
    storage = LocalStorage(p)
    seg = build_log_segment(storage)
    assert seg.checkpoint is not None and seg.checkpoint.version == last_cp
    assert seg.commit_versions == list(range(last_cp + 1, 12))
    # time travel to a version before the last checkpoint reads exactly the first v+1 appends
    for v in (0, last_cp - 1, last_cp, 11):
        got = sorted(DeltaTable(p, version=v).to_pyarrow_table().column("x").to_pylist())
        assert got == list(range(v + 1)), v
