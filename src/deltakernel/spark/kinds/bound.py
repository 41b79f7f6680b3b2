"""A part of a session's kind that refers back to its session weakly: the session holds its kind
(`kinds.kind_of` remembers it on the session object), so a strong reference back would make every session a
reference cycle, kept alive until Python's cyclic collector runs - and with it the session's enable() state and
py4j handles. Weakly, a session nobody uses is freed as soon as its last reference goes."""

from __future__ import annotations

import weakref
from typing import Any

from ...errors import DeltaError


class SessionBound:
    """Base of the kinds' protocol implementations: `_spark` is the session, while it lives."""

    def __init__(self, spark: Any) -> None:
        self._session = weakref.ref(spark)

    @property
    def _spark(self) -> Any:
        spark = self._session()
        if spark is None:
            raise DeltaError("the SparkSession of this object is gone")
        return spark


__all__ = ["SessionBound"]
