"""Reads through Spark: native plan, every read option, file skipping, SQL view, Python source fallback."""

from __future__ import annotations

import datetime as dt
import time

import helpers
import pyarrow as pa
import pytest

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake
from deltakernel.spark.scan.datasource import python_source_frame
from deltakernel.spark.scan.reader import DeltaFrame


def arrow(df) -> pa.Table:
    return df.toArrow()


def iso_ms(ms: int) -> str:
    return (dt.datetime.fromtimestamp(ms // 1000, dt.timezone.utc) + dt.timedelta(milliseconds=ms % 1000)).isoformat()


def sample(n: int = 30, offset: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(range(offset, offset + n), pa.int64()),
        "part": pa.array([f"p{i % 3}" for i in range(n)]),
        "ts": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(hours=i) for i in range(n)],
                       pa.timestamp("us", tz="UTC")),
        "amount": pa.array([i * 1.5 for i in range(n)]),
    })


@pytest.fixture(scope="module")
def versioned(tmp_path_factory):
    """v0: 30 rows, v1: +30 rows, v2: overwrite with 10 rows; partitioned by `part`."""
    path = str(tmp_path_factory.mktemp("versioned") / "t")
    write_deltalake(path, sample(30), partition_by=["part"], configuration={"delta.enableChangeDataFeed": "true"})
    time.sleep(0.05)
    write_deltalake(path, sample(30, 100), mode="append")
    time.sleep(0.05)
    write_deltalake(path, sample(10, 1000), mode="overwrite")
    return path


def test_load_latest_matches_kernel(spark, versioned):
    df = spark.read.format("delta").load(versioned)
    assert isinstance(df, DeltaFrame)
    helpers.assert_same_rows(arrow(df), DeltaTable(versioned).to_pyarrow_table(), "latest")
    assert df.columns == ["id", "part", "ts", "amount"]


@pytest.mark.parametrize("version,rows", [(0, 30), (1, 60), (2, 10)])
def test_version_as_of(spark, versioned, version, rows):
    df = spark.read.format("delta").option("versionAsOf", version).load(versioned)
    helpers.assert_same_rows(arrow(df), DeltaTable(versioned, version=version).to_pyarrow_table(), f"v{version}")
    assert df.count() == rows


def test_timestamp_as_of(spark, versioned):
    history = DeltaTable(versioned)._timestamps()  # commit timestamps as time travel sees them
    ts = iso_ms(history[1])
    df = spark.read.format("delta").option("timestampAsOf", ts).load(versioned)
    assert df.count() == 60
    with pytest.raises(Exception, match="both"):
        spark.read.format("delta").option("timestampAsOf", ts).option("versionAsOf", 1).load(versioned)


def test_timestamp_as_of_outside_the_log_is_delta_sparks_error(spark, versioned):
    """delta-spark refuses a time before the earliest commit or after the latest (deltalake's API clamps)."""
    history = DeltaTable(versioned)._timestamps()
    with pytest.raises(Exception, match=r"\[DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION\]"):
        spark.read.format("delta").option("timestampAsOf", "2001-02-03T04:05:06Z").load(versioned).count()
    with pytest.raises(Exception, match=r"\[DELTA_TIMESTAMP_GREATER_THAN_COMMIT\]"):
        spark.read.format("delta").option("timestampAsOf", "2100-01-01T00:00:00Z").load(versioned).count()
    latest = spark.read.format("delta").option("timestampAsOf", iso_ms(history[max(history)])).load(versioned)
    assert latest.count() == DeltaTable(versioned).count(), "the latest commit's own time is inside the log"


def test_history_timestamp_is_the_one_time_travel_uses(spark, tmp_path):
    """delta-spark's DESCRIBE HISTORY shows the commit file's time (monotonic), not commitInfo's earlier clock
    reading: copying a history timestamp into `timestampAsOf` gives that very version, however late the file
    landed (here: each commit file's mtime 5 s after its commitInfo timestamp, as on a slow store)."""
    import os

    from deltakernel.spark import DeltaTable as SparkDeltaTable

    path = str(tmp_path / "t")
    for i in range(3):
        write_deltalake(path, sample(5, 10 * i), mode="append")
    log = os.path.join(path, "_delta_log")
    for v, info in enumerate(reversed(DeltaTable(path).history())):
        late = (info["timestamp"] + 5000 + v) / 1000
        os.utime(os.path.join(log, f"{v:020d}.json"), (late, late))
    rows = (SparkDeltaTable.forPath(spark, path).history()
            .selectExpr("version", "unix_millis(timestamp) AS ms").collect())
    assert {r.version: r.ms for r in rows} == DeltaTable(path)._timestamps()
    for r in rows:
        df = spark.read.format("delta").option("timestampAsOf", iso_ms(r.ms)).load(path)
        assert df.count() == 5 * (r.version + 1), f"history's timestamp of v{r.version}"


def test_read_change_feed(spark, versioned):
    df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 1)
          .option("endingVersion", 2).load(versioned))
    expected = DeltaTable(versioned).load_cdf(starting_version=1, ending_version=2).read_all()
    i = expected.schema.get_field_index("_commit_timestamp")  # Spark's is an instant (TimestampType)
    expected = expected.set_column(i, "_commit_timestamp", expected.column(i).cast(pa.timestamp("us", tz="UTC")))
    helpers.assert_same_rows(arrow(df), expected, "cdf")
    kinds = {r["_change_type"] for r in df.select("_change_type").collect()}
    assert kinds == {"insert", "delete"}
    history = DeltaTable(versioned)._timestamps()  # commit timestamps as time travel sees them
    start = iso_ms(history[1])
    by_ts = (spark.read.format("delta").option("readChangeFeed", "true").option("startingTimestamp", start)
             .load(versioned))
    assert by_ts.count() == df.count()


def test_file_skipping_from_filters(spark, versioned):
    df = spark.read.format("delta").load(versioned)
    on_part = df.where("part = 'p1'")
    [report] = dks.scan_report(on_part)
    assert report.files_kept < report.files_total
    helpers.assert_same_rows(arrow(on_part), DeltaTable(versioned).to_pyarrow_table(filters=[("part", "=", "p1")]))
    from pyspark.sql import functions as F

    on_data = df.filter(F.col("id") >= 1009)  # stats skipping: only one file can match
    assert dks.scan_report(on_data)[0].files_kept == 1
    assert [r.id for r in on_data.collect()] == [1009]
    assert df.skipped_files == 0 and isinstance(df, DeltaFrame)


def test_sql_view_and_python_source(spark, versioned):
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW tv USING delta OPTIONS (path '{versioned}')")
    rows = spark.sql("SELECT part, count(*) AS n FROM tv WHERE id >= 1003 GROUP BY part ORDER BY part").collect()
    assert [(r.part, r.n) for r in rows] == [("p0", 3), ("p1", 2), ("p2", 2)]
    py = python_source_frame(spark, versioned, {"versionAsOf": "1"})
    helpers.assert_same_rows(arrow(py), DeltaTable(versioned, version=1).to_pyarrow_table(), "python source")


def test_many_partitions_use_join(spark, tmp_path):
    path = str(tmp_path / "many")
    n = 200
    data = pa.table({"k": pa.array([i % 50 for i in range(n)], pa.int32()), "v": pa.array(range(n), pa.int64()),
                     "d": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 50) for i in range(n)])})
    write_deltalake(path, data, partition_by=["k", "d"])
    df = spark.read.format("delta").load(path)
    helpers.assert_same_rows(arrow(df), data, "many partitions")
    assert df.where("k = 7").count() == 4


def test_special_partition_values(spark, tmp_path):
    path = str(tmp_path / "special")
    data = pa.table({"p": ["a b", "x=y/z", "%20", None, "é[1]*"], "v": [1, 2, 3, 4, 5]})
    write_deltalake(path, data, partition_by=["p"])
    helpers.assert_same_rows(arrow(spark.read.format("delta").load(path)), data, "special")


def test_empty_table(spark, tmp_path):
    path = str(tmp_path / "empty")
    write_deltalake(path, sample(0))
    df = spark.read.format("delta").load(path)
    assert df.count() == 0 and df.columns == ["id", "part", "ts", "amount"]


def test_read_function_without_routing(spark, versioned):
    assert dks.read(spark, versioned, versionAsOf=0).count() == 30
