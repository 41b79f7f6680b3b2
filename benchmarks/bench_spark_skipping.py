"""Delta file skipping on Spark (issue 21): a 2,000-file Z-ordered table, point and range queries in several
shapes, against the landed code's `load().where()` path and a plain `spark.read.parquet` of the same files.

Table (`benchmarks/data/skipping_2000`, built once): 2M rows, `x`, `y` random in [0, 2^20), `payload` text;
OPTIMIZE ZORDER BY (x, y) into ~2,000 files, then VACUUM (retention 0), so the directory holds exactly the
live files and `spark.read.parquet(dir)` reads the same files as the Delta table.

Contenders, each in its own process with its own SparkSession (local[2], same settings):
* `new`     - this tree: SQL over `delta.\\`path\\``, a catalog name, a join and a permanent view, plus
              `load().where()`, and a full-scan aggregate;
* `old`     - the landed code before issue 21 (commit BASELINE, extracted with `git archive` under
              `benchmarks/data/_baseline/`): `load().where()` (its skipping path) and the full-scan aggregate;
* `parquet` - `spark.read.parquet(dir)` with the same filters and aggregate.
Every query is warmed up once, then timed `--repeat` times (best and median wall time of `collect()`,
planning included). For `new`, the files Spark read (its scan metric) are checked against the files the
kernel's own skipping keeps for the same predicate: they must be equal.

Targets: each shape <= 1.1x the old `load().where()`; point query <= 0.5x parquet; full scan >= 0.8x parquet
throughput.

Usage: ``.venv/bin/python benchmarks/bench_spark_skipping.py [--repeat N] [--rebuild]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
TABLE = DATA / "skipping_2000"
BASELINE = "54c18a2"  # main before issue 21 (session 19's last commit)
ROWS = 2_000_000
WARMUP = 3
POINT = "{p}x = {x} AND {p}y = {y}"
RANGE = "{p}x BETWEEN {lo} AND {hi}"


def build_table(rebuild: bool) -> None:
    if (TABLE / "_delta_log").exists() and not rebuild:
        return
    import numpy as np
    import pyarrow as pa

    from deltakernel import DeltaTable, write_deltalake

    shutil.rmtree(TABLE, ignore_errors=True)
    rng = np.random.default_rng(21)
    x = rng.integers(0, 1 << 20, ROWS)
    y = rng.integers(0, 1 << 20, ROWS)
    payload = pa.array([f"row-{i:08d}" for i in range(ROWS)])
    write_deltalake(str(TABLE), pa.table({"x": pa.array(x, pa.int64()), "y": pa.array(y, pa.int64()),
                                          "payload": payload}))
    dt = DeltaTable(str(TABLE))
    size = sum(dt.snapshot.files.column("size").to_pylist())
    dt.optimize.z_order(["x", "y"], target_size=max(1, size // 2000))
    dt = DeltaTable(str(TABLE))
    dt.vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    print(f"built {TABLE}: {dt.snapshot.files.num_rows} files", file=sys.stderr)


def baseline_src() -> Path:
    out = DATA / "_baseline"
    if not (out / "src" / "deltakernel").exists():
        out.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", BASELINE, "src"], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    return out / "src"


def probe_values() -> dict[str, int]:
    import pyarrow.dataset as ds

    first = ds.dataset(str(TABLE), format="parquet").head(1).to_pylist()[0]
    return {"x": first["x"], "y": first["y"], "lo": first["x"], "hi": first["x"] + 2_000}


# ----------------------------------------------------------------------------- worker (one contender)
def worker(kind: str, repeat: int) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "2g").config("spark.sql.warehouse.dir", str(DATA / f"_wh_{kind}"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    path = str(TABLE)
    v = probe_values()
    point, rng = POINT.format(p="", **v), RANGE.format(p="", **v)
    queries: dict[str, object] = {}
    if kind in ("new", "old"):
        import deltakernel.spark as dks

        dks.enable(spark)
        load = lambda: spark.read.format("delta").load(path)  # noqa: E731
        queries["load().where point"] = lambda: load().where(point)
        queries["load().where range"] = lambda: load().where(rng)
        queries["full scan"] = lambda: load().selectExpr("count(*)", "sum(x)", "max(payload)")
    if kind == "new":
        spark.sql("CREATE DATABASE IF NOT EXISTS bench")
        spark.sql("DROP TABLE IF EXISTS bench.t")
        spark.sql(f"CREATE TABLE bench.t USING delta LOCATION '{path}'")
        spark.sql("CREATE OR REPLACE VIEW bench.v AS SELECT x, y, payload FROM bench.t")
        spark.createDataFrame([(v["x"], "dim")], "x long, name string").createOrReplaceTempView("dims")
        for label, form in (("point", POINT), ("range", RANGE)):
            c, tc = form.format(p="", **v), form.format(p="t.", **v)
            queries[f"SQL path {label}"] = lambda c=c: spark.sql(f"SELECT x, y, payload FROM delta.`{path}` WHERE {c}")
            queries[f"SQL catalog {label}"] = lambda c=c: spark.sql(f"SELECT x, y, payload FROM bench.t WHERE {c}")
            queries[f"SQL join {label}"] = lambda c=tc: spark.sql(
                f"SELECT t.x, t.payload, d.name FROM bench.t t JOIN dims d ON t.x = d.x WHERE {c}")
            queries[f"SQL view {label}"] = lambda c=c: spark.sql(f"SELECT * FROM bench.v WHERE {c}")
    pq = lambda: spark.read.parquet(path)  # noqa: E731  (the same files: the directory was vacuumed)
    queries["parquet point"] = lambda: pq().where(point)
    queries["parquet range"] = lambda: pq().where(rng)
    queries["parquet full scan"] = lambda: pq().selectExpr("count(*)", "sum(x)", "max(payload)")
    times: dict[str, list[float]] = {name: [] for name in queries}
    files: dict[str, int | None] = {}
    rows: dict[str, int] = {}
    for rep in range(WARMUP + repeat):  # round-robin: JIT warm-up and background load hit every query alike
        for name, make in queries.items():
            t0 = time.perf_counter()
            df = make()
            got = df.collect()
            elapsed = time.perf_counter() - t0
            if rep < WARMUP:
                continue
            times[name].append(elapsed)
            rows[name] = len(got)
            if kind == "new" and not name.startswith("parquet"):
                from deltakernel.spark import scan_report

                files[name] = sum(r.files_read or 0 for r in scan_report(df, list_files=False))
    results = {name: {"best": min(t), "median": statistics.median(t), "rows": rows[name],
                      "files_read": files.get(name)} for name, t in times.items()}
    if kind == "new":
        results["_kernel_kept"] = kernel_kept(v)
    print("@@RESULT@@" + json.dumps(results))
    spark.stop()


def kernel_kept(v: dict[str, int]) -> dict[str, int]:
    """Files the kernel's own skipping keeps for the point and range predicates (the reference)."""
    from deltakernel import DeltaTable
    from deltakernel.kernel.expressions.predicate import And, Column, Comparison, Literal
    from deltakernel.kernel.scan.scan import Scan

    snap = DeltaTable(str(TABLE)).snapshot
    point = And(Comparison("=", Column("x"), Literal(v["x"])), Comparison("=", Column("y"), Literal(v["y"])))
    rng = And(Comparison(">=", Column("x"), Literal(v["lo"])), Comparison("<=", Column("x"), Literal(v["hi"])))
    return {"point": Scan(snap, predicate=point).plan().num_rows,
            "range": Scan(snap, predicate=rng).plan().num_rows, "total": snap.files.num_rows}


def run_worker(kind: str, repeat: int) -> dict:
    env = dict(os.environ)
    src = baseline_src() if kind == "old" else ROOT / "src"
    env["PYTHONPATH"] = str(src)
    env["PYSPARK_PYTHON"] = sys.executable
    out = subprocess.run([sys.executable, __file__, "--worker", kind, "--repeat", str(repeat)], env=env,
                         capture_output=True, text=True, timeout=3600)
    line = next((x for x in out.stdout.splitlines() if x.startswith("@@RESULT@@")), None)
    if line is None:
        raise SystemExit(f"{kind} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")
    return json.loads(line[len("@@RESULT@@"):])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--worker")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.repeat)
        return
    build_table(args.rebuild)
    new, old = run_worker("new", args.repeat), run_worker("old", args.repeat)
    kept = new.pop("_kernel_kept")
    print(f"## Spark file skipping: {kept['total']} files, Z-ordered (x, y); {WARMUP} warm-up rounds, then best "
          f"of {args.repeat} (median), seconds\n")
    print("| query | files read | kernel keeps | time | vs old load().where() | vs parquet (same process) |")
    print("|---|---|---|---|---|---|")
    for name, r in new.items():
        if name.startswith("parquet"):
            continue
        kind = "point" if "point" in name else "range" if "range" in name else "full"
        ref_old = old["full scan"] if kind == "full" else old[f"load().where {kind}"]
        ref_pq = new["parquet full scan"] if kind == "full" else new[f"parquet {kind}"]
        print(f"| {name} | {r['files_read']} | {kept.get(kind, kept['total'])} | {r['best']:.3f} ({r['median']:.3f}) "
              f"| {r['best'] / ref_old['best']:.2f}x | {r['best'] / ref_pq['best']:.2f}x |")
    print("\nReference rows (old: the landed code's process, with its own parquet runs):\n")
    for kind, res in (("new", new), ("old", old)):
        for name, r in res.items():
            if kind == "new" and not name.startswith("parquet"):
                continue
            print(f"- {kind}: {name}: {r['best']:.3f} s ({r['median']:.3f}), {r['rows']} rows")
    full_new, full_pq = new["full scan"]["best"], new["parquet full scan"]["best"]
    print(f"\nfull-scan throughput vs parquet (same process): {full_pq / full_new:.2f}x (target >= 0.8x)")
    print(f"old full-scan throughput vs parquet (its process): "
          f"{old['parquet full scan']['best'] / old['full scan']['best']:.2f}x")


if __name__ == "__main__":
    main()
