"""Predicate AST: builders (deltalake tuple filters, pyarrow expressions) and the pyarrow translation."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltakernel.errors import InvalidFilterError
from deltakernel.kernel.expressions.predicate import (
    AlwaysTrue,
    And,
    Column,
    Comparison,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    from_dnf,
    from_pyarrow,
    referenced_columns,
    split_conjuncts,
    to_pyarrow,
)
from deltakernel.kernel.schema.types import DecimalType, PrimitiveType, StructField, StructType

SCHEMA = StructType((
    StructField("i", PrimitiveType("long")),
    StructField("n", PrimitiveType("integer")),
    StructField("f", PrimitiveType("double")),
    StructField("s", PrimitiveType("string")),
    StructField("d", PrimitiveType("date")),
    StructField("t", PrimitiveType("timestamp")),
    StructField("tn", PrimitiveType("timestamp_ntz")),
    StructField("dec", DecimalType(10, 2)),
    StructField("b", PrimitiveType("boolean")),
    StructField("st", StructType((StructField("x", PrimitiveType("long")),))),
    StructField("a.b", PrimitiveType("string")),
))


def evaluate(expr: pc.Expression, table: pa.Table) -> list:
    return ds.dataset(table).to_table(columns={"r": expr}).column("r").to_pylist()


def test_from_dnf_conjunction_and_dnf() -> None:
    e = from_dnf([("i", ">", "3"), ("s", "=", "x")], SCHEMA)
    assert e == And(Comparison(">", Column(("i",)), Literal(3)), Comparison("=", Column(("s",)), Literal("x")))
    e2 = from_dnf([[("i", "=", 1)], [("i", "==", 2), ("s", "!=", "y")]], SCHEMA)
    assert isinstance(e2, Or) and len(e2.children) == 2
    assert from_dnf([], SCHEMA) == AlwaysTrue()


def test_from_dnf_coerces_strings_to_column_types() -> None:
    def lit(f: tuple) -> Literal:
        e = from_dnf([f], SCHEMA)
        assert isinstance(e, Comparison) and isinstance(e.right, Literal)
        return e.right

    assert lit(("i", "=", "42")).value == 42
    assert lit(("f", "<", "1.5")).value == 1.5
    assert lit(("d", "=", "2021-01-02")).value == dt.date(2021, 1, 2)
    assert lit(("t", ">", "2021-01-01 00:00:00")).value == dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    assert lit(("t", ">", "2021-01-01T02:00:00+02:00")).value == dt.datetime(2021, 1, 1, tzinfo=dt.timezone.utc)
    assert lit(("tn", ">", "2021-01-01 00:00:00.5")).value == dt.datetime(2021, 1, 1, 0, 0, 0, 500000)
    assert lit(("dec", "=", "1.23")).value == decimal.Decimal("1.23")
    assert lit(("b", "=", "TRUE")).value is True
    assert lit(("s", "=", 12)).value == "12"  # deltalake encodes typed values for string columns
    assert lit(("st.x", "=", "1")).value == 1
    assert lit(("a.b", "=", "v")).value == "v"  # a top-level dotted name wins over nesting
    assert from_dnf([("st.x", "=", 1)], SCHEMA).left == Column(("st", "x"))  # type: ignore[union-attr]


def test_from_dnf_nulls_follow_deltalake() -> None:
    assert from_dnf([("s", "=", "")], SCHEMA) == IsNull(Column(("s",)))
    assert from_dnf([("i", "!=", None)], SCHEMA) == IsNull(Column(("i",)), negated=True)
    e = from_dnf([("i", "in", ["1", ""])], SCHEMA)
    assert isinstance(e, In) and e.values == (1, None)
    e = from_dnf([("s", "=", "")], SCHEMA, empty_string_is_null=False)
    assert isinstance(e, Comparison) and e.right == Literal("")


@pytest.mark.parametrize("bad", [
    [("nope", "=", 1)], [("i", "~", 1)], [("i", "=", "abc")], [("i", "in", "abc")], [("d", "=", "2021-13-01")],
    [("b", "=", "yes")], [[("i", "=", 1)], ("i", "=", 2)], [[]], [("st", "=", 1)], [("i", "=")],
])
def test_from_dnf_rejects(bad: list) -> None:
    with pytest.raises(InvalidFilterError):
        from_dnf(bad, SCHEMA)


def test_referenced_columns_and_conjuncts() -> None:
    e = And(Comparison("=", Column(("a",)), Literal(1)), And(IsNull(Column(("b", "c"))), Not(In(Column(("d",)), (1,)))))
    assert referenced_columns(e) == {("a",), ("b", "c"), ("d",)}
    assert len(split_conjuncts(e)) == 3


def test_to_pyarrow_sql_semantics() -> None:
    t = pa.table({"x": pa.array([1, 2, None], pa.int64())})
    x = Column(("x",))
    assert evaluate(to_pyarrow(In(x, (1,))), t) == [True, False, None]
    assert evaluate(to_pyarrow(In(x, (1, None))), t) == [True, None, None]
    assert evaluate(to_pyarrow(In(x, (1, None), negated=True)), t) == [False, None, None]
    assert evaluate(to_pyarrow(In(x, (1,), negated=True)), t) == [False, True, None]
    assert evaluate(to_pyarrow(Comparison("=", x, Literal(None))), t) == [None, None, None]
    assert evaluate(to_pyarrow(Not(IsNull(x))), t) == [True, True, False]


def test_to_pyarrow_types_literals_from_schema() -> None:
    t = pa.table({"t": pa.array([dt.datetime(2021, 1, 1, 12)], pa.timestamp("us", tz="UTC"))})
    e = Comparison(">", Column(("t",)), Literal(dt.datetime(2021, 1, 1)))  # naive = UTC
    assert evaluate(to_pyarrow(e, SCHEMA), t) == [True]


def test_from_pyarrow_shapes() -> None:
    f = pc.field
    assert from_pyarrow((f("i") > 3) & (f("s") == "x"), SCHEMA) == And(
        Comparison(">", Column(("i",)), Literal(3)), Comparison("=", Column(("s",)), Literal("x")))
    assert from_pyarrow(f("i").is_null(), SCHEMA) == IsNull(Column(("i",)))
    assert from_pyarrow(f("st", "x") == 1, SCHEMA) == Comparison("=", Column(("st", "x")), Literal(1))
    # not translated: arithmetic, unknown columns, non-Kleene and, nan_is_null, non-bool column predicates
    for e in [f("i") + 1 > 2, f("zz") == 1, pc.and_(f("b"), f("b")), f("f").is_null(nan_is_null=True), f("i")]:
        assert from_pyarrow(e, SCHEMA) is None


# ----------------------------------------------------------------------------- differential: from_pyarrow
_VALUES = st.one_of(st.none(), st.integers(-3, 3))


@st.composite
def pa_exprs(draw: st.DrawFn, depth: int = 0) -> pc.Expression:
    col = pc.field(draw(st.sampled_from(["x", "y"])))
    kind = draw(st.integers(0, 6 if depth < 3 else 3))
    if kind == 0:
        op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
        v = draw(_VALUES)
        lit = pc.scalar(pa.scalar(v, pa.int64()))
        fns = {"==": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater,
               ">=": pc.greater_equal}
        return fns[op](lit, col) if draw(st.booleans()) else fns[op](col, lit)
    if kind == 1:
        return col.is_null() if draw(st.booleans()) else col.is_valid()
    if kind in (2, 3):
        vals = draw(st.lists(_VALUES, min_size=1, max_size=3))
        return pc.is_in(col, value_set=pa.array(vals, pa.int64()), skip_nulls=draw(st.booleans()))
    if kind == 4:
        return ~draw(pa_exprs(depth + 1))
    if kind == 5:
        return draw(pa_exprs(depth + 1)) & draw(pa_exprs(depth + 1))
    return draw(pa_exprs(depth + 1)) | draw(pa_exprs(depth + 1))


_TABLE = pa.table({
    "x": pa.array([None, -2, -1, 0, 1, 2, None, 3, 0], pa.int64()),
    "y": pa.array([1, None, 0, 2, -3, None, 3, 1, 0], pa.int64()),
})
_SCHEMA_XY = StructType((StructField("x", PrimitiveType("long")), StructField("y", PrimitiveType("long"))))


@settings(max_examples=300, deadline=None)
@given(pa_exprs())
def test_from_pyarrow_is_exact(expr: pc.Expression) -> None:
    ours = from_pyarrow(expr, _SCHEMA_XY)
    assert ours is not None, str(expr)
    assert evaluate(to_pyarrow(ours), _TABLE) == evaluate(expr, _TABLE), str(expr)


# ----------------------------------------------------------------------------- differential: deltalake filters
def test_from_dnf_matches_deltalake_partition_pruning(tmp_path) -> None:  # type: ignore[no-untyped-def]
    deltalake = pytest.importorskip("deltalake")
    from deltakernel.kernel.scan.skipping import skipping_mask
    from deltakernel.kernel.schema.types import parse_schema_string

    data = pa.table({
        "p": pa.array([1, 2, None, 3, 10], pa.int64()),
        "s": ["a", "b", "c", "d", "a"],
        "x": [1, 2, 3, 4, 5],
    })
    deltalake.write_deltalake(str(tmp_path), data, partition_by=["p", "s"])
    table = deltalake.DeltaTable(str(tmp_path))
    schema = parse_schema_string(table.schema().to_json())
    actions = pa.table(table.get_add_actions(flatten=True))
    paths = actions.column("path").to_pylist()
    pv = {("p",): actions.column("partition.p").cast(pa.int64()), ("s",): actions.column("partition.s")}
    filters = [
        [("p", "=", "1")], [("p", "=", "")], [("p", "!=", "")], [("p", "!=", "1")], [("p", "not in", ["1", ""])],
        [("p", "not in", ["1"])], [("p", "in", ["1", ""])], [("p", ">", "1")], [("s", ">", 2)], [("s", "=", "")],
        [("p", "<=", 2), ("s", "in", ["a", "b"])], [[("p", "=", 1)], [("s", "=", "c")]], [("p", ">=", "3")],
        [("s", "<", "b")],
    ]
    for flt in filters:
        expected = {u.rsplit("/", 1)[-1] for u in table.file_uris(file_pruning_predicate=flt)}
        mask = skipping_mask(from_dnf(flt, schema), None, pv, len(paths)).to_pylist()
        got = {p.rsplit("/", 1)[-1] for p, keep in zip(paths, mask) if keep}
        assert got == expected, flt
