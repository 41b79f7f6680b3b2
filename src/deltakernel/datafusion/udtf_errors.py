"""The typed error of a table function (`delta_scan`, `delta_changes`), kept for whoever catches DataFusion's.

DataFusion wraps an exception raised in a Python UDTF into a plain error whose text embeds the traceback; the
wrapper (`remember_errors`) keeps the DeltaError on the thread so the SQL entry points and the DML queries can
re-raise it typed (`udtf_error`).
"""

from __future__ import annotations

import threading
from typing import Any

from ..errors import DeltaError

_udtf_error = threading.local()


def udtf_error(exc: BaseException) -> DeltaError | None:
    """The DeltaError a table function raised on this thread, if `exc` (DataFusion's wrapper, a plain
    ValueError whose text embeds the Python traceback) came from it; lets callers re-raise the typed error."""
    err: DeltaError | None = getattr(_udtf_error, "error", None)
    _udtf_error.error = None
    if err is not None and type(err).__name__ in str(exc):
        return err
    return None


def remember_errors(fn: Any) -> Any:
    """`fn` (a table function) keeping the DeltaError it raises for `udtf_error`."""
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except DeltaError as e:
            _udtf_error.error = e
            raise

    call.__name__ = fn.__name__
    return call


__all__ = ["remember_errors", "udtf_error"]
