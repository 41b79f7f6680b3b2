"""Spark reads of a table whose rewritten files carry materialized row-tracking columns: never shown."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from deltakernel import DeltaTable
from deltakernel.operations.write.api import write_deltalake


def test_materialized_columns_hidden_from_spark(spark, tmp_path):
    path = tmp_path / "t"
    data = pa.table({"x": pa.array(range(6), pa.int64()), "y": [f"v{i}" for i in range(6)]})
    write_deltalake(path, data, configuration={"delta.enableRowTracking": "true"})
    write_deltalake(path, pa.table({"x": pa.array([2], pa.int64()), "y": ["n2"]}), mode="overwrite",
                    predicate="x = 2")
    dt = DeltaTable(str(path))
    conf = dt.metadata().configuration
    hidden = {conf["delta.rowTracking.materializedRowIdColumnName"],
              conf["delta.rowTracking.materializedRowCommitVersionColumnName"]}
    assert any(hidden <= set(pq.read_schema(path / p).names) for p in dt.files())  # precondition
    df = spark.read.format("delta").load(str(path))
    assert df.columns == ["x", "y"]
    got = sorted((r["x"], r["y"]) for r in df.collect())
    assert got == sorted((x, "n2" if x == 2 else f"v{x}") for x in range(6))
