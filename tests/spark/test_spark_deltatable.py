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


def test_builder_cluster_by_then_optimize_clusters(spark, tmp_path):
    """`clusterBy` makes a clustered table (`delta.clustering` domain); the embedded OPTIMIZE clusters it and
    Spark reads the same rows; `detail()` shows the clustering columns."""
    import json

    import pyarrow as pa

    from deltakernel import write_deltalake

    path = str(tmp_path / "clustered")
    DeltaTable.create(spark).location(path).addColumn("id", "BIGINT").addColumn("k", "STRING") \
        .clusterBy("id").execute()
    k = KernelTable(path)
    assert "clustering" in (k.protocol().writer_features or [])
    domain = k.snapshot.domain_metadata["delta.clustering"]
    assert json.loads(domain.configuration)["clusteringColumns"] == [["id"]]
    for i in range(4):
        ids = pa.array(range(i, 400, 4), pa.int64())
        write_deltalake(path, pa.table({"id": ids, "k": pa.array([f"k{v}" for v in ids.to_pylist()])}), mode="append")
    KernelTable(path).optimize.compact()
    assert sorted(r.id for r in DeltaTable.forPath(spark, path).toDF().collect()) == list(range(400))
    d = DeltaTable.forPath(spark, path).detail().collect()[0]
    assert d.clusteringColumns == ["id"] and d.numFiles == len(KernelTable(path).files())
    with pytest.raises(DeltaError, match="clusterBy and partitionedBy"):
        DeltaTable.create(spark).location(str(tmp_path / "both")).addColumn("id", "BIGINT") \
            .partitionedBy("id").clusterBy("id").execute()


def test_spark_reads_after_embedded_maintenance(spark, tmp_path):
    """OPTIMIZE, Z-order, DELETE with deletion vectors, RESTORE and VACUUM on the embedded engine: after each,
    Spark reads exactly the rows the kernel reads."""
    import pyarrow as pa

    from deltakernel import write_deltalake

    path = str(tmp_path / "m")
    for i in range(5):
        write_deltalake(path, pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                                        "g": pa.array([str(v % 3) for v in range(100)])}), mode="append",
                        configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)

    def same() -> None:
        ours = sorted(KernelTable(path).to_pyarrow_table().column("id").to_pylist())
        theirs = sorted(r.id for r in spark.read.format("delta").load(path).select("id").collect())
        assert ours == theirs

    KernelTable(path).optimize.compact()
    same()
    KernelTable(path).delete("id % 7 = 0")
    same()
    KernelTable(path).optimize.z_order(["id", "g"])
    same()
    KernelTable(path).restore(1)
    same()
    KernelTable(path).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    same()
