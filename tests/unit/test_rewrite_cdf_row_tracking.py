"""Rewrites (replaceWhere on data columns) on tables with change data feed and row tracking.

CDF: a commit that rewrites part of a file carries `_change_data` files with exactly the rows deleted and the
rows inserted (never the rows copied unchanged), checked against deltalake 1.6.6's `load_cdf` of the same
table. Row tracking: copied rows keep their stable row ids / commit versions through the materialized
columns, which no reader (deltakernel, DataFusion, deltalake, DuckDB) shows as table columns.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

deltalake = pytest.importorskip("deltalake")

import helpers

import deltakernel
from deltakernel.errors import DeltaError, VersionNotFoundError
from deltakernel.kernel.row_tracking import ROW_COMMIT_VERSION_COLUMN_KEY, ROW_ID_COLUMN_KEY
from deltakernel.kernel.scan.scan import Scan
from deltakernel.operations.write.api import write_deltalake

CDF = {"delta.enableChangeDataFeed": "true"}
RT = {"delta.enableRowTracking": "true"}
CDF_COLUMNS = ["_change_type", "_commit_version"]


def _norm(t: Any) -> pa.Table:
    t = pa.table(t)
    fields = []
    for f in t.schema:
        typ = pa.string() if f.type in (pa.string_view(), pa.large_string()) else f.type
        if f.name == "_commit_version":
            typ = pa.int64()
        fields.append(pa.field(f.name, typ))
    return t.cast(pa.schema(fields))


def _rows(t: Any, names: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[n] for n in names) for r in _norm(t).select(names).to_pylist())


def _cdf_ours(path: Path, version: int) -> pa.Table:
    return deltakernel.DeltaTable(str(path)).load_cdf(starting_version=version, ending_version=version).read_all()


def _cdf_deltalake(path: Path, version: int) -> pa.Table:
    return _norm(deltalake.DeltaTable(str(path)).load_cdf(starting_version=version, ending_version=version)
                 .read_all())


def _commit(path: Path, version: int) -> list[dict[str, Any]]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _table(xs: list[int], tag: str = "v") -> pa.Table:
    return pa.table({"x": pa.array(xs, pa.int64()), "y": [f"{tag}{i}" for i in xs]})


# ----------------------------------------------------------------------------- change data feed
def test_partly_matched_file_reports_only_changed_rows(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table(list(range(10))), configuration=CDF)
    write_deltalake(tmp_path, _table([6, 7], "new"), mode="overwrite", predicate="x > 5 AND x < 9")
    got = _cdf_ours(tmp_path, 1)
    names = ["x", "y", *CDF_COLUMNS]
    expected = sorted([(x, f"v{x}", "delete", 1) for x in (6, 7, 8)] + [(x, f"new{x}", "insert", 1) for x in (6, 7)])
    assert _rows(got, names) == expected
    assert _rows(got, names) == _rows(_cdf_deltalake(tmp_path, 1), names)
    actions = _commit(tmp_path, 1)
    cdcs = [a["cdc"] for a in actions if "cdc" in a]
    assert cdcs and all(c["path"].startswith("_change_data/") and c["dataChange"] is False for c in cdcs)
    # the table itself is right too
    assert sorted(deltakernel.DeltaTable(str(tmp_path)).to_pyarrow_table().column("y").to_pylist()) == sorted(
        [f"v{i}" for i in (0, 1, 2, 3, 4, 5, 9)] + ["new6", "new7"])


def test_fully_and_partly_matched_files_in_one_commit(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table([1, 2, 3]), configuration=CDF)  # fully matched below
    write_deltalake(tmp_path, _table([10, 20, 30]), mode="append")  # partly matched
    write_deltalake(tmp_path, _table([100, 200]), mode="append")  # untouched
    write_deltalake(tmp_path, _table([5, 15], "n"), mode="overwrite", predicate="x < 25")
    names = ["x", "y", *CDF_COLUMNS]
    got = _cdf_ours(tmp_path, 3)
    expected = sorted([(x, f"v{x}", "delete", 3) for x in (1, 2, 3, 10, 20)]
                      + [(x, f"n{x}", "insert", 3) for x in (5, 15)])
    assert _rows(got, names) == expected
    assert _rows(got, names) == _rows(_cdf_deltalake(tmp_path, 3), names)
    removed = {a["remove"]["path"] for a in _commit(tmp_path, 3) if "remove" in a}
    assert len(removed) == 2  # the untouched file stays


def test_partitioned_table(tmp_path: Path) -> None:
    data = pa.table({"p": ["a"] * 4 + ["b"] * 4 + [None] * 2, "x": pa.array(range(10), pa.int64())})
    write_deltalake(tmp_path, data, partition_by=["p"], configuration=CDF)
    new = pa.table({"p": ["a", "b", None], "x": pa.array([51, 52, 53], pa.int64())})
    write_deltalake(tmp_path, new, mode="overwrite", predicate="x % 2 = 1 OR x > 50")
    names = ["p", "x", *CDF_COLUMNS]
    got = _cdf_ours(tmp_path, 1)
    deleted = [(p, x, "delete", 1) for p, x in zip(data["p"].to_pylist(), data["x"].to_pylist()) if x % 2 == 1]
    inserted = [(p, x, "insert", 1) for p, x in zip(new["p"].to_pylist(), new["x"].to_pylist())]
    key = lambda r: tuple("" if v is None else str(v) for v in r)
    assert sorted(_norm(got).select(names).to_pylist(), key=lambda r: key(tuple(r.values()))) == \
        sorted([dict(zip(names, r)) for r in deleted + inserted], key=lambda r: key(tuple(r.values())))
    theirs = _cdf_deltalake(tmp_path, 1).select(names).to_pylist()
    assert sorted(_norm(got).select(names).to_pylist(), key=lambda r: key(tuple(r.values()))) == \
        sorted(theirs, key=lambda r: key(tuple(r.values())))
    cdcs = [a["cdc"] for a in _commit(tmp_path, 1) if "cdc" in a]
    assert {tuple(c["partitionValues"].items()) for c in cdcs} == {(("p", "a"),), (("p", "b"),), (("p", None),)}
    assert all(c["path"].startswith("_change_data/p=") for c in cdcs)


def test_no_cdc_files_when_nothing_is_deleted(tmp_path: Path) -> None:
    """delta-spark writes change data only when the delete part removed rows; otherwise add/remove serve."""
    write_deltalake(tmp_path, _table([1, 2]), configuration=CDF)
    write_deltalake(tmp_path, _table([50], "n"), mode="overwrite", predicate="x > 40")
    assert not [a for a in _commit(tmp_path, 1) if "cdc" in a]
    assert _rows(_cdf_ours(tmp_path, 1), ["x", "_change_type"]) == [(50, "insert")]


def test_cdf_off_writes_no_change_data(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table(list(range(5))))
    write_deltalake(tmp_path, _table([3], "n"), mode="overwrite", predicate="x >= 3")
    assert not [a for a in _commit(tmp_path, 1) if "cdc" in a]
    assert not (tmp_path / "_change_data").exists()


# ----------------------------------------------------------------------------- row tracking
def _with_ids(path: Path) -> dict[int, tuple[int, int]]:
    t = deltakernel.DeltaTable(str(path)).to_pyarrow_table(row_tracking=True)
    assert t.schema.field("_row_id").type == pa.int64()
    assert t.schema.field("_row_commit_version").type == pa.int64()
    return {r["x"]: (r["_row_id"], r["_row_commit_version"]) for r in t.to_pylist()}


def test_row_ids_survive_a_rewrite(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table(list(range(10))), configuration={**CDF, **RT})
    write_deltalake(tmp_path, _table(list(range(10, 20))), mode="append")
    before = _with_ids(tmp_path)
    assert sorted(i for i, _ in before.values()) == list(range(20))
    write_deltalake(tmp_path, _table([5, 6], "n"), mode="overwrite", predicate="x >= 5 AND x < 8")
    after = _with_ids(tmp_path)
    carried = [x for x in range(10) if not 5 <= x < 8]
    assert {x: after[x] for x in carried} == {x: before[x] for x in carried}  # ids and versions kept
    untouched = list(range(10, 20))
    assert {x: after[x] for x in untouched} == {x: before[x] for x in untouched}
    fresh = [after[5][0], after[6][0]]
    assert after[5][1] == after[6][1] == 2
    ids = [i for i, _ in after.values()]
    assert len(set(ids)) == len(ids) and not set(fresh) & {i for i, _ in before.values()}
    # the rewritten file carries the ids physically, under the configured hidden names
    dt_ = deltakernel.DeltaTable(str(tmp_path))
    conf = dt_.metadata().configuration
    id_col, version_col = conf[ROW_ID_COLUMN_KEY], conf[ROW_COMMIT_VERSION_COLUMN_KEY]
    assert id_col.startswith("_row-id-col-") and version_col.startswith("_row-commit-version-col-")
    schemas = [pq.read_schema(tmp_path / p).names for p in dt_.files()]
    assert any(id_col in names and version_col in names for names in schemas)
    # a second rewrite of already-materialized rows keeps them again
    write_deltalake(tmp_path, _table([0], "m"), mode="overwrite", predicate="x = 0")
    again = _with_ids(tmp_path)
    assert {x: again[x] for x in (1, 2, 3, 4, 8, 9)} == {x: before[x] for x in (1, 2, 3, 4, 8, 9)}
    assert again[0][1] == 3 and again[0][0] not in {i for i, _ in after.values()}


def test_partitioned_row_ids_and_filters(tmp_path: Path) -> None:
    data = pa.table({"p": ["a", "a", "b", "b"], "x": pa.array([1, 2, 3, 4], pa.int64())})
    write_deltalake(tmp_path, data, partition_by=["p"], configuration=RT)
    before = _with_ids(tmp_path)
    write_deltalake(tmp_path, pa.table({"p": ["b"], "x": pa.array([9], pa.int64())}), mode="overwrite",
                    predicate="x = 3 OR x = 9")
    after = _with_ids(tmp_path)
    assert {x: after[x] for x in (1, 2, 4)} == {x: before[x] for x in (1, 2, 4)}
    # a column subset and a row filter keep row ids aligned with their rows
    scan = deltakernel.DeltaTable(str(tmp_path)).scan(columns=["p"], filters=[("x", ">", 1)], row_tracking=True)
    t = scan.to_table()
    assert t.schema.names == ["p", "_row_id", "_row_commit_version"]
    assert sorted(t.column("_row_id").to_pylist()) == sorted(after[x][0] for x in (2, 4, 9))
    batches = list(deltakernel.DeltaTable(str(tmp_path)).to_batches(row_tracking=True))
    assert sum(b.num_rows for b in batches) == 4 and "_row_id" in batches[0].schema.names


def test_materialized_columns_are_invisible_to_every_reader(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table(list(range(6))), configuration={**RT, **CDF})
    write_deltalake(tmp_path, _table([2], "n"), mode="overwrite", predicate="x = 2")
    dt_ = deltakernel.DeltaTable(str(tmp_path))
    conf = dt_.metadata().configuration
    hidden = {conf[ROW_ID_COLUMN_KEY], conf[ROW_COMMIT_VERSION_COLUMN_KEY]}
    assert any(hidden <= set(pq.read_schema(tmp_path / p).names) for p in dt_.files())  # precondition
    expected = sorted((x, f"n{x}" if x == 2 else f"v{x}") for x in range(6))

    ours = dt_.to_pyarrow_table()
    assert ours.schema.names == ["x", "y"]
    assert sorted(zip(ours["x"].to_pylist(), ours["y"].to_pylist())) == expected

    from datafusion import SessionContext

    from deltakernel.datafusion import register

    ctx = SessionContext()
    register(ctx, "t", str(tmp_path))
    df = _norm(ctx.sql("SELECT * FROM t").to_arrow_table())
    assert df.schema.names == ["x", "y"]
    assert sorted(zip(df["x"].to_pylist(), df["y"].to_pylist())) == expected

    dl = _norm(deltalake.DeltaTable(str(tmp_path)).to_pyarrow_table()) \
        if hasattr(deltalake.DeltaTable, "to_pyarrow_table") else \
        _norm(pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(tmp_path)))
                       .execute("SELECT * FROM t").read_all()))
    assert dl.schema.names == ["x", "y"]
    assert sorted(zip(dl["x"].to_pylist(), dl["y"].to_pylist())) == expected

    duck = _norm(helpers.duckdb_table(tmp_path))
    assert duck.schema.names == ["x", "y"]
    assert sorted(zip(duck["x"].to_pylist(), duck["y"].to_pylist())) == expected
    # change data files hold table columns and _change_type only
    cdc_paths = [a["cdc"]["path"] for a in _commit(tmp_path, 1) if "cdc" in a]
    assert cdc_paths and all(pq.read_schema(tmp_path / p).names == ["x", "y", "_change_type"] for p in cdc_paths)


def test_row_tracking_read_refused_without_row_tracking(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table([1]))
    dt_ = deltakernel.DeltaTable(str(tmp_path))
    with pytest.raises(DeltaError, match="row tracking"):
        dt_.to_pyarrow_table(row_tracking=True)
    with pytest.raises(DeltaError, match="row tracking"):
        Scan(dt_.snapshot, row_tracking=True)


def test_fresh_row_ids_without_rewrite_match_base_row_id(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table([1, 2, 3]), configuration=RT)
    write_deltalake(tmp_path, _table([4, 5]), mode="append")
    adds = deltakernel.DeltaTable(str(tmp_path)).get_add_actions(flatten=True).to_pylist()
    assert sorted(_with_ids(tmp_path).items()) == [(1, (0, 0)), (2, (1, 0)), (3, (2, 0)), (4, (3, 1)), (5, (4, 1))]
    assert adds  # the ids come from baseRowId + row index


def test_column_mapping_table_rewrite(tmp_path: Path) -> None:
    conf = {**RT, **CDF, "delta.columnMapping.mode": "name"}
    write_deltalake(tmp_path, _table(list(range(6))), configuration=conf)
    before = _with_ids(tmp_path)
    write_deltalake(tmp_path, _table([1], "n"), mode="overwrite", predicate="x <= 1")
    after = _with_ids(tmp_path)
    assert {x: after[x] for x in range(2, 6)} == {x: before[x] for x in range(2, 6)}
    got = _cdf_ours(tmp_path, 1)
    assert _rows(got, ["x", "y", "_change_type"]) == [(0, "v0", "delete"), (1, "n1", "insert"), (1, "v1", "delete")]
    assert deltakernel.DeltaTable(str(tmp_path)).to_pyarrow_table().schema.names == ["x", "y"]


# ----------------------------------------------------------------------------- out of range
def test_load_cdf_out_of_range(tmp_path: Path) -> None:
    write_deltalake(tmp_path, _table([1, 2]), configuration=CDF)
    write_deltalake(tmp_path, _table([3]), mode="append")
    dt_ = deltakernel.DeltaTable(str(tmp_path))
    with pytest.raises(VersionNotFoundError):
        dt_.load_cdf(starting_version=5)
    empty = dt_.load_cdf(starting_version=5, allow_out_of_range=True).read_all()
    assert empty.num_rows == 0 and empty.schema.names[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    future = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).isoformat()
    with pytest.raises(VersionNotFoundError):
        dt_.load_cdf(starting_timestamp=future)
    with pytest.raises(Exception, match="greater than latest commit"):  # deltalake refuses it too
        deltalake.DeltaTable(str(tmp_path)).load_cdf(starting_timestamp=future)
    got = dt_.load_cdf(starting_timestamp=future, allow_out_of_range=True).read_all()
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path)).load_cdf(starting_timestamp=future,
                                                                     allow_out_of_range=True).read_all())
    assert got.num_rows == theirs.num_rows == 0
    past = "2000-01-01T00:00:00+00:00"
    got = dt_.load_cdf(starting_version=0, ending_timestamp=past).read_all()
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path)).load_cdf(starting_version=0, ending_timestamp=past)
                      .read_all())
    assert got.num_rows == theirs.num_rows == 0
    # in range still works
    assert pc.sum(pc.equal(dt_.load_cdf(starting_version=1).read_all()["_commit_version"], 1)).as_py() == 1


def test_row_ids_use_physical_index_before_deletion_vector(tmp_path: Path) -> None:
    """Default row ids count rows of the file before the DV drops some; a rewrite keeps those ids."""
    from deltakernel.kernel.deletion_vectors import DeletionVectorDescriptor, serialize_roaring_bitmap_array

    conf = {**RT, **CDF, "delta.enableDeletionVectors": "true"}
    write_deltalake(tmp_path, _table(list(range(6))), configuration=conf)
    add = next(a["add"] for a in _commit(tmp_path, 0) if "add" in a)
    dv = DeletionVectorDescriptor.inline(serialize_roaring_bitmap_array([1, 3]), 2).to_dict()
    remove = {"path": add["path"], "deletionTimestamp": 1, "dataChange": True, "partitionValues": {},
              "size": add["size"], "baseRowId": add["baseRowId"], "defaultRowCommitVersion": 0}
    helpers.write_actions(tmp_path, 1, [
        {"commitInfo": {"timestamp": 1, "operation": "DELETE"}},
        {"remove": remove},
        {"add": {**add, "deletionVector": dv, "dataChange": True}},
    ])
    ids = _with_ids(tmp_path)
    assert ids == {0: (0, 0), 2: (2, 0), 4: (4, 0), 5: (5, 0)}
    write_deltalake(tmp_path, _table([4], "n"), mode="overwrite", predicate="x = 4")
    after = _with_ids(tmp_path)
    assert {x: after[x] for x in (0, 2, 5)} == {x: ids[x] for x in (0, 2, 5)}
    assert after[4][1] == 2 and after[4][0] not in {i for i, _ in ids.values()}
    got = _cdf_ours(tmp_path, 2)
    assert _rows(got, ["x", "y", "_change_type"]) == [(4, "n4", "insert"), (4, "v4", "delete")]
    assert _rows(got, ["x", "y", "_change_type"]) == _rows(_cdf_deltalake(tmp_path, 2), ["x", "y", "_change_type"])
