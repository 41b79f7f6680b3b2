"""Expression facts on Spark Connect sessions (`facts.ExpressionFacts`): what classic sessions read from Spark's
analyzed plan (`facts_classic.py`), taken from the client's own expression trees (Connect has no plan on the
client, only an analyze round trip for schemas).

- `expression_sql`: Spark SQL text of a Connect Column (the condition / SET value text the kernel plans
  with, and history's operationParameters), printed by `scan/connect_filters.expression_sql`; `column_sql`
  keeps the text only when Spark's analyzer resolves it on the table's empty frame.
- `merge_analysis`: MERGE's equi-join keys and target-only conjuncts from the condition's text, with
  columns resolved as the embedded MERGE resolves them (`operations/merge_plan.Names`: aliases, case,
  ambiguity). A key is kept only when both sides have the same type (or a narrower integer on the source
  side), so the source's min/max cast to the target's type is exact; anything unclear prunes nothing.
- `source_alias`: the alias of a Connect DataFrame (`df.alias("s")`), read off its plan.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .facts import Analysis

_log = logging.getLogger(__name__)
_INTEGRAL = {"tinyint": 1, "smallint": 2, "int": 3, "bigint": 4}


def expression_sql(col: Any) -> str | None:
    """Spark SQL text of a Connect Column (`scan/connect_filters.expression_sql`: `df["c"]` of another frame has
    no SQL name), or None."""
    from ..scan.connect_filters import expression_sql as printed

    return printed(col)


def source_alias(df: Any) -> str | None:
    """The alias a Connect DataFrame was given last (`df.alias("s")`), or None."""
    from pyspark.sql.connect import plan as P

    node = getattr(df, "_plan", None)
    return str(node._alias) if isinstance(node, P.SubqueryAlias) else None


def merge_analysis(condition: Any, target_names: list[str], target_alias: str | None, source: Any,
                   target_types: dict[str, str]) -> tuple[list[tuple[str, str]], list[Any], str | None]:
    """(equi-join keys (target, source), target-only conjuncts as kernel predicates, the condition's SQL) of
    a MERGE condition given as SQL text or a Connect Column; nothing when it cannot be read exactly.
    `target_types`: target column -> Spark simpleString type."""
    from ...kernel.expressions.sql import Binary, Col, conjuncts, parse_sql
    from ...operations.dml.merge.plan import S_PREFIX, T_PREFIX, Names, side_columns, unprefix

    text = condition if isinstance(condition, str) else expression_sql(condition)
    if text is None:
        return [], [], None
    try:
        s_types = {f.name: f.dataType.simpleString() for f in source.schema.fields}
        names = Names(target_names, list(s_types), target_alias or "target",
                      source_alias(source) or "__dk_no_source_alias__")
        qualified = names.qualify(parse_sql(text), text)
    except Exception as e:  # syntax the kernel does not parse, ambiguous names: Spark decides, no pruning
        _log.debug("deltakernel MERGE: no pruning from condition %r: %s", text, e)
        return [], [], text
    keys: list[tuple[str, str]] = []
    target_only: list[Any] = []
    for c in conjuncts(qualified):
        if isinstance(c, Binary) and c.op in ("=", "==") and isinstance(c.left, Col) and isinstance(c.right, Col) \
                and len(c.left.path) == 1 and len(c.right.path) == 1:
            a, b = c.left.path[0], c.right.path[0]
            if a.startswith(S_PREFIX) and b.startswith(T_PREFIX):
                a, b = b, a
            if a.startswith(T_PREFIX) and b.startswith(S_PREFIX):
                t, s = a[len(T_PREFIX):], b[len(S_PREFIX):]
                if _exact_key(target_types.get(t), s_types.get(s)):
                    keys.append((t, s))
                continue
        if side_columns(c, T_PREFIX) and not side_columns(c, S_PREFIX):
            target_only.append(unprefix(c))
    return keys, target_only, text


def _exact_key(target: str | None, source: str | None) -> bool:
    """Whether source values cast to the target's type keep their order and equality (bounds stay exact)."""
    if target is None or source is None:
        return False
    if target == source:
        return True
    return target in _INTEGRAL and source in _INTEGRAL and _INTEGRAL[source] <= _INTEGRAL[target]


_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50, "EiB": 1 << 60}


def _size_in_bytes(explained: str) -> int | None:
    """The first `sizeInBytes` of the optimized logical plan in `explain(mode="cost")` text (Spark's
    `Utils.bytesToString`: `12.5 MiB`), rounded up; None when absent."""
    import math
    import re

    start = explained.find("== Optimized Logical Plan ==")
    found = re.search(r"sizeInBytes=([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([KMGTPE]iB|B)\b", explained[max(start, 0):])
    if found is None:
        return None
    return math.ceil(float(found.group(1)) * _UNITS[found.group(2)])


class ConnectFacts:
    """`ExpressionFacts` of Spark Connect sessions."""

    def column_sql(self, value: Any, empty: Any, condition: bool) -> str | None:
        from pyspark.sql import functions as F

        text = expression_sql(value)
        if text is None:
            return None
        try:
            self.resolved(empty.where(F.expr(text)) if condition else empty.select(F.expr(text)))
        except Exception:  # names the alias, or prints differently than it resolves: no kernel text
            return None
        return text

    def resolved(self, df: Any) -> Any:
        df.schema  # noqa: B018 - a Connect frame is analyzed only when asked: the analyze request is the point
        return df

    def printed(self, value: Any) -> str:
        return expression_sql(value) or str(getattr(value, "_expr", value))

    def source_alias(self, df: Any) -> str | None:
        return source_alias(df)

    def merge_analysis(self, joined: Any, condition: Any, target_names: list[str], target_alias: str | None,
                       source: Any, target_types: dict[str, str]) -> Analysis:
        keys, preds, text = merge_analysis(condition, target_names, target_alias, source, target_types)
        return Analysis(keys, [], text, preds)

    def observed_metrics(self, df: Any, metrics: list[Any], probe: Callable[[Any], Any]) -> dict[str, Any] | None:
        """Connect's `Observation`: the client fills it from the probe's response (`get` does not wait)."""
        return self.observed_collect(df, metrics, probe)[0]

    def observed_collect(self, df: Any, metrics: list[Any],
                         probe: Callable[[Any], Any]) -> tuple[dict[str, Any] | None, Any]:
        import uuid

        from pyspark.sql.connect.observation import Observation

        observation = Observation(f"__dk_observed_{uuid.uuid4().hex}")
        rows = probe(df.observe(observation, *metrics)).toArrow()
        row = observation.get
        return (dict(row) if row else None), rows

    def size_estimate(self, df: Any) -> int | None:
        """Parsed from the optimized plan's top `Statistics(sizeInBytes=...)` (`explain` in cost mode: one
        analyze round trip); None when the text is not found."""
        try:
            text = df._explain_string(mode="cost")
        except Exception:  # an older client, a plan the server refuses: no estimate
            return None
        return _size_in_bytes(text)


FACTS = ConnectFacts()

__all__ = ["FACTS", "ConnectFacts", "expression_sql", "merge_analysis", "source_alias"]
