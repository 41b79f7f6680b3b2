"""Structured Streaming on real Spark: the Delta source (options, offsets, restarts) and the exactly-once sink.

Source tables are written by deltalake (an independent writer); sink tables are read back by deltalake and
DuckDB. Rows are compared as multisets: "exactly once" = same rows, no duplicates, no gaps.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import deltalake
import helpers
import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F

from deltakernel import DeltaTable

PARTS = ["a", "b"]


def append(path, ids, **kw):
    """One source commit (deltalake) with one file per partition value of `ids`."""
    ids = list(ids)
    data = pa.table({"id": pa.array(ids, pa.int64()), "p": [PARTS[i % 2] for i in ids]})
    deltalake.write_deltalake(str(path), data, mode="append", **kw)


def ids_of(path) -> list[int]:
    return sorted(helpers.deltalake_table(str(path)).column("id").to_pylist())


def stream(spark, src, **options):
    r = spark.readStream.format("delta")
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(str(src))


def run_now(df, dst, ck, **kw):
    """An availableNow query into the Delta sink, run to its end; returns the query."""
    w = df.writeStream.format("delta").option("checkpointLocation", str(ck))
    for k, v in kw.pop("options", {}).items():
        w = w.option(k, v)
    if "mode" in kw:
        w = w.outputMode(kw.pop("mode"))
    q = w.trigger(**(kw.pop("trigger", None) or {"availableNow": True})).start(str(dst))
    try:
        q.awaitTermination(timeout=300)
    except StreamingQueryException:  # callers look at q.exception()
        pass
    q.stop()
    return q


def forget_last_batch(ck):
    """Spark forgets it finished the last batch (as after a crash between the sink's commit and its own)."""
    last = max(int(p.name) for p in (ck / "commits").iterdir() if p.name.isdigit())
    for name in (str(last), f".{last}.crc"):
        (ck / "commits" / name).unlink(missing_ok=True)
    return last


def streaming_commits(path) -> list[dict]:
    hist = DeltaTable(str(path)).history()
    return sorted([h for h in hist if h.get("operation") == "STREAMING UPDATE"],
                  key=lambda h: int(h["operationParameters"]["epochId"]))


def batch_rows(path) -> list[int]:
    return [int(h["operationMetrics"]["numOutputRows"]) for h in streaming_commits(path)]


def assert_exactly_once(src, dst):
    got, want = Counter(ids_of(dst)), Counter(ids_of(src))
    assert got == want, f"missing {sorted((want - got).elements())[:10]}, duplicated {sorted((got - want).elements())[:10]}"


# ----------------------------------------------------------------------------- source
def test_snapshot_then_new_commits_exactly_once(spark, tmp_path):
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    for i in range(3):
        append(src, range(i * 10, i * 10 + 10))
    q = run_now(stream(spark, src), dst, ck)
    assert q.exception() is None
    assert_exactly_once(src, dst)
    append(src, range(100, 105))
    append(src, range(200, 203))
    run_now(stream(spark, src), dst, ck)  # restart from the same checkpoint: only the new commits
    assert_exactly_once(src, dst)
    assert sum(batch_rows(dst)) == 38
    commits = streaming_commits(dst)
    qid = commits[0]["operationParameters"]["queryId"]
    assert {c["operationParameters"]["queryId"] for c in commits} == {qid}
    assert deltalake.DeltaTable(str(dst)).transaction_version(qid) == len(commits) - 1
    assert sorted(helpers.duckdb_table(str(dst)).column("id").to_pylist()) == ids_of(src)
    # a restart with nothing new runs no batch
    run_now(stream(spark, src), dst, ck)
    assert len(streaming_commits(dst)) == len(commits)


def test_max_files_and_trigger_once(spark, tmp_path):
    src = tmp_path / "src"
    for i in range(5):
        append(src, [i * 2])  # one file per commit
    dst = tmp_path / "dst"
    run_now(stream(spark, src, maxFilesPerTrigger=2), dst, tmp_path / "ck")
    assert batch_rows(dst) == [2, 2, 1]
    assert_exactly_once(src, dst)
    once = tmp_path / "once"  # Trigger.Once reads everything in one batch, whatever the limit
    run_now(stream(spark, src, maxFilesPerTrigger=1), once, tmp_path / "ck2", trigger={"once": True})
    assert batch_rows(once) == [5]


def test_max_bytes_per_trigger(spark, tmp_path):
    src = tmp_path / "src"
    for i in range(4):
        append(src, [i * 2])
    size = max(a["size"] for a in helpers.read_actions(src, 0) if "add" in a for a in [a["add"]])
    dst = tmp_path / "dst"
    run_now(stream(spark, src, maxBytesPerTrigger=str(size + 1)), dst, tmp_path / "ck")
    assert batch_rows(dst) == [2, 2]  # soft limit, as delta-spark: the file that crosses it is still taken
    assert_exactly_once(src, dst)


def test_starting_version_and_timestamp(spark, tmp_path):
    src = tmp_path / "src"
    for i in range(4):
        append(src, [i * 2, i * 2 + 1])
        time.sleep(0.05)
    dst = tmp_path / "dst"
    run_now(stream(spark, src, startingVersion=2), dst, tmp_path / "ck")
    assert ids_of(dst) == [4, 5, 6, 7]
    # Delta's commit timestamps are the commit files' times (no in-commit timestamps here): between v2 and v3
    m2, m3 = (helpers.commit_file(src, v).stat().st_mtime_ns // 1_000_000 for v in (2, 3))
    mid = (m2 + m3) // 2
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(mid / 1000)) + f".{mid % 1000:03d}Z"
    dst2 = tmp_path / "dst2"
    q = run_now(stream(spark, src, startingTimestamp=when), dst2, tmp_path / "ck2")
    assert q.exception() is None, q.exception()
    assert ids_of(dst2) == [6, 7]
    q = run_now(stream(spark, src, startingVersion=9), tmp_path / "dst3", tmp_path / "ck3")
    assert "startingVersion 9 does not exist" in str(q.exception())


def test_starting_version_latest_and_appends_while_running(spark, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    append(src, range(0, 5))
    q = (stream(spark, src, startingVersion="latest").writeStream.format("delta")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(processingTime="200 milliseconds").start(str(dst)))
    try:
        q.processAllAvailable()
        for i in range(1, 5):  # appends arriving while the query runs
            append(src, range(i * 10, i * 10 + 3))
            time.sleep(0.15)
        q.processAllAvailable()
    finally:
        q.stop()
    assert q.exception() is None
    assert ids_of(dst) == sorted(i * 10 + j for i in range(1, 5) for j in range(3))


def test_starting_version_latest_reads_commits_made_after_the_query_started(spark, tmp_path):
    """`latest` is resolved once, when the query first runs, and recorded: commits made after that are read by
    the next run of the same query (here two availableNow runs), not skipped by resolving `latest` again."""
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    append(src, range(0, 5))
    q = run_now(stream(spark, src, startingVersion="latest"), dst, ck)
    assert q.exception() is None
    append(src, [50, 51])  # after the query started: must be read
    append(src, [60])
    q = run_now(stream(spark, src, startingVersion="latest"), dst, ck)
    assert q.exception() is None, q.exception()
    assert ids_of(dst) == [50, 51, 60]
    append(src, [70])
    q = run_now(stream(spark, src, startingVersion="latest"), dst, ck)
    assert ids_of(dst) == [50, 51, 60, 70]


def test_deletes_and_updates_fail_the_stream_unless_allowed(spark, tmp_path):
    src = tmp_path / "src"
    append(src, range(0, 6), partition_by=["p"])
    run_now(stream(spark, src), tmp_path / "d0", tmp_path / "ck0")
    deltalake.DeltaTable(str(src)).delete("p = 'a'")  # whole files removed
    append(src, [100, 101], partition_by=["p"])

    q = run_now(stream(spark, src), tmp_path / "d0", tmp_path / "ck0")
    assert q.exception() is not None and "ignoreDeletes" in str(q.exception())
    with pytest.raises(Exception, match="Detected deleted data .* at version 1"):
        q.awaitTermination()
    assert ids_of(tmp_path / "d0") == list(range(6))  # the failed batch committed nothing

    d1 = tmp_path / "d1"
    run_now(stream(spark, src, startingVersion=0, ignoreDeletes="true"), d1, tmp_path / "ck1")
    assert ids_of(d1) == [0, 1, 2, 3, 4, 5, 100, 101]

    deltalake.DeltaTable(str(src)).update({"id": "id + 1000"}, predicate="id = 1")  # a rewrite (remove + add)
    append(src, [102], partition_by=["p"])
    q = run_now(stream(spark, src, ignoreDeletes="true"), d1, tmp_path / "ck1")
    assert "skipChangeCommits" in str(q.exception())
    run_now(stream(spark, src, skipChangeCommits="true"), d1, tmp_path / "ck1")  # same checkpoint, now skipping
    assert ids_of(d1) == [0, 1, 2, 3, 4, 5, 100, 101, 102]
    d2 = tmp_path / "d2"
    run_now(stream(spark, src, startingVersion=0, ignoreChanges="true"), d2, tmp_path / "ck2")
    got = ids_of(d2)
    assert 1001 in got and got.count(3) == 2  # the rewritten file's rows are delivered again (ignoreChanges)


def test_schema_change_fails_then_restart_reads_new_column(spark, tmp_path):
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    append(src, [1, 2])
    run_now(stream(spark, src), dst, ck)
    deltalake.write_deltalake(str(src), pa.table({"id": pa.array([3], pa.int64()), "p": ["b"], "x": ["new"]}),
                              mode="append", schema_mode="merge")
    df = stream(spark, src)
    assert "x" in df.columns  # a new query sees the new column ...
    q = run_now(df, dst, ck, options={"mergeSchema": "true"})
    assert q.exception() is None  # ... and the restart reads the old commits through it
    assert ids_of(dst) == [1, 2, 3]
    assert helpers.deltalake_table(str(dst)).column("x").to_pylist().count("new") == 1


def test_schema_change_while_running_fails_with_version(spark, tmp_path):
    src = tmp_path / "src"
    append(src, [1])
    q = (stream(spark, src).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "ck"))
         .trigger(processingTime="200 milliseconds").start(str(tmp_path / "dst")))
    try:
        q.processAllAvailable()
        deltalake.write_deltalake(str(src), pa.table({"id": pa.array([3], pa.int64()), "p": ["b"], "y": [1.0]}),
                                  mode="append", schema_mode="merge")
        with pytest.raises(Exception, match="schema change at version 1"):
            q.awaitTermination(timeout=120)
    finally:
        q.stop()


def test_read_change_feed(spark, tmp_path):
    src = tmp_path / "src"
    deltalake.write_deltalake(str(src), pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": ["x", "y", "z"]}),
                              configuration={"delta.enableChangeDataFeed": "true"})
    dt = deltalake.DeltaTable(str(src))
    dt.update({"v": "'Y'"}, predicate="id = 2")
    dt.delete("id = 3")
    deltalake.write_deltalake(str(src), pa.table({"id": pa.array([4], pa.int64()), "v": ["w"]}), mode="append")
    got = (stream(spark, src, readChangeFeed="true", startingVersion=0, maxFilesPerTrigger=1)
           .writeStream.format("memory").queryName("cdf_stream").trigger(availableNow=True).start())
    got.awaitTermination(timeout=300)
    rows = {(r["id"], r["v"], r["_change_type"], r["_commit_version"])
            for r in spark.sql("select * from cdf_stream").collect()}
    want = {(r["id"], r["v"], r["_change_type"], r["_commit_version"])
            for r in pa.table(dt.load_cdf(starting_version=0).read_all()).to_pylist()}
    assert rows == want and len(rows) == 7
    # no starting version: the snapshot as inserts at its version, then the changes
    append_more = pa.table({"id": pa.array([5], pa.int64()), "v": ["q"]})
    snap = (stream(spark, src, readChangeFeed="true").writeStream.format("memory").queryName("cdf_snap")
            .trigger(availableNow=True).start())
    snap.awaitTermination(timeout=300)
    deltalake.write_deltalake(str(src), append_more, mode="append")
    first = {(r["id"], r["_change_type"], r["_commit_version"]) for r in spark.sql("select * from cdf_snap").collect()}
    assert first == {(1, "insert", 3), (2, "insert", 3), (4, "insert", 3)}


def test_deletion_vectors_and_column_mapping(spark, tmp_path):
    src = tmp_path / "src"
    DeltaTable.create(str(src), pa.schema([("id", pa.int64()), ("v", pa.string())]),
                      configuration={"delta.enableDeletionVectors": "true", "delta.columnMapping.mode": "name"})
    from deltakernel.operations.write.api import write_deltalake

    write_deltalake(str(src), pa.table({"id": pa.array(range(20), pa.int64()), "v": [str(i) for i in range(20)]}),
                    mode="append")
    DeltaTable(str(src)).delete("id % 3 = 0")  # deletion vectors
    dst = tmp_path / "dst"
    run_now(stream(spark, src), dst, tmp_path / "ck")  # initial snapshot: DVs applied, logical names
    want = helpers.duckdb_table(str(src))  # deltalake 1.6.6 reads neither DVs nor column mapping
    assert want.num_rows == 13
    helpers.assert_same_rows(helpers.deltalake_table(str(dst)).select(["id", "v"]), want.select(["id", "v"]))


# ----------------------------------------------------------------------------- sink
def test_replayed_batch_is_committed_once(spark, tmp_path):
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    for i in range(3):
        append(src, range(i * 10, i * 10 + 4))
    run_now(stream(spark, src, maxFilesPerTrigger=1), dst, ck)
    n_commits = len(streaming_commits(dst))
    files_before = {p.name for p in dst.rglob("*.parquet")}
    # a crash after the Delta commit but before Spark recorded the batch: Spark runs the last batch again
    forget_last_batch(ck)
    q = run_now(stream(spark, src, maxFilesPerTrigger=1), dst, ck)
    assert q.exception() is None
    assert len(streaming_commits(dst)) == n_commits  # skipped: txn version already >= batch id
    assert_exactly_once(src, dst)
    assert {p.name for p in dst.rglob("*.parquet")} == files_before  # the replay's files were deleted


def test_complete_mode_overwrites(spark, tmp_path):
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    append(src, range(10))
    agg = stream(spark, src).groupBy("p").agg(F.count("*").alias("n"))
    run_now(agg, dst, ck, mode="complete")
    append(src, range(10, 13))
    run_now(stream(spark, src).groupBy("p").agg(F.count("*").alias("n")), dst, ck, mode="complete")
    got = {r["p"]: r["n"] for r in helpers.deltalake_table(str(dst)).to_pylist()}
    assert got == {"a": 7, "b": 6}
    params = streaming_commits(dst)[-1]["operationParameters"]
    assert params["outputMode"] == "Complete" and int(streaming_commits(dst)[-1]["operationMetrics"]["numRemovedFiles"]) > 0


def test_partition_by_merge_schema_and_failures(spark, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    append(src, range(6))
    q = (stream(spark, src).writeStream.format("delta").partitionBy("p")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start(str(dst)))
    q.awaitTermination(timeout=300)
    assert deltalake.DeltaTable(str(dst)).metadata().partition_columns == ["p"]
    assert {p.name for p in dst.iterdir() if p.is_dir()} == {"_delta_log", "p=a", "p=b"}
    version = DeltaTable(str(dst)).version()

    wider = stream(spark, src).withColumn("extra", F.lit("e"))
    q = run_now(wider, dst, tmp_path / "ck2")  # a new column without mergeSchema: the query fails
    assert q.exception() is not None and "extra" in str(q.exception())
    with pytest.raises(Exception):
        q.awaitTermination()
    assert DeltaTable(str(dst)).version() == version  # nothing committed
    run_now(wider, dst, tmp_path / "ck3", options={"mergeSchema": "true"})
    assert "extra" in helpers.deltalake_table(str(dst)).column_names


def test_constraint_violation_surfaces(spark, tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    append(src, range(5))
    DeltaTable.create(str(dst), pa.schema([("id", pa.int64()), ("p", pa.string())]))
    DeltaTable(str(dst)).alter.add_constraint({"small_id": "id < 3"})
    version = DeltaTable(str(dst)).version()
    q = run_now(stream(spark, src), dst, tmp_path / "ck")
    assert q.exception() is not None and "small_id" in str(q.exception())
    assert DeltaTable(str(dst)).version() == version
    assert not list(dst.rglob("*.parquet"))  # the failed batch's files were aborted


def test_to_table_and_read_table(spark, tmp_path):
    src = tmp_path / "src"
    append(src, range(4))
    name = "stream_sink_tbl"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    try:
        q = (stream(spark, src).writeStream.format("delta").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).toTable(name))
        q.awaitTermination(timeout=300)
        assert sorted(r["id"] for r in spark.table(name).collect()) == [0, 1, 2, 3]
        q = (spark.readStream.table(name).writeStream.format("memory").queryName("from_tbl")
             .trigger(availableNow=True).start())
        q.awaitTermination(timeout=300)
        assert spark.sql("select count(*) c from from_tbl").collect()[0]["c"] == 4
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_foreach_batch_with_txn_options_is_idempotent(spark, tmp_path):
    """foreachBatch + txnAppId/txnVersion: the documented way to MERGE (or anything) from a stream."""
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    append(src, range(6))
    append(src, range(3, 9))  # ids 3..5 again: the MERGE upserts them
    spark.range(0).selectExpr("id", "'z' as p").write.format("delta").save(str(dst))

    def upsert(batch_df, batch_id):
        source = batch_df.dropDuplicates(["id"]).toArrow()
        (DeltaTable(str(dst)).merge(source, "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
        batch_df.write.format("delta").mode("append").option("txnAppId", "audit").option("txnVersion", batch_id) \
            .save(str(dst) + "_audit")

    def run():
        q = (stream(spark, src, maxFilesPerTrigger=1).writeStream.foreachBatch(upsert)
             .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
        q.awaitTermination(timeout=300)
        assert q.exception() is None

    run()
    assert ids_of(dst) == list(range(9))
    audit = Counter(ids_of(str(dst) + "_audit"))
    forget_last_batch(ck)  # replay the last batch
    run()
    assert ids_of(dst) == list(range(9))  # MERGE is idempotent by itself
    assert Counter(ids_of(str(dst) + "_audit")) == audit  # the append is skipped by its txn version


# ----------------------------------------------------------------------------- a killed driver
_JOB = r"""
import os, sys
sys.path.insert(0, {src!r})
from pyspark.sql import SparkSession
import deltakernel.spark as dks
spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
dks.enable(spark)
q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load({source!r})
     .writeStream.format("delta").option("checkpointLocation", {ck!r})
     .trigger(processingTime="100 milliseconds").start({dst!r}))
q.awaitTermination()
"""


@pytest.fixture(scope="module")
def killed_stream(tmp_path_factory) -> Path:
    """A streaming job's source, sink and checkpoint as its killed driver left them. The driver is a classic one
    of its own whatever the session kind, so it runs (and is killed) once; each kind restarts from a copy."""
    base = tmp_path_factory.mktemp("killed_stream")
    src, dst, ck = base / "src", base / "dst", base / "ck"
    for i in range(12):
        append(src, range(i * 100, i * 100 + 50))
    script = base / "job.py"
    script.write_text(_JOB.format(src=str(Path(__file__).resolve().parents[2] / "src"), source=str(src),
                                  ck=str(ck), dst=str(dst)))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)  # the killed job is a classic driver of its own (either kind)
    proc = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while time.time() < deadline:  # wait until a few batches landed, then kill the driver mid-stream
            log = dst / "_delta_log"
            if log.exists() and len(list(log.glob("*.json"))) >= 3:
                break
            assert proc.poll() is None, "the streaming job died on its own"
            time.sleep(0.05)
        else:
            pytest.fail("the streaming job made no progress")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return base


@pytest.mark.slow
def test_sigkill_mid_stream_then_restart(spark, killed_stream, tmp_path):
    src, dst, ck = tmp_path / "src", tmp_path / "dst", tmp_path / "ck"
    for name in ("src", "dst", "ck"):  # byte for byte: offsets name the table id, not its path
        shutil.copytree(killed_stream / name, tmp_path / name)
    committed = DeltaTable(str(dst)).version()
    assert committed < 12  # killed before the end
    append(src, range(5000, 5010))  # and more data arrives while it is down
    q = run_now(stream(spark, src, maxFilesPerTrigger=4), dst, ck)
    assert q.exception() is None
    assert_exactly_once(src, dst)
    epochs = [int(c["operationParameters"]["epochId"]) for c in streaming_commits(dst)]
    assert epochs == sorted(set(epochs)) == list(range(len(epochs)))  # one commit per batch, none twice
