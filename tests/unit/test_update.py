"""DeltaTable.update: deletion vectors (merge-on-read) and copy-on-write, partitioned and column-mapped
tables, partition-column updates, change data, row tracking, generated columns, constraints, type
casts, conflicts and bad input — checked on the log, the files and through other readers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import (
    ConcurrentAppendError,
    ConstraintViolationError,
    DeltaError,
    InvalidFilterError,
    SchemaError,
)
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType

try:
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401

DV = {"delta.enableDeletionVectors": "true"}
MODES = [pytest.param({}, id="cow"), pytest.param(DV, id="dv")]


def _data(n: int = 20, offset: int = 0) -> pa.Table:
    rng = range(offset, offset + n)
    return pa.table({
        "id": pa.array(list(rng), pa.int64()),
        "p": [("a" if i % 2 else "b") for i in rng],
        "v": pa.array([i * 10 for i in rng], pa.int32()),
        "s": [None if i % 5 == 0 else f"s{i}" for i in rng],
    })


def _rows(path: Path | str, version: int | None = None) -> dict[int, dict]:
    t = DeltaTable(str(path), version=version).to_pyarrow_table()
    return {r["id"]: r for r in t.to_pylist()}


def _expected(data: pa.Table, fn) -> dict[int, dict]:
    out = {}
    for r in data.to_pylist():
        out[r["id"]] = fn(dict(r))
    return out


def _dv_files(path: Path) -> list[Path]:
    return sorted(path.rglob("deletion_vector_*.bin"))


def _parquet_on_disk(path: Path) -> set[str]:
    return {p.relative_to(path).as_posix() for p in path.rglob("*.parquet") if "_delta_log" not in p.parts}


def _cdf(dt: DeltaTable, start: int) -> list[tuple]:
    c = dt.load_cdf(starting_version=start)
    c = c.read_all() if hasattr(c, "read_all") else c
    return sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in c.to_pylist())


# ----------------------------------------------------------------------------- both modes
@pytest.mark.parametrize("conf", MODES)
def test_update_sets_matching_rows_only(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    write_deltalake(path, _data(10, 10), mode="append")
    dt = DeltaTable(str(path))
    m = dt.update(updates={"v": "v + id", "s": "concat(coalesce(s, 'n'), '!')"}, predicate="id % 3 = 0")
    assert dt.version() == 2 and m["num_updated_rows"] == 7
    want = _expected(pa.concat_tables([_data(10), _data(10, 10)]),
                     lambda r: {**r, "v": r["v"] + r["id"], "s": (r["s"] or "n") + "!"} if r["id"] % 3 == 0 else r)
    assert _rows(path) == want
    assert _rows(path, 1) == _expected(pa.concat_tables([_data(10), _data(10, 10)]), lambda r: r)  # time travel
    info = next(a["commitInfo"] for a in read_actions(path, 2) if "commitInfo" in a)
    assert info["operation"] == "UPDATE" and info["operationParameters"]["predicate"] == "id % 3 = 0"
    assert info["operationMetrics"]["numUpdatedRows"] == "7"
    assert {r["id"]: (r["v"], r["s"]) for r in duckdb_table(path).to_pylist()} == \
        {k: (r["v"], r["s"]) for k, r in want.items()}
    if conf:  # merge-on-read: both old files stay (with DVs), one new file for the updated rows
        assert m["num_copied_rows"] == 0 and m["num_added_files"] == 1 and m["num_removed_files"] == 0
        assert m["num_deletion_vectors_added"] == 2 and len(_dv_files(path)) == 1
        assert len(dt.files()) == 3
    else:  # copy-on-write: both files rewritten, updated and copied rows written together
        assert m["num_copied_rows"] == 13 and m["num_removed_files"] == 2 and m["num_added_files"] == 1
        assert not _dv_files(path)


@pytest.mark.parametrize("conf", MODES)
@pytest.mark.parametrize("updates", [{"v": "id", "s": "'const'"}, {"s": "p", "p": "s"}, {"v": "v * 2", "s": "s"}],
                         ids=["unread-columns", "swap", "self-reference"])
def test_assigned_columns_read_only_when_some_assignment_reads_them(tmp_path: Path, conf: dict,
                                                                   updates: dict) -> None:
    """Merge-on-read skips decoding assigned columns no assignment reads; a swap or self-reference reads them."""
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(12), pa.int64()), "p": [f"p{i}" for i in range(12)],
                     "v": pa.array([i * 10 for i in range(12)], pa.int32()),
                     "s": [None if i % 4 == 0 else f"s{i}" for i in range(12)]})
    write_deltalake(path, data, configuration=conf)
    DeltaTable(str(path)).update(updates=updates, predicate="id % 2 = 0")

    def new(r: dict) -> dict:
        if r["id"] % 2:
            return r
        env = dict(r)
        out = dict(r)
        for col, text in updates.items():
            if text == "id":
                out[col] = env["id"]
            elif text == "'const'":
                out[col] = "const"
            elif text == "v * 2":
                out[col] = env["v"] * 2
            else:
                out[col] = env[text]
        return out

    assert _rows(path) == _expected(data, new)


@pytest.mark.parametrize("conf", MODES)
def test_update_without_predicate_and_with_no_match(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    dt = DeltaTable(str(path))
    m = dt.update(new_values={"s": "all"}, predicate="id > 100")
    assert m["num_updated_rows"] == 0 and dt.version() == 0  # nothing matched: no commit
    m = dt.update(new_values={"s": "all", "v": 7})
    assert m["num_updated_rows"] == 10 and dt.version() == 1
    assert "predicate" not in next(a["commitInfo"] for a in read_actions(path, 1) if "commitInfo" in a)[
        "operationParameters"]
    assert all(r["s"] == "all" and r["v"] == 7 for r in _rows(path).values())
    if conf:  # every row updated: the old file is removed, not given a DV
        assert m["num_removed_files"] == 1 and not any(
            "deletionVector" in a.get("add", {}) for a in read_actions(path, 1))


@pytest.mark.parametrize("conf", MODES)
def test_null_predicate_is_not_matched(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    dt = DeltaTable(str(path))
    assert dt.update(updates={"v": "-1"}, predicate="s <> 's3'")["num_updated_rows"] == 7  # s NULL for 0, 5
    assert {k for k, r in _rows(path).items() if r["v"] == -1} == {1, 2, 4, 6, 7, 8, 9}


@pytest.mark.parametrize("conf", MODES)
def test_partitioned_update_and_partition_column_moves_rows(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=conf)
    dt = DeltaTable(str(path))
    m = dt.update(updates={"v": "-v"}, predicate="p = 'a'")  # partition-only predicate
    assert m["num_updated_rows"] == 10
    m = dt.update(new_values={"p": "c"}, predicate="id >= 15")
    assert m["num_updated_rows"] == 5
    want = _expected(_data(20), lambda r: {**r, "v": -r["v"] if r["p"] == "a" else r["v"]})
    want = {k: ({**r, "p": "c"} if k >= 15 else r) for k, r in want.items()}
    assert _rows(path) == want
    # the moved rows live in files of partition c
    files = DeltaTable(str(path)).get_add_actions(flatten=True).to_pylist()
    assert sum(f["num_records"] for f in files if f["partition.p"] == "c") == 5
    assert {r["id"]: r["p"] for r in duckdb_table(path).to_pylist()} == {k: r["p"] for k, r in want.items()}


@pytest.mark.parametrize("conf", MODES)
def test_column_mapped_update(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**conf, "delta.columnMapping.mode": "name"})
    dt = DeltaTable(str(path))
    dt.alter.rename_column("v", "value")
    dt = DeltaTable(str(path))
    dt.update(updates={"value": "value * 2"}, predicate="id < 4")
    t = DeltaTable(str(path)).to_pyarrow_table()
    assert {r["id"]: r["value"] for r in t.to_pylist()} == {i: i * 10 * (2 if i < 4 else 1) for i in range(10)}
    assert {r["id"]: r["value"] for r in duckdb_table(path).to_pylist()} == \
        {i: i * 10 * (2 if i < 4 else 1) for i in range(10)}


@pytest.mark.parametrize("conf", MODES)
def test_change_data_feed_pre_and_post_images(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), partition_by=["p"], configuration={**conf, "delta.enableChangeDataFeed": "true"})
    dt = DeltaTable(str(path))
    dt.update(updates={"v": "v + 1"}, predicate="id in (1, 2)")
    dt.update(updates={"v": "v + 1"}, predicate="id = 2")
    assert _cdf(dt, 1) == sorted([
        (1, 10, "update_preimage", 1), (1, 11, "update_postimage", 1),
        (2, 20, "update_preimage", 1), (2, 21, "update_postimage", 1),
        (2, 21, "update_preimage", 2), (2, 22, "update_postimage", 2),
    ])


@pytest.mark.parametrize("conf", MODES)
def test_row_tracking_keeps_ids_and_bumps_versions(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**conf, "delta.enableRowTracking": "true"})
    write_deltalake(path, _data(10, 10), mode="append")

    def ids() -> dict[int, tuple[int, int]]:
        t = DeltaTable(str(path)).to_pyarrow_table(row_tracking=True)
        return {r["id"]: (r["_row_id"], r["_row_commit_version"]) for r in t.to_pylist()}

    before = ids()
    DeltaTable(str(path)).update(updates={"v": "v + 1"}, predicate="id % 4 = 1")
    after = ids()
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    assert {k: v[1] for k, v in after.items()} == {k: (2 if k % 4 == 1 else v[1]) for k, v in before.items()}
    info = next(a["commitInfo"] for a in read_actions(path, 2) if "commitInfo" in a)
    assert info["tags"]["delta.rowTracking.preserved"] == "true"
    # a second update of the same rows keeps them again
    DeltaTable(str(path)).update(updates={"v": "v + 1"}, predicate="id = 5")
    again = ids()
    assert again[5] == (before[5][0], 3) and again[9] == after[9]


# ----------------------------------------------------------------------------- table rules
def _generated_table(path: Path, conf: dict) -> None:
    schema = StructType((
        StructField("id", PrimitiveType("long")),
        StructField("v", PrimitiveType("long")),
        StructField("twice", PrimitiveType("long"), True, {"delta.generationExpression": "v * 2"}),
    ))
    DeltaTable.create(str(path), schema, configuration=conf or None)
    write_deltalake(path, pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([1, 2, 3], pa.int64())}),
                    mode="append")


@pytest.mark.parametrize("conf", MODES)
def test_generated_columns_recomputed_and_verified(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    _generated_table(path, conf)
    dt = DeltaTable(str(path))
    dt.update(updates={"v": "v + 10"}, predicate="id >= 2")
    assert {r["id"]: (r["v"], r["twice"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()} == \
        {1: (1, 2), 2: (12, 24), 3: (13, 26)}
    files = _parquet_on_disk(path)
    with pytest.raises(ConstraintViolationError):  # set explicitly to a wrong value
        dt.update(updates={"twice": "1"}, predicate="id = 1")
    assert dt.version() == 2 and _parquet_on_disk(path) == files
    with pytest.raises(ConstraintViolationError):  # expressions see the old row: twice = 2, but v becomes 2
        dt.update(updates={"twice": "v * 2", "v": "v + 1"}, predicate="id = 1")
    dt.update(updates={"twice": "10", "v": "5"}, predicate="id = 1")  # explicit and consistent
    assert {r["id"]: (r["v"], r["twice"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}[1] == (5, 10)


@pytest.mark.parametrize("conf", MODES)
def test_check_and_not_null_constraints_leave_table_unchanged(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    DeltaTable.create(str(path), schema, configuration=conf or None)
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([1, 2], pa.int64())}),
                    mode="append")
    dt = DeltaTable(str(path))
    dt.alter.add_constraint({"pos": "v > 0"})
    dt = DeltaTable(str(path))
    files = _parquet_on_disk(path)
    with pytest.raises(ConstraintViolationError, match="pos"):
        dt.update(updates={"v": "v - 2"}, predicate="id = 2")
    with pytest.raises(ConstraintViolationError, match="id"):
        dt.update(updates={"id": "NULL"}, predicate="id = 1")
    assert dt.version() == 2 and _parquet_on_disk(path) == files and not _dv_files(path)
    assert dt.update(updates={"v": "v + 5"}, predicate="id = 2")["num_updated_rows"] == 1


def test_identity_column_cannot_be_updated(tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = StructType((
        StructField("id", PrimitiveType("long"), False, {"delta.identity.start": 1, "delta.identity.step": 1,
                                                         "delta.identity.allowExplicitInsert": False}),
        StructField("v", PrimitiveType("string")),
    ))
    DeltaTable.create(str(path), schema)
    write_deltalake(path, pa.table({"v": ["a", "b"]}), mode="append")
    dt = DeltaTable(str(path))
    with pytest.raises(ConstraintViolationError):
        dt.update(updates={"id": "id + 1"})
    dt.update(new_values={"v": "z"}, predicate="id = 2")  # other columns can; identity values kept
    assert sorted((r["id"], r["v"]) for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()) == \
        [(1, "a"), (2, "z")]


# ----------------------------------------------------------------------------- values and casts
def test_type_mismatch_strict_and_lenient(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(5))
    dt = DeltaTable(str(path))
    with pytest.raises(SchemaError, match="v"):
        dt.update(updates={"v": "'abc'"}, predicate="id = 1")
    with pytest.raises(SchemaError, match="v"):
        dt.update(updates={"v": "3000000000"}, predicate="id = 1")  # does not fit int
    assert dt.version() == 0
    dt.update(updates={"v": "'abc'"}, predicate="id = 1", error_on_type_mismatch=False)
    dt.update(updates={"v": "3000000000"}, predicate="id = 2", error_on_type_mismatch=False)
    dt.update(updates={"v": "'42'"}, predicate="id = 3")  # a string that is a number casts
    assert [_rows(path)[i]["v"] for i in range(5)] == [0, None, None, 42, 40]


def test_new_values_python_literals(tmp_path: Path) -> None:
    import datetime as dt_

    path = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "f": pa.array([1.0, 2.0]), "b": [True, False],
                     "d": pa.array([dt_.date(2020, 1, 1)] * 2),
                     "ts": pa.array([dt_.datetime(2020, 1, 1, tzinfo=dt_.timezone.utc)] * 2, pa.timestamp("us", "UTC")),
                     "l": pa.array([[1], [2]], pa.list_(pa.int64()))})
    write_deltalake(path, data)
    dt = DeltaTable(str(path))
    dt.update(new_values={"f": 2.5, "b": True, "d": dt_.date(2024, 2, 29),
                          "ts": dt_.datetime(2024, 1, 1, 12, tzinfo=dt_.timezone.utc), "l": [7, 8]},
              predicate="id = 2")
    got = {r["id"]: r for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}
    assert got[2] == {"id": 2, "f": 2.5, "b": True, "d": dt_.date(2024, 2, 29),
                      "ts": dt_.datetime(2024, 1, 1, 12, tzinfo=dt_.timezone.utc), "l": [7, 8]}
    assert got[1]["f"] == 1.0 and got[1]["l"] == [1]
    dt.update(new_values={"f": None}, predicate="id = 1")
    assert _rows(path)[1]["f"] is None


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, error", [
    ({"updates": {"nope": "1"}}, SchemaError),
    ({"updates": {"v": "nope + 1"}}, InvalidFilterError),
    ({"updates": {"v": "v +"}}, InvalidFilterError),
    ({"updates": {"v": "1"}, "predicate": "nope = 1"}, InvalidFilterError),
    ({"updates": {"v": "1"}, "predicate": "id +"}, InvalidFilterError),
    ({"updates": {"v": "1"}, "predicate": "id + 1"}, InvalidFilterError),
    ({"updates": {"v": 1}}, InvalidFilterError),
    ({"updates": {"v": "1"}, "new_values": {"v": 1}}, ValueError),
    ({}, ValueError),
    ({"updates": {}}, ValueError),
    ({"updates": {"v": "1", "V": "2"}}, SchemaError),
    ({"new_values": {"v": object()}}, SchemaError),
])
@pytest.mark.parametrize("conf", MODES)
def test_bad_input_raises_typed_and_leaves_the_table(tmp_path: Path, conf: dict, kwargs: dict, error: type) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    files = _parquet_on_disk(path)
    dt = DeltaTable(str(path))
    with pytest.raises(error) as e:
        dt.update(**kwargs)
    assert isinstance(e.value, DeltaError)
    assert dt.version() == 0 and _parquet_on_disk(path) == files and not _dv_files(path)


def test_append_only_table_refuses_update_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**DV, "delta.appendOnly": "true",
                                                    "delta.enableChangeDataFeed": "true"})
    files = _parquet_on_disk(path)
    dt = DeltaTable(str(path))
    with pytest.raises(ConstraintViolationError):
        dt.update(updates={"v": "1"}, predicate="id = 1")
    assert dt.version() == 0 and _parquet_on_disk(path) == files and not _dv_files(path)


# ----------------------------------------------------------------------------- conflicts
@pytest.mark.parametrize("conf", MODES)
def test_concurrent_updates_of_the_same_file_conflict(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.update(new_values={"s": "a"}, predicate="id = 1")
    files = _parquet_on_disk(path)
    with pytest.raises(ConcurrentAppendError):
        b.update(new_values={"s": "b"}, predicate="id = 2")
    assert b.version() == 0 and _parquet_on_disk(path) == files  # b's files deleted
    assert len(_dv_files(path)) == (1 if conf else 0)
    rows = _rows(path)
    assert rows[1]["s"] == "a" and rows[2]["s"] == "s2"


def test_disjoint_partition_updates_both_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(20), partition_by=["p"], configuration=DV)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.update(new_values={"s": "a"}, predicate="p = 'a' and id > 10")
    b.update(new_values={"s": "b"}, predicate="p = 'b' and id > 10")
    assert b.version() == 2
    rows = _rows(path)
    assert {k for k, r in rows.items() if r["s"] == "a"} == {11, 13, 15, 17, 19}
    assert {k for k, r in rows.items() if r["s"] == "b"} == {12, 14, 16, 18}


def test_update_after_delete_with_dv_keeps_deleted_rows_deleted(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    dt = DeltaTable(str(path))
    dt.delete("id in (1, 2)")
    m = dt.update(updates={"v": "v + 1"}, predicate="id < 4")  # 1 and 2 are gone: only 0 and 3
    assert m["num_updated_rows"] == 2 and m["num_deletion_vectors_updated"] == 1
    rows = _rows(path)
    assert sorted(rows) == [0, 3, 4, 5, 6, 7, 8, 9] and rows[3]["v"] == 31 and rows[0]["v"] == 1
    deltalake = pytest.importorskip("deltalake")
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    got = pa.table(qb.execute("select id, v from t").read_all()).to_pylist()
    assert {r["id"]: r["v"] for r in got} == {k: r["v"] for k, r in rows.items()}
    stats = [json.loads(a["add"]["stats"]) for a in read_actions(path, 2) if "add" in a]
    assert all("numRecords" in s for s in stats)


@pytest.mark.parametrize("conf", MODES)
def test_update_on_s3(s3_bucket: str, s3_options: dict, conf: dict) -> None:
    uri = f"s3://{s3_bucket}/t"
    write_deltalake(uri, _data(20), configuration={**conf, "delta.enableChangeDataFeed": "true"},
                    storage_options=s3_options)
    dt = DeltaTable(uri, storage_options=s3_options)
    assert dt.update(updates={"v": "v + 1"}, predicate="id % 2 = 0")["num_updated_rows"] == 10
    assert dt.update(updates={"v": "v + 1"}, predicate="id < 5")["num_updated_rows"] == 5  # DV read back from S3
    got = {r["id"]: r["v"] for r in DeltaTable(uri, storage_options=s3_options).to_pyarrow_table().to_pylist()}
    assert got == {i: i * 10 + (i % 2 == 0) + (i < 5) for i in range(20)}
    assert len(_cdf(dt, 1)) == 30


def test_commit_properties_and_post_commit_checkpoint(tmp_path: Path) -> None:
    from deltakernel import CommitProperties, PostCommitHookProperties, Transaction

    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={"delta.checkpointInterval": "2"})
    dt = DeltaTable(str(path))
    dt.update(new_values={"s": "x"}, predicate="id = 1",
              commit_properties=CommitProperties(custom_metadata={"who": "me"},
                                                 app_transactions=[Transaction("app", 7)]),
              post_commithook_properties=PostCommitHookProperties(create_checkpoint=False))
    info = next(a["commitInfo"] for a in read_actions(path, 1) if "commitInfo" in a)
    assert info["who"] == "me" and dt.transaction_versions()["app"] == 7
    assert not (path / "_delta_log" / "00000000000000000001.checkpoint.parquet").exists()
    dt.update(new_values={"s": "y"}, predicate="id = 2")
    assert (path / "_delta_log" / "00000000000000000002.checkpoint.parquet").exists()
    assert _rows(path)[1]["s"] == "x" and _rows(path)[2]["s"] == "y"
