"""Shared pytest fixtures: where the shared conformance corpus lives (absent in a user's clone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DELTAKERNEL_SHARED", REPO.parent / "shared"))
CONFORMANCE = SHARED / "conformance"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    if not (CONFORMANCE / "run.py").exists():
        pytest.skip("../shared/conformance is not present (only in the project's workspace)")
    return CONFORMANCE

import sys

sys.path.insert(0, str(Path(__file__).resolve().parent / "unit"))
from s3_fixtures import moto_endpoint, s3_bucket, s3_options  # noqa: F401
