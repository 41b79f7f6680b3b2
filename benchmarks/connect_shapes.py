"""Spark Connect vs classic point-query time for every query shape (issue 31): Connect skips like classic, at what
cost?

One JVM (local[2]) serves both kinds (`bench_spark_connect.sessions`: a classic SparkSession with Spark's Connect
server plugin, and a Connect client of it in this process), so the ratio is what the Connect protocol and the
client-side planning cost (the pushdown pass over the client's plan, the kernel's file skipping, the Parquet
scan of the kept files sent as a plan), not a second Spark. The table: FILES files of ROWS ids each, sorted across
files (a point query keeps one file). Each shape runs once to warm up, then `--repeat` times alternating the
kinds; the medians and their ratio (Connect / classic) are printed as a Markdown table, with the same ratio for
plain Parquet (the one file a point query needs, no Delta: Spark Connect's own cost per SQL statement or DataFrame
read) and each shape's ratio over it (what deltakernel adds on Connect beyond what Spark Connect itself costs).

Usage: ``.venv/bin/python benchmarks/connect_shapes.py [--repeat N] [--files N] [--only "text|text"] [--cpu]``
(`--only`: run only the shapes whose name contains one of the `|`-separated texts; `--cpu`: also the CPU each query
costs the Spark JVM - utime + stime of its process from `/proc/<pid>/stat`, the server's parsing, analysis and
execution - and this Python process, medians per kind: counts that move less with the machine's load than wall
times).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

ROWS = 200
KEY = 0  # set in main: an id in the middle of the table
ONE_FILE = ""  # set in main: a directory holding a copy of the one data file a point query needs (plain Parquet)


def build(path: str, files: int) -> None:
    import numpy as np
    import pyarrow as pa

    from deltakernel import write_deltalake

    for i in range(files):
        ids = np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)
        write_deltalake(path, pa.table({"id": ids, "v": pa.array(ids * 2), "s": pa.array(np.char.mod("s%08d", ids)),
                                        "part": pa.array([f"p{i % 4}"] * ROWS)}), mode="append",
                        partition_by=["part"])


def shapes(spark: Any, path: str, kind: str) -> dict[str, Any]:
    """name -> a function running the shape's point query on `spark` (results collected)."""
    k = KEY
    t = f"dk_bench_shapes.t_{kind}"
    view = f"dk_bench_shapes_tv_{kind}"

    def load() -> Any:
        return spark.read.format("delta").load(path)

    def other() -> Any:
        return spark.createDataFrame([(k, "x")], "k long, name string")

    def frame_view() -> None:
        load().createOrReplaceTempView(view)

    def chain_view() -> None:  # a temporary view over a chain, made again before each query (a notebook cell)
        d = spark.table(t)
        d.withColumn("x", d["v"] + 1).createOrReplaceTempView(f"{view}_chain")

    def parquet_view() -> None:
        spark.read.parquet(ONE_FILE).createOrReplaceTempView(f"{view}_pq")

    sql_view = f"dk_bench_shapes_sv_{kind}"  # made once: its reads expand its text per query (Connect)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {sql_view} AS SELECT id, s FROM {t}")

    return {
        "load().where": lambda: load().where(f"id = {k}").collect(),
        "load().select().where": lambda: load().select("id", "s").where(f"id = {k}").collect(),
        "withColumn chain": lambda: (lambda d: d.withColumn("x", d["id"] * 2).select("x", "id")
                                     .where(d["id"] == k))(load()).collect(),
        "alias": lambda: load().alias("a").where(f"a.id = {k}").select("a.s").collect(),
        "join then where": lambda: (lambda d, o: d.join(o, d["id"] == o["k"]).where(d["id"] == k))(
            load(), other()).collect(),
        "union then where": lambda: load().select("id").union(load().select("id")).where(f"id = {k}").collect(),
        "spark.table().withColumn().where": lambda: (lambda d: d.withColumn("x", d["v"] + 1).where(f"id = {k}"))(
            spark.table(t)).collect(),
        "SQL over a path": lambda: spark.sql(f"SELECT id, s FROM delta.`{path}` WHERE id = {k}").collect(),
        "SQL over a catalog name": lambda: spark.sql(f"SELECT id, s FROM {t} WHERE id = {k}").collect(),
        "SQL CTE": lambda: spark.sql(f"WITH x AS (SELECT * FROM {t}) SELECT id FROM x WHERE id = {k}").collect(),
        "SQL join": lambda: spark.sql(f"SELECT a.id FROM {t} a JOIN (SELECT {k} AS k) b ON a.id = b.k").collect(),
        "SQL union": lambda: spark.sql(f"SELECT id FROM (SELECT id FROM {t} UNION ALL SELECT id FROM {t}) "
                                       f"WHERE id = {k}").collect(),
        "temp view (SQL)": lambda: (frame_view(), spark.sql(f"SELECT id FROM {view} WHERE id = {k}").collect()),
        "temp view (spark.table)": lambda: (frame_view(), spark.table(view).where(f"id = {k}").collect()),
        "temp view (SQL) over a chain": lambda: (chain_view(), spark.sql(
            f"SELECT id, x FROM {view}_chain WHERE id = {k}").collect()),
        "permanent view": lambda: spark.sql(f"SELECT id FROM dk_bench_shapes.v_{kind} WHERE id = {k}").collect(),
        "temp view made by SQL": lambda: spark.sql(f"SELECT id FROM {sql_view} WHERE id = {k}").collect(),
        # conditions chained after a frame the SQL router made (Connect: `connect_plan.RoutedQuery` re-plans it)
        "spark.table(permanent view).where": lambda: spark.table(f"dk_bench_shapes.v_{kind}").where(f"id = {k}")
        .collect(),
        "SQL frame then where": lambda: spark.sql(f"SELECT id, s FROM {t}").where(f"id = {k}").collect(),
        # Spark's own cost of each kind, no Delta: the one needed file as plain Parquet (the baseline of the ratios)
        "baseline: Parquet SQL": lambda: spark.sql(f"SELECT id, s FROM parquet.`{ONE_FILE}` WHERE id = {k}").collect(),
        "baseline: Parquet read().where": lambda: spark.read.parquet(ONE_FILE).where(f"id = {k}").collect(),
        "baseline: Parquet temp view (SQL)": lambda: (parquet_view(), spark.sql(
            f"SELECT id FROM {view}_pq WHERE id = {k}").collect()),
        "baseline: Parquet temp view (spark.table)": lambda: (parquet_view(), spark.table(f"{view}_pq")
                                                              .where(f"id = {k}").collect()),
    }


def _copy_key_file(path: str, dest: Path) -> None:
    """Copy the data file holding KEY into `dest` (the plain Parquet baseline reads it)."""
    global ONE_FILE
    import pyarrow.parquet as pq

    from deltakernel import DeltaTable

    dest.mkdir()
    for uri in DeltaTable(path).file_uris():
        local = uri.removeprefix("file://")
        ids = pq.read_table(local, columns=["id"]).column("id")
        if ids[0].as_py() <= KEY <= ids[-1].as_py():
            shutil.copy(local, dest / "part-0.parquet")
            ONE_FILE = str(dest)
            return
    raise AssertionError("no file holds the key")


def _baseline(name: str) -> str:
    """The plain Parquet shape a shape is compared with: the same temporary view steps, SQL, or a DataFrame read."""
    if name.startswith("temp view (SQL)"):
        return "baseline: Parquet temp view (SQL)"
    if name.startswith("temp view ("):
        return f"baseline: Parquet {name}"
    if name.startswith("SQL") or name in ("permanent view", "temp view made by SQL"):
        return "baseline: Parquet SQL"
    return "baseline: Parquet read().where"


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def jvm_cpu(pid: int) -> float:
    """CPU seconds (user + system, every thread) the process `pid` has used so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def measured(fn: Any, pid: int | None) -> tuple[float, float, float]:
    """(wall seconds, JVM CPU seconds, this process's CPU seconds) of one query; CPU 0 without `pid`."""
    jvm, py = (jvm_cpu(pid), time.process_time()) if pid else (0.0, 0.0)
    wall = timed(fn)
    return (wall, jvm_cpu(pid) - jvm, time.process_time() - py) if pid else (wall, 0.0, 0.0)


def main() -> None:
    global KEY, ONE_FILE
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--only", default="", help="|-separated texts: run the shapes whose name contains one (default: all)")
    ap.add_argument("--cpu", action="store_true", help="also the JVM's and this process's CPU per query")
    args = ap.parse_args()
    from bench_spark_connect import sessions

    (ROOT / "benchmarks" / "data").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-shapes-", dir=ROOT / "benchmarks" / "data"))
    path = str(work / "t")
    KEY = (args.files // 2) * ROWS + 7
    build(path, args.files)
    _copy_key_file(path, work / "one")
    classic, remote = sessions()
    remote.conf.set("spark.sql.session.timeZone", "UTC")
    pid = int(classic._jvm.java.lang.ProcessHandle.current().pid()) if args.cpu else None
    try:
        runs: dict[str, dict[str, Any]] = {}
        for kind, spark in (("classic", classic), ("connect", remote)):
            import os

            if kind == "connect":
                os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
            spark.sql("CREATE DATABASE IF NOT EXISTS dk_bench_shapes")
            spark.sql(f"DROP VIEW IF EXISTS dk_bench_shapes.v_{kind}")
            spark.sql(f"DROP TABLE IF EXISTS dk_bench_shapes.t_{kind}")
            spark.sql(f"CREATE TABLE dk_bench_shapes.t_{kind} USING delta LOCATION '{path}'")
            spark.sql(f"CREATE VIEW dk_bench_shapes.v_{kind} AS SELECT id, s FROM dk_bench_shapes.t_{kind}")
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
            runs[kind] = shapes(spark, path, kind)
        import os

        only = [x for x in args.only.split("|") if x]
        times: dict[str, dict[str, list[float]]] = {name: {"classic": [], "connect": []} for name in runs["classic"]
                                                    if not only or any(x in name for x in only)}
        cpu: dict[str, dict[str, list[tuple[float, float]]]] = {name: {"classic": [], "connect": []}
                                                                for name in times}
        for name in times:
            for rep in range(args.repeat + 1):
                for kind in ("classic", "connect") if rep % 2 == 0 else ("connect", "classic"):
                    if kind == "connect":
                        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
                    else:
                        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
                    t, jvm, py = measured(runs[kind][name], pid)
                    if rep:
                        times[name][kind].append(t)
                        cpu[name][kind].append((jvm, py))
            print(f"{name}: done", file=sys.stderr)
        print(f"Point query on a {args.files}-file table ({args.files * ROWS:,} rows), median of {args.repeat}:\n")
        ratios = {name: statistics.median(k["connect"]) / statistics.median(k["classic"]) for name, k in times.items()}
        print("| shape | classic (ms) | Connect (ms) | Connect / classic | over Parquet's own Connect / classic |")
        print("|---|---:|---:|---:|---:|")
        for name, kinds in times.items():
            a, b = statistics.median(kinds["classic"]), statistics.median(kinds["connect"])
            base = ratios.get(_baseline(name))
            norm = f"{ratios[name] / base:.2f}x" if base and not name.startswith("baseline") else "-"
            print(f"| {name} | {a * 1000:.0f} | {b * 1000:.0f} | {b / a:.2f}x | {norm} |")
        if pid:
            print(f"\nCPU per query, median of {args.repeat} (JVM: the Spark server's process; Python: this one):\n")
            print("| shape | JVM classic (ms) | JVM Connect (ms) | Python classic (ms) | Python Connect (ms) |")
            print("|---|---:|---:|---:|---:|")
            for name, kinds in cpu.items():
                med = {k: [statistics.median(c[i] for c in v) * 1000 for i in (0, 1)] for k, v in kinds.items()}
                print(f"| {name} | {med['classic'][0]:.0f} | {med['connect'][0]:.0f} | {med['classic'][1]:.0f} | "
                      f"{med['connect'][1]:.0f} |")
    finally:
        for kind, spark in (("classic", classic), ("connect", remote)):
            try:
                spark.sql(f"DROP VIEW IF EXISTS dk_bench_shapes.v_{kind}")
                spark.sql(f"DROP TABLE IF EXISTS dk_bench_shapes.t_{kind}")
            except Exception:
                pass
        remote.client.close()
        classic.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
