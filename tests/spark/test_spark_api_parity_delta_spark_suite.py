"""delta-spark's own Python API behaviours on deltakernel's Spark engine (issue 35 item 5): what delta-spark's
`python/delta/tests/test_deltatable.py` checks and deltakernel still did differently. Builder column nullability
(`addColumn` defaults to nullable, `addColumns` keeps the given fields' nullability, `toDF().schema` keeps NOT
NULL), create / replace on existing and missing tables, identity columns on INT, `dropFeatureSupport`, OPTIMIZE's
recorded predicate, `restoreToTimestamp` with an unparsable timestamp, argument checks.

Expected values are delta-spark's documented behaviour (python/delta/tables.py, DeltaErrors.scala,
delta-error-classes.json); delta-spark's jars are not available here to run it side by side.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from deltakernel.spark import DeltaTable


def _name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def _fields(schema: StructType) -> list[tuple[str, str, bool, dict]]:
    return [(f.name, f.dataType.simpleString(), f.nullable, dict(f.metadata)) for f in schema.fields]


def _build(builder):
    """delta-spark's test table: NOT NULL partition column with a comment, a generated column, a property."""
    return (builder.addColumn("col1", "int", comment="foo", nullable=False)
            .addColumn("col2", IntegerType(), generatedAlwaysAs="col1 + 10")
            .property("foo", "bar").comment("comment").partitionedBy("col1").execute())


EXPECTED = [("col1", "int", False, {"comment": "foo"}), ("col2", "int", True, {})]


def _check_built(spark, dt, ref: str) -> None:
    assert _fields(dt.toDF().schema) == EXPECTED
    detail = dt.detail().collect()[0]
    assert detail.description == "comment" and list(detail.partitionColumns) == ["col1"]
    assert detail.properties.get("foo") == "bar"
    spark.sql(f"INSERT INTO {ref} (col1, col2) VALUES (1, 11)")
    assert [tuple(r) for r in dt.toDF().collect()] == [(1, 11)]


def test_add_columns_keeps_nullability_and_add_column_defaults_to_nullable(spark, tmp_path):
    df = spark.createDataFrame([("a", 1), ("b", 2)], ["key", "value"])
    for i, cols in enumerate((df.schema, df.schema.fields)):
        path = str(tmp_path / f"t{i}")
        dt = (DeltaTable.create(spark).location(path).addColumns(cols).addColumn("value2", dataType="int")
              .partitionedBy(["value2", "value"] if i == 0 else ("value2", "value")).execute())
        assert _fields(dt.toDF().schema) == [("key", "string", True, {}), ("value", "bigint", True, {}),
                                             ("value2", "int", True, {})]
        assert sorted(dt.detail().collect()[0].partitionColumns) == ["value", "value2"]
    strict = StructType([StructField("a", LongType(), False), StructField("b", StringType(), True)])
    dt = DeltaTable.create(spark).location(str(tmp_path / "s")).addColumns(strict).execute()
    assert _fields(dt.toDF().schema) == [("a", "bigint", False, {}), ("b", "string", True, {})]


@pytest.mark.parametrize("if_not_exists", [False, True])
def test_create_by_location_keeps_not_null_comment_and_generated_column(spark, tmp_path, if_not_exists):
    path = str(tmp_path / "t")
    builder = DeltaTable.createIfNotExists(spark) if if_not_exists else DeltaTable.create(spark)
    dt = _build(builder.location(path))
    _check_built(spark, dt, f"delta.`{path}`")


@pytest.mark.parametrize("or_create", [False, True])
def test_replace_by_location(spark, tmp_path, or_create):
    path = str(tmp_path / "t")
    DeltaTable.create(spark).location(path).addColumn("c1", "int").execute()
    builder = DeltaTable.createOrReplace(spark) if or_create else DeltaTable.replace(spark)
    dt = _build(builder.location(path))
    _check_built(spark, dt, f"delta.`{path}`")


def test_create_and_replace_by_name_on_existing_and_missing_tables(spark):
    name = _name("t35")
    try:
        spark.sql(f"CREATE TABLE {name} (c1 int) USING DELTA")
        with pytest.raises(Exception) as info:
            _build(DeltaTable.create(spark).tableName(name))
        assert name.lower() in str(info.value).lower() and "already exists" in str(info.value)
        _build(DeltaTable.createIfNotExists(spark).tableName(name))  # exists: nothing changes
        assert _fields(spark.read.table(name).schema) == [("c1", "int", True, {})]
        dt = _build(DeltaTable.replace(spark).tableName(name))
        _check_built(spark, dt, name)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
    missing = _name("t35m")
    try:
        with pytest.raises(Exception) as info:
            _build(DeltaTable.replace(spark).tableName(missing))
        text = str(info.value)
        assert missing.lower() in text.lower() and "cannot be replaced as it does not exist" in text  # delta-spark's
        dt = _build(DeltaTable.createOrReplace(spark).tableName(missing))
        _check_built(spark, dt, missing)
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {missing}")


def test_builder_without_session_create_ignore_replace(spark):
    name = _name("t35s")
    try:
        dt = DeltaTable.create().tableName(name).addColumn("value", dataType="int").execute()
        assert _fields(dt.toDF().schema) == [("value", "int", True, {})]
        dt = DeltaTable.createIfNotExists().tableName(name).addColumn("value2", dataType="int").execute()
        assert _fields(dt.toDF().schema) == [("value", "int", True, {})]
        dt = DeltaTable.replace().tableName(name).addColumn("key", dataType="int").execute()
        assert _fields(dt.toDF().schema) == [("key", "int", True, {})]
        dt = DeltaTable.createOrReplace().tableName(name).addColumn("col1", dataType="int").execute()
        assert _fields(dt.toDF().schema) == [("col1", "int", True, {})]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_optimize_records_delta_sparks_predicate_text(spark, tmp_path):
    for name, parts in (("p", ["key"]), ("u", [])):
        path = str(tmp_path / name)
        for rows in ([("a", 1), ("a", 2)], [("a", 3), ("a", 4)], [("b", 1), ("b", 2)]):
            spark.createDataFrame(rows, ["key", "value"]).repartition(1).write.partitionBy(*parts).format(
                "delta").mode("append").save(path)
    dt = DeltaTable.forPath(spark, str(tmp_path / "p"))
    res = dt.optimize().where("key = 'a'").executeCompaction().first().metrics
    assert (res.numFilesAdded, res.numFilesRemoved) == (1, 2)
    assert dt.history().first().operationParameters["predicate"] == '["(\'key = a)"]'
    with pytest.raises(Exception, match=r"Predicate references non-partition column 'value'\. Only the partition "
                                        r"columns may be referenced: \[key\]"):
        dt.optimize().where("value = 1").executeCompaction()
    whole = DeltaTable.forPath(spark, str(tmp_path / "u"))
    res = whole.optimize().executeCompaction().first().metrics
    assert (res.numFilesAdded, res.numFilesRemoved) == (1, 3)
    assert whole.history().first().operationParameters["predicate"] == "[]"
    with pytest.raises(Exception, match=r"Predicate references non-partition column 'key'\. Only the partition "
                                        r"columns may be referenced: \[\]"):
        whole.optimize().where("key = 'a'").executeCompaction()


def test_restore_to_timestamp_argument_errors(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([("a", 1)], ["key", "value"]).write.format("delta").save(path)
    spark.createDataFrame([("b", 2)], ["key", "value"]).write.format("delta").mode("append").save(path)
    dt = DeltaTable.forPath(spark, path)
    with pytest.raises(Exception, match=r"The provided timestamp \('05/04/1999'\) cannot be converted to a valid "
                                        r"timestamp"):
        dt.restoreToTimestamp("05/04/1999")
    with pytest.raises(Exception, match="timestamp needs to be a string but got '<class 'int'>'"):
        dt.restoreToTimestamp(12342323232)
    with pytest.raises(Exception, match="version needs to be an int but got '<class 'str'>'"):
        dt.restoreToVersion("0")
    assert dt.history().count() == 2  # nothing committed


def test_identity_column_on_int_through_sql(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id INT GENERATED ALWAYS AS IDENTITY (START WITH 1 INCREMENT BY 2), "
              "v STRING) USING DELTA")
    spark.sql(f"INSERT INTO delta.`{path}` (v) VALUES ('a'), ('b')")
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert [r[1] for r in rows] == ["a", "b"] and len({r[0] for r in rows}) == 2
    assert all(r[0] % 2 == 1 for r in rows)
    field = spark.read.format("delta").load(path).schema["id"]
    assert field.dataType == IntegerType()


def _protocol(path: str) -> dict:
    log = sorted(f for f in os.listdir(os.path.join(path, "_delta_log")) if f.endswith(".json"))
    for f in reversed(log):
        for line in open(os.path.join(path, "_delta_log", f)):
            action = json.loads(line)
            if "protocol" in action:
                return action["protocol"]
    raise AssertionError("no protocol")


def test_drop_feature_support_as_delta_spark(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.createDataFrame([(1,)], "a int").write.format("delta").save(path)
    dt = DeltaTable.forPath(spark, path)
    dt.addFeatureSupport("domainMetadata")  # a writer-only feature nothing uses
    assert "domainMetadata" in _protocol(path)["writerFeatures"]
    with pytest.raises(Exception, match=r"^\[DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED\]"):
        dt.dropFeatureSupport("domainMetadata", truncateHistory=True)
    dt.dropFeatureSupport("domainMetadata")
    assert "domainMetadata" not in (_protocol(path).get("writerFeatures") or [])
    with pytest.raises(Exception, match=r"^\[DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT\]"):
        dt.dropFeatureSupport("domainMetadata")
    with pytest.raises(Exception, match=r"^\[DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE\]"):
        dt.dropFeatureSupport("__invalid_feature__")
    dt.addFeatureSupport("deletionVectors")  # a reader-writer feature: its traces are in the history
    versions = dt.history().count()
    with pytest.raises(Exception, match=r"^\[DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD\] Dropping "
                                        r"deletionVectors was partially successful"):
        dt.dropFeatureSupport("deletionVectors")
    assert dt.history().count() >= versions
    with pytest.raises(ValueError, match="featureName needs to be a string but got '<class 'int'>'"):
        dt.dropFeatureSupport(1)
    with pytest.raises(ValueError, match="truncateHistory needs to be a bool but got '<class 'str'>'"):
        dt.dropFeatureSupport("deletionVectors", "yes")
