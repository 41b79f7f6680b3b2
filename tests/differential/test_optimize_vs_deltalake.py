"""OPTIMIZE differential: deltakernel's `optimize.compact()` / `z_order()` against deltalake 1.6.6's on copies of
the same table — same rows after (read by deltakernel, deltalake and DuckDB), the same metrics keys and counts,
history operation OPTIMIZE with the same parameters. Column-mapped and row-tracking tables deltalake refuses to
optimize: there the oracle is the table before (deltakernel's and DuckDB's read)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, deltalake_table, dml_data, duckdb_table, make_dml_table

from deltakernel import DeltaTable, write_deltalake

deltalake = pytest.importorskip("deltalake")


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset, s_stride=37)


def _pair(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    src = tmp_path / "src"
    if kind == "dv":
        for i in range(3):
            write_deltalake(str(src), _data(30, 30 * i), mode="append",
                            configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
        DeltaTable(str(src)).delete("id % 4 = 0")
    else:
        make_dml_table(src, kind, _data)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)
    return ours, theirs


def _check_metrics(mine: dict[str, object], theirs: dict[str, object]) -> None:
    assert set(mine) == set(theirs)
    for key in ("numFilesAdded", "numFilesRemoved", "partitionsOptimized", "totalConsideredFiles",
                "totalFilesSkipped", "preserveInsertionOrder", "plannerStrategy", "preservedStableOrder",
                "maxBinSpanFiles"):
        assert mine[key] == theirs[key], (key, mine[key], theirs[key])
    assert set(json.loads(str(mine["filesAdded"]))) == set(json.loads(str(theirs["filesAdded"])))
    assert json.loads(str(mine["filesRemoved"]))["totalSize"] == json.loads(str(theirs["filesRemoved"]))["totalSize"]


@pytest.mark.parametrize("kind", ["plain", "partitioned", "checkpointed", "dv"])
def test_compact_vs_deltalake(tmp_path: Path, kind: str) -> None:
    ours, theirs = _pair(tmp_path, kind)
    before = DeltaTable(str(ours)).to_pyarrow_table()
    mine = DeltaTable(str(ours)).optimize.compact()
    other = deltalake.DeltaTable(str(theirs)).optimize.compact()
    _check_metrics(mine, other)
    mine_dt = DeltaTable(str(ours))
    assert_same_rows(mine_dt.to_pyarrow_table(), before, "ours vs before")
    assert_same_rows(DeltaTable(str(theirs)).to_pyarrow_table(), before, "deltalake's result")
    if kind != "dv":  # deltalake does not read deletion-vector tables
        assert_same_rows(deltalake_table(ours), before, "deltalake reads ours")
    assert_same_rows(duckdb_table(ours), before, "duckdb reads ours")
    ours_h = mine_dt.history(1)[0]
    theirs_h = deltalake.DeltaTable(str(theirs)).history(1)[0]
    assert ours_h["operation"] == theirs_h["operation"] == "OPTIMIZE"
    assert ours_h["operationParameters"] == theirs_h["operationParameters"]
    # compacting again does nothing, on both
    assert DeltaTable(str(ours)).optimize.compact()["numFilesAdded"] == 0
    assert deltalake.DeltaTable(str(theirs)).optimize.compact()["numFilesAdded"] == 0


@pytest.mark.parametrize("kind", ["plain", "partitioned"])
def test_compact_partition_filter_vs_deltalake(tmp_path: Path, kind: str) -> None:
    ours, theirs = _pair(tmp_path, kind)
    filters = [("p", "=", "b")] if kind == "partitioned" else None
    mine = DeltaTable(str(ours)).optimize.compact(partition_filters=filters)
    other = deltalake.DeltaTable(str(theirs)).optimize.compact(partition_filters=filters)
    _check_metrics(mine, other)
    assert DeltaTable(str(ours)).history(1)[0]["operationParameters"] == \
        deltalake.DeltaTable(str(theirs)).history(1)[0]["operationParameters"]
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), deltalake_table(theirs))


@pytest.mark.parametrize("kind", ["plain", "partitioned"])
def test_z_order_vs_deltalake(tmp_path: Path, kind: str) -> None:
    ours, theirs = _pair(tmp_path, kind)
    mine = DeltaTable(str(ours)).optimize.z_order(["id", "s"])
    other = deltalake.DeltaTable(str(theirs)).optimize.z_order(["id", "s"])
    _check_metrics(mine, other)
    expected = deltalake_table(theirs)
    assert_same_rows(DeltaTable(str(ours)).to_pyarrow_table(), expected)
    assert_same_rows(deltalake_table(ours), expected)
    assert_same_rows(duckdb_table(ours), expected)
    assert DeltaTable(str(ours)).history(1)[0]["operation"] == "OPTIMIZE"


@pytest.mark.parametrize("configuration", [{"delta.columnMapping.mode": "name"}, {"delta.enableRowTracking": "true"}])
def test_tables_deltalake_cannot_optimize(tmp_path: Path, configuration: dict[str, str]) -> None:
    path = tmp_path / "t"
    for i in range(4):
        write_deltalake(str(path), _data(30, 30 * i), mode="append", configuration=configuration if i == 0 else None)
    with pytest.raises(Exception):  # deltalake refuses these tables for OPTIMIZE
        deltalake.DeltaTable(str(path)).optimize.compact()
    dt = DeltaTable(str(path))
    before = dt.to_pyarrow_table()
    m = dt.optimize.compact()
    assert m["numFilesRemoved"] == 4 and m["numFilesAdded"] == 1
    assert_same_rows(dt.to_pyarrow_table(), before)
    assert_same_rows(duckdb_table(path), before, "duckdb after optimize")
    m = dt.optimize.z_order(["v", "s"])
    assert_same_rows(duckdb_table(path), before, "duckdb after z-order")
