"""Spark maintenance (issue 12): OPTIMIZE and deep CLONE through `deltakernel.spark.DeltaTable` vs the embedded
engine and deltalake on the same tables (bench_optimize.py's `optimize_1000`: 5M rows in 1,000 files, and
`zorder_100`: 2M rows in 100 files).

One SparkSession (local[2]) for the Spark contenders: JVM and Python-worker start-up (a warm-up OPTIMIZE and
CLONE of a tiny table run first) are not what is compared. Every run gets a
fresh copy of the table (copying is not timed); in-process calls for the embedded engine and deltalake (the
Spark driver is in-process too). Each result is checked: the row count (deltalake's reader) and files left.
* compaction: `DeltaTable.forPath(spark, p).optimize().executeCompaction()` (one Spark task per bin, the
  kernel's reader and writer on the executors) vs `deltakernel.DeltaTable(p).optimize.compact()` vs
  `deltalake.DeltaTable(p).optimize.compact()`, plus a hand-written Spark rewrite of the same rows
  (`spark.read.parquet(*files).coalesce(1).write.parquet`, no Delta) as the floor of Spark moving the data;
* Z-order: `executeZOrderBy("x", "y", "k")` vs both libraries' `z_order` (target 2 MiB as bench_optimize);
* deep clone: `clone(target, isShallow=False)` (the copy as a Spark job) vs `deltakernel.DeltaTable.clone`.
Best and median wall time of `--repeat` runs.

Usage: ``.venv/bin/python benchmarks/bench_spark_maintenance.py [--repeat N]``
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

from bench_optimize import SMALL, TMP_DIR, Z_COLUMNS, Z_TARGET, ZTABLE, make_tables


def _fresh(source: Path, name: str) -> str:
    out = TMP_DIR / f"spark_maint_{name}"
    if out.exists():
        shutil.rmtree(out)
    TMP_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copytree(source, out)
    os.sync()
    return str(out)


def _check(path: str) -> tuple[int, int]:
    import deltalake

    dt = deltalake.DeltaTable(path)
    qb = deltalake.QueryBuilder().register("t", dt)
    return qb.execute("SELECT count(*) AS n FROM t").read_all().column(0)[0].as_py(), len(dt.file_uris())


def measure(name: str, source: Path, op: Callable[[str], None], repeat: int,
            check: Callable[[str], object] = _check) -> tuple[str, float, float, object]:
    times = []
    result = None
    for i in range(repeat):
        path = _fresh(source, f"{abs(hash(name)) % 10**8}_{i}")
        start = time.perf_counter()
        op(path)
        times.append(time.perf_counter() - start)
        got = check(path)
        if result is not None and got != result:
            raise RuntimeError(f"{name}: result changed between runs: {result!r} vs {got!r}")
        result = got
        shutil.rmtree(path, ignore_errors=True)
        for extra in TMP_DIR.glob("spark_maint_*_target"):
            shutil.rmtree(extra, ignore_errors=True)
        print(f"  [{i + 1}/{repeat}] {name}: {times[-1]:.2f}s -> {got}", file=sys.stderr, flush=True)
    return name, min(times), statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    make_tables()
    import deltalake
    from pyspark.sql import SparkSession

    import deltakernel
    import deltakernel.spark as dks
    from deltakernel.spark import DeltaTable

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    dks.enable(spark)
    _warm_up(spark)

    def spark_rewrite(path: str) -> None:
        files = deltakernel.DeltaTable(path).file_uris()
        spark.read.parquet(*files).coalesce(1).write.mode("overwrite").parquet(path + "_rewrite")
        shutil.rmtree(path + "_rewrite", ignore_errors=True)

    def clone_check(path: str) -> object:
        return _check(path + "_target")

    r = args.repeat
    rows = [
        measure("Spark optimize().executeCompaction()", SMALL,
                lambda p: DeltaTable.forPath(spark, p).optimize().executeCompaction().collect(), r),
        measure("deltakernel optimize.compact()", SMALL, lambda p: deltakernel.DeltaTable(p).optimize.compact(), r),
        measure("deltalake optimize.compact()", SMALL, lambda p: deltalake.DeltaTable(p).optimize.compact(), r),
        measure("hand-written Spark rewrite (parquet, no Delta)", SMALL, spark_rewrite, r,
                check=lambda p: _check(p)[0]),
    ]
    zrows = [
        measure(f"Spark executeZOrderBy{tuple(Z_COLUMNS)}", ZTABLE, lambda p: _spark_zorder(spark, p), r),
        measure("deltakernel optimize.z_order()", ZTABLE,
                lambda p: deltakernel.DeltaTable(p).optimize.z_order(Z_COLUMNS, target_size=Z_TARGET), r),
        measure("deltalake optimize.z_order()", ZTABLE,
                lambda p: deltalake.DeltaTable(p).optimize.z_order(Z_COLUMNS, target_size=Z_TARGET), r),
    ]
    crows = [
        measure("Spark clone(isShallow=False)", SMALL,
                lambda p: DeltaTable.forPath(spark, p).clone(p + "_target", isShallow=False), r, check=clone_check),
        measure("deltakernel clone(shallow=False)", SMALL,
                lambda p: deltakernel.DeltaTable(p).clone(p + "_target", shallow=False), r, check=clone_check),
    ]
    for title, items in (("OPTIMIZE compaction of optimize_1000 (5M rows, 1,000 files)", rows),
                         (f"OPTIMIZE Z-order of zorder_100 (2M rows, 100 files, target {Z_TARGET >> 20} MiB)", zrows),
                         ("deep CLONE of optimize_1000", crows)):
        base = items[0][1]
        print(f"\n### {title}, local[2], best of {r}\n")
        print("| contender | best s | median s | vs Spark contender | result (rows, files) |")
        print("|---|---:|---:|---:|---|")
        for name, best, med, result in items:
            print(f"| {name} | {best:.2f} | {med:.2f} | {best / base:.2f}x | {result} |")
    spark.stop()


def _warm_up(spark) -> None:
    """Start the Python workers and import deltakernel in them (a pipeline pays that once per application:
    ~3-4 s on the first Python job of a local[2] session), so the timings compare steady-state work."""
    import tempfile

    import pyarrow as pa

    from deltakernel import write_deltalake
    from deltakernel.spark import DeltaTable

    tmp = tempfile.mkdtemp(prefix="bench_spark_maint_warm_")
    for i in range(4):
        write_deltalake(f"{tmp}/t", pa.table({"id": [i, i + 10]}), mode="append")
    DeltaTable.forPath(spark, f"{tmp}/t").optimize().executeCompaction().collect()
    DeltaTable.forPath(spark, f"{tmp}/t").clone(f"{tmp}/c", isShallow=False)
    shutil.rmtree(tmp, ignore_errors=True)


def _spark_zorder(spark, path: str) -> None:
    from deltakernel.spark import DeltaTable

    spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(Z_TARGET))
    try:
        DeltaTable.forPath(spark, path).optimize().executeZOrderBy(*Z_COLUMNS).collect()
    finally:
        spark.conf.unset("spark.databricks.delta.optimize.maxFileSize")


if __name__ == "__main__":
    main()
