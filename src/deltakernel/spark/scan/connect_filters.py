"""Spark Connect Columns as Spark SQL text, and filter conditions as kernel predicates (client-side skipping).

A Connect `Column` is an unresolved expression tree built on the client (`pyspark.sql.connect.expressions`);
`expression_sql` prints it as Spark SQL (what a classic session reads from the analyzed plan: DML conditions,
SET values, history's operationParameters). `condition_predicate` turns that text (or a string condition) into a
kernel predicate through the kernel's SQL front end, which accepts only exact forms (comparisons, AND/OR/NOT,
IN, IS [NOT] NULL, ranges, casts of literals): anything else (UDFs, functions of columns) gives None - no
skipping, never a wrong answer (Spark still applies the whole condition).
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import re
from typing import Any

from ...kernel.schema.types import StructType

_log = logging.getLogger(__name__)

_INFIX = {"==": "=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "<>", "<>": "<>",
          "<=>": "<=>", "and": "AND", "or": "OR", "+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "&": "&",
          "|": "|", "^": "^", "rlike": "RLIKE", "like": "LIKE", "ilike": "ILIKE"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def condition_predicate(condition: Any, schema: StructType) -> Any:
    """The kernel predicate of `condition` (SQL text or a Connect Column) over `schema`, or None."""
    from ...kernel.expressions import sql

    text = condition if isinstance(condition, str) else column_sql(condition)
    if not text:
        return None
    try:
        return sql.to_predicate(sql.parse_sql(text), schema)
    except Exception:  # unknown columns (the frame was joined / renamed), syntax the kernel does not parse
        return None


def column_sql(col: Any) -> str | None:
    """Spark SQL text of a Connect Column filtering the frame it was made from (`df["c"]` allowed)."""
    return expression_sql(col, bound_columns=True)


def expression_sql(col: Any, *, bound_columns: bool = False) -> str | None:
    """Spark SQL text of a Connect Column, or None (UDFs, lambdas, window functions, metadata columns...).
    Function calls print as `name(args)`: Connect sends them to Spark by that same name, so the text means what
    the Column means (skipping then keeps only what the kernel's predicate model reads exactly). A column bound
    to one frame (`df["c"]`) has no SQL name unless `bound_columns` (the Column filters that frame itself)."""
    expr = getattr(col, "_expr", None)
    if expr is None:
        return None
    try:
        return _sql(expr, bound_columns)
    except _NoSql:
        return None
    except Exception as e:  # an expression class of another pyspark version
        _log.debug("deltakernel: no SQL text for %r: %s", expr, e)
        return None


class _NoSql(Exception):
    pass


def _sql(e: Any, bound: bool) -> str:
    from pyspark.sql.connect import expressions as X

    if isinstance(e, X.ColumnAlias):
        return _sql(e._child, bound)
    if isinstance(e, X.ColumnReference):
        if e._is_metadata_column or (e._plan_id is not None and not bound):
            raise _NoSql
        return _identifier(e._unparsed_identifier)
    if isinstance(e, X.LiteralExpression):
        return _literal(e._value, e._dataType)
    if isinstance(e, X.SQLExpression):
        return f"({e._expr})"
    if isinstance(e, X.CastExpression):
        t = e._data_type if isinstance(e._data_type, str) else e._data_type.simpleString()
        return f"{'TRY_CAST' if e._eval_mode == 'try' else 'CAST'}({_sql(e._expr, bound)} AS {t})"
    if isinstance(e, X.CaseWhen):
        parts = [f"WHEN {_sql(c, bound)} THEN {_sql(v, bound)}" for c, v in e._branches]
        tail = f" ELSE {_sql(e._else_value, bound)}" if e._else_value is not None else ""
        return f"(CASE {' '.join(parts)}{tail} END)"
    if isinstance(e, X.UnresolvedFunction) and not e._is_distinct:
        return _function(e._name, e._args, bound)
    raise _NoSql


def _function(name: str, args: list[Any], bound: bool) -> str:
    low = name.lower()
    a = [_sql(x, bound) for x in args]
    if low in _INFIX and len(a) == 2:
        return f"({a[0]} {_INFIX[low]} {a[1]})"
    if low in ("not", "!") and len(a) == 1:
        return f"(NOT {a[0]})"
    if low == "negative" and len(a) == 1:
        return f"(- {a[0]})"
    if low == "isnull" and len(a) == 1:
        return f"({a[0]} IS NULL)"
    if low == "isnotnull" and len(a) == 1:
        return f"({a[0]} IS NOT NULL)"
    if low == "in" and len(a) >= 2:
        return f"({a[0]} IN ({', '.join(a[1:])}))"
    if low == "when":  # CaseWhen sends itself as `when(c1, v1, ..., else)`
        pairs = [f"WHEN {a[i]} THEN {a[i + 1]}" for i in range(0, len(a) - 1, 2)]
        tail = f" ELSE {a[-1]}" if len(a) % 2 else ""
        return f"(CASE {' '.join(pairs)}{tail} END)"
    if _NAME.match(name):
        return f"{name}({', '.join(a)})"
    raise _NoSql


def _identifier(name: str) -> str:
    """Connect's unparsed identifier: `a`, `a.b`, `` `a b` ``; keep its quoting, reject anything odd."""
    if name == "*" or name.endswith(".*"):
        raise _NoSql
    return name


def _literal(value: Any, data_type: Any) -> str:
    if value is None:
        return "NULL"
    t = type(data_type).__name__
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if t in ("ByteType", "ShortType", "IntegerType", "LongType") and isinstance(value, int):
        return str(value) + ("L" if t == "LongType" and not -(2**31) <= value < 2**31 else "")
    if t in ("FloatType", "DoubleType") and isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _NoSql
        return f"CAST({value!r} AS {'DOUBLE' if t == 'DoubleType' else 'FLOAT'})"
    if t == "DecimalType" and isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS DECIMAL({data_type.precision},{data_type.scale}))"
    if t == "StringType" and isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t == "DateType" and isinstance(value, int):  # Connect keeps dates as days since the epoch
        return f"DATE '{(dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat()}'"
    if t in ("TimestampType", "TimestampNTZType") and isinstance(value, int):  # microseconds since the epoch
        instant = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        text = instant.strftime("%Y-%m-%d %H:%M:%S.%f")
        return f"TIMESTAMP '{text}Z'" if t == "TimestampType" else f"TIMESTAMP_NTZ '{text}'"
    raise _NoSql


__all__ = ["column_sql", "condition_predicate", "expression_sql"]
