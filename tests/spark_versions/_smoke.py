"""A short Delta round trip on one pyspark release, classic and Spark Connect: `test_pyspark_minors.py` runs it
with the interpreter of a venv holding the newest patch of each pyspark 4.x minor (deltakernel from the tree
under test on PYTHONPATH). Each step asserts its rows; the filter step deletes the file the filter rules out, so
a read that names it to Spark fails. Prints one `ok <kind> <step>` line per step; exits non-zero on the first
failure. Usage: `python _smoke.py <scratch dir>`.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ids(df) -> list[int]:
    return sorted(int(r["id"]) for r in df.collect())


def _first_commit_files(path: str) -> list[Path]:
    log = Path(path) / "_delta_log" / f"{0:020d}.json"
    adds = [json.loads(line)["add"] for line in log.read_text().splitlines() if '"add"' in line]
    return [Path(path) / a["path"] for a in adds]


def round_trip(spark, kind: str, root: Path) -> None:
    import deltakernel.spark as dks
    from deltakernel.spark import DeltaTable

    def ok(step: str) -> None:
        print(f"ok {kind} {step}", flush=True)

    p = str(root / f"{kind}_t")
    spark.range(0, 50).selectExpr("id", "cast(id as string) as s").repartition(1) \
        .write.format("delta").save(p)
    spark.range(100, 150).selectExpr("id", "cast(id as string) as s").repartition(1) \
        .write.format("delta").mode("append").save(p)
    ok("write+append")

    df = spark.read.format("delta").load(p)
    assert isinstance(df, dks.DeltaFrame), type(df)
    assert df.count() == 100
    assert _ids(spark.read.format("delta").option("versionAsOf", 0).load(p)) == list(range(50))
    ok("read+time travel")

    assert _ids(spark.sql(f"SELECT id FROM delta.`{p}` WHERE id < 3")) == [0, 1, 2]
    assert _ids(spark.sql(f"SELECT id FROM delta.`{p}` VERSION AS OF 0 WHERE id >= 45")) == list(range(45, 50))
    ok("sql over a path")

    spark.sql(f"DELETE FROM delta.`{p}` WHERE id % 10 = 0")
    assert spark.read.format("delta").load(p).count() == 90
    DeltaTable.forPath(spark, p).delete("id = 1")
    assert spark.read.format("delta").load(p).count() == 89
    ok("delete")

    spark.sql(f"MERGE INTO delta.`{p}` t USING (SELECT id, 'm' AS s FROM range(0, 200, 25)) u ON t.id = u.id "
              "WHEN MATCHED THEN UPDATE SET t.s = u.s WHEN NOT MATCHED THEN INSERT (id, s) VALUES (u.id, u.s)")
    rows = {int(r["id"]): r["s"] for r in spark.read.format("delta").load(p).collect()}
    before = {i for i in [*range(50), *range(100, 150)] if i % 10 and i != 1}
    assert set(rows) == before | set(range(0, 200, 25)), sorted(rows)
    assert all(rows[i] == "m" for i in range(0, 200, 25)), rows
    assert rows[2] == "2" and rows[149] == "149"
    ok("merge")

    # skipping: two files (ids 0-49, 100-149); the first is deleted from storage, so only a read that skips it
    # works
    q = str(root / f"{kind}_skip")
    spark.range(0, 50).repartition(1).write.format("delta").save(q)
    spark.range(100, 150).repartition(1).write.format("delta").mode("append").save(q)
    for f in _first_commit_files(q):
        f.unlink()
    assert _ids(spark.read.format("delta").load(q).where("id >= 140")) == list(range(140, 150))
    assert _ids(spark.sql(f"SELECT id FROM delta.`{q}` WHERE id = 120")) == [120]
    ok("filter skips")


def main() -> int:
    root = Path(sys.argv[1])
    root.mkdir(parents=True, exist_ok=True)
    import pyspark
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    print(f"pyspark {pyspark.__version__} python {sys.version.split()[0]}", flush=True)
    port = _free_port()
    spark = (SparkSession.builder.master("local[1]").appName("pyspark-minor-smoke")
             .config("spark.sql.shuffle.partitions", "1").config("spark.default.parallelism", "1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.session.timeZone", "UTC")
             # a short-lived JVM: the C1 compiler only, the serial GC (about half the CPU time of the defaults here)
             .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
             .config("spark.connect.grpc.binding.address", "127.0.0.1")
             .config("spark.connect.grpc.binding.port", str(port))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        dks.enable(spark)
        round_trip(spark, "classic", root)

        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        remote = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"  # pyspark's functions build Connect columns
        try:
            remote.conf.set("spark.sql.shuffle.partitions", "1")
            dks.enable(remote)
            round_trip(remote, "connect", root)
        finally:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
            remote.client.close()
    finally:
        spark.stop()
    print("smoke passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
