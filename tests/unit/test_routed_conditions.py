"""The Connect pushdown pass carries conditions chained after a routed SQL query's frame to it
(`connect_plan.RoutedQuery`, `_path_conditions`; `connect_filters.conjunct_texts`) - no server needed: Connect
plans are Python objects until sent.

What reaches the node is Spark SQL over its output names: through selects (renames by alias included),
`withColumn` (a computed column is not the query's), stars, sorts; nothing through a rename the client cannot
follow, a non-deterministic condition, a limit, or a join's unknown names; subqueries, aggregates and struct
fields stay where the user put them. The node sends its statement as planned when no condition reaches it or
replanning fails, the replanned one (with the frame's own plan id) otherwise.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark.sql.connect.plan")

from pyspark.sql.connect import functions as CF
from pyspark.sql.connect import plan as P
from pyspark.sql.connect import proto

from deltakernel.spark.scan import connect_filters as cf
from deltakernel.spark.scan import connect_plan as cp


class _Statement(P.LogicalPlan):
    """A stand-in for the statement's plan (`SQL` with references): a relation naming `text`."""

    def __init__(self, text: str) -> None:
        super().__init__(None)
        self.text = text

    def plan(self, session):
        rel = proto.Relation()
        rel.common.plan_id = self._plan_id
        rel.sql.query = self.text
        return rel


def _routed(replan=lambda conditions: _Statement(" AND ".join(conditions))) -> cp.RoutedQuery:
    return cp.RoutedQuery(_Statement("original"), replan)


def _conditions(root, node) -> tuple[str, ...] | None:
    return cp.assign(root).conditions.get(id(node))


def test_conjunct_texts():
    own = lambda parts, plan_id: parts if len(parts) == 1 else None
    assert cf.conjunct_texts(CF.col("id") == 5, own) == ["`id` = 5"]
    assert cf.conjunct_texts(CF.expr("id = 5 AND (s LIKE 'k%' AND x > 1) AND a.b = 1"), own) == [
        "`id` = 5", "`s` LIKE 'k%'", "`x` > 1"]
    assert cf.conjunct_texts(CF.col("id").isin(1, 2), own) == ["`id` IN (1, 2)"]
    for kept_out in ("id IN (SELECT 1)", "max(id) > 1", "id = :p", "exists(a, x -> x > id)"):
        assert cf.conjunct_texts(CF.expr(kept_out), own) == [], kept_out
    assert cf.conjunct_texts(CF.col("id") == 5, lambda parts, plan_id: ("key",)) == ["`key` = 5"]


def test_conditions_reach_the_routed_query():
    r = _routed()
    cases = [
        (P.Filter(r, CF.expr("id = 1134")), ("`id` = 1134",)),
        (P.Filter(P.Project(r, [CF.col("id"), CF.col("s").alias("t")]), CF.expr("id = 3 AND t = 'x'")),
         ("`id` = 3", "`s` = 'x'")),
        (P.Filter(P.WithColumns(r, ["x"], [CF.col("id") * 2]), CF.expr("id = 3 AND x = 4")), ("`id` = 3",)),
        (P.Filter(P.Project(r, [CF.col("*")]), CF.expr("id = 3")), ("`id` = 3",)),
        (P.Filter(P.Sort(r, [CF.col("id").asc()], True), CF.col("id") > 3), ("`id` > 3",)),
        (P.Filter(P.Filter(r, CF.expr("id > 1")), CF.expr("id < 9")), ("`id` > 1", "`id` < 9")),
    ]
    for root, want in cases:
        assert _conditions(root, r) == want, root.print()


def test_conditions_that_may_not_reach_it_do_not():
    r = _routed()
    other = _Statement("other")
    cases = [
        P.Filter(P.WithColumnsRenamed(r, {"id": "k"}), CF.expr("k = 3")),  # renamed: names unknown here
        P.Filter(r, CF.expr("rand() < 0.5 AND id = 3")),
        P.Filter(P.Limit(r, 5), CF.expr("id = 3")),
        P.Filter(P.Join(r, other, None, "inner"), CF.expr("id = 3")),  # `id` may be the other side's
    ]
    for root in cases:
        assert _conditions(root, r) is None, root.print()
    # reached along two paths with different conditions: none
    assert _conditions(P.SetOperation(P.Filter(r, CF.expr("id = 1")), P.Filter(r, CF.expr("id = 2")), "union",
                                      is_all=True), r) is None


def test_the_replanned_statement_is_sent_under_the_frames_plan_id():
    send = cp.serialize_hook(lambda plan, session: plan.plan(session))  # what `enable()` wraps `to_proto` with
    seen = []
    r = _routed(lambda conditions: seen.append(conditions) or _Statement("replanned " + " AND ".join(conditions)))
    root = P.Filter(r, CF.expr("id = 7"))
    sent = send(root, None).filter.input
    assert (sent.sql.query, sent.common.plan_id) == ("replanned `id` = 7", r._plan_id)
    assert r._plan_id == r._child._plan_id  # columns bound to the frame (`df["id"]`) resolve on what is sent
    send(root, None)
    assert seen == [("`id` = 7",)]  # kept per condition set
    assert send(r, None).sql.query == "original"  # no condition: as planned
    for replan in (lambda conditions: None, lambda conditions: 1 / 0):  # cannot be replanned: as planned
        assert send(P.Filter(_routed(replan), CF.expr("id = 7")), None).filter.input.sql.query == "original"
