"""Stats parsing: vectorized JSON path, per-file fallback, column mapping, checkpoint stats_parsed."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa

from deltakernel.kernel.schema.types import DecimalType, PrimitiveType, StructField, StructType
from deltakernel.kernel.stats.parse import parse_stats, stats_from_struct

UTC = dt.timezone.utc
SCHEMA = StructType((
    StructField("a", PrimitiveType("integer")),
    StructField("f", PrimitiveType("double")),
    StructField("s", PrimitiveType("string")),
    StructField("t", PrimitiveType("timestamp")),
    StructField("tn", PrimitiveType("timestamp_ntz")),
    StructField("d", PrimitiveType("date")),
    StructField("dec", DecimalType(10, 2)),
    StructField("n", StructType((StructField("x", PrimitiveType("long")),))),
))


def _js(**kw: object) -> str:
    return json.dumps(kw)


def test_parse_typed_values_and_scatter() -> None:
    good = _js(numRecords=3,
               minValues={"a": 1, "f": -1.5, "s": "ab", "t": "2021-01-01T00:00:00.000Z", "tn": "2021-01-01T01:02:03.004",
                          "d": "2021-01-02", "dec": 1.23, "n": {"x": -5}},
               maxValues={"a": 9, "f": 2.5, "s": "zz", "t": "2021-01-01T02:00:00.123+02:00", "d": "2021-02-01",
                          "dec": 99.5, "n": {"x": 5}},
               nullCount={"a": 0, "s": 1, "n": {"x": 2}}, extra={"ignored": True})
    stats = parse_stats(pa.array([None, good, "", good]), SCHEMA, "none")
    assert stats.num_records.to_pylist() == [None, 3, None, 3]
    assert stats.tight_bounds.to_pylist() == [None, True, None, True]
    assert stats.min_values[("a",)].type == pa.int32()
    assert stats.min_values[("a",)].to_pylist() == [None, 1, None, 1]
    assert stats.max_values[("t",)][1].as_py() == dt.datetime(2021, 1, 1, 0, 0, 0, 123000, tzinfo=UTC)
    assert stats.min_values[("tn",)][1].as_py() == dt.datetime(2021, 1, 1, 1, 2, 3, 4000)
    assert stats.min_values[("d",)][1].as_py() == dt.date(2021, 1, 2)
    assert stats.max_values[("dec",)][1].as_py() == decimal.Decimal("99.50")
    assert stats.min_values[("n", "x")].to_pylist() == [None, -5, None, -5]
    assert stats.null_count[("n", "x")].to_pylist() == [None, 2, None, 2]
    assert stats.null_count[("f",)].to_pylist() == [None, None, None, None]


def test_nan_and_odd_values_fall_back_per_file() -> None:
    lines = [
        _js(numRecords=2, minValues={"f": "NaN", "a": 1}, maxValues={"f": 3.0, "a": 1.0}, nullCount={"a": 0}),
        '{"numRecords": 4, "minValues": {"f": NaN}, "maxValues": {"f": Infinity}, "tightBounds": false}',
        "not json",
        _js(numRecords=1, minValues={"a": 99999999999}, maxValues={"dec": 1.234, "t": "garbage"}),
    ]
    stats = parse_stats(pa.array(lines), SCHEMA, "none")
    assert stats.num_records.to_pylist() == [2, 4, None, 1]
    assert stats.tight_bounds.to_pylist() == [True, False, None, True]
    assert stats.min_values[("f",)].to_pylist() == [None, None, None, None]  # NaN carries no bound
    assert stats.max_values[("f",)].to_pylist() == [3.0, float("inf"), None, None]
    assert stats.max_values[("a",)].to_pylist() == [1, None, None, None]
    assert stats.min_values[("a",)].to_pylist() == [1, None, None, None]  # out of int32 range: unknown
    assert stats.max_values[("dec",)].to_pylist() == [None, None, None, None]  # would need rounding
    assert stats.max_values[("t",)].to_pylist() == [None, None, None, None]


def test_nan_in_fast_path_is_nulled() -> None:
    stats = parse_stats(pa.array([_js(numRecords=1, minValues={"f": 1.0}, maxValues={"f": 2.0})]), SCHEMA)
    assert stats.max_values[("f",)].to_pylist() == [2.0]


def test_column_mapping_uses_physical_names_and_columns_filter() -> None:
    schema = StructType((
        StructField("a", PrimitiveType("long"), metadata={"delta.columnMapping.physicalName": "col-1"}),
        StructField("b", PrimitiveType("long"), metadata={"delta.columnMapping.physicalName": "col-2"}),
    ))
    line = _js(numRecords=1, minValues={"col-1": 5, "a": 100}, maxValues={"col-1": 6}, nullCount={"col-1": 0})
    stats = parse_stats(pa.array([line]), schema, "name", columns={("a",)})
    assert stats.min_values[("a",)].to_pylist() == [5]
    assert ("b",) not in stats.min_values
    stats_none = parse_stats(pa.array([line]), schema, "none")
    assert stats_none.min_values[("a",)].to_pylist() == [100]


def test_all_null_or_empty_input() -> None:
    stats = parse_stats(pa.array([None, None], pa.string()), SCHEMA)
    assert stats.num_records.to_pylist() == [None, None]
    assert parse_stats(pa.array([], pa.string()), SCHEMA).num_records.to_pylist() == []
    chunked = pa.chunked_array([pa.array([_js(numRecords=1)]), pa.array([_js(numRecords=2)])])
    assert parse_stats(chunked, SCHEMA).num_records.to_pylist() == [1, 2]


def test_pretty_printed_json_with_newlines() -> None:
    line = json.dumps({"numRecords": 7, "minValues": {"a": 1}}, indent=2)
    assert parse_stats(pa.array([line, None]), SCHEMA).num_records.to_pylist() == [7, None]


def test_stats_from_struct() -> None:
    mins = pa.array([{"a": 1, "t": dt.datetime(2021, 1, 1, tzinfo=UTC)}, None],
                    pa.struct([("a", pa.int32()), ("t", pa.timestamp("us", tz="UTC"))]))
    sp = pa.StructArray.from_arrays(
        [pa.array([3, None], pa.int64()), mins, mins, pa.array([{"a": 0}, None], pa.struct([("a", pa.int64())]))],
        ["numRecords", "minValues", "maxValues", "nullCount"],
        mask=pa.array([False, True]),
    )
    stats = stats_from_struct(sp, SCHEMA, "none")
    assert stats.num_records.to_pylist() == [3, None]
    assert stats.tight_bounds.to_pylist() == [True, None]
    assert stats.min_values[("a",)].to_pylist() == [1, None]
    assert stats.null_count[("a",)].to_pylist() == [0, None]
    assert ("s",) not in stats.min_values
