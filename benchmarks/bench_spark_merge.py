"""Spark MERGE 1 % upsert through deltakernel (distributed jobs) vs a hand-written Spark copy-on-write upsert.

Tables: bench_dml's ``dml_5m`` (no deletion vectors) and ``dml_5m_dv`` (``delta.enableDeletionVectors``):
5,000,000 rows in 11 files. Source: 50,000 rows (1 %): 45,000 existing ids (``id % 100 = 7``, new
``value`` / ``name``) and 5,000 new ids, written once as a Parquet file and read by Spark in every run.

One SparkSession (local[2], 2 shuffle partitions, 2 GB driver): JVM start-up is not what is compared. Every
run works on a fresh copy of the table (the copy is not timed). Contenders:
* hand-written Spark copy-on-write: read every target file, left-anti-join with the source on ``id``, union
  the source, write Parquet (no Delta commit: the floor of a whole-table rewrite);
* ``DeltaTable.forPath(spark, p).alias("t").merge(src.alias("s"), "t.id = s.id").whenMatchedUpdateAll()
  .whenNotMatchedInsertAll().execute()`` copy-on-write and with deletion vectors.
Each run's result is checked outside the timing (rows after, rows updated). The Python driver's and the
driver JVM's peak RSS are reported per contender (max over runs); in local mode the executors run in the
driver JVM.

Target (issue 12): MERGE with deletion vectors <= 0.5x the hand-written copy-on-write.

Usage: ``.venv/bin/python benchmarks/bench_spark_merge.py [--repeat N]``
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dml import PLAIN, TMP_DIR, WITH_DV, make_tables
from bench_spark_dml import _peak_mb, _reset_peak, _rows_left

HAND = "hand-written Spark copy-on-write (anti-join, union, write)"
COW = "deltakernel Spark MERGE (copy-on-write)"
DV = "deltakernel Spark MERGE (deletion vectors)"
TOTAL_ROWS = 5_000_000
UPDATED = 45_000
INSERTED = 5_000
SOURCE = TMP_DIR / "spark_merge_source.parquet"


def make_source() -> None:
    """45,000 existing rows changed + 5,000 new ones, as one Parquet file."""
    import deltalake
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if SOURCE.exists():
        return
    TMP_DIR.mkdir(parents=True, exist_ok=True)
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(PLAIN)))
    hit = pa.table(qb.execute("SELECT * FROM t WHERE id % 100 = 7 ORDER BY id").read_all()).slice(0, UPDATED)
    hit = hit.set_column(1, "value", pc.add(hit.column("value"), 1.0)).set_column(
        2, "name", pa.array(["merged"] * hit.num_rows))
    top = int(pa.table(qb.execute("SELECT max(id) AS m FROM t").read_all()).column(0)[0].as_py())
    new = hit.slice(0, INSERTED).set_column(0, "id", pa.array(range(top + 1, top + 1 + INSERTED), pa.int64()))
    pq.write_table(pa.concat_tables([hit, new]), SOURCE)


def prepared_session(confs: dict[str, str] | None = None) -> Any:
    """The tables and the MERGE source written (once), and a `local[2]` session with deltakernel enabled
    (`confs`: more session confs, e.g. the Connect server plugin)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    make_tables()
    make_source()
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g"))
    for key, value in (confs or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    dks.enable(spark)
    return spark


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    spark = prepared_session()
    from deltakernel import DeltaTable as KernelTable
    from deltakernel.spark import DeltaTable

    jvm_pid = spark.sparkContext._gateway.proc.pid  # type: ignore[attr-defined]

    def source() -> object:
        return spark.read.parquet(str(SOURCE))

    def hand_written(path: str) -> None:
        target = spark.read.parquet(*KernelTable(path).file_uris())
        src = source()
        target.join(src, "id", "left_anti").unionByName(src).write.mode("overwrite").parquet(path + "_rewritten")

    def merge(path: str) -> None:
        (DeltaTable.forPath(spark, path).alias("t").merge(source().alias("s"), "t.id = s.id")  # type: ignore[attr-defined]
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

    def rewritten(path: str) -> tuple[int, int]:
        out = spark.read.parquet(path + "_rewritten")
        return out.count(), out.where("name = 'merged'").count() - INSERTED

    def merged(path: str) -> tuple[int, int]:
        metrics = KernelTable(path).history(1)[0]["operationMetrics"]
        return _rows_left(path), int(metrics["numTargetRowsUpdated"])

    contenders: list[tuple[str, Path, Callable[[str], None], Callable[[str], tuple[int, int]]]] = [
        (HAND, PLAIN, hand_written, rewritten), (COW, PLAIN, merge, merged), (DV, WITH_DV, merge, merged)]
    results: dict[str, tuple[list[float], float, float]] = {}
    for rep in range(args.repeat + 1):  # the first round warms the JVM up and is not counted
        for name, table, op, check in contenders:
            out = TMP_DIR / f"spark_merge_{abs(hash(name)) % 10**8}"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(str(out) + "_rewritten", ignore_errors=True)
            shutil.copytree(table, out)
            os.sync()
            _reset_peak("self")
            _reset_peak(jvm_pid)
            start = time.perf_counter()
            op(str(out))
            seconds = time.perf_counter() - start
            py_mb, jvm_mb = _peak_mb("self"), _peak_mb(jvm_pid)
            got = check(str(out))
            if got != (TOTAL_ROWS + INSERTED, UPDATED):
                raise RuntimeError(f"{name}: (rows after, rows updated) = {got}, "
                                   f"expected {(TOTAL_ROWS + INSERTED, UPDATED)}")
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
    print(f"## Spark MERGE 1 % upsert ({UPDATED:,} updates + {INSERTED:,} inserts into {TOTAL_ROWS:,} rows, "
          f"11 files), local[2], best of {args.repeat}\n")
    print("| contender | best s | median s | vs hand-written CoW | driver peak RSS python / JVM MB |")
    print("|---|---:|---:|---:|---:|")
    for name, (times, py_peak, jvm_peak) in results.items():
        print(f"| {name} | {best[name]:.2f} | {statistics.median(times):.2f} | {best[name] / best[HAND]:.2f}x | "
              f"{py_peak:.0f} / {jvm_peak:.0f} |")


if __name__ == "__main__":
    main()
