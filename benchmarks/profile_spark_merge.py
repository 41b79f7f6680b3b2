"""Where a Spark MERGE with deletion vectors spends its time: the Spark jobs and SQL executions it runs (issue 32).

Why: each Spark job costs ~50-100 ms of scheduling on ``local[2]`` besides its work, so the 1 % upsert into
5M rows (bench_spark_merge.py's DV contender, goal <= 0.7 s) is cut by running fewer jobs, and the first step is
to know which jobs run. Per MERGE this prints its wall time, every Spark job (stages, tasks), every SQL execution
(its description = the driver's call site, its jobs, its duration) and, with ``--profile``, the driver's cProfile
of the last run. The jobs and the SQL status store are read through the classic session's py4j (``--connect``
runs the MERGE over a Connect client of the same JVM). Tables and source are
bench_spark_merge.py's (``dml_5m_dv`` + the 50,000-row Parquet source). The machine's load average is printed
beside every run: timings under load are not the quiet-machine numbers; the job counts are.

``--ab`` alternates, run by run in the one session, the MERGE as it runs now and as it ran before a cut of
issue 32 item 3, and prints per variant the median wall time, the driver process's CPU time and the job count
(paired, alternating: the load drifts). ``--before driver`` (the default): before the driver wrote the DVs and
the rows (helper "mergefast": the DV job and the write as Spark jobs, `merge.DRIVER_DVS = False`,
`driver_rows.COLLECT_SOURCE_BYTES = 0`); ``--before all``: also before helper "mergecut"'s cuts (the pairs kept on the executors and joined in the
write, the source stats from an aggregate job: `merge.COLLECT_SOURCE_ROWS = 0` and no observed stats).

``--floor`` also times, in every run on the same session and data, the Spark work a MERGE cannot avoid, done
natively: the source read to the driver (`spark.read.parquet(source).toArrow()`, 1 job) and the target's files
scanned with their file and row index and joined with the broadcast source keys, the matched rows returned
(2 jobs: the broadcast, the scan + join) - the MERGE's own 3 jobs without Delta - and one empty job (Spark's
fixed cost per job here). MERGE / floor, paired run by run, is the ratio that does not move with the VM's
speed; the seconds beside it do. Floor and MERGE alternate which goes first.

``--count`` counts the driver's round trips to Spark in every MERGE, by phase (`spark_round_trips.py`: py4j
commands on classic, gRPC requests on Connect) with the time spent waiting for the answers, and prints the
last run's table. ``--connect`` runs the MERGE (and the floor) over a Spark Connect session served by the same
JVM (job listings still come from the JVM).

Usage: ``.venv/bin/python benchmarks/profile_spark_merge.py [--runs 3] [--profile] [--ab [--before all]]
[--floor] [--count] [--connect]``
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import pstats
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dml import TMP_DIR, WITH_DV
from bench_spark_merge import SOURCE, prepared_session
from spark_round_trips import RoundTrips, count_connect, count_py4j


@contextlib.contextmanager
def before_cuts(which: str = "driver") -> Iterator[None]:
    """The MERGE path as before issue 32 item 3's cuts: the DV job and the write as Spark jobs (`driver`); with
    `all`, also the pairs kept and joined and the stats from an aggregate job."""
    import deltakernel.spark.dml.driver_rows as driver_rows
    import deltakernel.spark.dml.merge as merge_module
    from deltakernel.spark.dml.merge_plan import MergePlan

    limit, observable = merge_module.COLLECT_SOURCE_ROWS, MergePlan._observable
    source_bytes, driver_dvs = driver_rows.COLLECT_SOURCE_BYTES, merge_module.DRIVER_DVS
    driver_rows.COLLECT_SOURCE_BYTES, merge_module.DRIVER_DVS = 0, False
    if which == "all":
        merge_module.COLLECT_SOURCE_ROWS = 0
        MergePlan._observable = lambda self, keys: False  # type: ignore[method-assign]
    try:
        yield
    finally:
        driver_rows.COLLECT_SOURCE_BYTES, merge_module.DRIVER_DVS = source_bytes, driver_dvs
        merge_module.COLLECT_SOURCE_ROWS = limit
        MergePlan._observable = observable  # type: ignore[method-assign]


def _timeline(app_store: Any, job: int, epoch_ms: float) -> str:
    """When a job started and ended (ms after the MERGE started) and its tasks' run / deserialize time summed
    over its stages (what is not that is scheduling, shuffle waits and the driver)."""
    try:
        data = app_store.job(job)
        begin = data.submissionTime().get().getTime() - epoch_ms
        end = data.completionTime().get().getTime() - epoch_ms
        run = deser = 0
        ids = data.stageIds()
        for k in range(ids.size()):
            stage = app_store.lastStageAttempt(ids.apply(k))
            run += stage.executorRunTime()
            deser += stage.executorDeserializeTime()
        return f"; {begin:.0f}-{end:.0f} ms ({end - begin:.0f} ms), tasks run {run} ms + deserialize {deser} ms"
    except Exception as e:  # a skipped stage, a store without the job yet
        return f"; no timeline ({type(e).__name__})"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _sessions(connect: bool) -> tuple[Any, Any]:
    """(the classic session: jobs, stores; the session the MERGE runs on: the same, or a Connect client of it)."""
    if not connect:
        spark = prepared_session()
        return spark, spark
    port = _free_port()
    classic = prepared_session({"spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
                                "spark.connect.grpc.binding.address": "127.0.0.1",
                                "spark.connect.grpc.binding.port": str(port)})
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    import deltakernel.spark as dks

    remote = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
    remote.conf.set("spark.sql.shuffle.partitions", "2")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark's functions build Connect Columns from here on
    dks.enable(remote)
    return classic, remote


def _floor(spark: Any, target_files: list[str]) -> dict[str, float]:
    """Seconds of the Spark work a MERGE of the source into the target cannot avoid, done natively (module
    docstring): the source read to the driver; the target's files scanned with file and row index and joined
    with the broadcast source keys, the matched rows returned; and an empty one-task job."""
    from pyspark.sql import functions as F

    source = spark.read.parquet(str(SOURCE))  # its schema inference is not the floor's, as for the MERGE
    schema = source.schema
    out = {}
    start = time.perf_counter()
    src = source.toArrow()
    out["source read"] = time.perf_counter() - start
    start = time.perf_counter()
    pairs = (spark.read.schema(schema).parquet(*target_files)
             .select("id", F.col("_metadata.file_path").alias("f"), F.col("_metadata.row_index").alias("r"))
             .join(F.broadcast(source.select("id")), "id").toArrow())
    out["scan + join"] = time.perf_counter() - start
    start = time.perf_counter()
    spark.range(0, 1, 1, 1).toArrow()
    out["empty job"] = time.perf_counter() - start
    if src.num_rows != 50_000 or pairs.num_rows != 45_000:
        raise RuntimeError(f"floor: {src.num_rows} source rows, {pairs.num_rows} pairs (expected 50,000, 45,000)")
    return out


class Runner:
    """One session's MERGEs (and floors): the table copied fresh each time, the jobs, SQL executions and round trips
    of each MERGE listed."""

    def __init__(self, args: argparse.Namespace, table_name: str = "profile_spark_merge") -> None:
        from deltakernel import DeltaTable as KernelTable

        self.args = args
        self.table = TMP_DIR / table_name
        self.spark, self.session = _sessions(args.connect)
        self.target_files = KernelTable(str(WITH_DV)).file_uris()
        self.counter: RoundTrips | None = None
        if args.count:
            self.counter = count_connect(self.session) if args.connect else count_py4j(self.spark)
        self.tracker = self.spark.sparkContext.statusTracker()
        self.store = self.spark._jsparkSession.sharedState().statusStore()
        self.app_store = self.spark._jsc.sc().statusStore()
        self.seen = {"job": -1, "sql": -1}

    def new_jobs(self) -> list[int]:
        ids = set(self.tracker.getJobIdsForGroup(None)) | set(self.tracker.getJobIdsForGroup(""))
        out = sorted(j for j in ids if j > self.seen["job"])
        self.seen["job"] = max([self.seen["job"], *out])
        return out

    def new_executions(self) -> list[Any]:
        rows = self.store.executionsList()
        out = [rows.apply(k) for k in range(rows.size()) if rows.apply(k).executionId() > self.seen["sql"]]
        self.seen["sql"] = max([self.seen["sql"], *[e.executionId() for e in out]])
        return out

    def one(self, run: int, variant: str, profile: bool = False, verbose: bool = True) -> dict[str, Any]:
        """One MERGE (and, with --floor, the floor: before it on odd runs); its seconds, driver CPU, jobs, round
        trips and floor parts."""
        from deltakernel.spark import DeltaTable

        args, session = self.args, self.session
        shutil.rmtree(self.table, ignore_errors=True)
        shutil.copytree(WITH_DV, self.table)
        floor_first = args.floor and run % 2 == 1
        floor = _floor(session, self.target_files) if floor_first else None
        source = session.read.parquet(str(SOURCE))  # its schema inference is one job, not the MERGE's
        self.new_jobs()
        self.new_executions()
        prof = cProfile.Profile() if profile else None
        counting = self.counter.counting() if self.counter is not None else contextlib.nullcontext()
        with before_cuts(args.before) if variant == "before" else contextlib.nullcontext(), counting:
            start, cpu, epoch_ms = time.perf_counter(), time.process_time(), time.time() * 1000
            if prof is not None:
                prof.enable()
            (DeltaTable.forPath(session, str(self.table)).alias("t").merge(source.alias("s"), "t.id = s.id")  # type: ignore[attr-defined]
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            if prof is not None:
                prof.disable()
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        jobs = self.new_jobs()
        out: dict[str, Any] = {"seconds": seconds, "cpu": cpu, "jobs": len(jobs),
                               "trips": self.counter.total() if self.counter is not None else None}
        if verbose:
            time.sleep(0.5)  # the status store fills from the listener bus
            for j in jobs:
                info = self.tracker.getJobInfo(j)
                stages = [self.tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
                print(f"  job {j}: " + ", ".join(f"stage {s.stageId} ({s.numTasks} tasks)" for s in stages if s)
                      + _timeline(self.app_store, j, epoch_ms))
            for e in self.new_executions():
                done = e.completionTime()
                ms = done.get().getTime() - e.submissionTime() if done.isDefined() else None
                print(f"  sql {e.executionId()}: jobs {e.jobs().keys().mkString(',')}, {ms} ms, "
                      f"{e.description()[:100]!r}")
        if args.floor:
            out["floor"] = floor if floor is not None else _floor(session, self.target_files)
            out["floor_first"] = floor_first
        if prof is not None:
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
            print(text.getvalue())
        return out

    def stop(self) -> None:
        shutil.rmtree(self.table, ignore_errors=True)
        if self.session is not self.spark:
            self.session.stop()
        self.spark.stop()


_MARK = "@@profile_spark_merge "


def _serve(args: argparse.Namespace) -> None:
    """--against's other process: one MERGE per `run <n>` line read, its record as one JSON line."""
    import json

    runner = Runner(args, "profile_spark_merge_against")
    print(_MARK + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.startswith("run"):
            break
        with contextlib.redirect_stdout(sys.stderr):  # job listings are not the protocol's
            record = runner.one(int(line.split()[1]), "after", verbose=False)
        print(_MARK + json.dumps(record), flush=True)
    runner.stop()


class _Against:
    """The other tree's MERGE (`--against SRC`: deltakernel imported from SRC) in a process of its own with its own
    session, run when asked, so its MERGEs alternate with this process's."""

    def __init__(self, args: argparse.Namespace) -> None:
        import json
        import subprocess

        env = dict(os.environ, PYTHONPATH=args.against)
        env.pop("SPARK_CONNECT_MODE_ENABLED", None)  # its classic session first (it sets this itself)
        cmd = [sys.executable, __file__, "--serve", *(["--floor"] if args.floor else []),
               *(["--connect"] if args.connect else [])]
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if not json.loads(self._line()).get("ready"):
            raise RuntimeError("--against: the other process did not start")

    def _line(self) -> str:
        """The next protocol line (other output of the process - the JVM's - is passed on)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(_MARK):
                return line[len(_MARK):]
            sys.stderr.write(line)
        raise RuntimeError("--against: the other process ended")

    def one(self, run: int) -> dict[str, Any]:
        import json

        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"run {run}\n")
        self.proc.stdin.flush()
        return dict(json.loads(self._line()))

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="MERGEs (the first warms the JVM up)")
    ap.add_argument("--profile", action="store_true", help="cProfile the last run's driver")
    ap.add_argument("--ab", action="store_true", help="alternate the MERGE before / after the cuts, run by run")
    ap.add_argument("--before", choices=["driver", "all"], default="driver",
                    help="--ab's baseline: without the driver's DVs and write (default), or without every cut")
    ap.add_argument("--against", metavar="SRC", help="--ab's baseline: deltakernel from the source tree SRC (e.g. "
                    "/work/main/src), in a second process with its own session, MERGEs alternating")
    ap.add_argument("--floor", action="store_true", help="time the native floor in every run (module docstring)")
    ap.add_argument("--count", action="store_true", help="count the driver's round trips by phase")
    ap.add_argument("--connect", action="store_true", help="run the MERGE over a Spark Connect session")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        _serve(args)
        return
    args.ab = args.ab or args.against is not None
    records: dict[str, list[dict[str, Any]]] = {"after": [], "before": []}
    runner = Runner(args)
    against = _Against(args) if args.against else None
    try:
        for run in range(args.runs):
            # --ab: warm-up runs 0 and 1 (one per variant), then before / after alternate (after first on odd pairs)
            variant = "after" if not args.ab or (run % 2 == 0) == ((run // 2) % 2 == 0) else "before"
            if against is not None and variant == "before":
                record = against.one(run)
            else:
                record = runner.one(run, variant, profile=args.profile and run == args.runs - 1)
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            warm = run == 0 or (args.ab and run == 1)
            if not warm:
                records[variant].append(record)
            print(f"run {run}{' (warm-up)' if warm else ''}{f' [{variant}]' if args.ab else ''}: "
                  f"{record['seconds']:.2f} s, driver CPU {record['cpu']:.2f} s, {record['jobs']} Spark jobs, "
                  f"load average {load}" + (f", {record['trips']} round trips" if record["trips"] else ""),
                  flush=True)
            if "floor" in record:
                floor = record["floor"]
                total = floor["source read"] + floor["scan + join"]
                print(f"  floor ({'before' if record['floor_first'] else 'after'} the MERGE): "
                      + ", ".join(f"{k} {v:.3f} s" for k, v in floor.items())
                      + f"; MERGE / floor {record['seconds'] / total:.2f}x, MERGE - floor "
                        f"{record['seconds'] - total:.2f} s", flush=True)
            if runner.counter is not None and run == args.runs - 1 and variant == "after":
                print(runner.counter.report(
                    f"  round trips of this MERGE ({'gRPC requests' if args.connect else 'py4j commands'})", 12))
    finally:
        if against is not None:
            against.stop()
        runner.stop()
    _summary(args, records)


def _summary(args: argparse.Namespace, records: dict[str, list[dict[str, Any]]]) -> None:
    for variant, rows in records.items():
        if rows:
            trips = sorted({r["trips"] for r in rows if r["trips"] is not None})
            print(f"{variant}: {len(rows)} runs, median {statistics.median(r['seconds'] for r in rows):.3f} s, "
                  f"driver CPU median {statistics.median(r['cpu'] for r in rows):.3f} s, "
                  f"jobs {sorted({r['jobs'] for r in rows})}" + (f", round trips {trips}" if trips else ""))
        floored = [r for r in rows if "floor" in r]
        if floored:
            ratios = [r["seconds"] / (r["floor"]["source read"] + r["floor"]["scan + join"]) for r in floored]
            parts = {k: statistics.median(r["floor"][k] for r in floored) for k in floored[0]["floor"]}
            print(f"{variant} / floor, paired: median {statistics.median(ratios):.2f}x (range {min(ratios):.2f}-"
                  f"{max(ratios):.2f}x over {len(ratios)} runs); floor medians: "
                  + ", ".join(f"{k} {v:.3f} s" for k, v in parts.items()))
    pairs = list(zip(records["after"], records["before"]))
    if args.ab and pairs:
        ratios = [a["seconds"] / b["seconds"] for a, b in pairs]
        print(f"after / before, paired: median {statistics.median(ratios):.2f}x "
              f"(range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} pairs)")


if __name__ == "__main__":
    main()
