"""Spark SQL text to the expression AST (`ast.py`).

Delta stores CHECK constraints, invariants, generated-column expressions and column defaults as Spark
SQL text, and deltalake's `predicate=` / `replaceWhere` / DML strings are SQL too. The text is parsed
by `fast_parse.py` when it is one of the simplest forms, else by sqlglot's Spark dialect (`sqlglot_parse.py`,
imported on first use; `docs/decisions.md`, "SQL parsing: sqlglot"), into the immutable AST of `ast.py`, which
`deltakernel.sqleval` evaluates with Spark's (non-ANSI) semantics and `translate.py` turns, when it can do so
exactly, into the kernel predicate AST (`expressions/predicate`) for partition pruning and data skipping.

Accepted: OR / AND / NOT (`!`); comparisons = == != <> < <= > >= <=>, IS [NOT] DISTINCT FROM,
IS [NOT] NULL / TRUE / FALSE / UNKNOWN, [NOT] IN (...), [NOT] BETWEEN, [NOT] LIKE / ILIKE [ESCAPE 'c'],
RLIKE / REGEXP; + - * / % || DIV & | ^ ~; `x +/- INTERVAL n unit` (folded into a `+INTERVAL` call);
`a[i]` / `m[key]` (a `[]` call); TRIM(BOTH | LEADING | TRAILING c FROM s); POSITION(a IN b); unary - and +;
literals (strings with Spark's escapes and '' for a quote,
adjacent strings concatenated, r'raw', X'hex' binary, numbers typed as Spark with the L S Y D F BD
suffixes, `DATE 'x'` / `TIMESTAMP 'x'` / `TIMESTAMP_NTZ 'x'` / `TIMESTAMP_LTZ 'x'`, TRUE, FALSE, NULL);
column references plain, `backticked` (`` `a``b` ``) or dotted `a.b.c`; function calls by name (kept as
written, upper-cased: the evaluator dispatches on it); CAST / TRY_CAST / `x::type`; CASE; EXTRACT.
Double-quoted text is a string literal as in Spark unless `double_quoted_identifiers=True`
(deltalake / DataFusion style). What sqlglot parses but has no exact meaning here (an INTERVAL on its
own, subqueries, lambdas, slices, ...) raises InvalidFilterError, as do syntax errors. The functions are
in `deltakernel/sqleval/functions/`, explicit casts in `sqleval/casts.py`.
"""

from __future__ import annotations

from collections.abc import Iterable

from ....errors import InvalidFilterError
from .ast import SqlExpr


def parse_sql(text: str, *, double_quoted_identifiers: bool = False) -> SqlExpr:
    """Parse a Spark SQL expression; raises InvalidFilterError (a DeltaError) on malformed text.

    Parsed trees are immutable and cached by text: constraints, generated columns and DML predicates
    are parsed once per distinct text, however many batches evaluate them.
    """
    if not isinstance(text, str):
        raise InvalidFilterError(f"a SQL expression must be a string, got {type(text).__name__}")
    from .fast_parse import parse_simple

    simple = parse_simple(text)
    if simple is not None:
        return simple
    from .sqlglot_parse import parse_cached

    return parse_cached(text, bool(double_quoted_identifiers))


def quote_column_identifiers(text: str, column_names: Iterable[str]) -> str:
    """deltalake-facing SQL -> Spark SQL: a double-quoted token naming an existing column (case-insensitive)
    becomes a backticked identifier; every other double-quoted token stays a Spark string literal.

    deltalake (DataFusion) reads `"high price" >= 0` as a column; Spark reads double quotes as a string.
    Rewriting only the tokens that name a column accepts both spellings, and what is stored (constraints)
    is Spark's form, which Spark and every Delta reader parse the same way.
    """
    if '"' not in text:
        return text
    names = {n.lower() for n in column_names}
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ("'", "`", '"'):
            j = i + 1
            chars: list[str] = []
            while j < n:
                if text[j] == "\\" and c != "`" and j + 1 < n:
                    chars.append(text[j + 1])
                    j += 2
                    continue
                if text[j] == c:
                    if j + 1 < n and text[j + 1] == c:  # doubled quote: one literal quote
                        chars.append(c)
                        j += 2
                        continue
                    break
                chars.append(text[j])
                j += 1
            token = text[i:j + 1]
            content = "".join(chars)
            if c == '"' and j < n and content.lower() in names:
                token = "`" + content.replace("`", "``") + "`"
            out.append(token)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


__all__ = ["parse_sql", "quote_column_identifiers"]
