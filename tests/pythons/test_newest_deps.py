"""The environment holds the newest versions `pyproject.toml`'s ranges allow (deltakernel's dependencies and the
`test` extra, transitive ones included), as the package index answers today.

`scripts/newest_deps.sh` installs a fresh venv that way and runs the suite; this test is its first check (a stale
cache or a resolver keeping an old version would make the run test something users do not get). Run in a
developer's `.venv`, it lists what is behind: `pytest -m newest_deps tests/pythons`. Marker `newest_deps`,
deselected unless `-m` names it (the answer changes as releases appear).
"""

from __future__ import annotations

import re
import sys
from importlib import metadata

import pytest
from _uv_venvs import ROOT, uv

pytestmark = [pytest.mark.newest_deps]


def test_installed_versions_are_the_newest_allowed(tmp_path):
    lock = tmp_path / "newest.txt"
    # --refresh: ask the index again (no cached metadata), so a release of today is seen
    uv("pip", "compile", "-q", "--refresh", "--python", sys.executable, "--extra", "test",
       str(ROOT / "pyproject.toml"), "-o", str(lock))
    pins = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", lock.read_text(), re.M))
    assert "pyarrow" in pins and "sqlglot" in pins, lock.read_text()
    behind = []
    for name, newest in sorted(pins.items()):
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "none"
        if have != newest:
            behind.append(f"{name}: {have} installed, {newest} allowed")
    assert not behind, "not the newest allowed versions:\n" + "\n".join(behind)
