"""DeltaTable.delete: deletion vectors (merge-on-read), copy-on-write, partition-only deletes, change data,
row tracking, conflicts and bad input — checked on the log, the DV files and through other readers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteReadError,
    ConstraintViolationError,
    DeltaError,
    InvalidFilterError,
)
from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector

try:
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401

DV = {"delta.enableDeletionVectors": "true"}


def _data(n: int = 20, offset: int = 0) -> pa.Table:
    rng = range(offset, offset + n)
    return pa.table({
        "id": pa.array(list(rng), pa.int64()),
        "p": [("a" if i % 2 else "b") for i in rng],
        "s": [None if i % 5 == 0 else f"s{i}" for i in rng],
    })


def _ids(path: Path | str, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(str(path), version=version).to_pyarrow_table().column("id").to_pylist())


def _dvs(path: Path) -> dict[str, dict]:
    return {a["add"]["path"]: a["add"]["deletionVector"] for a in
            _live_adds(path) if a["add"].get("deletionVector")}


def _live_adds(path: Path) -> list[dict]:
    dt = DeltaTable(str(path))
    out = []
    for r in dt.snapshot.files.select(["path", "deletion_vector", "stats"]).to_pylist():
        add = {"path": r["path"], "stats": r["stats"]}
        if r["deletion_vector"]:
            add["deletionVector"] = r["deletion_vector"]
        out.append({"add": add})
    return out


def _dv_files(path: Path) -> list[Path]:
    return sorted(path.rglob("deletion_vector_*.bin"))


# ----------------------------------------------------------------------------- deletion vectors
def test_dv_delete_writes_one_dv_file_and_readers_agree(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    write_deltalake(path, _data(10, 10), mode="append")
    dt = DeltaTable(str(path))
    files_before = set(dt.files())
    metrics = dt.delete("id % 3 = 0")
    expected = [i for i in range(20) if i % 3]
    assert dt.version() == 2
    assert metrics["num_deleted_rows"] == 7
    assert metrics["num_deletion_vectors_added"] == 2
    assert metrics["num_removed_files"] == 0 and metrics["num_added_files"] == 0
    assert _ids(path) == expected
    assert set(dt.files()) == files_before  # same data files, no rewrite
    assert len(_dv_files(path)) == 1  # one DV file for the whole operation
    acts = read_actions(path, 2)
    adds = [a["add"] for a in acts if "add" in a]
    removes = [a["remove"] for a in acts if "remove" in a]
    assert {a["path"] for a in adds} == {r["path"] for r in removes} == files_before
    for a in adds:
        stats = json.loads(a["stats"])
        assert stats["tightBounds"] is False and stats["numRecords"] == 10
        desc = DeletionVectorDescriptor.from_dict(a["deletionVector"])
        assert desc.storage_type == "u"
        rows = read_deletion_vector(dt.snapshot.storage, desc)
        assert rows.size == desc.cardinality
    info = next(a["commitInfo"] for a in acts if "commitInfo" in a)
    assert info["operation"] == "DELETE"
    assert info["operationParameters"]["predicate"] == "id % 3 = 0"  # deltalake's form (the Spark engine: a list)
    assert info["operationMetrics"]["numDeletedRows"] == "7"
    # other readers see the same rows
    assert sorted(duckdb_table(path).column("id").to_pylist()) == expected
    deltalake = pytest.importorskip("deltalake")
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    assert sorted(pa.table(qb.execute("select id from t").read_all()).column("id").to_pylist()) == expected


def test_dv_delete_unions_existing_dv_and_counts_only_new_rows(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), configuration=DV)
    dt = DeltaTable(str(path))
    assert dt.delete("id < 5")["num_deleted_rows"] == 5
    first = DeletionVectorDescriptor.from_dict(next(iter(_dvs(path).values())))
    m = dt.delete("id < 8")  # 0..4 already deleted: only 5, 6, 7 are new
    assert m["num_deleted_rows"] == 3
    assert m["num_deletion_vectors_updated"] == 1 and m["num_deletion_vectors_removed"] == 1
    desc = DeletionVectorDescriptor.from_dict(next(iter(_dvs(path).values())))
    assert desc != first and desc.cardinality == 8
    assert read_deletion_vector(dt.snapshot.storage, desc).tolist() == list(range(8))
    remove = next(a["remove"] for a in read_actions(path, 2) if "remove" in a)
    assert remove["deletionVector"] == first.to_dict()  # the remove names the DV it replaces
    assert _ids(path) == list(range(8, 20))
    # deleting only already-deleted rows changes nothing and commits nothing
    m = dt.delete("id < 3")
    assert m["num_deleted_rows"] == 0 and dt.version() == 2
    assert _ids(path, 1) == list(range(5, 20))  # time travel


def test_dv_delete_removes_a_file_whose_rows_all_go(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    write_deltalake(path, _data(10, 10), mode="append")
    dt = DeltaTable(str(path))
    dt.delete("id in (1, 2)")
    m = dt.delete("id < 10")  # the rest of the first file
    assert m["num_deleted_rows"] == 8 and m["num_removed_files"] == 1 and m["num_deletion_vectors_removed"] == 1
    assert len(dt.files()) == 1 and not _dvs(path)
    assert _ids(path) == list(range(10, 20))


def test_dv_partitioned_and_partition_only_delete(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=DV)
    dt = DeltaTable(str(path))
    assert dt.delete("p = 'a' and id > 10")["num_deleted_rows"] == 5
    # partition-only: the whole file goes, rows counted without the ones its DV already deletes
    m = dt.delete("p = 'a'")
    assert m["num_deleted_rows"] == 5 and m["num_removed_files"] == 1
    assert _ids(path) == list(range(0, 20, 2))
    assert sorted(duckdb_table(path).column("id").to_pylist()) == list(range(0, 20, 2))


def test_dv_on_column_mapped_checkpointed_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    conf = {**DV, "delta.columnMapping.mode": "name", "delta.checkpointInterval": "2"}
    write_deltalake(path, _data(10), configuration=conf, partition_by=["p"])
    write_deltalake(path, _data(10, 10), mode="append")
    dt = DeltaTable(str(path))
    dt.create_checkpoint()
    m = dt.delete("s is null or id = 13")
    assert m["num_deleted_rows"] == 5 and m["num_deletion_vectors_added"] >= 1
    expected = [i for i in range(20) if i % 5 and i != 13]
    assert _ids(path) == expected
    # the post-commit checkpoint (interval 2) holds the re-added files with their DVs
    assert (path / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
    (path / "_delta_log" / "00000000000000000002.json").unlink()  # force the read through the checkpoint
    assert _ids(path) == expected and _dvs(path)
    assert sorted(duckdb_table(path).column("id").to_pylist()) == expected


def test_dv_file_under_random_prefix(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**DV, "delta.randomizeFilePrefixes": "true"})
    DeltaTable(str(path)).delete("id = 3")
    (dv_file,) = _dv_files(path)
    assert dv_file.parent != path and len(dv_file.parent.name) == 2
    assert _ids(path) == [i for i in range(10) if i != 3]


def test_dv_property_off_means_copy_on_write(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={"delta.enableDeletionVectors": "false"})
    dt = DeltaTable(str(path))
    before = set(dt.files())
    m = dt.delete("id = 3")
    assert m["num_removed_files"] == 1 and m["num_added_files"] == 1 and m["num_copied_rows"] == 9
    assert not _dv_files(path) and not (set(dt.files()) & before)
    assert _ids(path) == [i for i in range(10) if i != 3]


# ----------------------------------------------------------------------------- copy-on-write
def test_cow_rewrites_only_touched_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    write_deltalake(path, _data(10, 10), mode="append")
    dt = DeltaTable(str(path))
    untouched = {f for f in dt.files()}
    m = dt.delete("id >= 12 and id < 15")
    assert m == {**m, "num_removed_files": 1, "num_added_files": 1, "num_deleted_rows": 3, "num_copied_rows": 7}
    assert len(untouched & set(dt.files())) == 1
    assert _ids(path) == [i for i in range(20) if not 12 <= i < 15]


def test_null_predicate_rows_are_not_deleted(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    dt = DeltaTable(str(path))
    assert dt.delete("s <> 's3'")["num_deleted_rows"] == 7  # s NULL for 0 and 5: not matched
    assert _ids(path) == [0, 3, 5]


def test_partition_only_predicate_is_exact_on_null_partitions(tmp_path: Path) -> None:
    path = tmp_path / "t"
    data = pa.table({"id": [1, 2, 3], "p": ["x", None, "y"]})
    write_deltalake(path, data, partition_by=["p"])
    dt = DeltaTable(str(path))
    m = dt.delete("NOT (p = 'x')")  # NULL partition: NOT(NULL) is NULL, the file stays
    assert m["num_removed_files"] == 1 and m["num_deleted_rows"] == 1
    assert _ids(path) == [1, 2]


def test_delete_everything(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    DeltaTable(str(path)).delete("id < 3")
    dt = DeltaTable(str(path))
    m = dt.delete()
    assert m["num_deleted_rows"] == 7 and m["num_removed_files"] == 1
    assert "predicate" not in read_actions(path, 2)[0]["commitInfo"]["operationParameters"]  # as deltalake
    assert dt.to_pyarrow_table().num_rows == 0 and dt.files() == []


# ----------------------------------------------------------------------------- change data, row tracking
@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_change_data_feed_records_deleted_rows(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"],
                    configuration={**conf, "delta.enableChangeDataFeed": "true"})
    dt = DeltaTable(str(path))
    dt.delete("id > 14")  # partly deletes both files
    dt.delete("id < 15 and p = 'a'")  # the rest of p=a: a whole file
    cdf = dt.load_cdf(starting_version=1)
    cdf = cdf.read_all() if hasattr(cdf, "read_all") else cdf
    got = sorted((r["id"], r["p"], r["_change_type"], r["_commit_version"]) for r in cdf.to_pylist())
    want = sorted([(i, "a" if i % 2 else "b", "delete", 1) for i in range(15, 20)]
                  + [(i, "a", "delete", 2) for i in range(1, 15, 2)])
    assert got == want
    assert _ids(path) == [i for i in range(0, 15, 2)]


@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_row_ids_survive_delete(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**conf, "delta.enableRowTracking": "true"})
    write_deltalake(path, _data(10, 10), mode="append")

    def ids() -> dict[int, tuple[int, int]]:
        t = DeltaTable(str(path)).to_pyarrow_table(row_tracking=True)
        return {r["id"]: (r["_row_id"], r["_row_commit_version"]) for r in t.to_pylist()}

    before = ids()
    DeltaTable(str(path)).delete("id % 4 = 1")
    after = ids()
    assert after == {k: v for k, v in before.items() if k % 4 != 1}


# ----------------------------------------------------------------------------- bad input, append-only
@pytest.mark.parametrize("bad", ["nope > 1", "id >", "id + 1", "id > 1 and nope.x = 2"])
def test_bad_predicates_raise_and_leave_the_table(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    dt = DeltaTable(str(path))
    with pytest.raises(InvalidFilterError):
        dt.delete(bad)
    assert dt.version() == 0 and not _dv_files(path) and _ids(path) == list(range(10))


def test_append_only_table_refuses_delete_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**DV, "delta.appendOnly": "true"})
    dt = DeltaTable(str(path))
    with pytest.raises(ConstraintViolationError):
        dt.delete("id = 1")
    assert dt.version() == 0 and not _dv_files(path) and _ids(path) == list(range(10))


# ----------------------------------------------------------------------------- conflicts
def test_concurrent_deletes_of_the_same_file_conflict(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.delete("id = 1")
    # a re-added the file b read (with a DV): delta-spark checks added files first, so this is a
    # concurrent append into what b read
    with pytest.raises(ConcurrentAppendError):
        b.delete("id = 2")
    assert b.version() == 0 and len(_dv_files(path)) == 1  # b's DV file deleted, table as a left it
    assert _ids(path) == [i for i in range(10) if i != 1]


def test_concurrent_remove_of_a_file_read_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=DV)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.delete("p = 'a'")  # removes the whole file, adds nothing
    with pytest.raises(ConcurrentDeleteReadError):
        b.delete("p = 'a' and id > 10")
    assert not _dv_files(path) and _ids(path) == list(range(0, 20, 2))


def test_disjoint_deletes_both_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=DV)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.delete("p = 'a' and id > 10")
    b.delete("p = 'b' and id > 10")
    assert b.version() == 2
    assert _ids(path) == [i for i in range(20) if i <= 10]


def test_concurrent_blind_append_in_range(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=DV)
    a = DeltaTable(str(path))
    write_deltalake(path, pa.table({"id": pa.array([101], pa.int64()), "p": ["a"], "s": ["x"]}), mode="append")
    # WriteSerializable (the default): a blind append does not conflict, and its row is not deleted
    a.delete("p = 'a' and id > 10")
    assert a.version() == 2 and 101 in _ids(path)


def test_concurrent_append_in_range_conflicts_under_serializable(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration={**DV, "delta.isolationLevel": "Serializable"})
    a = DeltaTable(str(path))
    write_deltalake(path, pa.table({"id": pa.array([101], pa.int64()), "p": ["a"], "s": ["x"]}), mode="append")
    with pytest.raises(ConcurrentAppendError):
        a.delete("p = 'a' and id > 10")
    # an append outside the predicate's range does not conflict
    c = DeltaTable(str(path))
    write_deltalake(path, pa.table({"id": pa.array([102], pa.int64()), "p": ["b"], "s": ["x"]}), mode="append")
    c.delete("p = 'a' and id > 100")
    assert c.version() == 3
    assert 101 not in _ids(path) and 102 in _ids(path)


def test_delete_sees_the_loaded_version(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    stale = DeltaTable(str(path))
    write_deltalake(path, _data(5, 100), mode="append")
    m = stale.delete("id = 100")  # the file holding 100 is newer than `stale`: nothing to delete, no commit
    assert m["num_deleted_rows"] == 0 and stale.version() == 0 and 100 in _ids(path)
    with pytest.raises(DeltaError):
        stale.delete("no_such_column = 1")


def test_dv_indexes_are_physical(tmp_path: Path) -> None:
    """Rows already hidden by a DV shift live positions; the new DV must still name physical rows."""
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    dt = DeltaTable(str(path))
    dt.delete("id in (0, 1, 2)")
    dt.delete("id = 5")
    desc = DeletionVectorDescriptor.from_dict(next(iter(_dvs(path).values())))
    assert read_deletion_vector(dt.snapshot.storage, desc).tolist() == [0, 1, 2, 5]
    assert np.array_equal(np.array(_ids(path)), np.array([3, 4, 6, 7, 8, 9]))


def test_dv_delete_on_s3(s3_bucket: str, s3_options: dict) -> None:
    uri = f"s3://{s3_bucket}/t"
    write_deltalake(uri, _data(20), configuration=DV, storage_options=s3_options)
    dt = DeltaTable(uri, storage_options=s3_options)
    assert dt.delete("id % 2 = 0")["num_deleted_rows"] == 10
    assert dt.delete("id < 5")["num_deleted_rows"] == 2  # 1 and 3; the DV is read back from S3
    assert sorted(DeltaTable(uri, storage_options=s3_options).to_pyarrow_table().column("id").to_pylist()) == \
        list(range(5, 20, 2))


@pytest.mark.parametrize("dvs", [True, False], ids=["deletion-vectors", "copy-on-write"])
def test_delete_does_not_import_pandas(tmp_path: Path, dvs: bool) -> None:
    """pyarrow imports pandas (0.1-0.9 s) on its first Python-object conversion; a delete (SQL literals,
    masks, row indexes, rewrite) builds its Arrow values from buffers, so a fresh process does not pay for it."""
    import subprocess
    import sys

    p = str(tmp_path / "dv")
    write_deltalake(p, pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"x{i}" for i in range(100)]}),
                    configuration={"delta.enableDeletionVectors": "true"} if dvs else None)
    code = ("import sys\nfrom deltakernel import DeltaTable\n"
            f"m = DeltaTable({p!r}).delete(\"id % 10 = 7 AND s <> 'y' AND id > 1.5\")\n"
            "print(m['num_deleted_rows'], 'pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["10", "False"]


def test_copy_on_write_of_files_that_already_have_deletion_vectors(tmp_path: Path) -> None:
    """A file with an old DV rewritten by copy-on-write (DVs switched off later): the rows matched among the
    live rows are the ones removed — row positions shift past the old DV's deleted rows."""
    p = str(tmp_path / "t")
    write_deltalake(p, pa.table({"id": pa.array(range(20), pa.int64())}),
                    configuration={"delta.enableDeletionVectors": "true"})
    DeltaTable(p).delete("id % 3 = 0")  # a DV on the file
    DeltaTable(p).alter.set_table_properties({"delta.enableDeletionVectors": "false"})
    metrics = DeltaTable(p).delete("id % 2 = 0")
    left = sorted(DeltaTable(p).to_pyarrow_table().column("id").to_pylist())
    assert left == [i for i in range(20) if i % 3 and i % 2]
    assert metrics["num_deleted_rows"] == len([i for i in range(20) if i % 3 and not i % 2])
    files = DeltaTable(p).snapshot.files
    assert files.column("deletion_vector").null_count == files.num_rows  # rewritten, not given a new DV
