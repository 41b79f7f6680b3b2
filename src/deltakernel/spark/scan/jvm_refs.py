"""JVM classes, static methods and Scala objects the read path uses, resolved once per gateway.

Why: py4j resolves `jvm.org.apache.spark.sql.types.DataType` one package segment at a time, one round trip each
(6 here), and a static call on a `JavaClass` asks the JVM what the name is before calling it (2 round trips).
Every Delta query builds a relation and answers Spark's file index callbacks; measured (benchmarks/README.md,
"Spark read overhead"), these lookups were ~450 of the ~650 py4j round trips of one `load()`, each 0.3-3 ms on
a loaded driver. Here a class is a `JavaClass` made by name (constructor calls: one round trip), a static method
a `JavaMember` (one round trip per call), a Scala object's `MODULE$` fetched once.

Entries are keyed by the gateway client (a new gateway after `SparkContext.stop()` gets its own), so the cache is
bounded by the classes named here times the gateways of the process.
"""

from __future__ import annotations

import threading
from typing import Any

from py4j import protocol as proto
from py4j.java_gateway import JavaClass, JavaMember

_lock = threading.Lock()
_cache: dict[tuple[int, str, str], Any] = {}


def _client(jvm: Any) -> Any:
    return jvm._gateway_client


def jclass(jvm: Any, fqn: str) -> Any:
    """The class `fqn` (call it to construct an instance: one round trip)."""
    client = _client(jvm)
    key = (id(client), fqn, "")
    found = _cache.get(key)
    if found is None:
        found = JavaClass(fqn, client)
        with _lock:
            _cache[key] = found
    return found


def static(jvm: Any, fqn: str, method: str) -> Any:
    """The static method `fqn.method` (one round trip per call)."""
    client = _client(jvm)
    key = (id(client), fqn, method)
    found = _cache.get(key)
    if found is None:
        found = JavaMember(method, None, proto.STATIC_PREFIX + fqn, client)
        with _lock:
            _cache[key] = found
    return found


def scala_object(jvm: Any, fqn: str) -> Any:
    """The Scala object `fqn` (its `fqn$.MODULE$` singleton)."""
    client = _client(jvm)
    key = (id(client), fqn, "$MODULE")
    found = _cache.get(key)
    if found is None:
        found = getattr(JavaClass(fqn + "$", client), "MODULE$")
        with _lock:
            _cache[key] = found
    return found


def as_scala_list(jvm: Any, java_list: Any) -> Any:
    """A `java.util.List` as an immutable Scala `List` (one round trip: pyspark's own `PythonUtils.toList`)."""
    return static(jvm, "org.apache.spark.api.python.PythonUtils", "toList")(java_list)


__all__ = ["as_scala_list", "jclass", "scala_object", "static"]
