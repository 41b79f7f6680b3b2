"""TPC-H per-table layout A/B (helper q22): where the written variant's Q16 / Q22 time goes (classic local[2]).

Contenders are per-table mappings, so one table's layout can be swapped at a time. Prints per contender: median wall,
median JVM CPU seconds (the whole JVM, from /proc), tasks run, and the scans / joins of the final plan."""
from __future__ import annotations

import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tpch import _scan_summary, normalize
from tpch_queries import TABLES, render

DATA = Path(os.environ.get("TPCH_DATA", ".bench-data/tpch-sf1"))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
from pyspark.sql import SparkSession  # noqa: E402

import deltakernel.spark as dks  # noqa: E402

confs = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.ui.enabled": "false",
         "spark.sql.session.timeZone": "UTC", "spark.driver.memory": "3g", "spark.ui.showConsoleProgress": "false"}
b = SparkSession.builder.master("local[2]").appName("q22exp")
for k, v in confs.items():
    b = b.config(k, v)
spark = b.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
dks.enable(spark)
pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
TICK = os.sysconf("SC_CLK_TCK")


def jvm_cpu() -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def frame(kind: str, variant: str, table: str):
    path = str(DATA / variant / table)
    return spark.read.format("delta").load(path) if kind == "delta" else spark.read.parquet(path)


spec = json.loads(sys.argv[1])  # {"name": {"default": [kind, variant], "customer": [kind, variant], ...}}
queries = [int(q) for q in sys.argv[2].split(",")]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
contenders = {}
for name, m in spec.items():
    d = m.get("default", ["delta", "written"])
    contenders[name] = {t: frame(*(m.get(t, d)), t) for t in TABLES}


def register(name: str) -> None:
    for t, df in contenders[name].items():
        df.createOrReplaceTempView(t)


def plan_lines(df) -> list[str]:
    """The final plan's operators with their metrics (subqueries included)."""
    plan = df._jdf.queryExecution().executedPlan()
    out: list[str] = []

    def walk(node, depth):
        name = str(node.nodeName())
        cls = str(node.getClass().getSimpleName())
        if cls == "AdaptiveSparkPlanExec":
            walk(node.finalPhysicalPlan(), depth)
            return
        ms = node.metrics()
        it = ms.iterator()
        vals = []
        while it.hasNext():
            kv = it.next()
            v = kv._2().value()
            if v:
                vals.append(f"{kv._1()}={v}")
        extra = ""
        if "Join" in cls:
            extra = " " + re.sub(r"#\d+", "", str(node.simpleString(3)))[:120]
        out.append("  " * depth + f"{name}{extra} [{', '.join(sorted(vals))[:300]}]")
        kids = [node.children().apply(i) for i in range(int(node.children().size()))]
        if not kids and hasattr(node, "plan") and ("QueryStage" in cls):
            kids = [node.plan()]
        if not kids and cls.startswith("Reused"):
            kids = [node.child()]
        subs = node.subqueries()
        for i in range(int(subs.size())):
            kids.append(subs.apply(i))
        for k in kids:
            walk(k, depth + 1)

    walk(plan, 0)
    return out


print("load", os.getloadavg(), flush=True)
for q in queries:
    sql = render(q, "spark", 1.0)
    ref = None
    for name in contenders:
        register(name)
        df = spark.sql(sql)
        rows = normalize([tuple(r) for r in df.collect()])
        ref = rows if ref is None else ref
        print(f"Q{q} {name}: rows {len(rows)} {'equal' if rows == ref else 'DIFFERENT'}")
        for s in _scan_summary(df):
            print("   scan", s)
        for line in plan_lines(df):
            print("   |", line)
    times = {n: [] for n in contenders}
    cpus = {n: [] for n in contenders}
    names = list(contenders)
    for i in range(runs):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            register(name)
            c0, t0 = jvm_cpu(), time.perf_counter()
            spark.sql(sql).collect()
            times[name].append(time.perf_counter() - t0)
            cpus[name].append(jvm_cpu() - c0)
    base = names[0]
    for name in names:
        ratios = [a / b for a, b in zip(times[name], times[base])]
        print(f"Q{q} {name}: wall median {statistics.median(times[name]):.3f}s jvm cpu median "
              f"{statistics.median(cpus[name]):.3f}s  paired ratio vs {base} {statistics.median(ratios):.2f}x "
              f"cpu ratio {statistics.median(cpus[name]) / statistics.median(cpus[base]):.2f}x", flush=True)
print("load", os.getloadavg(), flush=True)
spark.stop()
