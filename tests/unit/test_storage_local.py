"""LocalStorage and storage_for_uri: listing, ranges, put-if-absent races, path safety."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel.errors import FileAlreadyExistsError, InvalidPathError, ObjectNotFoundError, StorageError
from deltakernel.storage import LocalStorage, normalize_table_uri, storage_for_uri


@pytest.fixture()
def store(tmp_path: Path) -> LocalStorage:
    return LocalStorage(str(tmp_path / "table"))


def _keys(store: LocalStorage, prefix: str, start_after: str | None = None, **kw: bool) -> list[str]:
    return [m.key for m in store.list_from(prefix, start_after, **kw)]


def test_listing_order_prefix_and_start_after(store: LocalStorage) -> None:
    for v in (10, 2, 0, 1):
        store.put_if_absent(f"_delta_log/{v:020d}.json", b"{}")
    store.put_if_absent("_delta_log/00000000000000000001.checkpoint.parquet", b"x")
    store.put_if_absent("_delta_log/_last_checkpoint", b"{}")
    store.put_if_absent("_delta_log/_sidecars/a.parquet", b"s")
    store.put_if_absent("part-0.parquet", b"d")

    assert _keys(store, "_delta_log/") == [
        "_delta_log/00000000000000000000.json",
        "_delta_log/00000000000000000001.checkpoint.parquet",
        "_delta_log/00000000000000000001.json",
        "_delta_log/00000000000000000002.json",
        "_delta_log/00000000000000000010.json",
        "_delta_log/_last_checkpoint",
    ]
    assert _keys(store, "_delta_log/", "_delta_log/00000000000000000001.json") == [
        "_delta_log/00000000000000000002.json",
        "_delta_log/00000000000000000010.json",
        "_delta_log/_last_checkpoint",
    ]
    # a key prefix that is not a directory
    assert _keys(store, "_delta_log/0000000000000000000") == [
        "_delta_log/00000000000000000000.json",
        "_delta_log/00000000000000000001.checkpoint.parquet",
        "_delta_log/00000000000000000001.json",
        "_delta_log/00000000000000000002.json",
    ]
    assert _keys(store, "_delta_log/_s") == []
    assert _keys(store, "_delta_log/_s", recursive=True) == ["_delta_log/_sidecars/a.parquet"]
    assert _keys(store, "", recursive=True)[-1] == "part-0.parquet"
    assert "_delta_log/_sidecars/a.parquet" in _keys(store, "", recursive=True)
    assert _keys(store, "") == ["part-0.parquet"]
    assert _keys(store, "missing_dir/") == []
    meta = next(store.list_from("part-"))
    assert meta.size == 1 and abs(meta.last_modified_ms - time.time() * 1000) < 60_000


def test_read_ranges_and_head(store: LocalStorage) -> None:
    store.put_if_absent("a/b.bin", b"0123456789")
    assert store.read("a/b.bin") == b"0123456789"
    assert store.read("a/b.bin", 2, 5) == b"234"
    assert store.read("a/b.bin", 7) == b"789"
    assert store.read("a/b.bin", None, 3) == b"012"
    assert store.read("a/b.bin", 8, 100) == b"89"
    assert store.read("a/b.bin", 4, 4) == b""
    assert store.read("a/b.bin", 10) == b"" and store.read("a/b.bin", 12, 20) == b""
    store.put_if_absent("a/empty", b"")
    assert store.read("a/empty") == b"" and store.read("a/empty", 0, 5) == b""
    meta = store.head("a/b.bin")
    assert (meta.key, meta.size) == ("a/b.bin", 10)
    st = os.stat(store.full_uri("a/b.bin"))
    assert meta.last_modified_ms == st.st_mtime_ns // 1_000_000
    assert store.exists("a/b.bin") and not store.exists("a") and not store.exists("nope")


def test_missing_objects(store: LocalStorage) -> None:
    with pytest.raises(ObjectNotFoundError, match="nope.json"):
        store.read("_delta_log/nope.json")
    with pytest.raises(ObjectNotFoundError, match="nope.json"):
        store.head("_delta_log/nope.json")
    with pytest.raises(ObjectNotFoundError, match="nope.parquet"):
        store.open_input_file("nope.parquet")
    store.delete("never-existed")  # not an error


def test_put_if_absent_and_delete(store: LocalStorage) -> None:
    store.put_if_absent("_delta_log/00000000000000000000.json", b"first")
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent("_delta_log/00000000000000000000.json", b"second")
    assert store.read("_delta_log/00000000000000000000.json") == b"first"
    # no temp files left behind, and none listed
    assert os.listdir(os.path.join(store.root_path, "_delta_log")) == ["00000000000000000000.json"]
    store.delete("_delta_log/00000000000000000000.json")
    assert not store.exists("_delta_log/00000000000000000000.json")
    store.put_if_absent("_delta_log/00000000000000000000.json", b"again")
    assert store.read("_delta_log/00000000000000000000.json") == b"again"


def _race(root: str, key: str, ident: int, barrier: object, results: object) -> None:
    s = LocalStorage(root)
    barrier.wait()  # type: ignore[attr-defined]
    try:
        s.put_if_absent(key, f"writer-{ident}".encode() * 1000)
        results.put(("won", ident))  # type: ignore[attr-defined]
    except FileAlreadyExistsError:
        results.put(("lost", ident))  # type: ignore[attr-defined]


def test_put_if_absent_race_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn" if os.name == "nt" else "fork")
    root = str(tmp_path / "race")
    n = 8
    for round_ in range(3):
        key = f"_delta_log/{round_:020d}.json"
        barrier = ctx.Barrier(n)
        results = ctx.Queue()
        procs = [ctx.Process(target=_race, args=(root, key, i, barrier, results)) for i in range(n)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in range(n)]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        winners = [i for what, i in outcomes if what == "won"]
        assert len(winners) == 1, outcomes
        assert LocalStorage(root).read(key) == f"writer-{winners[0]}".encode() * 1000
    assert sorted(os.listdir(os.path.join(root, "_delta_log"))) == [f"{r:020d}.json" for r in range(3)]


@pytest.mark.parametrize("key", ["../x", "a/../../x", "/etc/passwd", "..", "a/b/../../../c"])
def test_path_escape_refused(store: LocalStorage, key: str) -> None:
    with pytest.raises(InvalidPathError):
        store.read(key)
    with pytest.raises(InvalidPathError):
        store.put_if_absent(key, b"x")
    with pytest.raises(InvalidPathError):
        store.child(key)


def test_dotdot_inside_root_is_allowed(store: LocalStorage) -> None:
    store.put_if_absent("a/x", b"1")
    assert store.read("b/../a/x") == b"1"


def test_open_input_file_parquet(store: LocalStorage) -> None:
    table = pa.table({"x": list(range(100)), "s": [str(i) for i in range(100)]})
    path = os.path.join(store.root_path, "f.parquet")
    os.makedirs(store.root_path, exist_ok=True)
    pq.write_table(table, path)
    with store.open_input_file("f.parquet") as f:
        assert pq.ParquetFile(f).read().equals(table)
    fs, base = store.arrow_filesystem()
    assert pq.read_table(f"{base}/f.parquet", filesystem=fs).equals(table)


def test_child(store: LocalStorage) -> None:
    store.put_if_absent("_delta_log/_sidecars/a", b"1")
    child = store.child("_delta_log/")
    assert child.root_uri == os.path.join(store.root_path, "_delta_log")
    assert child.read("_sidecars/a") == b"1"
    assert [m.key for m in child.list_from("_sidecars/")] == ["_sidecars/a"]


def test_storage_for_uri_local_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = storage_for_uri("rel/table/")
    assert isinstance(s, LocalStorage)
    assert s.root_uri == str(tmp_path / "rel" / "table")
    assert storage_for_uri(str(tmp_path) + "/t//").root_uri == str(tmp_path / "t")
    f = storage_for_uri(f"file://{tmp_path}/my%20table/")
    assert isinstance(f, LocalStorage) and f.root_uri == str(tmp_path / "my table")
    assert storage_for_uri(f"FILE://localhost{tmp_path}/x").root_uri == str(tmp_path / "x")
    assert normalize_table_uri("rel/t/") == str(tmp_path / "rel" / "t")
    assert normalize_table_uri(f"file://{tmp_path}/a%2Bb") == str(tmp_path / "a+b")
    with pytest.raises(InvalidPathError):
        storage_for_uri("file://otherhost/x")
    with pytest.raises(StorageError):
        storage_for_uri("ftp://host/x")


def test_normalize_object_store_uris() -> None:
    assert normalize_table_uri("s3://bucket/path/to/table/") == "s3://bucket/path/to/table"
    assert normalize_table_uri("S3A://bucket/t") == "s3a://bucket/t"
    assert normalize_table_uri("gs://b/") == "gs://b"
    assert (
        normalize_table_uri("abfss://c@acct.dfs.core.windows.net/t/")
        == "abfss://c@acct.dfs.core.windows.net/t"
    )
    assert normalize_table_uri("memory:///t/") == "memory:///t"
    assert normalize_table_uri("memory://t") == "memory:///t"


def test_unconditional_put_overwrites(store: LocalStorage) -> None:
    store.put("_delta_log/_last_checkpoint", b"1")
    store.put("_delta_log/_last_checkpoint", b"22")
    assert store.read("_delta_log/_last_checkpoint") == b"22"
    assert _keys(store, "_delta_log/") == ["_delta_log/_last_checkpoint"]
