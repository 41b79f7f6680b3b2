"""convert_to_deltalake against deltalake 1.6.6's on copies of the same Parquet directory: same rows (read by
both engines and DuckDB), same schema and partitioning, same files, same stats values where both have them,
same history operation and parameters."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, convert_to_deltalake

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

deltalake = pytest.importorskip("deltalake")


def _data(lo: int, n: int) -> pa.Table:
    ids = list(range(lo, lo + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([None if i % 4 == 0 else f"n{i}" for i in ids], pa.string()),
        "small": pa.array([i % 100 for i in ids], pa.int32()),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 30) for i in ids], pa.date32()),
        "amount": pa.array([i * 1.5 for i in ids], pa.float64()),
    })


def _make(root: Path, partitioned: bool) -> None:
    for i, region in enumerate(["eu", "us", "apac"]):
        d = root / f"region={region}" if partitioned else root  # deltalake takes subdirectories as partitions
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(_data(i * 100, 50 + i), d / f"part-{i}.parquet", row_group_size=20)


def _adds(uri: Path) -> dict[str, dict[str, Any]]:
    return {a["add"]["path"]: a["add"] for a in helpers.read_actions(uri, 0) if "add" in a}


@pytest.mark.parametrize("partitioned", [False, True])
def test_convert_matches_deltalake(tmp_path: Path, partitioned: bool) -> None:
    src = tmp_path / "src"
    _make(src, partitioned)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(src, ours)
    shutil.copytree(src, theirs)
    kw: dict[str, Any] = {}
    if partitioned:
        kw = {"partition_by": pa.schema([("region", pa.string())]), "partition_strategy": "hive"}
        dl_kw = {"partition_by": deltalake.Schema([deltalake.Field("region", "string")]),
                 "partition_strategy": "hive"}
    else:
        dl_kw = {}
    convert_to_deltalake(str(ours), **kw)
    deltalake.convert_to_deltalake(str(theirs), **dl_kw)

    mine, dl = DeltaTable(str(ours)), deltalake.DeltaTable(str(theirs))
    expected = dl.to_pyarrow_table()
    helpers.assert_same_rows(mine.to_pyarrow_table(), expected, "deltakernel")
    helpers.assert_same_rows(helpers.deltalake_table(ours), expected, "deltalake on ours")
    helpers.assert_same_rows(helpers.duckdb_table(ours), expected, "duckdb on ours")
    assert sorted(mine.schema().names) == sorted(f.name for f in dl.schema().fields)
    assert mine.partition_columns() == dl.metadata().partition_columns

    h_mine, h_dl = mine.history()[0], dl.history()[0]
    assert h_mine["operation"] == h_dl["operation"] == "CONVERT"
    assert h_mine["operationParameters"] == h_dl["operationParameters"]

    a_mine, a_dl = _adds(ours), _adds(theirs)
    assert set(a_mine) == set(a_dl)
    for path, add in a_mine.items():
        other = a_dl[path]
        assert add["size"] == other["size"] and add["partitionValues"] == other["partitionValues"]
        s, o = json.loads(add["stats"]), json.loads(other["stats"])
        assert s["numRecords"] == o["numRecords"]
        assert s["nullCount"] == o["nullCount"]
        # min/max: the same values where both have them; ours drops only float maxima (NaN unknown)
        for key in ("minValues", "maxValues"):
            for col, value in o[key].items():
                if key == "maxValues" and col == "amount":
                    assert col not in s[key]
                else:
                    assert s[key][col] == value, (path, key, col)
