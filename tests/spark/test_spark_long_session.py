"""What a long session keeps is bounded (issue 31, item 4; the memory itself is measured by
benchmarks/long_session.py): the plans kept per session are an LRU, and over Spark Connect the temporary views
of plain queries are an LRU whose evicted views are dropped from the session, while views a statement keeps
referring to (CREATE TEMPORARY VIEW) stay."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltakernel import write_deltalake


def _table(path: str, start: int) -> None:
    for i in range(3):
        ids = pa.array(range(start + i * 10, start + (i + 1) * 10), pa.int64())
        write_deltalake(path, pa.table({"id": ids}), mode="append")


def test_kept_plans_are_a_bounded_lru(spark, tmp_path, monkeypatch):
    from deltakernel.spark.catalog import table_frames

    monkeypatch.setattr(table_frames, "MAX_KEPT", 2)
    paths = [str(tmp_path / f"t{i}") for i in range(4)]
    for i, p in enumerate(paths):
        _table(p, i * 100)
    for i, p in enumerate(paths):
        rows = spark.sql(f"SELECT id FROM delta.`{p}` WHERE id = {i * 100 + 15}").collect()
        assert [r.id for r in rows] == [i * 100 + 15]
        kept = spark.__dict__["_dk_latest_frames"]
        assert len(kept) <= 2
    assert all(key[0] != paths[0] for key in spark.__dict__["_dk_latest_frames"])  # the oldest went first


def _delta_views(spark) -> set[str]:
    return {t.name for t in spark.catalog.listTables() if t.isTemporary and t.name.startswith("__delta_")}


@pytest.mark.classic_only("Connect's per-predicate views; classic sessions name one view per table and version")
def test_classic_views_are_one_per_table(spark, tmp_path):
    path = str(tmp_path / "t")
    _table(path, 0)
    before = _delta_views(spark)
    for k in range(6):
        assert spark.sql(f"SELECT id FROM delta.`{path}` WHERE id = {k}").collect()[0].id == k
    assert len(_delta_views(spark) - before) <= 1


def test_connect_views_of_plain_queries_are_dropped_beyond_the_lru(connect_spark, tmp_path, monkeypatch):
    from deltakernel.spark.sql import relations

    spark = connect_spark
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    monkeypatch.setattr(relations, "MAX_VIEWS", 3)
    path = str(tmp_path / "t")
    _table(path, 0)
    earlier = _delta_views(spark)  # other cases' views (plain queries: evicted first)
    # views other cases' statements pinned (CREATE TEMPORARY VIEW, CACHE TABLE) stay by design, outside the LRU
    earlier_pinned = {n for n, kept in spark.__dict__.get("_dk_connect_views", {}).items() if kept}
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW kept_view AS SELECT id FROM delta.`{path}` WHERE id = 1")
    pinned = _delta_views(spark) - earlier
    assert pinned
    for k in range(2, 10):
        assert spark.sql(f"SELECT id FROM delta.`{path}` WHERE id = {k}").collect()[0].id == k
    made = _delta_views(spark) - pinned - earlier_pinned
    assert len(made) <= 3, made
    assert pinned <= _delta_views(spark)  # the view a temporary view reads is never dropped
    assert [r.id for r in spark.sql("SELECT id FROM kept_view").collect()] == [1]
    latest = spark.sql(f"SELECT id FROM delta.`{path}` WHERE id = 9")  # re-run within the LRU: still there
    assert latest.collect()[0].id == 9
    spark.catalog.dropTempView("kept_view")
