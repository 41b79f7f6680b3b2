"""Spark reads of Delta tables: Spark's Parquet scan over a Delta file index (no JVM Delta jars).

- `relation.py`   the DataFrame: HadoopFsRelation(DeltaFileIndex) + column mapping / DV / row-tracking plan
- `file_index.py` `DeltaFileIndex`: Spark's FileIndex implemented in Python (py4j callback): listFiles prunes
                  the snapshot's files with the filters Spark pushed down
- `catalyst.py`   pushed Catalyst filters -> kernel predicates (sound, and exact where Spark needs it)
- `jvm_files.py`  the file listing (PartitionDirectory / FileStatus) built in one JVM call
- `paths.py`      log paths -> the URIs Spark reports as `_metadata.file_path`
- `report.py`     files kept per Delta scan of a query (explain, tests, benchmarks)
"""
