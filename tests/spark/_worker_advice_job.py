"""Driver of `test_worker_advice.py`, run in a fresh interpreter whose PATH's `python3` cannot import deltakernel
and with no PYSPARK_PYTHON. Usage: `python _worker_advice_job.py <mode> <scratch dir> [<advice line>]`.

- `broken`: builds a local session the way the old advice said (`.config('spark.pyspark.python', sys.executable)`),
  reports `sc.pythonExec`, what `enable()` raises, and what a DELETE does when the check is skipped; then follows
  the message's in-process route (`spark.stop()`, the advice line from the message, the session again) and runs
  DELETE and a read.
- `advice`: runs the advice line (argv 3) verbatim first, then the session, `enable()`, DELETE and a read.
- `connect-broken` / `connect-advice`: the same over `remote("local[1]")` (a Connect server this process starts).

Prints one JSON object on its last line.
"""

from __future__ import annotations

import json
import os
import re
import sys


def advice_line(message: str) -> str:
    """The Python line the message says to run before the session starts (the backticked `import os...`)."""
    found = re.search(r"`(import os[^`]*PYSPARK_PYTHON[^`]*)`", message)
    assert found, message
    return found.group(1)


def _connect_session():
    from pyspark.sql import SparkSession

    return (SparkSession.builder.remote("local[1]").config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1").getOrCreate())


def _connect(mode: str, scratch: str) -> dict:
    """A local Spark Connect server started by the client (`remote("local[1]")`): its workers run the server
    JVM's PYSPARK_PYTHON, fixed when this process starts it."""
    from deltakernel.spark import enable
    from deltakernel.spark.install.python_workers import PythonWorkerError

    if mode == "connect-advice":
        exec(sys.argv[3], {})  # the advice, verbatim
    spark = _connect_session()
    out: dict = {}
    try:
        enable(spark)
        out["error"] = None
        out["ids"] = _delete_and_read(spark, f"{scratch}/connect")
    except PythonWorkerError as e:
        out["error"] = str(e)
    spark.stop()
    return out


def _session():
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[1]").appName("deltakernel-worker-advice")
            .config("spark.pyspark.python", sys.executable)  # the old advice: pyspark ignores it here
            .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "1").getOrCreate())


def _delete_and_read(spark, path: str) -> list[int]:
    """A DELETE writing deletion vectors (deltakernel code in Spark's Python workers) then a read of what is left."""
    spark.range(0, 10).repartition(1).write.format("delta").option("delta.enableDeletionVectors", "true") \
        .mode("overwrite").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 3 = 0")
    return sorted(int(r["id"]) for r in spark.read.format("delta").load(path).collect())


def _advised(scratch: str, line: str) -> dict:
    from deltakernel.spark import enable

    exec(line, {})  # the advice, verbatim
    spark = _session()
    enable(spark)
    out = {"python_exec": spark.sparkContext.pythonExec, "ids": _delete_and_read(spark, f"{scratch}/advised")}
    spark.stop()
    return out


def main() -> None:
    mode, scratch = sys.argv[1], sys.argv[2]
    from deltakernel.spark import enable
    from deltakernel.spark.install.python_workers import PythonWorkerError

    if mode.startswith("connect-"):
        print(json.dumps(_connect(mode, scratch)))
        return
    if mode == "advice":
        print(json.dumps(_advised(scratch, sys.argv[3])))
        return
    spark = _session()
    spark.sparkContext.setLogLevel("OFF")
    out: dict = {"python_exec": spark.sparkContext.pythonExec}
    try:
        enable(spark)
        out["error"] = None
    except PythonWorkerError as e:
        out["error"] = str(e)
    os.environ["DELTAKERNEL_SKIP_WORKER_CHECK"] = "1"
    try:
        enable(spark)
        out["unchecked_delete"] = _delete_and_read(spark, f"{scratch}/unchecked")
    except Exception as e:
        out["unchecked_delete"] = f"{type(e).__name__}: {str(e)[:2000]}"
    del os.environ["DELTAKERNEL_SKIP_WORKER_CHECK"]
    spark.stop()
    if out["error"]:  # the message's in-process route: stop, the advice line, the session again
        out["restarted"] = _advised(scratch, advice_line(out["error"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
