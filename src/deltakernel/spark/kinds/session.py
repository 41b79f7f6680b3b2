"""What differs between a classic SparkSession (py4j to the driver JVM) and a Spark Connect one (gRPC plans).

deltakernel's Spark engine builds Spark work with the public DataFrame API (`mapInArrow`, joins, Parquet scans),
which both session kinds share; a few things only a classic session has - the JVM (the Delta file index, the
analyzed plan, Spark's SQL parser, the session catalog's internals) and `sparkContext` (broadcast variables,
`parallelize`: see `maintenance/_common.map_partitions`). This module says which kind a session is and gives the
shared replacements, so the rest of the engine keeps one code path and asks `has_jvm(spark)` only where a
classic-only facility makes things faster or exact (see docs/decisions.md, "Spark Connect").
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedFeatureError
from . import is_connect_session, kind_of


def is_connect(spark: Any) -> bool:
    """A Spark Connect session (pyspark.sql.connect), including `spark.api.mode=connect`."""
    return is_connect_session(spark)


def has_jvm(spark: Any) -> bool:
    """Whether the driver JVM is reachable over py4j from this process (classic sessions)."""
    return not is_connect(spark)


def require_jvm(spark: Any, feature: str) -> None:
    """Raise UnsupportedFeatureError naming `feature` on a Connect session."""
    if is_connect(spark):
        raise UnsupportedFeatureError(
            feature, f"{feature} needs a classic SparkSession (the driver JVM over py4j); it is not available "
                     "over Spark Connect")


class Shared:
    """A value read by tasks: a broadcast variable on classic sessions (shipped once per executor), the value
    itself captured in the task's closure over Connect (which has no broadcast variables). Tasks read `.value`
    either way."""

    def __init__(self, spark: Any, value: Any) -> None:
        self._bc = kind_of(spark).tasks.broadcast(value)
        self._value = None if self._bc is not None else value

    def __getstate__(self) -> dict[str, Any]:
        return {"_bc": self._bc, "_value": self._value}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._bc, self._value = state["_bc"], state["_value"]

    @property
    def value(self) -> Any:
        return self._bc.value if self._bc is not None else self._value

    def destroy(self) -> None:
        if self._bc is not None:
            try:
                self._bc.destroy()
            except Exception:
                pass


def default_parallelism(spark: Any) -> int:
    """Spark's default parallelism as far as the session's kind can see it (`kinds/`: `TaskShipping`)."""
    return kind_of(spark).tasks.default_parallelism()


def class_pairs(classic: str, connect: str, names: tuple[str, str]) -> list[tuple[type, type]]:
    """The classes `names` of module `classic` and, when pyspark's connect extra is installed, of `connect`:
    what `enable()` wraps for both session kinds (readers / writers, stream readers / writers)."""
    import importlib

    pairs = []
    for module in (classic, connect):
        try:
            mod = importlib.import_module(module)
        except ImportError:  # pyspark without the connect extra (grpc)
            continue
        pairs.append((getattr(mod, names[0]), getattr(mod, names[1])))
    return pairs


def owner_session(obj: Any) -> Any:
    """The session of a reader / writer / stream reader / writer (classic: `_spark`; Connect: `_session` or
    `_client`)."""
    for name in ("_spark", "_session", "_client"):
        found = obj.__dict__.get(name)
        if found is not None:
            return found
    raise AttributeError(f"no session on {type(obj).__name__}")


__all__ = ["Shared", "class_pairs", "default_parallelism", "has_jvm", "is_connect", "owner_session",
           "require_jvm"]
