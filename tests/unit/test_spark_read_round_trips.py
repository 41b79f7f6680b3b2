"""The per-query driver work of Spark reads that needs no Spark (issue 32, TPC-H per query): the Connect router's
pushdown analysis remembered per statement, and date literals read from a Catalyst filter's JSON text.

Both run on every Delta query (the first on Connect before the statement is sent, the second in the classic file
index's `listFiles`), so what they save is saved per query; the Spark-side behaviour (skipping by these filters)
is tested in tests/spark/test_spark_skipping.py and test_spark_connect*.py.
"""

from __future__ import annotations

import datetime as dt

import pytest

from deltakernel.spark.scan import catalyst
from deltakernel.spark.sql import pushdown
from deltakernel.spark.sql import text_plans as T

COLUMNS = ["l_orderkey", "l_shipdate", "l_discount", "l_quantity"]
Q6 = ("select sum(l_discount) from lineitem where l_shipdate >= date '1994-01-01' "
      "and l_shipdate < date '1995-01-01' and l_discount between 0.05 and 0.07 and l_quantity < 24")


def _tables(tree):
    from sqlglot import exp

    return [(t, COLUMNS) for t in tree.find_all(exp.Table)]


def test_pushdown_answer_remembered_per_statement(monkeypatch):
    first = T.parse(Q6)
    expected = pushdown.pushed_conjuncts(first, _tables(first), None, Q6)
    assert expected is not None and len(expected[0]) >= 4
    analysed = []
    monkeypatch.setattr(pushdown, "_pushed", lambda *a: analysed.append(a) or [["never"]])
    again = T.parse(Q6)  # a new parse of the same text: the same answer without the analysis
    assert pushdown.pushed_conjuncts(again, _tables(again), None, Q6) == expected
    assert not analysed
    other = Q6.replace("24", "25")  # another statement is analysed
    tree = T.parse(other)
    assert pushdown.pushed_conjuncts(tree, _tables(tree), None, other) == [["never"]]
    assert len(analysed) == 1
    tree = T.parse(Q6)  # other columns: analysed again
    assert pushdown.pushed_conjuncts(tree, [(t, [*COLUMNS, "x"]) for t, _ in _tables(tree)], None, Q6) == \
        [["never"]]


def test_pushdown_memo_keeps_the_time_zone_it_used():
    text = "select * from t where ts >= timestamp '2024-01-03 02:00:00'"
    cols = ["ts"]

    def run(zone):
        tree = T.parse(text)
        from sqlglot import exp

        return pushdown.pushed_conjuncts(tree, [(t, cols) for t in tree.find_all(exp.Table)], lambda: zone, text)

    utc, tokyo = run("UTC"), run("Asia/Tokyo")
    assert utc != tokyo  # the zone-less literal is an instant in the session's zone
    assert run("UTC") == utc and run("Asia/Tokyo") == tokyo


@pytest.mark.parametrize("text,day", [
    ("1994-01-01", dt.date(1994, 1, 1)), ("9999-12-31", dt.date(9999, 12, 31)), ("1600-01-01", dt.date(1600, 1, 1)),
    ("1582-10-04", None),  # Julian calendar era: fetched from the node
    ("0001-01-01", None), ("+10000-01-01", None), ("2024-02-30", None), ("2024-1-1", None), (19000, None),
])
def test_date_literal_text(text, day):
    assert catalyst._date_text(text) == day
