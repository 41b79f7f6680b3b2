"""The session-kind seam (`deltakernel.spark.kinds`): each protocol's classic and Connect implementations answer
the same questions the same way on the same session catalog and tables (both kinds share one JVM in the suite)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import spark_database

from deltakernel.errors import UnsupportedFeatureError
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark.kinds import kind_of


def test_kind_is_chosen_once_per_session(spark):
    kind = kind_of(spark)
    assert kind is kind_of(spark)
    expected = "connect" if type(spark).__module__.startswith("pyspark.sql.connect") else "classic"
    assert kind.name == expected


@pytest.mark.parametrize("name, parts", [("a.b", ["a", "b"]), ("`a.b`.c", ["a.b", "c"]), ("x", ["x"]),
                                         ("spark_catalog.db.`t``q`", ["spark_catalog", "db", "t`q"])])
def test_split_name(spark, name, parts):
    assert kind_of(spark).catalog.split_name(name) == parts


def test_split_name_refuses_malformed(spark):
    with pytest.raises(Exception):
        kind_of(spark).catalog.split_name("a..b")


def test_lookup_and_registration_agree_across_kinds(classic_spark, connect_spark, tmp_path):
    """A Delta table registered through one kind is seen identically through the other."""
    loc = tmp_path / "t"
    write_deltalake(str(loc), pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    with spark_database(classic_spark, tmp_path / "wh") as db:
        schema_json = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},' \
                      '{"name":"s","type":"string","nullable":true,"metadata":{"comment":"a note"}}]}'
        classic, connect = kind_of(classic_spark).catalog, kind_of(connect_spark).catalog
        def norm(ddl: str) -> str:
            return re.sub(r",\s*", ",", ddl.replace("`", "")).upper()

        assert norm(classic.columns_ddl(schema_json)) == norm(connect.columns_ddl(schema_json))
        connect.run_ddl(f"CREATE TABLE {db}.t ({connect.columns_ddl(schema_json)}) USING delta LOCATION '{loc}'")
        seen = [kind.lookup([db, "t"]) for kind in (classic, connect)]
        assert seen[0] is not None and seen[1] is not None
        assert (seen[0].db, seen[0].table, seen[0].provider.lower(), seen[0].managed) == \
            (seen[1].db, seen[1].table, seen[1].provider.lower(), seen[1].managed) == (db, "t", "delta", False)
        assert seen[0].location.rstrip("/") == seen[1].location.rstrip("/")
        assert classic.lookup([db, "missing"]) is None and connect.lookup([db, "missing"]) is None
        assert classic.lookup(["other_catalog", db, "t"]) is None and connect.lookup(["other_catalog", db, "t"]) is None


def test_default_location(spark, tmp_path):
    catalog = kind_of(spark).catalog
    with spark_database(spark, tmp_path / "wh") as db:
        if kind_of(spark).name == "classic":
            assert catalog.default_location(db, "m").rstrip("/").endswith(f"{tmp_path.name}/wh/m")
        else:
            with pytest.raises(UnsupportedFeatureError, match="default location"):
                catalog.default_location(db, "m")


def test_tasks_and_sources(spark, tmp_path):
    kind = kind_of(spark)
    assert kind.tasks.default_parallelism() == 2  # the suite's session: local[2], shuffle partitions 2
    handle = kind.tasks.broadcast([1, 2, 3])
    if kind.name == "classic":
        assert handle.value == [1, 2, 3]
        handle.destroy()
    else:
        assert handle is None  # Connect: values travel in the task's closure
    write_deltalake(str(tmp_path / "t"), pa.table({"id": [1]}))
    assert kind.sources.has_hadoop_filesystem("file", f"file://{tmp_path}/t/_delta_log") is True


@pytest.mark.parametrize("ddl", ["a INT, b STRING NOT NULL", "s STRUCT<x: BIGINT, y: ARRAY<DATE>>, m MAP<STRING, DOUBLE>",
                                 "d DECIMAL(10,2) COMMENT 'money', `odd name` TIMESTAMP_NTZ"])
def test_type_parsing_agrees_across_kinds(classic_spark, connect_spark, ddl):
    classic = kind_of(classic_spark).types.parse_columns(ddl)
    connect = kind_of(connect_spark).types.parse_columns(ddl)
    assert classic.jsonValue() == connect.jsonValue()
    assert classic.fields[0].name in ("a", "s", "d") and len(classic.fields) == 2


def test_type_parsing_refuses_bad_ddl(spark):
    with pytest.raises(Exception):
        kind_of(spark).types.parse_columns("a NOT_A_TYPE")


def test_read_plans_follow_the_kind(spark, tmp_path):
    from deltakernel.spark import read
    from deltakernel.spark.scan.read_plans import read_plans, scan_report

    plans = read_plans(spark)
    assert plans.caches_catalog_plans is (kind_of(spark).name == "classic")
    path = tmp_path / "t"
    for i in range(3):
        write_deltalake(str(path), pa.table({"id": pa.array([i * 10 + j for j in range(3)], pa.int64())}), mode="append")
    df = read(spark, str(path)).where("id = 21")
    assert [r.id for r in df.collect()] == [21]
    (report,) = scan_report(df)
    assert (report.files_total, report.files_kept) == (3, 1)


@pytest.mark.parametrize("text, reference", [
    ("SELECT * FROM delta.`/tmp/x` WHERE id = 1", "delta.`/tmp/x`"),
    ("SELECT * FROM delta.`/tmp/x` VERSION AS OF 3 t", "delta.`/tmp/x` VERSION AS OF 3"),
    ("SELECT a FROM db.tbl", "db.tbl"),
])
def test_both_rewriters_count_spans_half_open(classic_spark, text, reference):
    """The classic relation rewriter (Spark's spans) and the Connect one (sqlglot tokens) both use `[start, stop)`:
    the slice is exactly the reference."""
    from deltakernel.spark.sql import plans as P
    from deltakernel.spark.sql import text_plans as T

    plan = P.parse_plan(classic_spark, text)
    nodes = [n for n, _ in P.walk(plan) if P.name(n) in ("UnresolvedRelation", "RelationTimeTravel")]
    outer = next(n for n in nodes if P.name(n) == "RelationTimeTravel") if "VERSION" in text else nodes[0]
    start, stop = P.relation_span(outer)
    assert text[start:stop] == reference
    tree = T.parse(text)
    from sqlglot import exp

    use = T.table_use(text, next(tree.find_all(exp.Table)))
    assert use is not None and text[use.start:use.stop] == reference
