"""Spark (through deltakernel.spark) reads what DeltaTable.update leaves: deletion vectors plus new files,
rewrites, rows moved between partitions, and the row ids / commit versions updated rows keep."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.operations.write.api import write_deltalake


@pytest.mark.parametrize("conf", [{"delta.enableDeletionVectors": "true"}, {}], ids=["dv", "cow"])
def test_spark_reads_rows_left_by_update(spark, tmp_path, conf):
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": [("a" if i % 2 else "b") for i in range(40)],
                     "v": pa.array([i * 10 for i in range(40)], pa.int64())})
    write_deltalake(path, data.slice(0, 20), partition_by=["p"],
                    configuration={**conf, "delta.enableRowTracking": "true"})
    write_deltalake(path, data.slice(20), mode="append")
    dt = DeltaTable(str(path))
    before = {r["id"]: r["_row_id"] for r in dt.to_pyarrow_table(row_tracking=True).to_pylist()}
    dt.update(updates={"v": "v + 1"}, predicate="id % 3 = 0")
    dt.update(new_values={"p": "c"}, predicate="id > 30 and p = 'a'")  # moves rows to partition c
    expected = sorted((i, "c" if i > 30 and i % 2 else ("a" if i % 2 else "b"), i * 10 + (i % 3 == 0))
                      for i in range(40))
    ours = DeltaTable(str(path)).to_pyarrow_table()
    assert sorted((r["id"], r["p"], r["v"]) for r in ours.to_pylist()) == expected
    df = spark.read.format("delta").load(str(path))
    assert sorted((r["id"], r["p"], r["v"]) for r in df.collect()) == expected
    assert df.filter("p = 'c'").count() == 5
    tracked = spark.read.format("delta").option("readRowTracking", "true").load(str(path))
    rows = {r["id"]: (r["_row_id"], r["_row_commit_version"]) for r in tracked.collect()}
    assert {k: v[0] for k, v in rows.items()} == before
    assert {k for k, v in rows.items() if v[1] == 3} == {i for i in range(31, 40, 2)}
    assert {k for k, v in rows.items() if v[1] == 2} == {i for i in range(0, 40, 3)} - set(range(31, 40, 2))
