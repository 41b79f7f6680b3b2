"""Spark Connect vs classic appends (issue 32 item 3: a Connect append <= 1.1x a classic one), and where they differ.

One JVM (`local[2]`) serves a classic session and a Spark Connect client of it (`bench_spark_connect.sessions`), so
the ratio is the Connect protocol and deltakernel's Connect paths, not a second Spark. For each size (`--rows`,
default 100, 100k and 1M rows of `id long, v long, s string`), `df.write.format("delta").mode("append").save(p)`:
one warm-up per kind, then `--pairs` pairs - one append of each kind back to back, the order alternating - and the
median of the per-pair ratios Connect / classic with their spread (min-max), medians of the times and the load
average before and after.

`--profile` instead counts, for one append of each kind and size: gRPC calls of the Connect client by method (and
for ExecutePlan the plan's kind: which command or relation), py4j commands of the classic driver, Spark jobs (the
JVM's status store) and the client's `config` requests; `--cprofile` prints the top driver-side functions of one
append per kind (cumulative time).

Usage: ``.venv/bin/python benchmarks/bench_spark_append.py [--pairs 9] [--rows 100,100000,1000000] [--profile]
[--cprofile] [--dk-src OTHER/src]``
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import io
import os
import pstats
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

_RPCS = ("ExecutePlan", "AnalyzePlan", "Config", "ReleaseExecute", "ReattachExecute", "AddArtifacts",
         "ArtifactStatus", "FetchErrorDetails")


def _frame(spark: Any, rows: int) -> Any:
    return spark.range(0, rows).selectExpr("id", "id * 2 AS v", "CAST(id % 1000 AS STRING) AS s")


def _mode(kind: str) -> None:
    """pyspark's functions build Connect Columns only with SPARK_CONNECT_MODE_ENABLED (as in a Connect process)."""
    if kind == "connect":
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    else:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


class Appender:
    """Appends of `rows` rows to one table per kind (a fresh table per size, two appends into it before timing)."""

    def __init__(self, work: Path, kinds: dict[str, Any]) -> None:
        self.work, self.kinds, self.n = work, kinds, 0

    def table(self, kind: str, rows: int) -> str:
        return str(self.work / f"{kind}_{rows}")

    def append(self, kind: str, rows: int) -> float:
        _mode(kind)
        try:
            frame = _frame(self.kinds[kind], rows)
            t0 = time.perf_counter()
            frame.write.format("delta").mode("append").save(self.table(kind, rows))
            return time.perf_counter() - t0
        finally:
            _mode("classic")


# ----------------------------------------------------------------------------- counting
class Counters:
    """gRPC calls of a Connect client, py4j commands, Spark jobs; installed around one operation."""

    def __init__(self, classic: Any, remote: Any) -> None:
        self.classic, self.remote = classic, remote
        self.rpcs: collections.Counter[str] = collections.Counter()
        self.py4j = 0
        stub = remote.client._stub
        for name in _RPCS:
            orig = getattr(stub, name, None)
            if orig is not None:
                setattr(stub, name, self._wrap_rpc(name, orig))
        from py4j import clientserver, java_gateway

        for cls in (clientserver.JavaClient, java_gateway.GatewayClient):
            send = cls.send_command

            def counted(client: Any, *a: Any, __send: Any = send, **k: Any) -> Any:
                self.py4j += 1
                return __send(client, *a, **k)
            cls.send_command = counted  # type: ignore[method-assign]

    def _wrap_rpc(self, name: str, orig: Any) -> Any:
        def call(req: Any, *a: Any, **k: Any) -> Any:
            detail = name
            if name == "ExecutePlan":
                try:
                    op = req.plan.WhichOneof("op_type")
                    sub = req.plan.command.WhichOneof("command_type") if op == "command" \
                        else req.plan.root.WhichOneof("rel_type")
                    detail += f" {op}/{sub}"
                except Exception:
                    pass
            elif name == "AnalyzePlan":
                detail += f" {req.WhichOneof('analyze')}"
            elif name == "Config":
                detail += f" {req.operation.WhichOneof('op_type')}"
            self.rpcs[detail] += 1
            return orig(req, *a, **k)
        return call

    def jobs(self) -> int:
        """The newest Spark job's id (the status store lists the newest first; ids count up from 0)."""
        jobs = self.classic.sparkContext._jsc.sc().statusStore().jobsList(None)
        return int(jobs.head().jobId()) if jobs.size() else -1


def profile(appender: Appender, sizes: list[int], classic: Any, remote: Any) -> str:
    counters = Counters(classic, remote)
    out = ["| rows | kind | Spark jobs | Connect gRPC calls (by method / plan) | py4j commands | s |",
           "|---:|---|---:|---|---:|---:|"]
    for rows in sizes:
        for kind in ("classic", "connect"):
            appender.append(kind, rows)  # warm
            counters.rpcs.clear()
            counters.py4j = 0
            time.sleep(1.0)  # let the previous append's async ReleaseExecute calls finish
            counters.rpcs.clear()
            jobs0 = counters.jobs()
            py0 = counters.py4j
            dt = appender.append(kind, rows)
            time.sleep(0.5)
            rpcs = dict(counters.rpcs)
            py4j = counters.py4j - py0  # before jobs() below makes its own
            jobs = counters.jobs() - jobs0
            calls = ", ".join(f"{k} x{v}" for k, v in sorted(rpcs.items())) or "-"
            out.append(f"| {rows:,} | {kind} | {jobs} | {sum(rpcs.values())}: {calls} | {py4j} | {dt:.3f} |")
    return "\n".join(out)


def cprofile(appender: Appender, rows: int) -> str:
    out = []
    for kind in ("classic", "connect"):
        appender.append(kind, rows)
        prof = cProfile.Profile()
        prof.enable()
        appender.append(kind, rows)
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(30)
        out.append(f"### {kind}, {rows:,} rows\n```\n{buf.getvalue()}\n```")
    return "\n".join(out)


# ----------------------------------------------------------------------------- timing
def timed(appender: Appender, sizes: list[int], pairs: int) -> str:
    out = ["| rows | classic s (median) | Connect s (median) | Connect / classic, median of pairs | spread (min-max) "
           "| load before / after |", "|---:|---:|---:|---:|---|---|"]
    for rows in sizes:
        load0 = os.getloadavg()[0]
        for kind in ("classic", "connect"):
            appender.append(kind, rows)
        times: dict[str, list[float]] = {"classic": [], "connect": []}
        ratios = []
        for i in range(pairs):
            order = ("classic", "connect") if i % 2 == 0 else ("connect", "classic")
            got = {kind: appender.append(kind, rows) for kind in order}
            for kind, t in got.items():
                times[kind].append(t)
            ratios.append(got["connect"] / got["classic"])
        load1 = os.getloadavg()[0]
        out.append(f"| {rows:,} | {statistics.median(times['classic']):.3f} | "
                   f"{statistics.median(times['connect']):.3f} | **{statistics.median(ratios):.2f}x** | "
                   f"{min(ratios):.2f}-{max(ratios):.2f} | {load0:.1f} / {load1:.1f} |")
        print(out[-1], file=sys.stderr, flush=True)
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--rows", default="100,100000,1000000")
    ap.add_argument("--profile", action="store_true", help="count requests / jobs per append instead of timing")
    ap.add_argument("--cprofile", action="store_true", help="driver-side profile of one append per kind")
    ap.add_argument("--dk-src", default=None, help="another checkout's src/ (a before/after comparison)")
    args = ap.parse_args()
    from bench_spark_connect import sessions  # (it puts this checkout's src/ first on sys.path: before --dk-src)

    if args.dk_src:
        sys.path.insert(0, str(Path(args.dk_src).resolve()))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(args.dk_src).resolve()),
                                                    os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    sizes = [int(x) for x in args.rows.split(",") if x]

    (ROOT / "benchmarks" / "data").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-append-", dir=ROOT / "benchmarks" / "data"))
    classic, remote = sessions()
    try:
        kinds = {"classic": classic, "connect": remote}
        appender = Appender(work, kinds)
        import deltakernel

        print(f"# Spark appends, Connect vs classic (one local[2] JVM), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
              f", load average {os.getloadavg()[0]:.1f}, deltakernel from {Path(deltakernel.__file__).parents[1]}\n")
        if args.profile:
            print(profile(appender, sizes, classic, remote))
        elif args.cprofile:
            print(cprofile(appender, sizes[-1]))
        else:
            print(timed(appender, sizes, args.pairs))
    finally:
        try:
            remote.client.close()
        finally:
            classic.stop()
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
