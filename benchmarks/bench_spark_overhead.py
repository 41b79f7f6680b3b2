"""The Spark read path's "Delta tax": the same Parquet files queried as a Delta table and as plain Parquet (issue 32).

Tables (each a directory of Parquet files with a Delta log beside them, so `spark.read.parquet(dir)` reads exactly
the files the Delta table holds; `_delta_log` is hidden from Spark's listing by its leading underscore):
* ``scan_10m`` - benchmarks/data/scan_10m (make_tables.py: 10M rows, 20 files written by deltalake);
* ``lineitem`` - TPC-H SF1 lineitem from `tpchgen-cli` (4 Parquet files), made a Delta table in place by
  `convert_to_deltalake` (statistics from the footers), under ``--data`` (default /tmp/deltakernel_bench_tpch).

Queries (each a fresh `spark.read.format("delta").load(p)` vs `spark.read.parquet(p)`, `.collect()`):
* ``agg``   - full scan + aggregate (sum / min / max / count over numeric columns);
* ``q6``    - TPC-H Q6's selective aggregate (on scan_10m: a range of `id` plus a value filter);
* ``count`` - `count(*)`.
Both session kinds: classic (py4j) and Connect (a client of the same JVM's Connect server). Runs alternate the two
contenders (order flipped each round) after one warm-up each; the ratio is the median of the per-round
Delta / Parquet ratios. The machine's load average is printed with the results.

``--breakdown`` times the driver phases of one Delta query on classic (DataFrame build, Spark's analysis +
optimization, physical planning incl. the file listing, execution) beside Parquet's and counts the Python callbacks
the Delta file index answers.

Usage: ``.venv/bin/python benchmarks/bench_spark_overhead.py [--repeat N] [--kinds classic,connect]
[--tables scan_10m,lineitem] [--breakdown]``
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

QUERIES: dict[str, dict[str, str]] = {
    "scan_10m": {
        "agg": "SELECT sum(id), sum(value), min(ts), max(day), count(*) FROM t",
        "q6": "SELECT sum(value * id) FROM t WHERE id >= 4000000 AND id < 4500000 AND value < 0.5",
        "count": "SELECT count(*) FROM t",
    },
    "lineitem": {
        "agg": "SELECT sum(l_quantity), sum(l_extendedprice), sum(l_discount), max(l_shipdate), count(*) FROM t",
        "q6": "SELECT sum(l_extendedprice * l_discount) AS revenue FROM t WHERE l_shipdate >= date '1994-01-01' "
              "AND l_shipdate < date '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
        "count": "SELECT count(*) FROM t",
    },
}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_lineitem(data: Path) -> Path:
    """TPC-H SF1 lineitem as 4 Parquet files, converted to a Delta table in place."""
    root = data / "lineitem"
    if (root / "_delta_log").exists():
        return root
    if not root.exists():
        cli = Path(sys.executable).with_name("tpchgen-cli")
        subprocess.run([str(cli), "parquet", "-s", "1", "--tables=lineitem", "--parts=4",
                        f"--output-dir={data}"], check=True)
    from deltakernel import convert_to_deltalake

    convert_to_deltalake(str(root))
    return root


def sessions(kinds: list[str]) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    port = _port()
    builder = (SparkSession.builder.master("local[2]").appName("bench-overhead")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.driver.memory", "2g").config("spark.ui.showConsoleProgress", "false"))
    if "connect" in kinds:
        builder = (builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "127.0.0.1")
                   .config("spark.connect.grpc.binding.port", str(port)))
    classic = builder.getOrCreate()
    classic.sparkContext.setLogLevel("ERROR")
    dks.enable(classic)
    out = {"classic": classic}
    if "connect" in kinds:
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        remote = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        dks.enable(remote)
        out["connect"] = remote
    return out


def query(spark: Any, fmt: str, path: str, sql: str) -> list[Any]:
    """One query as a user writes it: a fresh read of the table, a temporary view, the SQL."""
    df = spark.read.format("delta").load(path) if fmt == "delta" else spark.read.parquet(path)
    df.createOrReplaceTempView("t")
    return spark.sql(sql).collect()


def same_rows(a: list[Any], b: list[Any]) -> bool:
    """Equal rows; float sums may differ in the last bits when Spark splits the files differently."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(tuple(ra), tuple(rb)):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(spark: Any, path: str, sql: str, repeat: int) -> tuple[float, float, float, float]:
    """(median Delta s, median Parquet s, median paired ratio, ratio spread (max - min))."""
    a = query(spark, "delta", path, sql)
    b = query(spark, "parquet", path, sql)
    if not same_rows(a, b):
        raise SystemExit(f"rows differ between Delta and Parquet for {sql!r}: {a} vs {b}")
    delta, parquet, ratios = [], [], []
    for i in range(repeat):
        order = ("delta", "parquet") if i % 2 == 0 else ("parquet", "delta")
        t = {fmt: timed(lambda fmt=fmt: query(spark, fmt, path, sql)) for fmt in order}
        delta.append(t["delta"])
        parquet.append(t["parquet"])
        ratios.append(t["delta"] / t["parquet"])
    return statistics.median(delta), statistics.median(parquet), statistics.median(ratios), max(ratios) - min(ratios)


# ----------------------------------------------------------------------------- driver breakdown (classic)
def breakdown(spark: Any, path: str, sql: str, repeat: int) -> dict[str, dict[str, float]]:
    """Median ms per phase of one query, Delta and Parquet, plus the file index's callback counts."""
    from deltakernel.spark.scan import file_index

    calls: Counter[str] = Counter()
    spent: Counter[str] = Counter()
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    from py4j import clientserver

    sent = Counter()
    send_orig = clientserver.ClientServerConnection.send_command

    def send(conn: Any, command: str) -> Any:
        sent["n"] += 1
        return send_orig(conn, command)

    clientserver.ClientServerConnection.send_command = send
    originals = {}
    for name in ("listFiles", "inputFiles", "sizeInBytes", "partitionSchema", "rootPaths", "isTimeTravel",
                 "metadataOpsTimeNs", "toString", "hashCode", "equals", "refresh"):
        orig = getattr(file_index.DeltaFileIndex, name)
        originals[name] = orig

        def wrapper(self: Any, *a: Any, _orig: Any = orig, _name: str = name) -> Any:
            calls[_name] += 1
            start = time.perf_counter()
            try:
                return _orig(self, *a)
            finally:
                spent[_name] += time.perf_counter() - start

        setattr(file_index.DeltaFileIndex, name, wrapper)
    out: dict[str, dict[str, list[float]]] = {"delta": {}, "parquet": {}}
    try:
        for i in range(repeat + 1):
            for fmt in ("delta", "parquet") if i % 2 == 0 else ("parquet", "delta"):
                calls.clear()
                spent.clear()
                sent.clear()
                group = f"overhead-{fmt}-{i}-{time.monotonic_ns()}"
                sc.setJobGroup(group, group)
                t0 = time.perf_counter()
                df = spark.read.format("delta").load(path) if fmt == "delta" else spark.read.parquet(path)
                df.createOrReplaceTempView("t")
                q = spark.sql(sql)
                t1 = time.perf_counter()
                qe = q._jdf.queryExecution()
                qe.optimizedPlan()
                t2 = time.perf_counter()
                qe.executedPlan()
                t3 = time.perf_counter()
                q.collect()  # plans again from the DataFrame (Spark re-plans collect's own QueryExecution)
                t4 = time.perf_counter()
                round_trips = sent["n"]
                tasks = 0
                for job in tracker.getJobIdsForGroup(group):
                    info = tracker.getJobInfo(job)
                    for stage in info.stageIds if info else []:
                        sinfo = tracker.getStageInfo(stage)
                        tasks += sinfo.numTasks if sinfo else 0
                if i == 0:
                    continue  # warm-up
                phases = {"read + view + sql (build)": t1 - t0, "analysis + optimization": t2 - t1,
                          "physical planning": t3 - t2, "collect (listing + run)": t4 - t3,
                          "tasks": tasks, "py4j round trips (Python -> JVM)": round_trips}
                if fmt == "delta":
                    for name, n in calls.items():
                        phases[f"callbacks: {name}"] = n
                        phases[f"callback time: {name}"] = spent[name]
                for k, v in phases.items():
                    out[fmt].setdefault(k, []).append(v)
    finally:
        clientserver.ClientServerConnection.send_command = send_orig
        for name, orig in originals.items():
            setattr(file_index.DeltaFileIndex, name, orig)
    return {fmt: {k: statistics.median(v) for k, v in d.items()} for fmt, d in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kinds", default="classic,connect")
    ap.add_argument("--tables", default="scan_10m,lineitem")
    ap.add_argument("--data", default="/tmp/deltakernel_bench_tpch")
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    tables = {}
    for name in args.tables.split(","):
        if name == "scan_10m":
            from make_tables import SCAN_TABLE, make_scan_table

            if not (SCAN_TABLE / "_delta_log").exists():
                make_scan_table()
            tables[name] = str(SCAN_TABLE)
        elif name == "lineitem":
            data = Path(args.data)
            data.mkdir(parents=True, exist_ok=True)
            tables[name] = str(make_lineitem(data))
    spark = sessions(kinds)
    load = os.getloadavg()
    if args.breakdown:
        for table, path in tables.items():
            for qname, sql in QUERIES[table].items():
                res = breakdown(spark["classic"], path, sql, args.repeat)
                print(f"\n### {table} {qname} (classic, medians of {args.repeat})\n")
                print("| phase | Delta | Parquet |\n|---|---:|---:|")
                for k in res["delta"]:
                    d, p = res["delta"][k], res["parquet"].get(k)
                    if k.startswith(("callbacks", "py4j")) or k == "tasks":
                        print(f"| {k} | {d:.0f} | {'-' if p is None else f'{p:.0f}'} |")
                    else:
                        print(f"| {k} ms | {d * 1000:.0f} | {(p or 0) * 1000:.0f} |")
    else:
        print(f"## Spark read overhead (local[2], {args.repeat} alternating rounds, load {load[0]:.2f} "
              f"{load[1]:.2f} {load[2]:.2f})\n")
        print("| session | table | query | Delta s | Parquet s | Delta / Parquet | spread |")
        print("|---|---|---|---:|---:|---:|---:|")
        ratios: dict[str, list[float]] = {}
        for kind in kinds:
            # pyspark's functions build Connect Columns only with this set (as in a process with a remote session)
            if kind == "connect":
                os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
            else:
                os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
            for table, path in tables.items():
                for qname, sql in QUERIES[table].items():
                    d, p, r, spread = compare(spark[kind], path, sql, args.repeat)
                    ratios.setdefault(kind, []).append(r)
                    print(f"| {kind} | {table} | {qname} | {d:.3f} | {p:.3f} | {r:.2f}x | {spread:.2f} |",
                          flush=True)
        for kind, rs in ratios.items():
            print(f"\n- {kind}: geometric mean {statistics.geometric_mean(rs):.2f}x")
        end = os.getloadavg()
        print(f"- load average at the end: {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}")
    if "connect" in spark:
        spark["connect"].stop()
    spark["classic"].stop()


if __name__ == "__main__":
    main()
