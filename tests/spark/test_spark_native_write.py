"""The native write path (Spark's Parquet writer + footer stats) against the kernel's own writer (mapInArrow)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from pathlib import Path

import helpers
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable
from deltakernel.errors import DeltaError

WP = "deltakernel.writePath"

TYPES = ("id long, i int, sh short, b byte, f float, d double, dec decimal(5,2), big decimal(30,2), "
         "s string, bin binary, bo boolean, day date, ts timestamp, ntz timestamp_ntz, "
         "st struct<a:int,b:string>")


def typed_rows():
    long_text = "ü" * 20 + "z" * 30  # truncated at 32 characters in both writers
    return [
        (1, 10, 3, 1, 1.5, 2.25, decimal.Decimal("1.50"), decimal.Decimal("12345678901234567890.12"), "abc",
         bytearray(b"x"), True, dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 1, 2, 3, 456789),
         dt.datetime(2021, 5, 5, 5, 5, 5, 999999), (1, "q")),
        (2, -7, None, -3, float("nan"), -1e300, decimal.Decimal("-2.25"), None, long_text, None, None,
         dt.date(1, 1, 1), dt.datetime(1999, 12, 31, 23, 59, 59), None, None),
        (3, None, 9, None, None, None, None, decimal.Decimal("-1.00"), None, bytearray(b""), False, None,
         None, dt.datetime(1970, 1, 1), (None, "a" * 40)),
    ]


def adds(path: str) -> list[dict]:
    out = []
    for f in sorted((Path(path) / "_delta_log").glob("*.json")):
        out += [json.loads(line)["add"] for line in f.read_text().splitlines() if '"add"' in line]
    return [a for a in out if a]


def write(df, path: str, how: str, mode: str = "error", **opts) -> None:
    w = df.write.format("delta").mode(mode).option(WP, how)
    for k, v in opts.items():
        w = w.option(k, v)
    w.save(path)


def test_native_stats_equal_kernel_stats(spark, tmp_path):
    df = spark.createDataFrame(typed_rows(), TYPES).coalesce(1)
    native, arrow = str(tmp_path / "native"), str(tmp_path / "arrow")
    write(df, native, "native")
    write(df, arrow, "arrow")
    (n,), (a,) = adds(native), adds(arrow)
    assert json.loads(n["stats"]) == json.loads(a["stats"])
    assert n["path"].startswith("part-00000-") and n["path"].endswith("-c000.snappy.parquet")
    assert sorted(os.listdir(native)) == sorted(["_delta_log", n["path"]])  # no staging dir, _SUCCESS, .crc
    helpers.assert_same_rows(DeltaTable(native).to_pyarrow_table(), DeltaTable(arrow).to_pyarrow_table(), "rows")
    # the session confs the job set are restored
    assert spark.conf.get("spark.sql.parquet.outputTimestampType", None) in (None, "INT96")


def test_native_job_sets_only_the_confs_its_columns_need(spark, tmp_path):
    """The user's Parquet confs stay as they are for columns they do not affect, are overridden for one job where
    they would make the files inexact (INT96 timestamps have no footer statistics; the legacy format writes small
    decimals as byte arrays), and are put back afterwards."""
    ts_type, legacy = "spark.sql.parquet.outputTimestampType", "spark.sql.parquet.writeLegacyFormat"
    spark.conf.set(ts_type, "INT96")
    spark.conf.set(legacy, "true")
    try:
        plain, typed = str(tmp_path / "plain"), str(tmp_path / "typed")
        write(spark.range(0, 10).selectExpr("id", "CAST(id AS STRING) AS s"), plain, "native")
        assert DeltaTable(plain).count() == 10
        df = spark.createDataFrame([(dt.datetime(2020, 1, 1, 1, 2, 3), decimal.Decimal("1.50"))],
                                   "ts timestamp, dec decimal(5,2)").coalesce(1)
        write(df, typed, "native")
        (add,) = adds(typed)
        rg = pq.ParquetFile(str(Path(typed) / add["path"])).metadata.row_group(0)
        assert [rg.column(i).physical_type for i in range(2)] == ["INT64", "INT32"]
        assert json.loads(add["stats"])["minValues"]["ts"].startswith("2020-01-01T01:02:03")
        assert (spark.conf.get(ts_type), spark.conf.get(legacy)) == ("INT96", "true")
    finally:
        spark.conf.unset(ts_type)
        spark.conf.unset(legacy)


def test_connect_append_reads_its_confs_in_one_request(connect_spark, tmp_path, monkeypatch):
    """Issue 32: every conf request is a round trip on Connect. An append of columns no Parquet conf affects
    reads the session confs it needs (write options, write path, the Parquet job's) in one request and sets
    none; with a timestamp column the job's one conf is set and unset around the job."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark's functions build Connect Columns
    client_type = type(connect_spark.client)
    calls: list[str] = []
    original = client_type.config

    def counted(self, operation):
        calls.append(operation.WhichOneof("op_type"))
        return original(self, operation)

    path = str(tmp_path / "t")
    frame = connect_spark.range(0, 100).selectExpr("id", "CAST(id AS STRING) AS s")
    frame.write.format("delta").save(path)  # the table exists: the counted append is an append
    monkeypatch.setattr(client_type, "config", counted)
    frame.write.format("delta").mode("append").save(path)
    assert calls == ["get_with_default"]
    calls.clear()
    stamped = str(tmp_path / "ts")
    connect_spark.range(0, 100).selectExpr("id", "TIMESTAMP'2020-01-01 00:00:00' AS ts").write.format("delta") \
        .save(stamped)
    assert calls == ["get_with_default", "set", "unset"]
    monkeypatch.setattr(client_type, "config", original)
    assert DeltaTable(path).count() == 200 and DeltaTable(stamped).count() == 100
    assert connect_spark.conf.get("spark.sql.parquet.outputTimestampType", None) is None


def test_native_is_the_default_and_keeps_scans_exact(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.range(0, 1000, numPartitions=4).withColumn("v", F.col("id") * 2).write.format("delta").save(path)
    assert len(adds(path)) == 4
    assert all("staging" not in p for p in os.listdir(path))
    sel = spark.read.format("delta").load(path).where("id >= 100 AND id < 110")
    [scan] = dks.scan_report(sel)
    assert sel.count() == 10 and scan.files_total - scan.files_kept == 3
    assert DeltaTable(path).count() == 1000
    # Spark writes non-nullable columns as Parquet `required`; other readers take them as they are
    ours = DeltaTable(path).to_pyarrow_table()
    helpers.assert_same_rows(helpers.deltalake_table(path), ours, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(path), ours, "duckdb")


def test_long_strings_leave_stats_out_not_wrong(spark, tmp_path):
    # parquet-java writes no statistics (not even a null count) for chunks whose min+max exceed 4 KiB
    path = str(tmp_path / "long")
    df = spark.createDataFrame([("a" * 5000, 1), (None, 2)], "s string, n long").coalesce(1)
    write(df, path, "native")
    stats = json.loads(adds(path)[0]["stats"])
    assert "s" not in stats["nullCount"] and "s" not in stats["minValues"] and stats["nullCount"]["n"] == 0
    assert spark.read.format("delta").load(path).where("s IS NULL").count() == 1


def test_partitioned_special_characters_and_nulls(spark, tmp_path):
    values = ["a b", "x/y", "c%d", "e=f", "ü", "", None, "#?:*", "__x"]
    data = [(i, v, (i % 3) if i % 4 else None, dt.date(2020, 1, 1 + i) if i % 5 else None)
            for i, v in enumerate(values)]
    df = spark.createDataFrame(data, "id long, p string, n int, day date")
    native, arrow = str(tmp_path / "native"), str(tmp_path / "arrow")
    df.repartition(2).write.format("delta").option(WP, "native").partitionBy("p", "n", "day").save(native)
    df.repartition(2).write.format("delta").option(WP, "arrow").partitionBy("p", "n", "day").save(arrow)

    def values_of(path):
        return sorted(json.dumps(a["partitionValues"], sort_keys=True) for a in adds(path))

    assert values_of(native) == values_of(arrow)
    for a in adds(native):  # paths are the files' keys, URI-encoded
        assert "staging" not in a["path"] and a["path"].startswith("p=")
    ours = DeltaTable(native).to_pyarrow_table()
    helpers.assert_same_rows(ours, DeltaTable(arrow).to_pyarrow_table(), "partitioned")
    helpers.assert_same_rows(helpers.deltalake_table(native), ours, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(native), ours, "duckdb")
    assert spark.read.format("delta").load(native).where("p IS NULL").count() == 2  # "" and None


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_native(spark, tmp_path, mode):
    path = str(tmp_path / mode)
    df = spark.createDataFrame([(1, "a", (1, "x")), (2, None, None)], "id long, `my col` string, st struct<a:int,b:string>")
    write(df.coalesce(1), path, "native", **{"delta.columnMapping.mode": mode})
    schema = json.loads(DeltaTable(path).metadata().schema_string)
    st = schema["fields"][2]
    (add,) = adds(path)
    prefix, name = add["path"].split("/")  # Spark Delta's random prefix directory under column mapping
    assert len(prefix) == 2 and name.startswith("part-00000-")
    pf = pq.ParquetFile(str(Path(path) / add["path"]))
    names = pf.schema_arrow.names
    assert names == [f["metadata"]["delta.columnMapping.physicalName"] for f in schema["fields"]]
    ids = [int(pf.schema_arrow.field(i).metadata[b"PARQUET:field_id"]) for i in range(3)]
    assert ids == [f["metadata"]["delta.columnMapping.id"] for f in schema["fields"]]
    nested = pf.schema_arrow.field(2).type
    assert [nested.field(i).name for i in range(2)] == [
        f["metadata"]["delta.columnMapping.physicalName"] for f in st["type"]["fields"]]
    stats = json.loads(add["stats"])
    assert set(stats["nullCount"]) == set(names)
    got = spark.read.format("delta").load(path).toArrow()
    helpers.assert_same_rows(got, DeltaTable(path).to_pyarrow_table(), "cm spark")
    helpers.assert_same_rows(helpers.duckdb_table(path), DeltaTable(path).to_pyarrow_table(), "cm duckdb")
    write(df, path, "native", mode="append")  # appends go native too
    assert DeltaTable(path).count() == 4


def test_fallback_for_constraints_generated_columns_and_casts(spark, tmp_path):
    import deltakernel

    path = str(tmp_path / "c")
    spark.range(3).withColumn("x", F.col("id") + 1).write.format("delta").save(path)
    deltakernel.DeltaTable(path).alter.add_constraint({"pos": "x > 0"})
    bad = spark.range(2).withColumn("x", F.lit(-1).cast("long"))
    with pytest.raises(DeltaError, match="native is not possible.*constraints"):
        bad.write.format("delta").mode("append").option(WP, "native").save(path)
    with pytest.raises(Exception, match="pos"):  # auto: the mapInArrow path enforces the constraint
        bad.write.format("delta").mode("append").save(path)
    spark.range(2).withColumn("x", F.lit(5).cast("long")).write.format("delta").mode("append").save(path)
    assert DeltaTable(path).count() == 5

    from deltalake import DeltaTable as DL
    from deltalake.schema import Field, PrimitiveType, Schema

    gen = str(tmp_path / "g")
    DL.create(gen, Schema([Field("a", PrimitiveType("long")),
                           Field("g", PrimitiveType("long"), metadata={"delta.generationExpression": "a * 2"})]))
    src = spark.createDataFrame([(1,), (2,)], "a long")
    with pytest.raises(DeltaError, match="native is not possible"):
        src.write.format("delta").mode("append").option(WP, "native").save(gen)
    src.write.format("delta").mode("append").save(gen)
    assert sorted(DeltaTable(gen).to_pyarrow_table().column("g").to_pylist()) == [2, 4]

    casted = str(tmp_path / "cast")
    spark.createDataFrame([(1,), (2,)], "id long").write.format("delta").save(casted)
    small = spark.createDataFrame([(7,)], "id int")
    with pytest.raises(DeltaError, match="the kernel casts"):
        small.write.format("delta").mode("append").option(WP, "native").save(casted)
    small.write.format("delta").mode("append").save(casted)
    assert DeltaTable(casted).count() == 3

    rw = str(tmp_path / "rw")
    spark.range(4).write.format("delta").save(rw)
    with pytest.raises(DeltaError, match="replaceWhere"):
        spark.range(2).write.format("delta").mode("overwrite").option(WP, "native") \
            .option("replaceWhere", "id < 2").save(rw)


def test_empty_and_failed_native_writes(spark, tmp_path):
    path = str(tmp_path / "e")
    spark.createDataFrame([], "id long").write.format("delta").option(WP, "native").save(path)
    assert DeltaTable(path).count() == 0 and adds(path) == []
    assert sorted(os.listdir(path)) == ["_delta_log"]

    from pyspark.sql.types import LongType

    @F.udf(LongType())
    def boom(x):
        if x == 3:
            raise ValueError("task failure")
        return x

    with pytest.raises(Exception, match="task failure"):
        spark.range(5).withColumn("id", boom("id")).write.format("delta").mode("append").option(WP, "native") \
            .save(path)
    assert DeltaTable(path).version() == 0
    assert sorted(os.listdir(path)) == ["_delta_log"]  # the staging directory is removed


def test_footer_float_max_dropped_for_unknown_writers(tmp_path):
    # Arrow (and possibly future parquet-java) skips NaN in float statistics: a max from it is not a bound
    import pyarrow as pa

    from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
    from deltakernel.spark.writing.footer_stats import FooterStats

    f = str(tmp_path / "x.parquet")
    pq.write_table(pa.table({"d": [1.0, float("nan"), 3.0], "n": pa.array([1, None, 5], pa.int64())}), f)
    schema = StructType((StructField("d", PrimitiveType("double")), StructField("n", PrimitiveType("long"))))
    stats = json.loads(FooterStats(schema, [], "none", {}).stats_json(pq.read_metadata(f)))
    assert stats == {"numRecords": 3, "minValues": {"d": 1.0, "n": 1}, "maxValues": {"n": 5},
                     "nullCount": {"d": 0, "n": 1}}


def test_partitioned_column_mapping_native(spark, tmp_path):
    df = spark.createDataFrame([(i, f"v{i % 3}" if i % 4 else None, i * 1.5) for i in range(12)],
                               "id long, `the part` string, x double")
    native, arrow = str(tmp_path / "native"), str(tmp_path / "arrow")
    for path, how in ((native, "native"), (arrow, "arrow")):
        df.repartition(2).write.format("delta").option(WP, how).option("delta.columnMapping.mode", "name") \
            .partitionBy("the part").save(path)
    schema = json.loads(DeltaTable(native).metadata().schema_string)
    phys = schema["fields"][1]["metadata"]["delta.columnMapping.physicalName"]
    for a in adds(native):
        assert list(a["partitionValues"]) == [phys]
        assert "=" not in a["path"] and len(a["path"].split("/")[0]) == 2  # random prefixes, not Hive dirs
    assert sorted(str(a["partitionValues"][phys]) for a in adds(native)) == sorted(
        str(next(iter(a["partitionValues"].values()))) for a in adds(arrow))
    ours = DeltaTable(native).to_pyarrow_table()
    helpers.assert_same_rows(ours, DeltaTable(arrow).to_pyarrow_table(), "cm partitioned")
    helpers.assert_same_rows(spark.read.format("delta").load(native).toArrow(), ours, "spark")
    assert spark.read.format("delta").load(native).where("`the part` = 'v1'").count() == 3
