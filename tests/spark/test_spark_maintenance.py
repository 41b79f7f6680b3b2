"""Spark `DeltaTable` maintenance (spark/maintenance), differential against the embedded engine.

Each case builds one table and copies it: delta-spark's method runs on one copy through Spark, the embedded
engine's operation on the other. Same rows, same files per partition (same bytes order for OPTIMIZE), same
history operation names and commitInfo keys; deltalake and DuckDB read the Spark result.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import assert_same_rows, commit_file, duckdb_table

from deltakernel import DeltaTable as KernelTable
from deltakernel import write_deltalake
from deltakernel.errors import (
    CommitConflictError,
    DeltaError,
    FeatureDropWaitError,
    InvalidFilterError,
    MissingFileError,
    VacuumRetentionError,
)
from deltakernel.operations.create.convert import convert_to_deltalake
from deltakernel.operations.maintenance.manifest import MANIFEST_DIR
from deltakernel.spark import DeltaTable
from deltakernel.spark.maintenance.commands import RESTORE_COLUMNS

deltalake = pytest.importorskip("deltalake")

DV = {"delta.enableDeletionVectors": "true"}
RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"
PARALLEL_DELETE = "spark.databricks.delta.vacuum.parallelDelete.enabled"


def _data(n: int, offset: int = 0) -> pa.Table:
    rng = range(offset, offset + n)
    return pa.table({
        "id": pa.array(list(rng), pa.int64()),
        "x": pa.array([(i * 37) % 101 for i in rng], pa.int64()),
        "y": [f"s{(i * 13) % 29:02d}" for i in rng],
        "p": [["a", "b c"][i % 2] for i in rng],
    })


def _twin(tmp_path: Path, build) -> tuple[str, str]:
    base = tmp_path / "base"
    build(str(base))
    ours, theirs = tmp_path / "spark", tmp_path / "embedded"
    shutil.copytree(base, ours)
    shutil.copytree(base, theirs)
    return str(ours), str(theirs)


def _rows(path: str, version: int | None = None) -> pa.Table:
    return KernelTable(path, version=version).to_pyarrow_table()


def _files_per_partition(path: str) -> Counter:
    files = KernelTable(path)._snapshot.files
    return Counter(json.dumps(dict(pv or {}), sort_keys=True) for pv in files.column("partition_values").to_pylist())


def _new_files(path: str) -> dict[str, pa.Table]:
    """Contents (in file order) of the files the last commit added, by partition."""
    version = KernelTable(path).version()
    adds = [a["add"] for a in map(json.loads, commit_file(path, version).read_text().splitlines()) if "add" in a]
    out: dict[str, list[pa.Table]] = {}
    for a in sorted(adds, key=lambda a: json.dumps(a["partitionValues"], sort_keys=True)):
        from urllib.parse import unquote

        key = json.dumps(a["partitionValues"], sort_keys=True)
        out.setdefault(key, []).append(pq.read_table(os.path.join(path, unquote(a["path"])), partitioning=None))
    return {k: pa.concat_tables(v) for k, v in out.items()}


def _last_commit(path: str) -> dict:
    return _actions(path, "commitInfo")[0]


def _actions(path: str, kind: str) -> list[dict]:
    version = KernelTable(path).version()
    return [a[kind] for a in map(json.loads, commit_file(path, version).read_text().splitlines()) if kind in a]


def _interop(path: str, expected: pa.Table) -> None:
    """deltalake (its DataFusion scan, which applies deletion vectors) and DuckDB read what Spark left."""
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    assert_same_rows(pa.table(qb.execute("select * from t").read_all()).select(expected.column_names), expected,
                     "deltalake")
    assert_same_rows(duckdb_table(path).select(expected.column_names), expected, "duckdb")


# ----------------------------------------------------------------------------- OPTIMIZE
def _small_files(path: str, conf: dict[str, str] | None = None) -> None:
    for i in range(5):
        write_deltalake(path, _data(40, i * 40), partition_by=["p"], mode="append", configuration=conf)
    KernelTable(path).delete("id % 10 = 3")  # deletion vectors (when enabled): purged by the rewrite


@pytest.mark.parametrize("conf", [DV, {}], ids=["dv", "cow"])
def test_compaction_matches_embedded(spark, tmp_path, conf):
    ours, theirs = _twin(tmp_path, lambda p: _small_files(p, conf))
    before = _rows(ours)
    df = DeltaTable.forPath(spark, ours).optimize().executeCompaction()
    expected = KernelTable(theirs).optimize.compact()

    assert df.columns == ["path", "metrics"]
    m = df.collect()[0]["metrics"]
    # with DVs every partition has 5 files; copy-on-write's DELETE already rewrote "b c" into one (skipped)
    parts = 2 if conf else 1
    assert m.numFilesRemoved == expected["numFilesRemoved"] == 5 * parts
    assert m.numFilesAdded == expected["numFilesAdded"] == parts
    assert m.filesAdded.totalFiles == parts
    assert m.filesRemoved.totalSize == json.loads(expected["filesRemoved"])["totalSize"]
    assert m.partitionsOptimized == expected["partitionsOptimized"] == parts
    assert m.totalConsideredFiles == expected["totalConsideredFiles"] and m.numBins == parts
    assert m.totalFilesSkipped == expected["totalFilesSkipped"] == 2 - parts
    assert m.preserveInsertionOrder is True and m.zOrderStats is None
    assert m.deletionVectorStats.numDeletionVectorsRemoved == (5 if conf else 0)  # odd ids live in "b c"
    assert m.deletionVectorStats.numDeletionVectorRowsRemoved == (20 if conf else 0)
    assert df.collect()[0]["path"].startswith("file:") and df.collect()[0]["path"].endswith("/spark")

    assert_same_rows(_rows(ours), before, "rows kept")
    assert _files_per_partition(ours) == _files_per_partition(theirs) == Counter({'{"p": "a"}': 1, '{"p": "b c"}': 1})
    mine, theirs_files = _new_files(ours), _new_files(theirs)
    assert mine.keys() == theirs_files.keys()
    for k in mine:  # insertion order kept: the same rows in the same order as the embedded engine's file
        assert mine[k].equals(theirs_files[k]), k
    ci, ref = _last_commit(ours), _last_commit(theirs)
    assert ci["operation"] == ref["operation"] == "OPTIMIZE"
    assert set(ci["operationParameters"]) == set(ref["operationParameters"])
    assert set(ci["operationMetrics"]) == set(ref["operationMetrics"])
    assert ci["operationMetrics"]["numRemovedFiles"] == ref["operationMetrics"]["numRemovedFiles"]
    assert all(a["dataChange"] is False for a in _actions(ours, "add") + _actions(ours, "remove"))
    assert [h["operation"] for h in KernelTable(ours).history(1)] == ["OPTIMIZE"]
    _interop(ours, before)

    again = DeltaTable.forPath(spark, ours).optimize().executeCompaction().collect()[0]["metrics"]
    assert again.numFilesAdded == 0 and again.numBins == 0 and KernelTable(ours).version() == KernelTable(theirs).version()


def test_compaction_where_and_row_tracking(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(5):
        write_deltalake(path, _data(40, i * 40), partition_by=["p"], mode="append",
                        configuration={"delta.enableRowTracking": "true"})
    KernelTable(path).update({"x": "x + 1"}, predicate="id % 10 = 3")  # new row commit versions in "b c"
    read = spark.read.format("delta").option("readRowTracking", "true")
    ids_before = sorted(map(tuple, read.load(path).select("id", "_row_id", "_row_commit_version").collect()))
    with pytest.raises(InvalidFilterError, match="non-partition column"):
        DeltaTable.forPath(spark, path).optimize().where("id > 3").executeCompaction()
    before = _files_per_partition(path)['{"p": "b c"}']
    df = DeltaTable.forPath(spark, path).optimize().where("p = 'a'").executeCompaction()
    assert df.collect()[0]["metrics"].numFilesRemoved == 5
    assert _files_per_partition(path) == Counter({'{"p": "a"}': 1, '{"p": "b c"}': before})  # "b c" left alone
    # delta-spark records the unresolved Catalyst text of each filter
    assert json.loads(_last_commit(path)["operationParameters"]["predicate"]) == ["('p = a)"]
    assert _last_commit(path)["tags"]["delta.rowTracking.preserved"] == "true"
    ids_after = sorted(map(tuple, read.load(path).select("id", "_row_id", "_row_commit_version").collect()))
    assert ids_after == ids_before  # row ids and commit versions survive the rewrite on the executors


def test_zorder_matches_embedded(spark, tmp_path):
    def build(p: str) -> None:
        for i in range(3):
            write_deltalake(p, _data(60, i * 60), partition_by=["p"], mode="append")

    ours, theirs = _twin(tmp_path, build)
    before = _rows(ours)
    df = DeltaTable.forPath(spark, ours).optimize().executeZOrderBy("x", "y")
    expected = KernelTable(theirs).optimize.z_order(["x", "y"])
    m = df.collect()[0]["metrics"]
    assert m.numFilesRemoved == expected["numFilesRemoved"] == 6 and m.numFilesAdded == expected["numFilesAdded"]
    assert m.preserveInsertionOrder is False and m.zOrderStats.strategyName == "all"
    assert m.zOrderStats.mergedFiles.num == 6
    mine, ref = _new_files(ours), _new_files(theirs)
    for k in mine:  # the same curve order as the embedded engine
        assert mine[k].equals(ref[k]), k
    ci = _last_commit(ours)
    assert json.loads(ci["operationParameters"]["zOrderBy"]) == ["x", "y"]
    assert set(ci["operationMetrics"]) == set(_last_commit(theirs)["operationMetrics"])
    _interop(ours, before)
    with pytest.raises(DeltaError, match="partition column"):
        DeltaTable.forPath(spark, ours).optimize().executeZOrderBy(["p"])


def test_optimize_concurrent_commits_and_task_errors(spark, tmp_path, monkeypatch):
    """A concurrent append rebases; a concurrent DELETE of a rewritten file conflicts and the job's files are
    deleted; a task's DeltaError reaches the driver as itself; a failed OPTIMIZE leaves the table as it was."""
    import deltakernel.spark.maintenance.optimize as opt

    path = str(tmp_path / "t")
    _small_files(path)
    real = opt._run_bins
    concurrent = {"op": lambda: write_deltalake(path, _data(3, 900), partition_by=["p"], mode="append")}

    def run_then_commit_elsewhere(*args, **kwargs):
        out = real(*args, **kwargs)
        concurrent["op"]()
        return out

    monkeypatch.setattr(opt, "_run_bins", run_then_commit_elsewhere)
    DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert [h["operation"] for h in KernelTable(path).history(2)] == ["OPTIMIZE", "WRITE"]
    assert _rows(path).num_rows == 200 - 20 + 3

    write_deltalake(path, _data(40, 2000), partition_by=["p"], mode="append")  # something to compact again
    version = KernelTable(path).version()
    on_disk = _listing(path)
    concurrent["op"] = lambda: KernelTable(path).delete("id = 2000")
    with pytest.raises(CommitConflictError):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert KernelTable(path).version() == version + 1 and KernelTable(path).history(1)[0]["operation"] == "DELETE"
    assert _listing(path) - on_disk <= {str(Path(p).relative_to(path)) for p in _new_paths(path)}  # none of ours left

    monkeypatch.setattr(opt, "_run_bins", real)
    victim = KernelTable(path)._snapshot.files.column("path")[0].as_py()
    os.remove(os.path.join(path, victim.replace("%20", " ")))
    version = KernelTable(path).version()
    with pytest.raises(MissingFileError):
        DeltaTable.forPath(spark, path).optimize().executeCompaction()
    assert KernelTable(path).version() == version


def _new_paths(path: str) -> list[str]:
    return [os.path.join(path, a["path"].replace("%20", " ")) for a in _actions(path, "add")]


# ----------------------------------------------------------------------------- VACUUM
def _with_garbage(path: str) -> None:
    write_deltalake(path, _data(30), partition_by=["p"])
    write_deltalake(path, _data(30, 100), partition_by=["p"], mode="overwrite")  # v0's files removed
    old = time.time() - 3 * 86400
    orphan = Path(path) / "p=a" / "orphan.parquet"
    orphan.write_bytes(b"junk")
    (Path(path) / "_hidden.txt").write_bytes(b"kept")
    for f in Path(path).rglob("*.parquet"):
        os.utime(f, (old, old))


def _listing(path: str) -> set[str]:
    return {str(p.relative_to(path)) for p in Path(path).rglob("*") if p.is_file() and "_delta_log" not in p.parts}


@pytest.mark.parametrize("parallel", [False, True], ids=["driver", "parallel-delete"])
def test_vacuum_matches_embedded(spark, tmp_path, parallel):
    ours, theirs = _twin(tmp_path, _with_garbage)
    expected_rows = _rows(ours)
    table = DeltaTable.forPath(spark, ours)
    with pytest.raises(VacuumRetentionError):
        table.vacuum(0)
    assert KernelTable(ours).version() == 1
    spark.conf.set(RETENTION_CHECK, "false")
    spark.conf.set(PARALLEL_DELETE, str(parallel).lower())
    try:
        out = table.vacuum(0)
    finally:
        spark.conf.unset(RETENTION_CHECK)
        spark.conf.unset(PARALLEL_DELETE)
    assert out.columns == [] and out.count() == 0
    KernelTable(theirs).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)
    assert _listing(ours) == _listing(theirs)
    assert "p=a/orphan.parquet" not in _listing(ours) and "_hidden.txt" in _listing(ours)
    assert [h["operation"] for h in KernelTable(ours).history(2)] == ["VACUUM END", "VACUUM START"]
    end, start = KernelTable(ours).history(2)
    ref_end, ref_start = KernelTable(theirs).history(2)
    assert start["operationMetrics"] == ref_start["operationMetrics"]
    assert start["operationParameters"] == ref_start["operationParameters"]
    assert json.loads(start["operationParameters"]["retentionCheckEnabled"]) is False
    assert end["operationMetrics"] == ref_end["operationMetrics"] and end["operationParameters"]["status"] == "COMPLETED"
    _interop(ours, expected_rows)


def _commit_infos(path: str) -> list[dict]:
    infos = []
    for f in sorted(Path(path, "_delta_log").glob("*.json")):
        infos.append(next(json.loads(ln)["commitInfo"] for ln in f.read_text().splitlines()
                          if ln.strip() and "commitInfo" in json.loads(ln)))
    return infos


@pytest.mark.parametrize("how", ["api", "api-parallel-delete", "sql", "sql-retain", "sql-lite"])
def test_vacuum_with_nothing_to_delete_commits_start_and_end(spark, tmp_path, how):
    """delta-spark's VacuumCommand records VACUUM START / END for every non-dry-run VACUUM on file stores, also
    when it deletes nothing (the embedded engine follows deltalake, which commits nothing then)."""
    path = str(tmp_path / "t")
    write_deltalake(path, _data(10), partition_by=["p"])
    assert spark.sql(f"VACUUM delta.`{path}` DRY RUN").count() == 0
    spark.sql(f"VACUUM delta.`{path}` LITE DRY RUN").collect()
    assert KernelTable(path).version() == 0  # a dry run commits nothing
    if how == "api-parallel-delete":
        spark.conf.set(PARALLEL_DELETE, "true")
    try:
        if how.startswith("api"):
            out = DeltaTable.forPath(spark, path).vacuum()
            assert out.columns == [] and out.count() == 0
        else:
            retain = " RETAIN 200 HOURS" if how == "sql-retain" else ""
            lite = " LITE" if how == "sql-lite" else ""
            rows = spark.sql(f"VACUUM delta.`{path}`{retain}{lite}").collect()
            assert [r.path for r in rows] == ["file:" + path]
    finally:
        spark.conf.unset(PARALLEL_DELETE)
    infos = _commit_infos(path)
    assert [i["operation"] for i in infos] == ["WRITE", "VACUUM START", "VACUUM END"]
    assert [h["operation"] for h in DeltaTable.forPath(spark, path).history().collect()][:2] == \
        ["VACUUM END", "VACUUM START"]
    start, end = infos[1], infos[2]
    # delta-spark's VacuumStart: specifiedRetentionMillis only when a retention was given
    params = {k: json.loads(v) for k, v in start["operationParameters"].items()}
    expected = {"retentionCheckEnabled": True, "defaultRetentionMillis": 7 * 24 * 3_600_000}
    if how == "sql-retain":
        expected["specifiedRetentionMillis"] = 200 * 3_600_000
    assert params == expected
    assert {k: int(v) for k, v in start["operationMetrics"].items()} == {"numFilesToDelete": 0,
                                                                         "sizeOfDataToDelete": 0}
    assert end["operationParameters"] == {"status": "COMPLETED"}
    assert {k: int(v) for k, v in end["operationMetrics"].items()} == {"numDeletedFiles": 0,
                                                                       "numVacuumedDirectories": 0}
    assert start["readVersion"] == 0 and end["readVersion"] == 1
    assert KernelTable(path).to_pyarrow_table().num_rows == 10


def test_vacuum_logging_setting_and_the_embedded_engine(spark, tmp_path):
    """`spark.databricks.delta.vacuum.logging.enabled=false` records nothing (delta-spark's setting); the
    embedded engine's VACUUM with nothing to delete commits nothing, as deltalake's."""
    import deltalake

    path = str(tmp_path / "t")
    write_deltalake(path, _data(10))
    spark.conf.set("spark.databricks.delta.vacuum.logging.enabled", "false")
    try:
        DeltaTable.forPath(spark, path).vacuum()
    finally:
        spark.conf.unset("spark.databricks.delta.vacuum.logging.enabled")
    assert KernelTable(path).version() == 0
    assert KernelTable(path).vacuum(dry_run=False) == [] and KernelTable(path).version() == 0
    twin = str(tmp_path / "dl")
    deltalake.write_deltalake(twin, _data(10))
    assert deltalake.DeltaTable(twin).vacuum(dry_run=False) == [] and deltalake.DeltaTable(twin).version() == 0


# ----------------------------------------------------------------------------- RESTORE
def _four_versions(path: str) -> None:
    write_deltalake(path, _data(20), partition_by=["p"])
    write_deltalake(path, _data(20, 20), partition_by=["p"], mode="append")
    KernelTable(path).delete("id < 5")
    write_deltalake(path, _data(7, 500), partition_by=["p"], mode="overwrite")
    for v in range(4):  # commit times 2024-01-01 00:00, 01:00, 02:00, 03:00 UTC
        t = 1704067200 + v * 3600
        os.utime(commit_file(path, v), (t, t))


def test_restore_matches_embedded(spark, tmp_path):
    ours, theirs = _twin(tmp_path, _four_versions)
    df = DeltaTable.forPath(spark, ours).restoreToVersion(1)
    assert tuple(df.columns) == RESTORE_COLUMNS
    row = df.collect()[0]
    KernelTable(theirs).restore(1)
    ref = KernelTable(theirs).history(1)[0]["operationMetrics"]
    assert row.asDict() == {
        "table_size_after_restore": int(ref["tableSizeAfterRestore"]),
        "num_of_files_after_restore": int(ref["numOfFilesAfterRestore"]),
        "num_removed_files": int(ref["numRemovedFiles"]), "num_restored_files": int(ref["numRestoredFiles"]),
        "removed_files_size": int(ref["removedFilesSize"]), "restored_files_size": int(ref["restoredFilesSize"])}
    assert row.num_restored_files == 4 and row.num_removed_files == 2
    assert_same_rows(_rows(ours), _rows(ours, 1), "restored v1")
    assert KernelTable(ours).history(1)[0]["operation"] == "RESTORE"
    _interop(ours, _rows(ours, 1))

    # 02:30 in the session time zone (UTC in the test session): the version current then is 2
    df = DeltaTable.forPath(spark, ours).restoreToTimestamp("2024-01-01 02:30:00")
    assert df.collect()[0].num_of_files_after_restore == KernelTable(ours, version=2)._snapshot.num_files
    assert_same_rows(_rows(ours), _rows(ours, 2), "restored v2")
    with pytest.raises(DeltaError):
        DeltaTable.forPath(spark, ours).restoreToVersion("1")
    with pytest.raises(DeltaError):
        DeltaTable.forPath(spark, ours).restoreToTimestamp("not a time")


# ----------------------------------------------------------------------------- CLONE
def test_deep_and_shallow_clone(spark, tmp_path):
    src = str(tmp_path / "src")
    write_deltalake(src, _data(40), partition_by=["p"], configuration=DV)
    write_deltalake(src, _data(40, 40), partition_by=["p"], mode="append")
    KernelTable(src).delete("id % 9 = 0")
    source_rows = _rows(src)
    table = DeltaTable.forPath(spark, src)

    deep = table.clone(str(tmp_path / "deep"), isShallow=False)
    deep_path = str(tmp_path / "deep")
    assert isinstance(deep, DeltaTable) and deep.toDF().count() == source_rows.num_rows
    adds = _actions(deep_path, "add")
    assert all(not a["path"].startswith(("/", "file:")) for a in adds)
    assert all(os.path.exists(os.path.join(deep_path, a["path"].replace("%20", " "))) for a in adds)
    assert {a["deletionVector"]["storageType"] for a in adds if a.get("deletionVector")} == {"u"}
    assert_same_rows(_rows(deep_path), source_rows, "deep clone")
    _interop(deep_path, source_rows)
    ci = _last_commit(deep_path)
    embedded = KernelTable(src).clone(str(tmp_path / "embedded"), shallow=False)
    ref = _last_commit(embedded.table_uri)
    assert ci["operation"] == ref["operation"] == "CLONE" and ci["operationParameters"] == ref["operationParameters"]
    assert json.loads(ci["operationParameters"]["isShallow"]) is False
    assert ci["operationMetrics"] == ref["operationMetrics"]
    # the DV files were copied once each, under new names: deleting the source leaves the clone whole
    shallow_path = str(tmp_path / "shallow")
    table.clone(shallow_path, isShallow=True, properties={"delta.appendOnly": "true"})
    assert all(a["path"].startswith("/") for a in _actions(shallow_path, "add"))
    assert KernelTable(shallow_path).metadata().configuration["delta.appendOnly"] == "true"
    assert_same_rows(_rows(shallow_path), source_rows, "shallow clone")

    with pytest.raises(DeltaError, match="already exists"):
        table.clone(deep_path, isShallow=False)
    table.cloneAtVersion(0, f"delta.`{deep_path}`", isShallow=False, replace=True)
    assert KernelTable(deep_path).version() == 1
    assert_same_rows(_rows(deep_path), _rows(src, 0), "replaced by v0")
    assert int(_last_commit(deep_path)["operationMetrics"]["numRemovedFiles"]) == len(adds)
    readded = _actions(deep_path, "add")  # v0's files had the same names as files the target holds: renamed
    assert readded and not {a["path"] for a in readded} & {a["path"] for a in adds}
    assert all(os.path.exists(os.path.join(deep_path, a["path"].replace("%20", " "))) for a in adds + readded)
    shutil.rmtree(src)
    assert_same_rows(_rows(deep_path), _data(40), "deep clone without its source")
    broken = tmp_path / "broken"  # a deep clone of the shallow clone: its files are gone with the source
    with pytest.raises(MissingFileError):
        DeltaTable.forPath(spark, shallow_path).clone(str(broken), isShallow=False)
    assert not (broken / "_delta_log").exists()
    with pytest.raises(DeltaError, match="catalog"):
        DeltaTable.forPath(spark, deep_path).clone("some_table")


# ----------------------------------------------------------------------------- CONVERT / GENERATE / DROP FEATURE
def test_convert_to_delta_matches_embedded(spark, tmp_path):
    base = str(tmp_path / "pq")
    spark.range(30).withColumn("part", F.col("id") % 3).withColumn("s", F.col("id").cast("string")) \
        .write.partitionBy("part").parquet(base)
    theirs = str(tmp_path / "pq_embedded")
    shutil.copytree(base, theirs)
    table = DeltaTable.convertToDelta(spark, f"parquet.`{base}`", "part long")
    convert_to_deltalake(theirs, partition_by=pa.schema([("part", pa.int64())]), partition_strategy="hive")
    ours, ref = KernelTable(base), KernelTable(theirs)
    assert ours.schema().to_json() == ref.schema().to_json() and ours.partition_columns() == ["part"]
    assert sorted(ours.files()) == sorted(ref.files())
    assert ours.history(1)[0]["operation"] == "CONVERT"
    expected = _rows(theirs)
    assert_same_rows(table.toDF().toArrow().select(expected.column_names), expected, "spark read")
    _interop(base, expected)
    assert DeltaTable.convertToDelta(spark, f"delta.`{base}`").toDF().count() == 30
    assert DeltaTable.convertToDelta(spark, f"parquet.`{base}`").toDF().count() == 30  # already Delta: left alone
    assert ours.version() == KernelTable(base).version() == 0
    with pytest.raises(DeltaError, match="parquet"):
        DeltaTable.convertToDelta(spark, "some_table")


def test_generate_symlink_manifest(spark, tmp_path):
    ours, theirs = _twin(tmp_path, lambda p: write_deltalake(p, _data(30), partition_by=["p"]))
    DeltaTable.forPath(spark, ours).generate("symlink_format_manifest")
    from deltakernel.operations.maintenance.manifest import generate

    generate(KernelTable(theirs)._snapshot, "symlink_format_manifest")
    mine = {str(p.relative_to(ours)): p.read_text().replace(ours, "<root>") for p in Path(ours).rglob("manifest")}
    ref = {str(p.relative_to(theirs)): p.read_text().replace(theirs, "<root>") for p in Path(theirs).rglob("manifest")}
    assert mine == ref and sorted(mine) == [f"{MANIFEST_DIR}/p=a/manifest", f"{MANIFEST_DIR}/p=b c/manifest"]
    # what Presto does with them: read the listed files
    listed = [r.value for r in spark.read.text(f"{ours}/{MANIFEST_DIR}/*/manifest").collect()]
    assert spark.read.parquet(*listed).count() == 30
    with pytest.raises(DeltaError, match="not supported"):
        DeltaTable.forPath(spark, ours).generate("hive")


def test_drop_feature_support(spark, tmp_path):
    def build(p: str) -> None:
        write_deltalake(p, _data(10), configuration={"delta.enableChangeDataFeed": "true", **DV})
        KernelTable(p).delete("id = 1")

    ours, theirs = _twin(tmp_path, build)
    DeltaTable.forPath(spark, ours).dropFeatureSupport("changeDataFeed")
    KernelTable(theirs).alter.drop_feature("changeDataFeed")
    assert KernelTable(ours).protocol() == KernelTable(theirs).protocol()
    assert "changeDataFeed" not in (KernelTable(ours).protocol().writer_features or [])
    assert KernelTable(ours).history(1)[0]["operation"] == "DROP FEATURE"
    with pytest.raises(FeatureDropWaitError):
        DeltaTable.forPath(spark, ours).dropFeatureSupport("deletionVectors")
    assert_same_rows(_rows(ours), _rows(theirs), "rows")
