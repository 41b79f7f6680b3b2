"""Issue 9 section 8, reads: one scan for partitioned tables (`_metadata` kept, plans bounded), column
comments, row tracking (`readRowTracking`), s3:// without Hadoop's S3A jars."""

from __future__ import annotations

import datetime as dt
import logging

import helpers
import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from s3_fixtures import moto_endpoint, s3_bucket, s3_options  # noqa: F401  (fixtures)

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError


def plan_text(df) -> str:
    """The optimized logical plan's text (over Connect: from the extended explain)."""
    from deltakernel.spark.kinds.session import is_connect

    if is_connect(df.sparkSession):
        text = df._explain_string(extended=True)
        return text.split("== Optimized Logical Plan ==", 1)[1].split("== Physical Plan ==", 1)[0]
    return df._jdf.queryExecution().optimizedPlan().toString()


def test_partitioned_read_keeps_metadata_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    n = 40
    write_deltalake(path, pa.table({"id": pa.array(range(n), pa.int64()), "p": [f"p{i % 5}" for i in range(n)],
                                    "k": pa.array([i % 2 for i in range(n)], pa.int32())}),
                    partition_by=["p", "k"])
    df = spark.read.format("delta").load(path)
    meta = df.select("id", "p", "_metadata.file_path", "_metadata.row_index").collect()
    assert len(meta) == n
    assert all(f"p={r['p']}/" in r["file_path"] for r in meta)
    helpers.assert_same_rows(df.toArrow(), DeltaTable(path).to_pyarrow_table(), "partitioned")
    assert "Union" not in plan_text(df) and "Join" not in plan_text(df)
    only = df.where("p = 'p3'")
    [scan] = dks.scan_report(only)
    assert scan.files_kept < scan.files_total  # the kernel skips files for partition filters
    assert sorted(r["id"] for r in only.collect()) == [i for i in range(n) if i % 5 == 3]
    assert only.select("_metadata.file_path").count() == 8


def test_ten_thousand_partitions_one_scan(spark, tmp_path):
    path = str(tmp_path / "t")
    n = 10_000
    write_deltalake(path, pa.table({"id": pa.array(range(n), pa.int64()), "p": pa.array(range(n), pa.int64())}),
                    partition_by=["p"])
    df = spark.read.format("delta").load(path)
    text = plan_text(df)
    assert "Union" not in text and len(text) < 5_000, len(text)
    got = df.select((F.col("id") == F.col("p")).alias("same"), "p", "_metadata.file_path").toArrow()
    assert got.num_rows == n and all(got.column("same").to_pylist())
    assert sorted(got.column("p").to_pylist()) == list(range(n))
    assert len(set(got.column("file_path").to_pylist())) == n


def test_non_hive_partition_types_use_one_scan(spark, tmp_path):
    path = str(tmp_path / "t")
    ts = [dt.datetime(2024, 1, 1 + i % 3, i % 2, tzinfo=dt.timezone.utc) for i in range(60)]  # 6 partitions
    write_deltalake(path, pa.table({"id": pa.array(range(60), pa.int64()),
                                    "ts": pa.array(ts, pa.timestamp("us", tz="UTC"))}),
                    partition_by=["ts"])
    df = spark.read.format("delta").load(path)
    assert "Union" not in plan_text(df)
    helpers.assert_same_rows(df.toArrow(), DeltaTable(path).to_pyarrow_table(), "timestamp partitions")


def test_column_comments_survive(spark, tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"comment": "the key"}),
                        pa.field("p", pa.string(), metadata={"comment": "partition"}),
                        pa.field("x", pa.float64())])
    write_deltalake(path, pa.table({"id": [1, 2], "p": ["a", "b"], "x": [1.0, 2.0]}, schema=schema),
                    partition_by=["p"])
    for df in (spark.read.format("delta").load(path), spark.read.format("delta").load(path).toDF("id", "p", "x")):
        fields = {f.name: f.metadata for f in df.schema.fields}
        assert fields["id"].get("comment") == "the key"
        assert fields["p"].get("comment") == "partition"
        assert "comment" not in fields["x"]
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dk_comments USING delta OPTIONS (path '{path}')")
    assert spark.table("dk_comments").schema["id"].metadata.get("comment") == "the key"


RT = {"delta.enableRowTracking": "true"}


def _row_tracked(path: str, partition_by=None) -> None:
    write_deltalake(path, pa.table({"x": pa.array(range(10), pa.int64()), "p": [f"p{i % 2}" for i in range(10)]}),
                    configuration=RT, partition_by=partition_by)
    write_deltalake(path, pa.table({"x": pa.array(range(10, 15), pa.int64()), "p": ["p0"] * 5}), mode="append")
    # a partly matching file is rewritten: its surviving rows keep their ids through the materialized columns
    write_deltalake(path, pa.table({"x": pa.array([3], pa.int64()), "p": ["p1"]}), mode="overwrite",
                    predicate="x = 3 OR x = 11")


@pytest.mark.parametrize("partition_by", [None, ["p"]])
def test_read_row_tracking_matches_kernel(spark, tmp_path, partition_by):
    path = str(tmp_path / "t")
    _row_tracked(path, partition_by)
    cfg = DeltaTable(path).snapshot.metadata.configuration
    assert cfg.get("delta.rowTracking.materializedRowIdColumnName")
    df = spark.read.format("delta").option("readRowTracking", "true").load(path)
    assert df.columns == ["x", "p", "_row_id", "_row_commit_version"]
    expected = DeltaTable(path).to_pyarrow_table(row_tracking=True)
    helpers.assert_same_rows(df.toArrow(), expected.select(df.columns), "row tracking")
    ids = expected.column("_row_id").to_pylist()
    assert len(set(ids)) == len(ids)
    filtered = df.where("x >= 10")
    assert sorted(r["_row_id"] for r in filtered.collect()) == sorted(
        i for i, x in zip(ids, expected.column("x").to_pylist()) if x >= 10)


def test_read_row_tracking_refused_without_row_tracking(spark, tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": pa.array([1], pa.int64())}))
    with pytest.raises(DeltaError, match="row tracking"):
        spark.read.format("delta").option("readRowTracking", "true").load(path)
    assert spark.read.format("delta").load(path).columns == ["x"]


def test_s3_without_s3a_jars_uses_the_kernel_storage(spark, s3_bucket, s3_options, caplog,  # noqa: F811
                                                      monkeypatch):
    from deltakernel.spark.scan import filesystems

    monkeypatch.setattr(filesystems, "_WARNED", set())
    uri = f"s3://{s3_bucket}/t"
    df = spark.range(20).withColumn("p", (F.col("id") % 2).cast("string"))
    with caplog.at_level(logging.WARNING, logger="deltakernel.spark.scan.filesystems"):
        df.write.format("delta").options(**s3_options).partitionBy("p").save(uri)
        df.write.format("delta").options(**s3_options).mode("append").save(uri)
        back = spark.read.format("delta").options(**s3_options).load(uri)
        got = back.toArrow()
    notes = [r.getMessage() for r in caplog.records if "no Hadoop filesystem" in r.getMessage()]
    assert len(notes) == 1 and "s3a://" in notes[0]
    kernel = DeltaTable(uri, storage_options=s3_options).to_pyarrow_table()
    assert kernel.num_rows == 40
    helpers.assert_same_rows(got, kernel, "s3")
    old = spark.read.format("delta").options(**s3_options).option("versionAsOf", 0).load(uri)
    assert old.count() == 20
