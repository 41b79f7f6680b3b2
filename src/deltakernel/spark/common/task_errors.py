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

from ...errors import DeltaError

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


_PLANNING = threading.local()  # `depth`: how many deltakernel operations are building plans on this thread


def planning_here() -> bool:
    """Whether deltakernel is building its own plans on the calling thread (inside `internal_plans()`)."""
    return getattr(_PLANNING, "depth", 0) > 0


@contextlib.contextmanager
def internal_plans() -> Iterator[None]:
    """While deltakernel builds its own plans on this thread: no Python call-site capture by PySpark.

    PySpark 4 records the caller of every Column / DataFrame function for error messages (`_with_origin`:
    an active-session lookup, a conf read and origin set / clear, several py4j round trips per call). The
    call sites of deltakernel's internal expressions are inside deltakernel and help nobody, and a MERGE
    builds hundreds of them (~0.1 s). Only this thread is affected: `enable()` replaces PySpark's
    `is_debugging_enabled` (the one switch `_with_origin` asks, `install.py`) by `thread_debugging`, which
    answers False on a thread inside `internal_plans()` and PySpark's own answer everywhere else. Nothing
    process-wide changes: the user's other threads keep their call sites and their setting. Without
    `enable()` (or after `disable()`) this is a no-op: call sites are captured, as PySpark does."""
    _PLANNING.depth = getattr(_PLANNING, "depth", 0) + 1
    try:
        yield
    finally:
        _PLANNING.depth -= 1


def thread_debugging(original: Any) -> Any:
    """The replacement of `pyspark.errors.utils.is_debugging_enabled` (a patch of `install.py`): False while
    deltakernel plans on the calling thread, else PySpark's `original` answer."""

    def is_debugging_enabled() -> bool:
        if getattr(_PLANNING, "depth", 0) > 0:
            return False
        return bool(original())

    is_debugging_enabled.__doc__ = original.__doc__
    is_debugging_enabled.__wrapped__ = original  # type: ignore[attr-defined]
    return is_debugging_enabled


__all__ = ["MARKER", "DeltaTaskError", "internal_plans", "marked", "marker", "planning_here", "task_errors",
           "thread_debugging", "typed_error"]
