"""The py4j callback server: Spark's JVM calls back into this Python process (the Delta file index)."""

from __future__ import annotations

from typing import Any

_STARTED: set[int] = set()


def ensure_callbacks(spark: Any) -> Any:
    """Start pyspark's callback server once per gateway (as foreachBatch does); returns the JVM view."""
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    gateway = sc._gateway
    if id(gateway) not in _STARTED:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(gateway)
        _STARTED.add(id(gateway))
    return sc._jvm


__all__ = ["ensure_callbacks"]
