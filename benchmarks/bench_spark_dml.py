"""Spark DELETE / UPDATE of 1 % through deltakernel (distributed jobs) vs a hand-written Spark copy-on-write.

Tables: bench_dml's ``dml_5m`` (no deletion vectors) and ``dml_5m_dv`` (``delta.enableDeletionVectors``):
5,000,000 rows in 11 files; ``id % 100 = 7`` matches 50,000 rows, some in every file.

One SparkSession (local[2], 2 shuffle partitions, 2 GB driver): JVM start-up is not what is compared. Every
run works on a fresh copy of the table (the copy is not timed). Contenders:
* hand-written Spark copy-on-write: ``spark.read.parquet(*files).where(NOT cond).write.parquet(out)``
  (reads and rewrites every row, no Delta commit: the floor of any copy-on-write);
* ``DeltaTable.forPath(spark, p).delete(cond)`` copy-on-write and with deletion vectors;
* ``DeltaTable.forPath(spark, p).update(cond, {value: value + 1, name: 'updated'})`` both ways.
Each run's result is checked outside the timing (rows left, read by deltalake).

Driver memory: the Python driver's and the driver JVM's peak RSS (VmHWM reset before each run) are
reported per contender (max over runs). The Python driver's must not grow with the rows deleted (the DV
job returns one row per touched file). In local mode the executors run inside the driver JVM, so the JVM
figure is Spark's working memory, not the driver's alone (the standalone-cluster test measures that).

Targets (issue 12): DELETE with deletion vectors well under the hand-written copy-on-write.

Usage: ``.venv/bin/python benchmarks/bench_spark_dml.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dml import PLAIN, PREDICATE, TMP_DIR, UPDATES, WITH_DV, make_tables

HAND = "hand-written Spark copy-on-write (read, filter, write)"
DEL_COW = "deltakernel Spark DELETE (copy-on-write)"
DEL_DV = "deltakernel Spark DELETE (deletion vectors)"
UPD_COW = "deltakernel Spark UPDATE (copy-on-write)"
UPD_DV = "deltakernel Spark UPDATE (deletion vectors)"
TOTAL_ROWS = 5_000_000
MATCHED = 50_000


def _reset_peak(pid: int | str) -> None:
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_mb(pid: int | str) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _rows_left(path: str) -> int:
    import deltalake

    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return int(qb.execute("SELECT count(*) AS n FROM t").read_all().column(0)[0].as_py())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    make_tables()
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks
    from deltakernel import DeltaTable as KernelTable
    from deltakernel.spark import DeltaTable

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    dks.enable(spark)
    jvm_pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]
    TMP_DIR.mkdir(parents=True, exist_ok=True)

    def hand_written(path: str) -> None:
        files = KernelTable(path).file_uris()
        spark.read.parquet(*files).where(f"NOT ({PREDICATE})").write.mode("overwrite").parquet(path + "_rewritten")

    def delete(path: str) -> None:
        DeltaTable.forPath(spark, path).delete(PREDICATE)

    def update(path: str) -> None:
        DeltaTable.forPath(spark, path).update(PREDICATE, UPDATES)

    def rewritten(path: str) -> int:
        return TOTAL_ROWS - spark.read.parquet(path + "_rewritten").count()

    def deleted(path: str) -> int:
        return TOTAL_ROWS - _rows_left(path)

    def updated(path: str) -> int:
        assert _rows_left(path) == TOTAL_ROWS
        return int(KernelTable(path).history(1)[0]["operationMetrics"]["numUpdatedRows"])

    contenders: list[tuple[str, Path, Callable[[str], None], Callable[[str], int]]] = [
        (HAND, PLAIN, hand_written, rewritten), (DEL_COW, PLAIN, delete, deleted), (DEL_DV, WITH_DV, delete, deleted),
        (UPD_COW, PLAIN, update, updated), (UPD_DV, WITH_DV, update, updated),
    ]
    results: dict[str, tuple[list[float], float, float]] = {}
    for rep in range(args.repeat + 1):  # the first round warms the JVM up and is not counted
        for name, source, op, check in contenders:
            out = TMP_DIR / f"spark_dml_{abs(hash(name)) % 10**8}"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(str(out) + "_rewritten", ignore_errors=True)
            shutil.copytree(source, out)
            os.sync()
            _reset_peak("self")
            _reset_peak(jvm_pid)
            start = time.perf_counter()
            op(str(out))
            seconds = time.perf_counter() - start
            py_mb, jvm_mb = _peak_mb("self"), _peak_mb(jvm_pid)
            changed = check(str(out))
            if changed != MATCHED:
                raise RuntimeError(f"{name}: {changed} rows changed, expected {MATCHED}")
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(str(out) + "_rewritten", ignore_errors=True)
            if rep == 0:
                continue
            times, py_peak, jvm_peak = results.get(name, ([], 0.0, 0.0))
            results[name] = ([*times, seconds], max(py_peak, py_mb), max(jvm_peak, jvm_mb))
            print(f"  [{rep}/{args.repeat}] {name}: {seconds:.2f}s, driver peak RSS python {py_mb:.0f} MB, "
                  f"JVM {jvm_mb:.0f} MB", file=sys.stderr, flush=True)
    spark.stop()
    best = {n: min(t) for n, (t, _, _) in results.items()}
    print(f"## Spark DML 1 % ({MATCHED:,} of {TOTAL_ROWS:,} rows, 11 files, every file touched), local[2], "
          f"best of {args.repeat}\n")
    print("| contender | best s | median s | vs hand-written CoW | driver peak RSS python / JVM MB |")
    print("|---|---:|---:|---:|---:|")
    for name, (times, py_peak, jvm_peak) in results.items():
        print(f"| {name} | {best[name]:.2f} | {statistics.median(times):.2f} | {best[name] / best[HAND]:.2f}x | "
              f"{py_peak:.0f} / {jvm_peak:.0f} |")


if __name__ == "__main__":
    main()
