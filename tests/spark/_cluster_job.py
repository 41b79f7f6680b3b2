"""Driver of the standalone-cluster test: writes and reads a Delta table on `master_url` (argv 1)."""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable


def main(master_url: str, path: str) -> None:
    spark = (SparkSession.builder.master(master_url).appName("deltakernel-cluster-test")
             .config("spark.pyspark.python", sys.executable).config("spark.executor.memory", "512m")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false").getOrCreate())
    dks.enable(spark)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    df = spark.range(0, 100_000, numPartitions=8).withColumn("g", (F.col("id") % 5).cast("string"))
    df.write.format("delta").partitionBy("g").save(path)
    df.limit(10).write.format("delta").mode("append").save(path)
    spark.range(5).withColumn("g", F.lit("0")).write.format("delta").mode("overwrite") \
        .option("replaceWhere", "g = '0'").save(path)
    back = spark.read.format("delta").load(path)
    total = back.count()
    expected = DeltaTable(path).to_pyarrow_table().num_rows
    assert total == expected == 100_000 - 20_000 + 8 + 5, (total, expected)
    assert back.where("g = '3'").count() == 20_000 + 2
    assert spark.read.format("delta").option("versionAsOf", 0).load(path).count() == 100_000
    hosts = {r[0] for r in spark.range(0, 8, numPartitions=8).rdd.mapPartitions(
        lambda _: [__import__("socket").gethostname() + ":" + str(__import__("os").getpid())]).map(
        lambda x: (x,)).collect()}
    print(f"CLUSTER OK executors={executors} python_workers={len(hosts)}")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
