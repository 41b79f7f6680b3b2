"""The CLI (`deltakernel inspect uc://...`) and DataFusion (a table registered by its Unity Catalog name) on a
catalog-managed table of the UC test server, including a ratified commit not yet published."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from uc_server.fixtures import CATALOG, SCHEMA, UC_TOKEN, start_server

from deltakernel import DeltaTable, write_deltalake
from deltakernel.cli import main
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.committer import CatalogCommitter
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.operations.write.data_files import write_data

URI = f"uc://{CATALOG}.{SCHEMA}.t"


@pytest.fixture()
def uc(tmp_path: Path) -> Any:
    server = start_server(tmp_path)
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
    try:
        write_deltalake(URI, pa.table({"id": [1, 2, 3]}), storage_options=options)
        # one more commit ratified by the catalog and left unpublished (a writer that stopped before publishing)
        storage = DeltaTable(URI, storage_options=options)._storage
        snap = Snapshot.load(storage)
        txn = Transaction(storage, snap, operation="WRITE",
                          committer=CatalogCommitter(storage, storage.catalog, auto_publish=False))
        adds, _, _ = write_data(storage, iter(pa.table({"id": [4]}).to_batches()), snap.metadata, snap.protocol)
        txn.add_files(adds)
        assert txn.commit().version == 1
        yield server, options
    finally:
        server.stop()
    assert not server.errors, server.errors


def test_cli_inspect_by_name_from_the_environment(uc: Any, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    server, _ = uc
    monkeypatch.setenv("DATABRICKS_HOST", server.url)
    monkeypatch.setenv("DATABRICKS_TOKEN", UC_TOKEN)
    assert main(["inspect", URI, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 1 and out["managed_by"] == "catalog"
    assert out["catalog_table"] == f"{CATALOG}.{SCHEMA}.t" and out["catalog_latest_version"] == 1
    assert out["unpublished_versions"] == [1] and "catalogManaged" in out["reader_features"]
    assert main(["count", URI]) == 0
    assert capsys.readouterr().out.strip() == "4"
    assert main(["history", URI, "--json"]) == 0
    assert [h["version"] for h in json.loads(capsys.readouterr().out)] == [1, 0]


def test_cli_options_and_a_wrong_token(uc: Any, capsys: pytest.CaptureFixture[str]) -> None:
    server, _ = uc
    assert main(["inspect", URI, "-o", f"unity_catalog_url={server.url}", "-o", f"unity_catalog_token={UC_TOKEN}"]) == 0
    assert "unpublished_versions" in capsys.readouterr().out
    assert main(["inspect", URI, "-o", f"unity_catalog_url={server.url}", "-o", "unity_catalog_token=nope"]) == 1
    assert "UCAuthenticationError" in capsys.readouterr().err


def test_datafusion_register_by_name_query_and_dml(uc: Any) -> None:
    datafusion = pytest.importorskip("datafusion")
    import deltakernel.datafusion as dkdf

    _, options = uc
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "t", URI, storage_options=options)
    assert sorted(ctx.sql("SELECT id FROM t").to_arrow_table()["id"].to_pylist()) == [1, 2, 3, 4]
    dkdf.sql(ctx, "DELETE FROM t WHERE id = 2")  # committed through the catalog; the registration is re-pinned
    assert sorted(ctx.sql("SELECT id FROM t").to_arrow_table()["id"].to_pylist()) == [1, 3, 4]
    dt = DeltaTable(URI, storage_options=options)
    assert dt.version() == 2 and dt.history(1)[0]["operation"] == "DELETE"
