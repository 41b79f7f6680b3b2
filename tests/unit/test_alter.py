"""operations/alter.py (DeltaTable.alter) and kernel/protocol_select.py, read back by deltalake and by us."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")
from deltalake import DeltaTable as DL
from deltalake import QueryBuilder, write_deltalake

import deltakernel
from deltakernel.errors import ConstraintViolationError, DeltaError, UnsupportedFeatureError
from deltakernel.kernel.log.actions import Protocol
from deltakernel.kernel.protocol.select import minimal_protocol
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType


def _make(tmp_path: Path, **kw: Any) -> Path:
    p = tmp_path / "t"
    data = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", "c"],
                     "st": pa.array([{"q": 1}, {"q": 2}, None], pa.struct([("q", pa.int64())]))})
    write_deltalake(str(p), data, **kw)
    return p


def _dl_rows(p: Path) -> list[dict[str, Any]]:
    """deltalake's DataFusion reader (its pyarrow-dataset reader ignores column mapping renames)."""
    t = pa.table(QueryBuilder().register("t", DL(str(p))).execute("select * from t").read_all())
    return sorted(t.to_pylist(), key=repr)


def _ours(p: Path) -> list[dict[str, Any]]:
    return sorted(deltakernel.DeltaTable(str(p)).to_pyarrow_table().to_pylist(), key=repr)


def _proto(p: Path) -> tuple[int, int, set[str] | None, set[str] | None]:
    pr = DL(str(p)).protocol()
    return (pr.min_reader_version, pr.min_writer_version,
            set(pr.reader_features) if pr.reader_features is not None else None,
            set(pr.writer_features) if pr.writer_features is not None else None)


def _our_proto(p: Path) -> tuple[int, int, set[str] | None, set[str] | None]:
    pr = deltakernel.DeltaTable(str(p)).protocol()
    return (pr.min_reader_version, pr.min_writer_version,
            set(pr.reader_features) if pr.reader_features is not None else None,
            set(pr.writer_features) if pr.writer_features is not None else None)


# ----------------------------------------------------------------------------- protocol selection
def test_minimal_protocol() -> None:
    assert minimal_protocol(set()) == Protocol(1, 2)
    assert minimal_protocol({"checkConstraints"}, Protocol(1, 2)) == Protocol(1, 3)
    assert minimal_protocol({"changeDataFeed", "columnMapping"}) == Protocol(2, 5)
    dv = minimal_protocol({"deletionVectors"}, Protocol(1, 3))
    assert dv == Protocol(3, 7, frozenset({"deletionVectors"}),
                          frozenset({"deletionVectors", "appendOnly", "invariants", "checkConstraints"}))
    assert minimal_protocol({"inCommitTimestamp"}, Protocol(1, 2)) == Protocol(
        1, 7, None, frozenset({"inCommitTimestamp", "appendOnly", "invariants"}))
    rt = minimal_protocol({"rowTracking"}, None)
    assert rt.writer_features == frozenset({"rowTracking", "domainMetadata"}) and rt.min_reader_version == 1
    cm = minimal_protocol({"deletionVectors"}, Protocol(2, 5))
    assert cm.reader_features == frozenset({"columnMapping", "deletionVectors"})
    # versions never go down; table-features tables stay table-features
    assert minimal_protocol({"appendOnly"}, Protocol(3, 7, frozenset(), frozenset())).min_writer_version == 7
    with pytest.raises(UnsupportedFeatureError):
        minimal_protocol({"madeUpFeature"}, None)


# ----------------------------------------------------------------------------- constraints
def test_add_constraint_roundtrip(tmp_path: Path) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    t.alter.add_constraint({"pos": "x > 0"})
    assert t.version() == 1
    assert DL(str(p)).metadata().configuration == {"delta.constraints.pos": "x > 0"}
    assert _proto(p) == (1, 3, None, None)
    assert t.history(1)[0]["operation"] == "ADD CONSTRAINT"
    assert t.history(1)[0]["operationParameters"] == {"name": "pos", "expr": "x > 0"}
    # deltalake now enforces our constraint
    with pytest.raises(Exception, match="validation"):
        write_deltalake(str(p), pa.table({"x": pa.array([0], pa.int64()), "s": ["z"],
                                          "st": pa.array([None], pa.struct([("q", pa.int64())]))}), mode="append")
    t.alter.drop_constraint("pos")
    assert DL(str(p)).metadata().configuration == {}
    assert t.history(1)[0]["operation"] == "DROP CONSTRAINT"
    with pytest.raises(DeltaError):
        t.alter.drop_constraint("pos")
    t.alter.drop_constraint("pos", raise_if_not_exists=False)
    assert t.version() == 2


def test_add_constraint_violation_commits_nothing(tmp_path: Path) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    with pytest.raises(ConstraintViolationError, match=r"x > 1.*'x': 1"):
        t.alter.add_constraint({"big": "x > 1"})
    with pytest.raises(ConstraintViolationError):  # NULL counts as a violation (as deltalake)
        t.alter.add_constraint({"nested": "st.q > 0"})
    with pytest.raises(DeltaError):
        t.alter.add_constraint({"bad": "nope > 1"})
    assert t.version() == 0 and DL(str(p)).version() == 0
    # deltalake rejects the same constraints
    for expr in ("x > 1",):
        with pytest.raises(Exception):
            DL(str(p)).alter.add_constraint({"c": expr})
    t.alter.add_constraint({"ok": "x BETWEEN 1 AND 3 AND s IN ('a', 'b', 'c')"})
    with pytest.raises(DeltaError, match="already exists"):
        t.alter.add_constraint({"OK": "x > 0"})


# ----------------------------------------------------------------------------- properties / features
@pytest.mark.parametrize("props,expected", [
    ({"delta.enableChangeDataFeed": "true"}, (1, 4, None, None)),
    ({"delta.appendOnly": "true"}, (1, 2, None, None)),
    ({"delta.enableDeletionVectors": "true"}, (3, 7, {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"})),
    ({"delta.enableRowTracking": "true"}, (1, 7, None, {"rowTracking", "domainMetadata", "appendOnly", "invariants"})),
    ({"delta.columnMapping.mode": "name"}, (2, 5, None, None)),
    ({"delta.logRetentionDuration": "interval 7 days", "user.key": "v"}, (1, 2, None, None)),
])
def test_set_table_properties_protocol(tmp_path: Path, props: dict[str, str], expected: Any) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    t.alter.set_table_properties(props)
    assert _proto(p) == expected == _our_proto(p)
    conf = DL(str(p)).metadata().configuration
    assert {k: conf[k] for k in props} == props
    assert _dl_rows(p) == _ours(p)
    assert t.history(1)[0]["operation"] == "SET TBLPROPERTIES"


def test_set_table_properties_validation(tmp_path: Path) -> None:
    t = deltakernel.DeltaTable(str(_make(tmp_path)))
    for bad in ({"delta.enableChangeDataFeed": "yes"}, {"delta.checkpointInterval": "abc"}, {"delta.nope": "1"},
                {"delta.columnMapping.maxColumnId": "5"}, {"delta.constraints.c": "x > 0"},
                {"delta.columnMapping.mode": "sideways"}):
        with pytest.raises(DeltaError):
            t.alter.set_table_properties(bad)
    assert t.version() == 0
    t.alter.set_table_properties({"delta.nope": "1"}, raise_if_not_exists=False)
    assert t.metadata().configuration["delta.nope"] == "1"


def test_enable_in_commit_timestamps(tmp_path: Path) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    t.alter.set_table_properties({"delta.enableInCommitTimestamps": "true"})
    conf = t.metadata().configuration
    assert conf["delta.inCommitTimestampEnablementVersion"] == "1"
    assert int(conf["delta.inCommitTimestampEnablementTimestamp"]) == t.history(1)[0]["inCommitTimestamp"]
    assert "inCommitTimestamp" in t.protocol().writer_features
    assert DL(str(p)).version() == 1


def test_feature_property_and_versions(tmp_path: Path) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    t.alter.set_table_properties({"delta.feature.changeDataFeed": "supported"})
    assert _proto(p) == (1, 7, None, {"changeDataFeed", "appendOnly", "invariants"})
    assert "delta.feature.changeDataFeed" not in t.metadata().configuration
    q = _make(tmp_path / "q")
    deltakernel.DeltaTable(str(q)).alter.set_table_properties({"delta.minWriterVersion": "4"})
    assert _proto(q) == (1, 4, None, None)


def test_add_feature(tmp_path: Path) -> None:
    from deltalake.table import TableFeatures

    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    with pytest.raises(DeltaError, match="allow_protocol_versions_increase"):
        t.alter.add_feature("changeDataFeed")
    assert t.version() == 0
    t.alter.add_feature(TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
    assert _proto(p) == (3, 7, {"deletionVectors"}, {"deletionVectors", "appendOnly", "invariants"})
    t.alter.add_feature(["changeDataFeed", TableFeatures.DomainMetadata])  # no version increase now
    assert _proto(p)[3] == {"deletionVectors", "appendOnly", "invariants", "changeDataFeed", "domainMetadata"}
    assert t.history(1)[0]["operation"] == "ADD FEATURE"  # deltalake's name
    v = t.version()
    t.alter.add_feature("appendOnly")  # already there: nothing to commit
    assert t.version() == v
    assert _dl_rows(p) == _ours(p)


# ----------------------------------------------------------------------------- columns
def test_add_columns_without_mapping(tmp_path: Path) -> None:
    p = _make(tmp_path)
    t = deltakernel.DeltaTable(str(p))
    t.alter.add_columns([StructField("n", PrimitiveType("string")),
                         StructField("st", StructType((StructField("r", PrimitiveType("integer")),)))])
    dl_schema = DL(str(p)).schema()
    assert [f.name for f in dl_schema.fields] == ["x", "s", "st", "n"]
    assert t.schema().field("st").type == StructType((StructField("q", PrimitiveType("long")),
                                                      StructField("r", PrimitiveType("integer"))))
    assert DL(str(p)).to_pyarrow_table().column("n").to_pylist() == [None] * 3
    assert _ours(p) == sorted(DL(str(p)).to_pyarrow_table().to_pylist(), key=repr)
    with pytest.raises(DeltaError):
        t.alter.add_columns(StructField("nn", PrimitiveType("long"), nullable=False))
    with pytest.raises(DeltaError):
        t.alter.add_columns(StructField("x", PrimitiveType("long")))
    from deltalake.schema import Field
    from deltalake.schema import PrimitiveType as DLP

    t.alter.add_columns(Field("from_dl", DLP("double")))
    assert t.schema().field("from_dl").type == PrimitiveType("double")


def test_rename_and_drop_need_column_mapping(tmp_path: Path) -> None:
    t = deltakernel.DeltaTable(str(_make(tmp_path)))
    with pytest.raises(DeltaError, match="column mapping"):
        t.alter.rename_column("x", "y")
    with pytest.raises(DeltaError, match="column mapping"):
        t.alter.drop_columns(["x"])
    assert t.version() == 0


def test_column_mapping_rename_drop_add(tmp_path: Path) -> None:
    p = _make(tmp_path, partition_by=["s"])
    t = deltakernel.DeltaTable(str(p))
    t.alter.set_table_properties({"delta.columnMapping.mode": "name"})
    sch = t.schema()
    assert [f.metadata["delta.columnMapping.physicalName"] for f in sch.fields] == ["x", "s", "st"]
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "4"  # x, s, st, st.q
    t.alter.add_columns(StructField("n", PrimitiveType("string")))
    assert t.schema().field("n").metadata["delta.columnMapping.id"] == 5
    assert t.schema().field("n").metadata["delta.columnMapping.physicalName"].startswith("col-")
    t.alter.rename_column("x", "xx")
    t.alter.rename_column("s", "part")
    t.alter.rename_column("st.q", "qq")
    assert t.partition_columns() == ["part"]
    t.alter.drop_columns("n")
    assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == "5"
    want = [{"xx": 1, "part": "a", "st": {"qq": 1}}, {"xx": 2, "part": "b", "st": {"qq": 2}},
            {"xx": 3, "part": "c", "st": None}]
    assert _ours(p) == sorted(want, key=repr)
    assert _dl_rows(p) == _ours(p)
    assert [f.name for f in DL(str(p)).schema().fields] == ["xx", "part", "st"]
    ops = [h["operation"] for h in t.history()]
    assert ops[:5] == ["DROP COLUMNS", "RENAME COLUMN", "RENAME COLUMN", "RENAME COLUMN", "ADD COLUMNS"]
    with pytest.raises(DeltaError, match="partition"):
        t.alter.drop_columns(["part"])
    with pytest.raises(DeltaError):
        t.alter.rename_column("xx", "PART")
    with pytest.raises(DeltaError):
        t.alter.set_table_properties({"delta.columnMapping.mode": "id"})


def test_rename_blocked_by_constraint(tmp_path: Path) -> None:
    t = deltakernel.DeltaTable(str(_make(tmp_path)))
    t.alter.set_table_properties({"delta.columnMapping.mode": "name"})
    t.alter.add_constraint({"pos": "x > 0"})
    with pytest.raises(DeltaError, match="pos"):
        t.alter.rename_column("x", "y")
    with pytest.raises(DeltaError, match="pos"):
        t.alter.drop_columns(["x"])
    t.alter.drop_columns(["s"])
    assert _dl_rows(tmp_path / "t") == _ours(tmp_path / "t")
