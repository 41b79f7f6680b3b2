"""pytest fixtures: a fresh test catalog per test (started in a thread, stopped at teardown) and clients of it.

Import them into a conftest (`from uc_server.fixtures import uc_server, uc_client, ...`). Each server gets its own
SQLite file and storage root under `tmp_path`, catalog `main` and schema `default`, and accepts the bearer token
`UC_TOKEN`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from deltakernel.unity import UnityCatalogClient, resolve_config

from .server import UCTestServer

UC_TOKEN = "uc-test-token"
CATALOG, SCHEMA = "main", "default"


def start_server(tmp_path: Path, **kw: object) -> UCTestServer:
    root = tmp_path / "uc-storage"
    root.mkdir(parents=True, exist_ok=True)
    server = UCTestServer(str(tmp_path / "uc.sqlite"), root.as_uri(), tokens=(UC_TOKEN,), **kw).start()  # type: ignore[arg-type]
    if not server.store.has_catalog(CATALOG):
        server.create_catalog(CATALOG)
        server.create_schema(CATALOG, SCHEMA)
    return server


def client_for(server: UCTestServer, token: str | None = UC_TOKEN, sleep: Callable[[float], None] | None = None,
               **kw: object) -> UnityCatalogClient:
    """A client of `server` (5 s timeouts); retries back off through `sleep` (default: no wait)."""
    options = {"unity_catalog_url": server.url, "unity_catalog_timeout": "5", "unity_catalog_connect_timeout": "5"}
    if token is not None:
        options["unity_catalog_token"] = token
    return UnityCatalogClient(resolve_config(options, env={}), sleep=sleep or (lambda s: None),
                              **kw)  # type: ignore[arg-type]


@pytest.fixture()
def uc_server(tmp_path: Path) -> Iterator[UCTestServer]:
    server = start_server(tmp_path)
    try:
        yield server
    finally:
        server.stop()
    assert not server.errors, f"the test catalog failed while handling requests: {server.errors}"


@pytest.fixture()
def uc_client(uc_server: UCTestServer) -> UnityCatalogClient:
    return client_for(uc_server)
