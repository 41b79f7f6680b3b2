"""Venvs for the install tests: other Pythons, clean installs of each extra, the newest allowed dependencies.

Why uv and not pip: these tests create venvs and install the same few hundred MB (pyspark alone is ~300 MB)
again and again. pip unpacks every wheel from its cache on each install (tens of seconds for pyspark); uv links
files from its own cache and resolves in parallel, so a fresh venv with `deltakernel[connect]` takes seconds, and
a cold cache costs one download per file. uv is a pinned-minor `test` dependency (PyPI wheel, no toolchain), found
next to the running interpreter. It resolves like pip: the newest versions the ranges allow.

Venvs that only carry dependencies (one per other Python) are cached under `.ci-tools/venvs/` (gitignored), keyed
by a hash of the interpreter's exact version and the requirement strings read from `pyproject.toml`: a changed
range or a new interpreter builds a new venv and removes the old one. deltakernel itself is always reinstalled
from a wheel or sdist built from the tree under test, so a cached venv never tests stale code.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENVS = ROOT / ".ci-tools" / "venvs"
# what uv prints when it cannot reach the package index
_OFFLINE = ("Failed to fetch", "dns error", "error sending request", "Connection refused", "Network is unreachable",
            "Could not connect", "failed to lookup address")


def uv_binary() -> str:
    """uv next to the running interpreter (the `test` extra installs it), else on PATH; skips when absent."""
    local = Path(sys.executable).parent / "uv"
    if local.exists():
        return str(local)
    found = shutil.which("uv")
    if found:
        return found
    pytest.skip("uv is not installed (it comes with the `test` extra: pip install -e '.[test]')")


def find_python(minor: str) -> str | None:
    """An interpreter of `minor` (e.g. "3.10"): pyenv's installs first, then `python3.10` on PATH."""
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for cand in sorted(glob.glob(os.path.join(root, "versions", f"{minor}.*", "bin", f"python{minor}")), reverse=True):
        if re.search(rf"/{re.escape(minor)}\.\d+/bin/", cand):  # not 3.10.13t or a venv named like one
            return cand
    cand = shutil.which(f"python{minor}")
    if cand:  # a pyenv shim for a version it does not have exits non-zero
        probe = subprocess.run([cand, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == minor:
            return cand
    return None


def clean_env() -> dict[str, str]:
    """The environment without this tree's PYTHONPATH: the venv must import the deltakernel it installed."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "SPARK_HOME", "PYSPARK_PYTHON")}


def uv(*args: str, timeout: int = 900, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run uv; skips when the index cannot be reached, fails with uv's output on any other error."""
    done = subprocess.run([uv_binary(), *args], capture_output=True, text=True, timeout=timeout, env=clean_env(),
                          cwd=ROOT, input=input_text)
    if done.returncode != 0:
        out = done.stdout + done.stderr
        if any(s in out for s in _OFFLINE):
            pytest.skip("uv cannot reach the package index: " + out.strip().splitlines()[-1])
        raise AssertionError(f"uv {' '.join(args)} failed:\n{out[-4000:]}")
    return done


def wheelhouse() -> Path:
    """Wheels built here from sdist-only packages (pyspark is published as an sdist only: ~450 MB, built on each
    install). uv rebuilds it on every install here (its sdist cache entry does not survive revalidation), ~3 min
    each; with the wheel of the newest allowed pyspark in this directory (`--find-links`), resolution and install
    take seconds. A new release is built once (`pip wheel`, which also caches it) and kept beside the old ones."""
    house = ROOT / ".ci-tools" / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    return house


def ensure_sdist_wheels(requirement: str) -> None:
    """Put the wheel of the newest version `requirement` allows (an sdist-only package) into the wheelhouse."""
    name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
    lock = uv("pip", "compile", "-q", "--no-deps", "--find-links", str(wheelhouse()), "--python", sys.executable,
              "-", input_text=requirement).stdout
    pinned = re.search(rf"^{re.escape(name)}==(\S+)", lock, re.M | re.I)
    assert pinned, lock
    if not list(wheelhouse().glob(f"{name}-{pinned.group(1)}-*.whl")):
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheelhouse()),
                               f"{name}=={pinned.group(1)}"], capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stdout + done.stderr


def project() -> dict:
    """`pyproject.toml`'s [project] table (tomllib from 3.11; pip's vendored tomli on 3.10)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirements(extra_names: tuple[str, ...] = ()) -> list[str]:
    """deltakernel's dependencies plus the requirements of `test` named in `extra_names` (e.g. "pytest")."""
    proj = project()
    wanted = []
    for req in proj["optional-dependencies"]["test"]:
        name = re.split(r"[\[<>=!~; ]", req, maxsplit=1)[0].lower()
        if name in extra_names:
            wanted.append(req)
    return [*proj["dependencies"], *wanted]


def cached_venv(name: str, python: str, reqs: list[str]) -> Path:
    """A venv for `python` holding `reqs`, built once per (exact interpreter version, requirements)."""
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                             check=True).stdout.strip()
    key = hashlib.sha256("\n".join([version, *sorted(reqs)]).encode()).hexdigest()[:12]
    venv = VENVS / f"{name}-{key}"
    done = venv / "deltakernel-requirements.txt"
    if not done.exists():
        for old in VENVS.glob(f"{name}-*"):  # other requirements or interpreter: no longer wanted
            shutil.rmtree(old, ignore_errors=True)
        uv("venv", "-q", "--python", python, str(venv))
        uv("pip", "install", "-q", "--python", str(venv / "bin" / "python"), *reqs)
        done.write_text("\n".join([version, *reqs]) + "\n")
    return venv


def build_dists(out: Path) -> tuple[Path, Path]:
    """An sdist of the tree, and a wheel built from that sdist (as a user's `pip install` of the sdist would)."""
    uv("build", "-q", "--out-dir", str(out), str(ROOT))
    wheels, sdists = sorted(out.glob("deltakernel-*.whl")), sorted(out.glob("deltakernel-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return wheels[0], sdists[0]
