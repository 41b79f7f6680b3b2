"""Delta <-> Arrow schema conversion, including every schemaString in the conformance corpus."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel.errors import SchemaError
from deltakernel.kernel.schema import (
    VARIANT_ARROW_TYPE,
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    from_arrow_schema,
    from_arrow_type,
    parse_schema_string,
    to_arrow_schema,
    to_arrow_type,
)

CORPUS = Path("/work/shared/conformance/tables")

PRIMITIVES = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}


@pytest.mark.parametrize("name,arrow", sorted(PRIMITIVES.items()))
def test_primitive_mapping_round_trips(name: str, arrow: pa.DataType) -> None:
    assert to_arrow_type(PrimitiveType(name)) == arrow
    assert from_arrow_type(arrow) == PrimitiveType(name)


def test_decimal() -> None:
    assert to_arrow_type(DecimalType(38, 18)) == pa.decimal128(38, 18)
    assert from_arrow_type(pa.decimal128(10, 2)) == DecimalType(10, 2)
    assert from_arrow_type(pa.decimal256(20, 2)) == DecimalType(20, 2)
    with pytest.raises(SchemaError):
        from_arrow_type(pa.decimal256(40, 2))
    with pytest.raises(SchemaError):
        to_arrow_type(DecimalType(39, 0))


def _full_schema() -> StructType:
    inner = StructType(
        (
            StructField("d", PrimitiveType("integer"), nullable=False, metadata={"comment": "x"}),
            StructField("v", PrimitiveType("variant")),
        )
    )
    return StructType(
        (
            StructField(
                "a", PrimitiveType("integer"), nullable=False, metadata={"delta.columnMapping.id": 1}
            ),
            StructField("b", inner),
            StructField("c", ArrayType(PrimitiveType("integer"), contains_null=False)),
            StructField("e", ArrayType(inner, contains_null=True)),
            StructField("f", MapType(PrimitiveType("string"), PrimitiveType("string"), True)),
            StructField("g", MapType(PrimitiveType("string"), ArrayType(DecimalType(5, 2)), False)),
            StructField("h", DecimalType(12, 3)),
            StructField("v", PrimitiveType("variant"), nullable=False),
            StructField("av", ArrayType(PrimitiveType("variant"))),
            *[StructField(f"p_{n}", PrimitiveType(n)) for n in PRIMITIVES],
        )
    )


def test_nested_round_trip_keeps_nullability_and_metadata() -> None:
    schema = _full_schema()
    arrow = to_arrow_schema(schema)
    back = from_arrow_schema(arrow)
    assert back == schema
    assert [f.metadata for f in back.fields] == [f.metadata for f in schema.fields]
    assert back.fields[1].type.fields[0].metadata == {"comment": "x"}  # type: ignore[union-attr]
    assert not arrow.field("a").nullable
    assert arrow.field("a").metadata[b"delta.columnMapping.id"] == b"1"
    assert arrow.field("c").type.value_field.nullable is False
    assert arrow.field("f").type.key_field.nullable is False
    assert arrow.field("g").type.item_field.nullable is False


def test_variant_layout() -> None:
    t = to_arrow_type(PrimitiveType("variant"))
    assert t == VARIANT_ARROW_TYPE
    assert [t.field(i).name for i in range(2)] == ["metadata", "value"]
    assert all(t.field(i).type == pa.binary() and not t.field(i).nullable for i in range(2))
    # an untagged struct of the same shape stays a struct
    assert isinstance(from_arrow_type(t), StructType)


def test_metadata_arrow_encoding() -> None:
    """Arrow metadata as deltalake writes it: strings as their text, other values JSON-encoded. Read back,
    text stays text (a value that looks like JSON too), except under the keys the protocol types."""
    meta = {"delta.columnMapping.physicalName": "col-1", "delta.columnMapping.id": 7, "x": {"a": [1, True]},
            "flag": "true", "comment": "10", "delta.identity.allowExplicitInsert": False}
    schema = StructType((StructField("a", PrimitiveType("long"), metadata=meta),))
    f = to_arrow_schema(schema).field("a")
    assert f.metadata[b"delta.columnMapping.physicalName"] == b"col-1"
    assert f.metadata[b"delta.columnMapping.id"] == b"7"
    assert f.metadata[b"flag"] == b"true" and f.metadata[b"comment"] == b"10"
    assert json.loads(f.metadata[b"x"]) == {"a": [1, True]}
    back = from_arrow_schema(to_arrow_schema(schema)).fields[0].metadata
    assert back == {**meta, "x": '{"a":[1,true]}'}  # an untyped key's value is text once in Arrow (as deltalake)
    assert to_arrow_schema(schema, include_metadata=False).field("a").metadata is None


def test_arrow_metadata_is_text_except_under_protocol_typed_keys() -> None:
    text = {"t": "true", "f": "1.5", "n": "-3", "nul": "null", "q": '"q"', "o": '{"x": 1}', "e": "",
            "delta.invariants": '{"expression": {"expression": "a > 0"}}', "delta.generationExpression": "10"}
    typed = {"delta.columnMapping.id": ("5", 5), "delta.identity.start": ("-3", -3),
             "delta.identity.step": ("2", 2), "delta.identity.highWaterMark": ("9", 9),
             "delta.identity.allowExplicitInsert": ("true", True), "parquet.field.id": ("4", 4),
             "delta.columnMapping.nested.ids": ('{"a.element": 3}', {"a.element": 3}),
             "delta.typeChanges": ('[{"fromType": "integer", "toType": "long"}]',
                                   [{"fromType": "integer", "toType": "long"}])}
    raw = {**text, **{k: v for k, (v, _) in typed.items()}}
    got = from_arrow_schema(pa.schema([pa.field("a", pa.int64(), metadata=raw)])).fields[0].metadata
    assert got == {**text, **{k: v for k, (_, v) in typed.items()}}
    # text that is not JSON under a typed key is kept as given (the writer's checks name it)
    bad = from_arrow_schema(pa.schema([pa.field("a", pa.int64(), metadata={"delta.identity.start": "x"})]))
    assert bad.fields[0].metadata == {"delta.identity.start": "x"}


def test_from_arrow_lenient_types() -> None:
    assert from_arrow_type(pa.large_string()) == PrimitiveType("string")
    assert from_arrow_type(pa.string_view()) == PrimitiveType("string")
    assert from_arrow_type(pa.large_binary()) == PrimitiveType("binary")
    assert from_arrow_type(pa.timestamp("ns", tz="Europe/Paris")) == PrimitiveType("timestamp")
    assert from_arrow_type(pa.timestamp("ms")) == PrimitiveType("timestamp_ntz")
    assert from_arrow_type(pa.uint8()) == PrimitiveType("short")
    assert from_arrow_type(pa.uint16()) == PrimitiveType("integer")
    assert from_arrow_type(pa.uint32()) == PrimitiveType("long")
    assert from_arrow_type(pa.dictionary(pa.int32(), pa.string())) == PrimitiveType("string")
    assert from_arrow_type(pa.large_list(pa.int8())) == ArrayType(PrimitiveType("byte"))
    assert from_arrow_type(pa.date64()) == PrimitiveType("date")
    # foreign metadata keys are dropped, plain strings kept
    f = pa.field("x", pa.int32(), metadata={"PARQUET:field_id": "3", "note": "not json"})
    assert from_arrow_schema(pa.schema([f])).fields[0].metadata == {"note": "not json"}


@pytest.mark.parametrize("t", [pa.time64("us"), pa.duration("s"), pa.month_day_nano_interval()])
def test_from_arrow_unsupported(t: pa.DataType) -> None:
    with pytest.raises(SchemaError):
        from_arrow_type(t)


def test_unknown_delta_type_raises_at_conversion() -> None:
    # (geometry(...) used to be the example; it is WKB binary since the geospatial feature: tests/unit/test_geospatial.py)
    schema = parse_schema_string(
        '{"type":"struct","fields":[{"name":"g","type":"interval day to second","nullable":true,"metadata":{}}]}'
    )
    with pytest.raises(SchemaError):
        to_arrow_schema(schema)


def _corpus_schema_strings() -> list[tuple[str, str]]:
    out = []
    for path in sorted(glob.glob(str(CORPUS / "**" / "_delta_log" / "*.json"), recursive=True)):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                action = json.loads(line)
                md = action.get("metaData")
                if md and md.get("schemaString"):
                    out.append((path, md["schemaString"]))
    return out


CORPUS_SCHEMAS = _corpus_schema_strings()


@pytest.mark.skipif(not CORPUS_SCHEMAS, reason="conformance corpus not present")
def test_every_corpus_schema_converts() -> None:
    unsupported = []
    for path, schema_string in CORPUS_SCHEMAS:
        schema = parse_schema_string(schema_string)
        try:
            arrow = to_arrow_schema(schema)
        except SchemaError:
            # only geospatial types (geometry/geography) have no Arrow mapping
            assert "geometry" in schema_string or "geography" in schema_string, path
            unsupported.append(path)
            continue
        assert from_arrow_schema(arrow) == schema, path
    assert len(unsupported) < len(CORPUS_SCHEMAS)
