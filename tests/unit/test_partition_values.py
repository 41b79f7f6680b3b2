"""Partition value parsing (scalar and vectorized) and serialization round trips."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltakernel.errors import SchemaError
from deltakernel.kernel.scan.partition_values import (
    parse_partition_array,
    parse_partition_value,
    partition_columns_table,
    serialize_partition_value,
)
from deltakernel.kernel.schema import DecimalType, PrimitiveType, StructField, to_arrow_type
from deltakernel.kernel.schema.types import DataType

P = PrimitiveType
UTC = dt.timezone.utc

CASES: list[tuple[DataType, str, Any]] = [
    (P("string"), "hello", "hello"),
    (P("string"), "A/A", "A/A"),
    (P("long"), "-9223372036854775808", -(2**63)),
    (P("integer"), "42", 42),
    (P("short"), "-7", -7),
    (P("byte"), "127", 127),
    (P("double"), "1.5", 1.5),
    (P("double"), "-Infinity", -math.inf),
    (P("float"), "0.25", 0.25),
    (P("boolean"), "true", True),
    (P("boolean"), "false", False),
    (P("date"), "1970-01-01", dt.date(1970, 1, 1)),
    (P("date"), "2023-12-31", dt.date(2023, 12, 31)),
    (P("timestamp"), "1970-01-01 00:00:00", dt.datetime(1970, 1, 1, tzinfo=UTC)),
    (P("timestamp"), "1970-01-02 08:45:00.123456", dt.datetime(1970, 1, 2, 8, 45, 0, 123456, tzinfo=UTC)),
    (P("timestamp"), "1970-01-01T00:00:00.123456Z", dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)),
    (P("timestamp"), "2000-01-01T02:00:00+02:00", dt.datetime(2000, 1, 1, tzinfo=UTC)),
    (P("timestamp"), "9999-12-31 23:59:59.999999", dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    (P("timestamp_ntz"), "2021-07-01 08:43:28.123", dt.datetime(2021, 7, 1, 8, 43, 28, 123000)),
    (P("timestamp_ntz"), "0001-01-01 00:00:00", dt.datetime(1, 1, 1)),
    (DecimalType(38, 18), "12.000000000000000000", decimal.Decimal("12.000000000000000000")),
    (DecimalType(10, 2), "-3.5", decimal.Decimal("-3.50")),
    (P("binary"), "\u0001\u0002\u0003", b"\x01\x02\x03"),
    (P("binary"), "😈", "😈".encode()),
]


@pytest.mark.parametrize("dtype,raw,expected", CASES)
def test_parse_scalar_and_vectorized_agree(dtype: DataType, raw: str, expected: Any) -> None:
    assert parse_partition_value(raw, dtype) == expected
    arr = parse_partition_array(pa.array([raw, None, ""], pa.string()), dtype)
    assert arr.type == to_arrow_type(dtype)
    assert arr.to_pylist() == [expected, None, None]


@pytest.mark.parametrize("dtype", sorted({c[0] for c in CASES}, key=repr) + [P("void")])
def test_empty_and_null_are_null(dtype: DataType) -> None:
    assert parse_partition_value("", dtype) is None
    assert parse_partition_value(None, dtype) is None
    arr = parse_partition_array(pa.array(["", None], pa.string()), dtype)
    assert arr.null_count == 2


def test_nan() -> None:
    assert math.isnan(parse_partition_value("NaN", P("double")))
    assert math.isnan(parse_partition_array(pa.array(["NaN"]), P("double"))[0].as_py())


def test_mixed_timestamp_formats_in_one_column() -> None:
    raw = pa.array(["1970-01-01 00:00:01", "1970-01-01T00:00:02.5Z", None, "1970-01-01T01:00:03+01:00"])
    arr = parse_partition_array(raw, P("timestamp"))
    assert arr.type == pa.timestamp("us", tz="UTC")
    assert arr.cast(pa.int64()).to_pylist() == [1_000_000, 2_500_000, None, 3_000_000]


def test_fallback_for_shapes_arrow_rejects() -> None:
    assert parse_partition_array(pa.array(["+5"]), P("integer")).to_pylist() == [5]
    ns = parse_partition_array(pa.array(["2020-01-01 00:00:00.123456789"]), P("timestamp_ntz"))
    assert ns.to_pylist() == [dt.datetime(2020, 1, 1, 0, 0, 0, 123456)]


@pytest.mark.parametrize(
    "raw,dtype",
    [
        ("abc", P("long")),
        ("300", P("byte")),
        ("maybe", P("boolean")),
        ("1.234", DecimalType(5, 2)),
        ("2020-13-01", P("date")),
        ("x", P("timestamp")),
    ],
)
def test_invalid_values_raise(raw: str, dtype: DataType) -> None:
    with pytest.raises(SchemaError):
        parse_partition_value(raw, dtype)
    with pytest.raises(SchemaError):
        parse_partition_array(pa.array([raw]), dtype)


def test_accepts_chunked_large_and_dictionary_input() -> None:
    chunked = pa.chunked_array([pa.array(["1"]), pa.array(["2", ""])])
    assert parse_partition_array(chunked, P("long")).to_pylist() == [1, 2, None]
    assert parse_partition_array(pa.array(["x"], pa.large_string()), P("string")).type == pa.string()
    assert parse_partition_array(pa.array(["3"]).dictionary_encode(), P("short")).to_pylist() == [3]


def test_partition_columns_table_physical_names() -> None:
    fields = [
        StructField("date", P("date"), metadata={"delta.columnMapping.physicalName": "col-1"}),
        StructField("n", P("integer"), metadata={"delta.columnMapping.physicalName": "col-2"}),
        StructField("missing", P("string"), metadata={"delta.columnMapping.physicalName": "col-3"}),
    ]
    raw = pa.array(
        [{"col-1": "2020-01-01", "col-2": "1"}, {"col-1": None, "col-2": ""}, None],
        pa.struct([("col-1", pa.string()), ("col-2", pa.string())]),
    )
    out = partition_columns_table(raw, fields, "name")
    assert list(out) == ["date", "n", "missing"]
    assert out["date"].to_pylist() == [dt.date(2020, 1, 1), None, None]
    assert out["n"].to_pylist() == [1, None, None]
    assert out["missing"].type == pa.string() and out["missing"].null_count == 3
    table_out = partition_columns_table(pa.table({"date": ["2020-01-02"], "N": ["4"]}), fields[:2], "none")
    assert table_out["date"].to_pylist() == [dt.date(2020, 1, 2)]
    assert table_out["n"].to_pylist() == [4]
    chunked = pa.chunked_array([raw.slice(0, 1), raw.slice(1)])
    assert partition_columns_table(chunked, fields, "name")["n"].to_pylist() == [1, None, None]


# ----------------------------------------------------------------------------- serialization
def test_serialize_examples() -> None:
    assert serialize_partition_value(None, P("long")) is None
    assert serialize_partition_value(5, P("long")) == "5"
    assert serialize_partition_value(True, P("boolean")) == "true"
    assert serialize_partition_value(dt.date(1, 2, 3), P("date")) == "0001-02-03"
    ts = dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    assert serialize_partition_value(ts, P("timestamp")) == "1970-01-01T00:00:00.123456Z"
    assert (
        serialize_partition_value(dt.datetime(2021, 7, 1, 8), P("timestamp_ntz"))
        == "2021-07-01 08:00:00.000000"
    )
    assert serialize_partition_value(decimal.Decimal("1.5"), DecimalType(5, 2)) == "1.50"
    assert serialize_partition_value(float("inf"), P("double")) == "Infinity"
    assert serialize_partition_value(b"\x01\x02", P("binary")) == "\u0001\u0002"
    assert serialize_partition_value("", P("string")) is None
    with pytest.raises(SchemaError):
        serialize_partition_value(decimal.Decimal("1.234"), DecimalType(5, 2))


def _utc_datetimes() -> st.SearchStrategy[dt.datetime]:
    return st.datetimes(
        min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    )


VALUE_STRATEGIES: list[tuple[DataType, st.SearchStrategy[Any]]] = [
    (P("string"), st.text(min_size=1)),
    (P("long"), st.integers(-(2**63), 2**63 - 1)),
    (P("integer"), st.integers(-(2**31), 2**31 - 1)),
    (P("short"), st.integers(-(2**15), 2**15 - 1)),
    (P("byte"), st.integers(-128, 127)),
    (P("double"), st.floats(allow_nan=False)),
    (P("float"), st.floats(width=32, allow_nan=False)),
    (P("boolean"), st.booleans()),
    (P("date"), st.dates()),
    (P("timestamp"), _utc_datetimes().map(lambda d: d.replace(tzinfo=UTC))),
    (P("timestamp_ntz"), _utc_datetimes()),
    (
        DecimalType(12, 3),
        st.decimals(
            min_value=-(10**9) + 1, max_value=10**9 - 1, places=3, allow_nan=False, allow_infinity=False
        ),
    ),
    (P("binary"), st.binary(min_size=1)),
]


@pytest.mark.parametrize("dtype,strategy", VALUE_STRATEGIES, ids=[repr(d) for d, _ in VALUE_STRATEGIES])
def test_serialize_parse_round_trip(dtype: DataType, strategy: st.SearchStrategy[Any]) -> None:
    @settings(max_examples=150, deadline=None)
    @given(values=st.lists(st.one_of(st.none(), strategy), max_size=8))
    def check(values: list[Any]) -> None:
        raws = [serialize_partition_value(v, dtype) for v in values]
        assert [parse_partition_value(r, dtype) for r in raws] == values
        if dtype == P("binary") and any(v is not None and _not_utf8(v) for v in values):
            return  # non-UTF-8 bytes only survive as Python surrogates, not in an Arrow string array
        assert parse_partition_array(pa.array(raws, pa.string()), dtype).to_pylist() == values

    check()


def _not_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True
