"""Spark `DeltaTable.merge` as distributed jobs, differential against the embedded engine's MERGE.

Each case copies one starting table; the Spark MERGE (delta-spark's builder) runs on one copy, the embedded
`deltakernel.DeltaTable.merge` on the other with the same source as Arrow: same rows, same row counters and
touched-file counts in the commit, same operation parameters; deltalake, DuckDB and Spark read our result.
Deletion vectors and copy-on-write, partitioned or not, every clause kind, change data, row tracking,
generated columns / constraints, schema evolution, duplicate matches, bad input, and what the driver collects.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, dml_data, duckdb_table, make_dml_table, referenced_files

from deltakernel import DeltaTable as KernelTable
from deltakernel.errors import CommitConflictError, ConstraintViolationError, DeltaError, InvalidFilterError
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark import DeltaTable

deltalake = pytest.importorskip("deltalake")

DV = {"delta.enableDeletionVectors": "true"}
MODES = {"dv": DV, "cow": {}}
COUNTERS = ["numSourceRows", "numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted",
            "numTargetRowsCopied", "numOutputRows", "numTargetFilesRemoved", "numTargetDeletionVectorsAdded",
            "numTargetDeletionVectorsRemoved"]


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset)


def _source(ids: list[int | None], p: str = "z") -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": [["a", "b", "c"][(i or 0) % 3] if p == "keep" else p for i in ids],
        "v": pa.array([None if i is None else -float(i) for i in ids], pa.float64()),
        "s": [f"new{i}" for i in ids],
    })


def _copies(tmp_path: Path, kind: str, conf: dict[str, str]) -> tuple[str, str]:
    base = tmp_path / "base"
    make_dml_table(base, kind, _data, conf)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return str(ours), str(theirs)


def _last(path: str) -> dict:
    return KernelTable(path).history(1)[0]


def _dl_rows(path: str) -> pa.Table:
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return pa.table(qb.execute("select * from t").read_all())


def _assert_same_table(spark, ours: str, theirs: str, what: str, duckdb: bool = True) -> None:
    expected = KernelTable(theirs).to_pyarrow_table()
    assert_same_rows(KernelTable(ours).to_pyarrow_table(), expected, what)
    assert_same_rows(_dl_rows(ours), expected, f"{what}: deltalake reads ours")
    if duckdb:
        assert_same_rows(duckdb_table(ours), expected, f"{what}: duckdb reads ours")
    got = spark.read.format("delta").load(ours).toArrow()
    assert_same_rows(got.cast(expected.schema), expected, f"{what}: spark reads ours")


def _assert_same_commit(ours: str, theirs: str, what: str, params: bool = True) -> None:
    mine, other = _last(ours), _last(theirs)
    assert mine["operation"] == other["operation"] == "MERGE", what
    assert mine["engineInfo"].startswith("deltakernel-spark")
    assert set(mine["operationMetrics"]) == set(other["operationMetrics"]), what
    for key in COUNTERS:
        assert mine["operationMetrics"][key] == other["operationMetrics"][key], f"{what}: {key}"
    if params:
        assert mine["operationParameters"] == other["operationParameters"], what


def _table_files(path: str) -> set[str]:
    root = Path(path)
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "_delta_log" not in p.parts
            and not p.name.endswith(".crc")}


def _run_both(spark, ours: str, theirs: str, src: pa.Table, spark_clauses: Callable[[Any], Any],
              kernel_clauses: Callable[[Any], Any], condition: str = "t.id = s.id", evolve: bool = False) -> Any:
    builder = DeltaTable.forPath(spark, ours).alias("t").merge(spark.createDataFrame(src).alias("s"), condition)
    if evolve:
        builder = builder.withSchemaEvolution()
    result = spark_clauses(builder).execute()
    kernel = KernelTable(theirs).merge(src, condition, source_alias="s", target_alias="t", merge_schema=evolve)
    metrics = kernel_clauses(kernel).execute()
    return result, metrics


# ----------------------------------------------------------------------------- the clause kinds
CASES: dict[str, tuple[list[int | None], Callable[[Any], Any], Callable[[Any], Any]]] = {
    "upsert": ([1, 2, 3, 40, 41, 100, 101, None],
               lambda b: b.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
               lambda k: k.when_matched_update_all().when_not_matched_insert_all()),
    "delete_when_matched": ([4, 5, 6, 7, 8, 9, 200],
                            lambda b: b.whenMatchedDelete("t.id % 2 = 0").whenMatchedUpdate(
                                "t.v > 5", {"s": "concat(t.s, s.s)"}).whenNotMatchedInsert(
                                "s.id > 100", {"id": "s.id", "p": "'n'", "v": "s.v * 2"}),
                            lambda k: k.when_matched_delete("t.id % 2 = 0").when_matched_update(
                                {"s": "concat(t.s, s.s)"}, "t.v > 5").when_not_matched_insert(
                                {"id": "s.id", "p": "'n'", "v": "s.v * 2"}, "s.id > 100")),
    "by_source": ([10, 11, 12, 13, 300],
                  lambda b: b.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedBySourceDelete("t.id < 20")
                  .whenNotMatchedBySourceUpdate(set={"s": "'gone'"}),
                  lambda k: k.when_matched_update({"v": "s.v"}).when_not_matched_by_source_delete("t.id < 20")
                  .when_not_matched_by_source_update({"s": "'gone'"})),
    "insert_only": ([0, 5, 500, 501, 502],
                    lambda b: b.whenNotMatchedInsertAll("s.id <> 501"),
                    lambda k: k.when_not_matched_insert_all("s.id <> 501")),
}


# The whole clause x mode x table-kind product runs on the classic session. Both kinds run the same MERGE behind
# the session seam (statement, catalog, scan, expression facts, broadcast), so the Connect session runs a diagonal
# of it - every clause kind, both modes, every table kind - at a quarter of the product's time (CI budget; see
# docs/decisions.md "CI time: part 2 under 22 minutes").
CONNECT_MERGES = {("upsert", "dv", "unpartitioned"), ("upsert", "cow", "column_mapped"),
                  ("delete_when_matched", "dv", "partitioned"), ("delete_when_matched", "cow", "unpartitioned"),
                  ("by_source", "cow", "partitioned"), ("insert_only", "dv", "column_mapped")}
_CLASSIC_PRODUCT = pytest.mark.classic_only("the product of clause, mode and table kind runs on classic; Connect "
                                            "runs its diagonal (CONNECT_MERGES)")


@pytest.mark.parametrize("case,mode,kind", [
    pytest.param(case, mode, kind, id=f"{case}-{mode}-{kind}",
                 marks=() if (case, mode, kind) in CONNECT_MERGES else _CLASSIC_PRODUCT)
    for kind in ("unpartitioned", "partitioned", "column_mapped") for mode in MODES for case in CASES])
def test_merge_matches_embedded(spark, tmp_path, kind, mode, case, caplog):
    ids, spark_clauses, kernel_clauses = CASES[case]
    ours, theirs = _copies(tmp_path, kind, MODES[mode])
    src = _source(ids, "keep")
    before = KernelTable(ours).version()
    with caplog.at_level("WARNING", logger="deltakernel.spark.dml.merge"):
        result, metrics = _run_both(spark, ours, theirs, src, spark_clauses, kernel_clauses)
    assert "runs on the driver" not in caplog.text  # Spark jobs did it (column mapping too)
    what = f"{kind} {mode} {case}"
    row = result.collect()[0]
    assert (row.num_updated_rows, row.num_deleted_rows, row.num_inserted_rows) == (
        metrics["num_target_rows_updated"], metrics["num_target_rows_deleted"],
        metrics["num_target_rows_inserted"]), what
    assert row.num_affected_rows == row.num_updated_rows + row.num_deleted_rows + row.num_inserted_rows
    assert KernelTable(ours).version() == KernelTable(theirs).version() == before + 1
    _assert_same_commit(ours, theirs, what)
    _assert_same_table(spark, ours, theirs, what)
    if case == "insert_only":  # no target file rewritten or marked
        assert int(_last(ours)["operationMetrics"]["numTargetFilesRemoved"]) == 0
        assert int(_last(ours)["operationMetrics"]["numTargetDeletionVectorsAdded"]) == 0
    if mode == "dv" and case in ("upsert", "delete_when_matched"):
        assert int(_last(ours)["operationMetrics"]["numTargetDeletionVectorsAdded"]) > 0


def test_columns_and_clause_order(spark, tmp_path):
    """Columns as conditions / values; the first clause whose condition holds wins."""
    ours, theirs = _copies(tmp_path, "partitioned", DV)
    src = _source([1, 2, 3, 4, 5, 6, 90, 91], "keep")
    (DeltaTable.forPath(spark, ours).alias("t").merge(spark.createDataFrame(src).alias("s"),
                                                       F.col("t.id") == F.col("s.id"))
     .whenMatchedUpdate(F.col("s.id") < 3, {"v": F.lit(1.0)})
     .whenMatchedUpdate(F.col("s.id") < 5, {"v": F.lit(2.0)})
     .whenMatchedDelete()
     .whenNotMatchedInsert(values={"id": F.col("s.id"), "p": F.col("s.p")}).execute())
    (KernelTable(theirs).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update({"v": "1.0"}, "s.id < 3").when_matched_update({"v": "2.0"}, "s.id < 5")
     .when_matched_delete().when_not_matched_insert({"id": "s.id", "p": "s.p"}).execute())
    _assert_same_commit(ours, theirs, "columns", params=False)
    _assert_same_table(spark, ours, theirs, "columns")


def test_merge_without_alias_and_condition_on_partition(spark, tmp_path):
    """Unaliased frames (delta-spark resolves unique names anywhere); a target-only conjunct prunes files."""
    ours, theirs = _copies(tmp_path, "partitioned", {})
    src = pa.table({"key": pa.array([1, 4, 7, 61], pa.int64()), "nv": pa.array([0.5, 1.5, 2.5, 3.5])})
    (DeltaTable.forPath(spark, ours).merge(spark.createDataFrame(src), "id = key AND p = 'b'")
     .whenMatchedUpdate(set={"v": "nv"}).execute())
    (KernelTable(theirs).merge(src, "id = key AND p = 'b'").when_matched_update({"v": "nv"}).execute())
    _assert_same_commit(ours, theirs, "no alias")
    _assert_same_table(spark, ours, theirs, "no alias")
    ours_files = KernelTable(ours).history(1)[0]["operationMetrics"]
    assert int(ours_files["numTargetFilesRemoved"]) <= 3  # only files of partition b were candidates


# ----------------------------------------------------------------------------- change data, row tracking
@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_change_data_feed(spark, tmp_path, mode):
    ours, theirs = _copies(tmp_path, "partitioned", {**MODES[mode], "delta.enableChangeDataFeed": "true"})
    ids, spark_clauses, kernel_clauses = CASES["delete_when_matched"]
    _run_both(spark, ours, theirs, _source(ids + [1, 2], "keep"), spark_clauses, kernel_clauses)
    assert int(_last(ours)["operationMetrics"]["numTargetChangeFilesAdded"]) > 0
    cols = ["id", "p", "v", "s", "_change_type", "_commit_version"]
    expected = KernelTable(theirs).load_cdf(starting_version=3).read_all().select(cols)
    assert set(expected.column("_change_type").to_pylist()) == {"delete", "update_preimage", "update_postimage",
                                                                "insert"}
    assert_same_rows(KernelTable(ours).load_cdf(starting_version=3).read_all().select(cols), expected, mode)
    assert_same_rows(pa.table(deltalake.DeltaTable(ours).load_cdf(starting_version=3).read_all()).select(cols),
                     expected, f"{mode}: deltalake reads our change data")
    _assert_same_table(spark, ours, theirs, mode)


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_row_tracking_ids_kept(spark, tmp_path, mode):
    base = tmp_path / "base"
    conf = {**MODES[mode], "delta.enableRowTracking": "true"}
    for i in range(3):
        write_deltalake(str(base), _data(30, 30 * i), mode="append", partition_by=["p"],
                        configuration=conf if i == 0 else None)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    before = {r["id"]: r["_row_id"] for r in KernelTable(ours).to_pyarrow_table(row_tracking=True).to_pylist()}
    _run_both(spark, ours, theirs, _source([1, 2, 3, 33, 34, 95], "keep"),
              lambda b: b.whenMatchedUpdate("s.id <> 2", {"v": "s.v"}).whenMatchedDelete()
              .whenNotMatchedInsertAll(),
              lambda k: k.when_matched_update({"v": "s.v"}, "s.id <> 2").when_matched_delete()
              .when_not_matched_insert_all())

    def tracked(path: str) -> set[tuple]:
        rows = KernelTable(path).to_pyarrow_table(row_tracking=True).to_pylist()
        return {(r["id"], r["v"], r["_row_commit_version"]) for r in rows}

    assert tracked(ours) == tracked(theirs)
    mine = KernelTable(ours).to_pyarrow_table(row_tracking=True).to_pylist()
    assert all(r["_row_id"] == before[r["id"]] for r in mine if r["id"] in before)  # ids kept
    assert len({r["_row_id"] for r in mine}) == len(mine)  # inserted rows got fresh ids
    assert _last(ours)["tags"]["delta.rowTracking.preserved"] == "true"


# ----------------------------------------------------------------------------- rules, evolution, errors
@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_generated_columns_and_constraints(spark, tmp_path, mode):
    from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
    from deltakernel.operations.write.api import create_table

    schema = StructType((StructField("id", PrimitiveType("long"), False, {}),
                         StructField("v", PrimitiveType("long"), True, {}),
                         StructField("w", PrimitiveType("long"), True, {"delta.generationExpression": "v * 10"})))
    paths = []
    for name in ("ours", "theirs"):
        path = str(tmp_path / name)
        create_table(path, schema, configuration={**MODES[mode], "delta.constraints.positive": "v >= 0"})
        write_deltalake(path, pa.table({"id": pa.array(range(10), pa.int64()), "v": pa.array(range(10), pa.int64())}),
                        mode="append")
        paths.append(path)
    ours, theirs = paths
    src = pa.table({"id": pa.array([1, 2, 20], pa.int64()), "v": pa.array([7, 8, 9], pa.int64())})
    _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsertAll(),
              lambda k: k.when_matched_update({"v": "s.v"}).when_not_matched_insert_all())
    _assert_same_table(spark, ours, theirs, mode, duckdb=False)
    rows = {r["id"]: r["w"] for r in KernelTable(ours).to_pyarrow_table().to_pylist()}
    assert rows[1] == 70 and rows[20] == 90  # generated column recomputed / filled on the executors
    version = KernelTable(ours).version()
    bad = spark.createDataFrame(pa.table({"id": pa.array([3], pa.int64()), "v": pa.array([-1], pa.int64())}))
    with pytest.raises(ConstraintViolationError):
        DeltaTable.forPath(spark, ours).alias("t").merge(bad.alias("s"), "t.id = s.id") \
            .whenMatchedUpdate(set={"v": "s.v"}).execute()
    assert KernelTable(ours).version() == version


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_duplicate_matches_raise_and_leave_the_table(spark, tmp_path, mode):
    ours, theirs = _copies(tmp_path, "partitioned", MODES[mode])
    version = KernelTable(ours).version()
    files = _table_files(ours)
    src = _source([1, 1, 2, 300], "keep")
    with pytest.raises(MergeDuplicateMatchError):
        DeltaTable.forPath(spark, ours).alias("t").merge(spark.createDataFrame(src).alias("s"), "t.id = s.id") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    with pytest.raises(MergeDuplicateMatchError):
        KernelTable(theirs).merge(src, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update_all().when_not_matched_insert_all().execute()
    assert KernelTable(ours).version() == version
    assert _table_files(ours) == files  # nothing written, nothing left behind
    # an unconditional DELETE is not ambiguous: each target row is deleted once
    _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedDelete(), lambda k: k.when_matched_delete())
    _assert_same_commit(ours, theirs, mode)
    _assert_same_table(spark, ours, theirs, mode)


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_schema_evolution(spark, tmp_path, mode):
    ours, theirs = _copies(tmp_path, "unpartitioned", MODES[mode])
    src = _source([1, 2, 400], "keep").append_column("extra", pa.array([10, 20, 30], pa.int32()))
    _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
              lambda k: k.when_matched_update_all().when_not_matched_insert_all(), evolve=True)
    assert "extra" in KernelTable(ours).schema().to_arrow().names
    _assert_same_commit(ours, theirs, mode)
    _assert_same_table(spark, ours, theirs, mode)


def test_bad_input_is_typed_and_changes_nothing(spark, tmp_path):
    ours, _ = _copies(tmp_path, "partitioned", DV)
    version = KernelTable(ours).version()
    dt = DeltaTable.forPath(spark, ours).alias("t")
    src = spark.createDataFrame(_source([1, 2], "keep")).alias("s")
    with pytest.raises(InvalidFilterError):
        dt.merge(src, "t.id = s.nope").whenMatchedDelete().execute()
    with pytest.raises(InvalidFilterError):  # a NOT MATCHED clause cannot read the target
        dt.merge(src, "t.id = s.id").whenNotMatchedInsert(values={"id": "t.id"}).execute()
    with pytest.raises(InvalidFilterError):  # a NOT MATCHED BY SOURCE clause cannot read the source
        dt.merge(src, "t.id = s.id").whenNotMatchedBySourceUpdate(set={"v": "s.v"}).execute()
    with pytest.raises(DeltaError):
        dt.merge(src, "t.id = s.id").whenMatchedUpdate(set={"nope": "s.v"}).execute()
    with pytest.raises(DeltaError):
        dt.merge(src, "t.id = s.id").execute()
    with pytest.raises(ValueError):
        dt.merge(src, "t.id = s.id").whenMatchedUpdate("t.id > 1")
    with pytest.raises(TypeError):
        dt.merge(src, 42)
    assert KernelTable(ours).version() == version


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


@pytest.mark.parametrize("mode,pairs", [("dv", False), ("cow", False), ("dv", True), ("dv", "source")])
def test_driver_collects_small_results_only(spark, tmp_path, mode, pairs, monkeypatch):
    """The driver collects one row per file (touched, written, DV task) and the source stats; with deletion
    vectors and a source of at most COLLECT_SOURCE_ROWS rows, also each matched pair's (source row id,
    clause), 12 bytes: the write looks them up instead of joining them (pair_clauses.py). Larger sources
    (`pairs` False: the limits set to 0) keep them on the executors. A source Spark estimates at most
    COLLECT_SOURCE_BYTES (`pairs` "source"; True: the limit set to 0) whose rows are copied as they are is
    read to the driver too, once, by the job that materializes it (driver_rows.py: the driver writes), and
    the scan tasks return the pairs with their file and row for the driver to write the DVs (one row per
    pair all the same)."""
    import deltakernel.spark.dml.driver_rows as driver_rows
    import deltakernel.spark.dml.merge as merge_module

    if not pairs:
        monkeypatch.setattr(merge_module, "COLLECT_SOURCE_ROWS", 0)
    if pairs != "source":  # the deletion-vector job and the write as Spark jobs
        monkeypatch.setattr(driver_rows, "COLLECT_SOURCE_BYTES", 0)
        monkeypatch.setattr(merge_module, "DRIVER_DVS", False)
    path = str(tmp_path / "t")
    n = 2_000  # rows per file: a collected source (1,858 rows) or target (8,000) would break the bounds below
    for i in range(4):
        write_deltalake(path, pa.table({"id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
                                        "s": pa.array([f"row {j}" for j in range(n)])}),
                        mode="append", configuration=MODES[mode] if i == 0 else None)
    src = spark.range(0, 4 * n + 5_000, 7).select(F.col("id"), F.lit("new").alias("s")).alias("s")
    expected_updates = len(range(0, 4 * n, 7))
    source_rows = len(range(0, 4 * n + 5_000, 7)) if pairs == "source" else 0
    seen = _record_collects(monkeypatch, spark)
    result = DeltaTable.forPath(spark, path).alias("t").merge(src, "t.id = s.id") \
        .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    monkeypatch.undo()
    row = result.collect()[0]
    expected_inserts = len([i for i in range(0, 4 * n + 5_000, 7) if i >= 4 * n])
    assert (row.num_updated_rows, row.num_inserted_rows) == (expected_updates, expected_inserts)
    # source stats (1 row), one row per touched file, per file written / DV task; with `pairs`, one per pair
    assert sum(seen) <= 16 + (expected_updates if pairs else 0) + source_rows, seen
    if pairs:
        assert any(n >= expected_updates for n in seen), seen  # the DV job's result carried the pairs
    if source_rows:
        assert source_rows in seen, seen  # the source, once
    assert KernelTable(path).to_pyarrow_table(filters=[("s", "=", "new")]).num_rows == \
        row.num_updated_rows + row.num_inserted_rows


def test_pairs_over_the_limit_are_joined_again(spark, tmp_path, monkeypatch):
    """A DV task with more pairs than its share returns none (an overflow marker): the write joins the pairs,
    computed again, and the MERGE is the embedded engine's all the same."""
    import deltakernel.spark.dml.touched as touched

    monkeypatch.setattr(touched, "PAIRS_LIMIT", 1)
    monkeypatch.setattr(touched, "PAIRS_PER_TASK_MIN", 1)
    ours, theirs = _copies(tmp_path, "unpartitioned", DV)
    ids, spark_clauses, kernel_clauses = CASES["upsert"]
    _run_both(spark, ours, theirs, _source(ids, "keep"), spark_clauses, kernel_clauses)
    _assert_same_commit(ours, theirs, "overflow")
    _assert_same_table(spark, ours, theirs, "overflow", duckdb=False)


def _jobs_so_far(classic_spark) -> int:
    """Spark jobs submitted in the JVM so far (the DAG scheduler's next job id: exact at any moment, while the
    status store fills from the listener bus later; the Connect session runs its jobs in the same JVM)."""
    counter = classic_spark._jsc.sc().dagScheduler().nextJobId()  # an AtomicInteger (py4j may hand its value)
    return int(counter if isinstance(counter, int) else counter.get())


def _count_round_trips(spark, classic_spark, monkeypatch) -> list[str]:
    """The driver's round trips to Spark from now on, one entry each: py4j commands on classic (by kind: `c` call,
    `r` reflection, `i` constructor, ...; not `m`, the deletes py4j sends when Python's garbage collector frees a
    JVM object's proxy - at its own time), requests of the Connect client (`execute`, `analyze`, `config`)."""
    sent: list[str] = []
    if spark is classic_spark:
        client = classic_spark._jvm._gateway_client
        send = client.send_command

        def counted(command, *args, **kwargs):
            if not command.startswith("m"):
                sent.append(command[:1])
            return send(command, *args, **kwargs)

        monkeypatch.setattr(client, "send_command", counted)
        return sent
    for name, kind in (("_execute_and_fetch_as_iterator", "execute"), ("_execute", "execute"),
                       ("_analyze", "analyze"), ("config", "config")):
        original = getattr(spark.client, name)

        def wrapper(*args, _original=original, _kind=kind, **kwargs):
            sent.append(_kind)
            return _original(*args, **kwargs)

        monkeypatch.setattr(spark.client, name, wrapper)
    return sent


# the driver's round trips of test_dv_upsert_runs_three_spark_jobs' MERGE, measured alone in a fresh session (the
# first MERGE also looks Spark's SQL functions up once: common/jvm_functions.py): 661 py4j commands (1,268 for the
# 5M-row benchmark's MERGE before helper mergedrv's cuts, 737 after; benchmarks/profile_spark_merge.py --count),
# 15 Connect requests (22 before)
MERGE_PY4J_COMMANDS = 700
MERGE_CONNECT_REQUESTS = 15


def test_dv_upsert_runs_three_spark_jobs(spark, classic_spark, tmp_path, monkeypatch):
    """A MERGE with deletion vectors whose written rows are copies of a small source's rows (`UPDATE SET *`,
    `INSERT *`) runs 3 Spark jobs (issue 32 item 3; 9, then 5 before): the source materialized with its stats
    observed and its rows read to the driver (1); the broadcast of the source (1); the target scan + join,
    its tasks returning the pairs (1). The driver writes the DVs (touched.deletion_vectors_on_driver) and the
    rows (driver_rows.py): no shuffle by file, no DV job, no write job. Between those jobs the driver plans with
    at most MERGE_PY4J_COMMANDS py4j commands (classic) or MERGE_CONNECT_REQUESTS requests (Connect)."""
    ours, theirs = _copies(tmp_path, "unpartitioned", DV)
    src = spark.createDataFrame(_source([1, 2, 3, 40, 41, 100, 101], "keep")).alias("s")
    before = _jobs_so_far(classic_spark)
    sent = _count_round_trips(spark, classic_spark, monkeypatch)
    DeltaTable.forPath(spark, ours).alias("t").merge(src, "t.id = s.id").whenMatchedUpdateAll() \
        .whenNotMatchedInsertAll().execute()
    trips = len(sent)  # (the patches go at the test's end)
    jobs = _jobs_so_far(classic_spark) - before
    metrics = _last(ours)["operationMetrics"]
    assert (int(metrics["numTargetRowsUpdated"]), int(metrics["numTargetRowsInserted"])) == (5, 2)
    assert jobs == 3, jobs
    limit = MERGE_PY4J_COMMANDS if spark is classic_spark else MERGE_CONNECT_REQUESTS
    assert trips <= limit, (trips, sorted(set(sent)))


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_one_source_row_updates_many_target_rows(spark, tmp_path, mode):
    """A source row matching several target rows updates each of them (written once per target row, also when
    the new values come from the source alone); a source row matching none is inserted."""
    ours, theirs = _copies(tmp_path, "unpartitioned", MODES[mode])
    src = pa.table({"id": pa.array([1000, 2000], pa.int64()), "p": ["a", "zz"], "v": [1.25, 2.5], "s": ["x", "y"]})
    condition = "t.p = s.p AND t.id < 40"
    _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
              lambda k: k.when_matched_update_all().when_not_matched_insert_all(), condition=condition)
    _assert_same_commit(ours, theirs, mode)
    _assert_same_table(spark, ours, theirs, mode)
    metrics = _last(ours)["operationMetrics"]
    assert (int(metrics["numTargetRowsUpdated"]), int(metrics["numTargetRowsInserted"])) == (
        len([i for i in range(40) if i % 3 == 0]), 1)


def test_many_pairs_per_source_row_run_the_dv_job(spark, classic_spark, tmp_path, monkeypatch):
    """A scan task with more pairs than the source has rows (one source row matching many target rows) does not
    hand them to the driver's DVs (touched.deletion_vectors_on_driver): the DV job runs instead, same result."""
    import deltakernel.spark.dml.touched as touched

    monkeypatch.setattr(touched, "PAIRS_PER_TASK_MIN", 1)  # a task's share for the driver: the source's 2 rows
    ours, theirs = _copies(tmp_path, "unpartitioned", DV)
    src = pa.table({"id": pa.array([1000, 2000], pa.int64()), "p": ["a", "zz"], "v": [1.25, 2.5], "s": ["x", "y"]})
    before = _jobs_so_far(classic_spark)
    _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
              lambda k: k.when_matched_update_all().when_not_matched_insert_all(), condition="t.p = s.p AND t.id < 40")
    assert _jobs_so_far(classic_spark) - before > 3  # the DV job ran after the pairs were fetched (3 jobs)
    _assert_same_commit(ours, theirs, "many pairs")
    _assert_same_table(spark, ours, theirs, "many pairs", duckdb=False)


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_merge_without_row_counts_in_the_stats(spark, tmp_path, mode):
    """Copy-on-write tells copied from inserted rows by the touched files' numRecords, and the DV job knows a
    file is wholly deleted from it; files without stats are counted from their footers instead."""
    import json

    ours, theirs = _copies(tmp_path, "partitioned", MODES[mode])
    for path in (ours, theirs):
        for log in sorted(Path(path, "_delta_log").glob("*.json")):
            lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            for action in lines:
                action.get("add", {}).pop("stats", None)
            log.write_text("".join(json.dumps(a) + "\n" for a in lines))
    ids, spark_clauses, kernel_clauses = CASES["delete_when_matched"]
    _run_both(spark, ours, theirs, _source(ids, "keep"), spark_clauses, kernel_clauses)
    _assert_same_commit(ours, theirs, "no stats")
    _assert_same_table(spark, ours, theirs, "no stats")
    assert int(_last(ours)["operationMetrics"]["numTargetRowsCopied"]) > 0 if mode == "cow" else \
        int(_last(ours)["operationMetrics"]["numTargetDeletionVectorsAdded"]) > 0


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_nothing_to_change_commits_nothing(spark, tmp_path, mode):
    """Every source row matched (nothing to insert) and no matched clause: no file written, no commit."""
    ours, _ = _copies(tmp_path, "partitioned", MODES[mode])
    version, files = KernelTable(ours).version(), _table_files(ours)
    src = spark.createDataFrame(_source([1, 2, 3], "keep")).alias("s")
    result = DeltaTable.forPath(spark, ours).alias("t").merge(src, "t.id = s.id").whenNotMatchedInsertAll() \
        .whenMatchedUpdate("s.id > 100", {"v": "s.v"}).execute()
    assert result.collect()[0].num_affected_rows == 0
    assert KernelTable(ours).version() == version
    assert _table_files(ours) == files


@pytest.mark.parametrize("mode", ["dv", "cow"])
def test_concurrent_commits(spark, tmp_path, mode, monkeypatch):
    """Commits landing between the Spark MERGE's jobs and its commit: a DELETE of a file the MERGE read is a
    typed conflict (nothing of ours left behind); an append elsewhere is not, both commit."""
    from deltakernel.spark.dml.merge import SparkMerge

    ours, _ = _copies(tmp_path, "partitioned", MODES[mode])
    run = SparkMerge.run
    concurrent: list[Callable[[], Any]] = []

    def run_then_concurrent(self):
        run(self)
        concurrent.pop()()

    monkeypatch.setattr(SparkMerge, "run", run_then_concurrent)

    def merge(ids: list[int]) -> None:
        src = spark.createDataFrame(_source(ids, "keep")).alias("s")
        DeltaTable.forPath(spark, ours).alias("t").merge(src, "t.id = s.id AND t.p = 'b'") \
            .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()

    version = KernelTable(ours).version()
    concurrent.append(lambda: KernelTable(ours).delete("id = 4"))  # in partition b, which the MERGE rewrites
    with pytest.raises(CommitConflictError):
        merge([1, 4, 7, 500])
    assert KernelTable(ours).version() == version + 1  # only the concurrent commit
    assert _table_files(ours) <= referenced_files(ours)  # nothing of ours left behind
    rows = KernelTable(ours).to_pyarrow_table().num_rows
    # an append to partition a does not touch what this MERGE read (t.p = 'b'): both commit
    concurrent.append(lambda: write_deltalake(ours, _source([900], "z").set_column(1, "p", pa.array(["a"])),
                                              mode="append"))
    merge([1, 7, 600])
    assert KernelTable(ours).version() == version + 3
    table = KernelTable(ours).to_pyarrow_table()
    assert table.num_rows == rows + 1 + 1  # the concurrent row and 600 (inserted; 1 and 7 updated in place)
    assert sorted(table.filter(pa.compute.equal(table.column("s"), "new7")).column("id").to_pylist()) == [7]


# ----------------------------------------------------------------------------- pruning, fallback
def test_source_key_ranges_prune_like_the_embedded_merge(spark, tmp_path):
    """The source's key range (one aggregate job) and the IN list of a partition key prune the same files
    the embedded MERGE prunes."""
    from deltakernel.spark.dml.merge import merge
    from deltakernel.spark.dml.merge_plan import SparkClause

    ours, theirs = _copies(tmp_path, "partitioned", DV)
    src = _source([31, 32, 35], "keep")
    columns = (F.col("t.id") == F.col("s.id")) & (F.col("t.p") == F.col("s.p"))  # a Column: its SQL text prunes
    for condition, text in (("t.id = s.id", "t.id = s.id"), ("t.id = s.id AND t.p = s.p", "t.id = s.id AND t.p = s.p"),
                            (columns, "t.id = s.id AND t.p = s.p")):
        mine = merge(spark, ours, spark.createDataFrame(src).alias("s"), condition,
                     [SparkClause("matched_update", None, {"v": "s.v + 1"})], alias="t")
        other = (KernelTable(theirs).merge(src, text, source_alias="s", target_alias="t")
                 .when_matched_update({"v": "s.v + 1"}).execute())
        for key in ("num_target_files_scanned", "num_target_files_skipped_during_scan", "num_source_rows",
                    "num_target_rows_updated"):
            assert mine[key] == other[key], (condition, key)
        assert mine["num_target_files_skipped_during_scan"] > 0, condition
    _assert_same_table(spark, ours, theirs, "pruned")


def test_identity_inserts_generated_by_the_executors(spark, tmp_path, caplog):
    """Inserted rows get identity values from the executors (spark/identity.py), not from the embedded MERGE on
    the driver: the same rows as the embedded engine, identity values unique and above the high-water mark
    (not necessarily consecutive: the protocol only asks for unique values in the step's direction)."""
    from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
    from deltakernel.operations.write.api import create_table

    identity = {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False}
    schema = StructType((StructField("k", PrimitiveType("long"), True, identity),
                         StructField("id", PrimitiveType("long"), True, {}),
                         StructField("v", PrimitiveType("double"), True, {})))
    paths = []
    for name in ("ours", "theirs"):
        path = str(tmp_path / name)
        create_table(path, schema)
        write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": [1.0, 2.0, 3.0]}),
                        mode="append")
        paths.append(path)
    ours, theirs = paths
    src = pa.table({"id": pa.array([2, 9], pa.int64()), "v": [20.0, 90.0]})
    with caplog.at_level("WARNING", logger="deltakernel.spark.dml.merge"):
        _run_both(spark, ours, theirs, src, lambda b: b.whenMatchedUpdate(set={"v": "s.v"}).whenNotMatchedInsert(
            values={"id": "s.id", "v": "s.v"}), lambda k: k.when_matched_update({"v": "s.v"})
            .when_not_matched_insert({"id": "s.id", "v": "s.v"}))
    assert "runs on the driver" not in caplog.text
    mine, other = KernelTable(ours).to_pyarrow_table(), KernelTable(theirs).to_pyarrow_table()
    assert_same_rows(mine.drop_columns(["k"]), other.drop_columns(["k"]), "identity")
    assert sorted(other.column("k").to_pylist()) == [1, 2, 3, 4]
    by_id = dict(zip(mine.column("id").to_pylist(), mine.column("k").to_pylist()))
    assert [by_id[i] for i in (1, 2, 3)] == [1, 2, 3] and by_id[9] > 3  # the inserted row: above the mark
