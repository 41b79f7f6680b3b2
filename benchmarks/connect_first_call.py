"""Spark Connect: the first `spark.sql()` / `spark.table(view)` of a statement shape over a Delta table, then a
point `.where(...)` (docs/decisions.md, "Connect: the first statement of a shape names no data file").

Spark Connect's `spark.sql()` sends the statement for analysis at once (a `sql_command`). Before: the statement's
scans went as planned - an unfiltered statement's Parquet scan names every data file, and Spark checks each one
while it analyses (a status call per file; PATH_NOT_FOUND when one is gone). Now that analysis reads the scans
through the Python data source (`connect_plan.analysis_scans`: no file named) and the action plans the files with
the chained conditions. A/B in one process and one JVM, alternating per repetition: "before" is the old path
(`ConnectRelations.analyse` answering False, `spark.table(temporary view made by SQL)` read by Spark's own copy).

Every call is a shape Spark has not analysed in the session (a new literal in the select list; a new temporary
view per call for `spark.table`). Per call, medians of `--repeat`: wall ms of `spark.sql()` / `spark.table()`
alone and of the whole call (with `.where(id = k).collect()`), Connect requests, data files named in the eager
command, the Spark JVM's CPU ms (`/proc/<pid>/stat`). Wall times are noisy on a shared machine: read the counts.

Usage: ``.venv/bin/python benchmarks/connect_first_call.py [--repeat N] [--files N]``
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _paths(msg: Any) -> int:
    """Data files named by a proto message: the `paths` of every data source read in it."""
    n = 0
    for field, value in msg.ListFields():
        if field.name == "paths" and field.type == field.TYPE_STRING:
            n += sum(1 for v in value if str(v).endswith(".parquet"))  # data files (not a table's root)
        elif field.type == field.TYPE_MESSAGE:
            items = [value] if hasattr(value, "ListFields") else value.values() if hasattr(value, "values") else value
            n += sum(_paths(v) for v in items if hasattr(v, "ListFields"))
    return n


class Counter:
    """Requests the Connect client sends, and the data files its commands name."""

    def __init__(self) -> None:
        from pyspark.sql.connect.client.core import SparkConnectClient

        self.requests = 0
        self.files = 0
        for name in ("_execute_and_fetch_as_iterator", "_execute", "_analyze", "config"):
            original = getattr(SparkConnectClient, name)
            setattr(SparkConnectClient, name, self._counted(original))
        execute = SparkConnectClient.execute_command

        def execute_command(client: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
            self.files += _paths(command)
            return execute(client, command, *args, **kwargs)

        SparkConnectClient.execute_command = execute_command  # type: ignore[method-assign]

    def _counted(self, original: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.requests += 1
            return original(*args, **kwargs)

        return wrapper


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _jvm_cpu(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _workers_cpu(pid: int) -> float:
    """CPU seconds of the JVM's descendants (Spark's Python daemon and workers, with the workers they reaped)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int(_stat(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                pass
    found, total = {pid}, 0.0
    changed = True
    while changed:
        changed = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                changed = True
    for child in found - {pid}:
        try:
            f = _stat(child)
            total += sum(int(x) for x in f[11:15])
        except (OSError, IndexError, ValueError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def _mode(before: bool) -> None:
    """The old path (`before`) or the new one."""
    from deltakernel.spark.catalog import tables
    from deltakernel.spark.sql.relations_connect import ConnectRelations

    if before:
        ConnectRelations.analyse = lambda self, found, send: False  # type: ignore[method-assign]
        tables._read_text_view = lambda spark, name: None
    else:
        ConnectRelations.analyse = _NEW[0]  # type: ignore[method-assign]
        tables._read_text_view = _NEW[1]


_NEW: list[Any] = []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--files", type=int, default=300)
    args = ap.parse_args()
    from bench_spark_connect import sessions
    from connect_shapes import ROWS, build

    from deltakernel.spark.catalog import tables
    from deltakernel.spark.sql.relations_connect import ConnectRelations

    _NEW.extend([ConnectRelations.analyse, tables._read_text_view])
    (ROOT / "benchmarks" / "data").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-first-", dir=ROOT / "benchmarks" / "data"))
    path = str(work / "t")
    build(path, args.files)
    key = (args.files // 2) * ROWS + 7
    classic, spark = sessions()
    pid = int(classic.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    counter = Counter()
    t = "dk_bench_first.t"
    spark.sql("CREATE DATABASE IF NOT EXISTS dk_bench_first")
    spark.sql(f"DROP TABLE IF EXISTS {t}")
    spark.sql(f"CREATE TABLE {t} USING delta LOCATION '{path}'")
    serial = [0]

    def fresh() -> int:
        serial[0] += 1
        return serial[0]

    def temp_view() -> Any:
        name = f"dk_bench_first_tv{fresh()}"
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS SELECT id, s FROM {t}")
        return lambda: spark.table(name)

    shapes = {
        "spark.sql(path).where": lambda: (lambda n: lambda: spark.sql(
            f"SELECT id, s, {n} AS n FROM delta.`{path}`"))(fresh()),
        "spark.sql(catalog name).where": lambda: (lambda n: lambda: spark.sql(f"SELECT id, s, {n} AS n FROM {t}"))(
            fresh()),
        "spark.table(temp view made by SQL).where": temp_view,
    }
    results: dict[str, dict[str, list[tuple[float, ...]]]] = {}
    try:
        for name, make in shapes.items():
            results[name] = {"before": [], "after": []}
            for rep in range(args.repeat + 1):
                for mode in ("before", "after") if rep % 2 == 0 else ("after", "before"):
                    _mode(mode == "before")
                    call = make()  # a new shape (made outside the timing)
                    counter.requests = counter.files = 0
                    cpu, workers = _jvm_cpu(pid), _workers_cpu(pid)
                    start = time.perf_counter()
                    df = call()
                    eager = time.perf_counter() - start
                    rows = df.where(f"id = {key}").collect()
                    total = time.perf_counter() - start
                    assert len(rows) == 1, rows
                    if rep:  # the first pair warms up
                        results[name][mode].append((eager * 1000, total * 1000, counter.requests, counter.files,
                                                    (_jvm_cpu(pid) - cpu) * 1000,
                                                    (_workers_cpu(pid) - workers) * 1000))
            print(f"{name}: done", file=sys.stderr)
        # the same temporary view read again and again (its shape analysed): Spark's own copy vs the router
        steady: dict[str, list[tuple[float, ...]]] = {"before": [], "after": []}
        views = {mode: temp_view() for mode in steady}
        for rep in range(args.repeat + 2):
            for mode in ("before", "after") if rep % 2 == 0 else ("after", "before"):
                _mode(mode == "before")
                counter.requests = counter.files = 0
                cpu, workers = _jvm_cpu(pid), _workers_cpu(pid)
                start = time.perf_counter()
                rows = views[mode]().where(f"id = {key + rep}").collect()
                total = time.perf_counter() - start
                assert len(rows) == 1, rows
                if rep > 1:  # two warm-ups: the router's first read analyses the shape
                    steady[mode].append((total * 1000, counter.requests, (_jvm_cpu(pid) - cpu) * 1000,
                                         (_workers_cpu(pid) - workers) * 1000))
    finally:
        _mode(False)
        spark.sql(f"DROP TABLE IF EXISTS {t}")
        spark.client.close()
        classic.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"First call of a new shape on a {args.files}-file table, Connect, median of {args.repeat} "
          f"(load {os.getloadavg()[0]:.1f}):\n")
    print("| shape | mode | spark.sql()/table() ms | whole call ms | requests | data files named by spark.sql() "
          "| JVM CPU ms | Python workers CPU ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, modes in results.items():
        for mode, runs in modes.items():
            med = [statistics.median(r[i] for r in runs) for i in range(6)]
            print(f"| {name} | {mode} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} | {med[3]:.0f} | {med[4]:.0f} "
                  f"| {med[5]:.0f} |")
    print("\nThe same temporary view made by SQL read again with a new point condition (`spark.table(v).where`), "
          "median of the repetitions:\n")
    print("| mode | whole call ms | requests | JVM CPU ms | Python workers CPU ms |")
    print("|---|---:|---:|---:|---:|")
    for mode, runs in steady.items():
        med = [statistics.median(r[i] for r in runs) for i in range(4)]
        print(f"| {mode} | {med[0]:.0f} | {med[1]:.0f} | {med[2]:.0f} | {med[3]:.0f} |")


if __name__ == "__main__":
    main()
