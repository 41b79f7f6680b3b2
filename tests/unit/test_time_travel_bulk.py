"""Time travel over many JSON commits: version 500 of a 1,000-commit log whose only checkpoint (600) is
past the target and named by `_last_checkpoint`; bulk commit reads; bounded listing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deltakernel import DeltaTable
from deltakernel.errors import CorruptLogError, ObjectNotFoundError, VersionNotFoundError
from deltakernel.storage import storage_for_uri

try:
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401

N_COMMITS = 1000
CHECKPOINT_AT = 600
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "part", "type": "string", "nullable": True, "metadata": {}},
]})


def _path(v: int, i: int) -> str:
    return f"part={v % 7}/f-{v:04d}-{i}.parquet"


def _commit(v: int) -> list[dict]:
    out: list[dict] = [{"commitInfo": {"timestamp": 1_700_000_000_000 + v, "operation": "WRITE"}}]
    if v == 0:
        out.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        out.append({"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                                 "schemaString": SCHEMA, "partitionColumns": ["part"], "configuration": {}}})
    for i in range(2):
        out.append({"add": {"path": _path(v, i), "partitionValues": {"part": str(v % 7)}, "size": 100 + v,
                            "modificationTime": v, "dataChange": True,
                            "stats": json.dumps({"numRecords": 1, "minValues": {"id": v}, "maxValues": {"id": v}})}})
    if v >= 3:  # remove an older file, and re-add one removed earlier under a new commit (newest wins)
        out.append({"remove": {"path": _path(v - 3, 0), "deletionTimestamp": v, "dataChange": True}})
    if v >= 10 and v % 10 == 0:
        out.append({"add": {"path": _path(v - 7, 0), "partitionValues": {"part": str((v - 7) % 7)}, "size": 1,
                            "modificationTime": v, "dataChange": True}})
    if v % 50 == 0:
        out.append({"txn": {"appId": "app", "version": v}})
    return out


def _expected_files(version: int) -> set[str]:
    """An independent replay in plain Python: apply every action in log order."""
    live: set[str] = set()
    for v in range(version + 1):
        for a in _commit(v):
            if "add" in a:
                live.add(a["add"]["path"])
            elif "remove" in a:
                live.discard(a["remove"]["path"])
    return live


@pytest.fixture(scope="module")
def long_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path_factory.mktemp("tt") / "t"
    log = root / "_delta_log"
    log.mkdir(parents=True)

    def write(v: int) -> None:
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in _commit(v)) + "\n")

    for v in range(CHECKPOINT_AT + 1):
        write(v)
    deltalake.DeltaTable(str(root)).create_checkpoint()  # checkpoint 600 + _last_checkpoint
    for v in range(CHECKPOINT_AT + 1, N_COMMITS):
        write(v)
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == CHECKPOINT_AT
    return root


@pytest.mark.parametrize("version", [0, 1, 499, 500, 599, 600, 601, 999])
def test_version_load_equals_independent_replay(long_log: Path, version: int) -> None:
    dt = DeltaTable(str(long_log), version=version)
    assert dt.version() == version
    assert set(dt.files()) == _expected_files(version)
    assert len(dt.files()) == len(_expected_files(version))


def test_version_500_matches_deltalake(long_log: Path) -> None:
    import deltalake
    import pyarrow as pa

    ref = pa.table(deltalake.DeltaTable(str(long_log), version=500).get_add_actions(flatten=True))
    assert sorted(DeltaTable(str(long_log), version=500).files()) == sorted(ref.column("path").to_pylist())


def test_time_travel_load_does_not_import_pandas(long_log: Path) -> None:
    """pyarrow imports pandas (0.1-0.9 s) on its first Python-object conversion; the load path avoids it."""
    code = (
        "import sys\nfrom deltakernel import DeltaTable\n"
        f"dt = DeltaTable({str(long_log)!r}, version=500)\n"
        "assert len(dt.files()) > 0\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_bounded_listing_keeps_errors(long_log: Path, tmp_path: Path) -> None:
    with pytest.raises(VersionNotFoundError, match="latest is 999"):
        DeltaTable(str(long_log), version=1000)
    # a gap below the target is still found when only the prefix up to the target is listed
    import shutil

    copy = tmp_path / "t"
    shutil.copytree(long_log, copy)
    (copy / "_delta_log" / f"{250:020d}.json").unlink()
    with pytest.raises(CorruptLogError, match="250"):
        DeltaTable(str(copy), version=500)
    assert DeltaTable(str(copy), version=700).version() == 700  # the checkpoint at 600 covers the gap


def test_list_range_and_read_many_local(tmp_path: Path) -> None:
    s = storage_for_uri(str(tmp_path))
    for k in ("a/1", "a/2", "a/3", "a/sub/4", "b/1"):
        s.put_if_absent(k, k.encode())
    assert [m.key for m in s.list_range("a/", start_after="a/1", end_before="a/3")] == ["a/2"]
    assert [m.key for m in s.list_range("a/")] == ["a/1", "a/2", "a/3"]
    assert s.read_many(["a/3", "a/1", "b/1"]) == [b"a/3", b"a/1", b"b/1"]
    with pytest.raises(ObjectNotFoundError):
        s.read_many(["a/1", "missing"])


def test_list_range_and_read_many_s3(s3_bucket: str, s3_options: dict[str, str]) -> None:
    s = storage_for_uri(f"s3://{s3_bucket}/t", s3_options)
    keys = [f"_delta_log/{v:020d}.json" for v in range(40)] + ["_delta_log/_last_checkpoint", "x/1"]
    for k in keys:
        s.put_if_absent(k, k.encode())
    got = s.list_range("_delta_log/", start_after=None, end_before=f"_delta_log/{20:020d}")
    assert [m.key for m in got] == keys[:20]
    assert s.read_many(keys[:25]) == [k.encode() for k in keys[:25]]
    with pytest.raises(ObjectNotFoundError):
        s.read_many([*keys[:10], "_delta_log/nope.json"])
