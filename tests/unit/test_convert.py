"""convert_to_deltalake: Parquet directories (plain, hive, directory-partitioned, object store) become Delta
tables whose rows, schema, partition values and footer stats are right."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, convert_to_deltalake, write_deltalake
from deltakernel.errors import DeltaError, SchemaError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers


def _t(ids: list[int], names: list[str | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string()),
                     "d": pa.array([dt.date(2024, 1, i % 28 + 1) for i in ids], pa.date32())})


def _adds(uri: str | Path) -> dict[str, dict]:
    return {a["add"]["path"]: a["add"] for a in helpers.read_actions(uri, 0) if "add" in a}


def test_plain_directory(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "sub").mkdir(parents=True)
    pq.write_table(_t([1, 2, 3], ["a", None, "c"]), root / "f0.parquet")
    pq.write_table(_t([10, 11], ["x", "y"]), root / "sub" / "f1.parquet", row_group_size=1)
    (root / "_SUCCESS").write_text("")
    (root / ".hidden.parquet").write_bytes(b"junk")
    (root / "_tmp").mkdir()
    (root / "_tmp" / "ignored.parquet").write_bytes(b"junk")
    convert_to_deltalake(str(root))
    t = DeltaTable(str(root))
    expected = pa.concat_tables([_t([1, 2, 3], ["a", None, "c"]), _t([10, 11], ["x", "y"])])
    helpers.assert_same_rows(t.to_pyarrow_table(), expected)
    assert t.history()[0]["operation"] == "CONVERT"
    assert t.history()[0]["operationParameters"] == {"collectStats": "true", "numFiles": "2", "partitionBy": "[]"}
    adds = _adds(root)
    assert set(adds) == {"f0.parquet", "sub/f1.parquet"}
    s0, s1 = json.loads(adds["f0.parquet"]["stats"]), json.loads(adds["sub/f1.parquet"]["stats"])
    assert s0["numRecords"] == 3 and s0["nullCount"] == {"id": 0, "name": 1, "d": 0}
    assert s0["minValues"] == {"id": 1, "name": "a", "d": "2024-01-02"}
    assert s0["maxValues"] == {"id": 3, "name": "c", "d": "2024-01-04"}
    assert s1["minValues"]["id"] == 10 and s1["maxValues"]["id"] == 11  # folded over two row groups
    assert adds["f0.parquet"]["size"] == (root / "f0.parquet").stat().st_size
    assert all(f.nullable for f in t.schema().fields)
    # stats are used for skipping
    assert len(t.scan(filters=[("id", ">", 5)]).plan()) == 1


def test_hive_partitions_and_unified_schema(tmp_path: Path) -> None:
    root = tmp_path / "hive"
    for part, tbl in [("p=a", _t([1], ["a"])), ("p=b%2Fc", _t([2], ["b"])),
                      ("p=__HIVE_DEFAULT_PARTITION__", _t([3], [None]).append_column("extra", pa.array([1.5])))]:
        (root / part).mkdir(parents=True)
        pq.write_table(tbl, root / part / "x.parquet")
    convert_to_deltalake(str(root), partition_by=pa.schema([("p", pa.string())]), partition_strategy="hive")
    t = DeltaTable(str(root))
    assert t.partition_columns() == ["p"]
    assert t.schema().names == ["id", "name", "d", "extra", "p"]
    rows = {r["id"]: (r["p"], r["extra"]) for r in t.to_pyarrow_table().to_pylist()}
    assert rows == {1: ("a", None), 2: ("b/c", None), 3: (None, 1.5)}
    adds = _adds(root)
    assert adds["p=b%252Fc/x.parquet"]["partitionValues"] == {"p": "b/c"}  # '%' of the file name URI-encoded
    assert json.loads(adds["p=a/x.parquet"]["stats"])["nullCount"]["extra"] == 1  # absent column: all null
    helpers.assert_same_rows(helpers.duckdb_table(root), t.to_pyarrow_table(), "duckdb")


def test_directory_strategy_and_typed_partitions(tmp_path: Path) -> None:
    root = tmp_path / "dirs"
    for y, m in [(2020, 1), (2021, 12)]:
        (root / str(y) / str(m)).mkdir(parents=True)
        pq.write_table(_t([y + m], ["v"]), root / str(y) / str(m) / "part-0.parquet")
    convert_to_deltalake(str(root), partition_by=pa.schema([("year", pa.int32()), ("month", pa.int64())]),
                         partition_strategy="directory")
    rows = sorted((r["year"], r["month"], r["id"]) for r in DeltaTable(str(root)).to_pyarrow_table().to_pylist())
    assert rows == [(2020, 1, 2021), (2021, 12, 2033)]


def test_bad_partition_value_and_layout_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    (root / "year=abc").mkdir(parents=True)
    pq.write_table(_t([1], ["a"]), root / "year=abc" / "x.parquet")
    with pytest.raises(DeltaError):
        convert_to_deltalake(str(root), partition_by=pa.schema([("year", pa.int32())]), partition_strategy="hive")
    with pytest.raises(DeltaError, match="no month="):
        convert_to_deltalake(str(root), partition_by=pa.schema([("month", pa.int32())]), partition_strategy="hive")
    with pytest.raises(DeltaError, match="strategy"):
        convert_to_deltalake(str(root), partition_by=pa.schema([("year", pa.int32())]))
    assert not (root / "_delta_log").exists() or not any((root / "_delta_log").iterdir())


def test_incompatible_schemas(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    root.mkdir()
    pq.write_table(pa.table({"a": pa.array([1], pa.int64())}), root / "a.parquet")
    pq.write_table(pa.table({"a": pa.array(["x"])}), root / "b.parquet")
    with pytest.raises(SchemaError, match="incompatible"):
        convert_to_deltalake(str(root))


def test_modes_when_a_table_exists(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, _t([1, 2], ["a", "b"]))
    with pytest.raises(DeltaError, match="already a Delta table"):
        convert_to_deltalake(uri)
    convert_to_deltalake(uri, mode="ignore")
    assert DeltaTable(uri).version() == 0
    with pytest.raises(DeltaError, match="mode"):
        convert_to_deltalake(uri, mode="overwrite")


def test_no_stats_and_properties(tmp_path: Path) -> None:
    root = tmp_path / "nostats"
    root.mkdir()
    pq.write_table(_t([1, 2], ["a", "b"]), root / "a.parquet")
    convert_to_deltalake(str(root), collect_stats=False, name="n", description="desc",
                         configuration={"delta.appendOnly": "true"})
    t = DeltaTable(str(root))
    assert "stats" not in _adds(root)["a.parquet"]
    assert t.metadata().name == "n" and t.metadata().description == "desc"
    assert t.metadata().configuration == {"delta.appendOnly": "true"}
    assert t.protocol().min_writer_version >= 2
    assert t.history()[0]["operationParameters"]["collectStats"] == "false"


def test_progress_and_float_bounds(tmp_path: Path) -> None:
    root = tmp_path / "floats"
    root.mkdir()
    for i in range(3):
        pq.write_table(pa.table({"f": [1.0 + i, float("nan")]}), root / f"f{i}.parquet")
    seen: list[tuple[int, int]] = []
    convert_to_deltalake(str(root), progress=lambda d, n: seen.append((d, n)))
    assert seen[-1] == (3, 3)
    stats = json.loads(_adds(root)["f0.parquet"]["stats"])
    assert stats["minValues"] == {"f": 1.0}
    assert "f" not in stats["maxValues"]  # whether NaN is present is unknown from an Arrow footer: no max


def test_convert_on_s3(s3_bucket: str, s3_options: dict[str, str], tmp_path: Path) -> None:
    from deltakernel.storage import storage_for_uri

    uri = f"s3://{s3_bucket}/convert"
    storage = storage_for_uri(uri, s3_options)
    for part, ids in [("k=1", [1, 2]), ("k=2", [3])]:
        local = tmp_path / f"{part}.parquet"
        pq.write_table(_t(ids, ["n"] * len(ids)), local)
        storage.put_if_absent(f"{part}/data.parquet", local.read_bytes())
    convert_to_deltalake(uri, partition_by=pa.schema([("k", pa.int32())]), partition_strategy="hive",
                         storage_options=s3_options)
    t = DeltaTable(uri, storage_options=s3_options)
    assert sorted((r["k"], r["id"]) for r in t.to_pyarrow_table().to_pylist()) == [(1, 1), (1, 2), (2, 3)]
