"""`newest_deps` tests are deselected unless `-m` names them: they ask the package index what is newest today, so
their answer changes without a commit (`scripts/newest_deps.sh` runs them weekly-style, in a fresh venv)."""

from __future__ import annotations


def pytest_collection_modifyitems(config, items):
    if "newest_deps" in (config.getoption("markexpr") or ""):
        return
    kept, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker("newest_deps") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
