"""OPTIMIZE writes its files through the shared data-file writer (`files/parquet_writer`): the same row-group caps
(rows and Arrow bytes), column properties, codec and file names, and the same add fields and stats as a write of
the same rows; one file per bin even when the bin has enough row groups to use a write's second encoding lane."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import ColumnProperties, DeltaTable, WriterProperties, write_deltalake
from deltakernel.operations.files import parquet_writer


def _rows(n: int, offset: int = 0) -> pa.Table:
    ids = np.arange(offset, offset + n, dtype=np.int64)
    return pa.table({"id": pa.array(ids), "x": pa.array(ids * 0.5),
                     "s": pa.array([f"s{i % 7}" for i in ids.tolist()])})


def _appended(path: Path, appends: int, rows: int, props: WriterProperties | None = None) -> DeltaTable:
    for i in range(appends):
        write_deltalake(str(path), _rows(rows, i * rows), mode="append", writer_properties=props)
    return DeltaTable(str(path))


def _adds(dt: DeltaTable) -> list[dict[str, Any]]:
    log = Path(dt.table_uri.removeprefix("file://")) / "_delta_log"
    version = dt.version()
    lines = (log / f"{version:020d}.json").read_text().splitlines()
    return [json.loads(line)["add"] for line in lines if '"add"' in line]


def _row_groups(root: Path, add: dict[str, Any]) -> list[int]:
    meta = pq.read_metadata(root / add["path"])
    return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def test_row_count_cap_and_add_fields_match_a_write(tmp_path: Path) -> None:
    props = WriterProperties(max_row_group_size=1_000, compression="ZSTD")
    dt = _appended(tmp_path / "opt", appends=5, rows=900, props=props)
    dt.optimize.compact(writer_properties=props)
    (opt,) = _adds(dt)
    write_deltalake(str(tmp_path / "one"), _rows(4_500), writer_properties=props)
    (one,) = _adds(DeltaTable(str(tmp_path / "one")))
    assert _row_groups(tmp_path / "opt", opt) == _row_groups(tmp_path / "one", one) == [1_000] * 4 + [500]
    assert set(opt) == set(one) and opt["dataChange"] is False and one["dataChange"] is True
    assert json.loads(opt["stats"]) == json.loads(one["stats"])
    assert opt["path"].endswith(".zstd.parquet") and opt["path"].startswith("part-00000-")
    assert pq.read_metadata(tmp_path / "opt" / opt["path"]).row_group(0).column(0).compression == "ZSTD"


def test_byte_cap_is_the_writers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One byte cap for writes and OPTIMIZE: with a tiny cap every input batch becomes a row group in both."""
    monkeypatch.setattr(parquet_writer, "MAX_ROW_GROUP_BYTES", 1)
    dt = _appended(tmp_path, appends=4, rows=50)
    assert [_row_groups(tmp_path, a) for a in _adds_all(tmp_path)] == [[50]] * 4
    dt.optimize.compact()
    (add,) = _adds(dt)
    assert _row_groups(tmp_path, add) == [50, 50, 50, 50]


def test_column_properties_apply_to_optimize_output(tmp_path: Path) -> None:
    """Per-column writer properties (here: no dictionary for `s`) shape OPTIMIZE's files as they shape a write's."""
    props = WriterProperties(column_properties={"s": ColumnProperties(dictionary_enabled=False)})
    dt = _appended(tmp_path / "opt", appends=3, rows=100)
    dt.optimize.compact(writer_properties=props)
    (opt,) = _adds(dt)
    write_deltalake(str(tmp_path / "one"), _rows(300), writer_properties=props)
    (one,) = _adds(DeltaTable(str(tmp_path / "one")))

    def dictionary_columns(root: Path, add: dict[str, Any]) -> list[str]:
        rg = pq.read_metadata(root / add["path"]).row_group(0)
        return [rg.column(i).path_in_schema for i in range(rg.num_columns)
                if any("DICTIONARY" in e for e in rg.column(i).encodings)]

    assert dictionary_columns(tmp_path / "opt", opt) == dictionary_columns(tmp_path / "one", one) == ["id", "x"]


def test_big_bin_stays_one_file_in_order(tmp_path: Path) -> None:
    """A write this size would alternate two files (encoding lanes); a compacted bin stays one file, rows in order."""
    rg = parquet_writer._LANE_MIN_ROWS
    props = WriterProperties(max_row_group_size=rg)
    dt = _appended(tmp_path, appends=3, rows=rg, props=props)
    dt.optimize.compact(writer_properties=props)
    (add,) = _adds(dt)
    assert _row_groups(tmp_path, add) == [rg] * 3
    assert dt.to_pyarrow_table().column("id").to_pylist() == list(range(3 * rg))


def test_partition_values_kept_as_logged(tmp_path: Path) -> None:
    data = _rows(40).append_column("p", pa.array(["a b", None] * 20))
    for i in range(2):
        write_deltalake(str(tmp_path), data.slice(i * 20, 20), mode="append", partition_by=["p"])
    dt = DeltaTable(str(tmp_path))
    before = {tuple(sorted(a["partitionValues"].items())) for a in _adds_all(tmp_path)}
    dt.optimize.compact()
    after = {tuple(sorted(a["partitionValues"].items())) for a in _adds(dt)}
    assert after == before == {(("p", "a b"),), (("p", None),)}
    assert {a["path"].split("/")[0] for a in _adds(dt)} == {"p=a%20b", "p=__HIVE_DEFAULT_PARTITION__"}


def _adds_all(root: Path) -> list[dict[str, Any]]:
    out = []
    for f in sorted((root / "_delta_log").glob("*.json")):
        out += [json.loads(line)["add"] for line in f.read_text().splitlines() if '"add"' in line]
    return out
