"""conform_table / conform_batch: matching, renaming, widening, missing (nested) fields."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel.errors import SchemaError
from deltakernel.kernel.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    conform_batch,
    conform_table,
    parse_schema_string,
    to_arrow_schema,
    to_physical_arrow_schema,
)

CORPUS = Path("/work/shared/conformance/tables")
P = PrimitiveType


def cm(name: str, fid: int) -> dict[str, object]:
    return {"delta.columnMapping.id": fid, "delta.columnMapping.physicalName": name}


def test_missing_and_extra_columns_and_order() -> None:
    logical = StructType(
        (StructField("b", P("string")), StructField("a", P("long")), StructField("z", P("date")))
    )
    file_table = pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "y"], "extra": [1.0, 2.0]})
    out = conform_table(file_table, logical, "none")
    assert out.schema == to_arrow_schema(logical, include_metadata=False)
    assert out.to_pydict() == {"b": ["x", "y"], "a": [1, 2], "z": [None, None]}


def test_case_insensitive_match() -> None:
    logical = StructType((StructField("Name", P("string")),))
    out = conform_table(pa.table({"name": ["q"]}), logical, "none")
    assert out.to_pydict() == {"Name": ["q"]}


def test_widening() -> None:
    logical = StructType(
        (
            StructField("b2s", P("short")),
            StructField("i2l", P("long")),
            StructField("f2d", P("double")),
            StructField("i2d", P("double")),
            StructField("i2dec", DecimalType(11, 1)),
            StructField("dec", DecimalType(20, 5)),
            StructField("d2ts", P("timestamp_ntz")),
            StructField("u8", P("short")),
        )
    )
    file_table = pa.table(
        {
            "b2s": pa.array([1, None], pa.int8()),
            "i2l": pa.array([2**31 - 1, 0], pa.int32()),
            "f2d": pa.array([1.5, None], pa.float32()),
            "i2d": pa.array([7, 8], pa.int16()),
            "i2dec": pa.array([3, -4], pa.int32()),
            "dec": pa.array([decimal.Decimal("67.89"), None], pa.decimal128(10, 2)),
            "d2ts": pa.array([dt.date(2024, 9, 9), None], pa.date32()),
            "u8": pa.array([255, 0], pa.uint8()),
        }
    )
    out = conform_table(file_table, logical, "none")
    assert out.schema == to_arrow_schema(logical, include_metadata=False)
    assert out.to_pydict() == {
        "b2s": [1, None],
        "i2l": [2**31 - 1, 0],
        "f2d": [1.5, None],
        "i2d": [7.0, 8.0],
        "i2dec": [decimal.Decimal("3.0"), decimal.Decimal("-4.0")],
        "dec": [decimal.Decimal("67.89000"), None],
        "d2ts": [dt.datetime(2024, 9, 9), None],
        "u8": [255, 0],
    }


def test_timestamps_of_other_units() -> None:
    logical = StructType((StructField("ts", P("timestamp")), StructField("ntz", P("timestamp_ntz"))))
    ns = pa.array([1_000_123_456_789, None], pa.timestamp("ns"))  # INT96 reads as naive ns
    ms = pa.array([1_000, 2_000], pa.timestamp("ms", tz="America/New_York"))
    out = conform_table(pa.table({"ts": ns, "ntz": ms}), logical, "none")
    assert out.schema.field("ts").type == pa.timestamp("us", tz="UTC")
    assert out.schema.field("ntz").type == pa.timestamp("us")
    assert out.column("ts").cast(pa.int64()).to_pylist() == [1_000_123_456, None]
    assert out.column("ntz").cast(pa.int64()).to_pylist() == [1_000_000, 2_000_000]


def test_year_9999_int96_style_us() -> None:
    logical = StructType((StructField("ts", P("timestamp")),))
    v = dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    out = conform_table(pa.table({"ts": pa.array([v], pa.timestamp("us"))}), logical, "none")
    assert out.column("ts").to_pylist() == [v.replace(tzinfo=dt.timezone.utc)]


def test_string_binary_dictionary_normalised() -> None:
    logical = StructType(
        (StructField("s", P("string")), StructField("b", P("binary")), StructField("d", P("string")))
    )
    table = pa.table(
        {
            "s": pa.array(["a", None], pa.large_string()),
            "b": pa.array([b"x", b"y"], pa.large_binary()),
            "d": pa.array(["p", "q"]).dictionary_encode(),
        }
    )
    out = conform_table(table, logical, "none")
    assert out.schema == to_arrow_schema(logical, include_metadata=False)
    assert out.to_pydict() == {"s": ["a", None], "b": [b"x", b"y"], "d": ["p", "q"]}
    sv = conform_table(
        pa.table({"s": pa.array(["v"], pa.string_view())}), StructType(logical.fields[:1]), "none"
    )
    assert sv.column("s").type == pa.string()


def test_nested_missing_fields_and_renames_name_mode() -> None:
    leaf = StructType(
        (
            StructField("d", P("integer"), True, cm("col-d", 3)),
            StructField("new", P("string"), True, cm("col-new", 4)),
        )
    )
    logical = StructType(
        (
            StructField("s", leaf, True, cm("col-s", 1)),
            StructField("arr", ArrayType(leaf), True, cm("col-arr", 2)),
            StructField("m", MapType(P("string"), leaf), True, cm("col-m", 5)),
        )
    )
    old_struct = pa.struct([pa.field("col-d", pa.int16())])
    file_table = pa.table(
        {
            "col-s": pa.array([{"col-d": 1}, None], old_struct),
            "col-arr": pa.array([[{"col-d": 2}, None], None], pa.list_(old_struct)),
            "col-m": pa.array([[("k", {"col-d": 3})], None], pa.map_(pa.string(), old_struct)),
        }
    )
    out = conform_table(file_table, logical, "name")
    assert out.schema == to_arrow_schema(logical, include_metadata=False)
    assert out.to_pylist() == [
        {
            "s": {"d": 1, "new": None},
            "arr": [{"d": 2, "new": None}, None],
            "m": [("k", {"d": 3, "new": None})],
        },
        {"s": None, "arr": None, "m": None},
    ]


def test_sliced_and_chunked_nested_input() -> None:
    leaf = StructType((StructField("x", P("long")),))
    logical = StructType((StructField("l", ArrayType(leaf)), StructField("s", leaf)))
    st = pa.struct([pa.field("x", pa.int32())])
    chunk1 = pa.record_batch(
        {
            "l": pa.array([[{"x": 1}], None, [{"x": 2}, {"x": 3}]], pa.list_(st)),
            "s": pa.array([{"x": 1}, None, {"x": 9}], st),
        }
    ).slice(1)
    chunk2 = pa.record_batch({"l": pa.array([[]], pa.list_(st)), "s": pa.array([None], st)})
    out = conform_table(pa.Table.from_batches([chunk1, chunk2]), logical, "none")
    assert out.to_pylist() == [
        {"l": None, "s": None},
        {"l": [{"x": 2}, {"x": 3}], "s": {"x": 9}},
        {"l": [], "s": None},
    ]


def test_id_mode_matches_field_ids_first(tmp_path: Path) -> None:
    logical = StructType(
        (
            StructField("renamed", P("long"), True, cm("col-a", 1)),
            StructField("added", P("string"), True, cm("col-b", 2)),
        )
    )
    # the file names its column differently, but the id matches; col-b has a foreign id: absent
    schema = pa.schema(
        [
            pa.field("something-else", pa.int64(), metadata={"PARQUET:field_id": "1"}),
            pa.field("col-b", pa.string(), metadata={"PARQUET:field_id": "99"}),
        ]
    )
    pq.write_table(
        pa.Table.from_pylist([{"something-else": 5, "col-b": "no"}], schema=schema), tmp_path / "f.pq"
    )
    out = conform_table(pq.read_table(tmp_path / "f.pq"), logical, "id")
    assert out.to_pydict() == {"renamed": [5], "added": [None]}
    # files without any field ids fall back to physical names
    out2 = conform_table(pa.table({"col-a": [1], "col-b": ["y"]}), logical, "id")
    assert out2.to_pydict() == {"renamed": [1], "added": ["y"]}


def test_id_mode_nested_round_trip_through_parquet(tmp_path: Path) -> None:
    leaf = StructType((StructField("d", P("integer"), True, cm("col-d", 3)),))
    logical = StructType(
        (
            StructField("s", leaf, True, cm("col-s", 1)),
            StructField("e", ArrayType(leaf), True, cm("col-e", 2)),
        )
    )
    phys = to_physical_arrow_schema(logical, "id")
    data = pa.Table.from_pylist([{"col-s": {"col-d": 1}, "col-e": [{"col-d": 2}]}], schema=phys)
    pq.write_table(data, tmp_path / "f.parquet")
    out = conform_table(pq.read_table(tmp_path / "f.parquet"), logical, "id")
    assert out.to_pylist() == [{"s": {"d": 1}, "e": [{"d": 2}]}]


def test_variant_fields_any_order() -> None:
    logical = StructType((StructField("v", P("variant")),))
    file_type = pa.struct([pa.field("value", pa.binary()), pa.field("metadata", pa.binary())])
    out = conform_table(
        pa.table({"v": pa.array([{"value": b"\x0c\x01", "metadata": b"\x01\x00\x00"}], file_type)}),
        logical,
        "none",
    )
    assert out.column("v").to_pylist() == [{"metadata": b"\x01\x00\x00", "value": b"\x0c\x01"}]


def test_conform_batch_and_empty() -> None:
    logical = StructType((StructField("a", P("long")), StructField("b", P("string"))))
    batch = pa.record_batch({"a": pa.array([1], pa.int32())})
    out = conform_batch(batch, logical, "none")
    assert isinstance(out, pa.RecordBatch)
    assert out.to_pydict() == {"a": [1], "b": [None]}
    empty = conform_table(pa.table({"a": pa.array([], pa.int32())}), logical, "none")
    assert empty.num_rows == 0 and empty.schema.names == ["a", "b"]


def test_incompatible_type_raises() -> None:
    logical = StructType((StructField("a", P("integer")),))
    with pytest.raises(SchemaError):
        conform_table(pa.table({"a": pa.array([{"x": 1}])}), logical, "none")


def test_nullability_from_file_not_enforced() -> None:
    logical = StructType((StructField("a", P("long"), nullable=False),))
    out = conform_table(pa.table({"a": pa.array([1, 2], pa.int64())}), logical, "none")
    assert out.schema.field("a").nullable is False


def _schema_at_latest(log_dir: Path) -> StructType:
    schema = None
    for path in sorted(glob.glob(str(log_dir / "*.json"))):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and "metaData" in (a := json.loads(line)):
                    schema = parse_schema_string(a["metaData"]["schemaString"])
    assert schema is not None
    return schema


@pytest.mark.skipif(not (CORPUS / "dat/column_mapping").exists(), reason="corpus missing")
def test_corpus_column_mapping_name_mode() -> None:
    root = CORPUS / "dat/column_mapping"
    logical = _schema_at_latest(root / "delta/_delta_log")
    parts = [
        conform_table(pq.read_table(f), logical, "name")
        for f in sorted(glob.glob(str(root / "delta/*.parquet")))
    ]
    got = pa.concat_tables(parts)
    expected = pq.read_table(root / "expected/latest/table_content")
    assert got.schema.names == expected.schema.names == ["letter", "new_int", "date"]
    key = [("letter", "ascending"), ("new_int", "ascending")]
    assert got.sort_by(key).to_pylist() == expected.sort_by(key).to_pylist()


@pytest.mark.skipif(not (CORPUS / "kernel-rs/data/type-widening").exists(), reason="corpus missing")
def test_corpus_type_widening() -> None:
    root = CORPUS / "kernel-rs/data/type-widening"
    logical = _schema_at_latest(root / "_delta_log")
    target = to_arrow_schema(logical, include_metadata=False)
    for f in glob.glob(str(root / "*.parquet")):
        out = conform_table(pq.read_table(f), logical, "none")
        assert out.schema == target
    assert target.field("date_timestamp_ntz").type == pa.timestamp("us")
