"""Unity Catalog tables by name on Spark (classic and Connect), configured as delta-spark users configure it
(`spark.sql.catalog.<name>=io.unitycatalog.spark.UCSingleCatalog`, `.uri`, `.token`), against the UC test server:
reads through the catalog's log tail (a ratified, unpublished commit included), SQL, INSERT, saveAsTable, DELETE /
UPDATE / MERGE, OPTIMIZE, history, time travel - every commit ratified by the catalog.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
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


@contextlib.contextmanager
def _catalog_on_session(spark: Any, server: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The UC test server configured as catalog CATALOG on the session, as delta-spark users configure it; on exit
    the confs are unset, the process forgets the catalog and the server stops (its errors are asserted after)."""
    base = f"spark.sql.catalog.{CATALOG}"
    confs = {base: "io.unitycatalog.spark.UCSingleCatalog", f"{base}.uri": server.url, f"{base}.token": UC_TOKEN}
    for k, v in confs.items():
        spark.conf.set(k, v)
    # Spark Connect redacts conf values of keys naming a token: the client process has it in its environment
    monkeypatch.setenv("UNITY_CATALOG_TOKEN", UC_TOKEN)
    try:
        yield
    finally:
        for k in confs:
            spark.conf.unset(k)
        # the process remembers a Spark catalog's options for `uc://<name>` opens; the next test's server differs
        forget_catalog(CATALOG)
        server.stop()


@pytest.fixture()
def uc(spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    server = start_server(tmp_path)
    options = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
    with _catalog_on_session(spark, server, monkeypatch):
        write_deltalake(URI, pa.table({"id": pa.array([1, 2, 3], pa.int64())}), storage_options=options)
        yield server, options
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


def test_show_drop_describe_on_the_catalog(spark: Any, uc: Any) -> None:
    """SHOW TABLES / DROP TABLE / DESCRIBE TABLE on a UC catalog Spark has no plugin class for: answered from the
    catalog (listTables, deleteTable) and the table's log, with delta-spark + UC's result shapes."""
    from uc_server.fixtures import client_for

    server, _ = uc
    spark.sql(f"CREATE TABLE {CATALOG}.{SCHEMA}.other (id long) USING delta").collect()
    shown = spark.sql(f"SHOW TABLES IN {CATALOG}.{SCHEMA}").collect()
    assert [(r.namespace, r.tableName, r.isTemporary) for r in shown] == [(SCHEMA, "other", False),
                                                                          (SCHEMA, "t", False)]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES FROM {CATALOG}.{SCHEMA} LIKE 'o*|x'").collect()] == ["other"]
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {NAME}").collect()}
    assert (described["id"], described["Catalog"], described["Database"], described["Table"], described["Type"]) == (
        "bigint", CATALOG, SCHEMA, "t", "MANAGED")
    assert spark.sql(f"DROP TABLE {CATALOG}.{SCHEMA}.other").collect() == []
    assert not client_for(server).table_exists(CATALOG, SCHEMA, "other")
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {CATALOG}.{SCHEMA}").collect()] == ["t"]
    with pytest.raises(Exception, match="not found"):
        spark.sql(f"DROP TABLE {CATALOG}.{SCHEMA}.other").collect()
    spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.{SCHEMA}.other").collect()
    with pytest.raises(Exception, match="not found|does not exist"):
        spark.table(f"{CATALOG}.{SCHEMA}.other").collect()
    spark.sql(f"CREATE TABLE {CATALOG}.{SCHEMA}.other (id long) USING delta").collect()  # the name is free again
    assert spark.table(f"{CATALOG}.{SCHEMA}.other").collect() == []


def test_streaming_read_and_write_through_the_catalog(spark: Any, uc: Any, tmp_path: Path) -> None:
    """readStream of a UC table (by name and by uc:// path) and a Delta sink into one (toTable), each micro-batch
    ratified by the catalog; Spark's Python workers get the catalog's URL and token as stream options."""
    server, options = uc
    out = f"{CATALOG}.{SCHEMA}.sink"
    q = spark.readStream.table(NAME).writeStream.format("delta") \
        .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).toTable(out)
    q.awaitTermination(120)
    assert q.exception() is None
    assert _ids(spark.table(out)) == [1, 2, 3]
    write_deltalake(URI, pa.table({"id": pa.array([4], pa.int64())}), mode="append", storage_options=options)
    q = spark.readStream.format("delta").load(URI).writeStream.format("delta") \
        .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).toTable(out)
    q.awaitTermination(120)
    assert q.exception() is None
    assert _ids(spark.table(out)) == [1, 2, 3, 4]
    sink = DeltaTable(f"uc://{out}", storage_options=options)
    ops = [h["operation"] for h in sorted(sink.history(), key=lambda h: h["version"])]
    assert ops[-2:] == ["STREAMING UPDATE", "STREAMING UPDATE"]
    table_id = sink.metadata().configuration["io.unitycatalog.tableId"]
    assert [v for v, _ in server.store.ratified(table_id)] == [1, 2]  # each batch ratified once by the catalog


@pytest.fixture()
def s3_uc(spark: Any, tmp_path: Path, moto_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A catalog whose managed tables live on S3 (moto on loopback), vending STS session credentials; the session
    knows the catalog's URI and token, the process the object store's endpoint (`configure_catalog`)."""
    from uc_server.vending import MotoStsVendor

    from deltakernel.unity.tables import configure_catalog

    server = start_server(tmp_path, vendor=MotoStsVendor(moto_endpoint))
    server.store.storage_root = f"s3://{s3_bucket}/uc"
    endpoint = {"AWS_ENDPOINT_URL": moto_endpoint, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    with _catalog_on_session(spark, server, monkeypatch):
        configure_catalog(CATALOG, endpoint)
        yield server, {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN, **endpoint}
    assert not server.errors, server.errors


def test_managed_tables_on_s3_with_vended_credentials(spark: Any, s3_uc: Any) -> None:
    """CREATE TABLE / saveAsTable of MANAGED tables whose storage the catalog puts on S3: Spark writes and reads
    them with the STS credentials the catalog vends (the user configured only the endpoint)."""
    server, options = s3_uc
    name, other = f"{CATALOG}.{SCHEMA}.s3t", f"{CATALOG}.{SCHEMA}.s3n"
    spark.sql(f"CREATE TABLE {name} (id long) USING delta").collect()
    spark.sql(f"INSERT INTO {name} VALUES (1), (2), (3)").collect()
    spark.createDataFrame([(7,)], "id long").write.format("delta").saveAsTable(other)
    assert spark.sql(f"DELETE FROM {name} WHERE id = 2").collect()[0].num_affected_rows == 1
    assert _ids(spark.table(name)) == [1, 3]
    assert _ids(spark.table(other)) == [7]
    for n in (name, other):
        dt = DeltaTable(f"uc://{n}", storage_options=options)
        assert dt.table_uri.startswith("s3://")
        assert "catalogManaged" in dt.protocol().reader_features
    assert sorted(DeltaTable(f"uc://{name}", storage_options=options).to_pyarrow_table()["id"].to_pylist()) == [1, 3]
    vended = server.state.vendor.calls
    assert vended and all(loc.startswith("s3://") for loc, _ in vended)
