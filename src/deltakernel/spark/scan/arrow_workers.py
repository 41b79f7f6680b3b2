"""A small, bounded set of Python threads that do the Arrow work of the file index's JVM callbacks.

Why: with py4j's pinned-thread gateway every JVM thread that calls the file index back is served by a Python
thread of its own, alive as long as that JVM thread (`callbacks.py`). Spark lists a join's build side on a new
`broadcast-exchange` thread and adaptive result stages on new `ResultQueryStageExecution` threads (pools that
grow to 128 threads, idle ones ending after 60 s), so a session running queries back to back has ~(query rate x
60 s) serving threads alive. Arrow's memory pool (mimalloc by default, jemalloc in some builds) keeps
per-thread heaps: each serving thread that ran a listing's Arrow work (skipping mask, filtering, building the
listing document) held on to ~0.5 MiB of pages while it lived - the driver's RSS grew with the number of
serving threads, not with the data (measured in docs/decisions.md, "Issue 31 item 4").

So the callbacks run their Arrow work here, on at most `MAX_WORKERS` long-lived threads, while the serving
thread waits on the result: the memory those heaps keep is bounded by the pool, whatever JVM thread called
back. The work submitted here must not call the JVM (no py4j round trip from a worker): JVM calls stay on the
serving thread, on the calling JVM thread as before (thread-local state such as the active session and
`Thread.currentThread()` are the caller's), and a worker can never wait on the JVM, so several JVM threads
listing at once only queue here and a listing whose JVM call re-enters Python cannot deadlock. Work submitted
from a worker runs inline (no pool thread waits on another). Nothing process-wide changes: no allocator
settings, no environment variables.

Errors propagate unchanged: `run` re-raises the work's own exception in the serving thread, so py4j hands the
JVM the same error as when the work ran there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

MAX_WORKERS = 4
_PREFIX = "deltakernel-arrow"
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_local = threading.local()


def _mark_worker() -> None:
    _local.worker = True


def _executor() -> ThreadPoolExecutor:
    global _pool
    pool = _pool
    if pool is None:
        with _lock:
            pool = _pool
            if pool is None:
                pool = _pool = ThreadPoolExecutor(MAX_WORKERS, thread_name_prefix=_PREFIX, initializer=_mark_worker)
    return pool


def in_worker() -> bool:
    """Whether the current thread is one of this pool's workers."""
    return bool(getattr(_local, "worker", False))


def run(work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` on a pool worker; the calling thread waits for it (and gets its result or its exception).
    `work` must not call the JVM (see the module docstring)."""
    if in_worker():
        return work(*args)
    try:
        future = _executor().submit(work, *args)
    except RuntimeError:  # the interpreter is shutting down: no new pool threads
        return work(*args)
    return future.result()


__all__ = ["MAX_WORKERS", "in_worker", "run"]
