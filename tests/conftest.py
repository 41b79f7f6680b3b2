"""Shared pytest fixtures: where the shared conformance corpus lives (absent in a user's clone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DELTAKERNEL_SHARED", REPO.parent / "shared"))
CONFORMANCE = SHARED / "conformance"


SPARK_TESTS = Path(__file__).resolve().parent / "spark"
_SESSIONS = {"spark", "classic_spark", "connect_spark"}  # tests/spark/conftest.py: the shared Spark sessions
# markers of long-running tests (pyproject.toml, `own_jvm` below), longest kinds first: under pytest-xdist a file
# starts by its first rank (venvs / downloads / JVMs of their own, then other slow tests, then the rest)
_RANKS = (("pythons", "installs", "pyspark_minors", "own_jvm"), ("slow",))


def pytest_addoption(parser):
    parser.addoption(
        "--suite-part", choices=("shared-spark", "own-jvm", "rest"), default=None,
        help="scripts/test.sh's parts: `shared-spark` keeps the tests under tests/spark that use the shared Spark "
             "sessions, `own-jvm` the tests marked own_jvm, `rest` every other test; default: every test collected")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "own_jvm: a Spark test that starts JVMs / servers of its own and never uses the shared sessions "
                   "(scripts/test.sh runs these in a process of their own, beside the shared-session tests)")


def _part(item) -> str:
    if SPARK_TESTS not in item.path.parents:
        return "rest"
    return "shared-spark" if item.get_closest_marker("own_jvm") is None else "own-jvm"


def pytest_ignore_collect(collection_path, config):
    """Part 1 (`rest`) has no test under tests/spark: not even imported there."""
    if config.getoption("suite_part") == "rest" and collection_path == SPARK_TESTS:
        return True
    return None


def pytest_collection_modifyitems(config, items):
    """Splits the suite into scripts/test.sh's three parts (`--suite-part`) and orders part 1's files.

    `own_jvm` tests live in tests/spark but start JVMs / servers of their own (a standalone cluster, fresh
    sessions, separate Connect servers): nothing ties them to part 2's one process and its shared sessions, so
    they run in a process of their own beside part 2 (docs/decisions.md, "CI time: the parts overlap"). One
    marked so but asking for a shared session is refused: it would start a second shared session.

    On a pytest-xdist worker (part 1), files holding a long-running test come first (`_RANKS`): with `--dist
    loadfile --no-loadscope-reorder` the workers take files in this order, so the minutes-long ones (clean
    installs, other Pythons, Spark clusters) start at once instead of leaving one worker busy at the end while the
    other idles (pytest-xdist's own order is by test count, which puts them among the last 40 of 142 files and the
    one-test ones last). The sort is stable: tests keep their order inside a file, and a plain (one-process) run
    keeps pytest's order."""
    for item in items:
        if item.get_closest_marker("own_jvm") and _SESSIONS & set(getattr(item, "fixturenames", ())):
            raise pytest.UsageError(f"{item.nodeid} is marked own_jvm but uses a shared Spark session")
    part = config.getoption("suite_part")
    if part is not None:
        kept, dropped = [], []
        for item in items:
            (kept if _part(item) == part else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    if hasattr(config, "workerinput"):
        rank: dict[Path, int] = {}
        for item in items:
            mine = next((r for r, marks in enumerate(_RANKS) if any(item.get_closest_marker(m) for m in marks)),
                        len(_RANKS))
            rank[item.path] = min(rank.get(item.path, mine), mine)
        items.sort(key=lambda item: rank[item.path])


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not (CONFORMANCE / "run.py").exists():
        pytest.skip("../shared/conformance is not present (only in the project's workspace)")
    return CONFORMANCE

import sys

sys.path.insert(0, str(Path(__file__).resolve().parent / "unit"))
from s3_fixtures import moto_endpoint, s3_bucket, s3_options  # noqa: F401
