"""Expression facts on classic sessions (`facts.ExpressionFacts`): read from Spark's analyzed plan through py4j.

A classic DataFrame is analyzed when built, so its plan tells exactly how Spark resolved a user's Column: the
condition / SET value as Spark's `.sql()` prints the resolved expression, the MERGE join's attributes told apart
by expression id (aliases, case and unqualified names resolve exactly as Spark resolves them), a source frame's
`SubqueryAlias`. Spark Connect sessions read the same facts off the client's trees (`facts_connect.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .facts import Analysis

_log = logging.getLogger(__name__)


def _seq(s: Any) -> list[Any]:
    return [s.apply(i) for i in range(s.size())]


def _join_node(plan: Any) -> Any:
    node = plan
    for _ in range(8):
        if node.nodeName() == "Join":
            return node
        children = _seq(node.children())
        if len(children) != 1:
            return None
        node = children[0]
    return None


def analyze_condition(joined: Any) -> Analysis:
    """Keys and target-only conjuncts of the condition of `joined` (target on the left), from Spark's
    analyzed plan: attributes are told apart by expression id (membership in each side's output set), so
    aliases, case and unqualified names resolve exactly as Spark resolves them. Asked in the JVM per conjunct,
    never per output column (each is a py4j round trip)."""
    out = Analysis()
    try:
        join = _join_node(joined._jdf.queryExecution().analyzed())
        if join is None or join.condition().isEmpty():
            return out
        cond = join.condition().get()
        out.sql = str(cond.sql())
        left, right = join.left().outputSet(), join.right().outputSet()
        stack = [cond]
        while stack:
            e = stack.pop()
            name = e.nodeName()
            if name == "And":
                stack += [e.right(), e.left()]
                continue
            if name == "EqualTo":
                key = _key(e.left(), e.right(), left, right) or _key(e.right(), e.left(), left, right)
                if key is not None:
                    out.keys.append(key)
                    continue
            refs = e.references()
            if not refs.isEmpty() and refs.subsetOf(left):
                out.target_only.append(str(e.sql()))
    except Exception as exc:  # an unexpected plan shape: no pruning, Spark still decides
        _log.debug("deltakernel MERGE: cannot analyze the join condition for pruning: %s", exc)
    return out


def _key(t: Any, s: Any, left: Any, right: Any) -> tuple[str, str] | None:
    """(target, source) column names when `t` is a bare target attribute and `s` a (cast) source one (`left`,
    `right`: the join sides' output attribute sets)."""
    if s.nodeName() == "Cast":
        s = s.child()
    if t.nodeName() != "AttributeReference" or s.nodeName() != "AttributeReference":
        return None
    if left.contains(t) and right.contains(s):
        return str(t.name()), str(s.name())
    return None


class ClassicFacts:
    """`ExpressionFacts` of classic sessions."""

    def column_sql(self, value: Any, empty: Any, condition: bool) -> str | None:
        try:
            if condition:
                return str(empty.where(value)._jdf.queryExecution().analyzed().condition().sql())
            plan = empty.select(value.alias("__dk_value"))._jdf.queryExecution().analyzed()
            return str(plan.projectList().apply(0).child().sql())
        except Exception:  # alias-qualified names: no kernel text
            return None

    def resolved(self, df: Any) -> Any:
        return df  # analyzed when built

    def printed(self, value: Any) -> str:
        jc = getattr(value, "_jc", None)
        return str(jc.toString()) if jc is not None else str(value)

    def source_alias(self, df: Any) -> str | None:
        try:
            plan = df._jdf.queryExecution().analyzed()
            return str(plan.alias()) if plan.nodeName() == "SubqueryAlias" else None
        except Exception:
            return None

    def merge_analysis(self, joined: Any, condition: Any, target_names: list[str], target_alias: str | None,
                       source: Any, target_types: dict[str, str]) -> Analysis:
        return analyze_condition(joined)

    def observed_metrics(self, df: Any, metrics: list[Any], probe: Callable[[Any], Any]) -> dict[str, Any] | None:
        """Read off the probe's own query execution once it ran (not `Observation.get`, which waits forever
        for metrics a plan never produces)."""
        return self.observed_collect(df, metrics, probe)[0]

    def observed_collect(self, df: Any, metrics: list[Any],
                         probe: Callable[[Any], Any]) -> tuple[dict[str, Any] | None, Any]:
        import uuid

        from pyspark.serializers import CPickleSerializer

        name = f"__dk_observed_{uuid.uuid4().hex}"
        frame = probe(df.observe(name, *metrics))
        rows = frame.toArrow()
        found = frame._jdf.queryExecution().observedMetrics().get(name)
        if found.isEmpty():
            return None, rows
        utils = getattr(df.sparkSession._jvm, "org.apache.spark.sql.api.python.PythonSQLUtils")
        row = CPickleSerializer().loads(utils.toPyRow(found.get()))  # type: ignore[no-untyped-call]
        return dict(row.asDict(recursive=False)), rows

    def size_estimate(self, df: Any) -> int | None:
        try:
            size = df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()  # py4j may hand a BigInt's value
            return int(size if isinstance(size, int) else size.toString())
        except Exception:  # an unexpected plan: no estimate
            return None


FACTS = ClassicFacts()

__all__ = ["FACTS", "ClassicFacts", "analyze_condition"]
