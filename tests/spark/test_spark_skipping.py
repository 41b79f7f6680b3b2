"""Delta file skipping on Spark for every query shape (issue 21): the Delta file index prunes files with the
filters Spark's optimizer pushes to each scan.

Each case runs a query on real Spark and asserts
- the files Spark read (the scan's own "number of files read" metric after the query ran), and
- the rows, against the same query over a skipping-free copy of the table (the kernel's full read, handed to
  Spark as an in-memory DataFrame).
The table: 24 files (ids sorted across files, 50 rows each), 4 partitions (`part` = p0..p3, file i in p{i % 4}),
typed columns for ranges, one file whose `n` is all null.
"""

from __future__ import annotations

import io
import shutil
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal
from deltakernel.kernel.scan.scan import Scan

pytestmark = pytest.mark.classic_only("asserts the Delta file index's scan metrics in the executed JVM plan; "
                                      "Connect skipping is tested in test_spark_connect.py")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import skipping_file

FILES, ROWS = 24, 50


def _file(i: int) -> pa.Table:
    return skipping_file(i, ROWS)


@pytest.fixture(scope="module")
def table(classic_spark, tmp_path_factory):
    spark = classic_spark
    path = str(tmp_path_factory.mktemp("skipping") / "t")
    for i in range(FILES):
        write_deltalake(path, _file(i), mode="append", partition_by=["part"])
    spark.sql("CREATE DATABASE IF NOT EXISTS dk_skip")
    spark.sql("DROP TABLE IF EXISTS dk_skip.t")
    spark.sql(f"CREATE TABLE dk_skip.t USING delta LOCATION '{path}'")
    oracle = spark.createDataFrame(DeltaTable(path).to_pyarrow_table())
    oracle.createOrReplaceTempView("dk_skip_oracle")
    yield path
    spark.sql("DROP VIEW IF EXISTS dk_skip.v")
    spark.sql("DROP TABLE IF EXISTS dk_skip.t")


def files_read(df) -> tuple[list, int]:
    """(rows, files Spark read over all Delta scans of the query) after running it."""
    rows = df.collect()
    reports = dks.scan_report(df, list_files=False)
    assert reports, "the query has no Delta scan"
    assert all(r.files_read is not None for r in reports)
    return rows, sum(r.files_read for r in reports)


def same_rows(a, b) -> None:
    key = lambda r: tuple((v is None, str(v)) for v in r)
    assert sorted(map(tuple, a), key=key) == sorted(map(tuple, b), key=key)


SQL_SHAPES = [
    # (name, SQL over {t}, files read)
    ("point", "SELECT id, s FROM {t} WHERE id = 1134", 1),
    ("in list", "SELECT id FROM {t} WHERE id IN (5, 260, 1199)", 3),
    ("in set (more than 10 values)", "SELECT id FROM {t} WHERE id IN ({big})", 1),
    ("is null", "SELECT id, n FROM {t} WHERE n IS NULL", 1),
    ("timestamp range", "SELECT id FROM {t} WHERE ts >= TIMESTAMP'2024-01-03 02:00:00' "
                        "AND ts < TIMESTAMP'2024-01-03 10:00:00'", 1),
    ("date range", "SELECT id FROM {t} WHERE d BETWEEN DATE'2020-04-10' AND DATE'2020-04-12'", 1),
    ("string range", "SELECT id FROM {t} WHERE s > 'k001150'", 1),
    ("decimal", "SELECT id FROM {t} WHERE dec = 7.77", 1),
    ("like prefix", "SELECT id FROM {t} WHERE s LIKE 'k00060%'", 1),
    ("partition", "SELECT id FROM {t} WHERE part = 'p1'", FILES // 4),
    ("partition expression (Spark evaluates it)", "SELECT id FROM {t} WHERE substring(part, 2, 1) = '2'", FILES // 4),
    ("partition and data", "SELECT id FROM {t} WHERE part = 'p1' AND id < 120", 1),
    ("cte", "WITH x AS (SELECT * FROM {t}) SELECT id FROM x WHERE id = 1134", 1),
    ("subquery", "SELECT q.id FROM (SELECT id, s FROM {t}) q WHERE q.id = 1134", 1),
    ("constant inferred from a join", "SELECT a.id FROM {t} a JOIN (SELECT 1134 AS k) b ON a.id = b.k", 1),
    ("join filter on one side", "SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.s = b.s "
                                "WHERE a.id = 40 AND b.id BETWEEN 0 AND 60", 3),
    ("union", "SELECT id FROM (SELECT id FROM {t} UNION ALL SELECT id FROM {t}) WHERE id = 77", 2),
]
BIG = ",".join(str(x) for x in range(600, 615))


@pytest.mark.parametrize("name,sql,files", SQL_SHAPES, ids=[s[0] for s in SQL_SHAPES])
@pytest.mark.parametrize("how", ["path", "spark_catalog.db.t", "db.t", "t"])
def test_sql_shapes(spark, table, name, sql, files, how):
    names = {"path": f"delta.`{table}`", "spark_catalog.db.t": "spark_catalog.dk_skip.t", "db.t": "dk_skip.t",
             "t": "t"}
    current = spark.catalog.currentDatabase()
    if how == "t":
        spark.catalog.setCurrentDatabase("dk_skip")
    try:
        rows, read = files_read(spark.sql(sql.format(t=names[how], big=BIG)))
    finally:
        spark.catalog.setCurrentDatabase(current)
    assert read == files, f"{name} over {how}: read {read} files"
    same_rows(rows, spark.sql(sql.format(t="dk_skip_oracle", big=BIG)).collect())


def _frame_shapes():
    other = lambda spark: spark.createDataFrame([(1134, "x")], "k long, name string")
    return [
        ("where", lambda src, spark: src().where("id = 1134"), 1),
        ("select then where", lambda src, spark: src().select("id", "s").where("id = 1134"), 1),
        ("withColumn chain", lambda src, spark: src().withColumn("x", F.col("id") * 2).select("x", "id")
         .where(F.col("id") == 1134), 1),
        ("join then where", lambda src, spark: (lambda a, o: a.join(o, a.id == o.k).where(a.id == 1134))(
            src(), other(spark)), 1),
        ("union then where", lambda src, spark: src().select("id").union(src().select("id")).where("id = 77"), 2),
        ("isin", lambda src, spark: src().where(F.col("id").isin(1, 70, 140)), 3),
        ("startswith", lambda src, spark: src().where(F.col("s").startswith("k00060")), 1),
    ]


@pytest.mark.parametrize("name,build,files", _frame_shapes(), ids=[s[0] for s in _frame_shapes()])
@pytest.mark.parametrize("how", ["load", "spark.table", "DeltaTable.toDF"])
def test_dataframe_shapes(spark, table, name, build, files, how):
    sources = {
        "load": lambda: spark.read.format("delta").load(table),
        "spark.table": lambda: spark.table("dk_skip.t"),
        "DeltaTable.toDF": lambda: dks.DeltaTable.forPath(spark, table).toDF(),
    }
    rows, read = files_read(build(sources[how], spark))
    assert read == files, f"{name} via {how}: read {read} files"
    same_rows(rows, build(lambda: spark.table("dk_skip_oracle"), spark).collect())


def test_views(spark, table, tmp_path):
    spark.sql("CREATE OR REPLACE VIEW dk_skip.v AS SELECT id, s, part FROM dk_skip.t WHERE id >= 100")
    rows, read = files_read(spark.sql("SELECT * FROM dk_skip.v WHERE id = 1134"))
    assert read == 1 and [r.id for r in rows] == [1134]
    rows, read = files_read(spark.table("dk_skip.v").where("part = 'p3' AND id < 400"))
    assert read == 2 and sorted(r.id for r in rows) == list(range(150, 200)) + list(range(350, 400))
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dk_skip_tv AS SELECT * FROM delta.`{table}` WHERE part = 'p0'")
    rows, read = files_read(spark.sql("SELECT id FROM dk_skip_tv WHERE id = 400"))
    assert read == 1 and [r.id for r in rows] == [400]
    # Spark's own resolution (no deltakernel routing) of the permanent view reads natively too
    from pyspark.sql import DataFrame

    rows, read = files_read(DataFrame(spark._jsparkSession.sql("SELECT * FROM dk_skip.v WHERE id = 1134"), spark))
    assert read == 1 and [r.id for r in rows] == [1134]


def test_views_read_the_latest_version(spark, table, tmp_path):
    copy = str(tmp_path / "copy")
    shutil.copytree(table, copy)
    spark.sql("DROP TABLE IF EXISTS dk_skip.t2")
    spark.sql(f"CREATE TABLE dk_skip.t2 USING delta LOCATION '{copy}'")
    spark.sql("CREATE OR REPLACE VIEW dk_skip.v2 AS SELECT id FROM dk_skip.t2")
    try:
        assert spark.sql("SELECT count(*) AS c FROM dk_skip.v2").first().c == FILES * ROWS
        write_deltalake(copy, _file(FILES), mode="append")  # another writer: not through this session
        rows, read = files_read(spark.sql(f"SELECT count(*) AS c FROM dk_skip.v2 WHERE id >= {FILES * ROWS}"))
        assert read == 1 and rows[0].c == ROWS
        spark.sql("REFRESH TABLE dk_skip.t2")  # drops the cached plan; the next statement puts it back
        rows, read = files_read(spark.sql("SELECT id FROM dk_skip.v2 WHERE id = 3"))
        assert read == 1 and [r.id for r in rows] == [3]
    finally:
        spark.sql("DROP VIEW IF EXISTS dk_skip.v2")
        spark.sql("DROP TABLE IF EXISTS dk_skip.t2")


def test_permanent_view_over_a_path_is_refused_clearly(spark, table):
    from deltakernel.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match="CREATE TABLE name USING delta LOCATION"):
        spark.sql(f"CREATE VIEW dk_skip.pv AS SELECT * FROM delta.`{table}`")


def test_time_travel_and_change_feed_keep_working(spark, tmp_path):
    path = str(tmp_path / "tt")
    for i in range(6):
        write_deltalake(path, _file(i), mode="append", configuration={"delta.enableChangeDataFeed": "true"})
    rows, read = files_read(spark.sql(f"SELECT id FROM delta.`{path}` VERSION AS OF 3 WHERE id = 120"))
    assert read == 1 and [r.id for r in rows] == [120]
    rows, read = files_read(spark.read.format("delta").option("versionAsOf", 2).load(path).where("id >= 100"))
    assert read == 1 and len(rows) == 50
    cdf = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 4).load(path)
    assert cdf.count() == 100 and {r._change_type for r in cdf.collect()} == {"insert"}


def test_planning_touches_no_ruled_out_file(spark, table, tmp_path):
    """Remove from storage every data file a predicate rules out: queries with it still run (nothing lists
    or checks those files), and a query that needs them fails at execution."""
    copy = str(tmp_path / "copy")
    shutil.copytree(table, copy)
    snap = DeltaTable(copy).snapshot
    keep = Scan(snap, predicate=Comparison("=", Column("id"), Literal(1134))).plan().column("path").to_pylist()
    removed = [p for p in snap.files.column("path").to_pylist() if p not in keep]
    for p in removed:
        (tmp_path / "copy" / p).unlink()
    assert len(keep) == 1 and len(removed) == FILES - 1
    for df in (spark.read.format("delta").load(copy).where("id = 1134"),
               spark.read.format("delta").load(copy).select("id", "s").where("id = 1134"),
               spark.sql(f"SELECT id, s FROM delta.`{copy}` WHERE id = 1134")):
        rows, read = files_read(df)
        assert read == 1 and [r.id for r in rows] == [1134]
    with pytest.raises(Exception, match="FileNotFound|does not exist|FAILED_READ_FILE"):
        spark.read.format("delta").load(copy).where("id < 100").collect()


def test_column_pruning_row_groups_and_explain(spark, table):
    from deltakernel.spark.scan.report import delta_scans

    df = spark.sql(f"SELECT id, s FROM delta.`{table}` WHERE id = 1134")
    [(node, _index)] = delta_scans(df)
    assert list(node.requiredSchema().fieldNames()) == ["id", "s"]  # only the columns the query reads
    assert "EqualTo(id,1134)" in str(node.metadata().get("PushedFilters").get())  # Parquet row-group pruning
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain()
    assert f"kept 1 of {FILES} files" in out.getvalue(), out.getvalue()


def test_stats_skipping_switch_reads_every_file_of_the_partitions(spark, table):
    spark.conf.set("spark.databricks.delta.stats.skipping", "false")
    try:
        rows, read = files_read(spark.sql(f"SELECT id FROM delta.`{table}` WHERE part = 'p3' AND id = 1150"))
    finally:
        spark.conf.unset("spark.databricks.delta.stats.skipping")
    assert read == FILES // 4 and [r.id for r in rows] == [1150]


@pytest.mark.parametrize("mode", ["none", "name", "id"])
def test_column_mapping_and_deletion_vectors(spark, tmp_path, mode):
    path = str(tmp_path / f"cm_{mode}")
    config = {"delta.enableDeletionVectors": "true"}
    if mode != "none":
        config["delta.columnMapping.mode"] = mode
    for i in range(8):
        write_deltalake(path, _file(i), mode="append", partition_by=["part"], configuration=config if i == 0 else None)
    DeltaTable(path).delete("id % 7 = 0 AND id < 200")  # deletion vectors on the first four files
    expect = [i for i in range(100, 150) if i % 7]
    rows, read = files_read(spark.read.format("delta").load(path).where("id >= 100 AND id < 150"))
    assert read == 1 and sorted(r.id for r in rows) == expect
    rows, read = files_read(spark.sql(f"SELECT id FROM delta.`{path}` WHERE s LIKE 'k00012%' AND part = 'p2'"))
    assert read == 1 and sorted(r.id for r in rows) == [i for i in range(120, 130) if i % 7]
