"""deltakernel's Spark SQL evaluator: the expression AST of `kernel.expressions.sql` evaluated over Arrow
data, vectorized with `pyarrow.compute`, with Spark's (non-ANSI) semantics.

Why a package of its own, between the kernel and the operations: the kernel is the protocol (it parses
and translates expressions, it never evaluates them), while constraints, generated columns, DML
predicates and SET expressions must be evaluated the way Spark would. This is engine work, kept behind a
small public interface (`protocol.ExpressionEvaluator`, in the spirit of delta-kernel-rs's
`EvaluationHandler`) so the function families and any other evaluator share one contract.

Entry points: :func:`evaluate` (an expression or SQL text over a table), :class:`Evaluator` (one table,
many expressions), `functions.SUPPORTED_FUNCTIONS`.
"""

from __future__ import annotations

import pyarrow as pa

from ..kernel.expressions.sql import SqlExpr, parse_sql
from .evaluator import Evaluator, evaluate_expr
from .protocol import ExpressionEvaluator, Value


def evaluate(expr: SqlExpr | str, table: pa.Table | pa.RecordBatch) -> pa.Array:
    """Evaluate over every row of `table` with SQL semantics; one Arrow array of `num_rows` values."""
    node = parse_sql(expr) if isinstance(expr, str) else expr
    return evaluate_expr(node, table)


__all__ = ["Evaluator", "ExpressionEvaluator", "Value", "evaluate", "evaluate_expr"]
