"""OPTIMIZE's `predicate` history parameter in delta-spark's form.

delta-spark parses each `where(...)` / `OPTIMIZE ... WHERE` filter into an unresolved Catalyst expression and
records its `toString`: `["('key = a)"]` for `key = 'a'` (column references prefixed by `'`, string literals
unquoted, each binary operation in parentheses). Users and delta-spark's own tests read that text back from
`history()`, so deltakernel writes the same form. It is built from deltakernel's parse of the filter, so it is
the same on classic and Connect sessions (no JVM parser needed); a construct this module does not render
(functions, CASE, casts, ...) is recorded as the user wrote it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from ...kernel.expressions.sql.ast import Binary, Col, InList, IsNull, Lit, Unary
from ...kernel.expressions.sql.parsing import parse_sql


class _Unrendered(Exception):
    """A construct with no rendering here: the caller records the filter's own text."""


def _lit(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal, str, dt.date)):
        return str(value)
    raise _Unrendered


def _render(e: Any) -> str:
    if isinstance(e, Col):
        return "'" + ".".join(e.path)
    if isinstance(e, Lit):
        return _lit(e.value)
    if isinstance(e, Binary):
        if e.op == "!=":  # Catalyst parses `a != b` / `a <> b` as NOT (a = b)
            return f"NOT ({_render(e.left)} = {_render(e.right)})"
        if e.op in ("=", "<=>", "<", "<=", ">", ">=", "AND", "OR", "+", "-", "*", "/", "%"):
            return f"({_render(e.left)} {e.op} {_render(e.right)})"
        raise _Unrendered
    if isinstance(e, Unary) and e.op == "NOT":
        return f"NOT {_render(e.operand)}"
    if isinstance(e, IsNull):
        return f"{'isnotnull' if e.negated else 'isnull'}({_render(e.operand)})"
    if isinstance(e, InList):
        text = f"{_render(e.operand)} IN ({','.join(_render(v) for v in e.values)})"
        return f"NOT {text}" if e.negated else text
    raise _Unrendered


def catalyst_text(text: str) -> str:
    """The unresolved Catalyst `toString` of the SQL filter `text` (the text itself when not rendered here)."""
    try:
        return _render(parse_sql(text))
    except Exception:  # an unparsable filter fails later with its own error; unknown constructs keep the text
        return text
