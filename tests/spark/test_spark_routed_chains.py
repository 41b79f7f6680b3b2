"""Conditions chained after a frame the Delta SQL router made choose files on both session kinds (issue 31 item 1:
`spark.table(permanent view)` over a Delta catalog table, `spark.read.table(view)`, `spark.table(temporary view
made by SQL)`, and frames of `spark.sql(...)` over Delta relations filtered with the DataFrame API; on Connect
through `connect_plan.RoutedQuery`).

One table (12 files, ids sorted across files, 4 partitions), a catalog table over it, a permanent view and a
temporary view made by SQL over that. The files every shape's conditions rule out are deleted from storage before
anything reads the table (a file named to Spark that the query does not need then fails it with PATH_NOT_FOUND /
FILE_NOT_EXIST): so the first `spark.sql(...)` / `spark.table(view)` of each statement shape - which Spark Connect
analyses eagerly, its scans read through the Python source (`connect_plan.analysis_scans`) - names no data file
either. Each shape is then read twice (the second time a statement of an analysed shape, sent unsent): one file
kept per Delta scan (`scan_report`) and the rows the shape should answer.
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



def _rows(ids, *columns):
    """The rows of `ids` with `columns` of the table (`skipping_file`'s values) and `x` = id * 2."""
    value = {"id": lambda i: i, "s": lambda i: f"k{i:06d}", "part": lambda i: f"p{i // ROWS % 4}",
             "x": lambda i: i * 2}
    return [tuple(value[c](i) for c in columns) for i in ids]


SHAPES = [
    # (name, build(spark, path), the rows it answers or None: file 6's `id = 64` row, all columns): every one needs
    # the rows of file 6 only
    ("spark.table(view).where", lambda spark, path: spark.table(VIEW).where("id = 64"), _rows([64], "id", "s", "part")),
    ("spark.table(view).select().where",
     lambda spark, path: spark.table(VIEW).select("id", "s").where("id = 64"), _rows([64], "id", "s")),
    ("spark.read.table(view).filter(column)",
     lambda spark, path: spark.read.table(VIEW).filter(F.col("id") == 64), _rows([64], "id", "s", "part")),
    ("spark.table(view).withColumn().where", lambda spark, path: spark.table(VIEW)
     .withColumn("x", F.col("id") * 2).where(F.col("id").between(61, 63)), _rows([61, 62, 63], "id", "s", "part", "x")),
    ("spark.table(view).select(alias).where", lambda spark, path: spark.table(VIEW)
     .select(F.col("id").alias("key"), "s").where("key IN (60, 69)"), _rows([60, 69], "id", "s")),
    ("sql(path).where", lambda spark, path: spark.sql(f"SELECT * FROM delta.`{path}`").where("id = 64"), None),
    ("sql(catalog name).where", lambda spark, path: spark.sql(f"SELECT id, s FROM {DB}.t WHERE part = 'p2'")
     .where(F.col("id") < 70).where("id >= 60"), _rows(range(60, 70), "id", "s")),
    ("sql(view).where", lambda spark, path: spark.sql(f"SELECT id, part FROM {VIEW}").where("part = 'p2' AND "
                                                                                          "id BETWEEN 60 AND 69"),
     _rows(range(60, 70), "id", "part")),
    ("spark.table(temporary view made by SQL).where", lambda spark, path: spark.table(TEMP).where("id = 66"),
     _rows([66], "id", "s")),
]


def test_conditions_chained_after_routed_frames_choose_files(spark, source, tmp_path):
    path = str(tmp_path / "t")  # a new table: no statement over it analysed before in the session
    shutil.copytree(source, path)
    snap = DeltaTable(path).snapshot
    keep = set(Scan(snap, predicate=ksql.to_predicate(ksql.parse_sql(NEED), snap.schema)).plan()
               .column("path").to_pylist())
    assert len(keep) == 1
    for p in set(snap.files.column("path").to_pylist()) - keep:
        Path(path, p).unlink()
    whole_row = sorted(map(tuple, spark.createDataFrame(skipping_file(6, ROWS)).where("id = 64").collect()))
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DB}")
    spark.sql(f"DROP TABLE IF EXISTS {DB}.t")
    spark.sql(f"CREATE TABLE {DB}.t USING delta LOCATION '{path}'")
    spark.sql(f"CREATE OR REPLACE VIEW {VIEW} AS SELECT id, s, part FROM {DB}.t WHERE id >= 5")
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {TEMP} AS SELECT id, s FROM {DB}.t")
    try:
        for read in ("first", "again"):
            for name, build, rows in SHAPES:
                df = build(spark, path)  # "first": the first statement of its shape over this table
                assert [(r.files_kept, r.files_total) for r in dks.scan_report(df)] == [(1, FILES)], (name, read)
                assert sorted(map(tuple, df.collect())) == (rows or whole_row), (name, read)
        assert whole_row
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
