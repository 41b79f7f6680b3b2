"""DeltaTable.merge: clause semantics (delta-spark's MERGE), duplicate matches, NULL keys, file pruning from
the source's key ranges, deletion vectors vs copy-on-write, constraints / generated / identity columns,
change data, row tracking, conflicts and bad input (typed errors, the table unchanged)."""

from __future__ import annotations

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
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError, MergeError

DV = {"delta.enableDeletionVectors": "true"}


def _data(n: int = 20, offset: int = 0) -> pa.Table:
    rng = range(offset, offset + n)
    return pa.table({
        "id": pa.array(list(rng), pa.int64()),
        "p": [("a" if i % 2 else "b") for i in rng],
        "s": [None if i % 5 == 0 else f"s{i}" for i in rng],
    })


def _rows(path: Path | str, version: int | None = None) -> dict[int | None, tuple]:
    t = DeltaTable(str(path), version=version).to_pyarrow_table()
    return {r["id"]: (r["p"], r["s"]) for r in t.to_pylist()}


def _files(path: Path) -> set[str]:
    return {p.name for p in path.rglob("*") if p.is_file() and "_delta_log" not in p.parts}


def _upsert(dt: DeltaTable, src: pa.Table, **kw: object):  # type: ignore[no-untyped-def]
    return dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t", **kw) \
        .when_matched_update_all().when_not_matched_insert_all()


def _src(ids: list[int | None], tag: str = "new") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "p": ["z"] * len(ids), "s": [f"{tag}{i}" for i in ids]})


# ----------------------------------------------------------------------------- core semantics
@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_upsert_updates_matches_and_inserts_the_rest(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    write_deltalake(path, _data(10, 10), mode="append")
    before = _rows(path)
    m = _upsert(DeltaTable(str(path)), _src([3, 12, 40, 41])).execute()
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"], m["num_target_rows_deleted"]) == (2, 2, 0)
    want = dict(before)
    for i in (3, 12, 40, 41):
        want[i] = ("z", f"new{i}")
    assert _rows(path) == want
    assert _rows(path, 1) == before  # time travel sees the old rows
    assert {r["id"]: (r["p"], r["s"]) for r in duckdb_table(path).to_pylist()} == want
    if conf:
        assert m["num_target_rows_copied"] == 0 and m["num_deletion_vectors_added"] == 2
    else:
        assert m["num_target_rows_copied"] == 18 and m["num_target_files_removed"] == 2


def test_first_matching_clause_wins_and_unmatched_clauses_do_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    src = _src([1, 2, 3, 4, 50, 51])
    m = (DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_delete("s.id = 1")
         .when_matched_update({"s": "'first'"}, "t.id <= 2")
         .when_matched_update({"s": "'second'"}, "t.id <= 3")
         .when_not_matched_insert({"id": "s.id", "s": "'ins'"}, "s.id = 50")
         .execute())
    rows = _rows(path)
    assert 1 not in rows and rows[2][1] == "first" and rows[3][1] == "second" and rows[4] == ("b", "s4")
    assert rows[50] == (None, "ins") and 51 not in rows  # NULL for columns an insert does not set
    assert (m["num_target_rows_deleted"], m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (1, 2, 1)


def test_null_keys_never_match(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1, None], pa.int64()), "s": ["a", "null-key"]}))
    src = pa.table({"id": pa.array([None, 1], pa.int64()), "s": ["src-null", "b"]})
    m = DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (1, 1)
    got = sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["s"])
    assert got == [{"id": 1, "s": "b"}, {"id": None, "s": "null-key"}, {"id": None, "s": "src-null"}]


def test_not_matched_by_source(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    m = (DeltaTable(str(path)).merge(_src([1, 2]), "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update({"s": "s.s"})
         .when_not_matched_by_source_delete("t.id >= 8")
         .when_not_matched_by_source_update({"s": "concat('old', t.id)"})
         .execute())
    rows = _rows(path)
    assert sorted(rows) == list(range(8))
    assert rows[1][1] == "new1" and rows[5][1] == "old5"
    assert (m["num_target_rows_updated"], m["num_target_rows_deleted"]) == (8, 2)


def test_source_key_ranges_prune_target_files(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for k in range(5):
        write_deltalake(path, _data(10, 10 * k), mode="append")
    m = _upsert(DeltaTable(str(path)), _src([21, 25])).execute()
    assert m["num_target_files_scanned"] == 1 and m["num_target_files_skipped_during_scan"] == 4
    assert m["num_target_files_removed"] == 1 and m["num_target_rows_copied"] == 8
    # partition keys prune by value
    part = tmp_path / "part"
    write_deltalake(part, _data(40), partition_by=["p"])
    src = pa.table({"id": pa.array([3], pa.int64()), "p": ["a"], "s": ["x"]})
    m = DeltaTable(str(part)).merge(src, "t.id = s.id and t.p = s.p", source_alias="s", target_alias="t") \
        .when_matched_update_all().execute()
    assert m["num_target_files_scanned"] == 1 and m["num_target_rows_updated"] == 1


def test_nothing_changed_means_no_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    dt = DeltaTable(str(path))
    m = dt.merge(_src([100]), "t.id = s.id", source_alias="s", target_alias="t").when_matched_delete().execute()
    assert m["num_target_rows_deleted"] == 0 and dt.version() == 0


@pytest.mark.parametrize("kind", ["pandas", "reader", "polars", "batches"])
def test_source_kinds(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(5))
    src = _src([1, 9])
    if kind == "pandas":
        source = src.to_pandas()
    elif kind == "reader":
        source = src.to_reader()
    elif kind == "polars":
        pl = pytest.importorskip("polars")
        source = pl.from_arrow(src)
    else:
        source = src.to_batches()
    m = _upsert(DeltaTable(str(path)), source).execute()
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (1, 1)


def test_commit_info_records_the_merge(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(5))
    _upsert(DeltaTable(str(path)), _src([1, 9])).execute()
    info = next(a["commitInfo"] for a in read_actions(path, 1) if "commitInfo" in a)
    assert info["operation"] == "MERGE" and info["operationParameters"]["predicate"] == "t.id = s.id"
    assert int(info["operationMetrics"]["numTargetRowsInserted"]) == 1


# ----------------------------------------------------------------------------- errors leave the table
def _assert_unchanged(path: Path, files: set[str]) -> None:
    assert DeltaTable(str(path)).version() == 0
    assert _files(path) == files
    assert _rows(path) == _rows(path, 0)


@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_duplicate_match_raises_and_leaves_the_table(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    files = _files(path)
    with pytest.raises(MergeDuplicateMatchError, match="several source rows"):
        _upsert(DeltaTable(str(path)), _src([3, 3, 50])).execute()
    _assert_unchanged(path, files)
    # an unconditional delete as the only matched clause tolerates duplicates (delta-spark)
    m = DeltaTable(str(path)).merge(_src([3, 3]), "t.id = s.id", source_alias="s", target_alias="t") \
        .when_matched_delete().execute()
    assert m["num_target_rows_deleted"] == 1 and 3 not in _rows(path)
    # an insert-only merge tolerates them too
    m = DeltaTable(str(path)).merge(_src([4, 4, 77]), "t.id = s.id", source_alias="s", target_alias="t") \
        .when_not_matched_insert_all().execute()
    assert m["num_target_rows_inserted"] == 1


@pytest.mark.parametrize(("predicate", "clause", "error"), [
    ("t.nope = s.id", None, InvalidFilterError),
    ("t.id = s.id", ("update", {"nope": "s.s"}), InvalidFilterError),
    ("t.id = s.id", ("update", {"s": "s.nope"}), InvalidFilterError),
    ("t.id = s.id and", None, InvalidFilterError),
    ("t.id = s.id", ("update", {"s": "s.s +"}), InvalidFilterError),
    ("id = s.id", None, InvalidFilterError),  # `id` is on both sides: ambiguous
    ("t.id = s.s", None, SchemaError),  # key types cannot be compared
    ("t.id > s.id", None, MergeError),  # no equi-join key
    ("t.id = s.id", ("update", {"id": "named_struct('a', 1)"}), DeltaError),
    ("t.id = s.id", ("insert", {"id": "t.id"}), InvalidFilterError),  # target columns in an insert
    ("t.id = s.id", ("update_pred", "s.s"), InvalidFilterError),  # non-boolean clause predicate
])
def test_bad_input_raises_typed_and_leaves_the_table(tmp_path: Path, predicate: str, clause: tuple | None,
                                                     error: type) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    files = _files(path)
    merger = DeltaTable(str(path)).merge(_src([1, 50]), predicate, source_alias="s", target_alias="t")
    if clause is None:
        merger = merger.when_matched_update_all().when_not_matched_insert_all()
    elif clause[0] == "update":
        merger = merger.when_matched_update(clause[1])
    elif clause[0] == "insert":
        merger = merger.when_not_matched_insert(clause[1])
    else:
        merger = merger.when_matched_update({"s": "'x'"}, clause[1])
    with pytest.raises(error):
        merger.execute()
    _assert_unchanged(path, files)


def test_failed_cast_at_runtime_leaves_the_table(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10))
    files = _files(path)
    src = pa.table({"id": pa.array([1, 60], pa.int64()), "n": ["12", "not a number"]})
    with pytest.raises(SchemaError, match="'id'"):
        DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update({"s": "s.n"}).when_not_matched_insert({"id": "s.n"}).execute()
    _assert_unchanged(path, files)
    # error_on_type_mismatch=False: the failed cast becomes NULL
    DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t",
                                error_on_type_mismatch=False).when_not_matched_insert({"id": "s.n", "s": "s.n"}) \
        .execute()
    assert _rows(path)[None] == (None, "not a number")


@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_check_constraint_violation_leaves_the_table(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=conf)
    write_deltalake(path, _data(10, 10), mode="append")
    DeltaTable(str(path)).alter.add_constraint({"id_small": "id < 100"})
    before = _files(path)
    dt = DeltaTable(str(path))
    # both files touched (copy-on-write writes their survivors first), then the insert violates the CHECK
    with pytest.raises(ConstraintViolationError):
        _upsert(dt, _src([1, 11, 500])).execute()
    with pytest.raises(ConstraintViolationError):
        dt.merge(_src([2]), "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update({"id": "t.id + 1000"}).execute()
    assert dt.version() == 2 and _files(path) == before


# ----------------------------------------------------------------------------- generated / identity columns
def test_generated_columns_recomputed_and_identity_filled(tmp_path: Path) -> None:
    path = str(tmp_path / "gen")
    schema = StructType((
        StructField("id", PrimitiveType("long"), False,
                    {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False}),
        StructField("k", PrimitiveType("long")),
        StructField("double_k", PrimitiveType("long"), True, {"delta.generationExpression": "k * 2"}),
    ))
    DeltaTable.create(path, schema)
    write_deltalake(path, pa.table({"k": pa.array([10, 20], pa.int64())}), mode="append")
    src = pa.table({"k": pa.array([20, 30], pa.int64())})
    dt = DeltaTable(path)
    m = dt.merge(src, "t.k = s.k", source_alias="s", target_alias="t") \
        .when_matched_update({"k": "s.k + 1"}).when_not_matched_insert({"k": "s.k"}).execute()
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (1, 1)
    got = sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["k"])
    assert got == [{"id": 1, "k": 10, "double_k": 20}, {"id": 2, "k": 21, "double_k": 42},
                   {"id": 3, "k": 30, "double_k": 60}]
    assert DeltaTable(path).schema().field("id").metadata["delta.identity.highWaterMark"] == 3


# ----------------------------------------------------------------------------- change data, row tracking
@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_change_data_feed(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(6), configuration={**conf, "delta.enableChangeDataFeed": "true"})
    (DeltaTable(str(path)).merge(_src([1, 2, 9]), "t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_delete("t.id = 1").when_matched_update({"s": "s.s"}).when_not_matched_insert_all().execute())
    cdf = DeltaTable(str(path)).load_cdf(starting_version=1)
    cdf = cdf.read_all() if hasattr(cdf, "read_all") else cdf
    got = sorted((r["id"], r["s"], r["_change_type"]) for r in cdf.to_pylist())
    assert got == [(1, "s1", "delete"), (2, "new2", "update_postimage"), (2, "s2", "update_preimage"),
                   (9, "new9", "insert")]


@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
def test_row_ids_survive_merge(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration={**conf, "delta.enableRowTracking": "true"})
    write_deltalake(path, _data(10, 10), mode="append")

    def ids() -> dict[int, tuple[int, int]]:
        t = DeltaTable(str(path)).to_pyarrow_table(row_tracking=True)
        return {r["id"]: (r["_row_id"], r["_row_commit_version"]) for r in t.to_pylist()}

    before = ids()
    _upsert(DeltaTable(str(path)), _src([2, 5, 12, 42])).execute()  # both files touched
    after = ids()
    for i in range(20):
        if i in (2, 5, 12):
            assert after[i] == (before[i][0], 2)  # same id, new commit version
        else:
            assert after[i] == before[i]
    assert after[42][0] not in {v[0] for v in before.values()} and after[42][1] == 2
    assert len(set(after[i][0] for i in after)) == len(after)


# ----------------------------------------------------------------------------- conflicts
def test_concurrent_delete_of_a_touched_file_conflicts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(10), configuration=DV)
    a, b = DeltaTable(str(path)), DeltaTable(str(path))
    a.delete("id = 1")
    with pytest.raises(ConcurrentAppendError):
        _upsert(b, _src([2, 50])).execute()
    assert 50 not in _rows(path) and 1 not in _rows(path)


# ----------------------------------------------------------------------------- schema evolution
@pytest.mark.parametrize("conf", [{}, DV, {"delta.columnMapping.mode": "name"}], ids=["cow", "dv", "mapped"])
def test_merge_schema_adds_new_source_columns(tmp_path: Path, conf: dict) -> None:
    path = tmp_path / "t"
    write_deltalake(path, _data(6), configuration=conf)
    src = _src([1, 50]).append_column("extra", pa.array([10, 20], pa.int32()))
    dt = DeltaTable(str(path))
    with pytest.raises(InvalidFilterError):  # without merge_schema the new column is unknown
        dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update({"extra": "s.extra"}).execute()
    _upsert(dt, src).execute()  # *_all ignores source-only columns without merge_schema
    assert "extra" not in DeltaTable(str(path)).to_pyarrow_table().column_names
    _upsert(DeltaTable(str(path)), src, merge_schema=True).execute()
    got = {r["id"]: r["extra"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}
    assert got == {0: None, 1: 10, 2: None, 3: None, 4: None, 5: None, 50: 20}
    assert {r["id"]: r["extra"] for r in duckdb_table(path).to_pylist()} == got
