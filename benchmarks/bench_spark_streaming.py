"""Spark Structured Streaming with deltakernel's Delta source and sink (issue 13).

One SparkSession (local[2]) for everything, as bench_spark.py: JVM start-up is not what is compared.
* source throughput (one uncounted warm-up run each): the whole table read as a stream (`readStream.format("delta")`, Trigger.AvailableNow,
  maxFilesPerTrigger=1000, into Spark's `noop` sink) vs a batch read of the same files
  (`spark.read.format("delta")`: the native Parquet plan, and the registered Python data source, which reads the
  files the way the stream does: Arrow batches from `Scan.read_file`). Rows/s and ratio to the batch reads.
* end-to-end latency: a processingTime("100 milliseconds") query source -> Delta sink; the parent appends
  `--append-rows` rows to the source (deltakernel write) and waits until the sink's log has the batch (its
  `txn` version moves): seconds from the append's commit to the sink's commit, median and max over
  `--appends` appends.
Source table: `--rows` rows in `--files` files written by deltalake (benchmarks/data/stream_<rows>_<files>).

Usage: ``.venv/bin/python benchmarks/bench_spark_streaming.py [--repeat N] [--rows N] [--files N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import load_average, ratio, table

DATA = Path(__file__).resolve().parent / "data"
STREAM = "stream: readStream.format('delta') availableNow -> noop"
NATIVE = "batch: read.format('delta') native plan -> noop"
PYSRC = "batch: registered Python source -> noop"


def make_source(rows: int, files: int) -> Path:
    import deltalake
    import numpy as np
    import pyarrow as pa

    root = DATA / f"stream_{rows}_{files}"
    if (root / "_delta_log").exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    per = -(-rows // files)
    rng = np.random.default_rng(7)
    for i in range(files):
        n = min(per, rows - i * per)
        ids = np.arange(i * per, i * per + n, dtype=np.int64)
        data = pa.table({"id": ids, "value": rng.random(n), "name": pa.array(np.char.add("n", (ids % 1000).astype(str))),
                         "ts": pa.array(ids * 1_000_000, pa.timestamp("us", tz="UTC"))})
        deltalake.write_deltalake(str(root), data, mode="append")
    return root


def timed(fn, repeat: int) -> tuple[float, float]:
    """Best and median of `repeat` runs after one uncounted warm-up run (the first streaming query of a session
    starts Spark's Python workers and imports pyspark + deltakernel in them: ~5 s once, not per query)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--appends", type=int, default=10)
    ap.add_argument("--append-rows", type=int, default=100)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    src = str(make_source(args.rows, args.files))

    from pyspark.sql import SparkSession

    import deltakernel.spark as dks
    from deltakernel import DeltaTable, write_deltalake
    from deltakernel.spark.scan.datasource import python_source_frame

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    dks.enable(spark)
    work = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    try:
        def stream_once() -> None:
            ck = work / f"ck-{time.perf_counter_ns()}"
            q = (spark.readStream.format("delta").load(src).writeStream.format("noop")
                 .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
            q.awaitTermination()
            assert q.exception() is None, q.exception()
            shutil.rmtree(ck, ignore_errors=True)
            progress.append([p["durationMs"] for p in q.recentProgress if p.get("numInputRows")])

        progress: list[list[dict[str, int]]] = []

        results = {
            STREAM: timed(stream_once, args.repeat),
            NATIVE: timed(lambda: spark.read.format("delta").load(src).write.format("noop").mode("overwrite").save(),
                          args.repeat),
            PYSRC: timed(lambda: python_source_frame(spark, src, {}).write.format("noop").mode("overwrite").save(),
                         args.repeat),
        }
        rows = []
        for name, (best, median) in results.items():
            rows.append([name, f"{best:.2f}", f"{median:.2f}", f"{args.rows / best / 1e6:.2f}",
                         ratio(best, results[NATIVE][0]), ratio(best, results[PYSRC][0])])
        print(f"source throughput: {args.rows:,} rows in {args.files} files, best of {args.repeat} "
              f"(load {load_average()})")
        print(table(["contender", "best s", "median s", "M rows/s", "time vs native batch", "time vs Python-source batch"],
                    rows))
        last = progress[-1] if progress else []
        add = sum(d.get("addBatch", 0) for d in last) / 1000
        trig = sum(d.get("triggerExecution", 0) for d in last) / 1000
        print(f"\nlast streaming query: {len(last)} batch(es), addBatch (reading the files into the sink) {add:.2f} s, "
              f"triggerExecution {trig:.2f} s; the rest of its wall time is query start-up and shutdown (Spark starts "
              "a Python process per query for a Python streaming source's driver side)\n")

        # ------------------------------------------------------------------ latency of a small append
        lsrc, ldst, lck = str(work / "lsrc"), str(work / "ldst"), str(work / "lck")
        import pyarrow as pa

        def small(k: int) -> pa.Table:
            ids = pa.array(range(k * args.append_rows, (k + 1) * args.append_rows), pa.int64())
            return pa.table({"id": ids, "k": pa.array([k] * args.append_rows, pa.int64())})

        write_deltalake(lsrc, small(0))
        q = (spark.readStream.format("delta").load(lsrc).writeStream.format("delta")
             .option("checkpointLocation", lck).trigger(processingTime="100 milliseconds").start(ldst))
        lat = []
        try:
            q.processAllAvailable()
            for k in range(1, args.appends + 1):
                before = DeltaTable(ldst).version()
                write_deltalake(lsrc, small(k), mode="append")
                t0 = time.perf_counter()
                while DeltaTable(ldst).version() == before:
                    if q.exception() is not None:
                        raise RuntimeError(q.exception())
                    time.sleep(0.005)
                lat.append(time.perf_counter() - t0)
        finally:
            q.stop()
        got = DeltaTable(ldst).to_pyarrow_table().num_rows
        assert got == (args.appends + 1) * args.append_rows, got
        print(f"\nend-to-end latency, processingTime 100 ms, {args.append_rows}-row appends x {args.appends}: "
              f"median {statistics.median(lat):.3f} s, min {min(lat):.3f} s, max {max(lat):.3f} s")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
