"""Column mapping: modes, physical names, field ids, physical schemas and path maps."""

from __future__ import annotations

import pyarrow as pa
import pytest

from deltakernel.errors import SchemaError
from deltakernel.kernel.schema import (
    ArrayType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    column_mapping_mode,
    field_id,
    logical_to_physical_names,
    physical_name,
    to_physical_arrow_schema,
    to_physical_schema,
)


def cm(name: str, fid: int) -> dict[str, object]:
    return {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": name}


def nested_schema() -> StructType:
    leaf = StructType((StructField("d", PrimitiveType("integer"), False, cm("col-d", 5)),))
    return StructType(
        (
            StructField("a", PrimitiveType("long"), True, cm("col-a", 1)),
            StructField(
                "s", StructType((StructField("x", leaf, True, cm("col-x", 3)),)), True, cm("col-s", 2)
            ),
            StructField("e", ArrayType(leaf), True, cm("col-e", 4)),
            StructField("m", MapType(PrimitiveType("string"), leaf), True, cm("col-m", 6)),
            StructField("plain", PrimitiveType("string")),  # no mapping metadata: falls back to its name
        )
    )


@pytest.mark.parametrize(
    "config,expected",
    [
        ({}, "none"),
        ({"delta.columnMapping.mode": "name"}, "name"),
        ({"delta.columnMapping.mode": "ID"}, "id"),
        ({"delta.columnMapping.mode": "none"}, "none"),
    ],
)
def test_mode(config: dict[str, str], expected: str) -> None:
    assert column_mapping_mode(config) == expected


def test_mode_gated_by_protocol() -> None:
    conf = {"delta.columnMapping.mode": "name"}
    assert column_mapping_mode(conf, {"minReaderVersion": 1}) == "none"
    assert column_mapping_mode(conf, {"minReaderVersion": 2}) == "name"
    assert column_mapping_mode(conf, {"minReaderVersion": 3, "readerFeatures": ["deletionVectors"]}) == "none"
    assert column_mapping_mode(conf, {"minReaderVersion": 3, "readerFeatures": ["columnMapping"]}) == "name"


def test_invalid_mode() -> None:
    with pytest.raises(SchemaError):
        column_mapping_mode({"delta.columnMapping.mode": "bogus"})


def test_physical_name_and_id() -> None:
    f = StructField("a", PrimitiveType("long"), True, cm("col-a", 1))
    assert physical_name(f, "name") == "col-a"
    assert physical_name(f, "id") == "col-a"
    assert physical_name(f, "none") == "a"
    assert field_id(f) == 1
    assert field_id(StructField("b", PrimitiveType("long"))) is None
    assert physical_name(StructField("b", PrimitiveType("long")), "name") == "b"


def test_physical_schema_renames_nested() -> None:
    phys = to_physical_schema(nested_schema(), "name")
    assert phys.names == ["col-a", "col-s", "col-e", "col-m", "plain"]
    s = phys.fields[1].type
    assert isinstance(s, StructType) and s.names == ["col-x"]
    assert s.fields[0].type.names == ["col-d"]  # type: ignore[union-attr]
    e = phys.fields[2].type
    assert isinstance(e, ArrayType) and e.element_type.names == ["col-d"]  # type: ignore[union-attr]
    m = phys.fields[3].type
    assert isinstance(m, MapType) and m.value_type.names == ["col-d"]  # type: ignore[union-attr]
    assert field_id(phys.fields[0]) == 1  # ids kept
    assert to_physical_schema(nested_schema(), "none") == nested_schema()


@pytest.mark.parametrize("mode", ["id", "name"])
def test_physical_arrow_schema_field_ids(mode: str) -> None:
    arrow = to_physical_arrow_schema(nested_schema(), mode)
    assert arrow.names == ["col-a", "col-s", "col-e", "col-m", "plain"]
    assert arrow.field("col-a").metadata[b"PARQUET:field_id"] == b"1"
    assert b"PARQUET:field_id" not in (arrow.field("plain").metadata or {})
    s = arrow.field("col-s").type
    assert s.field(0).metadata[b"PARQUET:field_id"] == b"3"
    assert s.field(0).type.field(0).name == "col-d"
    assert s.field(0).type.field(0).metadata[b"PARQUET:field_id"] == b"5"
    elem = arrow.field("col-e").type.value_type
    assert elem.field(0).name == "col-d" and elem.field(0).metadata[b"PARQUET:field_id"] == b"5"
    item = arrow.field("col-m").type.item_type
    assert item.field(0).metadata[b"PARQUET:field_id"] == b"5"
    assert arrow.field("col-m").type.key_field.nullable is False


def test_physical_arrow_schema_written_ids_survive_parquet(tmp_path: object) -> None:
    import pyarrow.parquet as pq

    schema = to_physical_arrow_schema(nested_schema(), "id")
    table = pa.Table.from_pylist([], schema=schema)
    path = f"{tmp_path}/f.parquet"
    pq.write_table(table, path)
    back = pq.read_schema(path)
    assert back.field("col-a").metadata[b"PARQUET:field_id"] == b"1"
    assert back.field("col-s").type.field(0).metadata[b"PARQUET:field_id"] == b"3"


def test_logical_to_physical_names() -> None:
    names = logical_to_physical_names(nested_schema(), "name")
    assert names[("a",)] == ("col-a",)
    assert names[("s",)] == ("col-s",)
    assert names[("s", "x")] == ("col-s", "col-x")
    assert names[("s", "x", "d")] == ("col-s", "col-x", "col-d")
    assert names[("e",)] == ("col-e",)
    assert names[("plain",)] == ("plain",)
    assert ("e", "d") not in names  # arrays end a path
    none = logical_to_physical_names(nested_schema(), "none")
    assert none[("s", "x", "d")] == ("s", "x", "d")
