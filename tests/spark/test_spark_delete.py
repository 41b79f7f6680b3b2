"""Spark (through deltakernel.spark) reads what DeltaTable.delete leaves: deletion vectors and rewrites."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.operations.write.api import write_deltalake


@pytest.mark.parametrize("conf", [{"delta.enableDeletionVectors": "true"}, {}], ids=["dv", "cow"])
def test_spark_reads_rows_left_by_delete(spark, tmp_path, conf):
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": [("a" if i % 2 else "b") for i in range(40)]})
    write_deltalake(path, data.slice(0, 20), partition_by=["p"], configuration=conf)
    write_deltalake(path, data.slice(20), mode="append")
    dt = DeltaTable(str(path))
    dt.delete("id % 3 = 0")
    dt.delete("id > 30 and p = 'a'")
    expected = sorted(i for i in range(40) if i % 3 and not (i > 30 and i % 2))
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("id").to_pylist()) == expected
    df = spark.read.format("delta").load(str(path))
    assert sorted(r["id"] for r in df.collect()) == expected
    assert df.filter("p = 'a'").count() == sum(1 for i in expected if i % 2)
