"""Driver of the standalone-cluster test: writes and reads a Delta table on `master_url` (argv 1)."""

from __future__ import annotations

import json
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
    print("CLUSTER SKIPPING " + json.dumps(_skipping(spark, f"{path}_skipping")))
    small = _dml_with_deletion_vectors(spark, f"{path}_dml_small", 100_000, 20_000)
    large = _dml_with_deletion_vectors(spark, f"{path}_dml_large", 1_000_000, 200_000)
    print("DML driver peak RSS MB " + json.dumps({"small": small, "large": large}))
    print(f"CLUSTER OK executors={executors} python_workers={len(hosts)}")
    spark.stop()


def _skipping(spark: SparkSession, path: str) -> dict[str, float]:
    """A point query over a 40-file table on the cluster: Spark reads exactly the files the kernel keeps; its
    time next to `spark.read.parquet` of the same (fresh, so identical) files."""
    import time

    from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal
    from deltakernel.kernel.scan.scan import Scan

    spark.range(0, 400_000, numPartitions=40).withColumn("v", F.col("id") * 2).write.format("delta").save(path)
    spark.sql(f"CREATE TABLE cluster_skip USING delta LOCATION '{path}'")
    snap = DeltaTable(path).snapshot
    kept = Scan(snap, predicate=Comparison("=", Column("id"), Literal(123_456))).plan().num_rows
    queries = {"delta": lambda: spark.sql("SELECT id, v FROM cluster_skip WHERE id = 123456"),
               "parquet": lambda: spark.read.parquet(path).where("id = 123456").select("id", "v")}
    best: dict[str, float] = {}
    for name, make in queries.items():
        make().collect()
        times = []
        for _ in range(3):
            start = time.perf_counter()
            df = make()
            rows = df.collect()
            times.append(time.perf_counter() - start)
            assert [tuple(r) for r in rows] == [(123_456, 246_912)], rows
        best[name] = min(times)
        if name == "delta":
            read = sum(r.files_read or 0 for r in dks.scan_report(df, list_files=False))
            assert read == kept == 1, (read, kept)
    return {"files_total": snap.files.num_rows, "files_read": read, "kernel_kept": kept,
            "delta_s": round(best["delta"], 3), "parquet_s": round(best["parquet"], 3)}


def _peak_mb(fn: object) -> float:
    """This (driver) process's peak RSS while `fn` runs: VmHWM reset to the current RSS first."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    fn()  # type: ignore[operator]
    with open("/proc/self/status") as f:
        return int(next(line for line in f if line.startswith("VmHWM")).split()[1]) / 1024


def _dml_with_deletion_vectors(spark: SparkSession, path: str, n_target: int, n_source: int) -> tuple[float, float]:
    """A MERGE upsert (half the source matches) and a DELETE of 10 % on a table with deletion vectors, run by
    the cluster; returns the driver's peak RSS (MB) during each."""
    from deltakernel.spark import DeltaTable as SparkDeltaTable

    spark.range(0, n_target, numPartitions=8).withColumn("v", F.lit(0)).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(path)
    source = spark.range(n_target - n_source // 2, n_target + n_source // 2, numPartitions=8).withColumn("v", F.lit(1))
    table = SparkDeltaTable.forPath(spark, path)
    merge_mb = _peak_mb(lambda: table.alias("t").merge(source.alias("s"), "t.id = s.id")
                        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    delete_mb = _peak_mb(lambda: table.delete("id % 10 = 3"))
    data = DeltaTable(path).to_pyarrow_table()
    ids = data.column("id").to_numpy()
    total = n_target + n_source // 2
    assert data.num_rows == total - total // 10, (data.num_rows, total)
    assert not (ids % 10 == 3).any()
    updated = int((data.column("v").to_numpy() == 1).sum())
    assert updated == len([i for i in range(n_target - n_source // 2, total) if i % 10 != 3])
    adds = DeltaTable(path).get_add_actions(flatten=True).to_pylist()
    assert any(a.get("deletion_vector") for a in adds), "no deletion vector written"
    return round(merge_mb, 1), round(delete_mb, 1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
