"""`arrow_workers.run`: the work runs on the bounded pool, its exception is re-raised unchanged in the caller,
and work submitted from a worker runs inline (no worker waits on another)."""

from __future__ import annotations

import threading

import pytest

from deltakernel.errors import DeltaError
from deltakernel.spark.scan import arrow_workers


def test_runs_on_a_worker_and_nests_inline():
    def inner() -> str:
        return threading.current_thread().name

    def outer() -> tuple[str, str]:
        return threading.current_thread().name, arrow_workers.run(inner)

    name, nested = arrow_workers.run(outer)
    assert name.startswith("deltakernel-arrow") and nested == name
    assert not arrow_workers.in_worker()


def test_many_callers_share_the_bounded_pool():
    seen: set[int] = set()
    lock = threading.Lock()

    def work() -> None:
        with lock:
            seen.add(threading.get_ident())

    caller_idents: set[int] = set()
    done = threading.Barrier(12)

    def call() -> None:
        with lock:
            caller_idents.add(threading.get_ident())  # while alive (an ended thread's ident can be reused)
        for _ in range(5):
            arrow_workers.run(work)
        done.wait()  # all callers alive at once: distinct idents

    callers = [threading.Thread(target=call) for _ in range(12)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert 1 <= len(seen) <= arrow_workers.MAX_WORKERS
    assert len(caller_idents) == 12 and not seen & caller_idents


def test_the_works_exception_is_reraised_unchanged():
    error = DeltaError("boom")

    def work() -> None:
        raise error

    with pytest.raises(DeltaError) as caught:
        arrow_workers.run(work)
    assert caught.value is error
