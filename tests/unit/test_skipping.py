"""File skipping: unit cases per rule, and a property test that no file with a matching row is skipped."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltakernel.kernel.expressions.predicate import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    from_dnf,
    to_pyarrow,
)
from deltakernel.kernel.scan.skipping import skipping_mask
from deltakernel.kernel.schema.types import PrimitiveType, StructField, StructType
from deltakernel.kernel.stats.parse import parse_stats

UTC = dt.timezone.utc
SCHEMA = StructType((
    StructField("i", PrimitiveType("long")),
    StructField("f", PrimitiveType("double")),
    StructField("s", PrimitiveType("string")),
    StructField("t", PrimitiveType("timestamp")),
    StructField("d", PrimitiveType("date")),
    StructField("p", PrimitiveType("long")),
))
ARROW = {"i": pa.int64(), "f": pa.float64(), "s": pa.string(), "t": pa.timestamp("us", tz="UTC"), "d": pa.date32(),
         "p": pa.int64()}


def mask(filters: Any, lines: list[str | None], pv: list[Any] | None = None) -> list[bool]:
    expr = from_dnf(filters, SCHEMA) if isinstance(filters, list) else filters
    stats = parse_stats(pa.array(lines, pa.string()), SCHEMA, "none")
    part = {("p",): pa.array(pv, pa.int64())} if pv is not None else None
    return skipping_mask(expr, stats, part, len(lines)).to_pylist()


def js(n: int, mins: dict, maxs: dict, nulls: dict, tight: bool | None = None) -> str:
    d: dict[str, Any] = {"numRecords": n, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    if tight is not None:
        d["tightBounds"] = tight
    return json.dumps(d)


F1 = js(10, {"i": 1, "s": "b"}, {"i": 5, "s": "d"}, {"i": 0, "s": 0})
F_ALLNULL = js(10, {}, {}, {"i": 10, "s": 10})
F_CONST = js(10, {"i": 3}, {"i": 3}, {"i": 2})


def test_range_rules() -> None:
    assert mask([("i", "=", 3)], [F1, None]) == [True, True]
    assert mask([("i", "=", 6)], [F1, None]) == [False, True]
    assert mask([("i", "<", 1)], [F1]) == [False]
    assert mask([("i", "<=", 1)], [F1]) == [True]
    assert mask([("i", ">", 5)], [F1]) == [False]
    assert mask([("i", ">=", 5)], [F1]) == [True]
    assert mask([("i", "in", [0, 7])], [F1]) == [False]
    assert mask([("i", "in", list(range(100, 200)))], [F1]) == [False]  # long IN list: range check


def test_null_rules() -> None:
    assert mask([("i", "=", "")], [F1, F_ALLNULL]) == [False, True]  # IS NULL
    assert mask([("i", "!=", "")], [F1, F_ALLNULL]) == [True, False]  # IS NOT NULL
    assert mask([("i", "=", 3)], [F_ALLNULL]) == [False]
    assert mask(Comparison("=", Column(("i",)), Literal(None)), [F1]) == [False]
    assert mask([("i", "not in", [1, ""])], [F1]) == [False]  # NOT IN with a NULL is never TRUE


def test_not_equal_and_negation() -> None:
    assert mask([("i", "!=", 3)], [F_CONST, F1]) == [False, True]
    assert mask(Not(Comparison("=", Column(("i",)), Literal(3))), [F_CONST]) == [False]
    assert mask(Not(Comparison(">", Column(("i",)), Literal(0))), [F1]) == [False]  # NOT (i > 0) = i <= 0
    assert mask(Not(And(Comparison(">", Column(("i",)), Literal(0)), AlwaysTrue())), [F1]) == [False]
    assert mask(Not(Or(Comparison(">", Column(("i",)), Literal(0)), AlwaysFalse())), [F1]) == [False]
    assert mask(Not(IsNull(Column(("i",)))), [F_ALLNULL]) == [False]


def test_missing_stats_keep() -> None:
    assert mask([("i", "=", 100)], [None, "", js(1, {}, {}, {})]) == [True, True, True]
    assert mask([("f", "=", 100.0)], [F1]) == [True]


def test_partitions_exact() -> None:
    lines: list[str | None] = [None, None, None]
    assert mask([("p", "=", 1)], lines, [1, 2, None]) == [True, False, False]
    assert mask([("p", "=", "")], lines, [1, 2, None]) == [False, False, True]
    assert mask([("p", "!=", 1)], lines, [1, 2, None]) == [False, True, False]
    assert mask(Not(Comparison("=", Column(("p",)), Literal(1))), lines, [1, 2, None]) == [False, True, False]
    assert mask([[("p", "=", 1)], [("i", "=", 3)]], [F1, F1, F_ALLNULL], [1, 2, 3]) == [True, True, False]


def test_timestamp_max_widened_for_ms_truncation() -> None:
    line = js(1, {"t": "2021-01-01T00:00:00.000Z"}, {"t": "2021-01-01T00:00:01.123Z"}, {"t": 0})
    just_after = dt.datetime(2021, 1, 1, 0, 0, 1, 123500, tzinfo=UTC)
    assert mask(Comparison(">", Column(("t",)), Literal(just_after)), [line]) == [True]
    assert mask(Comparison("=", Column(("t",)), Literal(just_after)), [line]) == [True]
    later = dt.datetime(2021, 1, 1, 0, 0, 1, 124000, tzinfo=UTC)
    assert mask(Comparison(">=", Column(("t",)), Literal(later)), [line]) == [False]
    offset = js(1, {"t": "2021-01-01T02:00:00.000+02:00"}, {"t": "2021-01-01T02:00:00.000+02:00"}, {"t": 0})
    assert mask(Comparison("<", Column(("t",)), Literal(dt.datetime(2021, 1, 1, tzinfo=UTC))), [offset]) == [False]


def test_truncated_string_max() -> None:
    line = js(1, {"s": "abc"}, {"s": "abc\uffff"}, {"s": 0})  # Spark: prefix + tie-breaker
    assert mask([("s", "=", "abc\U0001F600")], [line]) == [True]  # supplementary chars sort above U+FFFF
    plain = js(1, {"s": "abc"}, {"s": "abc"}, {"s": 0})  # a writer that just cut the string
    assert mask([("s", ">", "abcz")], [plain]) == [True]
    assert mask([("s", ">", "abd")], [plain]) == [False]
    assert mask([("s", "!=", "abc")], [plain]) == [True]


def test_nan_is_conservative() -> None:
    line = js(3, {"f": 1.0}, {"f": 2.0}, {"f": 0})  # a NaN row may hide behind these bounds
    assert mask([("f", "!=", 1.0)], [line]) == [True]
    assert mask(Not(Comparison("<", Column(("f",)), Literal(5.0))), [line]) == [True]
    assert mask([("f", ">", 2.0)], [line]) == [False]  # a NaN row never satisfies `>` in pyarrow
    spark = js(3, {"f": 1.0}, {"f": "NaN"}, {"f": 0})
    assert mask([("f", ">", 5.0)], [spark]) == [True]


def test_in_list_with_nan_keeps_files() -> None:
    # `f IN (NaN)` matches NaN rows (pyarrow's is_in, Spark's NaN = NaN), which min/max never describe;
    # found by the property test below
    line = js(3, {"f": -1.5}, {"f": -1.5}, {"f": 2})
    assert mask(In(Column(("f",)), (math.nan,)), [line]) == [True]
    assert mask(Not(In(Column(("f",)), (math.nan,), negated=True)), [line]) == [True]
    all_null = js(3, {}, {}, {"f": 3})
    assert mask(In(Column(("f",)), (math.nan,)), [all_null]) == [False]


def test_wide_bounds_still_skip_by_range() -> None:
    line = js(10, {"i": 0}, {"i": 100}, {"i": 3}, tight=False)
    assert mask([("i", ">", 100)], [line]) == [False]
    assert mask([("i", "=", "")], [line]) == [True]


# ----------------------------------------------------------------------------- property test
PREFIX = 3  # string stats truncation length (Spark uses 32; small here to exercise truncation)
STRINGS = st.text(alphabet=["a", "b", "z", "\U0001F600", "\uffff"], max_size=5)
FLOATS = st.sampled_from([-1.5, 0.0, -0.0, 2.0, 3.25, math.nan, math.inf, -math.inf])
TIMES = st.integers(0, 3_000_000).map(lambda us: dt.datetime(2021, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us))
DATES = st.integers(0, 5).map(lambda k: dt.date(2021, 1, 1) + dt.timedelta(days=k))
VALUES = {"i": st.integers(-3, 3), "f": FLOATS, "s": STRINGS, "t": TIMES, "d": DATES, "p": st.integers(0, 2)}


def _nullable(s: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(st.none(), s, s, s)


def _value(draw: st.DrawFn, col: str, pool: dict[str, list] | None) -> Any:
    """A literal: random, or (to hit the truncation edges) a value present in the data, maybe nudged."""
    present = (pool or {}).get(col) or []
    if not present or draw(st.booleans()):
        return draw(_nullable(VALUES[col]))
    v = draw(st.sampled_from(present))
    if col == "t":
        v += dt.timedelta(microseconds=draw(st.integers(-2, 2)))
    elif col == "s" and draw(st.booleans()):
        v = v[: draw(st.integers(0, len(v)))]
    return v


@st.composite
def predicates(draw: st.DrawFn, depth: int = 0, pool: dict[str, list] | None = None) -> Expr:
    kind = draw(st.integers(0, 5 if depth < 3 else 2))
    col = draw(st.sampled_from(list(VALUES)))
    c = Column((col,))
    if kind == 0:
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        v = _value(draw, col, pool)
        lit = Literal(v, ARROW[col])
        return Comparison(op, lit, c) if draw(st.booleans()) else Comparison(op, c, lit)
    if kind == 1:
        return IsNull(c, negated=draw(st.booleans()))
    if kind == 2:
        vals = [_value(draw, col, pool) for _ in range(draw(st.integers(0, 4)))]
        return In(c, tuple(vals), negated=draw(st.booleans()), value_type=ARROW[col])
    if kind == 3:
        return Not(draw(predicates(depth + 1, pool)))
    kids = draw(st.lists(predicates(depth + 1, pool), min_size=1, max_size=3))
    return And(*kids) if kind == 4 else Or(*kids)


def _fmt_ts(ts: dt.datetime, offset: bool) -> str:
    ms = ts.replace(microsecond=ts.microsecond // 1000 * 1000)  # Spark truncates to milliseconds
    if offset:
        return ms.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat(timespec="milliseconds")
    return ms.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _stats_line(rows: list[dict], draw: st.DrawFn) -> str | None:
    if draw(st.integers(0, 9)) == 0:
        return None
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    for col in ("i", "f", "s", "t", "d"):
        if draw(st.integers(0, 9)) == 0:
            continue  # column without stats
        vals = [r[col] for r in rows if r[col] is not None]
        nulls[col] = len(rows) - len(vals)
        if col == "f":
            finite = [v for v in vals if not math.isnan(v)]
            if finite:
                mins[col], maxs[col] = min(finite), max(finite)
            if len(finite) != len(vals) and draw(st.booleans()):  # Spark: NaN is the largest value
                maxs[col] = "NaN"
                if not finite:
                    mins[col] = "NaN"
            for k in (mins, maxs):
                if isinstance(k.get(col), float) and math.isinf(k[col]):
                    k[col] = "Infinity" if k[col] > 0 else "-Infinity"
            continue
        if not vals:
            continue
        lo, hi = min(vals), max(vals)
        if col == "s":
            lo = lo[:PREFIX]
            if len(hi) > PREFIX:
                hi = hi[:PREFIX] + draw(st.sampled_from(["\uffff", "\U0010ffff", ""]))
                # a writer that cut the max without a tie-breaker made it smaller than the real max

        elif col == "t":
            off = draw(st.booleans())
            lo, hi = _fmt_ts(lo, off), _fmt_ts(hi, off)
        elif col == "d":
            lo, hi = lo.isoformat(), hi.isoformat()
        mins[col], maxs[col] = lo, hi
    return json.dumps({"numRecords": len(rows), "minValues": mins, "maxValues": maxs, "nullCount": nulls},
                      ensure_ascii=draw(st.booleans()))


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[list[dict]], list[str | None], list[Any]]:
    n_files = draw(st.integers(1, 5))
    files, lines, parts = [], [], []
    for _ in range(n_files):
        p = draw(_nullable(VALUES["p"]))
        rows = draw(st.lists(st.fixed_dictionaries({c: _nullable(VALUES[c]) for c in ("i", "f", "s", "t", "d")}),
                             min_size=1, max_size=6))
        for r in rows:
            r["p"] = p
        line = _stats_line(rows, draw)
        # deletion vector: stats describe all rows, only the survivors are valid (wide bounds)
        if line is not None and len(rows) > 1 and draw(st.integers(0, 3)) == 0:
            doc = json.loads(line)
            doc["tightBounds"] = False
            line = json.dumps(doc)
            keep = draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
            rows = [r for r, k in zip(rows, keep) if k]
        files.append(rows)
        lines.append(line)
        parts.append(p)
    return files, lines, parts


def _matches(rows: list[dict], expr: Expr) -> bool:
    if not rows:
        return False
    table = pa.table({c: pa.array([r[c] for r in rows], ARROW[c]) for c in ARROW})
    return ds.dataset(table).to_table(filter=to_pyarrow(expr)).num_rows > 0


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables(), st.data())
def test_never_skips_a_file_with_matching_rows(data: tuple, more: st.DataObject) -> None:
    files, lines, parts = data
    pool = {c: [r[c] for rows in files for r in rows if r[c] is not None] for c in ARROW}
    expr = more.draw(predicates(pool=pool))
    stats = parse_stats(pa.array(lines, pa.string()), SCHEMA, "none")
    keep = skipping_mask(expr, stats, {("p",): pa.array(parts, pa.int64())}, len(files)).to_pylist()
    for rows, kept, line in zip(files, keep, lines):
        if not kept:
            assert not _matches(rows, expr), (expr, line, rows)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), predicates())
def test_partition_only_predicates_are_exact(data: tuple, expr: Expr) -> None:
    files, _, parts = data
    expr = _only_p(expr)
    keep = skipping_mask(expr, None, {("p",): pa.array(parts, pa.int64())}, len(files)).to_pylist()
    for part, kept in zip(parts, keep):
        probe = [{c: None for c in ARROW} | {"p": part}]  # every row of a file has the same p
        assert kept == _matches(probe, expr), expr


def _only_p(e: Expr) -> Expr:
    """The predicate with every column replaced by the partition column p (literals re-typed)."""
    p = Column(("p",))
    if isinstance(e, Comparison):
        return Comparison(e.op, p, Literal(1 if e.op in ("=", "!=") else 0, pa.int64()))
    if isinstance(e, IsNull):
        return IsNull(p, e.negated)
    if isinstance(e, In):
        return In(p, tuple(None if v is None else i % 3 for i, v in enumerate(e.values)), e.negated, pa.int64())
    if isinstance(e, Not):
        return Not(_only_p(e.child))
    if isinstance(e, (And, Or)):
        return type(e)(*[_only_p(c) for c in e.children])
    return e


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(tables(), st.data())
def test_truncated_bounds_never_skip_matches(data: tuple, more: st.DataObject) -> None:
    """Focused on the lossy stats: string prefixes / tie-breakers and millisecond timestamps."""
    files, lines, parts = data
    col = more.draw(st.sampled_from(["s", "t"]))
    present = [r[col] for rows in files for r in rows if r[col] is not None]
    if not present:
        return
    v = more.draw(st.sampled_from(present))
    if col == "t":
        v += dt.timedelta(microseconds=more.draw(st.integers(-3, 3)))
    else:
        v = v[: more.draw(st.integers(0, len(v)))] if more.draw(st.booleans()) else v
    op = more.draw(st.sampled_from(["=", "<", "<=", ">", ">=", "!="]))
    expr = Comparison(op, Column((col,)), Literal(v, ARROW[col]))
    stats = parse_stats(pa.array(lines, pa.string()), SCHEMA, "none")
    keep = skipping_mask(expr, stats, None, len(files)).to_pylist()
    for rows, kept, line in zip(files, keep, lines):
        if not kept:
            assert not _matches(rows, expr), (expr, line, rows)
