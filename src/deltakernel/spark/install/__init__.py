"""`enable(spark)` / `disable(spark)`: what deltakernel changes in pyspark, in one place.

`registry.py` declares every patch once and applies / restores them under a lock; `state.py` holds what was
patched (a leaf: pyspark's originals are readable from anywhere below the engine); `routing.py` holds the
replacements that route `format("delta")`, `spark.sql`, `spark.table` and the catalog API through deltakernel;
`python_workers.py` checks that Spark's Python workers can import deltakernel (and says how to fix it)."""
