"""Spark Connect specifics: client-side file skipping of the public-API read plan (files kept = what the kernel
keeps, rows = a skipping-free read), Connect Column conditions as kernel predicates, deletion vectors, and one
end-to-end pipeline from a separate client process against a Spark Connect server started from pip pyspark.

(The rest of the Spark suite runs on both session kinds through the `spark` fixture.)"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

import deltakernel.spark as dks
from deltakernel import DeltaTable, sqleval, write_deltalake
from deltakernel.kernel.expressions import sql as ksql
from deltakernel.kernel.scan.scan import Scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

ROOT = Path(__file__).resolve().parents[2]
FILES, ROWS = 12, 25


@pytest.fixture
def cspark(connect_spark, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")  # pyspark.functions build Connect Columns
    return connect_spark


@pytest.fixture(scope="module")
def sorted_table(tmp_path_factory):
    """FILES files of ROWS ids each, ids sorted across files, a date and a partition column."""
    path = str(tmp_path_factory.mktemp("connect_skip") / "t")
    for i in range(FILES):
        ids = list(range(i * ROWS, (i + 1) * ROWS))
        write_deltalake(path, pa.table({
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i)] * ROWS, pa.date32()),
            "name": pa.array([f"n{x:05d}" for x in ids]),
            "n": pa.array([None if x % 7 == 0 else x for x in ids], pa.int64()),
            "part": pa.array([f"p{i % 3}"] * ROWS),
        }), mode="append", partition_by=["part"])
    return path


def skipped(df) -> int:
    """Files the Delta scans of `df`'s plan skip (`scan_report`: the plan Spark is sent)."""
    return sum(r.files_total - r.files_kept for r in dks.scan_report(df))


def _kept_by_kernel(path: str, condition: str) -> int:
    dtab = DeltaTable(path)
    pred = ksql.to_predicate(ksql.parse_sql(condition), dtab.snapshot.schema)
    assert pred is not None
    return Scan(dtab.snapshot, predicate=pred).plan().num_rows


CONDITIONS = [
    "id = 130",
    "id >= 290",
    "id IN (3, 204)",
    "day = DATE '2024-01-05'",
    "day BETWEEN DATE '2024-01-02' AND DATE '2024-01-03'",
    "part = 'p1' AND id < 100",
    "n IS NULL AND id < 30",
]


@pytest.mark.parametrize("condition", CONDITIONS)
def test_load_where_skips_files(cspark, sorted_table, condition):
    df = cspark.read.format("delta").load(sorted_table)
    assert isinstance(df, dks.DeltaFrame)
    got = df.where(condition)
    kept = _kept_by_kernel(sorted_table, condition)
    assert kept < FILES
    reports = dks.scan_report(got)
    assert [r.files_kept for r in reports] == [kept]
    assert reports[0].files_total == FILES
    oracle = DeltaTable(sorted_table).to_pyarrow_table()
    want = sqleval.evaluate(condition, oracle)
    helpers.assert_same_rows(got.toArrow(), oracle.filter(want), condition)


def test_column_conditions_skip_files(cspark, sorted_table):
    from pyspark.sql import functions as F

    df = cspark.read.format("delta").load(sorted_table)
    cases = {
        "id = 130": F.col("id") == 130,
        "id IN (3, 204)": F.col("id").isin(3, 204),
        "id >= 100 AND id <= 124": (F.col("id") >= 100) & (F.col("id") <= 124),
        "day = DATE '2024-01-05'": F.col("day") == F.lit(dt.date(2024, 1, 5)),
        "n IS NULL AND id < 30": F.col("n").isNull() & (F.col("id") < 30),
        "NOT (id >= 25)": ~(F.col("id") >= 25),
        "day >= DATE '2024-01-11'": F.col("day") >= F.lit(dt.date(2024, 1, 11)),
    }
    for text, column in cases.items():
        got = df.filter(column)
        assert skipped(got) == FILES - _kept_by_kernel(sorted_table, text), text
        assert skipped(got) > 0, text
        assert sorted(r.id for r in got.collect()) == sorted(r.id for r in df.where(text).collect()), text


def test_unsupported_condition_reads_everything_correctly(cspark, sorted_table):
    from pyspark.sql import functions as F

    df = cspark.read.format("delta").load(sorted_table)
    got = df.filter(F.abs(F.col("id") - 130) < 1)  # a function of a column: no kernel predicate
    assert skipped(got) == 0
    assert [r.id for r in got.collect()] == [130]
    both = got.where("id >= 100")  # re-planned with skipping: the earlier condition still applies
    assert skipped(both) > 0 and [r.id for r in both.collect()] == [130]
    chained = df.where("id >= 200").where("id < 210")
    assert skipped(chained) == FILES - 1
    assert sorted(r.id for r in chained.collect()) == list(range(200, 210))


def test_enable_lists_kept_files_on_the_driver(cspark):
    """Connect plans are analysed when they run: enable() keeps Spark from starting a listing job per analysis
    of a scan naming more than 32 files (the session's discovery threshold, unless the user set one)."""
    assert cspark.conf.get("spark.sql.sources.parallelPartitionDiscovery.threshold") == str(1 << 20)


def test_deletion_vectors_applied(cspark, tmp_path):
    path = str(tmp_path / "dv")
    write_deltalake(path, pa.table({"id": pa.array(range(100), pa.int64())}),
                    configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(path).delete("id % 10 = 3")
    assert DeltaTable(path).snapshot.files.column("deletion_vector").null_count == 0  # a DV, no rewrite
    got = cspark.read.format("delta").load(path)
    assert sorted(r.id for r in got.collect()) == [i for i in range(100) if i % 10 != 3]
    assert got.where("id < 5").count() == 4


# ----------------------------------------------------------------------------- a separate Connect server
_CLIENT = r"""
import json, sys
from pyspark.sql import SparkSession
import deltakernel.spark as dks
from deltakernel.spark import DeltaTable

url, path = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.remote(url).getOrCreate()
dks.enable(spark)
spark.range(0, 50).selectExpr("id", "id % 5 AS k", "'v0' AS v").write.format("delta").partitionBy("k").save(path)
src = spark.range(40, 60).selectExpr("id", "id % 5 AS k", "'v1' AS v")
(DeltaTable.forPath(spark, path).alias("t").merge(src.alias("s"), "t.id = s.id")
    .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
back = spark.read.format("delta").load(path)
rows = sorted((r.id, r.k, r.v) for r in back.collect())
point = back.where("id = 55")
hist = [r.operation for r in DeltaTable.forPath(spark, path).history().collect()]
print("@@" + json.dumps({"rows": rows, "point": [r.id for r in point.collect()],
                         "skipped": sum(r.files_total - r.files_kept for r in dks.scan_report(point)),
                         "history": hist, "kind": type(spark).__module__}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    pytest.importorskip("grpc")
    import pyspark

    home = Path(pyspark.__file__).parent
    port = _free_port()
    log = tmp_path_factory.mktemp("connect_server") / "server.log"
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable,
               PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--master", "local[2]", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
             "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
             "--conf", "spark.sql.shuffle.partitions=2", "--driver-memory", "1g", "spark-internal"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the Spark Connect server exited: {log.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail(f"the Spark Connect server did not listen in 120 s: {log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.own_jvm  # its own Connect server and client process (tests/conftest.py)
def test_separate_server_and_client_process(connect_server, tmp_path):
    """write, MERGE, read back (with skipping), history - from a client process that has no JVM."""
    path = str(tmp_path / "t")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    out = subprocess.run([sys.executable, "-c", _CLIENT, connect_server, path], capture_output=True, text=True,
                         timeout=600, env=env)
    line = next((x for x in out.stdout.splitlines() if x.startswith("@@")), None)
    assert line is not None, out.stderr[-4000:]
    got = json.loads(line[2:])
    assert got["kind"].startswith("pyspark.sql.connect")
    want = sorted([(i, i % 5, "v0") for i in range(40)] + [(i, i % 5, "v1") for i in range(40, 60)])
    assert [tuple(r) for r in got["rows"]] == want
    assert got["point"] == [55] and got["skipped"] > 0
    assert got["history"][:2] == ["MERGE", "WRITE"]
    oracle = DeltaTable(path).to_pyarrow_table()  # the kernel reads what the server's Spark wrote
    assert sorted(zip(*[oracle.column(c).to_pylist() for c in ("id", "k", "v")])) == want


def test_files_ruled_out_are_never_touched(cspark, sorted_table, tmp_path):
    """With every file the predicate rules out removed from storage, the supported Connect shapes still answer
    right: nothing reads, lists or checks those files."""
    import shutil

    path = str(tmp_path / "copy")
    shutil.copytree(sorted_table, path)
    dtab = DeltaTable(path)
    kept = Scan(dtab.snapshot, predicate=ksql.to_predicate(ksql.parse_sql("id = 130"), dtab.snapshot.schema))
    keep = set(kept.plan().column("path").to_pylist())
    assert len(keep) == 1
    for p in dtab.snapshot.files.column("path").to_pylist():
        if p not in keep:
            os.remove(os.path.join(path, p))
    cspark.sql("CREATE DATABASE IF NOT EXISTS dkc_gone")
    cspark.sql("DROP TABLE IF EXISTS dkc_gone.t")
    cspark.sql(f"CREATE TABLE dkc_gone.t USING delta LOCATION '{path}'")
    try:
        shapes = {
            "load().where()": lambda: cspark.read.format("delta").load(path).where("id = 130"),
            "spark.table().where()": lambda: cspark.table("dkc_gone.t").where("id = 130"),
            "SQL over a path": lambda: cspark.sql(f"SELECT id, name FROM delta.`{path}` WHERE id = 130"),
            "SQL over a catalog name": lambda: cspark.sql("SELECT id FROM dkc_gone.t WHERE id = 130"),
        }
        for what, frame in shapes.items():
            assert [r.id for r in frame().collect()] == [130], what
    finally:
        cspark.sql("DROP TABLE IF EXISTS dkc_gone.t")
