"""Delta SQL and catalog tables on a Spark Connect session: what only Connect does differently.

The shared cases (tests/spark/test_spark_sql.py, test_spark_catalog.py, test_spark_writer_v2.py) run on both
session kinds; these check the Connect design itself: statements parsed by sqlglot, Delta references rewritten to
temporary views over client-planned scans whose files were skipped with the statement's WHERE (asserted with
`DataFrame.inputFiles()`, the files Spark will read), Delta catalog tables resolved by the router, `{df}`
arguments, and the clear errors for what Connect cannot do.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers import spark_database

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import DeltaError, UnsupportedFeatureError
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark import DeltaFrame, DeltaTable


@pytest.fixture()
def cspark(connect_spark, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark.sql.functions builds Connect columns
    return connect_spark


@pytest.fixture()
def db(cspark, tmp_path):
    with spark_database(cspark, tmp_path / "warehouse", prefix="dkc_") as name:
        yield name


def _files_table(path: Path) -> str:
    """Four files, ids 0-39 in runs of ten (min/max statistics tell them apart), partitioned by p."""
    for k in range(4):
        ids = list(range(10 * k, 10 * k + 10))
        write_deltalake(str(path), pa.table({"id": pa.array(ids, pa.int64()), "p": ["x" if k < 2 else "y"] * 10,
                                             "v": [float(i) for i in ids]}),
                        partition_by=["p"], mode="append" if k else "error")
    return str(path)


def _names(files: list[str]) -> set[str]:
    return {f.rsplit("/", 1)[-1] for f in files}


def test_sql_over_a_path_skips_files(cspark, tmp_path):
    path = _files_table(tmp_path / "t")
    all_files = _names(KernelTable(path).files())
    assert len(all_files) == 4
    q = f"delta.`{path}`"
    df = cspark.sql(f"SELECT id, v FROM {q} WHERE id >= 25 ORDER BY id")
    assert [r.id for r in df.collect()] == list(range(25, 40))
    assert len(_names(df.inputFiles())) == 2  # files 20-29 and 30-39 only
    # an alias, a partition filter, grouping: still only the matching files
    df = cspark.sql(f"SELECT t.p, count(*) AS n FROM {q} AS t WHERE t.p = 'x' AND t.id < 5 GROUP BY t.p")
    assert [(r.p, r.n) for r in df.collect()] == [("x", 5)]
    assert len(_names(df.inputFiles())) == 1
    # joined (inner): conjuncts naming the table's alias skip its files; the other side is untouched
    cspark.createDataFrame([(31,), (35,)], "k long").createOrReplaceTempView("dkc_keys")
    df = cspark.sql(f"SELECT t.id FROM {q} t JOIN dkc_keys k ON t.id = k.k WHERE t.v > 30.5 ORDER BY 1")
    assert [r.id for r in df.collect()] == [31, 35]
    assert len(_names(df.inputFiles())) == 1
    # a condition the kernel cannot use: every file is read, the answer is still right
    df = cspark.sql(f"SELECT count(*) AS n FROM {q} WHERE abs(id - 20) < 3")
    assert df.collect()[0].n == 5 and len(_names(df.inputFiles())) == 4
    # time travel reads that version's files, skipping too
    df = cspark.sql(f"SELECT id FROM {q} VERSION AS OF 1 WHERE id > 15")
    assert sorted(r.id for r in df.collect()) == list(range(16, 20)) and len(_names(df.inputFiles())) == 1


def test_catalog_tables_by_name_skip_files(cspark, db, tmp_path):
    path = _files_table(tmp_path / "ext")
    name = f"{db}.ev"
    cspark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
    assert [c.name for c in cspark.catalog.listColumns(name)] == ["id", "p", "v"]
    for text in (f"SELECT id FROM {name} WHERE id < 8", f"SELECT id FROM spark_catalog.{name} WHERE id < 8",
                 f"SELECT ev.id FROM {name} WHERE ev.id < 8"):
        df = cspark.sql(text)
        assert sorted(r.id for r in df.collect()) == list(range(8)) and len(_names(df.inputFiles())) == 1, text
    cspark.sql(f"USE {db}")
    try:
        df = cspark.sql("SELECT count(*) AS n FROM ev WHERE p = 'y'")
        assert df.collect()[0].n == 20 and len(_names(df.inputFiles())) == 2
    finally:
        cspark.sql("USE default")
    # spark.table(...).where(...): the condition reaches the table's leaf when the plan is sent
    frame = cspark.table(name)
    assert isinstance(frame, DeltaFrame)
    kept = frame.where("id >= 30")
    assert len(_names(kept.inputFiles())) == 1 and sorted(r.id for r in kept.collect()) == list(range(30, 40))
    assert cspark.read.table(name).count() == 40
    assert DeltaTable.forName(cspark, name).toDF().count() == 40
    # a permanent view over a Delta catalog table: Spark stores its text, reads expand it (skipping files)
    cspark.sql(f"CREATE VIEW {db}.v AS SELECT * FROM {name}")
    df = cspark.sql(f"SELECT id FROM {db}.v WHERE id < 8")
    assert sorted(r.id for r in df.collect()) == list(range(8)) and len(_names(df.inputFiles())) == 1
    # spark.table of the view: its text expanded by the router (Spark's own resolution has no path for the table)
    assert sorted(r.id for r in cspark.table(f"{db}.v").where("id < 8").collect()) == list(range(8))
    assert cspark.read.table(f"{db}.v").count() == 40
    with pytest.raises(UnsupportedFeatureError, match="permanent view"):
        cspark.sql(f"CREATE VIEW {db}.pv AS SELECT * FROM delta.`{path}`")
    cspark.sql(f"CREATE OR REPLACE TEMP VIEW dkc_tv AS SELECT * FROM {name} WHERE p = 'x'")
    assert cspark.table("dkc_tv").count() == 20
    cspark.sql(f"DROP TABLE {name}")
    assert not cspark.catalog.tableExists(name) and KernelTable.is_deltatable(path)  # external: data kept


def test_dml_and_ddl_statements_parsed_without_spark(cspark, db, tmp_path):
    name = f"{db}.t"
    cspark.sql(f"CREATE TABLE {name} (id BIGINT NOT NULL, s STRUCT<a: INT, b: STRING> COMMENT 'nested', "
               f"g BIGINT GENERATED ALWAYS AS (id * 10)) USING delta TBLPROPERTIES ('delta.appendOnly' = 'false')")
    cspark.sql(f"INSERT INTO {name} (id, s) VALUES (1, named_struct('a', 1, 'b', 'x')), "
               f"(2, named_struct('a', 2, 'b', 'y'))")
    assert sorted((r.id, r.g) for r in cspark.table(name).collect()) == [(1, 10), (2, 20)]
    r = cspark.sql(f"UPDATE {name} AS t SET t.s = named_struct('a', 9, 'b', upper(t.s.b)) WHERE t.s.a = 2").first()
    assert r.num_affected_rows == 1
    assert [(x.id, x.s.a, x.s.b) for x in cspark.sql(f"SELECT * FROM {name} WHERE id = 2").collect()] == [(2, 9, "Y")]
    src = cspark.createDataFrame([(2, 5), (3, 6)], "id long, a int")
    r = cspark.sql("MERGE INTO {t} AS t USING {src} AS s ON t.id = s.id "
                   "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, named_struct('a', s.a, "
                   "'b', 'new'))".replace("{t}", name), src=src).first()
    assert (r.num_deleted_rows, r.num_inserted_rows) == (1, 1)
    assert sorted(x.id for x in cspark.table(name).collect()) == [1, 3]
    cspark.sql(f"ALTER TABLE {name} ADD COLUMNS (w DOUBLE, s.c BOOLEAN)")
    assert [c.name for c in cspark.catalog.listColumns(name)] == ["id", "s", "g", "w"]
    cspark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'team' = 'x')")
    cspark.sql(f"ALTER TABLE {name} RENAME COLUMN w TO w2")
    cspark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES ('team')")
    props = {x.key: x.value for x in cspark.sql(f"SHOW TBLPROPERTIES {name}").collect()}
    assert "team" not in props and props["delta.columnMapping.mode"] == "name"
    assert [c.name for c in cspark.catalog.listColumns(name)] == ["id", "s", "g", "w2"]  # the log's columns
    loc = cspark.sql(f"DESCRIBE DETAIL {name}").first().location
    kt = KernelTable(loc)
    assert [f.name for f in kt.schema().fields[1].type.fields] == ["a", "b", "c"]
    assert kt.schema().fields[1].metadata.get("comment") == "nested"
    assert kt.schema().fields[0].nullable is False
    cspark.sql(f"REPLACE TABLE {name} (k INT) USING delta")
    assert [f.name for f in KernelTable(loc).schema().fields] == ["k"] and KernelTable(loc).version() > 0
    cspark.sql(f"DELETE FROM {name}")
    cspark.sql(f"DROP TABLE {name}")
    assert not Path(loc.removeprefix("file:")).exists()  # managed: data removed


def test_connect_errors_are_delta_errors(cspark, tmp_path):
    path = _files_table(tmp_path / "t")
    from deltakernel.spark.sql import DeltaSqlSyntaxError

    with pytest.raises(DeltaSqlSyntaxError):
        cspark.sql(f"UPDATE delta.`{path}` SET = 1")
    with pytest.raises(UnsupportedFeatureError, match="subquer"):
        cspark.sql(f"DELETE FROM delta.`{path}` WHERE id IN (SELECT 1)")
    with pytest.raises(DeltaError, match="time-travel"):
        cspark.sql(f"DELETE FROM delta.`{path}` VERSION AS OF 1 WHERE id = 1")
    with pytest.raises(UnsupportedFeatureError, match="parameter"):
        cspark.sql(f"UPDATE delta.`{path}` SET v = :x", args={"x": 1.0})
    assert KernelTable(path).version() == 3


def test_permanent_views_made_by_classic_sessions_are_expanded(classic_spark, cspark, db, tmp_path, monkeypatch):
    """A permanent view over a Delta catalog table (made where Spark resolves it: a classic session) reads over
    Connect: its text is routed as a temporary view, in the view's own database."""
    path = _files_table(tmp_path / "t")
    monkeypatch.delenv("SPARK_CONNECT_MODE_ENABLED")  # classic statements
    classic_spark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{path}'")
    classic_spark.sql(f"USE {db}")
    try:
        classic_spark.sql("CREATE VIEW v AS SELECT id, p FROM t WHERE id >= 20")  # names relative to its database
    finally:
        classic_spark.sql("USE default")
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    df = cspark.sql(f"SELECT count(*) AS n FROM {db}.v WHERE p = 'y'")
    assert df.collect()[0].n == 20 and len(_names(df.inputFiles())) == 2
    assert cspark.catalog.currentDatabase() == "default"


# ----------------------------------------------------------------------------- pure pieces (no Spark)
def test_table_spans_names_and_ddl_without_spark():
    import sqlglot
    from sqlglot import exp

    from deltakernel.spark.sql import public_catalog as PC
    from deltakernel.spark.sql import text_plans as T

    text = "SELECT * FROM delta.`/a b` VERSION AS OF 3 t JOIN db.u TIMESTAMP AS OF date_sub(now(), 1) WHERE t.x = 1"
    tree = T.parse(text)
    uses = [T.table_use(text, tb) for tb in tree.find_all(exp.Table)]
    spans = sorted((text[u.start:u.stop], u.version, u.timestamp_sql, u.alias) for u in uses if u is not None)
    assert spans == [("db.u TIMESTAMP AS OF date_sub(now(), 1)", None, "date_sub(now(), 1)", None),
                     ("delta.`/a b` VERSION AS OF 3", 3, None, "t")]
    cond = sqlglot.parse_one("t.s.b = 1 AND db.t.id > s.b AND upper(x.y) = 'q'", read="spark")
    assert T.sql_text(T.strip_qualifier(cond, {("t",), ("db", "t")}, {"s", "id"})) == \
        "s.b = 1 AND id > s.b AND UPPER(x.y) = 'q'"
    assert PC.split_name("spark_catalog.`my db`.`t``1`") == ["spark_catalog", "my db", "t`1"]
    with pytest.raises(ValueError):
        PC.split_name("a..b")
    schema = ('{"type": "struct", "fields": [{"name": "a b", "type": {"type": "struct", "fields": [{"name": "x", '
              '"type": "integer", "nullable": false, "metadata": {"comment": "it\'s"}}]}, "nullable": true, '
              '"metadata": {}}, {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": '
              '"decimal(10,2)", "valueContainsNull": true}, "nullable": false, "metadata": {}}]}')
    assert PC.columns_ddl(schema) == ("`a b` STRUCT<`x`: int NOT NULL COMMENT 'it\\'s'>, "
                                      "`m` MAP<string, decimal(10,2)> NOT NULL")
    info = PC._information("Database: d\nTable: v\nType: VIEW\nView Text: SELECT a\nFROM t\n"
                           "View Catalog and Namespace: spark_catalog.d\nSchema: root\n |-- a: long\n")
    assert info["View Text"] == "SELECT a\nFROM t" and info["Type"] == "VIEW" and info["Schema"].startswith("root")
