"""A streaming bronze -> silver step on local Spark with deltakernel (no Delta jars).

1. bronze: raw click events land in a Delta table, a small batch at a time (any writer: here deltakernel's
   `write_deltalake`, as an ingestion service would);
2. silver: a Structured Streaming query reads bronze as a Delta stream (`readStream.format("delta")`), drops
   malformed events, types the columns and appends to a silver table partitioned by day
   (`writeStream.format("delta")`: one Delta commit per micro-batch, exactly once thanks to the `txn` action
   keyed by the query id). It runs with `Trigger.AvailableNow` - start it whenever, it processes what is new
   since its checkpoint and stops - so the same script is a scheduled incremental job;
3. gold: per-user totals kept up to date from the same stream with `foreachBatch` + MERGE (the way to MERGE
   from a stream), made idempotent across replays by the batch id.
Running it again with the same --out continues where it stopped: nothing is read or written twice.

Usage: python examples/streaming_bronze_silver.py [--out DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time


def spark_session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark

    spark = (SparkSession.builder.master("local[2]").appName("deltakernel-streaming-example")
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return deltakernel.spark.enable(spark)


def land_raw_events(bronze: str, n: int, seed: int) -> None:
    """Bronze: raw JSON-ish strings as they arrive, a few of them malformed."""
    import pyarrow as pa

    from deltakernel import write_deltalake

    rnd = random.Random(seed)
    now = int(time.time())
    users = [f"u{rnd.randrange(20):02d}" for _ in range(n)]
    amounts = [str(round(rnd.uniform(1, 100), 2)) if rnd.random() > 0.05 else "n/a" for _ in range(n)]
    stamps = [str(now - rnd.randrange(3 * 86400)) for _ in range(n)]
    write_deltalake(bronze, pa.table({"user": users, "amount": amounts, "epoch": stamps}), mode="append")


def silver_query(spark, bronze: str, silver: str, checkpoint: str):
    from pyspark.sql import functions as F

    events = spark.readStream.format("delta").option("maxFilesPerTrigger", 10).load(bronze)
    clean = (events
             .withColumn("amount", F.col("amount").try_cast("double"))
             .where(F.col("amount").isNotNull())
             .withColumn("ts", F.timestamp_seconds(F.col("epoch").try_cast("long")))
             .withColumn("day", F.to_date("ts"))
             .select("user", "amount", "ts", "day"))
    return (clean.writeStream.format("delta").partitionBy("day")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start(silver))


def gold_query(spark, silver: str, gold: str, checkpoint: str):
    """Per-user totals, upserted from silver's stream: foreachBatch + MERGE (idempotent per batch id)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    from deltakernel import DeltaTable, write_deltalake

    def upsert(batch_df, batch_id: int) -> None:
        totals = batch_df.groupBy("user").agg(F.sum("amount").alias("total"), F.count("*").alias("events"))
        source = totals.toArrow()
        if not DeltaTable.is_deltatable(gold):
            write_deltalake(gold, source.slice(0, 0).cast(pa.schema([("user", pa.string()), ("total", pa.float64()),
                                                                        ("events", pa.int64())])))
        target = DeltaTable(gold)
        if target.transaction_version("silver-to-gold") is not None and \
                target.transaction_version("silver-to-gold") >= batch_id:
            return  # this batch was merged before a crash: a replay must not add it twice
        from deltakernel import CommitProperties, Transaction

        (target.merge(source, "t.user = s.user", source_alias="s", target_alias="t",
                      commit_properties=CommitProperties(app_transactions=[Transaction("silver-to-gold", batch_id)]))
         .when_matched_update({"total": "t.total + s.total", "events": "t.events + s.events"})
         .when_not_matched_insert_all().execute())

    return (spark.readStream.format("delta").load(silver).writeStream.foreachBatch(upsert)
            .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="deltakernel-streaming-")
    bronze, silver, gold = (os.path.join(out, t) for t in ("bronze", "silver", "gold"))
    spark = spark_session()
    from deltakernel import DeltaTable

    for r in range(args.rounds):
        for k in range(3):  # events keep landing in bronze between runs of the job
            land_raw_events(bronze, 200, seed=r * 10 + k + int(time.time()))
        for q in (silver_query(spark, bronze, silver, os.path.join(out, "_checkpoints", "silver")),):
            q.awaitTermination()
            if q.exception():
                raise SystemExit(f"silver query failed: {q.exception()}")
        q = gold_query(spark, silver, gold, os.path.join(out, "_checkpoints", "gold"))
        q.awaitTermination()
        if q.exception():
            raise SystemExit(f"gold query failed: {q.exception()}")
        b, s = DeltaTable(bronze), DeltaTable(silver)
        g = DeltaTable(gold).to_pyarrow_table()
        print(f"round {r + 1}: bronze v{b.version()} {b.to_pyarrow_table().num_rows} rows -> silver v{s.version()} "
              f"{s.to_pyarrow_table().num_rows} rows (partitions {s.metadata().partition_columns}) -> gold "
              f"{g.num_rows} users, {sum(g.column('events').to_pylist())} events")
    last = next(h for h in DeltaTable(silver).history() if h["operation"] == "STREAMING UPDATE")
    print("silver's last commit:", last["operation"], last["operationParameters"], last["operationMetrics"])
    print(f"tables under {out}")
    spark.stop()


if __name__ == "__main__":
    main()
