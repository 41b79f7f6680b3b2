"""Where a Spark MERGE with deletion vectors spends its time: the Spark jobs and SQL executions it runs (issue 32).

Why: each Spark job costs ~50-100 ms of scheduling on ``local[2]`` besides its work, so the 1 % upsert into
5M rows (bench_spark_merge.py's DV contender, goal <= 0.7 s) is cut by running fewer jobs, and the first step is
to know which jobs run. Per MERGE this prints its wall time, every Spark job (stages, tasks), every SQL execution
(its description = the driver's call site, its jobs, its duration) and, with ``--profile``, the driver's cProfile
of the last run. Classic sessions only (the SQL status store is read through py4j). Tables and source are
bench_spark_merge.py's (``dml_5m_dv`` + the 50,000-row Parquet source). The machine's load average is printed
beside every run: timings under load are not the quiet-machine numbers; the job counts are.

Usage: ``.venv/bin/python benchmarks/profile_spark_merge.py [--runs 3] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_dml import TMP_DIR, WITH_DV
from bench_spark_merge import SOURCE, prepared_session


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="MERGEs (the first warms the JVM up)")
    ap.add_argument("--profile", action="store_true", help="cProfile the last run's driver")
    args = ap.parse_args()
    spark = prepared_session()
    from deltakernel.spark import DeltaTable

    tracker = spark.sparkContext.statusTracker()
    store = spark._jsparkSession.sharedState().statusStore()  # type: ignore[attr-defined]
    seen = {"job": -1, "sql": -1}

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
        start = time.perf_counter()
        if prof is not None:
            prof.enable()
        (DeltaTable.forPath(spark, str(table)).alias("t").merge(source.alias("s"), "t.id = s.id")  # type: ignore[attr-defined]
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        if prof is not None:
            prof.disable()
        seconds = time.perf_counter() - start
        jobs = new_jobs()
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"run {run}{' (warm-up)' if run == 0 else ''}: {seconds:.2f} s, {len(jobs)} Spark jobs, "
              f"load average {load}")
        for j in jobs:
            info = tracker.getJobInfo(j)
            stages = [tracker.getStageInfo(s) for s in (info.stageIds if info else [])]
            print(f"  job {j}: " + ", ".join(f"stage {s.stageId} ({s.numTasks} tasks)" for s in stages if s))
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


if __name__ == "__main__":
    main()
