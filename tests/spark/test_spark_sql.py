"""Delta SQL through `spark.sql` after `deltakernel.spark.enable(spark)`, on real Spark.

Each statement runs on Spark; the result is compared with the embedded engine (`deltakernel.DeltaTable` on a
copy of the same table, or reading the same path) and with deltalake / DuckDB reading the table. Statements
that are not about Delta tables must behave exactly as before; bad input is a clear DeltaError.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, deltalake_table, duckdb_table

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import ConstraintViolationError, DeltaError, TableNotFoundError, UnsupportedFeatureError
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark.sql import DeltaSqlError, DeltaSqlSyntaxError

deltalake = pytest.importorskip("deltalake")



def _data(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": [["a", "b", "c"][i % 3] for i in ids],
        "v": pa.array([None if i % 7 == 0 else i * 1.5 for i in ids], pa.float64()),
    })


def _table(path: Path, conf: dict[str, str] | None = None) -> str:
    write_deltalake(str(path), _data(20), partition_by=["p"], configuration=conf)
    write_deltalake(str(path), _data(10, 20), mode="append")
    return str(path)


def _copies(tmp_path: Path, conf: dict[str, str] | None = None) -> tuple[str, str]:
    base = _table(tmp_path / "base", conf)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return str(ours), str(theirs)


def _arrow(df) -> pa.Table:
    return df.toArrow()


def _q(path: str) -> str:
    return "delta.`" + path + "`"


def _ops(path: str) -> list[str]:
    return [h["operation"] for h in KernelTable(path).history()]


# ----------------------------------------------------------------------------- DML
@pytest.mark.parametrize("conf", [{}, {"delta.enableDeletionVectors": "true"}], ids=["cow", "dv"])
def test_delete_and_update_match_the_embedded_engine(spark, tmp_path, conf):
    ours, theirs = _copies(tmp_path, conf)
    res = spark.sql(f"DELETE FROM {_q(ours)} AS t WHERE t.id % 4 = 1 AND t.p <> 'c'").collect()
    expected = KernelTable(theirs).delete("id % 4 = 1 AND p <> 'c'")
    assert [r.asDict() for r in res] == [{"num_affected_rows": expected["num_deleted_rows"]}]
    assert expected["num_deleted_rows"] > 0
    res = spark.sql(f"UPDATE {_q(ours)} SET v = v * 2, p = upper(p) WHERE id > 17").collect()
    upd = KernelTable(theirs).update(updates={"v": "v * 2", "p": "upper(p)"}, predicate="id > 17")
    assert res[0].num_affected_rows == upd["num_updated_rows"] > 0
    mine = KernelTable(ours).to_pyarrow_table()
    assert_same_rows(mine, KernelTable(theirs).to_pyarrow_table(), "Spark SQL vs embedded")
    assert_same_rows(_arrow(spark.sql(f"SELECT * FROM {_q(ours)}")), mine, "Spark reads its result")
    if not conf:
        assert_same_rows(deltalake_table(ours), mine, "deltalake reads it")
    assert_same_rows(duckdb_table(ours), mine, "DuckDB reads it")
    assert _ops(ours)[:2] == ["UPDATE", "DELETE"]
    # nothing matched: zero rows, no commit
    before = KernelTable(ours).version()
    assert spark.sql(f"DELETE FROM {_q(ours)} WHERE id < 0").collect()[0].num_affected_rows == 0
    assert KernelTable(ours).version() == before


def test_merge_matches_the_embedded_engine(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    src = pa.table({"id": pa.array([1, 2, 3, 40, 41], pa.int64()), "p": ["b", "c", "a", "b", "a"],
                    "v": pa.array([10.0, 20.0, 30.0, 40.0, None], pa.float64())})
    spark.createDataFrame(src.to_pandas()).createOrReplaceTempView("dk_merge_src")
    res = spark.sql(f"""
        MERGE INTO {_q(ours)} AS t
        USING (SELECT * FROM dk_merge_src WHERE id <> 41 OR v IS NULL) AS s
        ON t.id = s.id
        WHEN MATCHED AND s.v > 25 THEN DELETE
        WHEN MATCHED THEN UPDATE SET t.v = s.v + 1
        WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, s.p, coalesce(s.v, -1))
    """).collect()[0]
    metrics = (KernelTable(theirs).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
               .when_matched_delete("s.v > 25").when_matched_update({"v": "s.v + 1"})
               .when_not_matched_insert({"id": "s.id", "p": "s.p", "v": "coalesce(s.v, -1)"}).execute())
    assert (res.num_updated_rows, res.num_deleted_rows, res.num_inserted_rows) == (
        metrics["num_target_rows_updated"], metrics["num_target_rows_deleted"], metrics["num_target_rows_inserted"])
    assert res.num_affected_rows == res.num_updated_rows + res.num_deleted_rows + res.num_inserted_rows
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), KernelTable(theirs).to_pyarrow_table(), "MERGE")
    assert_same_rows(deltalake_table(ours), KernelTable(theirs).to_pyarrow_table(), "deltalake reads it")
    assert _ops(ours)[0] == "MERGE"


def test_insert_forms_and_time_travel(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE {_q(path)} (id BIGINT NOT NULL, p STRING, v DOUBLE) USING delta PARTITIONED BY (p)")
    r = spark.sql(f"INSERT INTO {_q(path)} VALUES (1, 'a', 1.5), (2, 'b', 2.5), (3, 'a', NULL)").collect()[0]
    assert (r.num_affected_rows, r.num_inserted_rows) == (3, 3)
    spark.createDataFrame(_data(6, 10).to_pandas()).createOrReplaceTempView("dk_ins_src")
    spark.sql(f"INSERT INTO {_q(path)} (p, id) SELECT p, id FROM dk_ins_src WHERE id < 12")   # column list
    spark.sql(f"INSERT INTO {_q(path)} BY NAME SELECT v, id, p FROM dk_ins_src WHERE id >= 14")
    spark.sql(f"INSERT INTO {_q(path)} PARTITION (p = 'z') SELECT id + 100, v FROM dk_ins_src WHERE id = 12")
    v4 = deltalake_table(path)
    assert sorted(v4.column("id").to_pylist()) == [1, 2, 3, 10, 11, 14, 15, 112]
    # REPLACE WHERE: only the matching rows are replaced (deltalake's predicate overwrite gives the same)
    spark.sql(f"INSERT INTO {_q(path)} REPLACE WHERE p = 'a' SELECT 7 AS id, 'a' AS p, 7.0 AS v")
    assert sorted(KernelTable(path).to_pyarrow_table().column("id").to_pylist()) == [2, 7, 10, 11, 14, 112]  # 1, 3 and 15 were in p = a
    # INSERT OVERWRITE PARTITION replaces one partition; INSERT OVERWRITE the whole table
    spark.sql(f"INSERT OVERWRITE {_q(path)} PARTITION (p = 'z') VALUES (500, 5.0)")
    after = KernelTable(path).to_pyarrow_table()
    assert sorted(zip(after.column("id").to_pylist(), after.column("p").to_pylist()))[-1] == (500, "z")
    assert 112 not in after.column("id").to_pylist()
    assert_same_rows(deltalake_table(path), after, "deltalake")
    # time travel by version and by timestamp, as deltalake reads those versions
    for version in (1, 4):
        assert_same_rows(_arrow(spark.sql(f"SELECT * FROM {_q(path)} VERSION AS OF {version}")),
                         deltalake_table(path, version=version), f"VERSION AS OF {version}")
    # the commit before the last one, in ms, as DESCRIBE HISTORY shows it (the time time travel uses)
    ts = spark.sql(f"DESCRIBE HISTORY {_q(path)} LIMIT 2").selectExpr("unix_millis(timestamp) AS ms").collect()[1].ms
    tt = spark.sql(f"SELECT * FROM {_q(path)} TIMESTAMP AS OF timestamp_millis({ts})")
    prev = KernelTable(path).version() - 1
    assert_same_rows(_arrow(tt), deltalake_table(path, version=prev), "TIMESTAMP AS OF")
    spark.sql(f"INSERT OVERWRITE {_q(path)} SELECT 1, 'q', 0.0")
    assert KernelTable(path).to_pyarrow_table().to_pylist() == [{"id": 1, "p": "q", "v": 0.0}]
    assert _ops(path)[0] == "WRITE"
    with pytest.raises(DeltaSqlError, match="column"):
        spark.sql(f"INSERT INTO {_q(path)} (nope) VALUES (1)")


def test_queries_over_delta_tables(spark, tmp_path):
    a = _table(tmp_path / "a")
    b = str(tmp_path / "b")
    write_deltalake(b, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "w": ["x", "y", "z"]}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    write_deltalake(b, pa.table({"id": pa.array([4], pa.int64()), "w": ["q"]}), mode="append")
    expected = KernelTable(a).to_pyarrow_table()
    got = spark.sql(f"""
        WITH x AS (SELECT id, w FROM {_q(b)})
        SELECT t.id, t.p, x.w FROM {_q(a)} t JOIN x ON t.id = x.id
        WHERE t.id IN (SELECT id FROM {_q(b)} VERSION AS OF 0) ORDER BY t.id""").collect()
    assert [(r.id, r.w) for r in got] == [(1, "x"), (2, "y"), (3, "z")]
    assert spark.sql(f"SELECT count(*) AS n FROM {_q(a)}").collect()[0].n == expected.num_rows
    spark.sql(f"CREATE OR REPLACE TEMP VIEW dk_view_a AS SELECT * FROM {_q(a)} WHERE p = 'a'")
    assert spark.table("dk_view_a").count() == sum(1 for p in expected.column("p").to_pylist() if p == "a")
    changes = spark.sql(f"SELECT * FROM table_changes_by_path('{b}', 0, 1) ORDER BY id").collect()
    assert [(r.id, r._change_type, r._commit_version) for r in changes] == [
        (1, "insert", 0), (2, "insert", 0), (3, "insert", 0), (4, "insert", 1)]
    plan = "\n".join(r.plan for r in spark.sql(f"EXPLAIN SELECT * FROM {_q(a)}").collect())
    assert "parquet" in plan.lower()  # the native Parquet scan, not the Python source
    with pytest.raises(UnsupportedFeatureError, match="permanent view"):
        spark.sql(f"CREATE VIEW dk_perm_view AS SELECT * FROM {_q(a)}")


def test_parameters_and_formatting(spark, tmp_path):
    path = _table(tmp_path / "t")
    df = spark.sql(f"SELECT id FROM {_q(path)} WHERE id > :lo AND p = :p", args={"lo": 10, "p": "b"})
    assert sorted(r.id for r in df.collect()) == [i for i in range(11, 30) if i % 3 == 1]
    small = spark.range(3)
    assert spark.sql("SELECT count(*) AS n FROM {t} WHERE id < {k}", t=small, k=2).collect()[0].n == 2
    with pytest.raises(UnsupportedFeatureError, match="parameter"):
        spark.sql(f"DELETE FROM {_q(path)} WHERE id = :x", args={"x": 1})
    assert KernelTable(path).version() == 1


# ----------------------------------------------------------------------------- metadata and maintenance
def test_describe_history_detail_and_properties(spark, tmp_path):
    path = _table(tmp_path / "t", {"delta.appendOnly": "false"})
    hist = spark.sql(f"DESCRIBE HISTORY {_q(path)}").collect()
    embedded = KernelTable(path).history()
    assert [(r.version, r.operation) for r in hist] == [(h["version"], h["operation"]) for h in embedded]
    assert len(spark.sql(f"DESC HISTORY '{path}' LIMIT 1").collect()) == 1
    detail = spark.sql(f"DESCRIBE DETAIL {_q(path)}").collect()[0]
    assert detail.format == "delta" and detail.partitionColumns == ["p"]
    assert detail.numFiles == len(KernelTable(path).files())
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {_q(path)}").collect()}
    assert props["delta.appendOnly"] == "false" and props["delta.minWriterVersion"] == str(
        KernelTable(path).protocol().min_writer_version)
    one = spark.sql(f"SHOW TBLPROPERTIES {_q(path)} ('delta.appendOnly')").collect()
    assert [(r.key, r.value) for r in one] == [("delta.appendOnly", "false")]
    desc = spark.sql(f"DESCRIBE TABLE EXTENDED {_q(path)}").collect()
    cols = [(r.col_name, r.data_type) for r in desc]
    assert cols[:3] == [("id", "bigint"), ("p", "string"), ("v", "double")]
    assert ("# Partition Information", "") in cols and ("Provider", "delta") in cols


def test_alter_statements(spark, tmp_path):
    path = _table(tmp_path / "t")
    spark.sql(f"ALTER TABLE {_q(path)} ADD COLUMNS (w STRING COMMENT 'new', s STRUCT<x: INT>)")
    spark.sql(f"ALTER TABLE {_q(path)} SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'team' = 'x')")
    spark.sql(f"ALTER TABLE {_q(path)} RENAME COLUMN w TO w2")
    spark.sql(f"ALTER TABLE {_q(path)} DROP COLUMN s")
    spark.sql(f"ALTER TABLE {_q(path)} UNSET TBLPROPERTIES ('team')")
    spark.sql(f"ALTER TABLE {_q(path)} UNSET TBLPROPERTIES IF EXISTS ('nope')")
    with pytest.raises(DeltaSqlError, match="nope"):
        spark.sql(f"ALTER TABLE {_q(path)} UNSET TBLPROPERTIES ('nope')")
    spark.sql(f"ALTER TABLE {_q(path)} ADD CONSTRAINT id_pos CHECK (id >= 0)")
    schema = deltalake.DeltaTable(path).schema()
    assert [f.name for f in schema.fields] == ["id", "p", "v", "w2"]
    conf = deltalake.DeltaTable(path).metadata().configuration
    assert conf["delta.constraints.id_pos"] == "id >= 0" and "team" not in conf
    with pytest.raises(ConstraintViolationError):
        spark.sql(f"INSERT INTO {_q(path)} VALUES (-1, 'a', 1.0, 'x')")
    spark.sql(f"ALTER TABLE {_q(path)} DROP CONSTRAINT id_pos")
    spark.sql(f"ALTER TABLE {_q(path)} DROP CONSTRAINT IF EXISTS id_pos")
    spark.sql(f"INSERT INTO {_q(path)} VALUES (-1, 'a', 1.0, 'x')")
    assert -1 in deltalake_table(path).column("id").to_pylist()
    assert _ops(path)[:3] == ["WRITE", "DROP CONSTRAINT", "ADD CONSTRAINT"]
    assert "UNSET TBLPROPERTIES" in _ops(path) and "RENAME COLUMN" in _ops(path)


def test_maintenance_statements(spark, tmp_path):
    ours, theirs = _copies(tmp_path)
    spark.sql(f"DELETE FROM {_q(ours)} WHERE id < 5")
    KernelTable(theirs).delete("id < 5")
    out = spark.sql(f"OPTIMIZE {_q(ours)} WHERE p = 'a' ZORDER BY (id)").collect()
    assert out[0].metrics.numFilesRemoved >= 2 and out[0].metrics.numFilesAdded == 1
    KernelTable(theirs).optimize.z_order(["id"], partition_filters=[("p", "=", "a")])
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), KernelTable(theirs).to_pyarrow_table(), "OPTIMIZE")
    assert len(KernelTable(ours).files()) == len(KernelTable(theirs).files())
    spark.sql(f"OPTIMIZE '{ours}'")
    rows = spark.sql(f"RESTORE TABLE {_q(ours)} TO VERSION AS OF 2").collect()[0]
    assert rows.num_of_files_after_restore == len(KernelTable(ours).files())
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), deltalake_table(theirs, version=2), "RESTORE")
    assert _ops(ours)[0] == "RESTORE"
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    with pytest.raises(DeltaError, match="retention"):
        spark.sql(f"VACUUM {_q(ours)} RETAIN 0 HOURS DRY RUN")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dry = {r.path for r in spark.sql(f"VACUUM {_q(ours)} RETAIN 0 HOURS DRY RUN").collect()}
        embedded = KernelTable(ours).vacuum(retention_hours=0, dry_run=True, enforce_retention_duration=False,
                                            full=True)
        assert dry == {f"file:{ours}/{f}" for f in embedded} and dry
        res = spark.sql(f"VACUUM {_q(ours)} RETAIN 0 HOURS").collect()
        assert [r.path for r in res] == [f"file:{ours}"]
        assert not any(Path(p[len("file:"):]).exists() for p in dry)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert "VACUUM END" in _ops(ours)
    assert_same_rows(duckdb_table(ours), deltalake_table(theirs, version=2), "DuckDB after VACUUM")
    spark.sql(f"GENERATE symlink_format_manifest FOR TABLE {_q(ours)}")
    manifests = list(Path(ours, "_symlink_format_manifest").rglob("manifest"))
    assert manifests and sum(len(m.read_text().split()) for m in manifests) == len(KernelTable(ours).files())


def test_convert_to_delta(spark, tmp_path):
    plain = tmp_path / "plain"
    for part in ("x", "y"):
        (plain / f"k={part}").mkdir(parents=True)
        pq.write_table(pa.table({"id": pa.array([1, 2] if part == "x" else [3], pa.int64())}),
                       plain / f"k={part}" / "f.parquet")
    spark.sql(f"CONVERT TO DELTA parquet.`{plain}` PARTITIONED BY (k STRING)")
    got = KernelTable(str(plain)).to_pyarrow_table()
    assert sorted(zip(got.column("id").to_pylist(), got.column("k").to_pylist())) == [(1, "x"), (2, "x"), (3, "y")]
    assert_same_rows(deltalake_table(plain), got, "deltalake reads the converted table")
    assert _ops(str(plain)) == ["CONVERT"]


# ----------------------------------------------------------------------------- untouched and bad input
def test_statements_not_about_delta_are_untouched(spark, tmp_path):
    spark.sql("DROP TABLE IF EXISTS dk_plain_parquet")
    spark.sql("CREATE TABLE dk_plain_parquet (id BIGINT, s STRING) USING parquet")
    try:
        spark.sql("INSERT INTO dk_plain_parquet VALUES (1, 'a'), (2, 'b')")
        assert spark.sql("SELECT count(*) AS n FROM dk_plain_parquet").collect()[0].n == 2
        desc = spark.sql("DESCRIBE TABLE dk_plain_parquet").collect()
        assert [r.col_name for r in desc][:2] == ["id", "s"]
        assert spark.sql("SHOW TBLPROPERTIES dk_plain_parquet").count() >= 0
        spark.sql("ALTER TABLE dk_plain_parquet ADD COLUMNS (z INT)")
        assert [f.name for f in spark.table("dk_plain_parquet").schema.fields] == ["id", "s", "z"]
    finally:
        spark.sql("DROP TABLE dk_plain_parquet")
    spark.range(5).createOrReplaceTempView("dk_tmp")
    assert spark.sql("SELECT sum(id) AS s FROM dk_tmp").collect()[0].s == 10
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1
    from pyspark.errors import AnalysisException, ParseException

    with pytest.raises(ParseException):
        spark.sql("SELEC 1")
    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM dk_no_such_table")


def test_bad_input_is_a_clear_delta_error(spark, tmp_path):
    path = _table(tmp_path / "t")
    with pytest.raises(TableNotFoundError, match="dk_nope"):
        spark.sql("DESCRIBE HISTORY dk_nope")
    with pytest.raises(DeltaError, match="not a Delta table"):
        spark.sql(f"DESCRIBE HISTORY '{tmp_path / 'missing'}'")
    with pytest.raises(DeltaSqlSyntaxError):
        spark.sql(f"VACUUM {_q(path)} RETAIN many HOURS")
    with pytest.raises(DeltaSqlSyntaxError):
        spark.sql(f"OPTIMIZE {_q(path)} ZORDER (id)")
    with pytest.raises(DeltaSqlSyntaxError, match="syntax error"):
        spark.sql(f"DELETE FROM {_q(path)} WHERE id = = 1")
    with pytest.raises(DeltaSqlSyntaxError, match="syntax error"):
        spark.sql(f"MERGE INTO {_q(path)} t USING {_q(path)} s ON WHEN MATCHED THEN DELETE")
    with pytest.raises(DeltaError, match="nope"):
        spark.sql(f"DELETE FROM {_q(path)} WHERE nope = 1")
    with pytest.raises(DeltaError):
        spark.sql(f"UPDATE {_q(path)} SET nope = 1")
    with pytest.raises(DeltaError):
        spark.sql(f"SELECT * FROM {_q(str(tmp_path / 'missing'))}")
    with pytest.raises(DeltaError):
        spark.sql(f"SELECT * FROM {_q(path)} VERSION AS OF 99")
    assert KernelTable(path).version() == 1


def test_create_external_table_is_delta_sparks_on_both_kinds(spark, tmp_path):
    """CREATE EXTERNAL TABLE ... USING delta LOCATION: an external catalog table, as delta-spark makes it (and
    classic sessions did); without LOCATION it is refused (Spark's CREATE_EXTERNAL_TABLE_WITHOUT_LOCATION; classic
    sessions used to create a managed table). Spark Connect sessions failed on EXTERNAL with a KeyError from their
    own statement reader: one statement model now, the same on both kinds."""
    from helpers import spark_database

    path = _table(tmp_path / "ext")
    with spark_database(spark, tmp_path / "warehouse") as db:
        spark.sql(f"CREATE EXTERNAL TABLE {db}.e USING delta LOCATION '{path}'")
        rows = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {db}.e").collect()}
        assert rows["Type"] == "EXTERNAL" and rows["id"] == "bigint"
        assert spark.sql(f"SELECT count(*) AS n FROM {db}.e").first().n == 30
        with pytest.raises(DeltaSqlError, match="LOCATION"):
            spark.sql(f"CREATE EXTERNAL TABLE {db}.f (id BIGINT) USING delta")
        assert not spark.catalog.tableExists(f"{db}.f")
        spark.sql(f"DROP TABLE {db}.e")
    assert KernelTable(path).version() == 1  # external: the data stays
