"""Predicates and expressions as deltalake users write them, differential against deltalake 1.6.6.

The same call (DELETE / UPDATE / MERGE with typed literals `int'10'` / `date'2022-01-01'` / `decimal'1.5'`,
double-quoted case-preserving identifiers `"fooBar"` / `target."fooBar"`, `::` casts) runs on copies of one
table with deltalake and with deltakernel; the rows afterwards must be equal. Where deltalake itself fails on
a spelling (its file-skipping compares `Int64 <= Int32` for `id = int'2'`), deltakernel's result is compared
with deltalake's for the same predicate spelled without the typed literal.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
from deltakernel.errors import InvalidFilterError

deltalake = pytest.importorskip("deltalake")

TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, 4], pa.int64()),
        "fooBar": pa.array([10, 20, 30, 40], pa.int64()),
        "d": pa.array([dt.date(2022, 1, 1), dt.date(2022, 1, 2), dt.date(2022, 1, 3), None]),
        "ts": pa.array([dt.datetime(2022, 1, 1, 12)] * 4, pa.timestamp("us", "UTC")),
        "dec": pa.array([Decimal("1.50"), Decimal("2.50"), None, Decimal("-1.00")], pa.decimal128(10, 2)),
        "s": ["a", "b", "c", "d"],
        "p": ["x", "x", "y", "y"],
    }
)
SOURCE = pa.table(
    {"id": pa.array([2, 3, 9], pa.int64()), "fooBar": pa.array([200, 5, 900], pa.int64()), "s": ["B", "C", "Z"]}
)

Op = Callable[[Any], Any]


def _make(tmp_path: Path) -> tuple[str, str]:
    base = tmp_path / "base"
    deltalake.write_deltalake(str(base), TABLE, partition_by=["p"])
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    shutil.copytree(base, theirs)
    shutil.copytree(base, ours)
    return str(theirs), str(ours)


def _rows(path: str) -> list[dict]:
    return sorted(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def _merge(table: Any, predicate: str = "target.id = source.id") -> Any:
    return table.merge(SOURCE, predicate, source_alias="source", target_alias="target")


SAME: dict[str, Op] = {
    # double-quoted identifiers keep their case (DataFusion); deltakernel reads them as identifiers too
    "delete_dq": lambda t: t.delete('"fooBar" >= 30'),
    "delete_dq_cast": lambda t: t.delete('"fooBar"::int = 20'),
    "update_dq": lambda t: t.update(updates={"fooBar": '"fooBar" * 2'}, predicate='"fooBar" > 15'),
    "update_dq_key": lambda t: t.update(updates={'"fooBar"': "1"}, predicate="id = 1"),
    # `::` casts
    "delete_cast_date": lambda t: t.delete("d = '2022-01-02'::date"),
    "delete_cast_col": lambda t: t.delete("id::int = 3"),
    "update_cast_value": lambda t: t.update(updates={"fooBar": "'7'::bigint"}, predicate="id >= 3"),
    # typed literals where deltalake can evaluate them
    "delete_date_literal": lambda t: t.delete("d < date'2022-01-03'"),
    "delete_bigint_literal": lambda t: t.delete("\"fooBar\" > bigint'25'"),
    "update_typed_values": lambda t: t.update(
        updates={"fooBar": "int'5' + 1", "d": "date'2021-03-04'", "s": "string'lit'"}, predicate="id = 2"
    ),
    "update_decimal_value": lambda t: t.update(updates={"dec": "decimal'3.25'"}, predicate="id < 3"),
    "update_timestamp_value": lambda t: t.update(updates={"ts": "timestamp'2023-05-01T10:00:00Z'"}),
    "update_double_value": lambda t: t.update(updates={"fooBar": "cast(double'2.5' * 4 as bigint)"}),
    "update_bool_value": lambda t: t.update(updates={"s": "cast(boolean'true' as string)"}, predicate="p = 'y'"),
    # MERGE: conditions and SET values, qualified double-quoted identifiers
    "merge_dq": lambda t: (
        _merge(t, 'target.id = source.id and target."fooBar" < source."fooBar"')
        .when_matched_update({"fooBar": 'source."fooBar"'})
        .execute()
    ),
    "merge_dq_key": lambda t: _merge(t).when_matched_update({'"fooBar"': "source.\"fooBar\" + int'1'"}).execute(),
    "merge_typed_condition": lambda t: (
        _merge(t).when_matched_update({"d": "date'2024-02-02'"}, "target.d = '2022-01-02'::date").execute()
    ),
    "merge_typed_insert": lambda t: (
        _merge(t)
        .when_not_matched_insert({"id": "source.id", "fooBar": "bigint'7'", "d": "'2020-01-01'::date", "p": "'z'"})
        .execute()
    ),
    "merge_typed_by_source": lambda t: (
        _merge(t).when_not_matched_by_source_update({"dec": "decimal'9.5'"}, "target.d >= date'2022-01-01'").execute()
    ),
}


@pytest.mark.parametrize("case", list(SAME))
def test_same_rows_as_deltalake(tmp_path: Path, case: str) -> None:
    theirs, ours = _make(tmp_path)
    SAME[case](deltalake.DeltaTable(theirs))
    SAME[case](deltakernel.DeltaTable(ours))
    assert _rows(ours) == _rows(theirs), case
    assert deltakernel.DeltaTable(ours).version() == deltalake.DeltaTable(theirs).version()


# (ours, the same predicate in a spelling deltalake evaluates): deltalake 1.6.6 fails on the left one
EQUIVALENT: dict[str, tuple[Op, Op]] = {
    "delete_int_literal": (lambda t: t.delete("id = int'2'"), lambda t: t.delete("id = 2")),
    "delete_decimal_literal": (lambda t: t.delete("dec = decimal'1.5'"), lambda t: t.delete("dec = 1.5")),
    "delete_double_literal": (lambda t: t.delete("\"fooBar\" > double'15'"), lambda t: t.delete('"fooBar" > 15')),
    "delete_timestamp_literal": (
        lambda t: t.delete("ts = timestamp'2022-01-01 12:00:00Z' and id = 1"),
        lambda t: t.delete("id = 1"),
    ),
    "update_int_literal": (
        lambda t: t.update(updates={"s": "'q'"}, predicate="id >= int'3'"),
        lambda t: t.update(updates={"s": "'q'"}, predicate="id >= 3"),
    ),
}


@pytest.mark.parametrize("case", list(EQUIVALENT))
def test_typed_literals_deltalake_cannot_compare(tmp_path: Path, case: str) -> None:
    ours_op, plain = EQUIVALENT[case]
    theirs, ours = _make(tmp_path)
    with pytest.raises(deltalake.exceptions.DeltaError):  # deltalake's own limitation, kept as a witness
        ours_op(deltalake.DeltaTable(theirs))
    plain(deltalake.DeltaTable(theirs))
    ours_op(deltakernel.DeltaTable(ours))
    assert _rows(ours) == _rows(theirs), case


@pytest.mark.parametrize("predicate", ["id = int'abc'", "id = tinyint'300'", "dec = decimal'x'", "s = boolean'maybe'"])
def test_malformed_typed_literals_raise_before_writing(tmp_path: Path, predicate: str) -> None:
    """A typed literal is read strictly: bad text is an error (a CAST would give NULL and match nothing)."""
    _, ours = _make(tmp_path)
    with pytest.raises(InvalidFilterError):
        deltakernel.DeltaTable(ours).delete(predicate)
    assert deltakernel.DeltaTable(ours).version() == 0


def test_typed_literals_parse_in_the_kernel_parser() -> None:
    """Every operation (delete / update / merge / constraints / DataFusion SQL) parses through it."""
    from deltakernel.kernel.expressions.sql import Cast, Lit, parse_sql

    assert parse_sql("int'10'") == Lit(10, "integer")
    assert parse_sql("INT '5'") == Lit(5, "integer")
    assert parse_sql("bigint'5'") == Lit(5, "long")
    assert parse_sql("smallint'3'") == Cast(Lit(3, "integer"), "short")
    assert parse_sql("decimal'1.5'") == Lit(Decimal("1.5"), "decimal(2,1)")
    assert parse_sql("decimal'-1.50'") == Lit(Decimal("-1.50"), "decimal(3,2)")
    assert parse_sql("double'2.5'") == Lit(2.5, "double")
    assert parse_sql("boolean'TRUE'") == Lit(True, "boolean")
    assert parse_sql("string'x'") == Lit("x", "string")
    assert parse_sql("date'2022-01-01'") == Lit(dt.date(2022, 1, 1), "date")
    assert parse_sql("'2022-01-01'::date") == Cast(Lit("2022-01-01"), "date")
