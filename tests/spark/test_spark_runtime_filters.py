"""Spark's dynamic partition pruning and runtime (bloom filter) filters on Delta scans (issue 32).

Both are Spark's own optimizations of a join: the selective side's join keys become a filter on the other side's
scan at run time. They apply to a Delta scan because the classic read is a `HadoopFsRelation` whose partition
values come from the Delta file index (and on Connect a Parquet scan with Spark's partition discovery). Each case
runs the join on real Spark and asserts the executed plan holds the runtime filter, the rows (against the same
join over in-memory copies of the tables, where neither filter exists) and, on classic, the files the fact scan
read (Spark's own "number of files read" metric).
"""

from __future__ import annotations

import io
from contextlib import contextmanager, redirect_stdout

import pyarrow as pa
import pytest

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake

PARTS, FILES_PER_PART, ROWS = 8, 2, 40


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """A fact table partitioned by `p` (PARTS partitions, FILES_PER_PART files each) and a small dimension."""
    root = tmp_path_factory.mktemp("runtime_filters")
    fact, dim = str(root / "fact"), str(root / "dim")
    for i in range(PARTS * FILES_PER_PART):
        ids = list(range(i * ROWS, (i + 1) * ROWS))
        write_deltalake(fact, pa.table({
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([x % 97 for x in ids], pa.int64()),
            "v": pa.array([float(x) for x in ids]),
            "p": pa.array([i % PARTS] * ROWS, pa.int64()),
        }), mode="append", partition_by=["p"])
    write_deltalake(dim, pa.table({
        "p": pa.array(list(range(PARTS)), pa.int64()),
        "k": pa.array([3, 5, 7, 11, 13, 17, 19, 23], pa.int64()),
        "name": pa.array(["a", "b", "c", "d", "e", "f", "g", "h"]),
    }))
    return fact, dim


@contextmanager
def confs(spark, **values):
    old = {k: spark.conf.get(k, None) for k in values}
    for k, v in values.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def plan_text(df) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain()
    return out.getvalue()


def oracle(spark, path):
    return spark.createDataFrame(DeltaTable(path).to_pyarrow_table())


def test_dynamic_partition_pruning(spark, tables):
    fact_path, dim_path = tables
    with confs(spark, **{"spark.sql.optimizer.dynamicPartitionPruning.enabled": "true",
                         "spark.sql.autoBroadcastJoinThreshold": str(10 * 1024 * 1024)}):
        fact = spark.read.format("delta").load(fact_path)
        dim = spark.read.format("delta").load(dim_path).where("name IN ('b', 'e')")
        df = fact.join(dim.select("p"), "p").groupBy("p").agg({"v": "sum", "*": "count"})
        rows = df.collect()
        plan = plan_text(df)
        expected = oracle(spark, fact_path).join(oracle(spark, dim_path).where("name IN ('b', 'e')").select("p"),
                                                  "p").groupBy("p").agg({"v": "sum", "*": "count"}).collect()
    assert sorted(map(tuple, rows)) == sorted(map(tuple, expected))
    assert sorted(r[0] for r in rows) == [1, 4]
    # the fact scan's partition filters hold Spark's dynamic pruning subquery
    scans = [line for line in plan.splitlines() if "PartitionFilters" in line and "dynamicpruning" in line.lower()]
    assert scans, plan
    if hasattr(spark, "_jsparkSession"):  # classic: the metric of the scan that ran
        reports = dks.scan_report(df, list_files=False)
        fact_reports = [r for r in reports if r.files_total == PARTS * FILES_PER_PART]
        assert [r.files_read for r in fact_reports] == [2 * FILES_PER_PART]


def test_runtime_bloom_filter(spark, tables):
    fact_path, dim_path = tables
    with confs(spark, **{"spark.sql.optimizer.runtime.bloomFilter.enabled": "true",
                         "spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold": "1",
                         "spark.sql.autoBroadcastJoinThreshold": "-1",
                         "spark.sql.adaptive.enabled": "false"}):
        fact = spark.read.format("delta").load(fact_path)
        dim = spark.read.format("delta").load(dim_path).where("name = 'c'")
        df = fact.join(dim.select("k"), "k").agg({"v": "sum", "*": "count"})
        rows = df.collect()
        plan = plan_text(df)
        expected = oracle(spark, fact_path).join(oracle(spark, dim_path).where("name = 'c'").select("k"),
                                                  "k").agg({"v": "sum", "*": "count"}).collect()
    assert [tuple(r) for r in rows] == [tuple(r) for r in expected]
    assert "might_contain" in plan, plan
