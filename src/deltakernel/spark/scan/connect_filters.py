"""A filter condition of a Spark Connect DataFrame as a kernel predicate (for file skipping on the client).

A Connect `Column` is an unresolved expression tree built on the client (`pyspark.sql.connect.expressions`);
the comparisons, boolean connectives, IN, IS [NOT] NULL, BETWEEN-shaped ranges and casts it is made of are
turned into Spark SQL text and then into a kernel predicate by the kernel's SQL front end - the same path a
string condition takes. Anything else (UDFs, subqueries, functions of columns) gives None: no skipping, never a
wrong answer (Spark still applies the whole condition).
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

from ...kernel.schema.types import StructType

_BINARY = {"==": "=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "<>", "<>": "<>",
           "and": "AND", "or": "OR"}


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
    """Spark SQL text of a Connect Column, or None when part of it has no plain SQL form here."""
    expr = getattr(col, "_expr", None)
    if expr is None:
        return None
    try:
        return _sql(expr)
    except _NoSql:
        return None


class _NoSql(Exception):
    pass


def _sql(e: Any) -> str:
    from pyspark.sql.connect import expressions as X

    if isinstance(e, X.ColumnAlias):
        return _sql(e._child)
    if isinstance(e, X.ColumnReference):
        if e._is_metadata_column:
            raise _NoSql
        return _identifier(e._unparsed_identifier)
    if isinstance(e, X.LiteralExpression):
        return _literal(e._value, e._dataType)
    if isinstance(e, X.SQLExpression):
        return f"({e._expr})"
    if isinstance(e, X.CastExpression):
        if e._eval_mode == "try":
            raise _NoSql
        t = e._data_type if isinstance(e._data_type, str) else e._data_type.simpleString()
        return f"CAST({_sql(e._expr)} AS {t})"
    if isinstance(e, X.UnresolvedFunction) and not e._is_distinct:
        name, args = e._name.lower(), e._args
        if name in _BINARY and len(args) == 2:
            return f"({_sql(args[0])} {_BINARY[name]} {_sql(args[1])})"
        if name in ("not", "!") and len(args) == 1:
            return f"(NOT {_sql(args[0])})"
        if name == "isnull" and len(args) == 1:
            return f"({_sql(args[0])} IS NULL)"
        if name == "isnotnull" and len(args) == 1:
            return f"({_sql(args[0])} IS NOT NULL)"
        if name == "in" and len(args) >= 2:
            return f"({_sql(args[0])} IN ({', '.join(_sql(a) for a in args[1:])}))"
        if name == "like" and len(args) == 2:
            return f"({_sql(args[0])} LIKE {_sql(args[1])})"
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
    if t == "DateType" and isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if t in ("TimestampType", "TimestampNTZType") and isinstance(value, dt.datetime):
        if t == "TimestampType" and value.tzinfo is None:
            raise _NoSql  # a naive datetime means the client's local time zone: leave it to Spark
        kw = "TIMESTAMP" if t == "TimestampType" else "TIMESTAMP_NTZ"
        text = value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f") + "Z" \
            if value.tzinfo is not None else value.strftime("%Y-%m-%d %H:%M:%S.%f")
        return f"{kw} '{text}'"
    raise _NoSql


__all__ = ["column_sql", "condition_predicate"]
