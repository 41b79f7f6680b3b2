"""`deltakernel` and `deltakernel.spark` load public names on first use: every name in `__all__` resolves, unknown
names raise AttributeError, and importing one submodule does not import the whole library (checked in a fresh
interpreter, as Spark's Python processes start)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import deltakernel


@pytest.mark.parametrize("package", ["deltakernel", "deltakernel.spark"])
def test_every_public_name_resolves(package: str) -> None:
    if package.endswith("spark"):
        pytest.importorskip("pyspark")
    mod = __import__(package, fromlist=["_"])
    for name in mod.__all__:
        assert getattr(mod, name) is not None, name
        assert name in dir(mod)
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        mod.not_a_name  # noqa: B018


def test_submodule_import_stays_small() -> None:
    code = ("import sys, deltakernel.kernel.scan.scan\n"
            "heavy = [m for m in ('deltakernel.operations.write.api', 'deltakernel.table', 'deltakernel.operations.dml.merge.api')"
            " if m in sys.modules]\n"
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
    assert deltakernel.DeltaTable.__module__ == "deltakernel.table"
