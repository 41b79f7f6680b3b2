"""deltakernel for PySpark: `format("delta")` reads and writes and delta-spark's `DeltaTable`, no JVM jars.

    import deltakernel.spark
    deltakernel.spark.enable(spark)            # once per session; idempotent, thread-safe
    df = spark.read.format("delta").option("versionAsOf", 3).load(path)
    df.write.format("delta").mode("overwrite").partitionBy("day").save(path)

After `enable()`, `spark.sql` also runs Delta SQL (MERGE / DELETE / UPDATE / INSERT, CREATE TABLE ... USING
delta, DESCRIBE HISTORY, OPTIMIZE, VACUUM, RESTORE, `SELECT ... FROM delta.`/path` VERSION AS OF n`, ...; see
`spark/sql/`), and Delta tables live in Spark's session catalog (`saveAsTable`, `spark.table`,
`DeltaTable.forName`; see `spark/catalog/tables.py`).

Reads are Spark's Parquet scan over a Delta file index that skips files with the query's pushed filters,
whatever the query's shape; `scan_report(df)` tells what each Delta scan of a query keeps (see `spark/scan/`).

`disable(spark)` undoes `enable(spark)`: the session is routed no more and its confs are put back; once no
enabled session remains, pyspark's classes are exactly as before (see `spark/install/registry.py`).

Without `enable()` the same is available as functions: `read(spark, path, **options)` and
`write(df, path, mode=..., partitionBy=..., **options)`. See docs/decisions.md ("PySpark engine").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .api.tables import DeltaTable, DeltaTableBuilder, IdentityGenerator
    from .install.registry import disable, enable
    from .scan.read_plans import scan_report
    from .scan.reader import DeltaFrame, read
    from .scan.report import ScanReport
    from .writing.writer import write

# loaded on first use: Spark's Python workers import submodules (the data sources, the executors' tasks)
# without paying for the whole engine (a streaming query starts a Python process for its source)
_LAZY = {"DeltaFrame": ".scan.reader", "read": ".scan.reader", "enable": ".install.registry",
         "disable": ".install.registry", "DeltaTable": ".api.tables", "DeltaTableBuilder": ".api.tables",
         "IdentityGenerator": ".api.tables", "write": ".writing.writer",
         "scan_report": ".scan.read_plans", "ScanReport": ".scan.report"}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

__all__ = ["DeltaFrame", "DeltaTable", "DeltaTableBuilder", "IdentityGenerator", "ScanReport",
           "disable", "enable", "read", "scan_report", "write"]
