"""The user guide's Spark examples run on the suite's shared sessions (docs/ pages marked `examples: spark` on
the classic session, `examples: connect` on the Connect session): an example that stops working fails here.

The runner and its Markdown conventions are in tests/docs/guide_runner.py; the embedded, CLI and Unity Catalog
examples and the strict site build are in tests/docs/test_guide.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))
from guide_runner import guide_pages, run_page

_PAGES = {kind: [p for p in guide_pages() if p.kind == kind] for kind in ("spark", "connect")}


def test_there_are_spark_pages():
    assert _PAGES["spark"] and _PAGES["connect"]


@pytest.mark.parametrize("page", _PAGES["spark"], ids=lambda p: p.path.name)
def test_spark_page_examples(page, classic_spark, tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    skipped = run_page(page, tmp_path, {"spark": classic_spark})
    print("\n".join(skipped))


@pytest.mark.parametrize("page", _PAGES["connect"], ids=lambda p: p.path.name)
def test_connect_page_examples(page, connect_spark, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark's functions build Connect columns
    skipped = run_page(page, tmp_path, {"spark": connect_spark})
    print("\n".join(skipped))
