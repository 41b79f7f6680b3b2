"""Long sessions stay flat (issue 31 item 4): memory and time per query over one long Spark session.

One session (a fresh `local[2]` JVM per session kind, run in its own subprocess) answers N plain Parquet point
queries, then N mixed Delta point queries over the same data (each `.collect()`ed), rotating five shapes:
* `load(p).where(id = k)`;
* SQL over a path: `SELECT * FROM delta.`p` WHERE id = k`;
* SQL over a catalog name: `SELECT * FROM ls_events WHERE id = k`;
* a join of two Delta tables: `SELECT ... FROM ls_events a JOIN delta.`p2` b ON a.id = b.id WHERE a.id = k`;
* a DataFrame chain: `load(p).select(id, v).where(id = k)`.
Plain Parquet pays Spark's own per-query costs (SQL UI history: `spark.sql.ui.retainedExecutions`, 1000 by
default; the query plans it retains), so the Delta phase is judged by what it adds *beyond* the Parquet phase.

Measured at each checkpoint (every `--every` queries), after `gc.collect()` in Python and two full GCs of the
JVM (`System.gc()`): the JVM heap used (totalMemory - freeMemory), this process's RSS (VmRSS: the driver on a
classic session, the client on Connect - the Connect server runs in the same JVM, started with the Connect
plugin as in tests/spark/conftest.py, and the client process does not drive it over py4j during its phase),
and the wall time per query. Reported per phase: growth per 100 queries (least-squares slope over the
phase's checkpoints), total growth, median time per query, and the Delta / Parquet ratios.

Goals (issue 31): heap after full GC grows <= 64 MiB more in the Delta phase than in the Parquet phase; RSS
grows <= 8 MiB per 100 Delta queries; both session kinds.

`--diagnose`: also prints what grew in Python between the middle and the end of the Delta phase (object counts
by type from `gc.get_objects()`, the top tracemalloc lines) and in the JVM (`jmap -histo:live` diff, top
classes by bytes).

Usage: ``.venv/bin/python benchmarks/long_session.py [--n 600] [--kind classic|connect|both] [--quick]
[--diagnose]`` (`--quick`: N=100, checkpoints every 25).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

FILES, PER_FILE = 40, 2_500
MIB = 1024 * 1024


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def build(work: Path) -> dict[str, str]:
    """A 40-file Delta table (ids sorted across files), a second one for the join, the same rows as Parquet."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltakernel import write_deltalake

    paths = {"delta": str(work / "events"), "delta2": str(work / "dims"), "parquet": str(work / "events_pq")}
    os.makedirs(paths["parquet"])
    for i in range(FILES):
        ids = np.arange(i * PER_FILE, (i + 1) * PER_FILE, dtype=np.int64)
        t = pa.table({"id": ids, "v": ids * 2, "s": pa.array(np.char.mod("s%d", ids))})
        write_deltalake(paths["delta"], t, mode="append")
        pq.write_table(t, f"{paths['parquet']}/part-{i:05d}.parquet")
        if i % 4 == 0:
            ids2 = np.arange(i * PER_FILE, (i + 4) * PER_FILE, dtype=np.int64)
            write_deltalake(paths["delta2"], pa.table({"id": ids2, "w": ids2 % 7}), mode="append")
    return paths


def start(kind: str) -> tuple[Any, Any]:
    """(the session measured, the classic session owning the JVM)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    builder = (SparkSession.builder.master("local[2]").appName("long-session")
               .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
               .config("spark.ui.showConsoleProgress", "false"))
    port = _port()
    if kind == "connect":
        builder = (builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "127.0.0.1")
                   .config("spark.connect.grpc.binding.port", str(port)))
    classic = builder.getOrCreate()
    classic.sparkContext.setLogLevel("ERROR")
    if kind == "classic":
        dks.enable(classic)
        return classic, classic
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    remote = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    remote.conf.set("spark.sql.shuffle.partitions", "2")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark's functions build Connect Columns
    dks.enable(remote)
    return remote, classic


def jvm_heap(classic: Any) -> int:
    """JVM heap used after full GCs; Spark's ContextCleaner drops broadcast blocks and shuffle files of
    collected plans on its own thread after a GC, so GC, let it run, GC again."""
    jvm = classic._jvm
    for _ in range(3):
        jvm.java.lang.System.gc()
        time.sleep(0.3)
    rt = jvm.java.lang.Runtime.getRuntime()
    return int(rt.totalMemory()) - int(rt.freeMemory())


def counters(spark: Any, classic: Any) -> dict[str, int]:
    """Things that could grow per query: our file indexes alive, py4j's proxy pool (Python objects the JVM
    holds), Python threads (py4j callback connections), the session's kept plans."""
    import threading

    from deltakernel.spark.scan.callbacks import callback_connections
    from deltakernel.spark.scan.file_index import INDEXES

    gateway = classic.sparkContext._gateway
    pool = gateway._gateway_client.gateway_property.pool
    store = spark.__dict__.get("_dk_latest_frames") or {}
    import pyarrow as pa

    return {"file_indexes": len(INDEXES), "py4j_pool": len(pool.dict), "threads": threading.active_count(),
            "pool_thread_connections": callback_connections(),
            "kept_plans": len(store), "arrow_kib": pa.total_allocated_bytes() // 1024}


def jvm_pid(classic: Any) -> int:
    return int(classic._jvm.java.lang.ProcessHandle.current().pid())


def histo(pid: int) -> dict[str, tuple[int, int]]:
    """`jmap -histo:live`: class -> (instances, bytes)."""
    out = subprocess.run(["jmap", "-histo:live", str(pid)], capture_output=True, text=True, timeout=300).stdout
    table: dict[str, tuple[int, int]] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0].endswith(":"):
            table[parts[3]] = (int(parts[1]), int(parts[2]))
    return table


def queries(spark: Any, paths: dict[str, str], kind: str) -> tuple[Any, list[Any]]:
    from pyspark.sql import functions as F

    p, p2, pqp = paths["delta"], paths["delta2"], paths["parquet"]

    def parquet(k: int) -> Any:
        return spark.read.parquet(pqp).where(f"id = {k}").collect()

    shapes = [
        lambda k: spark.read.format("delta").load(p).where(f"id = {k}").collect(),
        lambda k: spark.sql(f"SELECT * FROM delta.`{p}` WHERE id = {k}").collect(),
        lambda k: spark.sql(f"SELECT * FROM ls_events WHERE id = {k}").collect(),
        lambda k: spark.sql(f"SELECT a.id, a.v, b.w FROM ls_events a JOIN delta.`{p2}` b ON a.id = b.id "
                            f"WHERE a.id = {k}").collect(),
        lambda k: spark.read.format("delta").load(p).select("id", "v").where(F.col("id") == k).collect(),
    ]
    return parquet, shapes


class Diagnosis:
    """What grew in Python and in the JVM between two points of the Delta phase."""

    def __init__(self, pid: int) -> None:
        import tracemalloc

        self.pid = pid
        tracemalloc.start(12)
        gc.collect()
        self.types = Counter(type(o).__qualname__ for o in gc.get_objects())
        self.snap = tracemalloc.take_snapshot()
        self.histo = histo(pid)

    def report(self, queries_between: int) -> dict[str, Any]:
        import tracemalloc

        gc.collect()
        types = Counter(type(o).__qualname__ for o in gc.get_objects())
        snap = tracemalloc.take_snapshot()
        grown = sorted(((n - self.types.get(t, 0), t) for t, n in types.items()), reverse=True)[:20]
        stats = snap.compare_to(self.snap, "traceback")[:12]
        lines = []
        for s in stats:
            frames = [f"{f.filename.split('site-packages/')[-1].split('src/')[-1]}:{f.lineno}"
                      for f in s.traceback[-6:]]
            lines.append(f"{s.size_diff / 1024:+.0f} KiB {s.count_diff:+d} blocks  " + " <- ".join(reversed(frames)))
        after = histo(self.pid)
        jdiff = sorted(((b - self.histo.get(c, (0, 0))[1], n - self.histo.get(c, (0, 0))[0], c)
                        for c, (n, b) in after.items()), reverse=True)
        watched = ("Broadcast", "HashedRelation", "QueryExecution", "Dataset", "HadoopFsRelation", "py4j",
                   "Proxy", "LogicalRelation", "SparkPlanInfo", "SQLExecutionUIData")
        jdiff = jdiff[:20] + [d for d in jdiff[20:] if d[1] > 0 and any(w in d[2] for w in watched)]
        tracemalloc.stop()
        return {"queries": queries_between,
                "python_objects": [(t, d) for d, t in grown if d > 0],
                "tracemalloc": lines,
                "jvm_classes": [(c, n, round(b / 1024)) for b, n, c in jdiff if b > 0]}


def run_kind(kind: str, n: int, every: int, diagnose: bool, only: list[int] | None = None) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="long-session-"))
    try:
        paths = build(work)
        spark, classic = start(kind)
        spark.sql(f"CREATE TABLE ls_events USING delta LOCATION '{paths['delta']}'")
        parquet, shapes = queries(spark, paths, kind)
        if only:
            shapes = [shapes[i] for i in only]
        total = FILES * PER_FILE
        for k in (1, 2):  # warm-up: first planning, first UDF/JIT work
            parquet(k)
            for shape in shapes:
                shape(k)
        out: dict[str, Any] = {"kind": kind, "n": n, "every": every, "phases": {}}
        diag: Diagnosis | None = None
        for phase in ("parquet", "delta"):
            points = []
            gc.collect()
            # the phase's baseline settles twice: right after the warm-up (or the previous phase) Spark's
            # ContextCleaner may still be releasing blocks, and one early reading was 136 MiB too high
            first = jvm_heap(classic)
            time.sleep(1.0)
            points.append((0, min(first, jvm_heap(classic)), rss_bytes()))
            times = []
            for i in range(n):
                k = (i * 7919) % total
                t0 = time.perf_counter()
                rows = parquet(k) if phase == "parquet" else shapes[i % len(shapes)](k)
                times.append(time.perf_counter() - t0)
                assert len(rows) == 1 and rows[0]["id"] == k, (phase, i, rows)
                if (i + 1) % every == 0:
                    gc.collect()
                    points.append((i + 1, jvm_heap(classic), rss_bytes()))
                    print(f"  {kind} {phase} {i + 1}: heap {points[-1][1] / MIB:.0f} MiB, "
                          f"rss {points[-1][2] / MIB:.0f} MiB, {counters(spark, classic)}", file=sys.stderr,
                          flush=True)
                if diagnose and phase == "delta" and i + 1 == n // 2:
                    diag = Diagnosis(jvm_pid(classic))
            out["phases"][phase] = {"points": points, "median_s": statistics.median(times),
                                    "mean_s": statistics.fmean(times), "counters": counters(spark, classic)}
        if diag is not None:
            out["diagnosis"] = diag.report(n - n // 2)
        return out
    finally:
        try:
            if kind == "connect":
                spark.client.close()
            classic.stop()
        except Exception:
            pass
        shutil.rmtree(work, ignore_errors=True)


def slope_per_100(points: list[tuple[int, int, int]], col: int) -> float:
    xs = [p[0] for p in points]
    ys = [p[col] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs) or 1
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 100 / MIB


def print_report(results: list[dict[str, Any]]) -> None:
    n = results[0]["n"]
    print(f"### Long session: {n} plain Parquet point queries, then {n} mixed Delta point queries (one session)\n")
    print("| kind | phase | heap start MiB | heap growth MiB | heap MiB / 100 q | RSS start MiB | RSS growth MiB "
          "| RSS MiB / 100 q | median ms / query |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for phase, d in r["phases"].items():
            pts = d["points"]
            print(f"| {r['kind']} | {phase} | {pts[0][1] / MIB:.0f} | {(pts[-1][1] - pts[0][1]) / MIB:+.1f} | "
                  f"{slope_per_100(pts, 1):+.2f} | {pts[0][2] / MIB:.0f} | {(pts[-1][2] - pts[0][2]) / MIB:+.1f} | "
                  f"{slope_per_100(pts, 2):+.2f} | {d['median_s'] * 1000:.1f} |")
    print("\n| kind | Delta heap growth - Parquet heap growth (goal <= 64 MiB) | Delta RSS MiB / 100 q (goal <= 8) "
          "| Delta / Parquet median time |")
    print("|---|---|---|---|")
    for r in results:
        pq, dl = r["phases"]["parquet"], r["phases"]["delta"]
        extra = ((dl["points"][-1][1] - dl["points"][0][1]) - (pq["points"][-1][1] - pq["points"][0][1])) / MIB
        print(f"| {r['kind']} | {extra:+.1f} MiB | {slope_per_100(dl['points'], 2):+.2f} | "
              f"{dl['median_s'] / pq['median_s']:.2f}x |")
    print("\nAt the end of each phase:")
    for r in results:
        for phase, d in r["phases"].items():
            print(f"- {r['kind']} {phase}: " + ", ".join(f"{k} {v}" for k, v in d["counters"].items()))
    for r in results:
        if "diagnosis" in r:
            d = r["diagnosis"]
            print(f"\n#### {r['kind']}: what grew over the last {d['queries']} Delta queries\n")
            print("Python objects:", ", ".join(f"{t} {c:+d}" for t, c in d["python_objects"]))
            print("\ntracemalloc:\n" + "\n".join("  " + x for x in d["tracemalloc"]))
            print("\nJVM (jmap -histo:live):\n" + "\n".join(f"  {c}: {n:+d} objects, {kb:+d} KiB"
                                                           for c, n, kb in d["jvm_classes"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--kind", choices=["classic", "connect", "both"], default="both")
    ap.add_argument("--quick", action="store_true", help="N=100, checkpoints every 25 queries")
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--shapes", default="", help="comma-separated shape indexes (0-4) to run only those")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.n, args.every = 100, 25
    if args.child:
        print("@@RESULT@@" + json.dumps(run_kind(args.kind, args.n, args.every, args.diagnose,
                                                  [int(x) for x in args.shapes.split(",") if x])))
        return
    results = []
    for kind in (["classic", "connect"] if args.kind == "both" else [args.kind]):
        cmd = [sys.executable, __file__, "--child", "--kind", kind, "--n", str(args.n), "--every", str(args.every)]
        if args.diagnose:
            cmd.append("--diagnose")
        if args.shapes:
            cmd += ["--shapes", args.shapes]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("@@RESULT@@"))
        results.append(json.loads(line[len("@@RESULT@@"):]))
    print_report(results)


if __name__ == "__main__":
    main()
