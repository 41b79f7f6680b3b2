"""Spark Connect skips files like a classic session, for every query shape (issue 31): DataFrame chains, SQL,
temporary views made from DataFrames and permanent views over Delta catalog tables.

Each case copies the table, deletes from storage every data file the query's predicate rules out (so a file
named to Spark that the query does not need fails the query with PATH_NOT_FOUND / FILE_NOT_EXIST), runs the
query on the Connect session and asserts
- the files kept per Delta scan (`scan_report`, read from the plan Spark was sent), and
- the rows, against the same query over a skipping-free in-memory copy of the table.
The table: 24 files (ids sorted across files, 50 rows each), 4 partitions (`part` = p0..p3, file i in p{i % 4}),
typed columns for ranges, one file whose `n` is all null.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.expressions import sql as ksql
from deltakernel.kernel.scan.scan import Scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import skipping_file

FILES, ROWS = 24, 50
DB = "dkc_shapes"


def _file(i: int) -> pa.Table:
    return skipping_file(i, ROWS)


@pytest.fixture
def cspark(connect_spark, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark.functions build Connect Columns
    return connect_spark


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("connect_shapes") / "t")
    for i in range(FILES):
        write_deltalake(path, _file(i), mode="append", partition_by=["part"])
    return path


@pytest.fixture
def oracle(cspark, source):
    """The table as an in-memory DataFrame (no Delta scan, no skipping)."""
    df = cspark.createDataFrame(DeltaTable(source).to_pyarrow_table())
    df.createOrReplaceTempView("dkc_shapes_oracle")
    return df


def pruned_copy(source: str, dest: Path, need: str) -> str:
    """A copy of the table whose data files the kernel rules out for `need` are deleted from storage."""
    shutil.copytree(source, dest)
    snap = DeltaTable(str(dest)).snapshot
    keep = set(Scan(snap, predicate=ksql.to_predicate(ksql.parse_sql(need), snap.schema)).plan()
               .column("path").to_pylist())
    for p in snap.files.column("path").to_pylist():
        if p not in keep:
            (dest / p).unlink()
    assert 0 < len(keep) < FILES
    return str(dest)


@pytest.fixture
def catalog_table(cspark):
    """`make(path)`: the catalog table dkc_shapes.t over `path` (dropped after the case)."""
    cspark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")

    def make(path: str) -> str:
        cspark.sql(f"DROP TABLE IF EXISTS {DB}.t")
        cspark.sql(f"CREATE TABLE {DB}.t USING delta LOCATION '{path}'")
        return f"{DB}.t"

    yield make
    cspark.sql(f"DROP VIEW IF EXISTS {DB}.v")
    cspark.sql(f"DROP TABLE IF EXISTS {DB}.t")


def kept(df) -> list[int]:
    """Files kept per Delta scan of the query (every scan over the whole table)."""
    reports = dks.scan_report(df)
    assert reports, "the query has no Delta scan"
    assert all(r.files_total == FILES for r in reports)
    return sorted(r.files_kept for r in reports)


def same_rows(a, b) -> None:
    key = lambda r: tuple((v is None, str(v)) for v in r)
    assert sorted(map(tuple, a), key=key) == sorted(map(tuple, b), key=key)


def _other(spark):
    return spark.createDataFrame([(1134, "x"), (1180, "y")], "k long, name string")


FRAME_SHAPES = [
    # (name, build(src, spark), predicate covering the files it needs, files kept per scan)
    ("where", lambda src, spark: src().where("id = 1134"), "id = 1134", [1]),
    ("select then where", lambda src, spark: src().select("id", "s").where("id = 1134"), "id = 1134", [1]),
    ("where then select", lambda src, spark: src().where(F.col("id") == 1134).select("s"), "id = 1134", [1]),
    ("withColumn chain", lambda src, spark: src().withColumn("x", F.col("id") * 2).select("x", "id")
     .where(F.col("id") == 1134), "id = 1134", [1]),
    ("withColumnRenamed", lambda src, spark: src().withColumnRenamed("id", "key").where("key = 1134"),
     "id = 1134", [1]),
    ("alias", lambda src, spark: src().alias("a").where(F.col("a.id") == 1134).select("a.s"), "id = 1134", [1]),
    ("join then where", lambda src, spark: (lambda a, o: a.join(o, a.id == o.k).where(a.id == 1134))(
        src(), _other(spark)), "id = 1134", [1]),
    ("join condition on one side", lambda src, spark: src().alias("a").join(
        _other(spark).alias("o"), (F.col("a.id") == F.col("o.k")) & (F.col("a.id") >= 1100)), "id >= 1100", [2]),
    ("join on a key then where", lambda src, spark: src().join(_other(spark).withColumnRenamed("k", "id"), "id")
     .where("id = 1180"), "id = 1180", [1]),
    ("union then where", lambda src, spark: src().select("id").union(src().select("id")).where("id = 77"),
     "id = 77", [1, 1]),
    ("unionByName then where", lambda src, spark: src().select("id", "s").unionByName(src().select("s", "id"))
     .where("id = 77"), "id = 77", [1, 1]),
    ("isin", lambda src, spark: src().where(F.col("id").isin(1, 70, 140)), "id IN (1, 70, 140)", [3]),
    ("startswith", lambda src, spark: src().where(F.col("s").startswith("k00060")), "id >= 600 AND id < 650", [1]),
    ("group by key then where", lambda src, spark: src().groupBy("part").count().where("part = 'p1'"),
     "part = 'p1'", [FILES // 4]),
    ("sort then where", lambda src, spark: src().orderBy("s").where(F.col("id").between(600, 620)),
     "id >= 600 AND id <= 620", [1]),
]


@pytest.mark.parametrize("name,build,need,files", FRAME_SHAPES, ids=[s[0] for s in FRAME_SHAPES])
@pytest.mark.parametrize("how", ["load", "spark.table", "DeltaTable.toDF"])
def test_dataframe_shapes(cspark, source, oracle, catalog_table, tmp_path, name, build, need, files, how):
    path = pruned_copy(source, tmp_path / "t", need)
    table = catalog_table(path)
    sources = {
        "load": lambda: cspark.read.format("delta").load(path),
        "spark.table": lambda: cspark.table(table),
        "DeltaTable.toDF": lambda: dks.DeltaTable.forPath(cspark, path).toDF(),
    }
    df = build(sources[how], cspark)
    assert kept(df) == files, f"{name} via {how}"
    same_rows(df.collect(), build(lambda: oracle, cspark).collect())


def test_a_query_needing_a_deleted_file_fails(cspark, source, tmp_path):
    """The proof device works: a query that needs a file deleted from storage fails."""
    path = pruned_copy(source, tmp_path / "t", "id = 1134")
    with pytest.raises(Exception, match="PATH_NOT_FOUND|FILE_NOT_EXIST|FileNotFound|does not exist"):
        cspark.read.format("delta").load(path).where("id < 100").collect()


def test_conditions_that_do_not_reach_the_table_do_not_skip(cspark, source, oracle):
    """Above a limit, a sample, an aggregate's result or an unknown function nothing is pushed (all files are
    read, answers right); below them it is."""
    df = cspark.read.format("delta").load(source)
    cases = [
        lambda d: d.limit(FILES * ROWS).where("id = 1134"),  # every row: deterministic
        lambda d: d.groupBy("part").agg(F.max("id").alias("id")).where("id = 1199"),
        lambda d: d.withColumn("r", F.sum("id").over(__import__("pyspark.sql.window", fromlist=["Window"])
                                                     .Window.partitionBy("part"))).where("id = 1134"),
        lambda d: d.select("id", F.call_function("abs", F.col("id")).alias("a")).where("a = 1134"),
    ]
    for i, case in enumerate(cases):
        got = case(df)
        assert kept(got) == [FILES], i
        same_rows(got.collect(), case(oracle).collect())
    full = df.join(_other(cspark), F.col("id") == F.col("k"), "full").where(F.col("id") == 1134)
    assert kept(full) == [FILES] and [(r.id, r.k) for r in full.collect()] == [(1134, 1134)]
    below = df.where("id < 100").limit(FILES * ROWS)
    assert kept(below) == [2]


BIG = ",".join(str(x) for x in range(600, 615))
SQL_SHAPES = [
    # (name, SQL over {t}, predicate covering the files it needs, files kept per scan)
    ("point", "SELECT id, s FROM {t} WHERE id = 1134", "id = 1134", [1]),
    ("in list", "SELECT id FROM {t} WHERE id IN (5, 260, 1199)", "id IN (5, 260, 1199)", [3]),
    ("in set (more than 10 values)", "SELECT id FROM {t} WHERE id IN ({big})", f"id IN ({BIG})", [1]),
    ("is null", "SELECT id, n FROM {t} WHERE n IS NULL", "n IS NULL", [1]),
    ("timestamp range", "SELECT id FROM {t} WHERE ts >= TIMESTAMP'2024-01-03 02:00:00' "
                        "AND ts < TIMESTAMP'2024-01-03 10:00:00'", "id >= 50 AND id < 58", [1]),
    ("date range", "SELECT id FROM {t} WHERE d BETWEEN DATE'2020-04-10' AND DATE'2020-04-12'",
     "id >= 100 AND id <= 102", [1]),
    ("string range", "SELECT id FROM {t} WHERE s > 'k001150'", "id > 1150", [1]),
    ("decimal", "SELECT id FROM {t} WHERE dec = 7.77", "id = 777", [1]),
    ("like prefix", "SELECT id FROM {t} WHERE s LIKE 'k00060%'", "id >= 600 AND id < 610", [1]),
    ("partition", "SELECT id FROM {t} WHERE part = 'p1'", "part = 'p1'", [FILES // 4]),
    ("partition and data", "SELECT id FROM {t} WHERE part = 'p1' AND id < 120", "id < 100", [1]),
    ("cte", "WITH x AS (SELECT * FROM {t}) SELECT id FROM x WHERE id = 1134", "id = 1134", [1]),
    ("subquery", "SELECT q.id FROM (SELECT id, s FROM {t}) q WHERE q.id = 1134", "id = 1134", [1]),
    ("IN subquery", "SELECT k FROM (SELECT 1134 AS k) WHERE k IN (SELECT id FROM {t} WHERE id = 1134)",
     "id = 1134", [1]),
    ("constant inferred from a join", "SELECT a.id FROM {t} a JOIN (SELECT 1134 AS k) b ON a.id = b.k",
     "id = 1134", [1]),
    ("join filter on one side", "SELECT a.id, b.id FROM {t} a JOIN {t} b ON a.s = b.s "
                                "WHERE a.id = 40 AND b.id BETWEEN 0 AND 60", "id <= 60", [1, 2]),
    ("union", "SELECT id FROM (SELECT id FROM {t} UNION ALL SELECT id FROM {t}) WHERE id = 77", "id = 77", [1, 1]),
]


@pytest.mark.parametrize("name,sql,need,files", SQL_SHAPES, ids=[s[0] for s in SQL_SHAPES])
@pytest.mark.parametrize("how", ["path", "catalog name"])
def test_sql_shapes(cspark, source, oracle, catalog_table, tmp_path, name, sql, need, files, how):
    path = pruned_copy(source, tmp_path / "t", need)
    table = catalog_table(path) if how == "catalog name" else f"delta.`{path}`"
    df = cspark.sql(sql.format(t=table, big=BIG))
    assert kept(df) == files, f"{name} over {how}"
    same_rows(df.collect(), cspark.sql(sql.format(t="dkc_shapes_oracle", big=BIG)).collect())


@pytest.mark.parametrize("how", ["load", "spark.table"])
def test_temporary_views_made_from_dataframes(cspark, source, catalog_table, tmp_path, how):
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    table = catalog_table(path)
    frame = cspark.read.format("delta").load(path) if how == "load" else cspark.table(table)
    frame.createOrReplaceTempView("dkc_shapes_v")  # names no data file: Spark's copy reads through the source
    try:
        df = cspark.sql("SELECT id, s FROM dkc_shapes_v WHERE id = 1134")
        assert kept(df) == [1] and [r.id for r in df.collect()] == [1134]
        df = cspark.table("dkc_shapes_v").where("id >= 1100 AND id < 1103")
        assert kept(df) == [1] and sorted(r.id for r in df.collect()) == [1100, 1101, 1102]
        df = cspark.sql("SELECT v.id FROM dkc_shapes_v v JOIN (SELECT 1140 AS k) b ON v.id = b.k")
        assert kept(df) == [1] and [r.id for r in df.collect()] == [1140]
        # a view over a chain: the statement's conditions and the chain's both reach the table
        frame.select("id", "part").where("part = 'p2'").createOrReplaceTempView("dkc_shapes_v")
        df = cspark.sql("SELECT id FROM dkc_shapes_v WHERE id BETWEEN 1100 AND 1149")
        assert kept(df) == [1] and sorted(r.id for r in df.collect()) == list(range(1100, 1150))
    finally:
        cspark.catalog.dropTempView("dkc_shapes_v")
    from deltakernel.spark.scan.connect_plan import frame_view

    assert frame_view(cspark, "dkc_shapes_v") is None


def _relations(message, kind: str) -> list:
    """Every `Relation` of `kind` (its `rel_type`) inside a Connect proto message."""
    out = []
    stack = [message]
    while stack:
        m = stack.pop()
        if m.DESCRIPTOR.name == "Relation" and m.WhichOneof("rel_type") == kind:
            out.append(m)
        for field, value in m.ListFields():
            if field.message_type is None:
                continue
            stack.extend(v for v in (value if not hasattr(value, "ListFields") else [value]) if hasattr(v, "ListFields"))
    return out


def test_dataframe_view_conditions_choose_files_only(cspark, source, tmp_path):
    """The statement's conditions on a DataFrame view choose its files and reach Spark only as the statement's own
    WHERE: no Filter of their own in the view's reference (Spark would run that one first, in the pushdown's order -
    TPC-H Q6 on Connect, scan_conditions.py)."""
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    cspark.read.format("delta").load(path).createOrReplaceTempView("dkc_shapes_v")
    try:
        for _ in range(2):  # a new shape (analysed at spark.sql()), then the same shape unsent
            df = cspark.sql("SELECT id FROM dkc_shapes_v WHERE s <> 'x' AND id >= 1100 AND id < 1103")
            [sent] = _relations(df._plan.to_proto(cspark.client).root, "with_relations")
            refs = list(sent.with_relations.references)
            assert refs and not any(_relations(r, "filter") for r in refs)
            assert kept(df) == [1] and sorted(r.id for r in df.collect()) == [1100, 1101, 1102]
    finally:
        cspark.catalog.dropTempView("dkc_shapes_v")


def test_permanent_views_over_delta_catalog_tables(cspark, source, catalog_table, tmp_path):
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    table = catalog_table(path)
    cspark.sql(f"CREATE OR REPLACE VIEW {DB}.v AS SELECT id, s, part FROM {table} WHERE id >= 100")
    df = cspark.sql(f"SELECT * FROM {DB}.v WHERE id = 1134")
    assert kept(df) == [1] and [r.id for r in df.collect()] == [1134]
    df = cspark.sql(f"SELECT count(*) AS c FROM {DB}.v WHERE part = 'p2' AND id >= 1100")
    assert kept(df) == [1] and df.collect()[0].c == ROWS
    from deltakernel.errors import UnsupportedFeatureError

    with pytest.raises(UnsupportedFeatureError, match="CREATE TABLE name USING delta LOCATION"):
        cspark.sql(f"CREATE VIEW {DB}.pv AS SELECT * FROM delta.`{path}`")


def test_scan_report_over_connect(cspark, source):
    df = cspark.read.format("delta").load(source)
    [report] = dks.scan_report(df.select("id").where("id < 120"))
    assert (report.files_kept, report.files_total, report.version) == (3, FILES, FILES - 1)
    assert report.table == DeltaTable(source).snapshot.storage.root_uri
    assert dks.scan_report(df.where("id < 0")) == []  # every file skipped: no scan at all


@pytest.mark.parametrize("how", ["path", "catalog name"])
def test_temporary_views_made_by_sql(cspark, source, oracle, catalog_table, tmp_path, how):
    """CREATE TEMPORARY VIEW v AS SELECT ... FROM <Delta table>: each read of v plans its files with its own
    conditions (the view's text is expanded per query, as a permanent view's), and making v names no data file."""
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    ref = catalog_table(path) if how == "catalog name" else f"delta.`{path}`"
    body = "SELECT id, s, part FROM {t} WHERE id >= 100"
    cspark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dkc_shapes_sv AS {body.format(t=ref)}")
    # a view over that view
    cspark.sql("CREATE OR REPLACE TEMPORARY VIEW dkc_shapes_sv2 AS SELECT id, s FROM dkc_shapes_sv WHERE part = 'p2'")
    try:
        queries = [
            ("SELECT id, s FROM {v} WHERE id = 1134", [1]),
            ("SELECT x.id FROM {v} x JOIN (SELECT 1140 AS k) b ON x.id = b.k", [1]),
            ("SELECT count(*) AS c FROM {v} WHERE part = 'p2' AND id BETWEEN 1100 AND 1149", [1]),
            ("WITH w AS (SELECT * FROM {v}) SELECT id FROM w WHERE id IN (1101, 1149)", [1]),
        ]
        for q, files in queries:
            df = cspark.sql(q.format(v="dkc_shapes_sv"))
            assert kept(df) == files, q
            same_rows(df.collect(), cspark.sql(q.format(v=f"({body.format(t='dkc_shapes_oracle')})")).collect())
        df = cspark.sql("SELECT id FROM dkc_shapes_sv2 WHERE id = 1120")
        assert kept(df) == [1] and [r.id for r in df.collect()] == [1120]
        assert _statements(cspark, df) == 1  # both views spliced: one statement, its scans at the top level
        # a CTE inside the view; spliced unless the statement defines the same name around it
        cspark.sql("CREATE OR REPLACE TEMPORARY VIEW dkc_shapes_sv3 AS WITH c AS (SELECT id, s, part FROM "
                   f"{ref}) SELECT * FROM c WHERE id >= 100")
        for q, statements in [("SELECT * FROM dkc_shapes_sv3 WHERE id = 1134", 1),
                              ("WITH c AS (SELECT 1 AS k) SELECT sv.* FROM c JOIN dkc_shapes_sv3 sv ON sv.id = 1134", 2)]:
            df = cspark.sql(q)
            assert kept(df) == [1] and [r.s for r in df.collect()] == ["k001134"], q
            assert _statements(cspark, df) == statements, q
        # a view reading a non-Delta relation too: a reference of its own, Spark resolves what it reads
        _other(cspark).createOrReplaceTempView("dkc_shapes_other")
        cspark.sql("CREATE OR REPLACE TEMPORARY VIEW dkc_shapes_sv4 AS SELECT t.id, o.name FROM "
                   f"{ref} t JOIN dkc_shapes_other o ON t.id = o.k")
        df = cspark.sql("SELECT * FROM dkc_shapes_sv4 WHERE id = 1134")
        assert kept(df) == [1] and [tuple(r) for r in df.collect()] == [(1134, "x")]
        assert _statements(cspark, df) == 2
        # spark.table(v): read as SQL over v (the router), its files chosen by the chained condition
        df = cspark.table("dkc_shapes_sv").where("id = 1134")
        assert kept(df) == [1] and df.count() == 1
    finally:
        for v in ("dkc_shapes_sv4", "dkc_shapes_other", "dkc_shapes_sv3", "dkc_shapes_sv2", "dkc_shapes_sv"):
            cspark.catalog.dropTempView(v)
    from deltakernel.spark.scan.connect_plan import text_view

    assert text_view(cspark, "dkc_shapes_sv") is None  # forgotten with the view
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        cspark.sql("SELECT * FROM dkc_shapes_sv WHERE id = 1").collect()


def _statements(cspark, df) -> int:
    """How many SQL statements `df`'s plan sends: 1 with every view spliced, one more per view expanded as a
    nested reference (a statement of its own, parsed and analysed apart by the server)."""
    return len(_relations(df._plan.to_proto(cspark.client).root, "sql"))


def test_temporary_view_made_by_sql_reads_the_latest_version(cspark, source, tmp_path):
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    cspark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dkc_shapes_sv AS SELECT id FROM delta.`{path}`")
    try:
        assert cspark.sql("SELECT count(*) AS c FROM dkc_shapes_sv WHERE id >= 0").first().c == FILES * ROWS
        write_deltalake(path, _file(FILES), mode="append", partition_by=["part"])
        df = cspark.sql(f"SELECT count(*) AS c FROM dkc_shapes_sv WHERE id >= {FILES * ROWS}")
        assert df.first().c == ROWS and kept_of(df) == [(1, FILES + 1)]
    finally:
        cspark.catalog.dropTempView("dkc_shapes_sv")


def kept_of(df) -> list[tuple[int, int]]:
    return sorted((r.files_kept, r.files_total) for r in dks.scan_report(df))


@pytest.mark.parametrize("store", ["cache", "persist"])
def test_cached_frames_skip(cspark, source, oracle, tmp_path, store):
    """`df.cache()` / `df.persist()` of a filtered Delta frame caches the plan with the kept files only (the same
    plan the later actions send, so Spark's cache serves them)."""
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    df = cspark.read.format("delta").load(path).where("id BETWEEN 1120 AND 1130").select("id", "s")
    getattr(df, store)()
    try:
        assert df.storageLevel.useMemory or df.storageLevel.useDisk
        assert df.count() == 11
        same_rows(df.collect(), oracle.where("id BETWEEN 1120 AND 1130").select("id", "s").collect())
        assert kept(df) == [1]
        assert "InMemoryTableScan" in df._explain_string(extended=False)  # the cache serves the query
    finally:
        df.unpersist()


PARTITION_CONDITIONS = [
    # (a condition on the partition column the kernel cannot translate exactly: no file may be wrongly skipped)
    "upper(part) = 'P1'",
    "substr(part, 2, 1) = '1'",
    "part LIKE '%1'",
    "concat(part, 'x') = 'p1x'",
    "CASE WHEN part = 'p1' THEN true ELSE false END",
    "coalesce(part, 'p0') = 'p1'",
    "part RLIKE '^p[12]$'",
    "part <=> 'p1'",
    "part = 'p1' OR upper(s) = 'K000005'",
]


@pytest.mark.parametrize("condition", PARTITION_CONDITIONS)
def test_untranslatable_partition_conditions_answer_right(cspark, source, oracle, condition):
    """Over Connect a condition the kernel cannot translate exactly skips nothing by itself (documented in
    `relations_connect.py` / `connect_filters.py`): the rows are always right, by SQL and by DataFrame."""
    df = cspark.sql(f"SELECT id, part FROM delta.`{source}` WHERE {condition}")
    same_rows(df.collect(), cspark.sql(f"SELECT id, part FROM dkc_shapes_oracle WHERE {condition}").collect())
    frame = cspark.read.format("delta").load(source).where(condition).select("id", "part")
    same_rows(frame.collect(), oracle.where(condition).select("id", "part").collect())


def test_string_partition_compared_with_a_number(cspark, tmp_path):
    """`part = 1` over a string partition column: Spark compares as numbers ('01' and '1' both match); the
    kernel's string comparison would skip '01' - so no skipping by such a conjunct, and the rows are right."""
    path = str(tmp_path / "t")
    for p in ("1", "01", "2"):
        write_deltalake(path, pa.table({"id": pa.array([int(p)], pa.int64()), "part": [p]}), mode="append",
                        partition_by=["part"])
    got = sorted(r.part for r in cspark.sql(f"SELECT part FROM delta.`{path}` WHERE part = 1").collect())
    assert got == ["01", "1"]
    got = sorted(r.part for r in cspark.read.format("delta").load(path).where(F.col("part") == 1).collect())
    assert got == ["01", "1"]
    got = sorted(r.part for r in cspark.sql(f"SELECT part FROM delta.`{path}` WHERE part IN (2, 1)").collect())
    assert got == ["01", "1", "2"]


def _commands(cspark, monkeypatch) -> list[tuple[str, str | None]]:
    """The commands the Connect client sends from now on (their kind and text/name)."""
    from deltakernel.spark.kinds.connect_internals import command_effect

    sent: list[tuple[str, str | None]] = []
    client = cspark.client
    original = client.execute_command

    def execute_command(command, *args, **kwargs):
        sent.append(command_effect(command))
        return original(command, *args, **kwargs)

    monkeypatch.setattr(client, "execute_command", execute_command)
    return sent


def test_scans_travel_with_the_statement(cspark, source, oracle, catalog_table, tmp_path, monkeypatch):
    """SQL over a Delta path, a catalog table and a permanent view in another database (with a column list, its
    text naming its table by a one-part name) sends one statement: the planned scans travel with it as references,
    no temporary view per table or view - and a DataFrame returned earlier keeps reading what it read."""
    path = pruned_copy(source, tmp_path / "t", "id >= 1100 AND id < 1150")
    table = catalog_table(path)
    cspark.sql(f"USE {DB}")
    try:
        cspark.sql("CREATE OR REPLACE VIEW v (key, label) AS SELECT id, s FROM t WHERE id >= 100")
    finally:
        cspark.sql("USE default")
    cspark.sql(f"SELECT id FROM {table} WHERE id = 1120").collect()  # the catalog's answers, kept for the next ones
    sent = _commands(cspark, monkeypatch)
    early = cspark.sql(f"SELECT id, s FROM delta.`{path}` WHERE id = 1120")
    for sql, files, expected in [
        (f"SELECT label FROM {DB}.v WHERE key = 1134", [1], "SELECT s FROM dkc_shapes_oracle WHERE id = 1134"),
        (f"SELECT id FROM {table} WHERE id = 1101", [1], "SELECT id FROM dkc_shapes_oracle WHERE id = 1101"),
        (f"SELECT id FROM delta.`{path}` WHERE id IN (1101, 1149)", [1],
         "SELECT id FROM dkc_shapes_oracle WHERE id IN (1101, 1149)"),
    ]:
        df = cspark.sql(sql)
        assert kept(df) == files, sql
        same_rows(df.collect(), cspark.sql(expected).collect())
    assert "temp_view" not in [kind for kind, _ in sent], sent
    statements = [text for kind, text in sent if kind == "sql" and not (text or "").startswith("SHOW TABLE")]
    # each statement and its oracle (catalog lookups aside), but the catalog table's point query: the warm-up's
    # shape, already analysed, so it is sent by its action alone (test_spark_connect_requests.py)
    assert len(statements) == 1 + 2 + 3, sent
    assert [tuple(r) for r in early.collect()] == [(1120, "k001120")]  # still reads what it read
    [vtext] = [r.information for r in cspark.sql(f"SHOW TABLE EXTENDED IN {DB} LIKE 'v'").collect()]
    assert "View Catalog and Namespace: spark_catalog.dkc_shapes" in vtext
    cspark.sql(f"DROP VIEW {DB}.v")
