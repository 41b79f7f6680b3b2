"""Unity Catalog tables by name on Spark (classic and Connect), configured as delta-spark users configure it
(`spark.sql.catalog.<name>=io.unitycatalog.spark.UCSingleCatalog`, `.uri`, `.token`), against the UC test server:
reads through the catalog's log tail (a ratified, unpublished commit included), SQL, INSERT, saveAsTable, DELETE /
UPDATE / MERGE, OPTIMIZE, history, time travel - every commit ratified by the catalog.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from uc_server.fixtures import CATALOG, SCHEMA, UC_TOKEN, start_server

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.committer import CatalogCommitter
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.operations.write.data_files import write_data
from deltakernel.unity.tables import forget_catalog

NAME = f"{CATALOG}.{SCHEMA}.t"
URI = f"uc://{NAME}"


@pytest.fixture()
def uc(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    server = start_server(tmp_path)
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
    base = f"spark.sql.catalog.{CATALOG}"
    confs = {base: "io.unitycatalog.spark.UCSingleCatalog", f"{base}.uri": server.url, f"{base}.token": UC_TOKEN}
    for k, v in confs.items():
        spark.conf.set(k, v)
    # Spark Connect redacts conf values of keys naming a token: the client process has it in its environment
    monkeypatch.setenv("UNITY_CATALOG_TOKEN", UC_TOKEN)
    try:
        write_deltalake(URI, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), storage_options=options)
        yield server, options
    finally:
        for k in confs:
            spark.conf.unset(k)
        # the process remembers a Spark catalog's options for `uc://<name>` opens; the next test's server differs
        forget_catalog(CATALOG)
        server.stop()
    assert not server.errors, server.errors


def _ids(frame: Any) -> list[int]:
    return sorted(r.id for r in frame.collect())


def _ratified(server: Any, options: dict[str, str]) -> list[int]:
    table_id = DeltaTable(URI, storage_options=options).metadata().configuration["io.unitycatalog.tableId"]
    return [v for v, _ in server.store.ratified(table_id)]


def test_read_write_dml_by_name(spark: Any, uc: Any) -> None:
    import deltakernel.spark as dks

    server, options = uc
    assert _ids(spark.table(NAME)) == [1, 2, 3]
    assert spark.sql(f"SELECT count(*) AS c FROM {NAME} WHERE id > 1").collect()[0].c == 2
    spark.sql(f"INSERT INTO {NAME} VALUES (4)").collect()
    spark.createDataFrame([(5,)], "id long").write.format("delta").mode("append").saveAsTable(NAME)
    assert spark.sql(f"DELETE FROM {NAME} WHERE id = 2").collect()[0].num_affected_rows == 1
    spark.sql(f"UPDATE {NAME} SET id = id + 100 WHERE id = 3").collect()
    spark.sql(f"MERGE INTO {NAME} t USING (SELECT 6 AS id) s ON t.id = s.id "
              "WHEN NOT MATCHED THEN INSERT *").collect()
    assert _ids(spark.table(NAME)) == [1, 4, 5, 6, 103]
    spark.sql(f"OPTIMIZE {NAME}").collect()
    hist = dks.DeltaTable.forName(spark, NAME).history().collect()
    assert [h.operation for h in sorted(hist, key=lambda h: h.version)] == [
        "WRITE", "WRITE", "WRITE", "DELETE", "UPDATE", "MERGE", "OPTIMIZE"]
    assert _ratified(server, options) == [1, 2, 3, 4, 5, 6]  # each commit after version 0 ratified once
    assert _ids(spark.read.format("delta").option("versionAsOf", 1).load(URI)) == [1, 2, 3, 4]
    assert _ids(spark.sql(f"SELECT * FROM {NAME} VERSION AS OF 2")) == [1, 2, 3, 4, 5]


def test_unpublished_commit_is_read_through_the_log_tail(spark: Any, uc: Any) -> None:
    """A commit the catalog ratified but nobody published yet (`_delta_log/1.json` absent) is in Spark's reads."""
    _, options = uc
    storage = DeltaTable(URI, storage_options=options)._storage
    snap = Snapshot.load(storage)
    txn = Transaction(storage, snap, operation="WRITE",
                      committer=CatalogCommitter(storage, storage.catalog, auto_publish=False))
    adds, _, _ = write_data(storage, iter(pa.table({"id": pa.array([7], pa.int64())}).to_batches()),
                            snap.metadata, snap.protocol)
    txn.add_files(adds)
    assert txn.commit().version == 1
    assert not storage.exists(f"_delta_log/{1:020d}.json")
    assert _ids(spark.table(NAME)) == [1, 2, 3, 7]
    assert spark.sql(f"SELECT count(*) AS c FROM {NAME}").collect()[0].c == 4


def test_create_tables_by_name(spark: Any, uc: Any) -> None:
    """saveAsTable of a new name, CREATE TABLE and CTAS make MANAGED catalog-managed tables in the catalog."""
    from uc_server.fixtures import client_for

    server, options = uc
    spark.createDataFrame([(1,)], "id long").write.format("delta").saveAsTable(f"{CATALOG}.{SCHEMA}.n1")
    spark.sql(f"CREATE TABLE {CATALOG}.{SCHEMA}.n2 (id long) USING delta").collect()
    spark.sql(f"CREATE TABLE {CATALOG}.{SCHEMA}.n3 USING delta AS SELECT CAST(5 AS BIGINT) AS id").collect()
    spark.sql(f"INSERT INTO {CATALOG}.{SCHEMA}.n2 VALUES (2)").collect()
    assert [_ids(spark.table(f"{CATALOG}.{SCHEMA}.{n}")) for n in ("n1", "n2", "n3")] == [[1], [2], [5]]
    client = client_for(server)
    for n in ("n1", "n2", "n3"):
        assert client.load_table(CATALOG, SCHEMA, n).metadata.table_type == "MANAGED"
        proto = DeltaTable(f"uc://{CATALOG}.{SCHEMA}.{n}", storage_options=options).protocol()
        assert "catalogManaged" in proto.reader_features
    with pytest.raises(Exception, match="LOCATION is not supported"):
        spark.sql(f"CREATE TABLE {CATALOG}.{SCHEMA}.n4 (id long) USING delta LOCATION '/tmp/x'").collect()
