"""MERGE with merge_schema=True (delta-spark's MERGE schema evolution): new nested struct fields (in structs,
arrays of structs and map values), type widening on `delta.enableTypeWidening=true` tables with
`delta.typeChanges` as PROTOCOL.md "Type Widening" says, the same schema merge as
`write_deltalake(schema_mode="merge")`, old files (copy-on-write survivors, deletion vectors, column mapping)
read with the evolved schema, change data rows in the evolved schema.

Expected rows are built in memory from the inputs; DuckDB's delta extension (delta-kernel-rs) and deltalake
1.6.6 read the results too (deltalake 1.6.6 refuses to read `typeWidening` tables, so only DuckDB checks those).
"""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import deltalake_table, duckdb_table, read_actions, write_actions

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import SchemaError
from deltakernel.kernel.schema.evolution import is_evolution_widening, is_widening, merge_schemas
from deltakernel.kernel.schema.types import DecimalType, PrimitiveType, StructField, StructType, parse_type
from deltakernel.operations.dml.merge.plan import MATCHED_UPDATE, NOT_MATCHED_INSERT, Clause
from deltakernel.operations.dml.merge.schema_evolution import migration_schema, update_star_struct

DV = {"delta.enableDeletionVectors": "true"}
NAME = {"delta.columnMapping.mode": "name"}
ID = {"delta.columnMapping.mode": "id"}
WIDEN = {"delta.enableTypeWidening": "true"}
CONFS = [{}, DV, NAME, ID, {**DV, **NAME}]
CONF_IDS = ["cow", "dv", "name", "id", "dv-name"]

S_YZ = pa.struct([("y", pa.int32()), ("z", pa.string())])


def _schema_json(path: Path) -> dict[str, Any]:
    for v in range(50, -1, -1):
        try:
            actions = read_actions(path, v)
        except FileNotFoundError:
            continue
        for a in actions:
            if "metaData" in a:
                return json.loads(a["metaData"]["schemaString"])
    raise AssertionError("no metaData")


def _field(schema: dict[str, Any], *path: str) -> dict[str, Any]:
    fields = schema["fields"]
    f: dict[str, Any] = {}
    for name in path:
        f = next(x for x in fields if x["name"] == name)
        t = f["type"]
        fields = t["fields"] if isinstance(t, dict) and t.get("type") == "struct" else []
    return f


def _by_id(t: pa.Table) -> dict[Any, dict[str, Any]]:
    return {r["id"]: {k: v for k, v in r.items() if k != "id"} for r in t.to_pylist()}


def _merge(path: Path, src: pa.Table, *, update: Any = "all", insert: Any = "all", **kw: Any) -> dict[str, Any]:
    m = DeltaTable(str(path)).merge(src, "t.id = s.id", source_alias="s", target_alias="t",
                                    merge_schema=kw.pop("merge_schema", True), **kw)
    if update == "all":
        m = m.when_matched_update_all()
    elif update is not None:
        m = m.when_matched_update(update)
    if insert == "all":
        m = m.when_not_matched_insert_all()
    elif insert is not None:
        m = m.when_not_matched_insert(insert)
    return m.execute()


def _nested_table(path: Path, conf: dict[str, str]) -> dict[int, dict[str, Any]]:
    """ids 0..5 in two files; s = {y, z}, id 5's struct NULL. Returns the rows."""
    rows = {i: {"s": None if i == 5 else {"y": i, "z": f"z{i}"}, "n": f"n{i}"} for i in range(6)}
    for ids in ([0, 1, 2], [3, 4, 5]):
        t = pa.table({"id": pa.array(ids, pa.int64()), "s": pa.array([rows[i]["s"] for i in ids], S_YZ),
                      "n": [rows[i]["n"] for i in ids]})
        write_deltalake(path, t, mode="append", configuration=conf)
    return rows


# ----------------------------------------------------------------------------- nested fields
@pytest.mark.parametrize("conf", CONFS, ids=CONF_IDS)
def test_update_all_insert_all_add_nested_field(tmp_path: Path, conf: dict[str, str]) -> None:
    path = tmp_path / "t"
    rows = _nested_table(path, conf)
    before = _schema_json(path)
    # the source struct has every target field plus X, in another order and spelling (Y for y)
    src_type = pa.struct([("X", pa.string()), ("z", pa.string()), ("Y", pa.int32())])
    src = pa.table({"id": pa.array([1, 4, 9], pa.int64()),
                    "s": pa.array([{"X": f"x{i}", "z": f"nz{i}", "Y": 100 + i} for i in (1, 4, 9)], src_type),
                    "n": ["u1", "u4", "u9"]})
    m = _merge(path, src)
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (2, 1)
    want = {i: {"s": None if r["s"] is None else {**r["s"], "X": None}, "n": r["n"]} for i, r in rows.items()}
    for i, n in ((1, "u1"), (4, "u4"), (9, "u9")):
        want[i] = {"s": {"y": 100 + i, "z": f"nz{i}", "X": f"x{i}"}, "n": n}
    t = DeltaTable(str(path))
    assert [f.name for f in t.schema().field("s").type.fields] == ["y", "z", "X"]
    assert t.schema().field("s").type.fields[2].nullable
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want
    if not conf:  # deltalake 1.6.6's pyarrow reader refuses DV tables and reads column-mapped ones as NULLs
        assert _by_id(deltalake_table(path)) == want
    if conf.get("delta.columnMapping.mode"):
        after = _schema_json(path)
        x = _field(after, "s", "X")["metadata"]
        old_max = int(DeltaTable(str(path), version=1).metadata().configuration["delta.columnMapping.maxColumnId"])
        assert x["delta.columnMapping.id"] == old_max + 1
        assert x["delta.columnMapping.physicalName"].startswith("col-")
        assert t.metadata().configuration["delta.columnMapping.maxColumnId"] == str(old_max + 1)
        # existing fields keep their ids and physical names
        assert _field(after, "s", "y")["metadata"] == _field(before, "s", "y")["metadata"]
        new_files = [a["add"]["path"] for a in read_actions(path, 2) if "add" in a]
        phys_s = _field(after, "s")["metadata"]["delta.columnMapping.physicalName"]
        file_schema = pq.read_schema(path / new_files[0])
        assert x["delta.columnMapping.physicalName"] in [f.name for f in file_schema.field(phys_s).type]
    if conf.get("delta.enableDeletionVectors"):
        assert m["num_deletion_vectors_added"] == 2  # old files stay, read with the new schema
    else:
        assert m["num_target_rows_copied"] == 4  # copy-on-write survivors rewritten in the new schema


def test_insert_and_explicit_struct_assignment_null_missing_fields(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = _nested_table(path, {})
    src_type = pa.struct([("x", pa.int64()), ("y", pa.int32())])  # no z
    src = pa.table({"id": pa.array([1, 2, 8, 9], pa.int64()),
                    "s": pa.array([{"x": 11, "y": 21}, None, {"x": 18, "y": 28}, None], src_type),
                    "extra": ["e1", "e2", "e8", "e9"]})
    _merge(path, src, update={"s": "s.s"}, insert={"id": "s.id", "t.s": "s.s"})
    t = DeltaTable(str(path))
    assert t.schema().names == ["id", "s", "n"]  # `extra` is not assigned by any clause: not added
    assert [f.name for f in t.schema().field("s").type.fields] == ["y", "z", "x"]
    want = {i: {"s": None if r["s"] is None else {**r["s"], "x": None}, "n": r["n"]} for i, r in rows.items()}
    want[1] = {"s": {"y": 21, "z": None, "x": 11}, "n": "n1"}  # whole-struct assignment: z NULL
    want[2] = {"s": None, "n": "n2"}  # NULL source struct stays NULL
    want[8] = {"s": {"y": 28, "z": None, "x": 18}, "n": None}
    want[9] = {"s": None, "n": None}
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want


def test_update_all_keeps_target_only_nested_fields(tmp_path: Path) -> None:
    """delta-spark expands UPDATE SET * to leaf-level assignments under schema evolution: a nested field only
    the target has keeps its value; a NULL source struct gives NULL only where those fields are NULL too."""
    path = tmp_path / "t"
    rows = _nested_table(path, {})
    src_type = pa.struct([("x", pa.int64()), ("y", pa.int32())])  # no z
    src = pa.table({"id": pa.array([0, 1, 5, 7], pa.int64()),
                    "s": pa.array([None, {"x": 11, "y": 21}, None, {"x": 17, "y": 27}], src_type),
                    "n": ["u0", "u1", "u5", "u7"]})
    _merge(path, src)
    want = {i: {"s": None if r["s"] is None else {**r["s"], "x": None}, "n": r["n"]} for i, r in rows.items()}
    want[0] = {"s": {"y": None, "z": "z0", "x": None}, "n": "u0"}  # NULL source, target z kept
    want[1] = {"s": {"y": 21, "z": "z1", "x": 11}, "n": "u1"}
    want[5] = {"s": None, "n": "u5"}  # NULL source over a NULL target: NULL
    want[7] = {"s": {"y": 27, "z": None, "x": 17}, "n": "u7"}  # INSERT *: whole struct, z NULL
    assert _by_id(DeltaTable(str(path)).to_pyarrow_table()) == want


def test_update_star_struct_helper() -> None:
    dtype = pa.struct([("y", pa.int64()), ("z", pa.string()),
                       ("n", pa.struct([("a", pa.int32()), ("b", pa.int32())])), ("x", pa.int32())])
    target = pa.array([{"y": 1, "z": "a", "n": {"a": 1, "b": 2}, "x": None},
                       {"y": 2, "z": None, "n": None, "x": None},
                       None,
                       {"y": 4, "z": None, "n": {"a": 4, "b": 5}, "x": None}], dtype)
    src_type = pa.struct([("X", pa.int64()), ("Y", pa.int32()), ("n", pa.struct([("a", pa.int64())]))])
    source = pa.array([{"X": 10, "Y": 11, "n": {"a": 12}}, None, None, None], src_type)
    out = update_star_struct(source, target, dtype, "s", strict=True)
    assert out.type == dtype
    assert out.to_pylist() == [
        {"y": 11, "z": "a", "n": {"a": 12, "b": 2}, "x": 10},
        None,  # source NULL, target-only z and n.b NULL
        None,
        {"y": None, "z": None, "n": {"a": None, "b": 5}, "x": None},  # n.b is a target-only value
    ]


def test_struct_in_array_and_map_values(tmp_path: Path) -> None:
    path = tmp_path / "t"
    el = pa.struct([("a", pa.int32())])
    write_deltalake(path, pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "arr": pa.array([[{"a": 1}], None], pa.list_(el)),
        "m": pa.array([[("k", {"a": 1})], []], pa.map_(pa.string(), el)),
    }), configuration=NAME)
    el2 = pa.struct([("B", pa.string()), ("a", pa.int32())])
    src = pa.table({"id": pa.array([2, 3], pa.int64()),
                    "arr": pa.array([[{"B": "b2", "a": 2}, None], [{"B": "b3", "a": 3}]], pa.list_(el2)),
                    "m": pa.array([[("q", {"B": "mb2", "a": 20})], None], pa.map_(pa.string(), el2))})
    _merge(path, src)
    t = DeltaTable(str(path))
    sch = _schema_json(path)
    assert [f["name"] for f in _field(sch, "arr")["type"]["elementType"]["fields"]] == ["a", "B"]
    assert [f["name"] for f in _field(sch, "m")["type"]["valueType"]["fields"]] == ["a", "B"]
    b_meta = _field(sch, "arr")["type"]["elementType"]["fields"][1]["metadata"]
    assert "delta.columnMapping.physicalName" in b_meta and "delta.columnMapping.id" in b_meta
    want = {
        1: {"arr": [{"a": 1, "B": None}], "m": [("k", {"a": 1, "B": None})]},
        2: {"arr": [{"a": 2, "B": "b2"}, None], "m": [("q", {"a": 20, "B": "mb2"})]},
        3: {"arr": [{"a": 3, "B": "b3"}], "m": None},
    }
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want


def test_change_data_rows_carry_the_evolved_schema(tmp_path: Path) -> None:
    path = tmp_path / "t"
    rows = _nested_table(path, {"delta.enableChangeDataFeed": "true"})
    src_type = pa.struct([("y", pa.int32()), ("z", pa.string()), ("x", pa.float64())])
    src = pa.table({"id": pa.array([2, 7], pa.int64()),
                    "s": pa.array([{"y": 22, "z": "nz", "x": 0.5}, {"y": 77, "z": "z7", "x": 7.5}], src_type),
                    "n": ["u2", "u7"], "w": pa.array([2, 7], pa.int16())})
    _merge(path, src)
    v = DeltaTable(str(path)).version()
    cdf = DeltaTable(str(path)).load_cdf(starting_version=v, ending_version=v).read_all()
    assert [f.name for f in cdf.schema][:4] == ["id", "s", "n", "w"]
    assert cdf.schema.field("s").type.names == ["y", "z", "x"]
    got = sorted((r["_change_type"], r["id"], json.dumps(r["s"], sort_keys=True), r["n"], r["w"])
                 for r in cdf.to_pylist())
    pre = dict(rows[2]["s"], x=None)
    want = sorted([
        ("update_preimage", 2, json.dumps(pre, sort_keys=True), "n2", None),
        ("update_postimage", 2, json.dumps({"y": 22, "z": "nz", "x": 0.5}, sort_keys=True), "u2", 2),
        ("insert", 7, json.dumps({"y": 77, "z": "z7", "x": 7.5}, sort_keys=True), "u7", 7),
    ])
    assert got == want


def test_without_merge_schema_nothing_changes(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _nested_table(path, WIDEN)
    src_type = pa.struct([("y", pa.int64()), ("z", pa.string()), ("x", pa.int32())])
    src = pa.table({"id": pa.array([1], pa.int64()), "s": pa.array([{"y": 5, "z": "q", "x": 1}], src_type)})
    _merge(path, src, merge_schema=False)
    t = DeltaTable(str(path))
    assert t.schema().field("s").type == StructType((StructField("y", PrimitiveType("integer")),
                                                     StructField("z", PrimitiveType("string"))))
    assert _by_id(t.to_pyarrow_table())[1]["s"] == {"y": 5, "z": "q"}


def test_migration_schema_follows_the_clauses() -> None:
    src = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("B", pa.string()), ("c", pa.string())])
    only = migration_schema(src, [Clause(MATCHED_UPDATE, None, {"t.a": "s.a", "`b`": "upper(s.c)"})], "t")
    assert only.names == ["a", "B"]
    star = migration_schema(src, [Clause(NOT_MATCHED_INSERT, None, None, True, ("c",))], "t")
    assert star.names == ["id", "a", "B"]
    assert migration_schema(src, [Clause("not_matched_by_source_update", None, {"a": "1"})]).names == []


# ----------------------------------------------------------------------------- type widening
def _widen_table(path: Path, conf: dict[str, str]) -> None:
    write_deltalake(path, pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "v": pa.array([10, 20], pa.int32()),
        "f": pa.array([1.5, 2.5], pa.float32()),
        "d": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-2.50")], pa.decimal128(5, 2)),
        "s": pa.array([{"a": 1}, {"a": 2}], pa.struct([("a", pa.int16())])),
        "arr": pa.array([[1, 2], None], pa.list_(pa.int32())),
        "m": pa.array([[("k", 0.5)], []], pa.map_(pa.string(), pa.float32())),
        "dt": pa.array([dt.date(2024, 1, 1), None], pa.date32()),
    }), configuration=conf)


def _widening_source(ids: list[int]) -> pa.Table:
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([2**40 + i for i in ids], pa.int64()),
        "f": pa.array([0.1 * i for i in ids], pa.float64()),
        "d": pa.array([decimal.Decimal(f"{i}.1234") for i in ids], pa.decimal128(10, 4)),
        "s": pa.array([{"a": 70000 + i} for i in ids], pa.struct([("a", pa.int32())])),
        "arr": pa.array([[2**33 + i] for i in ids], pa.list_(pa.int64())),
        "m": pa.array([[("k", 0.1 * i)] for i in ids], pa.map_(pa.string(), pa.float64())),
        "dt": pa.array([dt.datetime(2024, 5, i, 12, 30) for i in ids], pa.timestamp("us")),
    })


TYPE_CHANGES = {
    ("v",): [{"fromType": "integer", "toType": "long"}],
    ("f",): [{"fromType": "float", "toType": "double"}],
    ("d",): [{"fromType": "decimal(5,2)", "toType": "decimal(10,4)"}],
    ("s", "a"): [{"fromType": "short", "toType": "integer"}],
    ("arr",): [{"fromType": "integer", "toType": "long", "fieldPath": "element"}],
    ("m",): [{"fromType": "float", "toType": "double", "fieldPath": "value"}],
    ("dt",): [{"fromType": "date", "toType": "timestamp_ntz"}],
}


def _widened_rows() -> dict[int, dict[str, Any]]:
    f32 = pa.array([1.5, 2.5, 0.5], pa.float32()).cast(pa.float64()).to_pylist()
    return {
        1: {"v": 2**40 + 1, "f": 0.1, "d": decimal.Decimal("1.1234"), "s": {"a": 70001}, "arr": [2**33 + 1],
            "m": [("k", 0.1)], "dt": dt.datetime(2024, 5, 1, 12, 30)},
        2: {"v": 20, "f": f32[1], "d": decimal.Decimal("-2.5000"), "s": {"a": 2}, "arr": None, "m": [],
            "dt": None},
        3: {"v": 2**40 + 3, "f": 0.1 * 3, "d": decimal.Decimal("3.1234"), "s": {"a": 70003}, "arr": [2**33 + 3],
            "m": [("k", 0.1 * 3)], "dt": dt.datetime(2024, 5, 3, 12, 30)},
    }


@pytest.mark.parametrize("conf", [{}, DV, NAME], ids=["cow", "dv", "name"])
def test_type_widening_through_merge(tmp_path: Path, conf: dict[str, str]) -> None:
    path = tmp_path / "t"
    _widen_table(path, {**WIDEN, **conf})
    _merge(path, _widening_source([1, 3]))
    t = DeltaTable(str(path))
    sch = _schema_json(path)
    types = {f["name"]: f["type"] for f in sch["fields"]}
    assert types["v"] == "long" and types["f"] == "double" and types["d"] == "decimal(10,4)"
    assert types["dt"] == "timestamp_ntz"
    assert types["arr"]["elementType"] == "long" and types["m"]["valueType"] == "double"
    assert _field(sch, "s", "a")["type"] == "integer"
    for fpath, changes in TYPE_CHANGES.items():
        assert _field(sch, *fpath)["metadata"]["delta.typeChanges"] == changes, fpath
    assert "delta.typeChanges" not in _field(sch, "s")["metadata"]  # recorded on the nearest struct field: s.a
    assert "delta.typeChanges" not in _field(sch, "id")["metadata"]
    proto = t.protocol()
    assert (proto.min_reader_version, proto.min_writer_version) == (3, 7)
    assert "typeWidening" in proto.reader_features and "typeWidening" in proto.writer_features
    want = _widened_rows()
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want
    # a second MERGE with the same types adds no type change
    _merge(path, _widening_source([3]))
    assert _field(_schema_json(path), "v")["metadata"]["delta.typeChanges"] == TYPE_CHANGES[("v",)]


def test_no_widening_without_the_property(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _widen_table(path, {})
    v0 = DeltaTable(str(path)).version()
    with pytest.raises(SchemaError, match="'v'"):  # 2**40 does not fit the int column: nothing committed
        _merge(path, _widening_source([1, 3]))
    assert DeltaTable(str(path)).version() == v0
    src = _widening_source([1, 3]).drop_columns(["s", "arr", "m", "dt", "d"]).append_column(
        "d", pa.array([decimal.Decimal("1.1000"), decimal.Decimal("3.1200")], pa.decimal128(10, 4)))
    _merge(path, src, error_on_type_mismatch=False)
    t = DeltaTable(str(path))
    assert t.schema().field("v").type == PrimitiveType("integer")
    assert t.schema().field("f").type == PrimitiveType("float")
    assert t.schema().field("d").type == DecimalType(5, 2)
    assert "typeWidening" not in (t.protocol().writer_features or ())
    assert all("delta.typeChanges" not in f["metadata"] for f in _schema_json(path)["fields"])
    got = _by_id(t.to_pyarrow_table())
    assert got[1]["v"] is None and got[3]["v"] is None and got[2]["v"] == 20  # did not fit: NULL
    assert got[3]["d"] == decimal.Decimal("3.12")  # cast to decimal(5,2) as before


def test_narrower_and_implicit_only_types_keep_the_column(tmp_path: Path) -> None:
    """On a widening table, types schema evolution does not apply (int -> double, int -> decimal; narrower
    data) keep the column's type and are cast, as delta-spark's MERGE does."""
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1], pa.int64()), "a": pa.array([1], pa.int32()),
                                    "b": pa.array([1], pa.int32()), "c": pa.array([1], pa.int64())}),
                    configuration=WIDEN)
    src = pa.table({"id": pa.array([1, 2], pa.int64()), "a": pa.array([2.7, -3.9], pa.float64()),
                    "b": pa.array([decimal.Decimal("4.0"), None], pa.decimal128(12, 1)),
                    "c": pa.array([5, 6], pa.int16())})
    _merge(path, src)
    t = DeltaTable(str(path))
    assert [f.type for f in t.schema().fields] == [PrimitiveType(x) for x in ("long", "integer", "integer", "long")]
    assert all("delta.typeChanges" not in f["metadata"] for f in _schema_json(path)["fields"])
    assert _by_id(t.to_pyarrow_table()) == {1: {"a": 2, "b": 4, "c": 5}, 2: {"a": -3, "b": None, "c": 6}}


def test_merge_schema_false_on_a_widening_table_casts(tmp_path: Path) -> None:
    path = tmp_path / "t"
    _widen_table(path, WIDEN)
    src = pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([7], pa.int64())})
    _merge(path, src, update={"v": "s.v"}, insert=None, merge_schema=False)
    t = DeltaTable(str(path))
    assert t.schema().field("v").type == PrimitiveType("integer")
    assert _by_id(t.to_pyarrow_table())[1]["v"] == 7


def test_partition_columns_widen_except_date_to_timestamp_ntz(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "p": pa.array([1, 2], pa.int32()),
                                    "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 2)])}),
                    partition_by=["p", "d"], configuration=WIDEN)
    src = pa.table({"id": pa.array([3], pa.int64()), "p": pa.array([2**35], pa.int64()),
                    "d": pa.array([dt.datetime(2024, 3, 3)], pa.timestamp("us"))})
    _merge(path, src)
    t = DeltaTable(str(path))
    assert t.schema().field("p").type == PrimitiveType("long")
    assert t.schema().field("d").type == PrimitiveType("date")  # old values '2024-01-01' stay valid
    want = {1: {"p": 1, "d": dt.date(2024, 1, 1)}, 2: {"p": 2, "d": dt.date(2024, 1, 2)},
            3: {"p": 2**35, "d": dt.date(2024, 3, 3)}}
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want


def test_widened_join_key(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int32()), "v": ["a", "b"]}), configuration=WIDEN)
    src = pa.table({"id": pa.array([2, 2**40], pa.int64()), "v": ["B", "big"]})
    _merge(path, src)
    t = DeltaTable(str(path))
    assert t.schema().field("id").type == PrimitiveType("long")
    assert _by_id(t.to_pyarrow_table()) == {1: {"v": "a"}, 2: {"v": "B"}, 2**40: {"v": "big"}}


def test_preview_feature_table_keeps_the_preview_feature(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([1], pa.int32())}),
                    configuration=WIDEN)
    actions = read_actions(path, 0)
    for a in actions:
        if "protocol" in a:
            a["protocol"]["readerFeatures"] = ["typeWidening-preview"]
            a["protocol"]["writerFeatures"] = ["typeWidening-preview"]
    write_actions(path, 0, actions)
    _merge(path, pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([2**40], pa.int64())}))
    t = DeltaTable(str(path))
    assert t.schema().field("v").type == PrimitiveType("long")
    assert set(t.protocol().writer_features) == {"typeWidening-preview"}


# ----------------------------------------------------------------------------- one merge for writes and MERGE
def test_write_schema_merge_gives_the_same_schema(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _widen_table(a, WIDEN)
    _widen_table(b, WIDEN)
    src = _widening_source([3]).append_column(
        "s2", pa.array([{"q": [{"r": 1}]}], pa.struct([("q", pa.list_(pa.struct([("r", pa.int8())])))])))
    _merge(a, src)
    write_deltalake(b, src, mode="append", schema_mode="merge")
    assert _schema_json(a) == _schema_json(b)
    assert _by_id(DeltaTable(str(b)).to_pyarrow_table())[3] == _by_id(DeltaTable(str(a)).to_pyarrow_table())[3]
    for fpath, changes in TYPE_CHANGES.items():
        assert _field(_schema_json(b), *fpath)["metadata"]["delta.typeChanges"] == changes


def test_write_refuses_type_changes_schema_evolution_does_not_apply(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"a": pa.array([1], pa.int32())}), configuration=WIDEN)
    with pytest.raises(SchemaError, match="'a'"):
        write_deltalake(path, pa.table({"a": pa.array([1.5])}), mode="append", schema_mode="merge")
    assert DeltaTable(str(path)).version() == 0
    write_deltalake(path, pa.table({"a": pa.array([1], pa.int8())}), mode="append", schema_mode="merge")
    assert DeltaTable(str(path)).schema().field("a").type == PrimitiveType("integer")  # narrower: cast


def test_evolution_widening_rules() -> None:
    """delta-spark's isTypeChangeSupportedForSchemaEvolution and the protocol's list."""
    p = PrimitiveType
    auto = [(p("byte"), p("short")), (p("short"), p("long")), (p("integer"), p("long")), (p("float"), p("double")),
            (p("date"), p("timestamp_ntz")), (DecimalType(5, 2), DecimalType(10, 4)),
            (DecimalType(5, 2), DecimalType(6, 2))]
    manual_only = [(p("integer"), p("double")), (p("integer"), DecimalType(10, 0)), (p("long"), DecimalType(20, 0))]
    never = [(p("long"), p("integer")), (p("double"), p("float")), (DecimalType(5, 2), DecimalType(5, 3)),
             (DecimalType(5, 2), DecimalType(10, 1)), (p("integer"), DecimalType(9, 0)), (p("long"), p("double")),
             (p("timestamp"), p("timestamp_ntz")), (p("integer"), p("string"))]
    for a, b in auto:
        assert is_widening(a, b) and is_evolution_widening(a, b), (a, b)
    for a, b in manual_only:
        assert is_widening(a, b) and not is_evolution_widening(a, b), (a, b)
    for a, b in never:
        assert not is_widening(a, b) and not is_evolution_widening(a, b), (a, b)
    # Iceberg V2 compatibility: no date -> timestamp_ntz, no decimal scale increase
    assert not is_evolution_widening(p("date"), p("timestamp_ntz"), iceberg_compat=True)
    assert not is_evolution_widening(DecimalType(5, 2), DecimalType(10, 4), iceberg_compat=True)
    assert is_evolution_widening(DecimalType(5, 2), DecimalType(10, 2), iceberg_compat=True)


def test_nested_type_change_paths() -> None:
    table = StructType((StructField("e", parse_type(
        {"type": "array", "elementType": {"type": "map", "keyType": "string", "valueType": "decimal(6,2)",
                                          "valueContainsNull": True}, "containsNull": True}),
        metadata={"comment": "kept", "delta.typeChanges": [{"fromType": "decimal(4,2)", "toType": "decimal(6,2)",
                                                             "fieldPath": "element.value"}]}),))
    incoming = StructType((StructField("E", parse_type(
        {"type": "array", "elementType": {"type": "map", "keyType": "string", "valueType": "decimal(10,4)",
                                          "valueContainsNull": True}, "containsNull": True}),
        metadata={"delta.columnMapping.id": 99}),))
    merged = merge_schemas(copy.deepcopy(table), incoming, allow_widening=True)
    f = merged.fields[0]
    assert f.name == "e" and f.metadata["comment"] == "kept" and "delta.columnMapping.id" not in f.metadata
    assert f.metadata["delta.typeChanges"] == [  # PROTOCOL.md's example: history kept, new change appended
        {"fromType": "decimal(4,2)", "toType": "decimal(6,2)", "fieldPath": "element.value"},
        {"fromType": "decimal(6,2)", "toType": "decimal(10,4)", "fieldPath": "element.value"},
    ]
    with pytest.raises(SchemaError, match="enableTypeWidening"):
        merge_schemas(table, incoming)  # writes without the property: refused
    assert merge_schemas(table, incoming, implicit_casts=True) == table  # MERGE: keeps the type, casts


# ----------------------------------------------------------------------------- protocol
def test_widening_enabled_later_and_protocol_raised(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1], pa.int64()), "v": pa.array([1], pa.int32()),
                                    "s": pa.array([{"a": 1}], pa.struct([("a", pa.int32())]))}))
    assert DeltaTable(str(path)).protocol().min_reader_version == 1
    DeltaTable(str(path)).alter.set_table_properties({"delta.enableTypeWidening": "true"})
    src = pa.table({"id": pa.array([2], pa.int64()), "v": pa.array([2**40], pa.int64()),
                    "s": pa.array([{"a": 2, "t": dt.datetime(2024, 1, 1, 8)}],
                                  pa.struct([("a", pa.int32()), ("t", pa.timestamp("us"))]))})
    _merge(path, src)
    t = DeltaTable(str(path))
    proto = t.protocol()
    assert (proto.min_reader_version, proto.min_writer_version) == (3, 7)
    # typeWidening for the change, timestampNtz for the new nested timestamp_ntz field
    assert {"typeWidening", "timestampNtz"} <= set(proto.reader_features)
    assert {"typeWidening", "timestampNtz"} <= set(proto.writer_features)
    assert _field(_schema_json(path), "v")["metadata"]["delta.typeChanges"] == [
        {"fromType": "integer", "toType": "long"}]
    want = {1: {"v": 1, "s": {"a": 1, "t": None}}, 2: {"v": 2**40, "s": {"a": 2, "t": dt.datetime(2024, 1, 1, 8)}}}
    assert _by_id(t.to_pyarrow_table()) == want
    assert _by_id(duckdb_table(path)) == want


def test_widening_with_change_data_and_row_tracking(tmp_path: Path) -> None:
    path = tmp_path / "t"
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "v": pa.array([1, 2], pa.int32())}),
                    configuration={**WIDEN, "delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"})
    ids_before = {r["id"]: r["_row_id"] for r in DeltaTable(str(path)).to_pyarrow_table(row_tracking=True).to_pylist()}
    src = pa.table({"id": pa.array([2, 3], pa.int64()), "v": pa.array([2**40, 3], pa.int64())})
    _merge(path, src)
    t = DeltaTable(str(path))
    v = t.version()
    cdf = t.load_cdf(starting_version=v, ending_version=v).read_all()
    assert cdf.schema.field("v").type == pa.int64()
    assert sorted((r["_change_type"], r["id"], r["v"]) for r in cdf.to_pylist()) == sorted([
        ("update_preimage", 2, 2), ("update_postimage", 2, 2**40), ("insert", 3, 3)])
    rows = t.to_pyarrow_table(row_tracking=True).to_pylist()
    assert {r["id"]: r["v"] for r in rows} == {1: 1, 2: 2**40, 3: 3}
    got_ids = {r["id"]: r["_row_id"] for r in rows}
    assert got_ids[1] == ids_before[1] and got_ids[2] == ids_before[2]  # copied and updated rows keep their id
