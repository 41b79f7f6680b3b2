"""DataFusion tests need the optional `datafusion` extra."""

from __future__ import annotations

import pytest

pytest.importorskip("datafusion")
