"""The evaluator's public interface, in the spirit of delta-kernel-rs's `EvaluationHandler`: what the SQL
function families (`functions/`) and explicit casts (`casts.py`) may ask of the evaluator that calls them.

Why a protocol: the functions need the evaluator (to evaluate sub-expressions, coerce types, cast) and the
evaluator dispatches to the functions; naming the interface here keeps both sides importing only this
module, so the package has no import cycle and another evaluator could serve the same functions.
"""

from __future__ import annotations

from typing import Any, Protocol, Union

import pyarrow as pa

from ..kernel.expressions.sql.ast import Func, SqlExpr

#: a column of values, or one value broadcast over every row
Value = Union[pa.Array, pa.Scalar]

#: a function handler: (evaluator, evaluated arguments, the call node) -> result
Handler = Any

#: name (upper case) -> (minimum arguments, maximum arguments, handler)
FunctionTable = dict[str, tuple[int, int, Handler]]


class ExpressionEvaluator(Protocol):
    """Evaluates SQL expression nodes over one Arrow table or batch, with Spark's (non-ANSI) semantics."""

    n: int  # rows in the table being evaluated

    def eval(self, e: SqlExpr) -> Value: ...

    def boolean(self, v: Value, e: SqlExpr) -> Value: ...

    def cast(self, v: Value, t: pa.DataType) -> Value: ...

    def sql_cast(self, v: Value, t: pa.DataType) -> Value: ...

    def to_string(self, v: Value) -> Value: ...

    def unify(self, a: Value, b: Value) -> tuple[Value, Value]: ...

    def common(self, values: list[Value]) -> list[Value]: ...

    def compare(self, op: str, a: Value, b: Value) -> Value: ...

    def arith(self, op: str, a: Value, b: Value) -> Value: ...

    def concat(self, parts: list[Value]) -> Value: ...

    def func(self, e: Func) -> Value: ...


__all__ = ["ExpressionEvaluator", "FunctionTable", "Handler", "Value"]
