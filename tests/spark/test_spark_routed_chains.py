"""Conditions chained after a frame the Delta SQL router made choose files on both session kinds (issue 31 item 1:
`spark.table(permanent view)` over a Delta catalog table, `spark.read.table(view)`, and frames of `spark.sql(...)`
over Delta relations filtered with the DataFrame API; on Connect through `connect_plan.RoutedQuery`).

One table (12 files, ids sorted across files, 4 partitions), a catalog table over it, a permanent view and a
temporary view made by SQL over that. Each shape is read once before the files its conditions rule out are deleted
from storage (a file named to Spark that the query does not need then fails it with PATH_NOT_FOUND /
FILE_NOT_EXIST), then again: one file kept per Delta scan (`scan_report`) and the rows of the first read. (Read
before the deletion also because on Connect the first statement of a shape is analysed eagerly with its own,
unfiltered scans, which name every file: docs/decisions.md, "Conditions chained after routed SQL frames".)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import deltakernel.spark as dks
from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.expressions import sql as ksql
from deltakernel.kernel.scan.scan import Scan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import skipping_file

FILES, ROWS = 12, 10
NEED = "id >= 60 AND id < 70"  # file 6 (partition p2): what every shape below needs
DB = "dkc_routed"
VIEW, TEMP = f"{DB}.v", "dkc_routed_tv"


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("routed_chains") / "t")
    for i in range(FILES):
        write_deltalake(path, skipping_file(i, ROWS), mode="append", partition_by=["part"])
    return path


SHAPES = [
    # (name, build(spark, path)): every one needs the rows of file 6 only
    ("spark.table(view).where", lambda spark, path: spark.table(VIEW).where("id = 64")),
    ("spark.table(view).select().where",
     lambda spark, path: spark.table(VIEW).select("id", "s").where("id = 64")),
    ("spark.read.table(view).filter(column)",
     lambda spark, path: spark.read.table(VIEW).filter(F.col("id") == 64)),
    ("spark.table(view).withColumn().where", lambda spark, path: spark.table(VIEW)
     .withColumn("x", F.col("id") * 2).where(F.col("id").between(61, 63))),
    ("spark.table(view).select(alias).where", lambda spark, path: spark.table(VIEW)
     .select(F.col("id").alias("key"), "s").where("key IN (60, 69)")),
    ("sql(path).where", lambda spark, path: spark.sql(f"SELECT * FROM delta.`{path}`").where("id = 64")),
    ("sql(catalog name).where", lambda spark, path: spark.sql(f"SELECT id, s FROM {DB}.t WHERE part = 'p2'")
     .where(F.col("id") < 70).where("id >= 60")),
    ("sql(view).where", lambda spark, path: spark.sql(f"SELECT id, part FROM {VIEW}").where("part = 'p2' AND "
                                                                                          "id BETWEEN 60 AND 69")),
    ("spark.table(temporary view made by SQL).where", lambda spark, path: spark.table(TEMP).where("id = 66")),
]
#: read by Spark's own copy of the view on Connect: its Delta table through the Python data source, which plans with
#: the filters Spark pushes to it - no Parquet scan `scan_report` sees; the rows after the deletion show it skips
SPARKS_OWN_COPY = {"spark.table(temporary view made by SQL).where"}


def test_conditions_chained_after_routed_frames_choose_files(spark, source, tmp_path):
    path = str(tmp_path / "t")
    shutil.copytree(source, path)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    spark.sql(f"DROP TABLE IF EXISTS {DB}.t")
    spark.sql(f"CREATE TABLE {DB}.t USING delta LOCATION '{path}'")
    spark.sql(f"CREATE OR REPLACE VIEW {VIEW} AS SELECT id, s, part FROM {DB}.t WHERE id >= 5")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {TEMP} AS SELECT id, s FROM {DB}.t")
    try:
        before = {name: sorted(map(tuple, build(spark, path).collect())) for name, build in SHAPES}
        snap = DeltaTable(path).snapshot
        keep = set(Scan(snap, predicate=ksql.to_predicate(ksql.parse_sql(NEED), snap.schema)).plan()
                   .column("path").to_pylist())
        assert len(keep) == 1
        for p in set(snap.files.column("path").to_pylist()) - keep:
            Path(path, p).unlink()
        for name, build in SHAPES:
            df = build(spark, path)
            reports = [(r.files_kept, r.files_total) for r in dks.scan_report(df)]
            if not (name in SPARKS_OWN_COPY and not reports):  # Connect: the Python source (the rows show it skips)
                assert reports == [(1, FILES)], name
            assert sorted(map(tuple, df.collect())) == before[name], name
            assert before[name], name
        # the proof device: a chained condition that needs a deleted file fails the query
        with pytest.raises(Exception, match="PATH_NOT_FOUND|FILE_NOT_EXIST|FileNotFound|does not exist"):
            spark.table(VIEW).where("id < 20").collect()
    finally:
        spark.catalog.dropTempView(TEMP)
        spark.sql(f"DROP VIEW IF EXISTS {VIEW}")
        spark.sql(f"DROP TABLE IF EXISTS {DB}.t")


def test_conditions_that_may_not_reach_the_tables_answer_right(spark, source):
    """Chained conditions are carried into the statement only where the SQL analysis places them: not below a
    LIMIT or an aggregate's result, not by a function the kernel does not read exactly - the rows stay right."""
    t = f"delta.`{source}`"
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {t} ORDER BY id LIMIT 30").where("id >= 25")
                  .collect()) == [25, 26, 27, 28, 29]
    grouped = spark.sql(f"SELECT part, max(id) AS id FROM {t} GROUP BY part").where(F.col("id") < 100)
    assert sorted(map(tuple, grouped.collect())) == [("p0", 89), ("p1", 99)]
    assert [r.id for r in spark.sql(f"SELECT id, s FROM {t}").where("upper(s) = 'K000064'").collect()] == [64]
