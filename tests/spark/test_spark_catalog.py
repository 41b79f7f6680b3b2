"""Delta tables in Spark's session catalog through deltakernel (no delta-spark): saveAsTable in every mode,
reads by name (native plan), SQL DDL / DML / maintenance by name, DeltaTable.forName and builders with
tableName, managed tables under the database location and external tables with LOCATION, DROP TABLE.
Every table is checked against the embedded engine and deltalake reading its location."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, deltalake_table, duckdb_table, spark_database

import deltakernel.spark as dks
from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import DeltaError, TableNotFoundError
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark import DeltaFrame, DeltaTable
from deltakernel.spark.catalog.tables import CatalogTableError, lookup

deltalake = pytest.importorskip("deltalake")


@pytest.fixture()
def db(spark, tmp_path):
    """A database whose location is in tmp_path: its managed tables live there."""
    with spark_database(spark, tmp_path / "warehouse") as name:
        yield name


def _location(spark, name: str) -> str:
    entry = lookup(spark, name.split("."))
    assert entry is not None and entry.location is not None
    return entry.location[len("file:"):] if entry.location.startswith("file:") else entry.location


def _frame(n: int, offset: int = 0):
    return pa.table({"id": pa.array(range(offset, offset + n), pa.int64()),
                     "p": [str(i % 2) for i in range(offset, offset + n)]})


def test_save_as_table_modes_and_reads_by_name(spark, db, tmp_path):
    name = f"{db}.events"
    spark.createDataFrame(_frame(6).to_pandas()).write.format("delta").partitionBy("p").saveAsTable(name)
    loc = _location(spark, name)
    assert Path(loc).parent == tmp_path / "warehouse" and lookup(spark, name.split(".")).managed
    assert KernelTable(loc).metadata().partition_columns == ["p"]
    assert_same_rows(deltalake_table(loc), _frame(6), "deltalake reads the managed table")
    with pytest.raises(DeltaError, match="already exists"):
        spark.createDataFrame(_frame(1).to_pandas()).write.format("delta").saveAsTable(name)
    spark.createDataFrame(_frame(1).to_pandas()).write.format("delta").mode("ignore").saveAsTable(name)
    assert KernelTable(loc).version() == 0
    spark.createDataFrame(_frame(4, 6).to_pandas()).write.format("delta").mode("append").saveAsTable(name)
    assert_same_rows(KernelTable(loc).to_pyarrow_table(), _frame(10), "append")
    # reads by name: the native plan, equal to the embedded engine's read
    for df in (spark.table(name), spark.read.table(name), spark.sql(f"SELECT * FROM {name}")):
        assert_same_rows(df.toArrow(), KernelTable(loc).to_pyarrow_table(), "read by name")
    assert isinstance(spark.table(name), DeltaFrame)
    assert spark.read.option("versionAsOf", 0).table(name).count() == 6
    assert spark.sql(f"SELECT count(*) AS n FROM {name} VERSION AS OF 0").collect()[0].n == 6
    # overwrite replaces data, schema and partitioning (delta-spark's CREATE OR REPLACE semantics)
    new = spark.range(3).withColumn("label", F.lit("x"))
    new.write.format("delta").mode("overwrite").saveAsTable(name)
    assert [f.name for f in deltalake.DeltaTable(loc).schema().fields] == ["id", "label"]
    assert KernelTable(loc).metadata().partition_columns == []
    assert [c.name for c in spark.catalog.listColumns(name)] == ["id", "label"]  # the catalog follows the log
    assert_same_rows(duckdb_table(loc), new.toArrow(), "DuckDB reads the overwritten table")
    # DeltaTable.forName and DML by name
    dt = DeltaTable.forName(spark, name)
    dt.delete("id = 1")
    assert sorted(r.id for r in spark.table(name).collect()) == [0, 2]
    # saveAsTable(mode="overwrite") of an existing table is delta-spark's ReplaceTableAsSelect
    assert [h["operation"] for h in KernelTable(loc).history()][:2] == ["DELETE", "CREATE OR REPLACE TABLE AS SELECT"]
    spark.sql(f"DROP TABLE {name}")
    assert not spark.catalog.tableExists(name) and not Path(loc).exists()  # managed: data removed


def test_sql_ddl_managed_external_ctas(spark, db, tmp_path):
    m = f"{db}.m"
    spark.sql(f"""CREATE TABLE {m} (id BIGINT NOT NULL COMMENT 'key', s STRING, d INT GENERATED ALWAYS AS (id * 2))
                  USING delta PARTITIONED BY (s) COMMENT 'managed one'
                  TBLPROPERTIES ('delta.appendOnly' = 'false', 'team' = 'x')""")
    loc = _location(spark, m)
    kt = KernelTable(loc)
    assert kt.metadata().description == "managed one" and kt.metadata().configuration["team"] == "x"
    assert kt.metadata().partition_columns == ["s"]
    assert kt.schema().fields[0].nullable is False
    spark.sql(f"CREATE TABLE IF NOT EXISTS {m} (id BIGINT) USING delta")
    with pytest.raises(DeltaError, match="already exists"):
        spark.sql(f"CREATE TABLE {m} (id BIGINT) USING delta")
    spark.sql(f"INSERT INTO {m} (id, s) VALUES (1, 'a'), (2, 'b')")
    assert sorted((r.id, r.d) for r in spark.table(m).collect()) == [(1, 2), (2, 4)]  # generated column
    # an external table over an existing Delta table: columns come from the log
    ext = str(tmp_path / "ext")
    write_deltalake(ext, _frame(3))
    spark.sql(f"CREATE TABLE {db}.e USING delta LOCATION '{ext}'")
    assert not lookup(spark, [db, "e"]).managed
    assert_same_rows(spark.table(f"{db}.e").toArrow(), _frame(3), "external read")
    with pytest.raises(CatalogTableError, match="differ"):
        spark.sql(f"CREATE TABLE {db}.e2 (other INT) USING delta LOCATION '{ext}'")
    assert not spark.catalog.tableExists(f"{db}.e2")
    spark.sql(f"DROP TABLE {db}.e")
    assert KernelTable.is_deltatable(ext)  # external: data kept
    # CTAS / CREATE OR REPLACE AS SELECT / REPLACE
    spark.sql(f"CREATE TABLE {db}.c USING delta PARTITIONED BY (p) AS SELECT id, p FROM {m} "
              f"LATERAL VIEW explode(array('u', 'v')) AS p")
    c_loc = _location(spark, f"{db}.c")
    assert KernelTable(c_loc).to_pyarrow_table().num_rows == 4
    assert KernelTable(c_loc).metadata().partition_columns == ["p"]
    spark.sql(f"CREATE OR REPLACE TABLE {db}.c USING delta AS SELECT 'z' AS only")
    assert deltalake_table(c_loc).to_pylist() == [{"only": "z"}]
    assert len(KernelTable(c_loc).history()) == 2  # replaced in place: history kept
    with pytest.raises(TableNotFoundError):
        spark.sql(f"REPLACE TABLE {db}.nope (a INT) USING delta")
    spark.sql(f"CREATE TABLE {db}.cl (a INT, b STRING) USING delta CLUSTER BY (a)")
    detail = spark.sql(f"DESCRIBE DETAIL {db}.cl").collect()[0]
    assert detail.clusteringColumns == ["a"] and detail.name == f"spark_catalog.{db}.cl"
    spark.sql(f"DROP TABLE {m}")
    assert not Path(loc).exists()


def test_statements_by_name(spark, db):
    name = f"{db}.t"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, v STRING) USING delta")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"UPDATE {name} SET v = upper(v) WHERE {db}.t.id = 2 OR t.id = 3")
    spark.sql(f"DELETE FROM {name} WHERE t.id = 1")
    loc = _location(spark, name)
    assert sorted(r.v for r in spark.table(name).collect()) == ["B", "C"]
    assert_same_rows(deltalake_table(loc), KernelTable(loc).to_pyarrow_table(), "deltalake")
    ops = [r.operation for r in spark.sql(f"DESCRIBE HISTORY {name}").collect()]
    assert ops == [h["operation"] for h in KernelTable(loc).history()] and ops[:2] == ["DELETE", "UPDATE"]
    assert spark.sql(f"SELECT count(*) AS n FROM {name} VERSION AS OF 1").collect()[0].n == 3
    spark.sql(f"OPTIMIZE {name}")
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS (w DOUBLE)")
    assert [c.name for c in spark.catalog.listColumns(name)] == ["id", "v", "w"]
    spark.createDataFrame([(9, "z", 1.5)], "a long, b string, c double").write.insertInto(name)
    assert (9, "z", 1.5) in [(r.id, r.v, r.w) for r in spark.table(name).collect()]
    spark.createDataFrame([(7, "q", 0.5)], "a long, b string, c double").write.insertInto(name, overwrite=True)
    assert [(r.id, r.v) for r in spark.table(name).collect()] == [(7, "q")]
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert props["delta.minReaderVersion"] == "1"
    desc = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    assert desc["Type"] == "MANAGED" and desc["Provider"] == "delta"
    spark.sql(f"CREATE TABLE {db}.t_like LIKE {name}")  # a Delta source: a Delta table with its columns
    like = _location(spark, f"{db}.t_like")
    assert [f.name for f in KernelTable(like).schema().fields] == ["id", "v", "w"]
    assert KernelTable(like).to_pyarrow_table().num_rows == 0
    spark.sql(f"TRUNCATE TABLE {name}")
    assert spark.table(name).count() == 0 and deltalake_table(loc).num_rows == 0
    cdf = f"{db}.feed"
    spark.sql(f"CREATE TABLE {cdf} (k INT) USING delta TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"INSERT INTO {cdf} VALUES (1), (2)")
    spark.sql(f"DELETE FROM {cdf} WHERE k = 1")
    changes = spark.sql(f"SELECT k, _change_type, _commit_version FROM table_changes('{cdf}', 1) ORDER BY 3, 1")
    assert [tuple(r) for r in changes.collect()] == [(1, "insert", 1), (2, "insert", 1), (1, "delete", 2)]


def test_builders_and_catalog_api(spark, db, tmp_path):
    b = f"{db}.built"
    dt = (DeltaTable.create(spark).tableName(b).addColumn("id", "BIGINT", nullable=False)
          .addColumn("s", "STRING").partitionedBy("s").property("delta.appendOnly", "false").execute())
    loc = _location(spark, b)
    assert dt.toDF().count() == 0 and KernelTable(loc).metadata().partition_columns == ["s"]
    DeltaTable.createIfNotExists(spark).tableName(b).addColumn("other", "INT").execute()
    assert [f.name for f in KernelTable(loc).schema().fields] == ["id", "s"]
    DeltaTable.createOrReplace(spark).tableName(b).addColumn("other", "INT").execute()
    assert [f.name for f in KernelTable(loc).schema().fields] == ["other"]
    assert [c.name for c in spark.catalog.listColumns(b)] == ["other"]
    ext = str(tmp_path / "built_ext")
    DeltaTable.create(spark).tableName(f"{db}.bext").location(ext).addColumn("x", "INT").execute()
    assert KernelTable.is_deltatable(ext) and not lookup(spark, [db, "bext"]).managed
    from pyspark.sql.types import LongType, StructField, StructType

    df = spark.catalog.createTable(f"{db}.api", source="delta",
                                   schema=StructType([StructField("k", LongType())]))
    assert df.columns == ["k"] and KernelTable.is_deltatable(_location(spark, f"{db}.api"))
    opt_path = str(tmp_path / "opt_path")
    spark.range(3).write.format("delta").option("path", opt_path).saveAsTable(f"{db}.by_option")
    assert not lookup(spark, [db, "by_option"]).managed and deltalake_table(opt_path).num_rows == 3
    write_deltalake(str(tmp_path / "api_ext"), _frame(2))
    df = spark.catalog.createTable(f"{db}.api_ext", path=str(tmp_path / "api_ext"), source="delta")
    assert df.count() == 2


def test_non_delta_tables_and_bad_names(spark, db):
    pq_name = f"{db}.plain"
    spark.range(3).write.format("parquet").saveAsTable(pq_name)
    spark.range(2).write.mode("append").insertInto(pq_name)
    assert spark.table(pq_name).count() == 5 and not isinstance(spark.table(pq_name), DeltaFrame)
    with pytest.raises(DeltaError, match="not a Delta table"):
        DeltaTable.forName(spark, pq_name)
    with pytest.raises(TableNotFoundError):
        DeltaTable.forName(spark, f"{db}.missing")
    with pytest.raises(DeltaError, match="not a Delta table"):
        spark.range(1).write.format("delta").mode("append").saveAsTable(pq_name)
    spark.range(4).createOrReplaceTempView("dk_cat_view")
    assert spark.table("dk_cat_view").count() == 4
    # a second session over the same catalog reads the Delta tables by name
    spark.range(2).write.format("delta").saveAsTable(f"{db}.shared")
    other = dks.enable(spark.newSession())
    assert other.table(f"{db}.shared").count() == 2
