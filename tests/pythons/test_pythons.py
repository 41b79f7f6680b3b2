"""deltakernel on every supported Python: the whole suite runs on the interpreter running it, this module runs a
fast core on each other one (3.10-3.13).

Per other interpreter: a cached venv with deltakernel's runtime dependencies and the few test tools the core needs
(`_uv_venvs.cached_venv`), deltakernel installed into it from this tree - the sdist on the oldest Python, the wheel
built from that sdist on the others, so both artifacts are installed and exercised - then `_pythons_smoke.py`
(write, read, time travel, DELETE, UPDATE, MERGE, OPTIMIZE, VACUUM, SQL, from outside the tree) and a handful of
unit files chosen for coverage of the version-sensitive code (SQL parsing, log replay, expressions, time travel,
lazy imports) at a few seconds each. Each interpreter's cost is a venv check, a `--no-deps` install and two short
processes; the first run builds the venvs (cold: seconds with uv's cache, one download per wheel without it).
Marker: `pythons` (`-m "not pythons"` leaves it out). An interpreter not installed skips with the reason.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _uv_venvs import ROOT, build_dists, cached_venv, clean_env, find_python, project, requirements, uv

SUPPORTED = ("3.10", "3.11", "3.12", "3.13")  # pyproject.toml: requires-python >= 3.10; classifiers would list these
RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"
OTHERS = tuple(m for m in SUPPORTED if m != RUNNING)
SMOKE = Path(__file__).resolve().parent / "_pythons_smoke.py"
# the test tools (from the `test` extra, same ranges) the core files import: hypothesis for the property tests,
# deltalake and DuckDB as the oracles of tests/helpers.py, DataFusion for the SQL front end
TEST_TOOLS = ("pytest", "hypothesis", "deltalake", "duckdb", "duckdb-extension-delta", "datafusion")
CORE_TESTS = (
    "tests/unit/test_sql_fast.py",  # the sqlglot-free parser and its keyword check against the installed sqlglot
    "tests/unit/test_replay.py",  # log replay: Arrow JSON parsing, checkpoints
    "tests/unit/test_expressions.py",  # predicate evaluation and skipping over pyarrow
    "tests/unit/test_time_travel.py",  # timestamps and datetime parsing (ISO-8601 parsing differs before 3.11)
    "tests/unit/test_lazy_imports.py",  # the import graph: no engine imported by `import deltakernel`
    "tests/unit/test_isotime.py",  # ISO-8601 parsing as on 3.11 (datetime.fromisoformat accepts less on 3.10)
)

pytestmark = [pytest.mark.pythons]


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    return build_dists(tmp_path_factory.mktemp("dist"))


@pytest.mark.parametrize("minor", OTHERS)
def test_core_on_python(minor, dists, tmp_path):
    python = find_python(minor)
    if python is None:
        pytest.skip(f"Python {minor} is not installed (pyenv install {minor})")
    # pandas from the `pandas` extra (<4), not the `test` extra (<3, beside pyspark): the embedded engine is
    # tested on pandas 3 here (where the interpreter has it), the main suite on pandas 2
    reqs = [*requirements(TEST_TOOLS), *project()["optional-dependencies"]["pandas"]]
    venv = cached_venv(f"python-{minor}", python, reqs)
    vpy = str(venv / "bin" / "python")
    wheel, sdist = dists
    artifact = sdist if minor == SUPPORTED[0] else wheel
    uv("pip", "install", "-q", "--python", vpy, "--reinstall-package", "deltakernel", "--no-deps", str(artifact))
    uv("pip", "check", "--python", vpy)  # the artifact's Requires-Dist is satisfied by the venv

    smoke = subprocess.run([vpy, str(SMOKE), str(tmp_path / "smoke"), "--installed"], capture_output=True,
                           text=True, timeout=600, env=clean_env(), cwd=tmp_path)
    assert smoke.returncode == 0, f"smoke failed on Python {minor}:\n{smoke.stdout}\n{smoke.stderr[-6000:]}"
    assert f"python {minor}." in smoke.stdout and "smoke passed" in smoke.stdout, smoke.stdout
    assert smoke.stderr == "", smoke.stderr  # no warnings on import or use

    # cwd is the tree (its tests and conftest), but `src/` is not on the path: deltakernel is the installed one
    core = subprocess.run([vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *CORE_TESTS],
                          capture_output=True, text=True, timeout=900, env=clean_env(), cwd=ROOT)
    assert core.returncode == 0, f"core tests failed on Python {minor}:\n{core.stdout[-8000:]}\n{core.stderr[-3000:]}"
    where = subprocess.run([vpy, "-c", "import deltakernel; print(deltakernel.__file__)"], capture_output=True,
                           text=True, env=clean_env(), cwd=ROOT, check=True).stdout
    assert str(venv) in where, where
