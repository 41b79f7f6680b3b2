"""Session confs read and written in bulk: one round trip for many keys where the session kind allows it.

Why: a Spark Connect session answers every `spark.conf.get` / `set` / `unset` with its own gRPC call. One Delta
append read four confs and set, then restored, five for its Parquet job: 19 calls, 0.1-0.7 s of a 100k-row
append (benchmarks/README.md, "Spark read overhead (issue 32)"), most of what a Connect append cost over a
classic one. How a kind batches is its `ConfAccess` (`kinds/`): Connect's config request takes many keys, a
classic session's conf calls are local py4j calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def get_confs(spark: Any, keys: Iterable[str]) -> dict[str, str | None]:
    """The values explicitly set for `keys` (None: unset), as `spark.conf.get(key, None)` reads them."""
    keys = list(dict.fromkeys(keys))
    if spark is None:  # a Python data source's writer without a session: nothing is set
        return dict.fromkeys(keys)
    from ..kinds import kind_of

    return kind_of(spark).confs.get(keys)


def set_confs(spark: Any, values: Mapping[str, str | None]) -> None:
    """Set each key to its value; None unsets it."""
    if spark is None:
        return
    from ..kinds import kind_of

    kind_of(spark).confs.set(dict(values))


__all__ = ["get_confs", "set_confs"]
