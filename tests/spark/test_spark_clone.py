"""Clones made by deltakernel read through the PySpark engine: a shallow clone (percent-encoded absolute add
paths into a source directory with URI-special characters, absolute 'p' deletion vectors, then a DV written in
the clone for a source file) and a deep clone return the rows deltakernel reads."""

from __future__ import annotations

import pyarrow as pa

from deltakernel import DeltaTable, write_deltalake


def _ids(df, where: str | None = None) -> list[int]:
    if where:
        df = df.where(where)
    return sorted(r["id"] for r in df.select("id").collect())


def test_spark_reads_shallow_and_deep_clones(spark, tmp_path):
    src = tmp_path / "src dir %x"
    data = pa.table({"id": pa.array(range(30), pa.int64()), "p": [f"v {i % 3}" for i in range(30)]})
    write_deltalake(str(src), data, partition_by=["p"], configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(str(src)).delete("id = 4 OR id = 5")
    shallow = DeltaTable(str(src)).clone(str(tmp_path / "shallow"))
    DeltaTable(shallow.table_uri).delete("id = 9")  # a DV in the clone on a source data file
    deep = DeltaTable(str(src)).clone(str(tmp_path / "deep"), shallow=False)
    for table in (shallow.table_uri, deep.table_uri):
        expected = sorted(DeltaTable(table).to_pyarrow_table().column("id").to_pylist())
        assert len(expected) == (27 if table == shallow.table_uri else 28)
        df = spark.read.format("delta").load(table)
        assert _ids(df) == expected
        assert _ids(df, "p = 'v 1'") == [i for i in expected if i % 3 == 1]
