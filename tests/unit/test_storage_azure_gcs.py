"""ObjectStoreStorage and Delta tables on the Azure Blob and GCS APIs, via emulators on 127.0.0.1.

Azure runs against Azurite; GCS against fake-gcs-server or gcp-storage-emulator (see
emulator_fixtures.py). Each GCS test names the obstore capability it needs, and skips, naming the
emulator's limitation, when the running emulator lacks it: neither GCS emulator implements the XML-API
object PUT that obstore uses, so on GCS the write path (and with it put-if-absent) is not exercised here.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest

import deltakernel
from deltakernel.errors import DeltaError, FileAlreadyExistsError, ObjectNotFoundError
from deltakernel.storage import ObjectStoreStorage, Storage, storage_for_uri

pytest.importorskip("obstore")

try:  # pytest's default "prepend" import mode puts this directory on sys.path
    from emulator_fixtures import (
        AZURITE_ACCOUNT,
        AZURITE_KEY,
        GcsEmulator,
        azure_container,
        azure_options,
        azurite_endpoint,
        gcs_bucket,
        gcs_emulator,
    )
except ImportError:  # pragma: no cover - when tests/ is a package
    from tests.unit.emulator_fixtures import (  # type: ignore[no-redef]  # noqa: F401
        AZURITE_ACCOUNT,
        AZURITE_KEY,
        GcsEmulator,
        azure_container,
        azure_options,
        azurite_endpoint,
        gcs_bucket,
        gcs_emulator,
    )


@dataclass
class Backend:
    name: str
    uri: str  # table root, e.g. az://container/table
    options: dict[str, str]
    #: write an object under the table root without relying on obstore's PUT (GCS: JSON-API upload)
    seed: Callable[[str, bytes], None]
    require: Callable[[str], None]

    def storage(self) -> Storage:
        return storage_for_uri(self.uri, self.options)


def _azure(request: pytest.FixtureRequest) -> Backend:
    container = request.getfixturevalue("azure_container")
    options = request.getfixturevalue("azure_options")
    uri = f"az://{container}/table"
    store = storage_for_uri(uri, options)
    return Backend("azure", uri, options, store.put, lambda cap: None)


def _gcs(request: pytest.FixtureRequest) -> Backend:
    emu: GcsEmulator = request.getfixturevalue("gcs_emulator")
    bucket = request.getfixturevalue("gcs_bucket")
    return Backend(
        "gcs",
        f"gs://{bucket}/table",
        emu.options(),
        lambda key, data: emu.upload(bucket, f"table/{key}", data),
        emu.require,
    )


@pytest.fixture(params=["azure", "gcs"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return _azure(request) if request.param == "azure" else _gcs(request)


# ------------------------------------------------------------------------------------ put-if-absent
def test_put_if_absent_conflict(backend: Backend) -> None:
    backend.require("put")
    s = backend.storage()
    assert isinstance(s, ObjectStoreStorage) and s.backend == backend.name
    key = "_delta_log/00000000000000000000.json"
    s.put_if_absent(key, b"first")
    backend.require("read")
    assert s.read(key) == b"first"
    # only a server that honours the create precondition can pass what follows
    backend.require("create_precondition")
    with pytest.raises(FileAlreadyExistsError):
        s.put_if_absent(key, b"second")
    assert s.read(key) == b"first"
    s.delete(key)
    assert not s.exists(key)
    s.put_if_absent(key, b"again")
    assert s.read(key) == b"again"


def test_put_if_absent_thread_race(backend: Backend) -> None:
    backend.require("put")
    backend.require("create_precondition")
    backend.require("read")
    s = backend.storage()
    key = "_delta_log/00000000000000000007.json"
    outcomes: dict[int, str] = {}
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            s.put_if_absent(key, f"writer-{i}".encode())
            outcomes[i] = "won"
        except FileAlreadyExistsError:
            outcomes[i] = "lost"

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, o in outcomes.items() if o == "won"]
    assert len(outcomes) == 8 and len(winners) == 1, outcomes
    assert s.read(key) == f"writer-{winners[0]}".encode()


# ------------------------------------------------------------------------------------ listing / reads
def test_listing_order_prefix_and_start_after(backend: Backend) -> None:
    backend.require("read")
    for v in (10, 2, 0, 1):
        backend.seed(f"_delta_log/{v:020d}.json", b"{}")
    backend.seed("_delta_log/00000000000000000001.checkpoint.parquet", b"x")
    backend.seed("_delta_log/_sidecars/a.parquet", b"s")
    backend.seed("part-0.parquet", b"d")
    s = backend.storage()
    assert [m.key for m in s.list_from("_delta_log/")] == [
        "_delta_log/00000000000000000000.json",
        "_delta_log/00000000000000000001.checkpoint.parquet",
        "_delta_log/00000000000000000001.json",
        "_delta_log/00000000000000000002.json",
        "_delta_log/00000000000000000010.json",
    ]
    after = [m.key for m in s.list_from("_delta_log/", "_delta_log/00000000000000000001.json")]
    assert after == ["_delta_log/00000000000000000002.json", "_delta_log/00000000000000000010.json"]
    assert [m.key for m in s.list_from("_delta_log/0000000000000000001")] == ["_delta_log/00000000000000000010.json"]
    assert [m.key for m in s.list_from("_delta_log/_s", recursive=True)] == ["_delta_log/_sidecars/a.parquet"]
    assert [m.key for m in s.list_from("")] == ["part-0.parquet"]
    assert len(list(s.list_from("", recursive=True))) == 7
    assert list(s.list_from("nothing/")) == []
    meta = next(s.list_from("part-"))
    assert meta.size == 1 and abs(meta.last_modified_ms - time.time() * 1000) < 300_000


def test_read_ranges_and_missing(backend: Backend) -> None:
    backend.require("read")
    backend.seed("a/b.bin", b"0123456789")
    s = backend.storage()
    assert s.read("a/b.bin") == b"0123456789"
    assert s.read("a/b.bin", 2, 5) == b"234"
    assert s.read("a/b.bin", 7) == b"789"
    assert s.read("a/b.bin", None, 3) == b"012"
    assert s.read("a/b.bin", 8, 100) == b"89"
    assert s.read("a/b.bin", 4, 4) == b""
    assert s.head("a/b.bin").size == 10
    assert s.exists("a/b.bin") and not s.exists("a/nope.bin")
    with pytest.raises(ObjectNotFoundError):
        s.read("a/nope.bin")
    with pytest.raises(ObjectNotFoundError):
        s.read("a/nope.bin", 0, 4)
    with s.open_input_file("a/b.bin") as f:
        f.seek(3)
        assert f.read(4) == b"3456"


# ------------------------------------------------------------------------------------ Delta tables
def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_delta_write_append_read(backend: Backend) -> None:
    """deltakernel.write_deltalake + append to the cloud URI, read back with deltakernel.DeltaTable."""
    backend.require("put")
    backend.require("create_precondition")
    backend.require("read")
    first = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"]})
    second = pa.table({"id": pa.array([4, 5], pa.int64()), "s": ["d", "e"]})
    deltakernel.write_deltalake(backend.uri, first, storage_options=backend.options)
    deltakernel.write_deltalake(backend.uri, second, mode="append", storage_options=backend.options)
    dt = deltakernel.DeltaTable(backend.uri, storage_options=backend.options)
    assert dt.version() == 1
    got = dt.to_pyarrow_table()
    assert _rows(got) == _rows(pa.concat_tables([first, second]))
    assert got.schema.field("id").type == pa.int64()
    assert (
        deltakernel.DeltaTable(backend.uri, version=0, storage_options=backend.options).to_pyarrow_table().num_rows == 3
    )
    # a writer that lost the race for version 2 must not overwrite the commit that won it
    log = backend.storage()
    log.put_if_absent("_delta_log/00000000000000000002.json", b'{"commitInfo":{}}\n')
    with pytest.raises(FileAlreadyExistsError):
        log.put_if_absent("_delta_log/00000000000000000002.json", b"other")
    with pytest.raises(DeltaError, match="already exists"):  # mode="error" on an existing table
        deltakernel.write_deltalake(backend.uri, first, storage_options=backend.options)


def test_delta_read_of_uploaded_table(backend: Backend, tmp_path: Path) -> None:
    """A table written locally, then its files uploaded object by object, reads the same from the cloud."""
    backend.require("read")
    local = str(tmp_path / "t")
    parts = [pa.table({"id": list(range(i * 10, i * 10 + 10)), "p": [f"p{i % 2}"] * 10}) for i in range(3)]
    for i, part in enumerate(parts):
        deltakernel.write_deltalake(local, part, partition_by=["p"], mode="error" if i == 0 else "append")
    for dirpath, _, names in os.walk(local):
        for name in names:
            full = os.path.join(dirpath, name)
            key = os.path.relpath(full, local).replace(os.sep, "/")
            with open(full, "rb") as fh:
                backend.seed(key, fh.read())
    dt = deltakernel.DeltaTable(backend.uri, storage_options=backend.options)
    assert dt.version() == 2
    assert _rows(dt.to_pyarrow_table()) == _rows(deltakernel.DeltaTable(local).to_pyarrow_table())
    assert _rows(dt.to_pyarrow_table(filters=[("p", "=", "p1")])) == _rows(parts[1])


# ------------------------------------------------------------------------------------ Azure options
def test_azure_use_emulator_option(
    azure_container: str, azurite_endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deltalake's AZURE_STORAGE_USE_EMULATOR reaches obstore (Azurite URL from AZURITE_BLOB_STORAGE_URL)."""
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", azurite_endpoint.rsplit("/", 1)[0])
    s = storage_for_uri(f"abfs://{azure_container}/t", {"AZURE_STORAGE_USE_EMULATOR": "true"})
    s.put_if_absent("k", b"v")
    with pytest.raises(FileAlreadyExistsError):
        s.put_if_absent("k", b"w")
    # the same object through the explicit-endpoint configuration
    other = storage_for_uri(
        f"az://{azure_container}/t",
        {
            "azure_storage_account_name": AZURITE_ACCOUNT,
            "azure_storage_account_key": AZURITE_KEY,
            "azure_endpoint": azurite_endpoint,
            "azure_allow_http": "true",
        },
    )
    assert other.read("k") == b"v"


def test_azure_wrong_key_is_an_error(azure_container: str, azure_options: dict[str, str]) -> None:
    """Shared-key auth is really checked (the emulator is not accepting anything)."""
    bad = dict(azure_options, AZURE_STORAGE_ACCOUNT_KEY="AAAA" + azure_options["AZURE_STORAGE_ACCOUNT_KEY"][4:])
    s = storage_for_uri(f"az://{azure_container}/table", bad)
    with pytest.raises(Exception) as info:
        s.put_if_absent("x", b"1")
    assert not isinstance(info.value, FileAlreadyExistsError)
    assert "403" in str(info.value) or "auth" in str(info.value).lower()
