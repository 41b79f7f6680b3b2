"""Spark (through deltakernel.spark) reads what DeltaTable.merge leaves: deletion vectors, rewrites, inserts
into partitions, row ids kept."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.operations.write.api import write_deltalake


@pytest.mark.parametrize("conf", [{"delta.enableDeletionVectors": "true"}, {}], ids=["dv", "cow"])
def test_spark_reads_rows_left_by_merge(spark, tmp_path, conf):
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": [("a" if i % 2 else "b") for i in range(40)],
                     "v": pa.array([0] * 40, pa.int64())})
    write_deltalake(path, data.slice(0, 20), partition_by=["p"], configuration=conf)
    write_deltalake(path, data.slice(20), mode="append")
    src = pa.table({"id": pa.array([3, 4, 5, 50, 51], pa.int64()), "p": ["a", "a", "b", "a", "b"],
                    "v": pa.array([1, 2, 3, 4, 5], pa.int64())})
    (DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete("s.v = 3").when_matched_update_all().when_not_matched_insert_all().execute())
    expected = {i: ("a" if i % 2 else "b", 0) for i in range(40) if i != 5}
    expected.update({3: ("a", 1), 4: ("a", 2), 50: ("a", 4), 51: ("b", 5)})
    ours = {r["id"]: (r["p"], r["v"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}
    assert ours == expected
    df = spark.read.format("delta").load(str(path))
    assert {r["id"]: (r["p"], r["v"]) for r in df.collect()} == expected
    assert df.filter("p = 'a'").count() == sum(1 for p, _ in expected.values() if p == "a")
