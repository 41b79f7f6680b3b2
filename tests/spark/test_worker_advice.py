"""The advice `enable()` gives when Spark's Python workers cannot import deltakernel works when followed verbatim.

A newcomer runs `.venv/bin/python job.py` with no PYSPARK_PYTHON: Spark gives its workers `python3` from the
PATH, which lacks deltakernel. Here the PATH's `python3` is a shim to the base interpreter with no site-packages,
and each session runs in a fresh interpreter (`_worker_advice_job.py`) - a session's worker interpreter is fixed
when its SparkContext starts, so this cannot share the suite's session. Shown: the old advice
(`.config('spark.pyspark.python', sys.executable)`) leaves `sc.pythonExec` at `python3`; `enable()` raises
`PythonWorkerError` with the fix; without the check a DELETE fails in its tasks; the message's Python line, run
as written (in a fresh process, and in the same process after `spark.stop()`), makes DELETE and the read work.
The same over a local Spark Connect server (`remote("local[1]")`), whose message says to start it with the variable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
JOB = HERE / "_worker_advice_job.py"


def _env(tmp_path: Path) -> dict[str, str]:
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    base = getattr(sys, "_base_executable", None) or sys.executable
    shim = shim_dir / "python3"
    # isolated (-I: no PYTHONPATH, no user site) and without site-packages (-S): an interpreter with no deltakernel
    shim.write_text(f'#!/bin/sh\nexec "{base}" -I -S "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "DELTAKERNEL_SKIP_WORKER_CHECK",
                        "SPARK_CONNECT_MODE_ENABLED")}
    env["PATH"] = f"{shim_dir}{os.pathsep}{env.get('PATH', '')}"
    probe = subprocess.run(["python3", "-c", "import deltakernel"], env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "deltakernel" in probe.stderr, "the shim python3 must lack deltakernel"
    return env


def _run(env: dict[str, str], *args: str) -> dict:
    done = subprocess.run([sys.executable, str(JOB), *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.own_jvm  # fresh sessions in fresh processes (tests/conftest.py)
def test_worker_advice_followed_verbatim_works(tmp_path):
    pytest.importorskip("pyspark")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed")
    sys.path.insert(0, str(HERE))
    from _worker_advice_job import advice_line

    env = _env(tmp_path)
    kept = sorted(i for i in range(10) if i % 3)

    broken = _run(env, "broken", str(tmp_path / "broken"))
    assert broken["python_exec"] == "python3"  # `.config('spark.pyspark.python', ...)` did not reach the workers
    message = broken["error"]
    assert message and "cannot import deltakernel" in message and "No module named 'deltakernel'" in message
    assert "PYSPARK_PYTHON" in message and f"export PYSPARK_PYTHON={sys.executable}" in message
    assert "spark.pyspark.python', ...)` does not change it" in message
    # what the check prevents: the first DELETE failing in its tasks
    assert isinstance(broken["unchecked_delete"], str) and broken["unchecked_delete"], broken["unchecked_delete"]
    # the in-process route (stop, the advice line, the session again)
    assert broken["restarted"] == {"python_exec": sys.executable, "ids": kept}

    line = advice_line(message)
    assert "PYSPARK_PYTHON" in line
    fresh = _run(env, "advice", str(tmp_path / "fresh"), line)
    assert fresh == {"python_exec": sys.executable, "ids": kept}


@pytest.mark.slow
@pytest.mark.own_jvm  # fresh sessions in fresh processes (tests/conftest.py)
def test_connect_worker_advice_followed_verbatim_works(tmp_path):
    """`remote("local[...]")`: the server this process starts gives its workers the PYSPARK_PYTHON of its JVM."""
    pytest.importorskip("pyspark")
    pytest.importorskip("grpc")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed")
    sys.path.insert(0, str(HERE))
    from _worker_advice_job import advice_line

    env = _env(tmp_path)
    broken = _run(env, "connect-broken", str(tmp_path / "broken"))
    message = broken["error"]
    assert message and "Spark Connect server's Python workers cannot import deltakernel" in message, broken
    assert "PYSPARK_PYTHON" in message  # the probe's own failure: the shim cannot even start a pyspark worker
    fresh = _run(env, "connect-advice", str(tmp_path / "fresh"), advice_line(message))
    assert fresh == {"error": None, "ids": sorted(i for i in range(10) if i % 3)}
