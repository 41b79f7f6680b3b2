"""`enable()` checks that the Python Spark starts for its workers can import deltakernel.

OPTIMIZE, change data feed, streaming, DML and the Python data source run deltakernel code in Spark's Python
workers. A session started from Python gives its workers the interpreter the `PYSPARK_PYTHON` environment
variable names when its SparkContext starts (`SparkContext.pythonExec`) - `python3` from the PATH when unset,
not the virtual environment the driver runs in. Setting `spark.pyspark.python` on the builder does not change it
(pyspark 4.x reads only the environment variable; that setting is for `spark-submit`), so the advice is the
environment variable, set before the session starts: `tests/spark/test_worker_advice.py` follows the message
literally in a fresh process. A Spark Connect server's workers use the server JVM's own `PYSPARK_PYTHON`.

Without this check a newcomer running `.venv/bin/python job.py` meets `ModuleNotFoundError: No module named
'deltakernel'` deep inside a task, at the first DELETE. So `enable()` raises `PythonWorkerError` up front (reads
and appends would work, but the first DML would fail mid-job); `DELTAKERNEL_SKIP_WORKER_CHECK=1` skips it. The
check is free when the workers run the driver's own interpreter; otherwise the configured interpreter is asked
to import deltakernel (a subprocess for local masters); on a cluster one one-task job imports it on an
executor. Once per application.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

from ...errors import DeltaError

_CHECKED: set[str] = set()
_PROBE = "import deltakernel.spark.scan.paths"


class PythonWorkerError(DeltaError):
    """Spark's Python workers cannot import deltakernel."""


def _interpreters(spark: Any) -> list[str]:
    """Every interpreter Spark may start for Python work, as configured (duplicates removed)."""
    sc = spark.sparkContext
    found: list[str] = [str(sc.pythonExec)]
    try:
        conf = sc._jsc.sc().conf()
        for key in ("spark.pyspark.python", "spark.pyspark.driver.python"):
            if conf.contains(key):
                found.append(str(conf.get(key)))
        system = sc._jvm.java.lang.System
        for var in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
            value = system.getenv(var)
            if value:
                found.append(str(value))
    except Exception:  # pragma: no cover - best effort on exotic gateways
        pass
    out: list[str] = []
    for exe in found:
        if exe and exe not in out:
            out.append(exe)
    return out


def _same_as_driver(exe: str) -> bool:
    path = shutil.which(exe) or exe
    return os.path.abspath(path) == os.path.abspath(sys.executable)


def _local_probe(exe: str) -> str | None:
    """None when `exe` imports deltakernel, else why not."""
    try:
        done = subprocess.run([exe, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run it ({e})"
    if done.returncode == 0:
        return None
    lines = [ln for ln in (done.stderr or "").strip().splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit status {done.returncode}"


def _cluster_probe(spark: Any) -> str | None:
    def probe(_: Any) -> str:
        try:
            import deltakernel.spark.scan.paths  # noqa: F401

            return ""
        except Exception as e:  # report, do not fail the task
            import sys as worker_sys

            return f"{worker_sys.executable}: {type(e).__name__}: {e}"

    try:
        errors = [e for e in spark.sparkContext.parallelize([0], 1).map(probe).collect() if e]
    except Exception as e:
        return f"the probe job failed: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
    return errors[0] if errors else None


def _connect_probe(spark: Any) -> str | None:
    """Over Spark Connect: one one-task `mapInArrow` job on the server's Python workers."""
    from collections.abc import Iterator

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import sys as worker_sys

        import pyarrow as pa

        for _ in batches:
            pass
        try:
            import deltakernel.spark.scan.paths  # noqa: F401

            why = ""
        except Exception as e:  # report, do not fail the task
            why = f"{worker_sys.executable}: {type(e).__name__}: {e}"
        yield pa.record_batch([pa.array([why], pa.string())], names=["why"])

    try:
        rows = spark.range(1).mapInArrow(probe, "why string").collect()
    except Exception as e:
        return f"the probe job failed: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
    errors = [r["why"] for r in rows if r["why"]]
    return errors[0] if errors else None


# the line the message tells a Python user to run before the session starts (the advice test runs it verbatim)
_PYTHON_LINE = '`import os, sys; os.environ["PYSPARK_PYTHON"] = sys.executable`'


def worker_advice(problems: str, local: bool = True) -> str:
    """The message of `PythonWorkerError` on a classic session: what failed, and the one setting that works."""
    where = ("" if local else " On a cluster, that path must hold an interpreter with deltakernel installed on "
             "every node.")
    return (
        f"Spark's Python workers cannot import deltakernel ({problems}). Spark starts them with the interpreter "
        "the PYSPARK_PYTHON environment variable names when the session starts (`python3` from the PATH when it "
        "is unset; `.config('spark.pyspark.python', ...)` does not change it). Set PYSPARK_PYTHON to this "
        f"interpreter before the session starts: in the shell, `export PYSPARK_PYTHON={sys.executable}`; or in "
        f"Python, {_PYTHON_LINE} before `SparkSession.builder...getOrCreate()` (a running session keeps its "
        f"workers' interpreter: `spark.stop()` it, then create it again).{where}")


def check_python_workers(spark: Any) -> None:
    """Raise PythonWorkerError (saying what to set) when Spark's Python workers cannot import deltakernel."""
    from ..kinds.session import is_connect

    if is_connect(spark):
        key = f"connect:{getattr(getattr(spark, 'client', None), 'host', '')}:{spark.session_id}"
        if key in _CHECKED or os.environ.get("DELTAKERNEL_SKIP_WORKER_CHECK") == "1":
            return
        why = _connect_probe(spark)
        if why is not None:
            raise PythonWorkerError(
                f"the Spark Connect server's Python workers cannot import deltakernel ({why}). The server starts "
                "them with the interpreter the PYSPARK_PYTHON environment variable named when the server started: "
                "start the server with PYSPARK_PYTHON set to an interpreter that has deltakernel installed (e.g. "
                f"`PYSPARK_PYTHON={sys.executable} $SPARK_HOME/sbin/start-connect-server.sh`; for a local "
                f"`remote('local[...]')` session, {_PYTHON_LINE} before creating it)")
        _CHECKED.add(key)
        return
    sc = spark.sparkContext
    key = str(sc.applicationId)
    if key in _CHECKED or os.environ.get("DELTAKERNEL_SKIP_WORKER_CHECK") == "1":
        return
    problems: list[str] = []
    local = str(sc.master).startswith("local")
    for exe in _interpreters(spark):
        if _same_as_driver(exe):
            continue
        why = _local_probe(exe) if local else None
        if why is not None:
            problems.append(f"{exe!r}: {why}")
    if not local and not problems:  # remote nodes may lack deltakernel whatever the path says
        why = _cluster_probe(spark)
        if why is not None:
            problems.append(why)
    if problems:
        raise PythonWorkerError(worker_advice("; ".join(problems), local))
    _CHECKED.add(key)


__all__ = ["PythonWorkerError", "check_python_workers", "worker_advice"]
