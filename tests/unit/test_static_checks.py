"""Static checks the layers promise, run with the suite: `mypy --strict` over kernel, sqleval, operations and
the DeltaTable API (the `[tool.mypy]` files in pyproject.toml), and ruff over src and tests.

They run where the tools are installed (the `test` extra installs both), and skip otherwise."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_mypy_strict_on_the_typed_layers(tmp_path: Path) -> None:
    out = _run("mypy", "--cache-dir", str(tmp_path / "mypy-cache"), tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout


def test_ruff_clean(tmp_path: Path) -> None:
    out = _run("ruff", "check", "--no-cache", "src", "tests", tmp_path=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
