"""deltakernel on PySpark vs native Spark Parquet on the same files (scan_10m: 10M rows, 20 files).

One SparkSession (local[2]) for everything: JVM start-up is not what is compared. Each measurement is
repeated; best and median wall time are reported.
* full scan: every column of every row into Spark's `noop` sink -
  `spark.read.format("delta").load(p)` (native plan over the kernel's file list) vs
  `spark.read.parquet(*files)`, plus the registered Python data source for reference;
* selective scan: `where(id between ...)` matching one file: files the kernel skipped, and time;
* write: the same 10M rows written by `df.write.format("delta")` (the native path: Spark's Parquet writer +
  footer stats) vs `df.write.parquet`, plus the `mapInArrow` fallback path (`deltakernel.writePath=arrow`,
  used for constraints, replaceWhere, casts, lists/maps) for reference.
Targets (issue 4): full scan >= 0.8x native throughput, write >= 0.7x.

Usage: ``.venv/bin/python benchmarks/bench_spark.py [--repeat N]``
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

from make_tables import SCAN_TABLE, make_scan_table

NATIVE_SCAN = "native spark.read.parquet(*files)"
DK_SCAN = "deltakernel format('delta').load"
NATIVE_WRITE = "native df.write.parquet"
DK_WRITE = "deltakernel df.write.format('delta')"
DK_WRITE_ARROW = "deltakernel write, mapInArrow fallback"


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    path = str(SCAN_TABLE)
    if not (SCAN_TABLE / "_delta_log").exists():
        make_scan_table()
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks
    from deltakernel import DeltaTable
    from deltakernel.spark.scan.datasource import python_source_frame

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    dks.enable(spark)
    files = DeltaTable(path).file_uris()
    n_rows = DeltaTable(path).count()

    def noop(df) -> None:
        df.write.format("noop").mode("overwrite").save()

    results: list[tuple[str, float, float]] = []

    def run(name: str, fn) -> None:
        fn()  # warm-up (JIT, file cache)
        best, med = timed(fn, args.repeat)
        results.append((name, best, med))
        print(f"{name}: best {best:.2f}s median {med:.2f}s", file=sys.stderr)

    run(NATIVE_SCAN, lambda: noop(spark.read.parquet(*files)))
    run(DK_SCAN, lambda: noop(spark.read.format("delta").load(path)))
    run("deltakernel Python data source", lambda: noop(python_source_frame(spark, path, {})))

    lo = 4_000_000
    sel = spark.read.format("delta").load(path).where(f"id >= {lo} AND id < {lo + 1000}")
    from deltakernel.spark import scan_report

    skipped = sum(r.files_total - r.files_kept for r in scan_report(sel))  # filtered frames: via the report
    run("native selective (all files opened)", lambda: noop(spark.read.parquet(*files).where(
        f"id >= {lo} AND id < {lo + 1000}")))
    run("deltakernel selective", lambda: noop(spark.read.format("delta").load(path).where(
        f"id >= {lo} AND id < {lo + 1000}")))

    src = spark.read.parquet(*files).cache()
    src.count()
    tmp = tempfile.mkdtemp(prefix="bench_spark_")

    def write_parquet() -> None:
        out = os.path.join(tmp, "pq")
        shutil.rmtree(out, ignore_errors=True)
        src.write.mode("overwrite").parquet(out)

    def write_delta() -> None:
        out = os.path.join(tmp, "delta")
        shutil.rmtree(out, ignore_errors=True)
        src.write.format("delta").mode("overwrite").save(out)

    def write_delta_arrow() -> None:
        out = os.path.join(tmp, "delta_arrow")
        shutil.rmtree(out, ignore_errors=True)
        src.write.format("delta").mode("overwrite").option("deltakernel.writePath", "arrow").save(out)

    run(NATIVE_WRITE, write_parquet)
    run(DK_WRITE, write_delta)
    run(DK_WRITE_ARROW, write_delta_arrow)
    shutil.rmtree(tmp, ignore_errors=True)

    by = {name: best for name, best, _ in results}
    print(f"## Spark (local[2], {n_rows:,} rows, {len(files)} files, best of {args.repeat})\n")
    print("| contender | best s | median s | rows/s (best) |")
    print("|---|---:|---:|---:|")
    for name, best, med in results:
        print(f"| {name} | {best:.2f} | {med:.2f} | {n_rows / best:,.0f} |")
    print()
    print(f"- full scan: deltakernel {by[NATIVE_SCAN] / by[DK_SCAN]:.2f}x native throughput")
    print(f"- selective scan: kernel skipped {skipped} of {len(files)} files; "
          f"{by['native selective (all files opened)'] / by['deltakernel selective']:.2f}x native")
    med = {name: m for name, _, m in results}
    print(f"- write: deltakernel {by[NATIVE_WRITE] / by[DK_WRITE]:.2f}x native throughput "
          f"(median {med[NATIVE_WRITE] / med[DK_WRITE]:.2f}x); mapInArrow fallback "
          f"{by[NATIVE_WRITE] / by[DK_WRITE_ARROW]:.2f}x (median {med[NATIVE_WRITE] / med[DK_WRITE_ARROW]:.2f}x)")
    spark.stop()


if __name__ == "__main__":
    main()
