"""delta-spark's Python API on deltakernel's Spark engine (issue 24): the builder (active session, StructType /
StructField lists, clusterBy checks, IdentityGenerator identity columns), optimize / restore / protocol argument
checks and error classes, `update(set={})`, `history()`'s columns, VACUUM's log entries and messages.

Expected values are delta-spark's documented behaviour (python/delta/tables.py, DeltaErrors.scala,
delta-error-classes.json); delta-spark's jars are not available here to run it side by side.
"""

from __future__ import annotations

import glob
import json
import os

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import DeltaError, RestoreError, VacuumRetentionError
from deltakernel.spark import DeltaTable, IdentityGenerator


def _log(path: str) -> list[list[dict]]:
    """Every commit's actions, by version."""
    return [
        [json.loads(line) for line in open(f)] for f in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json")))
    ]


def _ops(path: str) -> list[str]:
    return [next(a["commitInfo"]["operation"] for a in c if "commitInfo" in a) for c in _log(path)]


def _schema_fields(path: str) -> list[dict]:
    return json.loads(KernelTable(path).snapshot.metadata.schema_string)["fields"]


@pytest.fixture()
def partitioned(spark, tmp_path):
    path = str(tmp_path / "p")
    spark.createDataFrame([(1, "x"), (2, "y"), (3, "x")], "a long, p string").write.format("delta").partitionBy(
        "p"
    ).save(path)
    return path


# ----------------------------------------------------------------------------- builder
def test_builder_uses_the_active_session_and_struct_field_lists(spark, tmp_path):
    path = str(tmp_path / "t")
    fields = [StructField("a", LongType(), False), StructField("s", StringType(), True, {"comment": "c"})]
    dt = DeltaTable.create().location(path).addColumns(fields).execute()  # no session: the active one
    assert isinstance(dt, DeltaTable)
    got = _schema_fields(path)
    assert [(f["name"], f["type"], f["nullable"]) for f in got] == [("a", "long", False), ("s", "string", True)]
    assert got[1]["metadata"] == {"comment": "c"}
    path2 = str(tmp_path / "t2")
    DeltaTable.createIfNotExists(spark).location(path2).addColumns(StructType(fields)).execute()
    DeltaTable.createIfNotExists().location(path2).addColumns(StructType(fields)).execute()  # exists: no-op
    assert _ops(path2) == ["CREATE TABLE"]
    DeltaTable.createOrReplace().location(path2).addColumn("z", "int").execute()
    assert [f["name"] for f in _schema_fields(path2)] == ["z"]


def test_builder_argument_checks_as_delta_spark(spark, tmp_path):
    b = DeltaTable.create(spark).location(str(tmp_path / "t"))
    with pytest.raises(TypeError, match="Clustering column must be str"):
        b.clusterBy(1)
    with pytest.raises(TypeError, match="Partitioning column must be str"):
        b.partitionedBy(["a", 2])
    with pytest.raises(TypeError, match="Column in existing schema must be StructField"):
        b.addColumns(["a"])
    with pytest.raises(TypeError, match="Schema must be StructType or a list of StructField"):
        b.addColumns("a int")
    with pytest.raises(TypeError, match="Column nullable must be bool"):
        b.addColumn("a", "int", nullable=1)
    with pytest.raises(TypeError, match="Key and value of property must be string"):
        b.property("k", 1)
    with pytest.raises(ValueError, match="generatedByDefaultAs and generatedAlwaysAs cannot both be set"):
        b.addColumn("id", "bigint", generatedAlwaysAs=IdentityGenerator(), generatedByDefaultAs=IdentityGenerator())
    with pytest.raises(ValueError, match="requires step to be non-zero"):
        b.addColumn("id", "bigint", generatedAlwaysAs=IdentityGenerator(1, 0))
    with pytest.raises(DeltaError, match=r"^\[DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE\]"):
        b.addColumn("id", "int", generatedAlwaysAs=IdentityGenerator())
    both = DeltaTable.create(spark).location(str(tmp_path / "b")).addColumn("a", "int").addColumn("d", "string")
    with pytest.raises(DeltaError, match=r"^\[DELTA_CLUSTER_BY_WITH_PARTITIONED_BY\]"):
        both.partitionedBy("d").clusterBy("a").execute()
    wide = DeltaTable.create(spark).location(str(tmp_path / "w"))
    for c in "abcde":
        wide.addColumn(c, "int")
    with pytest.raises(DeltaError, match=r"^\[DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS\] CLUSTER BY supports up to 4"):
        wide.clusterBy("a", "b", "c", "d", "e").execute()
    assert not os.path.exists(str(tmp_path / "b" / "_delta_log")) and not os.path.exists(str(tmp_path / "w"))


def test_identity_columns_metadata_protocol_and_generated_values(spark, tmp_path):
    path = str(tmp_path / "id")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("id", "bigint", generatedAlwaysAs=IdentityGenerator(start=5, step=2))
        .addColumn("d", LongType(), generatedByDefaultAs=IdentityGenerator(-1, -1))
        .addColumn("v", "string", generatedAlwaysAs=None)
        .execute()
    )
    fields = {f["name"]: f for f in _schema_fields(path)}
    assert fields["id"]["metadata"] == {
        "delta.identity.start": 5,
        "delta.identity.step": 2,
        "delta.identity.allowExplicitInsert": False,
    }
    assert fields["d"]["metadata"] == {
        "delta.identity.start": -1,
        "delta.identity.step": -1,
        "delta.identity.allowExplicitInsert": True,
    }
    proto = next(a["protocol"] for a in _log(path)[0] if "protocol" in a)
    assert proto["minWriterVersion"] >= 6 and (
        "writerFeatures" not in proto or "identityColumns" in proto["writerFeatures"]
    )
    # values generated on insert: unique, on the sequence, high-water mark recorded (as delta-spark)
    spark.createDataFrame([("a",), ("b",), ("c",)], "v string").repartition(2).write.format("delta").mode(
        "append"
    ).save(path)
    spark.sql(f"INSERT INTO delta.`{path}` (v) VALUES ('e')")
    rows = spark.read.format("delta").load(path).collect()
    ids = sorted(r.id for r in rows)
    assert len(set(ids)) == 4 and all((i - 5) % 2 == 0 and i >= 5 for i in ids)
    assert len({r.d for r in rows}) == 4 and all(r.d <= -1 for r in rows)
    hwm = {f["name"]: f["metadata"].get("delta.identity.highWaterMark") for f in _schema_fields(path)}
    assert hwm["id"] == max(ids) and hwm["d"] == min(r.d for r in rows)


def test_generated_column_through_the_builder(spark, tmp_path):
    path = str(tmp_path / "g")
    (
        DeltaTable.create(spark)
        .location(path)
        .addColumn("a", IntegerType())
        .addColumn("b", "int", generatedAlwaysAs="a + 1")
        .execute()
    )
    assert _schema_fields(path)[1]["metadata"] == {"delta.generationExpression": "a + 1"}
    spark.createDataFrame([(1,)], "a int").write.format("delta").mode("append").save(path)
    assert [tuple(r) for r in spark.read.format("delta").load(path).collect()] == [(1, 2)]


# ----------------------------------------------------------------------------- maintenance / protocol checks
def test_zorder_by_partition_column_refused_with_delta_spark_class(spark, partitioned):
    with pytest.raises(
        DeltaError,
        match=r"^\[DELTA_ZORDERING_ON_PARTITION_COLUMN\] p is a partition column\. "
        "Z-Ordering can only be performed on data columns",
    ):
        DeltaTable.forPath(spark, partitioned).optimize().executeZOrderBy("p")
    with pytest.raises(TypeError, match="Z-order column must be str"):
        DeltaTable.forPath(spark, partitioned).optimize().executeZOrderBy(1)
    assert _ops(partitioned) == ["WRITE"]


def test_restore_to_timestamp_checks(spark, partitioned):
    dt = DeltaTable.forPath(spark, partitioned)
    with pytest.raises(
        RestoreError,
        match=r"^\[DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER\] Cannot restore table to "
        r"timestamp \(2000-01-01\) as it is before the earliest version",
    ):
        dt.restoreToTimestamp("2000-01-01")
    with pytest.raises(
        RestoreError,
        match=r"^\[DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER\] Cannot restore table to "
        r"timestamp \(2100-01-01 00:00:00\) as it is after the latest version",
    ):
        dt.restoreToTimestamp("2100-01-01 00:00:00")
    with pytest.raises(ValueError, match="timestamp needs to be a string"):
        dt.restoreToTimestamp(20240101)
    with pytest.raises(ValueError, match="version needs to be an int"):
        dt.restoreToVersion("0")
    assert _ops(partitioned) == ["WRITE"]


def test_upgrade_protocol_and_add_feature_checks(spark, partitioned):
    dt = DeltaTable.forPath(spark, partitioned)
    with pytest.raises(ValueError, match="The readerVersion needs to be an integer"):
        dt.upgradeTableProtocol("1", 2)
    with pytest.raises(ValueError, match="The writerVersion needs to be an integer"):
        dt.upgradeTableProtocol(1, 2.0)
    with pytest.raises(ValueError, match="featureName needs to be a string"):
        dt.addFeatureSupport(3)
    with pytest.raises(DeltaError, match=r"^\[DELTA_UNSUPPORTED_FEATURES_IN_CONFIG\].*delta\.feature\.nope"):
        dt.addFeatureSupport("nope")
    dt.upgradeTableProtocol(1, 4)
    before = KernelTable(partitioned).snapshot.protocol
    dt.upgradeTableProtocol(1, 1)  # delta-spark's DeltaTable API ignores a downgrade: no error, no commit
    assert KernelTable(partitioned).snapshot.protocol == before
    dt.addFeatureSupport("DELETIONVECTORS")  # feature names are case-insensitive, as delta-spark's
    proto = KernelTable(partitioned).snapshot.protocol
    assert "deletionVectors" in (proto.writer_features or ())
    assert _ops(partitioned) == ["WRITE", "UPGRADE PROTOCOL", "ADD FEATURE"]


def test_update_set_argument_types(spark, partitioned):
    dt = DeltaTable.forPath(spark, partitioned)
    with pytest.raises(ValueError, match="'set' cannot be None"):
        dt.update("a = 1")
    with pytest.raises(TypeError, match="'set' must be a dict"):
        dt.update("a = 1", ["a"])
    dt.update("a = 1", {})  # an empty dict runs, as delta-spark: the matched rows are rewritten unchanged
    assert _ops(partitioned) == ["WRITE", "UPDATE"]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(partitioned).collect()) == [
        (1, "x"),
        (2, "y"),
        (3, "x"),
    ]


def test_history_has_delta_spark_columns_in_order(spark, partitioned):
    df = DeltaTable.forPath(spark, partitioned).history()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("version", "bigint"),
        ("timestamp", "timestamp"),
        ("userId", "string"),
        ("userName", "string"),
        ("operation", "string"),
        ("operationParameters", "map<string,string>"),
        ("job", "struct<jobId:string,jobName:string,runId:string,jobOwnerId:string,triggerType:string>"),
        ("notebook", "struct<notebookId:string>"),
        ("clusterId", "string"),
        ("readVersion", "bigint"),
        ("isolationLevel", "string"),
        ("isBlindAppend", "boolean"),
        ("operationMetrics", "map<string,string>"),
        ("userMetadata", "string"),
        ("engineInfo", "string"),
    ]
    row = df.collect()[0]
    assert row.job is None and row.notebook is None and row.operation == "WRITE"


def test_vacuum_logs_start_end_and_names_spark_setting(spark, partitioned):
    dt = DeltaTable.forPath(spark, partitioned)
    dt.delete("p = 'y'")
    with pytest.raises(VacuumRetentionError) as info:
        dt.vacuum(0)
    message = str(info.value)
    assert "spark.databricks.delta.retentionDurationCheck.enabled = false" in message
    assert "Are you sure you would like to vacuum files with such a low retention period" in message
    assert "enforce_retention_duration" not in message
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        dt.vacuum(0)
    finally:
        spark.conf.unset("spark.databricks.delta.retentionDurationCheck.enabled")
    assert _ops(partitioned) == ["WRITE", "DELETE", "VACUUM START", "VACUUM END"]
    start, end = (next(a["commitInfo"] for a in c if "commitInfo" in a) for c in _log(partitioned)[2:])
    assert (
        start["operationParameters"]["retentionCheckEnabled"] == "false"
        or start["operationParameters"]["retentionCheckEnabled"] is False
    )
    assert start["operationMetrics"]["numFilesToDelete"] == "1"
    assert end["operationParameters"]["status"] == "COMPLETED" and end["operationMetrics"]["numDeletedFiles"] == "1"


def test_for_path_on_a_non_delta_directory(spark, tmp_path):
    with pytest.raises(DeltaError, match=r"^\[DELTA_MISSING_DELTA_TABLE\] .* is not a Delta table"):
        DeltaTable.forPath(spark, str(tmp_path))
