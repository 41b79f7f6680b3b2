"""Planning a Spark DML on the driver, before anything is read or written.

- The condition and the SET expressions are Spark's (a SQL string or a `Column`): Spark's analyzer checks
  them against an empty frame of the table's schema, so an unknown column or a non-boolean condition is a
  typed DeltaError naming it, raised before any job runs.
- The kernel only prunes: the condition's SQL text (a Column's `expr().sql()`) goes through the kernel's
  planner (`touched_rows.plan_predicate`) for partition pruning, stats skipping and the conflict read set.
  Spark accepts far more functions than the kernel evaluates; when the kernel cannot plan the text, the
  translatable conjuncts still prune and Spark alone decides which rows match.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError, InvalidFilterError
from ...kernel.expressions import predicate as ex
from ...kernel.snapshot import Snapshot
from ...operations.dml.assignments import SetTargets
from ...operations.dml.touched_rows import DmlPredicate, plan_predicate
from ..common.schema import to_spark_schema
from .facts import ExpressionFacts

_log = logging.getLogger(__name__)


def condition_column(condition: Any) -> Any:
    """The condition as a Spark Column (None = every row); TypeError for anything but str / Column."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if condition is None or isinstance(condition, Column):
        return condition
    if isinstance(condition, str):
        if not condition.strip():
            raise InvalidFilterError("a DML condition must be a non-empty SQL string or a Column")
        return F.expr(condition)
    raise TypeError(f"condition must be a Spark SQL Column or a string (expression in SQL syntax), "
                    f"found {type(condition).__name__}")


# ----------------------------------------------------------------------------- expression facts, per kind
def _classic() -> ExpressionFacts:
    from .facts_classic import FACTS

    return FACTS


def _connect() -> ExpressionFacts:
    from .facts_connect import FACTS

    return FACTS


#: the expression facts of each session kind (`kinds.kind_of(spark).name`)
FACTS: dict[str, Callable[[], ExpressionFacts]] = {"classic": _classic, "connect": _connect}


def facts_of(spark: Any) -> ExpressionFacts:
    """The session's expression facts, by the session's kind (chosen once per session by `kinds.kind_of`)."""
    from ..kinds import kind_of

    return FACTS[kind_of(spark).name]()


def sql_text(value: Any, empty: Any, condition: bool = True) -> str | None:
    """SQL text of a condition (or, `condition=False`, a SET value): the string itself; for a Column, the
    SQL of its expression as Spark's analyzer resolves it on `empty` (the table's schema, no alias), or
    None when it does not resolve there (it names the DeltaTable's alias) or cannot be printed
    (`facts.ExpressionFacts.column_sql`: Spark's analyzed plan on classic sessions, the Column's own tree on
    Spark Connect, kept only when it resolves on `empty`)."""
    if value is None or isinstance(value, str):
        return value
    return facts_of(empty.sparkSession).column_sql(value, empty, condition)


def resolved(df: Any) -> Any:
    """`df`, analyzed now: a classic DataFrame is analyzed when built; a Spark Connect one only when asked
    (its schema: one analyze round trip), so an AnalysisException surfaces here, before any job."""
    return facts_of(df.sparkSession).resolved(df)


def empty_frame(spark: Any, snapshot: Snapshot, alias: str | None = None) -> Any:
    """A frame with the table's logical schema and no rows: Spark's analyzer checks expressions on it."""
    df = spark.createDataFrame([], to_spark_schema(snapshot.schema))
    return df.alias(alias) if alias else df


def analysis_error() -> tuple[type[BaseException], ...]:
    from pyspark.errors import AnalysisException

    return (AnalysisException,)


def check_condition(empty: Any, condition: Any, text: str | None) -> None:
    """Raise InvalidFilterError when Spark cannot resolve the condition or it is not boolean."""
    if condition is None:
        return
    try:
        resolved(empty.where(condition))
    except analysis_error() as e:
        raise InvalidFilterError(f"invalid DML condition {text or condition!r}: {_first_line(e)}") from e


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def fold_casts(node: Any) -> Any:
    """`CAST(<literal> AS t)` (what Spark's analyzer prints) folded into a typed literal."""
    import dataclasses

    import pyarrow as pa

    from ...kernel.expressions import sql

    if isinstance(node, sql.Cast) and isinstance(node.operand, sql.Lit):
        from ...sqleval import evaluate_expr

        try:
            value = evaluate_expr(node, pa.table({"__x": [0]}))[0].as_py()
        except Exception:
            return node
        return sql.Lit(value, node.type_name if node.type_name in ("timestamp", "timestamp_ntz", "date") else None)
    if dataclasses.is_dataclass(node):
        changes = {}
        for fld in dataclasses.fields(node):
            v = getattr(node, fld.name)
            if dataclasses.is_dataclass(v):
                changes[fld.name] = fold_casts(v)
            elif isinstance(v, tuple) and v and all(dataclasses.is_dataclass(x) for x in v):
                changes[fld.name] = tuple(fold_casts(x) for x in v)
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]
    return node


def plan_condition(condition: Any, text: str | None, snapshot: Snapshot) -> DmlPredicate:
    """The kernel's plan of the condition's SQL `text` for pruning; a conservative plan (prune by what
    translates, never partition-only) when the kernel cannot evaluate the text itself or there is none."""
    if condition is None:
        return plan_predicate(None, snapshot)
    if text is None:  # a Column without SQL text: Spark decides, no pruning
        return DmlPredicate(None, None, None, None, (), False)
    try:
        parsed = None
        if not isinstance(condition, str):  # analyzed SQL: literals come wrapped in casts
            from ...kernel.expressions.sql import parse_sql

            parsed = fold_casts(parse_sql(text))
        return plan_predicate(text, snapshot, parsed)
    except DeltaError as e:
        _log.debug("kernel cannot plan DML condition %r (%s): Spark evaluates it, pruning by conjuncts", text, e)
    pruning: ex.Expr | None = None
    try:
        from ...kernel.expressions.sql import conjuncts, parse_sql, to_predicate

        parts = []
        for c in conjuncts(parse_sql(text)):
            try:
                p = to_predicate(c, snapshot.schema)
            except DeltaError:
                p = None
            if p is not None:
                parts.append(p)
        pruning = ex.And(*parts) if len(parts) > 1 else parts[0] if parts else None
    except Exception:
        pruning = None
    return DmlPredicate(text, None, None, pruning, (), False)


# ----------------------------------------------------------------------------- UPDATE's SET list
@dataclass(frozen=True)
class Assignment:
    """One `SET column = value`: the table column, the value as a Column cast to its type, as given."""

    column: str
    value: Any
    given: Any


def plan_assignments(spark: Any, snapshot: Snapshot, set_: Any, empty: Any) -> dict[str, Assignment]:
    """delta-spark's `set` dict (column -> SQL string or Column) checked and cast to the column types."""
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if set_ is None:
        raise InvalidFilterError("'set' cannot be None")
    if not isinstance(set_, Mapping):
        raise TypeError(f"'set' must be a dict, found {type(set_).__name__}")
    # an empty dict is accepted, as delta-spark does: the matched rows are rewritten unchanged
    spark_schema = to_spark_schema(snapshot.schema)
    targets = SetTargets(snapshot.schema, quotes="`", nested_hint=", e.g. with named_struct")
    out: dict[str, Assignment] = {}
    for key, value in set_.items():
        if not isinstance(key, str):
            raise TypeError(f"keys of 'set' must be column names (str), found {key!r}")
        field = targets.resolve(key)
        if isinstance(value, Column):
            col = value
        elif isinstance(value, str):
            col = F.expr(value)
        else:
            raise TypeError(f"values of 'set' must be Spark SQL Columns or strings (expressions in SQL syntax), "
                            f"found {type(value).__name__} for {key!r}")
        out[field.name] = Assignment(field.name, col.cast(spark_schema[field.name].dataType), value)
    if not out:
        return out
    try:
        resolved(empty.select(*[a.value.alias(n) for n, a in out.items()]))
    except analysis_error() as e:
        raise InvalidFilterError(f"invalid UPDATE expression: {_first_line(e)}") from e
    return out


__all__ = ["FACTS", "facts_of", "Assignment", "check_condition", "condition_column", "empty_frame", "plan_assignments",
           "plan_condition", "resolved", "sql_text"]
