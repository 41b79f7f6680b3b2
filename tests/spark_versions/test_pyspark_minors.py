"""A fast Spark smoke on the newest release of every older pyspark 4.x minor, beside the full suite on the newest.

`pyproject.toml` allows `pyspark>=4.0,<5`, and pyspark's DataFrame internals differ between minors (4.0 and 4.1
constructed DataFrame subclasses differently: every `format("delta")` read failed there while the suite, on 4.3,
passed). For each minor this builds - or reuses - a venv under `.ci-tools/venvs/pyspark-<minor>` (gitignored)
holding the newest patch of that minor and deltakernel's runtime dependencies (read from `pyproject.toml`), then
runs `_smoke.py` (write, append, read with time travel, SQL over a path, DELETE, MERGE, a filter that must skip a
file deleted from storage - classic and Spark Connect) in a subprocess with deltakernel from this tree on
PYTHONPATH. A cached venv is upgraded to the minor's newest patch on every run (pip's cache makes that cheap);
when pip cannot reach the package index, a cached venv is used as it is, and a missing one skips the case with
the reason. Marker: `pyspark_minors` (`-m "not pyspark_minors"` leaves it out).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).resolve().parent / "_smoke.py"
MINORS = ("4.0", "4.1", "4.2")  # the newest (the suite's own pyspark) runs the full suite
# what pip prints when it cannot reach the index (offline, no DNS, a proxy refusing)
_OFFLINE = ("from versions: none", "NewConnectionError", "Failed to establish a new connection",
            "Temporary failure in name resolution", "Network is unreachable", "ConnectTimeoutError",
            "Max retries exceeded", "ProxyError")

pytestmark = [pytest.mark.pyspark_minors, pytest.mark.slow]


def _runtime_requirements() -> list[str]:
    """deltakernel's dependencies plus the `connect` extra's pandas, as `pyproject.toml` pins them."""
    text = (ROOT / "pyproject.toml").read_text()
    try:
        import tomllib
    except ImportError:  # Python 3.10
        block = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M)
        assert block, "pyproject.toml has no dependencies list"
        deps = re.findall(r'"([^"]+)"', block.group(1))
        pandas = re.findall(r'"(pandas[^"]*)"', text)[:1]
    else:
        project = tomllib.loads(text)["project"]
        deps = list(project["dependencies"])
        pandas = [r for r in project["optional-dependencies"]["connect"] if r.startswith("pandas")]
    return [*deps, *pandas]


def _venv_python(minor: str) -> Path:
    """The interpreter of the minor's venv, created or brought to the newest patch; skips when pip is offline."""
    venv = ROOT / ".ci-tools" / "venvs" / f"pyspark-{minor}"
    python = venv / "bin" / "python"
    stamp = venv / "deltakernel-requirements.txt"
    wanted = "\n".join([f"pyspark[connect]=={minor}.*", *_runtime_requirements(), sys.version.split()[0]])
    if python.exists() and (not stamp.exists() or stamp.read_text() != wanted):
        shutil.rmtree(venv)  # other requirements or another Python: start over
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade",
         "--upgrade-strategy", "only-if-needed", f"pyspark[connect]=={minor}.*", *_runtime_requirements()],
        capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        out = done.stdout + done.stderr
        installed = subprocess.run([str(python), "-c", "import pyspark, pyarrow, grpc"], capture_output=True)
        if any(s in out for s in _OFFLINE):
            if installed.returncode == 0 and stamp.exists():
                return python  # offline: the cached venv as it is
            pytest.skip(f"pip cannot reach the package index to install pyspark {minor}.x: "
                        + out.strip().splitlines()[-1])
        raise AssertionError(f"pip could not install pyspark {minor}.x:\n{out[-4000:]}")
    stamp.write_text(wanted)
    return python


@pytest.mark.parametrize("minor", MINORS)
def test_smoke_on_pyspark_minor(minor, tmp_path):
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        pytest.skip("Java is not installed")
    python = _venv_python(minor)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "SPARK_CONNECT_MODE_ENABLED")}
    # PYTHONPATH: deltakernel from this tree, in the driver and in Spark's Python workers (PYSPARK_PYTHON)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = str(python)
    done = subprocess.run([str(python), str(SMOKE), str(tmp_path / "tables")], env=env, capture_output=True,
                          text=True, timeout=900)
    out = done.stdout
    assert done.returncode == 0, f"pyspark {minor}.x smoke failed:\n{out[-3000:]}\n{done.stderr[-8000:]}"
    assert re.search(rf"^pyspark {re.escape(minor)}\.\d+ ", out, re.M), out
    for kind in ("classic", "connect"):
        for step in ("write+append", "read+time travel", "sql over a path", "delete", "merge", "filter skips"):
            assert f"ok {kind} {step}\n" in out, out
    assert "smoke passed" in out
