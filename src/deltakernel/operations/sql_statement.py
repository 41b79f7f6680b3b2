"""Statement-level Spark SQL through sqlglot, shared by the engines that parse SQL statements themselves: the
DataFusion engine's DML (`datafusion/dml_parse.py`) and the Spark router on Connect sessions
(`spark/sql/text_plans.py`).

The pieces both need: the dialect that regenerates expressions as Spark SQL text, one statement's tree (syntax
errors raised as the caller's error type), sqlglot's tokens, and the original text of a statement's parts cut
out by tokens (a trailing query, a parenthesised subquery). sqlglot is imported on first use only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_DIALECT: Any = None


def dialect() -> Any:
    """sqlglot's Spark dialect, except that `<=>` stays `<=>` (sqlglot writes `IS NOT DISTINCT FROM`, which
    the kernel's parser does not read)."""
    global _DIALECT
    if _DIALECT is None:
        from sqlglot import exp
        from sqlglot.dialects.spark import Spark

        transforms = {
            **Spark.Generator.TRANSFORMS,
            exp.NullSafeEQ: lambda self, e: self.binary(e, "<=>"),
            exp.NullSafeNEQ: lambda self, e: f"NOT ({self.binary(e, '<=>')})",
        }
        generator = type("Generator", (Spark.Generator,), {"TRANSFORMS": transforms})
        _DIALECT = type("DeltakernelSpark", (Spark,), {"Generator": generator})
    return _DIALECT


def sql_text(node: Any) -> str:
    """An expression as Spark SQL text (`dialect`)."""
    return str(node.sql(dialect=dialect()))


def syntax_error(error: type[Exception], e: Exception, where: str) -> Exception:
    """`error` for sqlglot's ParseError / TokenError `e` on the statement shown as `where`."""
    message = str(e).splitlines()[0] if str(e) else type(e).__name__
    return error(f"syntax error: {message} (in: {where})")


def parse_one(text: str, error: type[Exception], where: str) -> Any:
    """The sqlglot tree (Spark dialect) of `text`, which must be one statement; `error` (with `where`, the
    statement as shown in messages) when sqlglot cannot read it or it holds another number of statements."""
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = [t for t in sqlglot.parse(text, read="spark") if t is not None]
    except (ParseError, TokenError) as e:
        raise syntax_error(error, e, where) from e
    if len(trees) != 1:
        raise error(f"expected one statement, got {len(trees)} (in: {where})")
    return trees[0]


def tokens(text: str) -> list[Any]:
    """sqlglot's Spark tokens of `text` (each with `start` / `end` offsets, `end` inclusive)."""
    from sqlglot.dialects.dialect import Dialect

    return list(Dialect.get_or_raise("spark").tokenize(text))


def closing(toks: list[Any], open_index: int, error: type[Exception]) -> int:
    """Index of the `)` that closes the `(` at `toks[open_index]`; `error` when there is none."""
    from sqlglot import TokenType

    depth = 0
    for k in range(open_index, len(toks)):
        if toks[k].token_type == TokenType.L_PAREN:
            depth += 1
        elif toks[k].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return k
    raise error("unbalanced parentheses")


def inner_text(text: str, toks: list[Any], open_index: int, error: type[Exception]) -> str:
    """The original text between the `(` at `toks[open_index]` and its `)`."""
    end = closing(toks, open_index, error)
    return text[toks[open_index].end + 1:toks[end].start].strip()


def query_text(text: str, query: Any, first: int = 2) -> str | None:
    """The original text of the query that ends a statement (INSERT ... query, CREATE ... AS query): the
    shortest suffix, from a top-level SELECT / WITH / VALUES / FROM / TABLE / `(` at or after token `first`,
    that parses to the same tree as `query`; None when there is none."""
    import sqlglot
    from sqlglot import TokenType

    starts = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.TABLE,
              TokenType.L_PAREN}
    depth = 0
    for tok in tokens(text)[first:]:
        if depth == 0 and tok.token_type in starts:
            piece = text[tok.start:].strip().rstrip(";").strip()
            try:
                if sqlglot.parse_one(piece, read="spark") == query:
                    return piece
            except Exception:  # not the query's start
                pass
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
    return None


def using_index(toks: list[Any]) -> int:
    """Index of a MERGE's top-level USING token; `len(toks)` when there is none."""
    from sqlglot import TokenType

    depth, i = 0, 0
    while i < len(toks) and not (depth == 0 and toks[i].token_type == TokenType.USING):
        if toks[i].token_type == TokenType.L_PAREN:
            depth += 1
        elif toks[i].token_type == TokenType.R_PAREN:
            depth -= 1
        i += 1
    return i


def merge_inserts(action: Any, key: Callable[[Any], str], error: type[Exception],
                  shown: Callable[[Any], str] = sql_text) -> dict[str, str]:
    """A MERGE's `INSERT (columns) VALUES (values)` as {key(column): value as Spark SQL text}; `error` when the
    two lists are missing or of different lengths (the action written by `shown`) or a column is named twice."""
    from sqlglot import exp

    cols = action.this.expressions if isinstance(action.this, exp.Tuple) else [action.this]
    vals_node = action.expression
    vals = vals_node.expressions if isinstance(vals_node, exp.Tuple) else [vals_node]
    if action.this is None or vals_node is None or len(cols) != len(vals):
        raise error(f"MERGE INSERT needs (columns) VALUES (values) of the same length, got {shown(action)!r}")
    inserts: dict[str, str] = {}
    for c, v in zip(cols, vals):
        name = key(c)
        if name in inserts:
            raise error(f"MERGE INSERT names column {name!r} twice")
        inserts[name] = sql_text(v)
    return inserts


def has_subquery(node: Any) -> bool:
    from sqlglot import exp

    return node is not None and node.find(exp.Select, exp.Subquery, exp.Exists) is not None


__all__ = ["closing", "dialect", "has_subquery", "inner_text", "merge_inserts", "parse_one", "query_text",
           "sql_text", "syntax_error", "tokens", "using_index"]
