"""deltakernel.schema: deltalake's public schema classes, checked against deltalake 1.6.6's own objects."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")
import deltalake.schema as dls

import deltakernel
import deltakernel.schema as ks
from deltakernel.kernel.schema import types as kt

FIELDS_JSON = [
    '{"name":"a","type":"integer","nullable":true,"metadata":{}}',
    '{"name":"b","type":"decimal(10,2)","nullable":false,"metadata":{"comment":"money","n":1}}',
    '{"name":"c","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}}',
    '{"name":"d","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},'
    '"nullable":true,"metadata":{}}',
    '{"name":"e","type":{"type":"struct","fields":[{"name":"x","type":"timestamp","nullable":true,"metadata":{}},'
    '{"name":"y","type":"timestamp_ntz","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}',
    '{"name":"f","type":"date","nullable":true,"metadata":{}}',
]
SCHEMA_JSON = '{"type":"struct","fields":[' + ",".join(FIELDS_JSON) + "]}"


@pytest.mark.parametrize("text", FIELDS_JSON)
def test_field_json_repr_arrow_like_deltalake(text: str) -> None:
    ours, theirs = ks.Field.from_json(text), dls.Field.from_json(text)
    assert json.loads(ours.to_json()) == json.loads(theirs.to_json())
    assert repr(ours.type) == repr(theirs.type)
    assert (ours.name, ours.nullable, ours.metadata) == (theirs.name, theirs.nullable, theirs.metadata)
    assert pa.field(ours).type == pa.field(theirs).type
    assert pa.field(ours).nullable == pa.field(theirs).nullable
    assert ks.Field.from_arrow(pa.field(theirs)).type == ours.type


def test_schema_round_trips_like_deltalake() -> None:
    ours, theirs = ks.Schema.from_json(SCHEMA_JSON), dls.Schema.from_json(SCHEMA_JSON)
    assert isinstance(ours.to_json(), str) and json.loads(ours.to_json()) == json.loads(theirs.to_json())
    # deltalake's metadata dicts come from a Rust HashMap (key order varies per process): compare per field
    assert repr(ours).startswith("Schema([Field(") and len(ours.fields) == len(theirs.fields)
    for a, b in zip(ours.fields, theirs.fields):
        assert (a.name, repr(a.type), a.nullable, a.metadata) == (b.name, repr(b.type), b.nullable, b.metadata)
    assert pa.schema(ours) == pa.schema(theirs)  # __arrow_c_schema__
    assert ours.to_arrow() == pa.schema(theirs.to_arrow())
    assert ours.to_arrow(as_large_types=True) == pa.schema(theirs.to_arrow(as_large_types=True))
    assert pa.schema(ours).field("b").metadata == pa.schema(theirs).field("b").metadata  # strings raw, rest JSON
    # from Arrow, metadata is text (`"n": 1` comes back "1"), as deltalake reads it (issue 22 §6)
    back = ks.Schema.from_arrow(pa.schema(theirs))
    assert json.loads(back.to_json()) == json.loads(dls.Schema.from_arrow(pa.schema(theirs)).to_json())
    assert back.field("b").metadata == {"comment": "money", "n": "1"}
    assert [f.type for f in back.fields] == [f.type for f in ours.fields]
    assert isinstance(ours, ks.StructType) and ours == ks.StructType(ours.fields)
    assert [f.name for f in ours.fields] == [f.name for f in theirs.fields] and isinstance(ours.fields, list)


def test_constructors_match_deltalake() -> None:
    cases = [
        (ks.PrimitiveType("integer"), dls.PrimitiveType("integer")),
        (ks.PrimitiveType("decimal(10,2)"), dls.PrimitiveType("decimal(10,2)")),
        (ks.ArrayType("integer"), dls.ArrayType("integer")),
        (ks.ArrayType(ks.PrimitiveType("long"), contains_null=False),
         dls.ArrayType(dls.PrimitiveType("long"), contains_null=False)),
        (ks.MapType("integer", "string", value_contains_null=False),
         dls.MapType("integer", "string", value_contains_null=False)),
        (ks.StructType([ks.Field("x", "integer", nullable=False)]), dls.StructType([dls.Field("x", "integer",
                                                                                               nullable=False)])),
        (ks.VariantType(), dls.VariantType()),
    ]
    for ours, theirs in cases:
        assert repr(ours) == repr(theirs)
        assert ours.to_json() == theirs.to_json()
        assert ours.type == theirs.type
        assert pa.field(ks.Field("c", ours)).type == pa.field(dls.Field("c", theirs)).type
        assert type(ours).from_json(theirs.to_json()) == ours
    assert ks.PrimitiveType.from_arrow(pa.int8()) == ks.PrimitiveType("byte")
    assert repr(ks.Field("x", "integer", metadata={"a": 1})) == repr(dls.Field("x", "integer", metadata={"a": 1}))


def test_validation_and_equality_like_deltalake() -> None:
    for bad in ("foo", "decimal(40,2)"):
        with pytest.raises(ValueError):
            dls.PrimitiveType(bad)
        with pytest.raises(ValueError):
            ks.PrimitiveType(bad)
    with pytest.raises(TypeError):
        ks.PrimitiveType.from_arrow(pa.list_(pa.int8()))
    with pytest.raises(TypeError):
        dls.PrimitiveType.from_arrow(pa.list_(pa.int8()))
    # equality includes metadata, as deltalake's
    assert (ks.Field("x", "integer") == ks.Field("x", "integer")) is (dls.Field("x", "integer") == dls.Field("x",
                                                                                                            "integer"))
    assert (ks.Field("x", "integer", metadata={"a": 1}) == ks.Field("x", "integer")) is \
        (dls.Field("x", "integer", metadata={"a": 1}) == dls.Field("x", "integer"))
    assert ks.PrimitiveType("long") != ks.PrimitiveType("integer")
    assert len({ks.PrimitiveType("long"), ks.PrimitiveType("long")}) == 1
    # and with the kernel type each wraps (internal code and older tests compare with kernel types)
    assert ks.PrimitiveType("long") == kt.PrimitiveType("long")
    assert ks.ArrayType("long")._kernel == kt.ArrayType(kt.PrimitiveType("long"))


def test_invariants() -> None:
    inv = json.dumps({"expression": {"expression": "x > 3"}})
    s = ks.Schema([ks.Field("x", "integer", metadata={"delta.invariants": inv}),
                   ks.Field("s", ks.StructType([ks.Field("y", "long", metadata={"delta.invariants": json.dumps(
                       {"expression": {"expression": "s.y < 9"}})})]))])
    theirs = dls.Schema.from_json(s.to_json())
    assert sorted(s.invariants) == sorted(theirs.invariants) == [("s.y", "s.y < 9"), ("x", "x > 3")]


def test_table_schema_is_public_and_matches_deltalake(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"q": 1}, None]),
                     "l": pa.array([[1.5], []]), "p": ["a", "b"]})
    deltalake.write_deltalake(tmp_path, data, partition_by=["p"])
    ours, theirs = deltakernel.DeltaTable(str(tmp_path)).schema(), deltalake.DeltaTable(tmp_path).schema()
    assert isinstance(ours, ks.Schema)
    assert ours.to_json() == theirs.to_json()
    assert repr(ours) == repr(theirs)
    assert pa.schema(ours) == pa.schema(theirs)
    # the kernel conveniences stay
    assert ours.names == ["id", "s", "l", "p"] and ours.field("S").name == "s"


def test_create_and_add_columns_accept_public_schema(tmp_path: Path) -> None:
    schema = ks.Schema([ks.Field("id", "long", nullable=False), ks.Field("v", ks.ArrayType("string"))])
    t = deltakernel.DeltaTable.create(str(tmp_path), schema)
    assert t.schema() == schema
    assert deltalake.DeltaTable(tmp_path).schema().to_json() == schema.to_json()
    t.alter.add_columns([ks.Field("extra", ks.MapType("string", "integer"))])
    assert deltalake.DeltaTable(tmp_path).schema().fields[-1].to_json() == \
        ks.Field("extra", ks.MapType("string", "integer")).to_json()
