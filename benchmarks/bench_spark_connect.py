"""Spark Connect vs classic (issue 23): the same deltakernel operations through both session kinds.

One JVM (local[2]) serves both: a classic SparkSession started with Spark's Connect server plugin, and a Spark
Connect client of it in the same process - so the ratio is what the Connect protocol and deltakernel's Connect
paths cost, not a second Spark. Operations (each warmed up once, then timed `--repeat` times, alternating the
session kinds; medians):
* scan     - full read of a 1M-row, 40-file table: `load(p).agg(sum, count)`;
* point    - `load(p).where("id = <k>").collect()` (ids sorted across files: kernel skipping keeps 1 file);
* append   - `df.write.format("delta").mode("append").save(p)` of 100k rows;
* merge    - `DeltaTable.forPath(...).merge(1k rows, ...)` update + insert on a deletion-vector table.

Usage: ``.venv/bin/python benchmarks/bench_spark_connect.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

ROWS, FILES = 1_000_000, 40


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sessions() -> tuple[Any, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    import deltakernel.spark as dks

    port = _port()
    classic = (SparkSession.builder.master("local[2]").appName("bench-connect")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "2g")
               .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
               .config("spark.connect.grpc.binding.address", "127.0.0.1")
               .config("spark.connect.grpc.binding.port", str(port)).getOrCreate())
    classic.sparkContext.setLogLevel("ERROR")
    dks.enable(classic)
    remote = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    remote.conf.set("spark.sql.shuffle.partitions", "2")
    dks.enable(remote)
    return classic, remote


def build(path: str, dv: bool = False) -> None:
    import numpy as np
    import pyarrow as pa

    from deltakernel import write_deltalake

    per = ROWS // FILES
    conf = {"delta.enableDeletionVectors": "true"} if dv else None
    for i in range(FILES):
        ids = np.arange(i * per, (i + 1) * per, dtype=np.int64)
        write_deltalake(path, pa.table({"id": ids, "v": pa.array(ids * 2), "s": pa.array(np.char.mod("s%d", ids))}),
                        mode="append", configuration=conf if i == 0 else None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-connect-", dir=ROOT / "benchmarks" / "data"))
    try:
        table = str(work / "scan")
        build(table)
        classic, remote = sessions()
        kinds = {"classic": classic, "connect": remote}
        results: dict[str, dict[str, list[float]]] = {k: {} for k in kinds}
        from deltakernel.spark import DeltaTable

        counter = {"n": 0}

        def op_scan(spark: Any) -> None:
            from pyspark.sql import functions as F

            r = spark.read.format("delta").load(table).agg(F.sum("v"), F.count("*")).collect()
            assert r[0][1] == ROWS

        def op_point(spark: Any) -> None:
            rows = spark.read.format("delta").load(table).where("id = 123456").collect()
            assert [r.id for r in rows] == [123456]

        def op_append(spark: Any) -> None:
            counter["n"] += 1
            spark.range(0, 100_000).selectExpr("id", "id * 2 AS v", "'a' AS s").write.format("delta") \
                .mode("append").save(str(work / f"append_{counter['n'] % 2}"))

        merge_tables: dict[str, str] = {}

        def op_merge(spark: Any) -> None:
            key = "connect" if "connect" in type(spark).__module__ else "classic"
            counter["n"] += 1
            start = (counter["n"] * 7919) % (ROWS - 1000)
            src = spark.range(start, start + 1000).selectExpr("id", "id * 3 AS v", "'m' AS s")
            (DeltaTable.forPath(spark, merge_tables[key]).alias("t").merge(src.alias("u"), "t.id = u.id")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

        for key in kinds:
            merge_tables[key] = str(work / f"merge_{key}")
            build(merge_tables[key], dv=True)
        ops = {"scan (1M rows, 40 files)": op_scan, "point query (1 of 40 files)": op_point,
               "append 100k rows": op_append, "MERGE 1k rows (DV table)": op_merge}
        for name, op in ops.items():
            for kind, spark in kinds.items():
                _with_mode(kind, op, spark)  # warm-up
            for _ in range(args.repeat):
                for kind, spark in kinds.items():
                    t0 = time.perf_counter()
                    _with_mode(kind, op, spark)
                    results[kind].setdefault(name, []).append(time.perf_counter() - t0)
        print(f"### Spark Connect vs classic, one local[2] JVM, medians of {args.repeat}\n")
        print("| operation | classic s | connect s | connect / classic |\n|---|---|---|---|")
        for name in ops:
            c = statistics.median(results["classic"][name])
            r = statistics.median(results["connect"][name])
            print(f"| {name} | {c:.3f} | {r:.3f} | {r / c:.2f}x |")
        remote.client.close()
        classic.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _with_mode(kind: str, op: Any, spark: Any) -> None:
    """pyspark's functions build Connect Columns only with SPARK_CONNECT_MODE_ENABLED (as in a Connect process)."""
    if kind == "connect":
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    else:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    try:
        op(spark)
    finally:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


if __name__ == "__main__":
    main()
