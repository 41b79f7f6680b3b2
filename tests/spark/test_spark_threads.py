"""One session, several threads (issue 31, item 5): four threads count a Delta table - by path through
`load()` and through SQL over the path and over a catalog name - while a fifth appends to it through Spark.

Every count must be a whole number of appends (a snapshot is a committed version, never part of one), a thread's
counts never go back (a statement never reads an older version than one an earlier statement of the same thread
read, even when another thread's statement planned the table at the same time), and nothing fails or hangs
(each thread is bounded by an iteration count; the whole test by a generous join timeout that only a deadlock
would reach).
"""

from __future__ import annotations

import os
import threading
import uuid

ROWS_PER_APPEND = 7
APPENDS = 6
READS_PER_THREAD = 8
HANG_TIMEOUT_S = 600  # a deadlock guard, not a speed assertion


def test_four_readers_and_an_appender_share_a_session(spark, tmp_path):
    path = str(tmp_path / "events")
    name = f"threads_{uuid.uuid4().hex[:8]}"
    batch = spark.range(ROWS_PER_APPEND).selectExpr("id", "id * 2 AS v")
    batch.write.format("delta").save(path)
    spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{path}'")
    connect_mode = os.environ.get("SPARK_CONNECT_MODE_ENABLED")

    readers = [
        lambda: spark.read.format("delta").load(path).count(),
        lambda: spark.sql(f"SELECT count(*) AS n FROM delta.`{path}`").collect()[0][0],
        lambda: spark.sql(f"SELECT count(*) AS n FROM {name} WHERE v >= 0").collect()[0][0],
        lambda: spark.read.format("delta").load(path).where("v >= 0").count(),
    ]
    counts: dict[int, list[int]] = {i: [] for i in range(len(readers))}
    errors: list[BaseException] = []
    done = threading.Event()

    def read(i: int) -> None:
        try:
            for _ in range(READS_PER_THREAD):
                counts[i].append(int(readers[i]()))
                if done.is_set() and len(counts[i]) >= 2:
                    break
        except BaseException as e:
            errors.append(e)

    def append() -> None:
        try:
            for _ in range(APPENDS):
                batch.write.format("delta").mode("append").save(path)
        except BaseException as e:
            errors.append(e)
        finally:
            done.set()

    threads = [threading.Thread(target=append, name="appender")]
    threads += [threading.Thread(target=read, args=(i,), name=f"reader-{i}") for i in range(len(readers))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(HANG_TIMEOUT_S)
        hung = [t.name for t in threads if t.is_alive()]
        assert not hung, f"threads still running after {HANG_TIMEOUT_S} s: {hung}"
        assert not errors, errors
        final = (APPENDS + 1) * ROWS_PER_APPEND
        for i, seen in counts.items():
            assert seen, f"reader {i} counted nothing"
            assert all(c % ROWS_PER_APPEND == 0 and ROWS_PER_APPEND <= c <= final for c in seen), (i, seen)
            assert seen == sorted(seen), f"reader {i} went back: {seen}"
        # after the appender: every shape reads the last version
        assert [int(r()) for r in readers] == [final] * len(readers)
    finally:
        if connect_mode is not None:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = connect_mode
        spark.sql(f"DROP TABLE IF EXISTS {name}")
