"""`internal_plans()`: PySpark's call-site capture is off while deltakernel builds its plans - on that thread
only. `enable()` replaces PySpark's `is_debugging_enabled` by `thread_debugging(original)`; here the replacement
is built over PySpark's real function (no session needed) and the user's setting is never written."""

from __future__ import annotations

import threading

import pytest

utils = pytest.importorskip("pyspark.errors.utils")

from deltakernel.spark.common.task_errors import internal_plans, planning_here, thread_debugging


@pytest.fixture
def debugging():
    return thread_debugging(utils.is_debugging_enabled)


@pytest.mark.parametrize("user", [True, False])
def test_nested_planning_answers_false_and_never_writes_the_setting(monkeypatch, debugging, user):
    monkeypatch.setattr(utils, "_enable_debugging_cache", user)
    assert debugging() is user
    with internal_plans():
        assert debugging() is False and planning_here()
        with internal_plans():
            assert debugging() is False
        assert debugging() is False  # the outer one is still planning
        assert utils._enable_debugging_cache is user  # PySpark's process-wide setting is untouched
    assert debugging() is user and not planning_here()


def test_other_threads_keep_the_users_setting_while_one_plans(monkeypatch, debugging):
    monkeypatch.setattr(utils, "_enable_debugging_cache", True)
    inside, checked = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def planner() -> None:
        with internal_plans():
            inside.set()
            seen["planner"] = debugging()
            checked.wait(5)

    def user() -> None:
        inside.wait(5)
        seen["user"] = debugging()  # a user's thread while deltakernel plans on another
        checked.set()

    threads = [threading.Thread(target=planner), threading.Thread(target=user)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"planner": False, "user": True}
    assert debugging() is True


def test_an_error_inside_leaves_the_thread_planning_no_more(monkeypatch, debugging):
    monkeypatch.setattr(utils, "_enable_debugging_cache", True)
    with pytest.raises(ValueError), internal_plans():
        raise ValueError("boom")
    assert not planning_here() and debugging() is True


def test_worker_threads_of_an_operation_plan_too(monkeypatch, debugging):
    """MERGE submits planning work to a thread pool wrapped in `internal_plans()` (a decorator as well)."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(utils, "_enable_debugging_cache", True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(internal_plans()(debugging)).result() is False
        assert pool.submit(debugging).result() is True
