"""`cached_jvm_function`: Spark's SQL functions are looked up in the JVM once per name and gateway client (classic
sessions; `enable()` patches pyspark's `_get_jvm_function` with it). Here over a recording lookup, no JVM: a name is
asked once, another client (a new gateway) asks again, the cache is bounded, a failed lookup is not kept."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from deltakernel.spark.common import jvm_functions
from deltakernel.spark.common.jvm_functions import cached_jvm_function


def _context(client: object) -> SimpleNamespace:
    return SimpleNamespace(_jvm=SimpleNamespace(_gateway_client=client))


@pytest.fixture
def asked() -> list[tuple[str, object]]:
    return []


@pytest.fixture
def lookup(asked):
    def original(name: str, sc: SimpleNamespace) -> tuple[str, object]:
        if name == "missing":
            raise LookupError(name)
        asked.append((name, sc._jvm._gateway_client))
        return (name, sc._jvm._gateway_client)

    return cached_jvm_function(original)


def test_a_name_is_looked_up_once_per_client(lookup, asked):
    one, two = object(), object()
    assert lookup("col", _context(one)) == ("col", one)
    assert lookup("col", _context(one)) == ("col", one)
    assert lookup("lit", _context(one)) == ("lit", one)
    assert asked == [("col", one), ("lit", one)]
    assert lookup("col", _context(two)) == ("col", two)  # another gateway: found there, not reused
    assert lookup("col", _context(one)) == ("col", one)  # and the first one's members were dropped
    assert asked == [("col", one), ("lit", one), ("col", two), ("col", one)]


def test_failed_lookups_raise_each_time_and_the_cache_is_bounded(lookup, asked, monkeypatch):
    client = object()
    for _ in range(2):
        with pytest.raises(LookupError):
            lookup("missing", _context(client))
    monkeypatch.setattr(jvm_functions, "MAX_NAMES", 2)
    bounded = cached_jvm_function(lambda name, sc: asked.append((name, None)) or name)
    for name in ("a", "b", "c", "c"):
        bounded(name, _context(client))
    assert [n for n, c in asked if c is None] == ["a", "b", "c", "c"]  # a third name is not kept
