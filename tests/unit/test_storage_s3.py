"""ObjectStoreStorage against a moto S3 server on 127.0.0.1, plus memory:// and option mapping."""

from __future__ import annotations

import io
import threading
import time

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from deltakernel.errors import FileAlreadyExistsError, InvalidPathError, ObjectNotFoundError, StorageError
from deltakernel.storage import ObjectStoreStorage, Storage, storage_for_uri
from deltakernel.storage.object_store import split_storage_options

pytest.importorskip("moto")

try:  # pytest's default "prepend" import mode puts this directory on sys.path
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401


@pytest.fixture()
def s3(s3_bucket: str, s3_options: dict[str, str]) -> Storage:
    return storage_for_uri(f"s3://{s3_bucket}/table/", s3_options)


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, row_group_size=100)
    return buf.getvalue()


def test_root_uri_and_type(s3: Storage, s3_bucket: str) -> None:
    assert isinstance(s3, ObjectStoreStorage)
    assert s3.root_uri == f"s3://{s3_bucket}/table"
    assert s3.full_uri("_delta_log/x.json") == f"s3://{s3_bucket}/table/_delta_log/x.json"


def test_listing_order_prefix_and_start_after(s3: Storage) -> None:
    for v in (10, 2, 0, 1):
        s3.put_if_absent(f"_delta_log/{v:020d}.json", b"{}")
    s3.put_if_absent("_delta_log/00000000000000000001.checkpoint.parquet", b"x")
    s3.put_if_absent("_delta_log/_sidecars/a.parquet", b"s")
    s3.put_if_absent("part-0.parquet", b"d")
    keys = [m.key for m in s3.list_from("_delta_log/")]
    assert keys == [
        "_delta_log/00000000000000000000.json",
        "_delta_log/00000000000000000001.checkpoint.parquet",
        "_delta_log/00000000000000000001.json",
        "_delta_log/00000000000000000002.json",
        "_delta_log/00000000000000000010.json",
    ]
    after = [m.key for m in s3.list_from("_delta_log/", "_delta_log/00000000000000000001.json")]
    assert after == ["_delta_log/00000000000000000002.json", "_delta_log/00000000000000000010.json"]
    assert [m.key for m in s3.list_from("_delta_log/0000000000000000001")] == [
        "_delta_log/00000000000000000010.json"
    ]
    assert [m.key for m in s3.list_from("_delta_log/_s", recursive=True)] == [
        "_delta_log/_sidecars/a.parquet"
    ]
    assert [m.key for m in s3.list_from("")] == ["part-0.parquet"]
    assert len(list(s3.list_from("", recursive=True))) == 7
    assert list(s3.list_from("nothing/")) == []
    meta = next(s3.list_from("part-"))
    assert meta.size == 1 and abs(meta.last_modified_ms - time.time() * 1000) < 300_000


def test_read_ranges_head_exists(s3: Storage) -> None:
    s3.put_if_absent("a/b.bin", b"0123456789")
    assert s3.read("a/b.bin") == b"0123456789"
    assert s3.read("a/b.bin", 2, 5) == b"234"
    assert s3.read("a/b.bin", 7) == b"789"
    assert s3.read("a/b.bin", None, 3) == b"012"
    assert s3.read("a/b.bin", 8, 100) == b"89"
    assert s3.read("a/b.bin", 4, 4) == b""
    assert s3.read("a/b.bin", 10) == b"" and s3.read("a/b.bin", 12, 20) == b""
    s3.put_if_absent("a/empty", b"")
    assert s3.read("a/empty") == b"" and s3.read("a/empty", 0, 5) == b""
    meta = s3.head("a/b.bin")
    assert (meta.key, meta.size) == ("a/b.bin", 10)
    assert meta == next(s3.list_from("a/"))
    assert s3.exists("a/b.bin") and not s3.exists("a/nope")


def test_missing_objects(s3: Storage) -> None:
    with pytest.raises(ObjectNotFoundError, match="nope.json"):
        s3.read("_delta_log/nope.json")
    with pytest.raises(ObjectNotFoundError, match="nope.json"):
        s3.read("_delta_log/nope.json", 0, 10)
    with pytest.raises(ObjectNotFoundError, match="nope.json"):
        s3.head("_delta_log/nope.json")
    with pytest.raises(ObjectNotFoundError, match="nope.parquet"):
        s3.open_input_file("nope.parquet")
    s3.delete("never-existed")


def test_put_if_absent_conflict_and_delete(s3: Storage) -> None:
    key = "_delta_log/00000000000000000000.json"
    s3.put_if_absent(key, b"first")
    with pytest.raises(FileAlreadyExistsError):
        s3.put_if_absent(key, b"second")
    assert s3.read(key) == b"first"
    s3.delete(key)
    assert not s3.exists(key)
    s3.put_if_absent(key, b"again")
    assert s3.read(key) == b"again"


def test_put_if_absent_thread_race(s3: Storage) -> None:
    key = "_delta_log/00000000000000000007.json"
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            s3.put_if_absent(key, f"w{i}".encode())
            outcomes.append("won")
        except FileAlreadyExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]


def test_parquet_through_open_input_file_and_arrow_fs(s3: Storage) -> None:
    table = pa.table({"x": list(range(1000)), "s": [f"v{i}" for i in range(1000)]})
    s3.put_if_absent("part-00000.parquet", _parquet_bytes(table))
    f = s3.open_input_file("part-00000.parquet")
    pf = pq.ParquetFile(f)
    assert pf.metadata.num_rows == 1000 and pf.num_row_groups == 10
    assert pf.read_row_group(3).column("x").to_pylist() == list(range(300, 400))
    assert pf.read().equals(table)

    fs, base = s3.arrow_filesystem()
    assert pq.read_table(f"{base}/part-00000.parquet", filesystem=fs).equals(table)
    dataset = ds.dataset([f"{base}/part-00000.parquet"], filesystem=fs, format="parquet")
    assert dataset.to_table().num_rows == 1000
    # writing through the arrow filesystem (used later by writers)
    pq.write_table(table.slice(0, 5), f"{base}/written.parquet", filesystem=fs)
    assert pq.ParquetFile(s3.open_input_file("written.parquet")).read().num_rows == 5
    info = fs.get_file_info(f"{base}/written.parquet")
    assert info.size == s3.head("written.parquet").size


def test_child_shares_client(s3: Storage, s3_bucket: str) -> None:
    s3.put_if_absent("_delta_log/_sidecars/a", b"1")
    child = s3.child("_delta_log")
    assert child.root_uri == f"s3://{s3_bucket}/table/_delta_log"
    assert child.read("_sidecars/a") == b"1"
    assert [m.key for m in child.list_from("_sidecars/")] == ["_sidecars/a"]


def test_bucket_root_table(s3_bucket: str, s3_options: dict[str, str]) -> None:
    s = storage_for_uri(f"s3a://{s3_bucket}", s3_options)
    s.put_if_absent("_delta_log/00000000000000000000.json", b"{}")
    assert [m.key for m in s.list_from("_delta_log/")] == ["_delta_log/00000000000000000000.json"]
    fs, base = s.arrow_filesystem()
    assert fs.get_file_info(f"{base}/_delta_log/00000000000000000000.json").size == 2


def test_path_escape_refused(s3: Storage) -> None:
    with pytest.raises(InvalidPathError):
        s3.read("../other/x")
    with pytest.raises(InvalidPathError):
        s3.put_if_absent("a/../../x", b"1")


def test_memory_store_is_shared_per_process() -> None:
    a = storage_for_uri("memory:///dk-test-shared/t")
    a.put_if_absent("_delta_log/00000000000000000000.json", b"{}")
    b = storage_for_uri("memory://dk-test-shared/t/")
    assert b.read("_delta_log/00000000000000000000.json") == b"{}"
    with pytest.raises(FileAlreadyExistsError):
        b.put_if_absent("_delta_log/00000000000000000000.json", b"{}")
    assert [m.key for m in b.list_from("_delta_log/")] == ["_delta_log/00000000000000000000.json"]


def test_option_mapping() -> None:
    config, client, retry = split_storage_options(
        "s3",
        {
            "AWS_ENDPOINT_URL": "http://h:1",
            "aws_access_key_id": "k",
            "AWS_ALLOW_HTTP": "true",
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
            "AWS_CONDITIONAL_PUT": "etag",
            "azure_storage_account_name": "ignored-for-s3",
            "timeout": "30s",
            "max_retries": "3",
        },
    )
    assert config == {
        "aws_endpoint_url": "http://h:1",
        "aws_access_key_id": "k",
        "aws_conditional_put": "etag",
    }
    assert client == {"allow_http": "true", "timeout": "30s"}
    assert retry == {"max_retries": 3}
    config, client, _ = split_storage_options("gcs", {"google_service_account": "/x.json", "AWS_REGION": "x"})
    assert config == {"google_service_account": "/x.json"} and client == {}
    with pytest.raises(StorageError):
        storage_for_uri("s3://bucket/t", {"AWS_NOT_A_REAL_KEY": "1"})


def test_unconditional_put_overwrites(s3: Storage) -> None:
    assert isinstance(s3, ObjectStoreStorage)
    s3.put("_delta_log/_last_checkpoint", b"1")
    s3.put("_delta_log/_last_checkpoint", b"22")
    assert s3.read("_delta_log/_last_checkpoint") == b"22"
