"""`pip install deltakernel`, `[spark]`, `[connect]`, `[datafusion]` and `[all]` each work in a fresh venv, and
importing what the extra is for prints nothing (no warning, no notice).

Each case is a new venv (never cached: the point is what a user's first install resolves) on the running
interpreter, with deltakernel's wheel built from this tree and the extra resolved from the index - the newest
versions the ranges allow, as pip would pick. uv links the files from its cache, so a venv with pyspark costs
seconds once the cache is warm. The import runs in a fresh interpreter with Python's default warning filters (what
a user sees) plus `error::FutureWarning`-style visibility for every category (`-W default`), and its stderr must be
empty: pyspark's "does not yet fully support pandas >= 3.0.0" FutureWarning is why the Spark extras pin
`pandas<3` (docs/decisions.md). Marker: `installs`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _uv_venvs import build_dists, clean_env, ensure_sdist_wheels, project, uv, wheelhouse

pytestmark = [pytest.mark.installs]

# what each extra is for, imported as a user would first import it
IMPORTS = {
    "": "import deltakernel; from deltakernel import DeltaTable, write_deltalake; import deltakernel.cli",
    "spark": "import deltakernel.spark; from pyspark.sql import SparkSession; import pyspark.sql.functions",
    "connect": "import deltakernel.spark; import pyspark.sql.connect.session; from pyspark.sql import SparkSession",
    "datafusion": "import deltakernel.datafusion; import datafusion; from deltakernel import QueryBuilder",
}
IMPORTS["all"] = "; ".join(IMPORTS.values())
# a tiny round trip after the imports: the install works, not only imports
ROUND_TRIP = (
    "import sys, pyarrow as pa; from deltakernel import DeltaTable, write_deltalake; "
    "write_deltalake(sys.argv[1], pa.table({'id': [1, 2]})); assert DeltaTable(sys.argv[1]).to_pyarrow_table().num_rows == 2"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    spark = [r for r in project()["optional-dependencies"]["connect"] if r.startswith("pyspark")]
    ensure_sdist_wheels(spark[0].replace("[connect]", ""))
    return build_dists(tmp_path_factory.mktemp("dist"))[0]


@pytest.mark.parametrize("extra", list(IMPORTS))
def test_clean_install_imports_quietly(extra, wheel, tmp_path):
    venv = tmp_path / "venv"
    uv("venv", "-q", "--python", sys.executable, str(venv))
    vpy = str(venv / "bin" / "python")
    target = f"deltakernel[{extra}] @ {wheel.as_uri()}" if extra else str(wheel)
    uv("pip", "install", "-q", "--python", vpy, "--find-links", str(wheelhouse()), target)
    uv("pip", "check", "--python", vpy)
    # -W default: show every warning once, DeprecationWarning raised inside libraries included
    done = subprocess.run([vpy, "-W", "default", "-c", f"{IMPORTS[extra]}; {ROUND_TRIP}", str(tmp_path / "t")],
                          capture_output=True, text=True, timeout=300, env=clean_env(), cwd=tmp_path)
    assert done.returncode == 0, f"[{extra}]:\n{done.stderr[-6000:]}"
    assert done.stderr == "", f"importing deltakernel[{extra}] printed:\n{done.stderr}"
    where = subprocess.run([vpy, "-c", "import deltakernel; print(deltakernel.__file__)"], capture_output=True,
                           text=True, env=clean_env(), cwd=tmp_path, check=True).stdout
    assert str(venv) in where, where
