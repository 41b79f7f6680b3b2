"""Writes through Spark: modes, partitionBy, delta-spark's options, one commit per job, interop."""

from __future__ import annotations

import json
from pathlib import Path

import helpers
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable
from deltakernel.errors import DeltaError


def frame(spark, n: int = 20, offset: int = 0, parts: int = 3):
    return (spark.range(offset, offset + n, numPartitions=2)
            .withColumn("part", F.concat(F.lit("p"), (F.col("id") % parts).cast("string")))
            .withColumn("ts", F.timestamp_seconds(F.col("id") * 3600))
            .withColumn("amount", F.col("id").cast("double") * 1.5))


def rows(path: str) -> pa.Table:
    return DeltaTable(path).to_pyarrow_table()


def commits(path: str) -> int:
    return len(list((Path(path) / "_delta_log").glob("*.json")))


def test_modes(spark, tmp_path):
    path = str(tmp_path / "t")
    frame(spark).write.format("delta").save(path)  # default mode: error, table absent -> created
    assert DeltaTable(path).version() == 0 and rows(path).num_rows == 20
    with pytest.raises(DeltaError, match="already exists"):
        frame(spark).write.format("delta").mode("error").save(path)
    with pytest.raises(DeltaError, match="already exists"):
        frame(spark).write.format("delta").mode("errorifexists").save(path)
    frame(spark).write.format("delta").mode("ignore").save(path)
    assert DeltaTable(path).version() == 0
    frame(spark, 5, 100).write.format("delta").mode("append").save(path)
    assert rows(path).num_rows == 25 and DeltaTable(path).version() == 1
    frame(spark, 7, 200).write.mode("overwrite").format("delta").save(path)
    assert sorted(rows(path).column("id").to_pylist()) == list(range(200, 207))
    assert commits(path) == 3  # one commit per job
    got = spark.read.format("delta").load(path).toArrow()
    helpers.assert_same_rows(got, rows(path), "roundtrip")


def test_partition_by_and_save_kwargs(spark, tmp_path):
    path = str(tmp_path / "p")
    frame(spark).write.save(path, format="delta", mode="overwrite", partitionBy="part")
    dtab = DeltaTable(path)
    assert dtab.partition_columns() == ["part"]
    assert all(p.startswith("part=p") for p in dtab.files())
    frame(spark, 3, 50).write.format("delta").mode("append").partitionBy("part").save(path)
    with pytest.raises(DeltaError, match="partition"):
        frame(spark, 3, 60).write.format("delta").mode("append").partitionBy("id").save(path)
    assert rows(path).num_rows == 23


def test_replace_where(spark, tmp_path):
    path = str(tmp_path / "rw")
    frame(spark, 30).write.format("delta").partitionBy("part").save(path)
    new = frame(spark, 3, 1000, parts=1)  # all part = 'p0'... with ids 1000..1002: p0 only when parts=1
    new = new.withColumn("part", F.lit("p1"))
    new.write.format("delta").mode("overwrite").option("replaceWhere", "part = 'p1'").save(path)
    t = rows(path)
    p1 = sorted(r["id"] for r in t.to_pylist() if r["part"] == "p1")
    assert p1 == [1000, 1001, 1002] and t.num_rows == 20 + 3
    with pytest.raises(Exception, match="replaceWhere|predicate"):
        frame(spark, 3, 2000).write.format("delta").mode("overwrite").option("replaceWhere", "part = 'p1'").save(path)
    assert DeltaTable(path).version() == 1  # the failed write committed nothing
    # data predicate (not a partition column)
    frame(spark, 5, 0).filter("id < 5").write.format("delta").mode("overwrite") \
        .option("replaceWhere", "id < 5").save(path)
    t = rows(path)  # ids 0, 2, 3 were below 5 (1 and 4 were in the replaced p1): now 0..4
    assert t.num_rows == 25 and sorted(i for i in t.column("id").to_pylist() if i < 5) == [0, 1, 2, 3, 4]


def test_dynamic_partition_overwrite(spark, tmp_path):
    path = str(tmp_path / "dyn")
    frame(spark, 30).write.format("delta").partitionBy("part").save(path)
    frame(spark, 2, 500).withColumn("part", F.lit("p2")).write.format("delta").mode("overwrite") \
        .option("partitionOverwriteMode", "dynamic").save(path)
    t = rows(path).to_pylist()
    assert sorted(r["id"] for r in t if r["part"] == "p2") == [500, 501]
    assert len([r for r in t if r["part"] != "p2"]) == 20


def test_merge_and_overwrite_schema(spark, tmp_path):
    path = str(tmp_path / "schema")
    frame(spark, 5).write.format("delta").save(path)
    wider = frame(spark, 2, 10).withColumn("extra", F.lit("x"))
    with pytest.raises(Exception, match="mergeSchema|schema"):
        wider.write.format("delta").mode("append").save(path)
    wider.write.format("delta").mode("append").option("mergeSchema", "true").save(path)
    assert DeltaTable(path).schema().names == ["id", "part", "ts", "amount", "extra"]
    back = spark.read.format("delta").load(path)
    assert back.where("extra IS NULL").count() == 5
    other = spark.range(3).withColumnRenamed("id", "k")
    other.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(path)
    assert DeltaTable(path).schema().names == ["k"]
    assert spark.read.format("delta").load(path).count() == 3


def test_txn_idempotency_and_user_metadata(spark, tmp_path):
    path = str(tmp_path / "txn")
    w = frame(spark, 4).write.format("delta").mode("append")
    w.option("txnAppId", "job-1").option("txnVersion", 1).option("userMetadata", "first run").save(path)
    frame(spark, 4).write.format("delta").mode("append").option("txnAppId", "job-1").option("txnVersion", 1).save(path)
    assert rows(path).num_rows == 4 and DeltaTable(path).version() == 0  # replay skipped
    frame(spark, 4).write.format("delta").mode("append").options(txnAppId="job-1", txnVersion=2).save(path)
    assert rows(path).num_rows == 8
    assert DeltaTable(path).transaction_versions() == {"job-1": 2}
    first = helpers.read_actions(path, 0)
    info = next(a["commitInfo"] for a in first if "commitInfo" in a)
    assert info["userMetadata"] == "first run"
    hist = dks.DeltaTable.forPath(spark, path).history().orderBy("version").collect()
    assert hist[0]["userMetadata"] == "first run"


def test_max_records_per_file_and_table_properties(spark, tmp_path):
    path = str(tmp_path / "mr")
    frame(spark, 40).coalesce(1).write.format("delta").option("maxRecordsPerFile", 10) \
        .option("delta.enableChangeDataFeed", "true").save(path)
    dtab = DeltaTable(path)
    assert len(dtab.files()) == 4
    assert dtab.metadata().configuration.get("delta.enableChangeDataFeed") == "true"


def test_failed_job_commits_nothing(spark, tmp_path):
    path = str(tmp_path / "fail")
    frame(spark, 10).write.format("delta").save(path)
    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def boom(x):
        if x == 7:
            raise ValueError("task failure")
        return x

    with pytest.raises(Exception, match="task failure"):
        frame(spark, 10).withColumn("id", boom("id")).write.format("delta").mode("append").save(path)
    assert DeltaTable(path).version() == 0 and rows(path).num_rows == 10


def test_write_function_and_python_source_writer(spark, tmp_path):
    path = str(tmp_path / "fn")
    dks.write(frame(spark, 6), path, mode="overwrite", partitionBy=["part"])
    assert DeltaTable(path).partition_columns() == ["part"]
    # the registered Python source's own writer (what Spark uses when routing is bypassed): pyspark's own
    # `save` (the routing wraps it), so Spark resolves "delta" to the source - on both session kinds
    writer = frame(spark, 4, 100).write.format("delta").mode("append").option("path", path)
    type(writer).save.__wrapped__(writer)
    assert rows(path).num_rows == 10 and DeltaTable(path).version() == 1


def test_interop_spark_written_read_by_deltalake_and_duckdb(spark, tmp_path):
    path = str(tmp_path / "interop")
    frame(spark, 50).write.format("delta").partitionBy("part").save(path)
    frame(spark, 10, 100).write.format("delta").mode("append").save(path)
    ours = spark.read.format("delta").load(path).toArrow()
    helpers.assert_same_rows(helpers.deltalake_table(path), ours, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(path), ours, "duckdb")


def test_interop_deltalake_written_read_by_spark(spark, tmp_path):
    import deltalake

    path = str(tmp_path / "dl")
    data = pa.table({"id": pa.array(range(20), pa.int64()), "p": [f"x{i % 4}" for i in range(20)],
                     "v": [float(i) for i in range(20)]})
    deltalake.write_deltalake(path, data, partition_by=["p"])
    deltalake.write_deltalake(path, data.slice(0, 5), mode="append", partition_by=["p"])
    got = spark.read.format("delta").load(path).toArrow()
    helpers.assert_same_rows(got, helpers.deltalake_table(path), "deltalake-written")
    assert spark.read.format("delta").load(path).where("p = 'x1'").count() == 6


def test_column_mapping_write_and_read(spark, tmp_path):
    path = str(tmp_path / "cm")
    frame(spark, 12).write.format("delta").partitionBy("part").option("delta.columnMapping.mode", "name").save(path)
    assert DeltaTable(path).metadata().configuration["delta.columnMapping.mode"] == "name"
    got = spark.read.format("delta").load(path).toArrow()
    helpers.assert_same_rows(got, rows(path), "column mapping")
    assert json.loads(DeltaTable(path).metadata().schema_string)["fields"][0]["metadata"]
