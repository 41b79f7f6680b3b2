"""Per-file statistics collection (kernel/stats_collect.py).

Oracles: deltalake's stats for the same data (where it agrees with Spark), Spark's documented behaviour
(delta-spark `StatisticsCollection`, the dat tables' logs) where deltalake differs, and our own stats reader
(`kernel/stats.py`) which must read back exactly the bounds we meant.

Known, intended differences from deltalake 1.6.6 (we follow Spark):
- booleans: deltalake writes min/max, Spark (and we) only nullCount;
- binary, arrays, maps: Spark (and we) write nullCount, deltalake none;
- timestamp_ntz: deltalake `2021-01-01 00:00:00.123`, Spark `2021-01-01T00:00:00.123`;
- decimals: deltalake `-10.0` (a float), Spark `-10.00` (the column's scale);
- float: deltalake prints the float32 widened to double (`0.10000000149011612`), Spark the shortest (`0.1`);
- strings: deltalake truncates at 64 bytes (Parquet's rule, last char incremented), Spark at 32 chars + U+FFFD;
- NaN: deltalake ignores NaN in both bounds; Spark's max would be NaN, so we omit max when a NaN is present;
- key order: deltalake's is arbitrary, ours is the schema's (Spark's).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltakernel.errors import SchemaError
from deltakernel.kernel.schema.arrow import from_arrow_schema
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
from deltakernel.kernel.stats.collect import (
    StatsCollector,
    collect_stats,
    parse_stats_columns,
    stats_schema,
    truncate_max_string,
    truncate_min_string,
)
from deltakernel.kernel.stats.parse import parse_stats

UTC = dt.timezone.utc


def _sample() -> pa.Table:
    return pa.table({
        "i8": pa.array([1, None, 3], pa.int8()),
        "i16": pa.array([-300, 5, None], pa.int16()),
        "i32": pa.array([7, 2**31 - 1, -(2**31)], pa.int32()),
        "i64": pa.array([2**62, None, -5], pa.int64()),
        "f32": pa.array([0.5, None, -2.5], pa.float32()),
        "f64": pa.array([1e300, -0.0, 2.25], pa.float64()),
        "s": pa.array(["b", None, "a"]),
        "b": pa.array([True, None, False]),
        "bin": pa.array([b"a", None, b"c"]),
        "d": pa.array([dt.date(2020, 1, 1), None, dt.date(1960, 5, 5)]),
        "ts": pa.array([dt.datetime(2021, 1, 1, 0, 0, 0, 123456), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                        None], pa.timestamp("us", tz="UTC")),
        "tsn": pa.array([dt.datetime(2021, 1, 1, 0, 0, 0, 123456), None, dt.datetime(1999, 1, 1)],
                        pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-10.00"), None], pa.decimal128(10, 2)),
        "st": pa.array([{"a": 1, "b": {"c": "x"}}, None, {"a": None, "b": None}]),
        "l": pa.array([[1, 2], None, []]),
        "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int64())),
    })


def _ours(table: pa.Table, **kw: object) -> dict:
    return json.loads(collect_stats(table, from_arrow_schema(table.schema), **kw))  # type: ignore[arg-type]


def _deltalake_stats(table: pa.Table, path: Path) -> dict:
    import deltalake

    deltalake.write_deltalake(str(path), table)
    for line in (path / "_delta_log" / "00000000000000000000.json").read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            return json.loads(action["add"]["stats"])
    raise AssertionError("no add action")


def _walk(doc: dict, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    out: dict[tuple[str, ...], object] = {}
    for k, v in doc.items():
        if isinstance(v, dict):
            out.update(_walk(v, (*prefix, k)))
        else:
            out[(*prefix, k)] = v
    return out


def test_matches_deltalake_field_by_field(tmp_path: Path) -> None:
    table = _sample()
    ours = _ours(table)
    theirs = _deltalake_stats(table, tmp_path / "t")
    assert ours["numRecords"] == theirs["numRecords"] == 3
    for section in ("minValues", "maxValues", "nullCount"):
        mine, other = _walk(ours[section]), _walk(theirs[section])
        for key, value in other.items():
            col = key[0]
            if col == "b" and section != "nullCount":  # deltalake writes boolean bounds, Spark does not
                assert key not in mine
                continue
            if value is None:  # deltalake writes explicit nulls for unusable bounds
                continue
            assert key in mine, (section, key)
            if section == "nullCount":
                assert mine[key] == value, (section, key, mine[key], value)
            elif col == "tsn":
                assert dt.datetime.fromisoformat(str(mine[key])) == dt.datetime.fromisoformat(str(value))
            elif col == "f32":
                assert np.float32(mine[key]) == np.float32(value)
            elif col == "dec":
                assert decimal.Decimal(str(mine[key])) == decimal.Decimal(str(value))
            else:
                assert mine[key] == value, (section, key, mine[key], value)
        extra = set(mine) - set(other)
        if section == "nullCount":
            assert extra == {("bin",), ("l",), ("m",)}  # Spark counts nulls of every indexed leaf
        else:
            assert extra == set(), extra


def test_spark_formats_exactly() -> None:
    text = collect_stats(_sample(), from_arrow_schema(_sample().schema))
    assert text.startswith('{"numRecords":3,"minValues":{"i8":1,"i16":-300,"i32":-2147483648,')
    doc = json.loads(text, parse_float=decimal.Decimal)
    mins, maxs = doc["minValues"], doc["maxValues"]
    assert '"dec":-10.00' in text and '"dec":1.50' in text  # the column's scale, as BigDecimal prints it
    assert mins["ts"] == "1969-12-31T23:59:59.999Z"  # floored to ms, even before the epoch
    assert maxs["ts"] == "2021-01-01T00:00:00.123Z"
    assert mins["tsn"] == "1999-01-01T00:00:00.000" and maxs["tsn"] == "2021-01-01T00:00:00.123"
    assert mins["d"] == "1960-05-05" and maxs["d"] == "2020-01-01"
    assert "b" not in mins and "bin" not in mins and "l" not in mins  # no bounds for unordered types
    assert mins["st"] == {"a": 1, "b": {"c": "x"}}
    assert doc["nullCount"]["st"] == {"a": 2, "b": {"c": 2}}  # null parent struct -> null leaves
    assert doc["nullCount"]["l"] == 1 and doc["nullCount"]["m"] == 1
    assert "tightBounds" not in doc
    assert '"f32":0.5' in text and '"f32":-2.5' in text


def test_float_edge_cases() -> None:
    t = pa.table({
        "nan_some": pa.array([1.0, float("nan"), -1.0]),
        "nan_all": pa.array([float("nan"), None, float("nan")]),
        "infs": pa.array([float("-inf"), 2.0, float("inf")]),
        "zero": pa.array([-0.0, 0.0, None]),
        "f32": pa.array([0.1, 1e-7, 3.4e38], pa.float32()),
    })
    text = collect_stats(t, from_arrow_schema(t.schema))
    assert "NaN" not in text and "Infinity" not in text and "inf," not in text
    doc = json.loads(text)
    assert doc["minValues"]["nan_some"] == -1.0 and "nan_some" not in doc["maxValues"]
    assert "nan_all" not in doc["minValues"] and "nan_all" not in doc["maxValues"]
    assert "infs" not in doc["minValues"] and "infs" not in doc["maxValues"]
    assert doc["minValues"]["zero"] == 0.0 and doc["maxValues"]["zero"] == 0.0
    assert doc["nullCount"] == {"nan_some": 0, "nan_all": 1, "infs": 0, "zero": 1, "f32": 0}
    assert '"f32":1e-07' in text and '"f32":3.4e+38' in text  # shortest float32 text, valid JSON


def test_strings_truncated_like_spark() -> None:
    long_a, long_b = "a" * 40, "b" * 40 + "x"
    t = pa.table({"s": [long_a, long_b, None]})
    doc = _ours(t)
    assert doc["minValues"]["s"] == "a" * 32
    assert doc["maxValues"]["s"] == "b" * 32 + "\ufffd"
    assert truncate_max_string("abcz", 2) == "ab\ufffd"
    assert truncate_max_string("ab\ufffd\ufffdz", 2) == "ab\U0010ffff"  # next char >= U+FFFD: U+10FFFF
    assert truncate_max_string("ab\ufffd", 2) == "ab\U0010ffff"
    assert truncate_max_string("ab\U0010ffff\U0010ffff", 2) == "ab\U0010ffff\U0010ffff"
    assert truncate_max_string("ab\U0010ffffq", 2) == "ab\U0010ffff\U0010ffff"
    assert truncate_max_string("ab", 2) == "ab"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=12), min_size=1, max_size=8), st.integers(0, 6))
def test_truncated_bounds_stay_bounds(values: list[str], prefix: int) -> None:
    lo = truncate_min_string(min(values), prefix)
    hi = truncate_max_string(max(values), prefix)
    for v in values:
        assert lo <= v <= hi
        assert lo.encode() <= v.encode() <= hi.encode()  # UTF-8 byte order (Spark's UTF8String) agrees


def test_timestamp_floor_and_out_of_range() -> None:
    t = pa.table({
        "ts": pa.array([-1, 1_999], pa.timestamp("us", tz="UTC")),
        "big": pa.array([0, 10**18], pa.timestamp("us", tz="UTC")),
    })
    doc = _ours(t)
    assert doc["minValues"]["ts"] == "1969-12-31T23:59:59.999Z"
    assert doc["maxValues"]["ts"] == "1970-01-01T00:00:00.001Z"
    assert doc["minValues"]["big"] == "1970-01-01T00:00:00.000Z" and "big" not in doc["maxValues"]


def test_column_selection_num_indexed_cols() -> None:
    schema = from_arrow_schema(pa.schema([
        ("p", pa.string()), ("a", pa.int64()),
        ("s", pa.struct([("x", pa.int64()), ("y", pa.list_(pa.int64())), ("z", pa.int64())])),
        ("c", pa.string()),
    ]))
    names = lambda s: [f.name for f in s.fields]
    sub = stats_schema(schema, {"delta.dataSkippingNumIndexedCols": "3"}, ["p"])
    assert names(sub) == ["a", "s"] and names(sub.field("s").type) == ["x", "y"]  # type: ignore[arg-type]
    assert names(stats_schema(schema, {"delta.dataSkippingNumIndexedCols": "-1"}, ["p"])) == ["a", "s", "c"]
    assert names(stats_schema(schema, {"delta.dataSkippingNumIndexedCols": "0"}, [])) == []
    assert names(stats_schema(schema, {}, [])) == ["p", "a", "s", "c"]
    t = pa.table({"p": ["x"], "a": [1], "s": [{"x": 2, "y": [1], "z": 3}], "c": ["q"]})
    doc = json.loads(collect_stats(t, schema, configuration={"delta.dataSkippingNumIndexedCols": "3"},
                                   partition_columns=["p"]))
    assert doc == {"numRecords": 1, "minValues": {"a": 1, "s": {"x": 2}}, "maxValues": {"a": 1, "s": {"x": 2}},
                   "nullCount": {"a": 0, "s": {"x": 0, "y": 0}}}
    doc0 = json.loads(collect_stats(t, schema, configuration={"delta.dataSkippingNumIndexedCols": "0"}))
    assert doc0 == {"numRecords": 1}


def test_column_selection_stats_columns() -> None:
    assert parse_stats_columns("a, b.c , `x.y`.z, `q``r`") == [("a",), ("b", "c"), ("x.y", "z"), ("q`r",)]
    assert parse_stats_columns("  ") == []
    for bad in ("a,,b", "`a", "a.`b`c"):
        with pytest.raises(SchemaError):
            parse_stats_columns(bad)
    schema = from_arrow_schema(pa.schema([
        ("a", pa.int64()), ("B", pa.struct([("c", pa.int64()), ("d", pa.string())])), ("x.y", pa.int64()),
        ("e", pa.int64()),
    ]))
    conf = {"delta.dataSkippingStatsColumns": "`x.y`, b.C, e", "delta.dataSkippingNumIndexedCols": "1"}
    t = pa.table({"a": [1], "B": [{"c": 5, "d": "z"}], "x.y": [7], "e": [9]})
    doc = json.loads(collect_stats(t, schema, configuration=conf))
    assert doc["minValues"] == {"B": {"c": 5}, "x.y": 7, "e": 9}  # schema order, case-insensitive match
    whole = json.loads(collect_stats(t, schema, configuration={"delta.dataSkippingStatsColumns": "b"}))
    assert whole["nullCount"] == {"B": {"c": 0, "d": 0}}


def test_column_mapping_physical_names_and_tight_bounds() -> None:
    schema = StructType((
        StructField("a", PrimitiveType("long"), True,
                    {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-a"}),
        StructField("s", StructType((
            StructField("x", PrimitiveType("string"), True,
                        {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-x"}),
        )), True, {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-s"}),
    ))
    t = pa.table({"a": [1, 2], "s": [{"x": "q"}, None]})
    doc = json.loads(collect_stats(t, schema, "name", {"delta.enableDeletionVectors": "true"}))
    assert doc == {"numRecords": 2, "minValues": {"col-a": 1, "col-s": {"col-x": "q"}},
                   "maxValues": {"col-a": 2, "col-s": {"col-x": "q"}},
                   "nullCount": {"col-a": 0, "col-s": {"col-x": 1}}, "tightBounds": True}
    assert list(doc) == ["numRecords", "minValues", "maxValues", "nullCount", "tightBounds"]
    parsed = parse_stats(pa.array([json.dumps(doc)]), schema, "name")
    assert parsed.min_values[("s", "x")].to_pylist() == ["q"]
    assert parsed.null_count[("s", "x")].to_pylist() == [1]


def test_all_null_columns_keep_empty_sections() -> None:
    t = pa.table({"a": pa.array([None, None], pa.int64()), "s": pa.array([None, None],
                                                                        pa.struct([("x", pa.int32())]))})
    doc = _ours(t)
    assert doc == {"numRecords": 2, "minValues": {"s": {}}, "maxValues": {"s": {}},
                   "nullCount": {"a": 2, "s": {"x": 2}}}


def test_missing_columns_count_as_null() -> None:
    schema = from_arrow_schema(pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    c = StatsCollector(schema)
    c.update(pa.record_batch({"a": [1, 2]}))
    assert json.loads(c.to_json())["nullCount"] == {"a": 0, "b": 2}


def test_incremental_equals_one_shot_and_reader_round_trip() -> None:
    rng = np.random.default_rng(1)
    n = 5000
    t = pa.table({
        "i": pa.array(rng.integers(-10**6, 10**6, n)),
        "f": pa.array(np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n))),
        "s": pa.array([f"v{x}" for x in rng.integers(0, 10**9, n)]),
        "ts": pa.array(rng.integers(-10**15, 10**15, n), pa.timestamp("us", tz="UTC")),
        "st": pa.array([{"k": int(x)} if x % 7 else None for x in rng.integers(0, 100, n)]),
    })
    schema = from_arrow_schema(t.schema)
    one = collect_stats(t, schema)
    inc = StatsCollector(schema)
    for b in t.to_batches(max_chunksize=333):
        inc.update(b)
    assert inc.to_json() == one
    chunked = StatsCollector(schema)
    chunked.update(pa.Table.from_batches(t.to_batches(max_chunksize=777)))
    assert chunked.to_json() == one
    stats = parse_stats(pa.array([one]), schema)
    assert stats.min_values[("i",)][0].as_py() == pc_min(t["i"])
    ts_min = stats.min_values[("ts",)][0].as_py()
    real_min = t["ts"].cast(pa.int64()).to_numpy().min()
    assert ts_min == dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=int(real_min // 1000 * 1000))
    assert stats.null_count[("st", "k")][0].as_py() == t["st"].null_count
    assert math.isclose(stats.min_values[("f",)][0].as_py(), np.nanmin(t["f"].to_numpy(zero_copy_only=False)))
    assert stats.max_values[("f",)][0].as_py() is None  # NaN present: no max


def pc_min(arr: pa.ChunkedArray) -> int:
    return int(np.min(arr.to_numpy()))
