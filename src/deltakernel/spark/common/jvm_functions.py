"""Spark's SQL functions resolved once per gateway on classic sessions (a patch of `install/registry.py`).

Why: every `pyspark.sql.functions` call on a classic session (`F.col`, `F.lit`, `F.when`, ...) goes through
`pyspark.sql.functions.builtin._get_jvm_function(name, sc)`, which asks the JVM, each time, for the class
`org.apache.spark.sql.functions` and then for its member `name` (two py4j reflection round trips) before the one
call that builds the Column. A Spark MERGE plans hundreds of Columns on the driver (its clauses, the source and
target sides, the join, the written values), so two thirds of those round trips only find the same static method
again. The member found (a py4j `JavaMember`: the class name, the method name and the gateway client) holds no
JVM state and is valid as long as the gateway is, so it is kept: per function name, for the one gateway client
in use (another client - a new gateway - starts the cache afresh), at most `MAX_NAMES` names (Spark has ~500
functions), dropped with the patch by `disable()`. Spark Connect builds its Columns on the client: not affected.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

MAX_NAMES = 1024


def cached_jvm_function(original: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    """The replacement of `pyspark.sql.functions.builtin._get_jvm_function`: pyspark's `original` lookup, kept per
    function name for the current gateway client."""
    lock = threading.Lock()
    state: dict[str, Any] = {"client": None, "members": {}}

    def _get_jvm_function(name: str, sc: Any) -> Any:
        client = getattr(sc._jvm, "_gateway_client", None)
        with lock:
            if state["client"] is not client:  # a new gateway: nothing found before is valid there
                state["client"], state["members"] = client, {}
            members: dict[str, Any] = state["members"]
            found = members.get(name)
        if found is not None:
            return found
        found = original(name, sc)
        with lock:
            if state["client"] is client and len(members) < MAX_NAMES:
                members[name] = found
        return found

    _get_jvm_function.__doc__ = original.__doc__
    _get_jvm_function.__wrapped__ = original  # type: ignore[attr-defined]
    return _get_jvm_function


__all__ = ["MAX_NAMES", "cached_jvm_function"]
