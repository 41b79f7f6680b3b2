"""Interop of the write path: what deltakernel writes is read identically by deltakernel, deltalake and
DuckDB's delta extension; deltakernel appends to deltalake tables and keeps their features."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, deltalake_table, duckdb_table, read_actions

from deltakernel import CommitProperties, DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, SchemaError

deltalake = pytest.importorskip("deltalake")

UTC = dt.timezone.utc


def all_types(n: int = 6, offset: int = 0) -> pa.Table:
    rng = range(offset, offset + n)
    return pa.table(
        {
            "i8": pa.array([i % 100 if i % 5 else None for i in rng], pa.int8()),
            "i16": pa.array([i * 3 for i in rng], pa.int16()),
            "i32": pa.array([i * 1000 for i in rng], pa.int32()),
            "i64": pa.array([i * 10**12 for i in rng], pa.int64()),
            "f32": pa.array([i / 4 for i in rng], pa.float32()),
            "f64": pa.array([i / 3 if i % 4 else None for i in rng], pa.float64()),
            "dec": pa.array([decimal.Decimal(i) / 100 for i in rng], pa.decimal128(10, 2)),
            "b": pa.array([i % 2 == 0 for i in rng], pa.bool_()),
            "s": pa.array([f"str-{i}" * (1 + i % 3) if i % 3 else None for i in rng], pa.string()),
            "bin": pa.array([bytes([i % 256, 0, 255]) for i in rng], pa.binary()),
            "d": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in rng], pa.date32()),
            "ts": pa.array([dt.datetime(2021, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i, microseconds=7)
                            for i in rng], pa.timestamp("us", tz="UTC")),
            "ntz": pa.array([dt.datetime(2022, 6, 1) + dt.timedelta(hours=i) for i in rng], pa.timestamp("us")),
            "st": pa.array([{"x": i, "y": f"y{i}"} if i % 4 else None for i in rng],
                           pa.struct([("x", pa.int64()), ("y", pa.string())])),
            "lst": pa.array([[i, i + 1] if i % 3 else [] for i in rng], pa.list_(pa.int64())),
            "mp": pa.array([[("k", i)] for i in rng], pa.map_(pa.string(), pa.int64())),
        }
    )


def _three_way(path: str, what: str, duck: bool = True) -> pa.Table:
    ours = DeltaTable(path).to_pyarrow_table()
    assert_same_rows(ours, deltalake_table(path), f"{what}: deltakernel vs deltalake")
    if duck:
        assert_same_rows(ours, duckdb_table(path), f"{what}: deltakernel vs duckdb")
    return ours


def test_all_types_many_commits_and_checkpoints(tmp_path: Path) -> None:
    path = str(tmp_path / "types")
    write_deltalake(path, all_types(6), configuration={"delta.checkpointInterval": "4"})
    for k in range(1, 10):
        write_deltalake(path, all_types(3, offset=10 * k), mode="append")
    assert any(p.name.endswith(".checkpoint.parquet") for p in (Path(path) / "_delta_log").iterdir())
    ours = _three_way(path, "all types")
    assert ours.num_rows == 6 + 9 * 3
    assert ours.schema.field("ntz").type == pa.timestamp("us")
    for v in (0, 3, 5, 9):
        assert_same_rows(DeltaTable(path, version=v).to_pyarrow_table(), deltalake_table(path, version=v), f"v{v}")


SPECIAL = ["a b", "x=y", "p/q", "50%", "é", "colon:x", "", None, "plus+sign", "quote'd", "hash#1"]


def test_partitions_with_special_characters_and_nulls(tmp_path: Path) -> None:
    path = str(tmp_path / "parts")
    n = len(SPECIAL)
    data = pa.table({"s": SPECIAL, "i": pa.array([i % 3 if i % 4 else None for i in range(n)], pa.int32()),
                     "d": pa.array([dt.date(2024, 1, 1 + i % 2) for i in range(n)]), "v": list(range(n))})
    write_deltalake(path, data, partition_by=["s", "i", "d"])
    ours = _three_way(path, "special partitions")
    # "" is written as a null partition value, as Spark does
    assert sorted(x for x in ours.column("s").to_pylist() if x is not None) == sorted(x for x in SPECIAL if x)
    for name in SPECIAL:
        if name:
            got = DeltaTable(path).to_pyarrow_table(filters=[("s", "=", name)])
            assert got.column("v").to_pylist() == [SPECIAL.index(name)], name


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_write_and_evolve(tmp_path: Path, mode: str) -> None:
    path = str(tmp_path / f"cm_{mode}")
    write_deltalake(path, pa.table({"a": [1, 2], "p": ["x", "y"]}), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": mode})
    write_deltalake(path, pa.table({"a": [3], "p": ["x"], "b": ["new"]}), mode="append", schema_mode="merge")
    t = DeltaTable(path)
    assert t.protocol().min_reader_version >= 2
    fields = t.schema().fields
    assert all("delta.columnMapping.physicalName" in f.metadata for f in fields)
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "3"
    # physical names are written, not logical ones
    add = next(a["add"] for a in read_actions(path, 0) if "add" in a)
    phys = {f.name: f.metadata["delta.columnMapping.physicalName"] for f in fields}
    assert list(add["partitionValues"]) == [phys["p"]]
    import pyarrow.parquet as pq

    file_cols = pq.read_schema(Path(path) / DeltaTable(path).files()[0].replace("%20", " ")).names
    assert phys["a"] in file_cols and "a" not in file_cols
    ours = t.to_pyarrow_table()
    assert sorted(map(str, ours.column("b").to_pylist())) == ["None", "None", "new"]
    # DuckDB's delta extension (1.5.5) returns NULL for a column-mapped partition column that is not the
    # first column of the schema (Spark-written tables too); compare the data columns there, and a
    # partition-first layout in full below
    assert_same_rows(ours.drop_columns(["p"]), duckdb_table(path).drop_columns(["p"]), "column mapping vs duckdb")
    first = str(tmp_path / f"cm_first_{mode}")
    write_deltalake(first, pa.table({"p": ["x", "y"], "a": [1, 2]}), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": mode})
    assert_same_rows(DeltaTable(first).to_pyarrow_table(), duckdb_table(first), "partition-first vs duckdb")
    # deltalake's datafusion path reads column mapping right (its pyarrow path does not)
    dl = pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path)).execute("select * from t"))
    assert_same_rows(ours, dl, "column mapping vs deltalake")


def test_overwrite_modes(tmp_path: Path) -> None:
    path = str(tmp_path / "ow")
    write_deltalake(path, pa.table({"p": ["a", "b", "c"], "v": [1, 2, 3]}), partition_by=["p"])
    write_deltalake(path, pa.table({"p": ["b"], "v": [20]}), mode="overwrite", partition_overwrite_mode="dynamic")
    assert sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["p"]) == [
        {"p": "a", "v": 1}, {"p": "b", "v": 20}, {"p": "c", "v": 3}]
    write_deltalake(path, pa.table({"p": ["c"], "v": [30]}), mode="overwrite", predicate="p = 'c'")
    assert sorted(DeltaTable(path).to_pyarrow_table().column("v").to_pylist()) == [1, 20, 30]
    with pytest.raises(DeltaError):  # rows outside the replaceWhere predicate are refused
        write_deltalake(path, pa.table({"p": ["a"], "v": [9]}), mode="overwrite", predicate="p = 'c'")
    # a data (non-partition) predicate rewrites files: rows not matching survive
    write_deltalake(path, pa.table({"p": ["a"], "v": [10]}), mode="overwrite", predicate="v < 25")
    assert sorted(DeltaTable(path).to_pyarrow_table().column("v").to_pylist()) == [10, 30]
    write_deltalake(path, pa.table({"p": ["z"], "v": [0]}), mode="overwrite")
    _three_way(path, "after overwrite")
    assert DeltaTable(path).to_pyarrow_table().column("v").to_pylist() == [0]
    write_deltalake(path, pa.table({"p": ["z"], "v": [5]}), mode="ignore")
    assert DeltaTable(path).count() == 1
    with pytest.raises(DeltaError):
        write_deltalake(path, pa.table({"p": ["z"], "v": [5]}), mode="error")


def test_schema_evolution(tmp_path: Path) -> None:
    path = str(tmp_path / "evo")
    write_deltalake(path, pa.table({"a": pa.array([1], pa.int32()), "s": [{"x": 1}]}))
    with pytest.raises(SchemaError):
        write_deltalake(path, pa.table({"a": [2], "b": ["new"]}), mode="append")
    write_deltalake(path, pa.table({"a": pa.array([2], pa.int32()), "b": ["new"],
                                    "s": [{"x": 2, "y": "nested-new"}]}), mode="append", schema_mode="merge")
    t = DeltaTable(path)
    assert t.schema().names == ["a", "s", "b"]
    _three_way(path, "merged schema")
    # missing nullable columns are filled with nulls
    write_deltalake(path, pa.table({"a": pa.array([3], pa.int32())}), mode="append")
    assert DeltaTable(path).count() == 3
    write_deltalake(path, pa.table({"z": ["only"]}), mode="overwrite", schema_mode="overwrite")
    t = DeltaTable(path)
    assert t.schema().names == ["z"] and t.to_pyarrow_table().column("z").to_pylist() == ["only"]
    _three_way(path, "overwritten schema")


def test_type_widening_with_merge(tmp_path: Path) -> None:
    path = str(tmp_path / "widen")
    write_deltalake(path, pa.table({"a": pa.array([1], pa.int16())}), configuration={"delta.enableTypeWidening": "true"})
    write_deltalake(path, pa.table({"a": pa.array([2**40], pa.int64())}), mode="append", schema_mode="merge")
    t = DeltaTable(path)
    assert t.schema().field("a").type.type == "long"
    assert "typeWidening" in (t.protocol().reader_features or ())
    assert sorted(t.to_pyarrow_table().column("a").to_pylist()) == [1, 2**40]


def test_append_to_deltalake_table_keeps_features(tmp_path: Path) -> None:
    path = str(tmp_path / "dl")
    deltalake.write_deltalake(path, pa.table({"id": [1, 2], "p": ["x", "y"]}), partition_by=["p"],
                              configuration={"delta.enableChangeDataFeed": "true", "delta.appendOnly": "true"})
    proto_before = deltalake.DeltaTable(path).protocol()
    write_deltalake(path, pa.table({"id": [3], "p": ["x"]}), mode="append")
    dl = deltalake.DeltaTable(path)
    assert dl.version() == 1 and dl.protocol().min_writer_version == proto_before.min_writer_version
    assert dl.metadata().configuration["delta.enableChangeDataFeed"] == "true"
    assert sorted(pa.table(dl.to_pyarrow_table()).column("id").to_pylist()) == [1, 2, 3]
    cdf = DeltaTable(path).load_cdf(starting_version=1).read_all()
    assert cdf.column("_change_type").to_pylist() == ["insert"]
    # append-only: an overwrite must be refused and commit nothing
    with pytest.raises(DeltaError):
        write_deltalake(path, pa.table({"id": [9], "p": ["x"]}), mode="overwrite")
    assert deltalake.DeltaTable(path).version() == 1


def test_streaming_input_and_custom_metadata(tmp_path: Path) -> None:
    path = str(tmp_path / "stream")
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])

    def gen():
        for b in range(20):
            yield pa.record_batch([pa.array(range(b * 1000, (b + 1) * 1000)), pa.array(["x"] * 1000)], schema=schema)

    write_deltalake(path, pa.RecordBatchReader.from_batches(schema, gen()),
                    commit_properties=CommitProperties(custom_metadata={"userMetadata": "etl-run-7"}))
    t = DeltaTable(path)
    assert t.count() == 20_000
    h = t.history()[0]
    assert h["userMetadata"] == "etl-run-7" and h["operationMetrics"]["numOutputRows"] == "20000"
    assert pc.sum(t.to_pyarrow_table().column("k")).as_py() == sum(range(20_000))
    import pandas as pd

    write_deltalake(path, pd.DataFrame({"k": [1], "v": ["pandas"]}), mode="append")
    assert DeltaTable(path).count() == 20_001


def test_commit_info_fields(tmp_path: Path) -> None:
    path = str(tmp_path / "ci")
    write_deltalake(path, pa.table({"a": [1]}))
    write_deltalake(path, pa.table({"a": [2]}), mode="append")
    info = next(a["commitInfo"] for a in read_actions(path, 1) if "commitInfo" in a)
    for key in ("timestamp", "operation", "operationParameters", "readVersion", "isolationLevel",
                "isBlindAppend", "operationMetrics", "engineInfo"):
        assert key in info, key
    assert info["readVersion"] == 0 and info["isBlindAppend"] is True and info["operation"] == "WRITE"
    assert json.loads(info["operationParameters"]["partitionBy"]) == []


def test_in_commit_timestamps_and_row_tracking(tmp_path: Path) -> None:
    path = str(tmp_path / "ict")
    write_deltalake(path, pa.table({"a": [1, 2]}), configuration={"delta.enableInCommitTimestamps": "true",
                                                                   "delta.enableRowTracking": "true"})
    write_deltalake(path, pa.table({"a": [3]}), mode="append")
    infos = [next(a["commitInfo"] for a in read_actions(path, v) if "commitInfo" in a) for v in (0, 1)]
    assert all("inCommitTimestamp" in i for i in infos)
    assert infos[1]["inCommitTimestamp"] > infos[0]["inCommitTimestamp"]
    adds = [a["add"] for v in (0, 1) for a in read_actions(path, v) if "add" in a]
    assert sorted(a["baseRowId"] for a in adds) == [0, 2]
    assert [a["defaultRowCommitVersion"] for a in adds] == [0, 1]
    t = DeltaTable(path)
    assert json.loads(t.snapshot.domain_metadata["delta.rowTracking"].configuration)["rowIdHighWaterMark"] == 2
    assert {"rowTracking", "domainMetadata", "inCommitTimestamp"} <= set(t.protocol().writer_features or ())
    assert_same_rows(t.to_pyarrow_table(), deltalake_table(path), "ict/row tracking vs deltalake")


_KINDS = ["create", "append", "append_txn", "overwrite", "replace_where_partition", "replace_where_data_cdf_rt",
          "dynamic_partition", "schema_merge", "min_versions", "row_tracking_enabled_later"]


@pytest.mark.parametrize("kind", _KINDS)
def test_every_kind_of_write_reads_the_same_in_deltalake_and_duckdb(tmp_path: Path, kind: str) -> None:
    """After each kind of write the three readers agree (the commit-safety and protocol changes keep tables
    readable by others)."""
    from deltakernel import Transaction

    path = str(tmp_path / kind)
    base = pa.table({"p": ["a", "a", "b"], "v": pa.array([1, 2, 3], pa.int64())})
    conf = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"} \
        if kind == "replace_where_data_cdf_rt" else None
    conf = {"delta.minReaderVersion": "2", "delta.minWriterVersion": "5"} if kind == "min_versions" else conf
    write_deltalake(path, base, partition_by=["p"], configuration=conf)
    new = pa.table({"p": ["b"], "v": pa.array([30], pa.int64())})
    if kind == "append":
        write_deltalake(path, new, mode="append")
    elif kind == "append_txn":
        write_deltalake(path, new, mode="append",
                        commit_properties=CommitProperties(app_transactions=[Transaction("app", 1)]))
    elif kind == "overwrite":
        write_deltalake(path, new, mode="overwrite")
    elif kind == "replace_where_partition":
        write_deltalake(path, new, mode="overwrite", predicate="p = 'b'")
    elif kind == "replace_where_data_cdf_rt":
        write_deltalake(path, pa.table({"p": ["a"], "v": pa.array([20], pa.int64())}), mode="overwrite",
                        predicate="v >= 2 AND p = 'a'")
    elif kind == "dynamic_partition":
        write_deltalake(path, new, mode="overwrite", partition_overwrite_mode="dynamic")
    elif kind == "schema_merge":
        write_deltalake(path, pa.table({"p": ["c"], "v": pa.array([4], pa.int64()), "w": ["x"]}), mode="append",
                        schema_mode="merge")
    elif kind == "min_versions":
        write_deltalake(path, new, mode="append")
    elif kind == "row_tracking_enabled_later":
        DeltaTable(path).alter.set_table_properties({"delta.enableRowTracking": "true"})
        write_deltalake(path, new, mode="append")
    _three_way(path, kind)
