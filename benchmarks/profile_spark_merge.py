"""Where a Spark MERGE with deletion vectors spends its time: the Spark jobs and SQL executions it runs (issue 32).

Why: each Spark job costs ~50-100 ms of scheduling on ``local[2]`` besides its work, so the 1 % upsert into
5M rows (bench_spark_merge.py's DV contender, goal <= 0.7 s) is cut by running fewer jobs, and the first step is
to know which jobs run. Per MERGE this prints its wall time, every Spark job (stages, tasks), every SQL execution
(its description = the driver's call site, its jobs, its duration) and, with ``--profile``, the driver's cProfile
of the last run. Classic sessions only (the SQL status store is read through py4j). Tables and source are
bench_spark_merge.py's (``dml_5m_dv`` + the 50,000-row Parquet source). The machine's load average is printed
beside every run: timings under load are not the quiet-machine numbers; the job counts are.

``--ab`` alternates, run by run in the one session, the MERGE as it runs now and as it ran before a cut of
issue 32 item 3, and prints per variant the median wall time, the driver process's CPU time and the job count
(paired, alternating: the load drifts). ``--before driver`` (the default): before the driver wrote the DVs and
the rows (helper "mergefast": the DV job and the write as Spark jobs, `merge.DRIVER_DVS = False`,
`driver_rows.COLLECT_SOURCE_BYTES = 0`); ``--before all``: also before helper "mergecut"'s cuts (the pairs kept on the executors and joined in the
write, the source stats from an aggregate job: `merge.COLLECT_SOURCE_ROWS = 0` and no observed stats).

Usage: ``.venv/bin/python benchmarks/profile_spark_merge.py [--runs 3] [--profile] [--ab [--before all]]``
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="MERGEs (the first warms the JVM up)")
    ap.add_argument("--profile", action="store_true", help="cProfile the last run's driver")
    ap.add_argument("--ab", action="store_true", help="alternate the MERGE before / after the cuts, run by run")
    ap.add_argument("--before", choices=["driver", "all"], default="driver",
                    help="--ab's baseline: without the driver's DVs and write (default), or without every cut")
    args = ap.parse_args()
    measured: dict[str, list[tuple[float, float, int]]] = {"after": [], "before": []}
    spark = prepared_session()
    from deltakernel.spark import DeltaTable

    tracker = spark.sparkContext.statusTracker()
    store = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    seen = {"job": -1, "sql": -1}
    app_store = spark._jsc.sc().statusStore()  # type: ignore[attr-defined]

    def new_jobs() -> list[int]:
        ids = set(tracker.getJobIdsForGroup(None)) | set(tracker.getJobIdsForGroup(""))
        out = sorted(j for j in ids if j > seen["job"])
        seen["job"] = max([seen["job"], *out])
        return out

    def new_executions() -> list[Any]:
        rows = store.executionsList()
        out = [rows.apply(k) for k in range(rows.size()) if rows.apply(k).executionId() > seen["sql"]]
        seen["sql"] = max([seen["sql"], *[e.executionId() for e in out]])
        return out

    for run in range(args.runs):
        table = TMP_DIR / "profile_spark_merge"
        shutil.rmtree(table, ignore_errors=True)
        shutil.copytree(WITH_DV, table)
        source = spark.read.parquet(str(SOURCE))  # its schema inference is one job, not the MERGE's
        new_jobs()
        new_executions()
        prof = cProfile.Profile() if args.profile and run == args.runs - 1 else None
        # --ab: warm-up runs 0 and 1 (one per variant), then before / after alternate (after first on odd pairs)
        variant = "after" if not args.ab or (run % 2 == 0) == ((run // 2) % 2 == 0) else "before"
        with before_cuts(args.before) if variant == "before" else contextlib.nullcontext():
            start, cpu, epoch_ms = time.perf_counter(), time.process_time(), time.time() * 1000
            if prof is not None:
                prof.enable()
            (DeltaTable.forPath(spark, str(table)).alias("t").merge(source.alias("s"), "t.id = s.id")  # type: ignore[attr-defined]
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
            if prof is not None:
                prof.disable()
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        jobs = new_jobs()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        warm = run == 0 or (args.ab and run == 1)
        if not warm:
            measured[variant].append((seconds, cpu, len(jobs)))
        print(f"run {run}{' (warm-up)' if warm else ''}{f' [{variant}]' if args.ab else ''}: {seconds:.2f} s, "
              f"driver CPU {cpu:.2f} s, {len(jobs)} Spark jobs, load average {load}")
        time.sleep(0.5)  # the status store fills from the listener bus
        for j in jobs:
            info = tracker.getJobInfo(j)
            stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
            print(f"  job {j}: " + ", ".join(f"stage {s.stageId} ({s.numTasks} tasks)" for s in stages if s)
                  + _timeline(app_store, j, epoch_ms))
        for e in new_executions():
            done = e.completionTime()
            ms = done.get().getTime() - e.submissionTime() if done.isDefined() else None
            print(f"  sql {e.executionId()}: jobs {e.jobs().keys().mkString(',')}, {ms} ms, "
                  f"{e.description()[:100]!r}")
        if prof is not None:
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats(30)
            print(text.getvalue())
    shutil.rmtree(TMP_DIR / "profile_spark_merge", ignore_errors=True)
    spark.stop()
    for variant, rows in measured.items():
        if rows:
            print(f"{variant}: {len(rows)} runs, median {statistics.median(r[0] for r in rows):.3f} s, driver CPU "
                  f"median {statistics.median(r[1] for r in rows):.3f} s, jobs {sorted({r[2] for r in rows})}")
    pairs = list(zip(measured["after"], measured["before"]))
    if args.ab and pairs:
        ratios = [a[0] / b[0] for a, b in pairs]
        print(f"after / before, paired: median {statistics.median(ratios):.2f}x "
              f"(range {min(ratios):.2f}-{max(ratios):.2f}x over {len(ratios)} pairs)")


if __name__ == "__main__":
    main()
