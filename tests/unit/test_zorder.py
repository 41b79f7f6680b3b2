"""Z-order keys (`operations/zorder.py`) and `DeltaTable.optimize.z_order`: bit interleaving checked against a
per-row reference, every supported type ordered, locality, and file skipping measured by the scan's metrics
before and after (a point query on each Z-order column opens fewer files)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import random
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, duckdb_table, read_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError
from deltakernel.operations.maintenance.optimize.zorder import scaled_ranks, zorder_binary, zorder_key, zorder_sort


def _reference_key(ranks: list[list[int]], bits: int) -> list[int]:
    """Per-row interleave (test oracle): most significant bits first, the first column leading."""
    k = len(ranks)
    out = []
    for row in zip(*ranks):
        key = 0
        for b in range(bits - 1, -1, -1):
            for j, r in enumerate(row):
                key |= ((r >> b) & 1) << (b * k + (k - 1 - j))
        out.append(key)
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_interleave_matches_reference(k: int) -> None:
    rng = random.Random(k)
    n = 300
    table = pa.table({f"c{j}": pa.array([rng.randint(-50, 50) for _ in range(n)], pa.int64()) for j in range(k)})
    bits = min(16, 64 // k)
    ranks = [scaled_ranks(table.column(f"c{j}"), bits).tolist() for j in range(k)]
    assert zorder_key(table, [f"c{j}" for j in range(k)]).tolist() == _reference_key(ranks, bits)
    # binary z-values order like the integers
    binary = zorder_binary(table, [f"c{j}" for j in range(k)]).to_pylist()
    keys = zorder_key(table, [f"c{j}" for j in range(k)]).tolist()
    assert sorted(range(n), key=lambda i: binary[i]) == sorted(range(n), key=lambda i: (keys[i], i))


def _typed_columns() -> dict[str, pa.Array]:
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return {
        "i8": pa.array([3, -1, None, 7, 0, -128], pa.int8()),
        "i64": pa.array([2**40, -(2**40), 5, None, 0, 1], pa.int64()),
        "f64": pa.array([1.5, -0.0, None, 3e10, -2.25, 0.5], pa.float64()),
        "str": pa.array(["banana", "apple", None, "applesauce", "", "zz"], pa.string()),
        "bin": pa.array([b"\x01", b"\x00\xff", None, b"\x02", b"", b"\x01\x00"], pa.binary()),
        "date": pa.array([dt.date(2020, 1, 2), dt.date(1999, 12, 31), None, dt.date(2020, 1, 1),
                          dt.date(1970, 1, 1), dt.date(2100, 5, 5)], pa.date32()),
        "ts": pa.array([base + dt.timedelta(seconds=s) for s in (5, -5, 0, 100, 1, 2)],
                       pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(x) for x in ("1.10", "-3.50", "0.00", "10.01", "1.09", "-3.49")],
                        pa.decimal128(6, 2)),
        "bool": pa.array([True, False, None, True, False, True], pa.bool_()),
    }


@pytest.mark.parametrize("name", list(_typed_columns()))
def test_single_column_zorder_is_a_sort(name: str) -> None:
    arr = _typed_columns()[name]
    table = pa.table({"v": arr, "row": pa.array(range(len(arr)))})
    out = zorder_sort(table, ["v"])
    expected = table.sort_by([("v", "ascending")])  # nulls last, ties stable
    assert out.column("v").to_pylist() == expected.column("v").to_pylist()


def test_unorderable_type_is_refused() -> None:
    table = pa.table({"s": pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))})
    with pytest.raises(DeltaError, match="no order"):
        zorder_key(table, ["s"])


def test_two_column_locality_beats_a_lexicographic_sort() -> None:
    """Cut the sorted rows into 16 files: Z-order keeps both columns' ranges narrow, a sort only the first."""
    x, y = np.meshgrid(np.arange(64), np.arange(64))
    rng = np.random.default_rng(0)
    perm = rng.permutation(x.size)
    table = pa.table({"x": x.ravel()[perm], "y": y.ravel()[perm]})

    def spans(t: pa.Table, col: str) -> float:
        parts = [t.slice(i * 256, 256).column(col) for i in range(16)]
        return float(np.mean([pc.max(p).as_py() - pc.min(p).as_py() for p in parts]))

    z = zorder_sort(table, ["x", "y"])
    lex = table.sort_by([("x", "ascending"), ("y", "ascending")])
    assert spans(z, "x") < 20 and spans(z, "y") < 20
    assert spans(lex, "y") == 63  # a lexicographic sort leaves y spread over every file


def _grid_table(path: Path, appends: int = 8, rows: int = 2000) -> DeltaTable:
    rng = np.random.default_rng(7)
    for _ in range(appends):
        n = rows
        data = pa.table({
            "x": pa.array(rng.integers(0, 1000, n), pa.int64()),
            "y": pa.array(rng.random(n) * 1000.0, pa.float64()),
            "s": pa.array([f"k{v:04d}" for v in rng.integers(0, 1000, n)], pa.string()),
            "d": pa.array(rng.integers(0, 3650, n).astype("datetime64[D]"), pa.date32()),
        })
        write_deltalake(str(path), data, mode="append")
    return DeltaTable(str(path))


def _files_opened(t: DeltaTable, column: str, value: object) -> int:
    scan = t.scan(filters=[(column, "=", value)])
    scan.plan()
    return int(scan.metrics.files_scanned)


@pytest.mark.parametrize("columns", [["x", "s"], ["y", "d"]])
def test_z_order_improves_skipping_on_each_column(tmp_path: Path, columns: list[str]) -> None:
    t = _grid_table(tmp_path)
    before = t.to_pyarrow_table()
    total = sum(int(s) for s in t.get_add_actions().column("size_bytes").to_pylist())
    probes = {"x": 500, "y": float(before.column("y")[17].as_py()), "s": "k0500",
              "d": before.column("d")[3].as_py()}
    probes = {c: probes[c] for c in columns}
    opened_before = {c: _files_opened(t, c, v) for c, v in probes.items()}
    assert all(n == 8 for n in opened_before.values())  # random data: every file spans every range
    m = t.optimize.z_order(columns, target_size=max(1, total // 16))
    assert m["plannerStrategy"] == "zOrder" and m["preserveInsertionOrder"] is False
    assert m["numFilesRemoved"] == 8 and m["numFilesAdded"] >= 8
    info = t.history(1)[0]
    assert info["operation"] == "OPTIMIZE"
    assert json.loads(info["operationParameters"]["zOrderBy"]) == columns
    n_files = len(t.files())
    opened_after = {c: _files_opened(t, c, v) for c, v in probes.items()}
    for c in probes:  # fewer files opened than before, though there are twice as many files
        assert opened_after[c] < opened_before[c] and opened_after[c] <= n_files / 3, (c, opened_after, n_files)
    assert_same_rows(t.to_pyarrow_table(), before, "z-order rows")
    assert_same_rows(duckdb_table(tmp_path), before, "duckdb after z-order")
    adds = [a["add"] for a in read_actions(tmp_path, t.version()) if "add" in a]
    assert all(a["dataChange"] is False for a in adds)


def test_z_order_rewrites_single_files_and_partitions(tmp_path: Path) -> None:
    for i in range(2):
        write_deltalake(str(tmp_path), pa.table({"p": ["a", "b"] * 10, "x": list(range(20 * i, 20 * i + 20))}),
                        mode="append", partition_by=["p"])
    t = DeltaTable(str(tmp_path))
    t.optimize.compact()
    before = t.to_pyarrow_table()
    m = t.optimize.z_order(["x"], partition_filters=[("p", "=", "a")])
    assert (m["numFilesRemoved"], m["numFilesAdded"], m["partitionsOptimized"]) == (1, 1, 1)
    assert_same_rows(t.to_pyarrow_table(), before)
    # rows of the rewritten file are in x order
    add = next(a["add"] for a in read_actions(tmp_path, t.version()) if "add" in a)
    import pyarrow.parquet as pq

    xs = pq.read_table(tmp_path / add["path"]).column("x").to_pylist()
    assert xs == sorted(xs)


def test_z_order_row_tracking_and_dv(tmp_path: Path) -> None:
    conf = {"delta.enableRowTracking": "true", "delta.enableDeletionVectors": "true"}
    for i in range(3):
        write_deltalake(str(tmp_path), pa.table({"x": list(range(30 * i, 30 * i + 30))[::-1]}), mode="append",
                        configuration=conf if i == 0 else None)
    t = DeltaTable(str(tmp_path))
    t.delete("x % 4 = 0")
    before = t.to_pyarrow_table(row_tracking=True)
    t.optimize.z_order(["x"])
    after = t.to_pyarrow_table(row_tracking=True)
    key = lambda tb: sorted(zip(tb["x"].to_pylist(), tb["_row_id"].to_pylist()))
    assert key(after) == key(before)
    assert after.column("x").to_pylist() == sorted(before.column("x").to_pylist())


def test_max_spill_size_bounds_the_sorted_bins(tmp_path: Path) -> None:
    """A small memory budget cuts a partition into several sorted bins (each sorted on its own)."""
    t = _grid_table(tmp_path, appends=6, rows=500)
    before = t.to_pyarrow_table()
    size = max(int(s) for s in t.get_add_actions().column("size_bytes").to_pylist())
    m = t.optimize.z_order(["x"], target_size=2 * size, max_spill_size=4 * 2 * size * 2,
                           max_concurrent_tasks=2)
    assert m["numFilesRemoved"] == 6 and m["maxBinSpanFiles"] == 2 and m["numFilesAdded"] == 3
    assert_same_rows(t.to_pyarrow_table(), before)
