"""Fixtures of the Unity Catalog tests: the test catalog (tests/uc_server) and the moto S3 server."""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from uc_server.fixtures import uc_client, uc_server  # noqa: F401
