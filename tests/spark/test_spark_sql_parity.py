"""Delta SQL on deltakernel's Spark engine as delta-spark runs it (issue 24): ALTER TABLE ... CHANGE COLUMN,
DESCRIBE HISTORY's columns, VACUUM's log entries and messages, CONVERT TO DELTA's metrics, CREATE TABLE AS SELECT
in one commit (also with CLUSTER BY / COMMENT / TBLPROPERTIES) and saveAsTable's operation names.

Expected values are delta-spark's documented behaviour (its DeltaOperations names and parameters, error classes
from delta-error-classes.json); delta-spark's jars are not available here to run it side by side.
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import DeltaError, VacuumRetentionError


def _log(path: str) -> list[list[dict]]:
    return [
        [json.loads(line) for line in open(f)] for f in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))
    ]


def _info(commit: list[dict]) -> dict:
    return next(a["commitInfo"] for a in commit if "commitInfo" in a)


def _ops(path: str) -> list[str]:
    return [_info(c)["operation"] for c in _log(path)]


def _fields(path: str) -> list[dict]:
    return json.loads(KernelTable(path).snapshot.metadata.schema_string)["fields"]


# ----------------------------------------------------------------------------- ALTER TABLE ... CHANGE COLUMN
def test_change_column_comment_position_and_nullability(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (a INT NOT NULL, b STRING, c INT, s STRUCT<x: INT>) USING delta")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'one', 10, named_struct('x', 5))")
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN b b STRING COMMENT 'hello'")  # Hive form, type restated
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN s.x COMMENT 'nested'")
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN c c INT FIRST")
    spark.sql(f"ALTER TABLE {t} ALTER COLUMN a AFTER b")
    spark.sql(f"ALTER TABLE {t} CHANGE COLUMN a DROP NOT NULL")  # widening: allowed
    fields = _fields(path)
    assert [(f["name"], f["nullable"]) for f in fields] == [("c", True), ("b", True), ("a", True), ("s", True)]
    assert fields[1]["metadata"] == {"comment": "hello"}
    assert fields[3]["type"]["fields"][0]["metadata"] == {"comment": "nested"}
    assert _ops(path)[2:] == ["CHANGE COLUMN"] * 5
    params = [_info(c)["operationParameters"] for c in _log(path)[2:]]
    assert json.loads(params[0]["column"]) == {
        "name": "b",
        "type": "string",
        "nullable": True,
        "metadata": {"comment": "hello"},
    }
    assert params[2]["position"] == "FIRST" and params[3]["position"] == "AFTER b"
    rows = spark.read.format("delta").load(path).collect()
    assert [tuple(r)[:3] for r in rows] == [(10, "one", 1)]
    assert spark.read.format("delta").load(path).columns == ["c", "b", "a", "s"]


def test_change_column_narrowing_and_type_change_refused(spark, tmp_path):
    path = str(tmp_path / "t")
    t = f"delta.`{path}`"
    spark.sql(f"CREATE TABLE {t} (a INT NOT NULL, b STRING) USING delta")
    with pytest.raises(
        DeltaError,
        match=r"^\[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP\] ALTER TABLE CHANGE "
        "COLUMN is not supported for changing column b from STRING to STRING NOT "
        "NULL",
    ):
        spark.sql(f"ALTER TABLE {t} ALTER COLUMN b SET NOT NULL")
    with pytest.raises(
        DeltaError,
        match=r"^\[DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP\].* from INT NOT NULL "
        "to BIGINT NOT NULL",
    ):
        spark.sql(f"ALTER TABLE {t} CHANGE COLUMN a a BIGINT")
    assert _ops(path) == ["CREATE TABLE"]


# ----------------------------------------------------------------------------- DESCRIBE HISTORY / VACUUM
def test_describe_history_columns(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(3).write.format("delta").save(path)
    df = spark.sql(f"DESCRIBE HISTORY delta.`{path}`")
    assert df.columns == [
        "version",
        "timestamp",
        "userId",
        "userName",
        "operation",
        "operationParameters",
        "job",
        "notebook",
        "clusterId",
        "readVersion",
        "isolationLevel",
        "isBlindAppend",
        "operationMetrics",
        "userMetadata",
        "engineInfo",
    ]
    assert dict(df.dtypes)["notebook"] == "struct<notebookId:string>"
    row = df.collect()[0]
    assert (row.version, row.job, row.notebook) == (0, None, None)


def test_vacuum_sql_logs_start_end_and_names_spark_setting(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(10).repartition(2).write.format("delta").save(path)
    spark.range(5).write.format("delta").mode("overwrite").save(path)
    with pytest.raises(VacuumRetentionError, match="spark.databricks.delta.retentionDurationCheck.enabled = false"):
        spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")
    with pytest.raises(VacuumRetentionError, match="low retention period"):
        spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS").collect()
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert _ops(path) == ["WRITE", "WRITE", "VACUUM START", "VACUUM END"]
    start = _info(_log(path)[2])
    assert set(start["operationParameters"]) == {
        "retentionCheckEnabled",
        "specifiedRetentionMillis",
        "defaultRetentionMillis",
    }
    assert int(start["operationMetrics"]["numFilesToDelete"]) >= 2
    assert _info(_log(path)[3])["operationParameters"]["status"] == "COMPLETED"


# ----------------------------------------------------------------------------- CONVERT / CTAS
def test_convert_records_num_converted_files(spark, tmp_path):
    path = str(tmp_path / "pq")
    spark.range(6).repartition(3).write.parquet(path)
    n = len(glob.glob(os.path.join(path, "*.parquet")))
    spark.sql(f"CONVERT TO DELTA parquet.`{path}`").collect()
    info = _info(_log(path)[0])
    assert info["operation"] == "CONVERT"
    assert info["operationMetrics"]["numConvertedFiles"] == str(n)


def test_ctas_is_one_commit_with_delta_spark_operation(spark, tmp_path):
    path = str(tmp_path / "c")
    spark.sql(
        f"CREATE TABLE delta.`{path}` USING delta CLUSTER BY (a) COMMENT 'about' TBLPROPERTIES "
        "('foo' = 'bar', 'delta.appendOnly' = 'false') AS SELECT CAST(id AS INT) AS a, 'x' AS b FROM range(4)"
    )
    log = _log(path)
    assert len(log) == 1
    kinds = {next(iter(a)) for a in log[0]}
    assert {"commitInfo", "protocol", "metaData", "add"} <= kinds
    assert _info(log[0])["operation"] == "CREATE TABLE AS SELECT"
    md = next(a["metaData"] for a in log[0] if "metaData" in a)
    assert md["description"] == "about"
    assert md["configuration"]["foo"] == "bar"
    domain = next(a["domainMetadata"] for a in log[0] if "domainMetadata" in a)
    assert domain["domain"] == "delta.clustering" and "a" in domain["configuration"]
    assert spark.read.format("delta").load(path).count() == 4
    spark.sql(f"CREATE OR REPLACE TABLE delta.`{path}` USING delta AS SELECT 1 AS a, 'y' AS b")
    assert _ops(path) == ["CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"]
    plain = str(tmp_path / "plain")
    spark.sql(f"CREATE TABLE delta.`{plain}` USING delta AS SELECT 1 AS a")
    assert _ops(plain) == ["CREATE TABLE AS SELECT"]


def test_save_as_table_operations(spark, tmp_path):
    name = "parity_sat"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        spark.range(3).write.format("delta").option("path", str(tmp_path / "sat")).saveAsTable(name)
        spark.range(2).write.format("delta").mode("overwrite").saveAsTable(name)
        spark.range(1).write.format("delta").mode("append").saveAsTable(name)
        ops = [r.operation for r in spark.sql(f"DESCRIBE HISTORY {name}").collect()]
        # a new table: delta-spark's CTAS; overwrite of an existing one: its ReplaceTableAsSelect
        assert ops == ["WRITE", "CREATE OR REPLACE TABLE AS SELECT", "CREATE TABLE AS SELECT"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    v2 = "parity_v2"
    spark.sql(f"DROP TABLE IF EXISTS {v2}")
    try:
        spark.range(3).writeTo(v2).using("delta").option("path", str(tmp_path / "v2")).create()
        assert [r.operation for r in spark.sql(f"DESCRIBE HISTORY {v2}").collect()] == ["CREATE TABLE AS SELECT"]
        assert len(_log(str(tmp_path / "v2"))) == 1
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {v2}")


def test_change_column_on_a_catalog_table(spark, tmp_path):
    name = "parity_alter"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        spark.sql(f"CREATE TABLE {name} (a INT, b STRING) USING delta LOCATION '{tmp_path / 'cat'}'")
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN b COMMENT 'the b'")
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN b FIRST")
        rows = spark.sql(f"DESCRIBE TABLE {name}").collect()
        assert [(r.col_name, r.comment) for r in rows[:2]] == [("b", "the b"), ("a", None)]
        assert _ops(str(tmp_path / "cat"))[1:] == ["CHANGE COLUMN", "CHANGE COLUMN"]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    plain = str(tmp_path / "parquet")  # not a Delta table: the statement is Spark's (refused by Spark's parquet)
    spark.range(1).write.parquet(plain)
    with pytest.raises(Exception) as info:
        spark.sql(f"ALTER TABLE parquet.`{plain}` ALTER COLUMN id COMMENT 'x'")
    assert not isinstance(info.value, DeltaError)
