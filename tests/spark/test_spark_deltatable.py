"""`from deltakernel.spark import DeltaTable`: delta-spark's path-based API."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import DeltaError
from deltakernel.spark import DeltaTable


@pytest.fixture()
def table(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(10).withColumn("g", (F.col("id") % 2).cast("string")).write.format("delta").partitionBy("g").save(path)
    spark.range(10, 15).withColumn("g", F.lit("1")).write.format("delta").mode("append") \
        .option("userMetadata", "second").save(path)
    return path


def test_for_path_to_df_alias(spark, table, tmp_path):
    assert DeltaTable.isDeltaTable(spark, table)
    assert not DeltaTable.isDeltaTable(spark, str(tmp_path / "nope"))
    with pytest.raises(DeltaError):
        DeltaTable.forPath(spark, str(tmp_path / "nope"))
    dt = DeltaTable.forPath(spark, table)
    assert dt.toDF().count() == 15
    joined = dt.alias("t").toDF().join(spark.range(3).alias("s"), F.col("t.id") == F.col("s.id"))
    assert joined.count() == 3


def test_history_and_detail(spark, table):
    dt = DeltaTable.forPath(spark, table)
    hist = dt.history()
    assert [r.version for r in hist.collect()] == [1, 0]
    latest = dt.history(1).collect()
    assert len(latest) == 1 and latest[0].operation == "WRITE" and latest[0].userMetadata == "second"
    assert latest[0].operationParameters["mode"] == "Append"
    assert {"version", "timestamp", "operation", "operationParameters", "operationMetrics", "isBlindAppend",
            "readVersion", "engineInfo"} <= set(hist.columns)
    d = dt.detail().collect()[0]
    assert d.format == "delta" and d.partitionColumns == ["g"] and d.numFiles == len(KernelTable(table).files())
    assert d.sizeInBytes > 0 and d.minReaderVersion == 1


def test_builder_create_variants(spark, tmp_path):
    path = str(tmp_path / "built")
    dt = (DeltaTable.create(spark).location(path).addColumn("id", "BIGINT", nullable=False)
          .addColumn("name", StringType(), comment="who").addColumn("day", "date")
          .partitionedBy("day").property("delta.enableChangeDataFeed", "true").comment("people").execute())
    k = KernelTable(path)
    assert k.schema().names == ["id", "name", "day"] and k.partition_columns() == ["day"]
    assert k.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    assert k.metadata().description == "people"
    assert k.schema().field("name").metadata.get("comment") == "who"
    assert dt.toDF().count() == 0
    with pytest.raises(DeltaError):
        DeltaTable.create(spark).location(path).addColumn("id", "long").execute()
    DeltaTable.createIfNotExists(spark).location(path).addColumn("x", "int").execute()
    assert KernelTable(path).version() == 0
    DeltaTable.createOrReplace(spark).location(path).addColumns(
        StructType([StructField("k", LongType()), StructField("v", StringType())])).execute()
    assert KernelTable(path).schema().names == ["k", "v"] and KernelTable(path).version() == 1


def test_protocol_upgrade_and_features(spark, table):
    dt = DeltaTable.forPath(spark, table)
    dt.upgradeTableProtocol(1, 4)
    p = KernelTable(table).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 4)
    dt.upgradeTableProtocol(1, 4)  # no-op: nothing committed
    assert KernelTable(table).version() == 2
    dt.addFeatureSupport("deletionVectors")
    p = KernelTable(table).protocol()
    assert p.min_reader_version == 3 and p.min_writer_version == 7
    assert "deletionVectors" in p.reader_features and "deletionVectors" in p.writer_features
    assert dt.toDF().count() == 15
