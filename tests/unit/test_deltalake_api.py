"""The rest of deltalake's DeltaTable API (partitions, transaction_version, deletion_vectors, table_config,
protocol, metadata, get_add_actions, to_pyarrow_dataset guarantees), module constants, exception names,
alter additions and double-quoted identifiers — each compared with deltalake 1.6.6 on the same table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

deltalake = pytest.importorskip("deltalake")
import deltalake.table as dlt

import deltakernel
import deltakernel.table as kt
from deltakernel import DeltaTable
from deltakernel.errors import (
    CommitConflictError,
    ConcurrentAppendError,
    ConstraintViolationError,
    CorruptLogError,
    DeltaError,
    SchemaError,
    UnsupportedFeatureError,
)
from deltakernel.exceptions import CommitFailedError, DeltaProtocolError, SchemaMismatchError, TableNotFoundError
from deltakernel.kernel.log.actions import Protocol


def _parted(tmp_path: Path, **conf: str) -> Path:
    p = tmp_path / "parted"
    data = pa.table({"id": pa.array(range(6), pa.int64()), "p": ["a", "a", "b", "b", None, "c"],
                     "q": pa.array([1, 1, 1, 2, 2, 2], pa.int32()), "v": [1.0, None, 3.0, 4.0, None, 6.0],
                     "w": ["x", "y", "z", "x", "y", "z"]})
    deltalake.write_deltalake(p, data, partition_by=["p", "q"], configuration=conf or None)
    deltalake.write_deltalake(p, data.slice(0, 2), partition_by=["p", "q"], mode="append")
    return p


def _key(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_partitions_like_deltalake(tmp_path: Path) -> None:
    p = _parted(tmp_path)
    ours, theirs = DeltaTable(str(p)), deltalake.DeltaTable(p)
    assert _key(ours.partitions()) == _key(theirs.partitions())
    assert len(ours.partitions()) == 5  # (a,1) (b,1) (b,2) (null,2) (c,2)
    for flt in ([("p", "=", "b")], [("q", "=", "2")], [("p", "in", ["a", "c"])]):
        assert _key(ours.partitions(flt)) == _key(theirs.partitions(flt)), flt
    assert _key(ours.partitions(file_pruning_predicate=[("q", "=", "1")])) == _key(theirs.partitions([("q", "=",
                                                                                                     "1")]))


def test_unpartitioned_partitions_empty(tmp_path: Path) -> None:
    deltalake.write_deltalake(tmp_path, pa.table({"a": [1]}))
    assert DeltaTable(str(tmp_path)).partitions() == deltalake.DeltaTable(tmp_path).partitions() == []


def test_transaction_version(tmp_path: Path) -> None:
    data = pa.table({"a": [1, 2]})
    deltakernel.write_deltalake(str(tmp_path), data,
                                commit_properties=deltakernel.CommitProperties(
                                    app_transactions=[deltakernel.Transaction("app-1", 7)]))
    t = DeltaTable(str(tmp_path))
    assert t.transaction_version("app-1") == deltalake.DeltaTable(tmp_path).transaction_version("app-1") == 7
    assert t.transaction_version("other") is deltalake.DeltaTable(tmp_path).transaction_version("other") is None


def test_deletion_vectors_like_deltalake(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array(range(40), pa.int64())})
    deltakernel.write_deltalake(str(tmp_path), data, configuration={"delta.enableDeletionVectors": "true"})
    deltakernel.write_deltalake(str(tmp_path), data, mode="append")
    t = DeltaTable(str(tmp_path))
    assert pa.table(t.deletion_vectors()).num_rows == 0
    t.delete("id % 7 = 3")
    ours, theirs = pa.table(t.deletion_vectors()), pa.table(deltalake.DeltaTable(tmp_path).deletion_vectors())
    assert ours.schema == theirs.schema
    assert ours.num_rows == 2
    assert sorted(ours.to_pylist(), key=str) == sorted(theirs.to_pylist(), key=str)
    for row in ours.to_pylist():
        assert [i for i, keep in enumerate(row["selection_vector"]) if not keep] == [3, 10, 17, 24, 31, 38]


def test_protocol_metadata_config_like_deltalake(tmp_path: Path) -> None:
    p = _parted(tmp_path, **{"delta.enableChangeDataFeed": "true"})
    deltalake.DeltaTable(p).alter.add_feature(deltalake.TableFeatures.DeletionVectors,
                                              allow_protocol_versions_increase=True)
    ours, theirs = DeltaTable(str(p)), deltalake.DeltaTable(p)
    po, pt = ours.protocol(), theirs.protocol()
    assert isinstance(po, kt.ProtocolVersions) and po._fields == pt._fields
    assert (po.min_reader_version, po.min_writer_version) == (pt.min_reader_version, pt.min_writer_version)
    assert sorted(po.writer_features or []) == sorted(pt.writer_features or [])
    assert sorted(po.reader_features or []) == sorted(pt.reader_features or [])
    assert po == Protocol(3, 7, frozenset(pt.reader_features or ()), frozenset(pt.writer_features or ()))
    mo, mt = ours.metadata(), theirs.metadata()
    for attr in ("id", "name", "description", "partition_columns", "created_time", "configuration"):
        assert getattr(mo, attr) == getattr(mt, attr), attr
    assert isinstance(mo.partition_columns, list) and str(mo) == str(mt)
    with pytest.warns(DeprecationWarning):
        cfg = ours.table_config
    with pytest.warns(DeprecationWarning):
        assert cfg == theirs.table_config and isinstance(cfg, kt.DeltaTableConfig)


def test_module_constants_like_deltalake() -> None:
    for name in ("MAX_SUPPORTED_READER_VERSION", "NOT_SUPPORTED_READER_VERSION", "SUPPORTED_READER_FEATURES",
                 "MAX_SUPPORTED_PYARROW_WRITER_VERSION", "NOT_SUPPORTED_PYARROW_WRITER_VERSIONS",
                 "SUPPORTED_WRITER_FEATURES", "FSCK_METRICS_FILES_REMOVED_LABEL"):
        assert getattr(kt, name) == getattr(dlt, name), name
    assert [m.name for m in kt.TableFeatures] == sorted(
        (n for n in dir(deltalake.TableFeatures) if not n.startswith("_")),
        key=[m.name for m in kt.TableFeatures].index)
    assert deltakernel.TableFeatures is kt.TableFeatures and deltakernel.Metadata is kt.Metadata


def test_exception_names_catch_our_errors() -> None:
    assert issubclass(ConcurrentAppendError, CommitFailedError) and issubclass(CommitConflictError,
                                                                                CommitFailedError)
    assert issubclass(ConstraintViolationError, DeltaProtocolError)
    assert issubclass(UnsupportedFeatureError, DeltaProtocolError) and issubclass(CorruptLogError, DeltaProtocolError)
    assert issubclass(SchemaError, SchemaMismatchError)
    for cls in (CommitFailedError, DeltaProtocolError, SchemaMismatchError, TableNotFoundError):
        assert issubclass(cls, DeltaError)
        assert cls.__name__ in deltalake.exceptions.__all__


def test_constraint_violation_is_caught_by_deltalake_names(tmp_path: Path) -> None:
    # deltalake 1.6.6 raises a plain DeltaError (older releases DeltaProtocolError): ours is both
    for lib, path in ((deltalake, tmp_path / "dl"), (deltakernel, tmp_path / "dk")):
        lib.write_deltalake(str(path), pa.table({"x": [1, 2]}))
        lib.DeltaTable(str(path)).alter.add_constraint({"pos": "x > 0"})
        exc = deltalake.exceptions.DeltaError if lib is deltalake else DeltaProtocolError
        with pytest.raises(exc):
            lib.write_deltalake(str(path), pa.table({"x": [-1]}), mode="append")


# ----------------------------------------------------------------------------- add actions
def test_add_actions_only_indexed_columns(tmp_path: Path) -> None:
    p = _parted(tmp_path, **{"delta.dataSkippingNumIndexedCols": "2"})
    ours = DeltaTable(str(p)).get_add_actions(flatten=True)
    theirs = pa.table(deltalake.DeltaTable(p).get_add_actions(flatten=True))
    assert ours.column_names == theirs.column_names  # no data_change, no stats of `w`
    assert sorted(ours.to_pylist(), key=lambda r: r["path"]) == sorted(theirs.to_pylist(), key=lambda r: r["path"])
    nested = DeltaTable(str(p)).get_add_actions(flatten=False)
    assert nested.schema.field("min").type == pa.table(deltalake.DeltaTable(p).get_add_actions()).schema.field(
        "min").type


def test_add_actions_stats_columns(tmp_path: Path) -> None:
    data = pa.table({"a": [1, 2], "b": ["x", "y"], "s": pa.array([{"m": 1, "n": 2}, {"m": 3, "n": 4}])})
    deltalake.write_deltalake(tmp_path, data, configuration={"delta.dataSkippingStatsColumns": "b,s.n"})
    ours = DeltaTable(str(tmp_path)).get_add_actions(flatten=True)
    theirs = pa.table(deltalake.DeltaTable(tmp_path).get_add_actions(flatten=True))
    assert ours.column_names == theirs.column_names
    assert "min.s.n" in ours.column_names and "min.a" not in ours.column_names


# ----------------------------------------------------------------------------- pyarrow dataset
def _fragments(dataset: Any, flt: Any) -> int:
    return len(list(dataset.get_fragments(filter=flt)))


def test_dataset_fragments_skip_on_stats_like_deltalake(tmp_path: Path) -> None:
    p = tmp_path / "t"
    for lo in (0, 100, 200):
        deltakernel.write_deltalake(str(p), pa.table({"id": pa.array(range(lo, lo + 100), pa.int64()),
                                                      "ts": pa.array([1_700_000_000_000_000 + i * 1_000_000
                                                                      for i in range(lo, lo + 100)],
                                                                     pa.timestamp("us", tz="UTC")),
                                                      "n": pa.array([None] * 100, pa.int64())}), mode="append")
    ours, theirs = DeltaTable(str(p)).to_pyarrow_dataset(), deltalake.DeltaTable(p).to_pyarrow_dataset()
    filters = [ds.field("id") > 250, ds.field("id") < 0, ds.field("id") == 150, ds.field("id").isin([5, 205]),
               ds.field("n").is_valid(), ds.field("id") >= 0, ds.field("ts") > pa.scalar(
                   1_700_000_199_500_000, pa.timestamp("us", tz="UTC"))]
    for flt in filters:
        assert _fragments(ours, flt) == _fragments(theirs, flt), flt
    assert [_fragments(ours, f) for f in filters] == [1, 0, 1, 2, 0, 3, 1]
    # skipping never loses rows: every row the filter keeps on the full table is still there
    for flt in filters:
        assert ours.to_table(filter=flt).num_rows == DeltaTable(str(p)).to_pyarrow_table().filter(flt).num_rows


def test_dataset_partitions_and_duckdb(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    p = _parted(tmp_path)
    dataset = DeltaTable(str(p)).to_pyarrow_dataset()
    assert _fragments(dataset, ds.field("p") == "b") == 2
    assert _fragments(dataset, ds.field("p").is_null()) == 1
    assert _fragments(dataset, ds.field("id") > 100) == 0
    con = duckdb.connect()
    con.register("t", dataset)
    assert con.sql("select count(*) from t where p = 'b' and id >= 3").fetchone() == (1,)
    assert con.sql("select count(*) from t").fetchone() == (8,)


def test_dataset_string_max_may_be_truncated(tmp_path: Path) -> None:
    long = "k" * 40
    deltakernel.write_deltalake(str(tmp_path), pa.table({"s": [long + "a", long + "z"]}))
    dataset = DeltaTable(str(tmp_path)).to_pyarrow_dataset()
    assert dataset.to_table(filter=ds.field("s") == long + "z").num_rows == 1  # not skipped on a cut max
    assert _fragments(dataset, ds.field("s") < "a") == 0  # min still bounds


def test_dataset_keywords(tmp_path: Path) -> None:
    p = _parted(tmp_path)
    t = DeltaTable(str(p))
    large = t.to_pyarrow_dataset(as_large_types=True)
    assert large.schema.field("w").type == pa.large_string()
    assert large.to_table().num_rows == 8
    assert t.to_pyarrow_dataset(file_pruning_predicate=[("p", "=", "a")]).to_table().num_rows == 4


# ----------------------------------------------------------------------------- alter additions
def _ops(path: Path) -> list[tuple[str, dict[str, Any]]]:
    return [(h["operation"], h.get("operationParameters") or {}) for h in deltalake.DeltaTable(path).history()]


def test_alter_additions_like_deltalake(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    data = pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema)
    paths = {}
    for lib in (deltalake, deltakernel):
        path = tmp_path / lib.__name__
        deltalake.write_deltalake(path, data)
        t = lib.DeltaTable(str(path))
        t.alter.set_table_name("nm")
        t.alter.set_table_description("desc")
        t.alter.set_column_metadata("v", {"comment": "hello", "n": "1"})
        t.alter.drop_column_not_null("id")
        t.alter.add_feature(lib.TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
        for method, args in (("drop_column_not_null", ("nope",)), ("drop_column_not_null", ("v",)),
                             ("set_column_metadata", ("nope", {"a": "b"}))):
            with pytest.raises(DeltaError if lib is deltakernel else deltalake.exceptions.DeltaError):
                getattr(t.alter, method)(*args)
        paths[lib.__name__] = path
    ours, theirs = deltalake.DeltaTable(paths["deltakernel"]), deltalake.DeltaTable(paths["deltalake"])
    assert ours.schema().to_json() == theirs.schema().to_json() or json.loads(ours.schema().to_json()) == \
        json.loads(theirs.schema().to_json())
    assert (ours.metadata().name, ours.metadata().description) == ("nm", "desc")
    for proto in (ours.protocol(), theirs.protocol()):
        assert "deletionVectors" in proto.reader_features and "deletionVectors" in proto.writer_features
    o, th = _ops(paths["deltakernel"]), _ops(paths["deltalake"])
    assert [x[0] for x in o] == [x[0] for x in th]
    for (_, po), (_, pt) in zip(o, th):
        assert set(po) == set(pt)
        for key in po:
            if key != "mode":
                assert json.loads(po[key]) == json.loads(pt[key]), key


# ----------------------------------------------------------------------------- double-quoted identifiers
def test_double_quoted_identifiers_in_dml_and_constraints(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "high price": [10.0, -1.0, 5.0, 20.0],
                     "name": ["a", "bob", "c", "d"]})
    for lib in ("dl", "dk"):
        deltalake.write_deltalake(tmp_path / lib, data)
    dl, dk = deltalake.DeltaTable(tmp_path / "dl"), DeltaTable(str(tmp_path / "dk"))
    for t in (dl, dk):
        t.delete('"high price" < 0')
        t.update(updates={"name": "'x'"}, predicate='"high price" >= 15')
    # a double-quoted token that is not a column stays a Spark string literal
    dk.delete('name = "c"')
    dl.delete("name = 'c'")
    assert sorted(deltalake.DeltaTable(tmp_path / "dk").to_pyarrow_table().to_pylist(), key=str) == \
        sorted(dl.to_pyarrow_table().to_pylist(), key=str)
    dk.alter.add_constraint({"nonneg": '"high price" >= 0'})
    assert dk.metadata().configuration["delta.constraints.nonneg"] == "`high price` >= 0"  # Spark's form
    with pytest.raises(ConstraintViolationError):
        deltakernel.write_deltalake(str(tmp_path / "dk"), pa.table({"id": [9], "high price": [-5.0],
                                                                    "name": ["z"]}), mode="append")
    with pytest.raises(deltalake.exceptions.DeltaError):  # deltalake enforces the stored constraint too
        deltalake.write_deltalake(tmp_path / "dk", pa.table({"id": [9], "high price": [-5.0], "name": ["z"]}),
                                  mode="append")


@pytest.mark.parametrize(("text", "expected"), [
    ('"high price" >= 0', "`high price` >= 0"),
    ('"HIGH PRICE" >= 0 and name = "bob"', '`HIGH PRICE` >= 0 and name = "bob"'),  # names are case-insensitive
    ("name = 'say \"high price\"'", "name = 'say \"high price\"'"),  # inside a string literal: untouched
    ("`high price` > 1 or \"a\"\"b\" = 2", "`high price` > 1 or `a\"b` = 2"),  # doubled quote inside
    ('"we`ird" = 1', "`we``ird` = 1"),
    ("name = 'it''s' and \"name\" = 'x'", "name = 'it''s' and `name` = 'x'"),
    ('"unterminated', '"unterminated'),
])
def test_quote_column_identifiers(text: str, expected: str) -> None:
    from deltakernel.kernel.expressions.sql import parse_sql, quote_column_identifiers

    out = quote_column_identifiers(text, ["high price", "name", 'a"b', "we`ird"])
    assert out == expected
    if text != '"unterminated':
        parse_sql(out)  # Spark SQL the kernel parses
