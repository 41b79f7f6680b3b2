"""Conditions that choose a Connect Delta leaf's files and are not sent to Spark (issue 32, Connect TPC-H Q6).

The SQL router gives a temporary view made from a DataFrame (`createOrReplaceTempView` of `load()`, or of a chain
over Delta leaves) the statement's conjuncts on it, so that the kernel keeps only the files they can match. They
used to reach the leaves as `frame.where(c)`: Spark Filters under the statement's own WHERE. Spark's optimizer
merges the two (`CombineFilters`: the lower Filter's conjuncts first, the upper's duplicates dropped), so the query
evaluated its conditions in the pushdown's order instead of the statement's - and that order is what Spark runs row
by row, short-circuited. TPC-H Q6 over lineitem then compared two decimals before the dates (a Decimal made per
value): +24 % task CPU and ~3x the GC time over the very same files (docs/decisions.md, "Connect TPC-H Q6").

`ScanConditions` carries the conjuncts to the pushdown pass (`connect_plan.assign` reads them as it reads a
Filter's) and serializes as its child: Spark gets the view's plan unchanged - as it gets a Delta table's scan planned
with a predicate (`ConnectRelations.bind`) - and runs the statement's conditions in the statement's order. Never a
wrong answer: every conjunct comes from the statement, which Spark still applies whole; they only choose files.
"""

from __future__ import annotations

from typing import Any

from .connect_plan import plan_base


class ScanConditions(plan_base()):  # type: ignore[misc]
    """A client-only node: `conditions` (Connect Columns) filter the Delta leaves below for file skipping only."""

    def __init__(self, child: Any, conditions: list[Any]) -> None:
        super().__init__(child)
        self.conditions = conditions

    def plan(self, session: Any) -> Any:
        return self._child.plan(session)


def with_scan_conditions(df: Any, conditions: list[str]) -> Any:
    """`df` (a Connect DataFrame over Delta leaves) whose leaves keep only the files `conditions` (SQL text) can
    match; the rows Spark reads are those of `df` over the kept files (no Filter is added)."""
    if not conditions:
        return df
    from pyspark.sql import functions as F

    from ..kinds.connect_internals import plan_frame

    return plan_frame(ScanConditions(df._plan, [F.expr(c) for c in conditions]), df.sparkSession)


__all__ = ["ScanConditions", "with_scan_conditions"]
