"""Expression facts: what the Spark DML jobs need to know about user expressions (a Column's SQL text, the MERGE
condition's join keys, a source frame's alias, a frame analyzed now), read the way each session kind can.

One small protocol, `ExpressionFacts`, with two implementations: `facts_classic.py` reads Spark's analyzed plan
through py4j (attributes told apart by expression id), `facts_connect.py` reads the Connect client's own
expression trees (there is no analyzed plan on the client; one analyze round trip for a schema). The jobs
themselves (`delete.py`, `update.py`, `merge*.py`) exist once and ask `plan.facts_of(session)`; the choice is made
per session kind (`kinds.kind_of`), never by branching in the jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Analysis:
    """What the MERGE join condition says: equi-join keys (target column, source column), the SQL of the
    target-only conjuncts and of the whole condition; over Connect the target-only conjuncts parsed."""

    keys: list[tuple[str, str]] = field(default_factory=list)
    target_only: list[str] = field(default_factory=list)
    sql: str | None = None
    target_predicates: list[Any] = field(default_factory=list)


class ExpressionFacts(Protocol):
    def column_sql(self, value: Any, empty: Any, condition: bool) -> str | None:
        """SQL text of a Column as a condition (or a SET value) on `empty` (the table's schema, no alias), or
        None when it does not resolve there or cannot be printed."""
        ...

    def resolved(self, df: Any) -> Any:
        """`df`, analyzed now (so an AnalysisException surfaces before any job)."""
        ...

    def printed(self, value: Any) -> str:
        """A Column as Spark prints it (history only, never parsed back)."""
        ...

    def source_alias(self, df: Any) -> str | None:
        """The alias a source frame was given last (`df.alias("s")`), or None."""
        ...

    def merge_analysis(self, joined: Any, condition: Any, target_names: list[str], target_alias: str | None,
                       source: Any, target_types: dict[str, str]) -> Analysis:
        """Keys and target-only conjuncts of the MERGE condition (`joined`: the empty target-source join)."""
        ...

    def observed_metrics(self, df: Any, metrics: list[Any], probe: Callable[[Any], Any]) -> dict[str, Any] | None:
        """The aggregate Columns `metrics` (aliased) observed on `df` (`DataFrame.observe`) while the frame
        `probe(observed)` is collected (it should return no row): their values as `collect()` gives them; None
        when no metrics came back. Spark refusing them as metrics raises its AnalysisException."""
        ...

    def observed_collect(self, df: Any, metrics: list[Any],
                         probe: Callable[[Any], Any]) -> tuple[dict[str, Any] | None, Any]:
        """`observed_metrics`, and the rows `probe(observed)` returned (a pyarrow Table): one job both reads
        a small frame to the driver and observes it."""
        ...

    def size_estimate(self, df: Any) -> int | None:
        """Spark's optimizer estimate of `df`'s size in bytes (what decides a broadcast join), None when unknown."""
        ...


__all__ = ["Analysis", "ExpressionFacts"]
