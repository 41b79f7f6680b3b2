"""Deletion-vector and column-mapping tables of the shared corpus, read through Spark's native plan."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import deltakernel.spark as dks

FEATURES = {"deletion_vectors", "dv_in_active_files", "column_mapping"}


def _cases(conformance: Path) -> list[dict]:
    manifest = json.loads((conformance / "manifest.json").read_text())
    out = []
    for c in manifest["cases"]:
        if not (FEATURES & set(c.get("features") or [])):
            continue
        if c.get("expectation") in (None, "expect-error") or not c.get("checks") or not c.get("data_files_shipped", True):
            continue
        out.append(c)
    return out


@pytest.fixture(scope="module")
def harness(conformance_dir):
    spec = importlib.util.spec_from_file_location("conformance_run", conformance_dir / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dv_and_column_mapping_cases(spark, conformance_dir, harness, monkeypatch):

    cases = _cases(conformance_dir)
    assert len(cases) >= 20
    failures, checked = [], 0
    for case in cases:
        path = str(conformance_dir / case["table"])
        for check in case["checks"]:
            opts = {} if check.get("version") is None else {"versionAsOf": check["version"]}
            try:
                actual = dks.read(spark, path, **opts).toArrow()
            except Exception as e:
                failures.append(f"{case['id']}: ERROR {type(e).__name__}: {str(e)[:300]}")
                continue
            cols, rows = harness.load_expected(check["expected"])
            ok, msg = harness.compare(actual, cols, rows, subset=check.get("columns") is not None)
            checked += 1
            if not ok:
                failures.append(f"{case['id']}: {msg}")
    assert not failures, "\n".join(failures)
    assert checked >= 20


def test_dv_anti_join_path(spark, conformance_dir, harness, monkeypatch):
    """Force the broadcast anti-join (used for large deletion vectors) on every DV table."""
    import deltakernel.spark.scan.deleted_rows as deleted_rows

    monkeypatch.setattr(deleted_rows, "MAX_INLINE_DELETED_ROWS", 0)
    cases = [c for c in _cases(conformance_dir) if "dv_in_active_files" in (c.get("features") or [])]
    assert cases
    for case in cases:
        check = case["checks"][0]
        actual = dks.read(spark, str(conformance_dir / case["table"])).toArrow()
        cols, rows = harness.load_expected(check["expected"])
        ok, msg = harness.compare(actual, cols, rows, subset=check.get("columns") is not None)
        assert ok, f"{case['id']}: {msg}"
