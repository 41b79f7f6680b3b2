"""`enable()` / `disable()` through the one patch registry (`deltakernel.spark.install.registry`), on both session kinds.

The shared session fixtures are enabled for the whole run, so every case that disables one enables it again in a
`finally` (other tests must not notice). The full restore (no enabled session left in the process) is checked in
this process, between a disable of both fixture sessions and their re-enable, and against pristine pyspark in a
fresh Python process (a Connect client of the fixture's server: no second JVM)."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import types
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest

import deltakernel.spark as dks
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark.install import registry as install

SRC = Path(dks.__file__).resolve().parents[2]


def _table(path: Path, n: int = 20) -> str:
    write_deltalake(str(path), pa.table({"id": pa.array(range(n), pa.int64()),
                                          "p": [f"x{i % 2}" for i in range(n)]}), partition_by=["p"])
    return str(path)


_CODE = (types.FunctionType, classmethod, staticmethod, property, type)


def _snapshot() -> dict[object, list[tuple[str, object]]]:
    """Every patched class's (and module's) own `__dict__` entries that are code (functions, descriptors,
    classes), in order, by identity. pyspark's own state entries (the active session, cached flags) change as
    pyspark runs, whoever patches what."""
    return {owner: [(k, v) for k, v in vars(owner).items() if isinstance(v, _CODE)]
            for owner in install.patch_owners()}


def _same(before: dict[object, list[tuple[str, object]]], after: dict[object, list[tuple[str, object]]]) -> list[str]:
    """What differs between two snapshots (names; values compared by identity)."""
    diffs = []
    for owner, entries in before.items():
        now = after[owner]
        if [k for k, _ in entries] != [k for k, _ in now]:
            diffs.append(f"{owner}: keys {sorted({k for k, _ in entries} ^ {k for k, _ in now})}")
            continue
        diffs += [f"{owner}.{k}" for (k, v), (_, w) in zip(entries, now) if v is not w]
    return diffs


@contextmanager
def _all_disabled(*sessions):
    """Nothing enabled in the process (pyspark restored), the fixture sessions enabled again after. Sessions other
    tests enabled and dropped can outlive them (a `DeltaFileIndex` of theirs stays in py4j's callback pool until the
    JVM finalizes its proxy): they are disabled too, and stay so."""
    from deltakernel.spark.install.state import State

    gc.collect()
    try:
        for s in [*sessions, *(s for s in list(State.sessions.keys()) if all(s is not f for f in sessions))]:
            dks.disable(s)
        yield
    finally:
        for s in sessions:
            dks.enable(s)


def _routed(spark, path: str) -> bool:
    """Whether Delta SQL runs in this session: DESCRIBE HISTORY is deltakernel's (Spark's parser refuses it)."""
    try:
        spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    except Exception:
        return False
    return True


def test_every_declared_patch_is_applied_once_over_pyspark_s_original(classic_spark, connect_spark):
    applied = install.patched()
    assert len(applied) == len({(id(o), a) for o, a in applied})  # no attribute patched twice
    declared = [(install._owner(p), p.attr) for p in install.all_patches()]
    assert {(id(o), a) for o, a in applied} == {(id(o), a) for o, a in declared if o is not None}
    assert len(applied) >= 40  # classic and Connect: readers, writers, sessions, catalogs, frames, streams
    for owner, attr in applied:
        replacement = vars(owner)[attr]
        assert replacement.__wrapped__ is install.original(owner, attr), (owner, attr)


def test_disable_unroutes_the_session_and_enable_routes_it_again(spark, tmp_path):
    path = _table(tmp_path / "t")
    assert install.is_enabled(spark) and _routed(spark, path)
    try:
        dks.disable(spark)
        assert not install.is_enabled(spark)
        assert not _routed(spark, path)  # Delta SQL is Spark's again: refused
        with pytest.raises(Exception):  # Spark's own error for a Delta-only statement
            spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1").collect()
        # format("delta") reaches pyspark's own reader: Spark's Python source, not deltakernel's plan
        plain = spark.read.format("delta").load(path)
        assert not hasattr(type(plain), "skipped_files")
        dks.disable(spark)  # a session not enabled: no-op
    finally:
        dks.enable(spark)
    assert install.is_enabled(spark) and _routed(spark, path)
    df = spark.read.format("delta").load(path)
    assert hasattr(type(df), "skipped_files")  # deltakernel's frame again
    assert df.where("id = 3").count() == 1 and df.count() == 20
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    assert spark.read.format("delta").load(path).count() == 19


def test_enable_twice_is_enable_once(spark):
    before = (install.applications(), install.patched())
    assert dks.enable(spark) is spark and dks.enable(spark) is spark
    assert (install.applications(), install.patched()) == before


def test_disable_puts_the_session_confs_back(spark):
    key_set, key_unset = "spark.sql.parquet.fieldId.read.ignoreMissing", "spark.sql.parquet.fieldId.read.enabled"
    try:
        dks.disable(spark)
        for key in install.ID_CONFS:
            assert spark.conf.get(key, None) is None, key  # the fixture never set them: unset again
        spark.conf.set(key_set, "false")  # the user's own value before enable
        dks.enable(spark)
        assert all(spark.conf.get(k) == v for k, v in install.ID_CONFS.items())
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")  # the user's change after enable stays
        dks.disable(spark)
        assert spark.conf.get(key_set, None) == "false"
        assert spark.conf.get(key_unset, None) is None
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled", None) == "false"
    finally:
        for key in install.ID_CONFS:
            spark.conf.unset(key)
        dks.enable(spark)
    assert all(spark.conf.get(k) == v for k, v in install.ID_CONFS.items())


def _count(session, path: str, monkeypatch) -> int:
    """A point read of `path` in `session`, with pyspark's functions of that session's kind (conftest's `spark`)."""
    if type(session).__module__.startswith("pyspark.sql.connect"):
        monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    else:
        monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)
    try:
        return session.read.format("delta").load(path).where("p = 'x1'").count()
    finally:
        monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED", raising=False)


def test_full_disable_restores_pyspark_exactly_and_enable_patches_again(classic_spark, connect_spark, tmp_path,
                                                                        monkeypatch):
    path = _table(tmp_path / "t")
    with _all_disabled(classic_spark, connect_spark):
        assert install.patched() == []
        restored = _snapshot()
        dks.enable(classic_spark)
        dks.enable(connect_spark)
        patched = _snapshot()
        assert sorted(_same(restored, patched)) == sorted(f"{o}.{a}" for o, a in install.patched())
        for s in (classic_spark, connect_spark):
            assert _count(s, path, monkeypatch) == 10
        dks.disable(connect_spark)
        assert install.patched() != []  # the classic session is still enabled
        dks.disable(classic_spark)
        assert _same(restored, _snapshot()) == []
        assert install.patched() == []
    for s in (classic_spark, connect_spark):
        assert _count(s, path, monkeypatch) == 10


def test_four_threads_enabling_at_once_patch_once(classic_spark, connect_spark):
    with _all_disabled(classic_spark, connect_spark):
        start = install.applications()
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def run(session):
            try:
                barrier.wait(30)
                dks.enable(session)
            except BaseException as e:  # reported below
                errors.append(e)

        sessions = [classic_spark, connect_spark, classic_spark, connect_spark]
        threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        assert install.applications() == start + 1
        assert install.is_enabled(classic_spark) and install.is_enabled(connect_spark)
        applied = install.patched()
        assert len(applied) == len({(id(o), a) for o, a in applied})


def test_call_sites_are_switched_off_per_thread_only(spark):
    """The one process-wide PySpark switch deltakernel used to flip is asked per thread (`_errors.py`)."""
    import pyspark.errors.utils as utils

    from deltakernel.spark.common.task_errors import internal_plans

    assert (utils, "is_debugging_enabled") in [(o, a) for o, a in install.patched()]
    user = utils.is_debugging_enabled()
    seen = []
    with internal_plans():
        assert utils.is_debugging_enabled() is False
        other = threading.Thread(target=lambda: seen.append(utils.is_debugging_enabled()))
        other.start()
        other.join(10)
    assert seen == [user] and utils.is_debugging_enabled() is user


_PRISTINE = r"""
import json, sys, types
from deltakernel.spark.install import registry as install
CODE = (types.FunctionType, classmethod, staticmethod, property, type)
def code(o):
    return [(k, v) for k, v in vars(o).items() if isinstance(v, CODE)]
owners = install.patch_owners()                      # imports pyspark's classes; nothing patched yet
before = {repr(o): code(o) for o in owners}
from pyspark.sql import SparkSession
import deltakernel.spark as dks
spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
dks.enable(spark)
patched = len(install.patched())
count = spark.read.format("delta").load(sys.argv[2]).where("p = 'x0'").count()
history = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{sys.argv[2]}`").collect()]
dks.disable(spark)
diffs = []
for o in owners:
    was, now = before[repr(o)], code(o)
    if [k for k, _ in was] != [k for k, _ in now]:
        diffs.append(repr(o) + " keys")
    diffs += [f"{o!r}.{k}" for (k, v), (_, w) in zip(was, now) if v is not w]
print("@@" + json.dumps({"patched": patched, "count": count, "history": history, "diffs": diffs,
                         "left": len(install.patched())}))
spark.stop()
"""


def test_disable_restores_pristine_pyspark_in_a_fresh_process(classic_spark, tmp_path):
    pytest.importorskip("grpc")
    port = classic_spark.conf.get("spark.connect.grpc.binding.port", None)
    if not port:
        pytest.skip("the fixture's JVM runs no Connect server")
    path = _table(tmp_path / "t")
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _PRISTINE, f"sc://127.0.0.1:{port}", path], capture_output=True,
                          text=True, timeout=300, env=env)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("@@")]
    assert lines, done.stdout[-2000:] + done.stderr[-4000:]
    out = json.loads(lines[-1][2:])
    assert out["patched"] == len(install.patched()) and out["count"] == 10 and len(out["history"]) == 1
    assert out["diffs"] == [] and out["left"] == 0
