"""Shared S3 fixtures: a moto server on loopback only, and a fresh bucket per test.

Import the fixtures into a test module (`from s3_fixtures import moto_endpoint, s3_options`); the
lead owns `tests/conftest.py`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

_ATOMIC = threading.Lock()


def make_conditional_writes_atomic() -> None:
    """S3 decides a conditional PUT (`If-None-Match: *`, `If-Match`) atomically; moto's threaded server checks the
    key, then writes it, with no lock between, so two concurrent put-if-absent writes of one key can both succeed
    (seen: two writers both committed version 33 of a table under load). Delta's commit protocol rests on that
    atomicity, so the emulator is made to honour it: its key PUT and POST handlers run one at a time."""
    from moto.s3.responses import S3Response

    for name in ("put_object", "_key_response_post"):
        original = getattr(S3Response, name)
        if getattr(original, "_dk_atomic", False):
            continue

        def atomic(self: object, *args: object, _original: object = original, **kwargs: object) -> object:
            with _ATOMIC:
                return _original(self, *args, **kwargs)  # type: ignore[operator]

        atomic._dk_atomic = True  # type: ignore[attr-defined]
        setattr(S3Response, name, atomic)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """http://127.0.0.1:PORT of a moto S3 server for the whole session (never binds other interfaces), with
    atomic conditional writes as S3 has (`make_conditional_writes_atomic`)."""
    server_mod = pytest.importorskip("moto.server")
    make_conditional_writes_atomic()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def _create_bucket(endpoint: str, bucket: str) -> None:
    """Create a bucket with a boto3 (or a bare PUT); moto accepts any credentials."""
    try:
        import boto3
    except ImportError:  # pragma: no cover - boto3 comes with moto
        import urllib.request

        req = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT")
        urllib.request.urlopen(req).close()
        return
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=bucket)


@pytest.fixture()
def s3_bucket(moto_endpoint: str) -> str:
    """A new, empty bucket name."""
    bucket = f"dk-{uuid.uuid4().hex[:16]}"
    _create_bucket(moto_endpoint, bucket)
    return bucket


@pytest.fixture()
def s3_options(moto_endpoint: str) -> dict[str, str]:
    """deltalake-style storage_options pointing at the moto server."""
    return {
        "AWS_ENDPOINT_URL": moto_endpoint,
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
