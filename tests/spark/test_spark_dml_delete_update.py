"""Spark `DeltaTable.delete` / `update` as distributed jobs, differential against the embedded engine.

Each case copies one starting table; Spark's DELETE/UPDATE runs on one copy, the embedded engine's
(`deltakernel.DeltaTable.delete/update`) on the other: same rows, same row counters and touched-file
counts, same history; deltalake, DuckDB and Spark read our result. Deletion vectors and copy-on-write,
partitioned or not, column mapping, change data feed, row tracking, constraints and generated columns,
bad input, a concurrent commit between planning and commit, and what the driver collects.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, dml_data, duckdb_table, make_dml_table, referenced_files

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import (
    CommitConflictError,
    ConstraintViolationError,
    DeltaError,
    InvalidFilterError,
    SchemaError,
)
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark import DeltaTable

deltalake = pytest.importorskip("deltalake")

DV = {"delta.enableDeletionVectors": "true"}
MODES = {"dv": DV, "cow": {}}
COUNTERS = ["numRemovedFiles", "numCopiedRows", "numDeletionVectorsAdded", "numDeletionVectorsRemoved",
            "numDeletionVectorsUpdated"]


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset)


def _copies(tmp_path: Path, kind: str, conf: dict[str, str]) -> tuple[str, str]:
    base = tmp_path / "base"
    make_dml_table(base, kind, _data, conf)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return str(ours), str(theirs)


def _dl_rows(path: str) -> pa.Table:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return pa.table(qb.execute("select * from t").read_all())


def _last(path: str) -> dict:
    return KernelTable(path).history(1)[0]


def _assert_same_table(spark, ours: str, theirs: str, what: str, duckdb: bool = True) -> None:
    expected = KernelTable(theirs).to_pyarrow_table()
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), expected, what)
    assert_same_rows(_dl_rows(ours), expected, f"{what}: deltalake reads ours")
    if duckdb:
        assert_same_rows(duckdb_table(ours), expected, f"{what}: duckdb reads ours")
    spark_rows = pa.Table.from_pylist([r.asDict() for r in spark.read.format("delta").load(ours).collect()],
                                      schema=expected.schema)
    assert_same_rows(spark_rows, expected, f"{what}: spark reads ours")


def _assert_same_commit(ours: str, theirs: str, operation: str, row_counter: str, what: str,
                        counters: list[str] = COUNTERS, params: bool = True) -> None:
    mine, other = _last(ours), _last(theirs)
    assert mine["operation"] == other["operation"] == operation
    assert mine["engineInfo"].startswith("deltakernel-spark")
    assert set(mine["operationMetrics"]) == set(other["operationMetrics"]), what
    for key in [row_counter, *counters]:
        assert mine["operationMetrics"][key] == other["operationMetrics"][key], f"{what}: {key}"
    if params:  # a Column condition is recorded as Spark's analyzed SQL
        expected = dict(other["operationParameters"])
        if operation == "DELETE":  # embedded API: deltalake's form (text; no key for delete-all); Spark: a JSON list
            text = expected.pop("predicate", None)
            expected["predicate"] = json.dumps([text] if text is not None else [])
        assert mine["operationParameters"] == expected, what


def _table_files(path: str) -> set[str]:
    root = Path(path)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts
            and not p.name.endswith(".crc")}


# ----------------------------------------------------------------------------- DELETE
# The DELETE and UPDATE products (predicate or assignment case x mode x table kind) run on the classic session.
# Both kinds run the same executors behind the session seam (statement, catalog, scan, expression facts,
# broadcast), so the Connect session runs a diagonal of each - every case, both modes, every table kind; Column
# conditions included - for a third of the products' time (CI budget; docs/decisions.md "CI time: part 2 under
# 22 minutes").
KINDS = ("unpartitioned", "partitioned", "column_mapped")
PREDICATES = ("id % 4 = 1", "p = 'a' and v > 60")
CONNECT_DELETES = {(0, "dv", "unpartitioned"), (1, "cow", "partitioned"), (0, "cow", "column_mapped"),
                   (1, "dv", "column_mapped")}
CONNECT_UPDATES = {(0, "dv", "unpartitioned"), (1, "cow", "partitioned"), (1, "dv", "column_mapped"),
                   (2, "dv", "column_mapped"), (2, "cow", "partitioned")}
_CLASSIC_PRODUCT = pytest.mark.classic_only("the product of case, mode and table kind runs on classic; Connect "
                                            "runs its diagonal (CONNECT_DELETES / CONNECT_UPDATES)")


def _product(cases: list, on_connect: set[tuple[int, str, str]]) -> list:
    return [pytest.param(case, mode, kind, id=f"{case}-{mode}-{kind}",
                         marks=() if (i, mode, kind) in on_connect else _CLASSIC_PRODUCT)
            for i, case in enumerate(cases) for mode in MODES for kind in KINDS]


@pytest.mark.parametrize("predicate,mode,kind", _product(list(PREDICATES), CONNECT_DELETES))
def test_delete_matches_embedded(spark, tmp_path, kind, mode, predicate):
    ours, theirs = _copies(tmp_path, kind, MODES[mode])
    assert DeltaTable.forPath(spark, ours).delete(predicate) is None  # delta-spark returns None
    KernelTable(theirs).delete(predicate)
    what = f"{kind} {mode} {predicate}"
    _assert_same_commit(ours, theirs, "DELETE", "numDeletedRows", what)
    _assert_same_table(spark, ours, theirs, what)
    if mode == "dv":
        assert int(_last(ours)["operationMetrics"]["numDeletionVectorsAdded"]) > 0


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_partition_only_delete_reads_no_data(spark, tmp_path, mode, monkeypatch):
    import deltakernel.spark.dml.delete as spark_delete

    def no_scan(*args, **kwargs):
        raise AssertionError("a partition-only DELETE must not read data")

    monkeypatch.setattr(spark_delete, "target_frame", no_scan)
    ours, theirs = _copies(tmp_path, "partitioned", MODES[mode])
    DeltaTable.forPath(spark, ours).delete(F.col("p") == "b")  # a Column: its analyzed SQL is planned
    KernelTable(theirs).delete("p = 'b'")
    _assert_same_commit(ours, theirs, "DELETE", "numDeletedRows", mode, params=False)
    assert _last(ours)["operationParameters"]["predicate"] == '["(p = \'b\')"]'
    _assert_same_table(spark, ours, theirs, mode)
    DeltaTable.forPath(spark, ours).delete()  # no condition: every file removed
    assert KernelTable(ours).to_pyarrow_table().num_rows == 0
    assert int(_last(ours)["operationMetrics"]["numDeletedRows"]) == 60


def test_delete_nothing_matched_no_commit(spark, tmp_path):
    ours, _ = _copies(tmp_path, "partitioned", DV)
    version = KernelTable(ours).version()
    DeltaTable.forPath(spark, ours).delete("id > 1000")
    DeltaTable.forPath(spark, ours).update("id > 1000", {"v": "0"})
    assert KernelTable(ours).version() == version


# ----------------------------------------------------------------------------- UPDATE
UPDATES = [  # (Spark condition, Spark set, embedded predicate, embedded updates); Columns built in the test
    lambda: ("id % 4 = 1", {"v": "v * 2"}, "id % 4 = 1", {"v": "v * 2"}),
    lambda: ("v > 50", {"p": "'z'", "s": "upper(s)"}, "v > 50", {"p": "'z'", "s": "upper(s)"}),  # rows move
    lambda: (F.col("id") < 10, {"s": F.lit("x"), "v": F.col("v") + 1}, "id < 10", {"s": "'x'", "v": "v + 1"}),
]


@pytest.mark.parametrize("case,mode,kind", _product(list(range(len(UPDATES))), CONNECT_UPDATES))
def test_update_matches_embedded(spark, tmp_path, kind, mode, case):
    condition, assignments, text, updates = UPDATES[case]()
    ours, theirs = _copies(tmp_path, kind, MODES[mode])
    assert DeltaTable.forPath(spark, ours).update(condition, assignments) is None
    KernelTable(theirs).update(updates=updates, predicate=text)
    what = f"{kind} {mode} {text}"
    mine, other = _last(ours), _last(theirs)
    assert mine["operation"] == other["operation"] == "UPDATE"
    assert set(mine["operationMetrics"]) == set(other["operationMetrics"])
    for key in ["numUpdatedRows", *COUNTERS]:
        assert mine["operationMetrics"][key] == other["operationMetrics"][key], f"{what}: {key}"
    if isinstance(condition, str):
        assert mine["operationParameters"] == other["operationParameters"]
    _assert_same_table(spark, ours, theirs, what)


@pytest.mark.parametrize("mode", ["dv", "cow", "cow-pandas-udf"])
def test_existing_deletion_vectors(spark, tmp_path, mode, monkeypatch):
    """Rows an existing DV deletes are neither matched nor copied: the DV job unions old and new rows; the
    copy-on-write job filters them on the executors (an Arrow UDF; a pandas UDF on pyspark 4.0)."""
    if mode == "cow-pandas-udf":
        import pyspark.sql.functions as spark_functions

        monkeypatch.delattr(spark_functions, "arrow_udf")
        mode = "cow"
    ours, theirs = _copies(tmp_path, "partitioned", DV)
    for path in (ours, theirs):
        KernelTable(path).delete("id % 3 = 0")
        if mode == "cow":
            KernelTable(path).alter.set_table_properties({"delta.enableDeletionVectors": "false"})
    DeltaTable.forPath(spark, ours).delete("id % 2 = 0")
    KernelTable(theirs).delete("id % 2 = 0")
    _assert_same_commit(ours, theirs, "DELETE", "numDeletedRows", mode)
    DeltaTable.forPath(spark, ours).update("id % 5 = 1", {"v": "-1"})
    KernelTable(theirs).update(updates={"v": "-1"}, predicate="id % 5 = 1")
    _assert_same_commit(ours, theirs, "UPDATE", "numUpdatedRows", mode, ["numDeletionVectorsUpdated",
                                                                          "numDeletionVectorsRemoved"])
    _assert_same_table(spark, ours, theirs, mode)


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_row_positions_with_skipped_row_groups(spark, tmp_path, mode):
    """Spark skips row groups with the pushed-down condition; `_metadata.row_index` must stay the physical
    position, or the DVs / rewrites would hit the wrong rows."""
    from deltakernel import WriterProperties

    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    data = pa.table({"id": pa.array(range(10_000), pa.int64()), "s": [f"r{i}" for i in range(10_000)]})
    for path in (ours, theirs):
        write_deltalake(path, data, configuration=MODES[mode],
                        writer_properties=WriterProperties(max_row_group_size=1000))
    import pyarrow.parquet as pq

    assert pq.ParquetFile(str(Path(ours) / KernelTable(ours).files()[0])).num_row_groups == 10
    for dml in (lambda t: t.delete("id between 2500 and 2600 or id >= 9990"),
                lambda t: t.update("id between 7100 and 7120", {"s": "'x'"})):
        dml(DeltaTable.forPath(spark, ours))
    KernelTable(theirs).delete("id between 2500 and 2600 or id >= 9990")
    KernelTable(theirs).update(updates={"s": "'x'"}, predicate="id between 7100 and 7120")
    _assert_same_table(spark, ours, theirs, mode)


def test_alias_and_columns(spark, tmp_path):
    ours, theirs = _copies(tmp_path, "partitioned", DV)
    dt = DeltaTable.forPath(spark, ours).alias("t")
    dt.delete("t.id < 5")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "fix-7")
    try:
        dt.update(F.col("t.id") == 7, {"s": F.concat(F.col("t.s"), F.lit("!"))})
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    assert _last(ours)["userMetadata"] == "fix-7"
    KernelTable(theirs).delete("id < 5")
    KernelTable(theirs).update(updates={"s": "concat(s, '!')"}, predicate="id = 7")
    _assert_same_table(spark, ours, theirs, "alias", duckdb=False)


# ----------------------------------------------------------------------------- change data feed, row tracking
@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_change_data_feed(spark, tmp_path, mode):
    ours, theirs = _copies(tmp_path, "partitioned", {**MODES[mode], "delta.enableChangeDataFeed": "true"})
    DeltaTable.forPath(spark, ours).delete("id % 4 = 1")
    DeltaTable.forPath(spark, ours).update("v > 50", {"v": "v + 1", "p": "'z'"})
    KernelTable(theirs).delete("id % 4 = 1")
    KernelTable(theirs).update(updates={"v": "v + 1", "p": "'z'"}, predicate="v > 50")
    assert int(_last(ours)["operationMetrics"]["numAddedChangeFiles"]) > 0
    cols = ["id", "p", "v", "s", "_change_type", "_commit_version"]
    expected = KernelTable(theirs).load_cdf(starting_version=3).read_all().select(cols)
    assert set(expected.column("_change_type").to_pylist()) == {"delete", "update_preimage", "update_postimage"}
    assert_same_rows(KernelTable(ours).load_cdf(starting_version=3).read_all().select(cols), expected, mode)
    assert_same_rows(pa.table(deltalake.DeltaTable(ours).load_cdf(starting_version=3).read_all()).select(cols),
                     expected, f"{mode}: deltalake reads our change data")
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 3).load(ours)
    got = pa.Table.from_pylist([r.asDict() for r in feed.select(*cols).collect()]).cast(expected.schema)
    assert_same_rows(got, expected, f"{mode}: Spark's readChangeFeed")
    _assert_same_table(spark, ours, theirs, mode)


@pytest.mark.parametrize("mapping", ["none", "name"])
@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_row_tracking_ids_kept(spark, tmp_path, mode, mapping):
    base = tmp_path / "base"
    conf = {**MODES[mode], "delta.enableRowTracking": "true", "delta.columnMapping.mode": mapping}
    for i in range(3):
        write_deltalake(str(base), _data(30, 30 * i), mode="append", partition_by=["p"],
                        configuration=conf if i == 0 else None)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    before = {r["id"]: r["_row_id"] for r in KernelTable(ours).to_pyarrow_table(row_tracking=True).to_pylist()}
    DeltaTable.forPath(spark, ours).delete("id % 4 = 1")
    DeltaTable.forPath(spark, ours).update("id % 3 = 0", {"v": "0", "p": "'z'"})
    KernelTable(theirs).delete("id % 4 = 1")
    KernelTable(theirs).update(updates={"v": "0", "p": "'z'"}, predicate="id % 3 = 0")

    def tracked(path: str) -> set[tuple]:
        rows = KernelTable(path).to_pyarrow_table(row_tracking=True).to_pylist()
        return {(r["id"], r["p"], r["_row_id"], r["_row_commit_version"]) for r in rows}

    mine = tracked(ours)
    assert mine == tracked(theirs)
    assert {(i, rid) for i, _p, rid, _v in mine} == {(i, before[i]) for i, *_ in mine}  # ids kept
    assert {i for i, _p, _r, v in mine if v == 4} == {i for i in range(90) if i % 3 == 0 and i % 4 != 1}
    spark_rows = spark.read.format("delta").option("readRowTracking", "true").load(ours).collect()
    assert {(r["id"], r["p"], r["_row_id"], r["_row_commit_version"]) for r in spark_rows} == mine
    assert _last(ours)["tags"]["delta.rowTracking.preserved"] == "true"


def test_tables_spark_cannot_scan_run_embedded(spark, tmp_path):
    """Type widening (Spark's Parquet plan cannot read widened files): the embedded engine runs the DML."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for path in (ours, theirs):
        write_deltalake(path, _data(30), configuration={"delta.enableTypeWidening": "true"})
    DeltaTable.forPath(spark, ours).delete("id % 4 = 1")
    DeltaTable.forPath(spark, ours).update(F.col("id") < 10, {"s": F.upper(F.col("p"))})
    KernelTable(theirs).delete("id % 4 = 1")
    KernelTable(theirs).update(updates={"s": "upper(p)"}, predicate="id < 10")
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), KernelTable(theirs).to_pyarrow_table(), "widening")
    assert _last(ours)["operation"] == "UPDATE"


# ----------------------------------------------------------------------------- rules of the table
@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_update_enforces_constraints_and_generated_columns(spark, tmp_path, mode):
    path = str(tmp_path / "t")
    builder = (DeltaTable.create(spark).location(path).addColumn("id", "long", nullable=False)
               .addColumn("v", "long").addColumn("g", "long", generatedAlwaysAs="id * 10")
               .addColumn("p", "string"))
    for k, v in MODES[mode].items():
        builder = builder.property(k, v)
    builder.partitionedBy("p").execute()
    spark.range(20).select(F.col("id"), (F.col("id") + 1).alias("v"), (F.col("id") % 2).cast("string").alias("p")) \
        .write.format("delta").mode("append").save(path)
    KernelTable(path).alter.add_constraint({"v_positive": "v > 0"})
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    DeltaTable.forPath(spark, path).update("id < 3", {"id": "id + 100"})  # g recomputed on the executors
    KernelTable(copy).update(updates={"id": "id + 100"}, predicate="id < 3")
    rows = {r["id"]: r["g"] for r in KernelTable(path).to_pyarrow_table().to_pylist()}
    assert rows == {i: i * 10 for i in [*range(3, 20), 100, 101, 102]}
    _assert_same_table(spark, path, copy, mode, duckdb=False)
    version, files = KernelTable(path).version(), _table_files(path)
    with pytest.raises(ConstraintViolationError, match="v_positive"):
        DeltaTable.forPath(spark, path).update("id = 5", {"v": "-1"})
    with pytest.raises(ConstraintViolationError):
        DeltaTable.forPath(spark, path).update("id = 6", {"id": "null"})
    with pytest.raises(ConstraintViolationError):  # a generated column must equal its expression
        DeltaTable.forPath(spark, path).update("id = 7", {"g": "1"})
    assert KernelTable(path).version() == version
    assert _table_files(path) == files  # the failed jobs' files were deleted


# ----------------------------------------------------------------------------- bad input, conflicts
def test_bad_input_is_typed_and_leaves_the_table(spark, tmp_path):
    ours, _ = _copies(tmp_path, "partitioned", DV)
    dt = DeltaTable.forPath(spark, ours)
    version, files = KernelTable(ours).version(), _table_files(ours)
    with pytest.raises(DeltaError, match="nope"):
        dt.delete("nope > 1")
    with pytest.raises(InvalidFilterError, match="nope"):
        dt.update("nope = 1", {"v": "1"})
    with pytest.raises(SchemaError, match="nope"):
        dt.update("id = 1", {"nope": "1"})
    with pytest.raises(DeltaError, match="zzz"):
        dt.update("id = 1", {"v": "zzz + 1"})
    with pytest.raises(DeltaError):
        dt.delete("id + 1")  # not boolean
    with pytest.raises(ValueError):
        dt.update("id = 1")  # set is required (delta-spark: ValueError)
    with pytest.raises(TypeError):
        dt.update("id = 1", [("v", "1")])
    with pytest.raises(TypeError):
        dt.delete(42)
    assert KernelTable(ours).version() == version
    assert _table_files(ours) == files


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_concurrent_delete_conflicts(spark, tmp_path, mode, monkeypatch):
    """An embedded DELETE lands between the Spark DELETE's jobs and its commit: typed conflict, our files gone."""
    from deltakernel.spark.dml.delete import SparkDelete

    ours, _ = _copies(tmp_path, "unpartitioned", MODES[mode])
    run = SparkDelete.run

    def run_then_concurrent(self):
        run(self)
        KernelTable(ours).delete("id = 2")  # a file this DELETE read and rewrites

    monkeypatch.setattr(SparkDelete, "run", run_then_concurrent)
    version = KernelTable(ours).version()
    with pytest.raises(CommitConflictError):
        DeltaTable.forPath(spark, ours).delete("id % 4 = 1")
    assert KernelTable(ours).version() == version + 1  # only the concurrent commit
    assert _table_files(ours) <= referenced_files(ours)  # nothing of ours left behind
    assert KernelTable(ours).to_pyarrow_table().num_rows == 89


# ----------------------------------------------------------------------------- what the driver sees
def _record_collects(monkeypatch, spark) -> list[int]:
    DataFrame = type(spark.range(1))  # the session kind's DataFrame class

    seen: list[int] = []
    for name in ("collect", "toArrow", "toPandas", "toLocalIterator", "take", "tail"):
        original = getattr(DataFrame, name)

        def wrapper(self, *args, _original=original, **kwargs):
            out = _original(self, *args, **kwargs)
            seen.append(out.num_rows if isinstance(out, pa.Table) else len(out))
            return out

        monkeypatch.setattr(DataFrame, name, wrapper)
    return seen


def test_driver_collects_one_row_per_touched_file(spark, tmp_path, monkeypatch):
    path = str(tmp_path / "t")
    n = 2_000  # rows per file: collected rows (2,667 deleted, 8,000 in all) would break the bounds below
    for i in range(4):
        write_deltalake(path, pa.table({"id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
                                        "s": pa.array([f"row {j}" for j in range(n)])}),
                        mode="append", configuration=DV if i == 0 else None)
    seen = _record_collects(monkeypatch, spark)
    DeltaTable.forPath(spark, path).delete("id % 3 = 0")
    metrics = _last(path)["operationMetrics"]
    assert int(metrics["numDeletedRows"]) == len(range(0, 4 * n, 3))
    assert int(metrics["numDeletionVectorsAdded"]) == 4
    assert seen and sum(seen) <= 4, seen  # one small row per touched file, never the rows
    new_dvs = {p for p in _table_files(path) if p.endswith(".bin")}
    assert 1 <= len(new_dvs) <= 2  # one DV file per task (2 shuffle partitions), not one per file
    seen.clear()
    KernelTable(path).alter.set_table_properties({"delta.enableDeletionVectors": "false"})
    DeltaTable.forPath(spark, path).update("id % 10 = 1", {"s": "'updated'"})  # copy-on-write, native write
    assert sum(seen) <= 4, seen  # per-file match counts; the native write collects nothing
    assert KernelTable(path).to_pyarrow_table(filters=[("s", "=", "updated")]).num_rows == \
        len([i for i in range(4 * n) if i % 10 == 1 and i % 3])


# ----------------------------------------------------------------------------- Spark Connect: client-side texts
def test_connect_column_text_and_merge_keys(connect_spark):
    """Over Spark Connect a Column's SQL text and MERGE's join keys come from the client's expression tree
    (classic sessions read them off the analyzed plan): what is printed, what prunes, what is left alone."""
    from pyspark.sql.connect import functions as CF

    from deltakernel.spark.dml.facts_connect import expression_sql, merge_analysis, source_alias

    cond = (CF.col("a") > 1) & CF.upper(CF.col("s")).isin("X", "Y") & ~CF.col("b").isNull()
    assert expression_sql(cond) == "(((a > 1) AND (upper(s) IN ('X', 'Y'))) AND (NOT (b IS NULL)))"
    assert expression_sql(CF.when(CF.col("a") > 1, CF.lit("x")).otherwise(CF.col("s"))) == \
        "(CASE WHEN (a > 1) THEN 'x' ELSE s END)"
    assert expression_sql(CF.udf(lambda x: x)(CF.col("a"))) is None  # a Python UDF has no SQL text

    source = connect_spark.createDataFrame(pa.table({"id": pa.array([1], pa.int64()), "k": pa.array([1], pa.int32()),
                                                     "p": ["a"], "w": ["1"]})).alias("s")
    assert source_alias(source) == "s" and source_alias(source.select("id")) is None
    names, types = ["id", "v", "p"], {"id": "bigint", "v": "bigint", "p": "string"}
    column = (CF.col("t.id") == CF.col("s.id")) & (CF.col("t.v") == CF.col("s.k")) & (CF.col("t.p") == CF.lit("a"))
    keys, target_only, text = merge_analysis(column, names, "t", source, types)
    assert keys == [("id", "id"), ("v", "k")]  # an int source key of a bigint column: bounds stay exact
    assert len(target_only) == 1 and text is not None
    keys, target_only, _ = merge_analysis("t.id = s.w AND t.v = CAST(s.w AS BIGINT) AND s.p = 'a'", names, "t",
                                          source, types)
    assert keys == [] and target_only == []  # a string source key of a bigint column, a cast: no pruning
    assert merge_analysis("id = s.id", names, "t", source, types)[0] == []  # ambiguous: Spark reports it
