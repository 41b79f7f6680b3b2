"""Issue 9 section 8, writes: nullability like delta-spark, VARIANT columns, typed errors from tasks, SQL DDL."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import deltakernel
from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import ConstraintViolationError, DeltaError, SchemaError, UnsupportedFeatureError
from deltakernel.spark.common.task_errors import marker, typed_error

PATHS = ["native", "arrow"]


def schema_json(path: str) -> dict:
    return json.loads(DeltaTable(path).snapshot.metadata.schema_string)


@pytest.mark.parametrize("write_path", PATHS)
def test_non_nullable_frame_columns_become_nullable(spark, tmp_path, write_path):
    path = str(tmp_path / "t")
    df = spark.range(5).withColumn("s", F.lit("x"))  # both columns are non-nullable in Spark
    assert not any(f.nullable for f in df.schema.fields)
    df.write.format("delta").option("deltakernel.writePath", write_path).save(path)
    assert all(f["nullable"] for f in schema_json(path)["fields"])
    # an append with NULLs is accepted, and the plain (native) path stays possible for it
    nulls = spark.createDataFrame([(None, None)], "id long, s string")
    nulls.write.format("delta").mode("append").option("deltakernel.writePath", "native").save(path)
    spark.range(5, 7).withColumn("s", F.lit("y")).write.format("delta").mode("append") \
        .option("deltakernel.writePath", write_path).save(path)
    t = DeltaTable(path).to_pyarrow_table()
    assert t.num_rows == 8 and t.column("id").null_count == 1
    assert all(f["nullable"] for f in schema_json(path)["fields"])


@pytest.mark.parametrize("write_path", PATHS)
def test_existing_not_null_columns_stay_not_null(spark, tmp_path, write_path):
    path = str(tmp_path / "t")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("s", pa.string())])
    write_deltalake(path, pa.table({"id": [1], "s": ["a"]}, schema=schema))
    spark.range(3).withColumn("s", F.lit("b")).write.format("delta").mode("append") \
        .option("deltakernel.writePath", write_path).save(path)
    fields = {f["name"]: f["nullable"] for f in schema_json(path)["fields"]}
    assert fields == {"id": False, "s": True}
    with pytest.raises(DeltaError):
        spark.createDataFrame([(None, "c")], "id long, s string").write.format("delta").mode("append") \
            .option("deltakernel.writePath", write_path).save(path)
    assert DeltaTable(path).to_pyarrow_table().num_rows == 4


def test_variant_column_is_a_delta_variant(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.sql("""SELECT id, parse_json(CASE WHEN id = 1 THEN NULL
                      ELSE concat('{"a": ', id, ', "b": [1, "x"]}') END) AS v FROM range(3)""")
    df.write.format("delta").save(path)
    fields = {f["name"]: f["type"] for f in schema_json(path)["fields"]}
    assert fields == {"id": "long", "v": "variant"}
    proto = DeltaTable(path).snapshot.protocol
    assert "variantType" in (proto.reader_features or []) and "variantType" in (proto.writer_features or [])
    files = [p for p in Path(path).rglob("*.parquet")]
    v_type = pq.read_schema(files[0]).field("v").type
    assert pa.types.is_struct(v_type) and {f.name for f in v_type} == {"value", "metadata"}
    assert all(pa.types.is_binary(f.type) for f in v_type)
    back = spark.read.format("delta").load(path)
    assert back.schema["v"].dataType.typeName() == "variant"
    got = {r["id"]: r["j"] for r in back.select("id", F.to_json("v").alias("j")).collect()}
    want = {r["id"]: r["j"] for r in df.select("id", F.to_json("v").alias("j")).collect()}
    assert got == want and got[1] is None
    kernel = DeltaTable(path).to_pyarrow_table().sort_by("id")
    v = kernel.column("v").combine_chunks()
    assert v.null_count == 1 and {f.name for f in v.type} == {"value", "metadata"}
    # appends of more variants go to the same column
    df.write.format("delta").mode("append").save(path)
    assert spark.read.format("delta").load(path).where("v IS NOT NULL").count() == 4


def test_task_errors_reach_the_caller_typed(spark, tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": pa.array([1, 2], pa.int64())}))
    deltakernel.DeltaTable(path).alter.add_constraint({"pos": "x > 0"})
    bad = spark.createDataFrame([(5,), (-1,)], "x long")
    with pytest.raises(ConstraintViolationError, match="pos") as info:
        bad.write.format("delta").mode("append").save(path)  # mapInArrow: the check runs in the task
    assert "DeltaKernelTaskError" not in str(info.value)
    assert DeltaTable(path).version() == 1


def test_typed_error_round_trip():
    for err in (SchemaError('column "a"\nsecond line'), ConstraintViolationError("x > 0 violated")):
        text = f"pyspark.errors.PythonException: Traceback ...\n  {marker(err)}\n  at java..."
        back = typed_error(RuntimeError(text))
        assert type(back) is type(err) and str(back) == str(err)
    feature = typed_error(RuntimeError(marker(UnsupportedFeatureError("variantType", "column v: nope"))))
    assert isinstance(feature, UnsupportedFeatureError) and str(feature) == "column v: nope"
    assert typed_error(RuntimeError("DeltaKernelTaskError[os.path]: \"x\"")) is None
    assert typed_error(RuntimeError("plain failure")) is None


def test_native_random_prefixes_never_overwrite_a_file(spark, tmp_path, monkeypatch):
    """One Spark task writes the same file name into every partition; a repeated random prefix must not
    make one file replace another (rows were lost about once in a few hundred writes)."""
    from deltakernel.spark.writing import native_write

    prefixes = iter(["aa/", "aa/", "aa/"] + [f"b{i}/" for i in range(100)])
    monkeypatch.setattr(native_write, "random_prefix", lambda n: next(prefixes))
    path = str(tmp_path / "t")
    df = spark.createDataFrame([(i, f"v{i % 3}") for i in range(12)], "id long, p string").repartition(1)
    df.write.format("delta").option("deltakernel.writePath", "native").option("delta.columnMapping.mode", "name") \
        .partitionBy("p").save(path)
    assert DeltaTable(path).to_pyarrow_table().num_rows == 12
    assert spark.read.format("delta").load(path).count() == 12
