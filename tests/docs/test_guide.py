"""The user guide (docs/, mkdocs.yml) builds with warnings as errors, and every code example in it and in
README.md runs against real components, so no example can rot.

Embedded examples run in a temp directory; the command-line examples run in bash there too; the Unity Catalog
page runs against the test catalog of tests/uc_server and the storage page against the moto S3 server; the
Spark pages run on the suite's shared sessions in tests/spark/test_guide_spark.py. Conventions (which page needs
what, the few examples that must not run and why): tests/docs/guide_runner.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from guide_runner import DOCS, REPO, guide_pages, run_page

PAGES = guide_pages()
KINDS = {"embedded", "spark", "connect", "uc", "s3", "none"}


def _pages(kind: str) -> list:
    return [p for p in PAGES if p.kind == kind]


def _id(page) -> str:
    return str(page.path.relative_to(REPO))


def _nav_files(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [f for item in nav for f in _nav_files(item)]
    if isinstance(nav, dict):
        return [f for v in nav.values() for f in _nav_files(v)]
    return []


def test_site_builds_strict_and_offline(tmp_path):
    """`mkdocs build --strict`: a broken link, a missing page, an unresolvable API reference fails the build.
    The site needs no CDN: its scripts, styles and fonts are local (the offline plugin)."""
    site = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=REPO,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    for md in _nav_files(config["nav"]):
        assert (site / md.replace(".md", ".html")).is_file(), md
    api = (site / "reference" / "deltatable.html").read_text()
    for member in ("to_pyarrow_table", "load_cdf", "merge", "vacuum", "optimize"):
        assert member in api, member  # the reference is generated from the docstrings
    assert "write_deltalake" in (site / "reference" / "write.html").read_text()
    assert "enable" in (site / "reference" / "spark.html").read_text()
    for page in site.rglob("*.html"):
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', page.read_text())
        # the one remote script: the iframe-worker shim Material's offline plugin loads only for search over file://
        assert [u for u in remote if "iframe-worker" not in u] == [], (page, remote)


def test_every_page_is_in_the_nav_and_runs_somewhere():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    nav = set(_nav_files(config["nav"]))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")} - {"benchmark-history.md"}
    assert pages - nav == set(), "pages missing from mkdocs.yml's nav"
    for page in PAGES:
        assert page.kind in KINDS, (_id(page), page.kind)
        runnable = [e for e in page.examples if not e.skip]
        if page.kind == "none":
            assert not runnable, f"{_id(page)} is marked 'examples: none' but has examples to run"
    # the exclusions stay few, and each says why
    skips = [e for p in PAGES for e in p.examples if e.skip]
    assert all(len(e.skip.split()) >= 5 for e in skips), [e.where for e in skips]
    assert len(skips) <= 12, [e.where for e in skips]
    assert sum(len(p.examples) for p in PAGES) - len(skips) >= 40


@pytest.mark.parametrize("page", _pages("embedded"), ids=_id)
def test_embedded_examples(page, tmp_path):
    run_page(page, tmp_path)


@pytest.mark.parametrize("page", _pages("uc"), ids=_id)
def test_unity_catalog_examples(page, tmp_path):
    from uc_server.fixtures import UC_TOKEN, start_server

    server = start_server(tmp_path / "uc")
    try:
        run_page(page, tmp_path, replacements={"https://uc.example.com": server.url, "your-token": UC_TOKEN})
    finally:
        server.stop()
    assert not server.errors, server.errors


@pytest.mark.parametrize("page", _pages("s3"), ids=_id)
def test_object_store_examples(page, tmp_path, moto_endpoint, s3_bucket):
    run_page(page, tmp_path, replacements={"http://localhost:9000": moto_endpoint, "my-bucket": s3_bucket})
