"""Every violating write raises a typed error naming the rule and commits nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import (
    CommitStateUnknownError,
    ConstraintViolationError,
    DeltaError,
    SchemaError,
    StorageError,
    UnsupportedFeatureError,
)
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType


def _unchanged(path: str, version: int, rows: int) -> None:
    t = DeltaTable(path)
    assert t.version() == version and t.count() == rows
    live = {p.split("/")[-1] for p in t.files()}
    on_disk = {p.name for p in Path(path).rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk == live, "a failed write left data files behind"


def test_not_null(tmp_path: Path) -> None:
    path = str(tmp_path / "nn")
    DeltaTable.create(path, pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())]))
    write_deltalake(path, pa.table({"id": [1], "v": ["a"]}), mode="append")
    with pytest.raises(ConstraintViolationError) as e:
        write_deltalake(path, pa.table({"id": [2, None], "v": ["b", "c"]}), mode="append")
    assert "id" in str(e.value)
    _unchanged(path, 1, 1)


def test_generated_columns_computed_and_verified(tmp_path: Path) -> None:
    path = str(tmp_path / "gen")
    schema = StructType((
        StructField("a", PrimitiveType("long")),
        StructField("b", PrimitiveType("long"), True, {"delta.generationExpression": "a * 2"}),
    ))
    DeltaTable.create(path, schema)
    t = DeltaTable(path)
    assert "generatedColumns" in (t.protocol().writer_features or ()) or t.protocol().min_writer_version >= 4
    write_deltalake(path, pa.table({"a": [1, 2]}), mode="append")  # b computed
    assert sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["a"]) == [
        {"a": 1, "b": 2}, {"a": 2, "b": 4}]
    write_deltalake(path, pa.table({"a": [3], "b": [6]}), mode="append")  # given and right
    with pytest.raises(ConstraintViolationError) as e:
        write_deltalake(path, pa.table({"a": [4], "b": [7]}), mode="append")  # given and wrong
    assert "b" in str(e.value) and "a * 2" in str(e.value)
    _unchanged(path, 2, 3)


def test_identity_columns_generate_and_advance_high_water_mark(tmp_path: Path) -> None:
    path = str(tmp_path / "ident")
    schema = StructType((
        StructField("id", PrimitiveType("long"), False,
                    {"delta.identity.start": 100, "delta.identity.step": 10,
                     "delta.identity.allowExplicitInsert": False}),
        StructField("v", PrimitiveType("string")),
    ))
    DeltaTable.create(path, schema)
    write_deltalake(path, pa.table({"v": ["a", "b"]}), mode="append")
    write_deltalake(path, pa.table({"v": ["c"]}), mode="append")
    t = DeltaTable(path)
    ids = sorted(t.to_pyarrow_table().column("id").to_pylist())
    assert ids == [100, 110, 120]
    assert t.schema().field("id").metadata["delta.identity.highWaterMark"] == 120
    with pytest.raises(ConstraintViolationError):
        write_deltalake(path, pa.table({"id": [5], "v": ["explicit"]}), mode="append")
    _unchanged(path, 2, 3)


def test_check_constraint_and_append_only(tmp_path: Path) -> None:
    path = str(tmp_path / "chk")
    write_deltalake(path, pa.table({"x": [1, 2]}), configuration={"delta.appendOnly": "true"})
    DeltaTable(path).alter.add_constraint({"x_pos": "x > 0"})
    with pytest.raises(ConstraintViolationError) as e:
        write_deltalake(path, pa.table({"x": [3, 0]}), mode="append")
    assert "x_pos" in str(e.value) and "0" in str(e.value)
    with pytest.raises(ConstraintViolationError) as e2:
        write_deltalake(path, pa.table({"x": [5]}), mode="overwrite")
    assert "appendOnly" in str(e2.value)
    _unchanged(path, 1, 2)
    # adding a constraint the existing rows violate commits nothing
    with pytest.raises(ConstraintViolationError):
        DeltaTable(path).alter.add_constraint({"small": "x < 2"})
    assert DeltaTable(path).version() == 1


def test_schema_violations(tmp_path: Path) -> None:
    path = str(tmp_path / "schema")
    write_deltalake(path, pa.table({"a": pa.array([1], pa.int32()), "s": ["x"]}))
    with pytest.raises(SchemaError):  # new column without schema_mode="merge"
        write_deltalake(path, pa.table({"a": [1], "s": ["y"], "extra": [1.0]}), mode="append")
    with pytest.raises(SchemaError):  # incompatible type
        write_deltalake(path, pa.table({"a": ["not a number"], "s": ["y"]}), mode="append")
    with pytest.raises(SchemaError):  # narrowing is never allowed, even with merge
        write_deltalake(path, pa.table({"a": pa.array([1.5]), "s": ["y"]}), mode="append", schema_mode="merge")
    with pytest.raises(DeltaError):
        write_deltalake(path, pa.table({"a": [1], "s": ["y"]}), mode="append", partition_by=["s"])
    _unchanged(path, 0, 1)


def test_unsupported_writer_feature_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "feat")
    write_deltalake(path, pa.table({"a": [1]}))
    log = Path(path) / "_delta_log" / f"{1:020d}.json"
    log.write_text(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                            "writerFeatures": ["fancyWriterThing"]}}) + "\n")
    assert DeltaTable(path).count() == 1  # readers are unaffected by writer features
    with pytest.raises(UnsupportedFeatureError) as e:
        write_deltalake(path, pa.table({"a": [2]}), mode="append")
    assert e.value.feature == "fancyWriterThing"
    _unchanged(path, 1, 1)


def test_commit_that_landed_despite_an_error_is_recognised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltakernel.storage.local import LocalStorage

    path = str(tmp_path / "landed")
    write_deltalake(path, pa.table({"a": [1]}))
    real = LocalStorage.put_if_absent

    def lost_reply(self: LocalStorage, key: str, data: bytes) -> None:
        real(self, key, data)
        if key.endswith(".json"):
            raise StorageError("simulated: connection reset after the upload")

    monkeypatch.setattr(LocalStorage, "put_if_absent", lost_reply)
    write_deltalake(path, pa.table({"a": [2]}), mode="append")  # our bytes are there: success
    monkeypatch.undo()
    assert DeltaTable(path).version() == 1 and DeltaTable(path).count() == 2


def test_failed_put_whose_version_another_writer_holds_is_rebased(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A put that errors while another writer's commit takes the version: ours did not land (txnId differs),
    so the write is conflict-checked and rebased onto the next version, committed exactly once."""
    from deltakernel.storage.local import LocalStorage

    path = str(tmp_path / "other")
    write_deltalake(path, pa.table({"a": [1]}))
    real = LocalStorage.put_if_absent
    calls = {"n": 0}

    def someone_else(self: LocalStorage, key: str, data: bytes) -> None:
        if key.endswith(".json") and calls["n"] == 0:
            calls["n"] += 1
            real(self, key, b'{"commitInfo":{"operation":"OTHER","txnId":"someone-else"}}\n')
            raise StorageError("simulated: timeout")
        real(self, key, data)

    monkeypatch.setattr(LocalStorage, "put_if_absent", someone_else)
    write_deltalake(path, pa.table({"a": [2]}), mode="append")
    monkeypatch.undo()
    dt = DeltaTable(path)
    assert dt.version() == 2 and sorted(dt.to_pyarrow_table().column("a").to_pylist()) == [1, 2]
    assert [h["operation"] for h in dt.history()][:2] == ["WRITE", "OTHER"]


def test_commit_state_unknown_when_read_back_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The put fails and the version cannot be read back: CommitStateUnknownError, data files kept."""
    from deltakernel.storage.local import LocalStorage

    path = str(tmp_path / "unknown")
    write_deltalake(path, pa.table({"a": [1]}))
    real_put, real_read = LocalStorage.put_if_absent, LocalStorage.read

    def put(self: LocalStorage, key: str, data: bytes) -> None:
        real_put(self, key, data)
        if key.endswith("00001.json"):
            raise StorageError("simulated: connection reset after the upload")

    def read(self: LocalStorage, key: str, start: int | None = None, end: int | None = None) -> bytes:
        if key.endswith("00001.json"):
            raise StorageError("simulated: network down")
        return real_read(self, key, start, end)

    monkeypatch.setattr(LocalStorage, "put_if_absent", put)
    monkeypatch.setattr(LocalStorage, "read", read)
    with pytest.raises(CommitStateUnknownError):
        write_deltalake(path, pa.table({"a": [2]}), mode="append")
    monkeypatch.undo()
    dt = DeltaTable(path)  # the commit did land: every file it references must still be there
    assert dt.version() == 1 and sorted(dt.to_pyarrow_table().column("a").to_pylist()) == [1, 2]
