"""Protocol safety, schema rules and commitInfo fields of the write path (issue: commit safety, 2-4)."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import deltalake
import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import helpers

from deltakernel import CommitProperties, DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, SchemaError, SchemaMismatchError, UnsupportedFeatureError
from deltakernel.kernel.log.actions import Protocol


def _v(values: list[int]) -> pa.Table:
    return pa.table({"v": pa.array(values, pa.int64())})


def _set_protocol(p: str, protocol: dict) -> None:
    """Append a commit that sets `protocol` (what another writer, newer than us, would have done)."""
    v = DeltaTable(p).version() + 1
    helpers.write_actions(p, v, [{"commitInfo": {"operation": "UPGRADE PROTOCOL"}}, {"protocol": protocol}])


def _commit(p: str, version: int) -> list[dict]:
    return helpers.read_actions(p, version)


# ----------------------------------------------------------------------------- protocol safety
@pytest.mark.parametrize("write", ["append", "overwrite", "overwrite_schema", "replace_where", "alter"])
def test_writer_version_above_7_is_refused_and_never_downgraded(tmp_path: Path, write: str) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    _set_protocol(p, {"minReaderVersion": 1, "minWriterVersion": 8})
    with pytest.raises(UnsupportedFeatureError):
        if write == "append":
            write_deltalake(p, _v([2]), mode="append")
        elif write == "overwrite":
            write_deltalake(p, _v([2]), mode="overwrite")
        elif write == "overwrite_schema":
            write_deltalake(p, pa.table({"w": [2]}), mode="overwrite", schema_mode="overwrite")
        elif write == "replace_where":
            write_deltalake(p, _v([2]), mode="overwrite", predicate="v >= 1")
        else:
            DeltaTable(p).alter.set_table_properties({"delta.appendOnly": "false"})
    t = DeltaTable(p)
    assert t.version() == 1 and t.protocol() == Protocol(1, 8)


def test_unknown_writer_feature_is_refused_even_when_the_write_changes_the_protocol(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    _set_protocol(p, {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["fancyWriterThing"]})
    with pytest.raises(UnsupportedFeatureError) as e:
        write_deltalake(p, _v([2]), mode="append", configuration={"delta.enableChangeDataFeed": "true"})
    assert e.value.feature == "fancyWriterThing"
    assert DeltaTable(p).protocol().writer_features == ["fancyWriterThing"]


def test_plain_append_never_changes_the_protocol(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    _set_protocol(p, {"minReaderVersion": 1, "minWriterVersion": 6})
    write_deltalake(p, _v([2]), mode="append")
    assert not [a for a in _commit(p, 2) if "protocol" in a]
    assert DeltaTable(p).protocol() == Protocol(1, 6)
    assert deltalake.DeltaTable(p).protocol().min_reader_version == 1


def test_enabling_a_feature_keeps_every_version_and_feature(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    _set_protocol(p, {"minReaderVersion": 1, "minWriterVersion": 6})
    write_deltalake(p, _v([2]), mode="append", configuration={"delta.enableDeletionVectors": "true"})
    proto = DeltaTable(p).protocol()
    assert (proto.min_reader_version, proto.min_writer_version) == (3, 7)
    # what writer 6 implied with reader 1 stays; column mapping (reader 2) was never usable and is not added
    assert {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
            "identityColumns", "deletionVectors"} == set(proto.writer_features or ())


@pytest.mark.parametrize("versions", [("2", "5"), ("1", "4"), ("3", "7"), ("1", "7")])
def test_min_versions_at_create_and_in_alter_agree(tmp_path: Path, versions: tuple[str, str]) -> None:
    conf = {"delta.minReaderVersion": versions[0], "delta.minWriterVersion": versions[1]}
    created = str(tmp_path / "created")
    write_deltalake(created, _v([1]), configuration=conf)
    altered = str(tmp_path / "altered")
    write_deltalake(altered, _v([1]))
    DeltaTable(altered).alter.set_table_properties(conf)
    a, b = DeltaTable(created), DeltaTable(altered)
    assert a.protocol() == b.protocol()
    assert (a.protocol().min_reader_version, a.protocol().min_writer_version) == tuple(map(int, versions))
    for t in (a, b):  # protocol requests are not stored as properties (as in Spark)
        assert not {k for k in t.metadata().configuration if k.startswith("delta.min")}
    assert deltalake.DeltaTable(created).protocol().min_writer_version == int(versions[1])


def test_min_versions_above_what_is_supported_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedFeatureError):
        write_deltalake(str(tmp_path / "t"), _v([1]), configuration={"delta.minWriterVersion": "8"})
    assert not DeltaTable.is_deltatable(str(tmp_path / "t"))


# ----------------------------------------------------------------------------- schema and metadata
def test_case_insensitive_duplicate_columns_refused_at_create(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="'id' and 'ID'"):
        write_deltalake(str(tmp_path / "t"), pa.table({"id": [1], "ID": [2]}))
    with pytest.raises(SchemaError, match="'a' and 'A'"):
        write_deltalake(str(tmp_path / "t"), pa.table({"s": pa.array([{"a": 1, "A": 2}])}))
    assert not DeltaTable.is_deltatable(str(tmp_path / "t"))


@pytest.mark.parametrize("schema_mode", [None, "merge"])
def test_case_insensitive_duplicate_columns_refused_at_append_and_evolution(tmp_path: Path,
                                                                            schema_mode: str | None) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, pa.table({"id": [1]}))
    with pytest.raises(SchemaError):
        write_deltalake(p, pa.table({"id": [2], "ID": [3]}), mode="append", schema_mode=schema_mode)
    with pytest.raises(SchemaError):
        write_deltalake(p, pa.table({"id": [2], "x": [1], "X": [2]}), mode="append", schema_mode=schema_mode)
    assert DeltaTable(p).version() == 0 and DeltaTable(p).schema().names == ["id"]


def test_arrow_metadata_strings_stay_strings_in_the_log(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    schema = pa.schema([pa.field("v", pa.int64()),
                        pa.field("g", pa.int64(), metadata={"delta.generationExpression": "10"}),
                        pa.field("c", pa.string(), metadata={"comment": "42"})])
    write_deltalake(p, pa.Table.from_pylist([{"v": 1, "g": 10, "c": "x"}], schema=schema))
    meta = next(a["metaData"] for a in _commit(p, 0) if "metaData" in a)
    fields = {f["name"]: f for f in json.loads(meta["schemaString"])["fields"]}
    assert fields["g"]["metadata"]["delta.generationExpression"] == "10"
    assert fields["c"]["metadata"]["comment"] == "42"
    assert DeltaTable(p).to_pyarrow_table().column("g").to_pylist() == [10]
    assert deltalake.DeltaTable(p).to_pyarrow_table().column("g").to_pylist() == [10]


def test_schema_evolution_cannot_add_a_generated_column_to_a_table_with_rows(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    gen = pa.schema([pa.field("v", pa.int64()), pa.field("g", pa.int64(),
                                                          metadata={"delta.generationExpression": "v * 2"})])
    with pytest.raises(SchemaError, match="generated"):
        write_deltalake(p, pa.Table.from_pylist([{"v": 2, "g": 4}], schema=gen), mode="append", schema_mode="merge")
    assert DeltaTable(p).version() == 0 and DeltaTable(p).schema().names == ["v"]
    # an empty table may get one: there are no rows that could violate it
    e = str(tmp_path / "empty")
    write_deltalake(e, _v([]))
    write_deltalake(e, pa.Table.from_pylist([{"v": 2, "g": 4}], schema=gen), mode="append", schema_mode="merge")
    assert DeltaTable(e).to_pyarrow_table().to_pylist() == [{"v": 2, "g": 4}]


def _tree(root: str) -> dict[str, bytes]:
    """Every file under a table root with its bytes (the log and the data files)."""
    return {str(f.relative_to(root)): f.read_bytes() for f in Path(root).rglob("*") if f.is_file()}


@pytest.mark.parametrize("how", ["replace_where", "dynamic"])
@pytest.mark.parametrize("partition_by", [["v"], []], ids=["other-column", "unpartitioned"])
def test_partial_overwrite_cannot_repartition(tmp_path: Path, how: str, partition_by: list[str]) -> None:
    """issue 22 §5: `partition_by=[]` under a predicate used to commit an unpartitioned table (the kept
    partition's rows lost their partition values); it is refused like any other partition change."""
    p = str(tmp_path / "t")
    write_deltalake(p, pa.table({"day": ["a", "b"], "v": [1, 2]}), partition_by=["day"])
    before = _tree(p)
    kwargs = ({"predicate": "day = 'a'"} if how == "replace_where" else {"partition_overwrite_mode": "dynamic"})
    with pytest.raises(SchemaMismatchError, match="partition") as e:
        write_deltalake(p, pa.table({"day": ["a"], "v": [5]}), mode="overwrite", schema_mode="overwrite",
                        partition_by=partition_by, **kwargs)
    assert isinstance(e.value, DeltaError) and p in str(e.value) and "['day']" in str(e.value)
    assert _tree(p) == before, "nothing written, nothing committed"
    t = DeltaTable(p)
    assert t.version() == 0 and t.partition_columns() == ["day"]
    assert sorted(t.to_pyarrow_table().column("v").to_pylist()) == [1, 2]
    if how == "replace_where":  # deltalake refuses the same write
        with pytest.raises(deltalake.exceptions.DeltaError, match="partitioning"):
            deltalake.write_deltalake(p, pa.table({"day": ["a"], "v": [5]}), mode="overwrite",
                                      schema_mode="overwrite", partition_by=partition_by, **kwargs)
        assert _tree(p) == before


def test_replace_where_with_schema_overwrite_keeps_the_partitioning(tmp_path: Path) -> None:
    """Without partition_by, a replaceWhere with schema_mode="overwrite" keeps the table's partition columns
    (as deltalake does) instead of planning an unpartitioned table."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    first, second = pa.table({"day": ["a", "b"], "v": [1, 2]}), pa.table({"day": ["a"], "v": [5]})
    write_deltalake(ours, first, partition_by=["day"])
    deltalake.write_deltalake(theirs, first, partition_by=["day"])
    write_deltalake(ours, second, mode="overwrite", schema_mode="overwrite", predicate="day = 'a'")
    deltalake.write_deltalake(theirs, second, mode="overwrite", schema_mode="overwrite", predicate="day = 'a'")
    t = DeltaTable(ours)
    assert t.partition_columns() == deltalake.DeltaTable(theirs).metadata().partition_columns == ["day"]
    expected = [{"day": "a", "v": 5}, {"day": "b", "v": 2}]
    assert sorted(t.to_pyarrow_table().to_pylist(), key=str) == expected
    assert sorted(helpers.deltalake_table(ours).to_pylist(), key=str) == expected
    assert sorted(helpers.deltalake_table(theirs).to_pylist(), key=str) == expected


# ----------------------------------------------------------------------------- commitInfo
def test_custom_metadata_cannot_overwrite_engine_fields(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]), configuration={"delta.enableInCommitTimestamps": "true"})
    t0 = dt.datetime.now(dt.timezone.utc)
    # deltalake's rules (issue 24): `timestamp` / `operation` / `engineInfo` cannot be set (ValueError, nothing
    # written); the other reserved keys must have deltalake's types, and the engine's values then still win
    for generated in ({"timestamp": 6}, {"operation": "FAKE"}, {"engineInfo": "x"}):
        with pytest.raises(ValueError, match="cannot be set"):
            write_deltalake(p, _v([2]), mode="append", commit_properties=CommitProperties(custom_metadata=generated))
    assert DeltaTable(p).version() == 0
    custom = {"inCommitTimestamp": 5, "operationParameters": {},
              "readVersion": 99, "isolationLevel": "Serializable", "txnId": "mine", "team": "etl"}
    write_deltalake(p, _v([2]), mode="append", commit_properties=CommitProperties(custom_metadata=custom))
    info = next(a["commitInfo"] for a in _commit(p, 1) if "commitInfo" in a)
    assert info["inCommitTimestamp"] >= int(t0.timestamp() * 1000) - 1000
    assert info["timestamp"] == info["inCommitTimestamp"]
    assert info["operation"] == "WRITE" and info["readVersion"] == 0 and info["txnId"] != "mine"
    assert info["isolationLevel"] == "WriteSerializable" and info["engineInfo"].startswith("deltakernel")
    assert info["team"] == "etl"
    # time travel by timestamp still finds version 1
    t = DeltaTable(p)
    t.load_as_version(dt.datetime.fromtimestamp(info["inCommitTimestamp"] / 1000, dt.timezone.utc))
    assert t.version() == 1


@pytest.mark.parametrize("bad", [{1: "x"}, {"a": object()}, {"a": float("nan")}, {"userName": ["x"]}])
def test_custom_metadata_must_be_string_keys_and_json_values(tmp_path: Path, bad: dict) -> None:
    # as deltalake 1.6.6: the constructor accepts anything; the operation raises ValueError before writing
    props = CommitProperties(custom_metadata=bad)
    p = str(tmp_path / "t")
    with pytest.raises(ValueError):
        write_deltalake(p, _v([1]), commit_properties=props)
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").rglob("*.parquet"))


def test_user_name_and_id_are_strings(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    with pytest.raises(ValueError, match="must be a string"):  # deltalake 1.6.6 rejects non-strings
        write_deltalake(p, _v([1]), commit_properties=CommitProperties(custom_metadata={"userName": 7}))
    write_deltalake(p, _v([1]), commit_properties=CommitProperties(custom_metadata={"userName": "7", "userId": "8"}))
    info = next(a["commitInfo"] for a in _commit(p, 0) if "commitInfo" in a)
    assert info["userName"] == "7" and info["userId"] == "8"
    assert deltalake.DeltaTable(p).history()[0]["userName"] == "7"


# ----------------------------------------------------------------------------- row tracking enabled later
def test_enabling_row_tracking_on_a_table_with_data_backfills_row_ids(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1, 2]))
    write_deltalake(p, _v([3]), mode="append")
    DeltaTable(p).alter.set_table_properties({"delta.enableRowTracking": "true"})
    t = DeltaTable(p)
    assert t.protocol().has_feature("rowTracking")
    conf = t.metadata().configuration
    assert conf["delta.rowTracking.materializedRowIdColumnName"].startswith("_row-id-col-")
    files = t.snapshot.files
    assert files.column("base_row_id").null_count == 0
    before = {r["v"]: r["_row_id"] for r in t.to_pyarrow_table(row_tracking=True).to_pylist()}
    assert sorted(before.values()) == [0, 1, 2]
    # a later partial rewrite keeps the ids of the rows it carries over
    write_deltalake(p, _v([1]), mode="overwrite", predicate="v = 1")
    after = {r["v"]: r["_row_id"] for r in DeltaTable(p).to_pyarrow_table(row_tracking=True).to_pylist()}
    assert after[2] == before[2] and after[3] == before[3] and after[1] not in before.values()
    assert sorted(deltalake.DeltaTable(p).to_pyarrow_table().column("v").to_pylist()) == [1, 2, 3]
