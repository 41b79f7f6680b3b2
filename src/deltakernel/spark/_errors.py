"""deltakernel errors raised inside Spark tasks, re-raised on the driver with their own class and message.

Why: an exception in a Python worker reaches the driver as a `PythonException` / `Py4JJavaError` whose
text is the worker's traceback; callers catching `ConstraintViolationError` would never see one. Tasks wrap
their work in `marked()`, which re-raises a `DeltaError` with a marker line
`DeltaKernelTaskError[<module>.<Class>]: <JSON message>`; the driver wraps the job in `task_errors()`, which
finds the first marker in the Spark exception's text and raises that class with that message (`from` the
Spark exception, so the worker traceback stays available).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

from ..errors import DeltaError

MARKER = "DeltaKernelTaskError"
_PATTERN = re.compile(MARKER + r'\[([A-Za-z_][\w.]*)\]: ("(?:[^"\\]|\\.)*")')


class DeltaTaskError(RuntimeError):
    """What a task raises instead of a DeltaError: its text carries the marker (see the module docstring)."""


def marker(e: DeltaError) -> str:
    cls = type(e)
    return f"{MARKER}[{cls.__module__}.{cls.__qualname__}]: {json.dumps(str(e))}"


@contextlib.contextmanager
def marked() -> Iterator[None]:
    """Inside a task: a DeltaError leaves as a DeltaTaskError whose message is its marker."""
    try:
        yield
    except DeltaError as e:
        raise DeltaTaskError(marker(e)) from e


def typed_error(exc: BaseException) -> DeltaError | None:
    """The deltakernel error a task marked in `exc`'s text, or None (unknown class, no marker)."""
    m = _PATTERN.search(str(exc))
    if m is None:
        return None
    module, _, name = m.group(1).rpartition(".")
    try:
        cls: Any = getattr(importlib.import_module(module), name)
        message = json.loads(m.group(2))
    except Exception:
        return None
    if not (isinstance(cls, type) and issubclass(cls, DeltaError)):
        return None
    try:
        err = cls(message)
        if str(err) != message:  # constructors that format their argument (UnsupportedFeatureError)
            err = cls.__new__(cls)
            Exception.__init__(err, message)
        return err  # type: ignore[no-any-return]
    except Exception:
        err = cls.__new__(cls)
        Exception.__init__(err, message)
        return err  # type: ignore[no-any-return]


@contextlib.contextmanager
def task_errors() -> Iterator[None]:
    """On the driver, around a Spark job: re-raise a task's marked DeltaError as itself."""
    try:
        yield
    except DeltaError:
        raise
    except Exception as e:
        err = typed_error(e)
        if err is None:
            raise
        raise err from e


_SWITCH = "_enable_debugging_cache"  # PySpark's cached `spark.python.sql.dataFrameDebugging.enabled`


class _Origins:
    """How many operations are planning, and the user's setting the first of them saved."""

    lock = threading.Lock()
    depth = 0
    saved: bool | None = None


@contextlib.contextmanager
def internal_plans() -> Iterator[None]:
    """While deltakernel builds its own plans: no Python call-site capture by PySpark.

    PySpark 4 records the caller of every Column / DataFrame function for error messages (`_with_origin`:
    an active-session lookup, a conf read and origin set / clear, several py4j round trips per call). The
    call sites of deltakernel's internal expressions are inside deltakernel and help nobody, and a MERGE
    builds hundreds of them (~0.1 s). The switch is PySpark's own cache of
    `spark.python.sql.dataFrameDebugging.enabled`; the first entrant saves it and the last one out restores
    it (nested and concurrent operations are safe). Without that cache (other PySpark versions): no change."""
    try:
        import pyspark.errors.utils as utils
    except ImportError:  # pragma: no cover - pyspark missing
        yield
        return
    if not hasattr(utils, _SWITCH):  # pragma: no cover - another PySpark
        yield
        return
    with _Origins.lock:
        if _Origins.depth == 0:
            _Origins.saved = getattr(utils, _SWITCH)
        _Origins.depth += 1
        setattr(utils, _SWITCH, False)
    try:
        yield
    finally:
        with _Origins.lock:
            _Origins.depth -= 1
            if _Origins.depth == 0:
                setattr(utils, _SWITCH, _Origins.saved)


__all__ = ["MARKER", "DeltaTaskError", "internal_plans", "marked", "marker", "task_errors", "typed_error"]
