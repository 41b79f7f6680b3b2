"""Spark reads of Delta tables: Spark's own Parquet scan of the files the kernel keeps (no JVM Delta jars).

- `reader.py`       `format("delta").load` / `read(spark, path)`: snapshot -> the read plan of the session's kind
- `read_snapshot.py` snapshots for `versionAsOf` / `timestampAsOf`
- classic sessions: `relation.py` (HadoopFsRelation(DeltaFileIndex) + column mapping / DV / row-tracking plan),
  `file_index.py` (`DeltaFileIndex`: Spark's FileIndex in Python over py4j; listFiles prunes with the filters
  Spark pushed down), `catalyst.py` (pushed Catalyst filters -> kernel predicates), `jvm_files.py` (the listing
  built in one JVM call), `callbacks.py`
- Spark Connect: `connect_plan.py` (the Delta read as a lazy leaf of the client's plan; conditions pushed down to
  it when the plan is sent), `public_plan.py` (Spark's Parquet scan of exactly the kept files, public API only),
  `connect_filters.py` (Connect Columns -> SQL text -> kernel predicates), `hive_layout.py`
- both: `layout.py` (physical vs logical columns), `deleted_rows.py` (deletion vectors), `paths.py` (file URIs),
  `file_columns.py` (per-file values keyed by URI), `report.py` (files kept per Delta scan), `filesystems.py` (does
  Spark have a Hadoop filesystem for the scheme), `datasource.py` (the registered "delta" Python data source: the
  fallback read / write path and SQL `USING delta`)
"""
