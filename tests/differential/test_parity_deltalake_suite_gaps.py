"""Gaps found by running deltalake's own Python tests (delta-rs `python/tests`) against deltakernel (issue 24):
each test makes the same calls on deltalake 1.6.6 and on deltakernel and compares results / exception types.

- MERGE duplicate matches: the message also carries deltalake's phrase ("duplicate relevant WHEN MATCHED"),
  which deltalake's tests match on, after delta-spark's sentence;
- `CommitProperties(custom_metadata=<not a mapping>)`: ValueError "must be a mapping" when the operation runs;
- `QueryBuilder`: unquoted identifiers keep their case, as deltalake's (DataFusion's identifier normalization off);
- NULL in a NOT NULL column (write, MERGE, UPDATE): the message starts with deltalake's "Invalid data found:";
- generated columns: `alter.add_columns` and `schema_mode="merge"` refuse a new generated column on a table with
  rows with deltalake's sentences (and exception kinds: DeltaError / SchemaMismatchError).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
import deltakernel.exceptions
from deltakernel.errors import DeltaError, InvalidCommitMetadataError
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError

deltalake = pytest.importorskip("deltalake")

LIBS = {"deltalake": deltalake, "deltakernel": deltakernel}
EXCEPTIONS = {"deltalake": pytest.importorskip("deltalake.exceptions"), "deltakernel": deltakernel.exceptions}


def _table(lib: Any, path: Path, data: pa.Table) -> Any:
    lib.write_deltalake(str(path), data)
    return lib.DeltaTable(str(path))


@pytest.mark.parametrize("clause", ["update", "update_all", "delete"])
def test_merge_duplicate_message_has_deltalakes_phrase(tmp_path: Path, clause: str) -> None:
    target = pa.table({"id": pa.array(["3", "4"]), "price": pa.array([3, 4], pa.int64())})
    source = pa.table({"id": pa.array(["4", "4"]), "price": pa.array([10, 100], pa.int64()), "go": [True, True]})
    texts = {}
    for name, lib in LIBS.items():
        dt = _table(lib, tmp_path / name, target)
        merger = dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
        if clause == "update":
            merger = merger.when_matched_update({"price": "s.price"}, predicate="s.go = true")
        elif clause == "update_all":
            merger = merger.when_matched_update_all(predicate="s.go = true")
        else:
            merger = merger.when_matched_delete("s.go = true")
        with pytest.raises(Exception, match="duplicate relevant WHEN MATCHED") as info:
            merger.execute()
        texts[name] = str(info.value)
        assert lib.DeltaTable(str(tmp_path / name)).version() == 0  # nothing committed
    with pytest.raises(MergeDuplicateMatchError) as ours:  # our type, a DeltaError, keeps delta-spark's sentence
        (
            deltakernel.DeltaTable(str(tmp_path / "deltakernel"))
            .merge(source, "t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update_all(predicate="s.go = true")
            .execute()
        )
    assert isinstance(ours.value, DeltaError)
    assert "multiple source rows matched" in texts["deltakernel"] and "the same target row" in texts["deltakernel"]


@pytest.mark.parametrize("custom", [[("key", "value")], "abc", 5], ids=["pairs", "str", "int"])
def test_custom_metadata_not_a_mapping(tmp_path: Path, custom: Any) -> None:
    data = pa.table({"a": [1]})
    for name, lib in LIBS.items():
        props = lib.CommitProperties(custom_metadata=custom)  # the constructor accepts it, in both
        with pytest.raises(ValueError, match="CommitProperties.custom_metadata must be a mapping"):
            lib.write_deltalake(str(tmp_path / name), data, commit_properties=props)
        assert not (tmp_path / name / "_delta_log").exists() or not any((tmp_path / name / "_delta_log").iterdir())
    with pytest.raises(InvalidCommitMetadataError):
        deltakernel.write_deltalake(
            str(tmp_path / "again"), data, commit_properties=deltakernel.CommitProperties(custom_metadata=custom)
        )


QUERIES = [
    "select submittedAt from tbl",
    "select submittedat from tbl",
    "select NAME from tbl",
    'select "submittedAt", name from tbl',
    "select name as Foo from tbl",
    "select * from tbl order by submittedAt",
    "select count(*) as n from TBL",
]


@pytest.mark.parametrize("query", QUERIES)
def test_query_builder_identifiers_keep_case(tmp_path: Path, query: str) -> None:
    data = pa.table({"submittedAt": pa.array([2, 1], pa.int64()), "name": ["b", "a"]})
    results: dict[str, Any] = {}
    for name, lib in LIBS.items():
        qb = lib.QueryBuilder().register("tbl", _table(lib, tmp_path / name, data))
        try:
            got = pa.table(qb.execute(query).read_all())
            results[name] = (got.schema.names, got.to_pylist())
        except Exception as e:  # both fail to plan: compare that both fail
            results[name] = ("error", "No field named" in str(e) or "not found" in str(e))
    assert results["deltakernel"] == results["deltalake"]


def test_query_builder_session_config_can_normalize_again(tmp_path: Path) -> None:
    """The old behaviour stays reachable: DataFusion's own setting, passed as session_config."""
    data = pa.table({"name": ["a"]})
    qb = deltakernel.QueryBuilder({"datafusion.sql_parser.enable_ident_normalization": "true"})
    qb.register("tbl", _table(deltakernel, tmp_path / "t", data))
    assert pa.table(qb.execute("select NAME from TBL").read_all()).to_pylist() == [{"name": "a"}]


@pytest.mark.parametrize("operation", ["write", "merge", "update"])
def test_not_null_violation_message_has_deltalakes_prefix(tmp_path: Path, operation: str) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("b", pa.bool_(), nullable=False)])
    source = pa.table({"id": [1, 2, 3], "b": [True, None, None]})
    for name, lib in LIBS.items():
        dt = _table(lib, tmp_path / name, pa.Table.from_pylist([{"id": 1, "b": True}], schema=schema))
        with pytest.raises(DeltaError if lib is deltakernel else Exception, match="Invalid data found:"):
            if operation == "write":
                lib.write_deltalake(str(tmp_path / name), source, mode="append")
            elif operation == "merge":
                (
                    dt.merge(source, "s.id = t.id", source_alias="s", target_alias="t")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute()
                )
            else:
                dt.update({"b": "NULL"})
        assert lib.DeltaTable(str(tmp_path / name)).version() == 0


def _gc_field(lib: Any) -> Any:
    return lib.Field("gc", "integer", True, {"delta.generationExpression": "5"})


def test_add_generated_column_refused_with_deltalakes_sentence(tmp_path: Path) -> None:
    for name, lib in LIBS.items():
        dt = _table(lib, tmp_path / name, pa.table({"id": pa.array([1, 2], pa.int32())}))
        with pytest.raises(EXCEPTIONS[name].DeltaError, match="New columns cannot be a generated column"):
            dt.alter.add_columns([_gc_field(lib)])
        assert lib.DeltaTable(str(tmp_path / name)).version() == 0


def test_schema_merge_generated_column_refused_with_deltalakes_sentence(tmp_path: Path) -> None:
    gc = pa.field("gc", pa.int32(), metadata={"delta.generationExpression": "10"})
    data = pa.table(
        [pa.array([1, 2], pa.int32()), pa.array([10, 10], pa.int32())],
        schema=pa.schema([pa.field("id", pa.int32()), gc]),
    )
    for name, lib in LIBS.items():
        _table(lib, tmp_path / name, pa.table({"id": pa.array([1, 2], pa.int32())}))
        with pytest.raises(
            EXCEPTIONS[name].SchemaMismatchError,
            match="Schema evolved fields cannot have generated expressions. Recreate the table to achieve this.",
        ):
            lib.write_deltalake(str(tmp_path / name), data, mode="append", schema_mode="merge")
        assert lib.DeltaTable(str(tmp_path / name)).version() == 0
