"""`internal_plans()`: PySpark's call-site capture is off while deltakernel builds its plans, and the user's
setting comes back afterwards, also when operations nest or overlap on several threads."""

from __future__ import annotations

import threading

import pytest

utils = pytest.importorskip("pyspark.errors.utils")

from deltakernel.spark._errors import internal_plans


@pytest.mark.parametrize("user", [None, True, False])
def test_nested_restores_the_users_setting(monkeypatch, user):
    monkeypatch.setattr(utils, "_enable_debugging_cache", user)
    with internal_plans():
        assert utils.is_debugging_enabled() is False
        with internal_plans():
            assert utils._enable_debugging_cache is False
        assert utils._enable_debugging_cache is False  # the outer one is still planning
    assert utils._enable_debugging_cache is user


def test_overlapping_threads_restore_once_the_last_leaves(monkeypatch):
    monkeypatch.setattr(utils, "_enable_debugging_cache", True)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[object] = []

    def first() -> None:
        with internal_plans():
            first_in.set()
            second_in.wait(5)
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        with internal_plans():
            second_in.set()
            first_out.wait(5)
            seen.append(utils._enable_debugging_cache)  # the first left: still off for us

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == [False]
    assert utils._enable_debugging_cache is True


def test_an_error_inside_restores(monkeypatch):
    monkeypatch.setattr(utils, "_enable_debugging_cache", True)
    with pytest.raises(ValueError), internal_plans():
        raise ValueError("boom")
    assert utils._enable_debugging_cache is True
