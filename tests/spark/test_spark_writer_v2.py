"""`df.writeTo(name)` (DataFrameWriterV2) on Delta tables, and enable()'s check of Spark's Python workers."""

from __future__ import annotations

import json
import os
import stat

import pytest
from pyspark.sql import functions as F

from deltakernel import DeltaTable
from deltakernel.errors import DeltaError, UnsupportedFeatureError


def rows(spark, name):
    return sorted(tuple(r) for r in spark.table(name).collect())


def location(spark, name):
    return spark.sql(f"DESCRIBE DETAIL {name}").first().location


@pytest.fixture()
def name(spark):
    spark.sql("CREATE DATABASE IF NOT EXISTS dk_v2")
    n = "dk_v2.t"
    spark.sql(f"DROP TABLE IF EXISTS {n}")
    yield n
    spark.sql(f"DROP TABLE IF EXISTS {n}")


def frame(spark, data):
    return spark.createDataFrame(data, "id long, s string, day string")


def test_create_append_overwrite_partitions(spark, name):
    frame(spark, [(1, "a", "d1"), (2, "b", "d2")]).writeTo(name).using("delta").partitionedBy("day") \
        .tableProperty("delta.enableChangeDataFeed", "true").tableProperty("team", "x").create()
    path = location(spark, name)
    dt = DeltaTable(path)
    assert dt.metadata().partition_columns == ["day"]
    assert dt.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    assert dt.metadata().configuration["team"] == "x"
    assert rows(spark, name) == [(1, "a", "d1"), (2, "b", "d2")]

    frame(spark, [(3, "c", "d1")]).select("s", "day", "id").writeTo(name).append()  # by name
    assert rows(spark, name) == [(1, "a", "d1"), (2, "b", "d2"), (3, "c", "d1")]

    frame(spark, [(9, "z", "d1")]).writeTo(name).overwrite(F.col("day") == "d1")  # replaceWhere
    assert rows(spark, name) == [(2, "b", "d2"), (9, "z", "d1")]
    with pytest.raises(DeltaError):  # rows outside the condition are refused, the table unchanged
        frame(spark, [(8, "y", "d3")]).writeTo(name).overwrite(F.col("day") == "d1")
    assert rows(spark, name) == [(2, "b", "d2"), (9, "z", "d1")]

    frame(spark, [(7, "q", "d2"), (6, "p", "d4")]).writeTo(name).overwritePartitions()  # d2 replaced, d4 added
    assert rows(spark, name) == [(6, "p", "d4"), (7, "q", "d2"), (9, "z", "d1")]

    frame(spark, [(5, "m", "d5")]).withColumn("extra", F.lit(1.5)).writeTo(name).option("mergeSchema", "true") \
        .append()
    assert spark.table(name).columns == ["id", "s", "day", "extra"]
    ops = [json.loads(line).get("commitInfo", {}).get("operation") for line in _log_lines(path)]
    assert ops.count("WRITE") + ops.count("CREATE TABLE AS SELECT") >= 5


def _log_lines(path):
    log = os.path.join(path, "_delta_log")
    for f in sorted(os.listdir(log)):
        if f.endswith(".json"):
            with open(os.path.join(log, f)) as fh:
                yield from fh


def test_create_replace_and_errors(spark, name):
    with pytest.raises(Exception, match="(?i)not found|does not exist"):
        frame(spark, [(1, "a", "d1")]).writeTo(name).using("delta").replace()  # replace needs the table
    frame(spark, [(1, "a", "d1")]).writeTo(name).using("delta").createOrReplace()
    assert rows(spark, name) == [(1, "a", "d1")]
    with pytest.raises(DeltaError, match="already exists"):
        frame(spark, [(2, "b", "d2")]).writeTo(name).using("delta").create()
    spark.createDataFrame([(5, 1.5)], "k long, x double").writeTo(name).using("delta").clusterBy("k").replace()
    assert spark.table(name).columns == ["k", "x"] and rows(spark, name) == [(5, 1.5)]
    dt = DeltaTable(location(spark, name))
    assert "clustering" in str(dt.protocol().writer_features or [])
    version = dt.version()
    spark.createDataFrame([(6, 2.5)], "k long, x double").writeTo(name).createOrReplace()  # no using(): stays Delta
    assert DeltaTable(location(spark, name)).version() == version + 1 and rows(spark, name) == [(6, 2.5)]
    with pytest.raises(UnsupportedFeatureError, match="transforms"):
        spark.createDataFrame([(1, "2024-01-01")], "id long, ts string").withColumn("ts", F.col("ts").cast("date")) \
            .writeTo("dk_v2.tr").using("delta").partitionedBy(F.years("ts")).create()


def test_paths_and_other_providers(spark, tmp_path):
    path = str(tmp_path / "p")
    frame(spark, [(1, "a", "d1")]).writeTo(f"delta.`{path}`").using("delta").create()
    frame(spark, [(2, "b", "d1")]).writeTo(f"delta.`{path}`").append()
    assert DeltaTable(path).to_pyarrow_table().num_rows == 2
    spark.sql("DROP TABLE IF EXISTS dk_v2_parquet")
    frame(spark, [(1, "a", "d1")]).writeTo("dk_v2_parquet").using("parquet").create()  # Spark's own writer
    assert spark.table("dk_v2_parquet").count() == 1
    spark.sql("DROP TABLE dk_v2_parquet")


@pytest.mark.classic_only("fakes the worker interpreter through SparkContext.pythonExec; a Connect client has no "
                          "SparkContext (the server's workers are checked by enable() with a probe job)")
def test_enable_refuses_workers_without_deltakernel(spark, tmp_path, monkeypatch):
    """A worker interpreter that cannot import deltakernel: one clear error naming PYSPARK_PYTHON."""
    from deltakernel.spark.install import python_workers

    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'deltakernel'\" >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    sc = spark.sparkContext
    monkeypatch.setattr(sc, "pythonExec", str(fake))
    monkeypatch.setattr(python_workers, "_CHECKED", set())
    with pytest.raises(python_workers.PythonWorkerError, match="PYSPARK_PYTHON=") as err:
        python_workers.check_python_workers(spark)
    assert "No module named 'deltakernel'" in str(err.value) and str(fake) in str(err.value)
    monkeypatch.setattr(sc, "pythonExec", os.environ["PYSPARK_PYTHON"])
    python_workers.check_python_workers(spark)  # the session's own interpreter passes
