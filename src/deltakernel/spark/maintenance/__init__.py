"""delta-spark's maintenance API on Spark (see each module): OPTIMIZE as a distributed job (`optimize.py`),
deep CLONE's copy as a Spark job (`clone.py`), VACUUM / RESTORE / CONVERT / GENERATE / DROP FEATURE on the driver
(`commands.py`: log-only or listing work; VACUUM's deletes optionally as a Spark job)."""

from __future__ import annotations

from .clone import clone
from .commands import convert_to_delta, drop_feature_support, generate, restore, vacuum
from .optimize import DeltaOptimizeBuilder, run_optimize

__all__ = ["DeltaOptimizeBuilder", "clone", "convert_to_delta", "drop_feature_support", "generate", "restore",
           "run_optimize", "vacuum"]
