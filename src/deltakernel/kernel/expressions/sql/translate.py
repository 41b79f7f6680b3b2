"""SQL expressions to the kernel predicate AST (`expressions/predicate`), when the translation is exact.

Partition pruning and data skipping need a predicate they can reason about; a SQL text that uses forms
without an exact kernel equivalent translates to None (callers then evaluate it on the data instead).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ....errors import InvalidFilterError
from ...schema.types import DataType, StructType
from ..predicate import model as ex
from .ast import COMPARISONS, Between, Binary, Col, InList, IsNull, Lit, SqlExpr, Unary, referenced_columns
from .parsing import parse_sql


# ----------------------------------------------------------------------------- to kernel predicate
def _resolve(schema: StructType, path: tuple[str, ...]) -> tuple[tuple[str, ...], DataType]:
    struct: DataType = schema
    out: list[str] = []
    for part in path:
        if not isinstance(struct, StructType) or not struct.has(part):
            raise InvalidFilterError(f"column {'.'.join(path)!r} is not in the table schema (columns: "
                                     f"{schema.names})")
        f = struct.field(part)
        out.append(f.name)
        struct = f.type
    return tuple(out), struct


def _literal_value(e: SqlExpr) -> tuple[bool, Any]:
    """(is a constant, its value) for literals and negated numeric literals."""
    if isinstance(e, Lit):
        return True, e.value
    return False, None


def to_predicate(expr: SqlExpr, schema: StructType) -> ex.Expr | None:
    """The exact kernel predicate for `expr`, or None when any part has no exact kernel form.

    Exactness matters: callers prune files with it (replaceWhere), so an approximation would be a
    silent data bug. Unknown columns raise InvalidFilterError instead of returning None.
    """
    for path in referenced_columns(expr):
        _resolve(schema, path)
    try:
        return _to_pred(expr, schema)
    except _Untranslatable:
        return None


class _Untranslatable(Exception):
    pass


def _operand(e: SqlExpr, schema: StructType, other: SqlExpr | None) -> ex.Column | ex.Literal:
    if isinstance(e, Col):
        return ex.Column(_resolve(schema, e.path)[0])
    is_lit, value = _literal_value(e)
    if not is_lit:
        raise _Untranslatable
    if isinstance(other, Col):
        return ex.coerce_literal(value, _resolve(schema, other.path)[1], ".".join(other.path))
    return ex.Literal(value)


def _to_pred(e: SqlExpr, schema: StructType) -> ex.Expr:
    if isinstance(e, Lit):
        if e.value is True:
            return ex.AlwaysTrue()
        if e.value is False:
            return ex.AlwaysFalse()
        raise _Untranslatable
    if isinstance(e, Col):
        path, dtype = _resolve(schema, e.path)
        if getattr(dtype, "name", None) != "boolean":
            raise _Untranslatable
        return ex.Comparison("=", ex.Column(path), ex.Literal(True, pa.bool_()))
    if isinstance(e, Unary) and e.op == "NOT":
        return ex.Not(_to_pred(e.operand, schema))
    if isinstance(e, Binary) and e.op in ("AND", "OR"):
        parts = (_to_pred(e.left, schema), _to_pred(e.right, schema))
        return ex.And(*parts) if e.op == "AND" else ex.Or(*parts)
    if isinstance(e, Binary) and e.op in COMPARISONS and e.op != "<=>":
        if not isinstance(e.left, Col) and not isinstance(e.right, Col):
            raise _Untranslatable
        left = _operand(e.left, schema, e.right)
        right = _operand(e.right, schema, e.left)
        if (isinstance(left, ex.Literal) and left.value is None) or (isinstance(right, ex.Literal) and \
                right.value is None):
            raise _Untranslatable  # `x = NULL` is NULL for every row; leave it to the evaluator
        return ex.Comparison(e.op, left, right)
    if isinstance(e, IsNull) and isinstance(e.operand, Col):
        return ex.IsNull(ex.Column(_resolve(schema, e.operand.path)[0]), e.negated)
    if isinstance(e, InList) and isinstance(e.operand, Col):
        path, dtype = _resolve(schema, e.operand.path)
        values: list[Any] = []
        for v in e.values:
            is_lit, value = _literal_value(v)
            if not is_lit:
                raise _Untranslatable
            values.append(None if value is None else ex.coerce_literal(value, dtype, ".".join(path)).value)
        lits = [ex.coerce_literal(v, dtype) for v in values if v is not None]
        vtype = lits[0].arrow_type if lits and all(x.arrow_type == lits[0].arrow_type for x in lits) else None
        return ex.In(ex.Column(path), tuple(values), e.negated, value_type=vtype)
    if isinstance(e, Between) and isinstance(e.operand, Col):
        col = e.operand
        inner = ex.And(_to_pred(Binary(">=", col, e.low), schema), _to_pred(Binary("<=", col, e.high), schema))
        return ex.Not(inner) if e.negated else inner
    raise _Untranslatable


def to_pyarrow_filter(text: str, schema: StructType, *, double_quoted_identifiers: bool = False) -> Any:
    """A SQL predicate as a `pyarrow.compute.Expression` (via the kernel AST); InvalidFilterError if inexact."""
    pred = to_predicate(parse_sql(text, double_quoted_identifiers=double_quoted_identifiers), schema)
    if pred is None:
        raise InvalidFilterError(f"predicate {text!r} uses forms that cannot be pushed into a row filter "
                                 "(only comparisons of columns with literals, IN, BETWEEN, IS NULL, AND/OR/NOT)")
    return ex.to_pyarrow(pred, schema)


__all__ = ["to_predicate", "to_pyarrow_filter"]
