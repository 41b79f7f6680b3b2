"""Statement-level Spark SQL for the embedded engine's DML (`dml.py`): sqlglot parsing, and the original
text of the pieces that run in DataFusion (INSERT's query, MERGE's USING source, a leading WITH clause, an
IN subquery), cut out of the statement by tokens so they mean exactly what the user wrote. The pieces the Spark
router's Connect parse uses too (dialect, one-statement parse, tokens, query / subquery text) live in
`operations/sql_statement.py`.

Also home of the DML error types (the lowest module of the DML package). sqlglot is imported on the first
DML statement only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DeltaError
from ..operations import sql_statement as S
from ..operations.sql_statement import has_subquery, sql_text, tokens


class DmlError(DeltaError):
    """A Delta DML statement that cannot run as written (unsupported form, bad column list, source query
    that DataFusion could not run, ...)."""


class DmlSyntaxError(DmlError):
    """A DML statement that does not parse (Spark SQL syntax)."""


class DmlTargetError(DmlError):
    """The target of a DML statement is not a known table, or not a Delta table registered through
    deltakernel in this session."""


def head(sql: str) -> str:
    first = sql.strip().splitlines()[0] if sql.strip() else ""
    return first if len(first) <= 60 else first[:59] + "…"


@dataclass
class Statement:
    """A parsed DML statement. `text` is the statement with `WITH SCHEMA EVOLUTION` blanked out (same length,
    so token offsets into it are offsets into what the user wrote); `with_text` is the leading `WITH ...`
    clause (common table expressions), prefixed to every query the statement runs."""

    tree: Any
    text: str
    schema_evolution: bool = False
    with_text: str | None = None


def parse(statement: str) -> Any:
    """The statement's sqlglot tree (Spark dialect); a syntax error is a DmlSyntaxError."""
    return parse_statement(statement).tree


def parse_statement(statement: str) -> Statement:
    from sqlglot.errors import ParseError, TokenError

    try:
        text, evolution = _strip_schema_evolution(statement)
    except (ParseError, TokenError) as e:
        raise S.syntax_error(DmlSyntaxError, e, head(statement)) from e
    tree = S.parse_one(text, DmlSyntaxError, head(statement))
    with_text = _with_text(text) if with_clause(tree) is not None else None
    return Statement(tree, text, evolution, with_text)


def with_clause(tree: Any) -> Any:
    """The statement's own leading WITH (sqlglot 30 calls the argument `with_`, older versions `with`)."""
    return tree.args.get("with_") or tree.args.get("with")


def _strip_schema_evolution(statement: str) -> tuple[str, bool]:
    """Spark 4's `MERGE WITH SCHEMA EVOLUTION INTO ...`, which sqlglot does not parse: the three words are
    found with sqlglot's tokenizer (never in a string or a comment) and replaced by spaces."""
    from sqlglot import TokenType

    toks = tokens(statement)
    depth = 0
    for i, tok in enumerate(toks):
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and tok.token_type == TokenType.MERGE and i + 3 < len(toks) \
                and [t.text.upper() for t in toks[i + 1:i + 4]] == ["WITH", "SCHEMA", "EVOLUTION"]:
            start, end = toks[i + 1].start, toks[i + 3].end + 1
            return statement[:start] + " " * (end - start) + statement[end:], True
    return statement, False


def _with_text(text: str) -> str:
    """The leading `WITH name AS (...), ...` of a statement: up to its first top-level DML keyword."""
    from sqlglot import TokenType

    toks = tokens(text)
    depth = 0
    for tok in toks[1:]:
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and tok.text.upper() in ("INSERT", "MERGE", "DELETE", "UPDATE"):
            return text[toks[0].start:tok.start].strip()
    raise DmlSyntaxError(f"WITH without INSERT / MERGE / DELETE / UPDATE (in: {head(text)})")


def with_prefixed(with_text: str | None, query: str) -> str:
    """`query` under the statement's common table expressions (a query with its own WITH is nested)."""
    return query if not with_text else f"{with_text} ({query})"


def blank_with(stmt: Statement) -> str:
    """The statement text with its leading WITH clause blanked out (offsets kept)."""
    if not stmt.with_text:
        return stmt.text
    start = stmt.text.index(stmt.with_text)
    end = start + len(stmt.with_text)
    return stmt.text[:start] + " " * (end - start) + stmt.text[end:]


def query_text(statement: str, query: Any) -> str:
    """The original text of the query that ends an INSERT: the shortest suffix of the statement, starting at
    a top-level SELECT / WITH / VALUES / FROM / TABLE / `(`, that parses to the same tree."""
    text = S.query_text(statement, query)
    if text is not None:
        return text
    raise DmlError(f"cannot locate the query of this INSERT (in: {head(statement)})")


def using_text(statement: str) -> tuple[str, bool]:
    """The original text of a MERGE's USING source: (inner text of `( subquery )`, True) or (the table
    reference / table function call, False)."""
    from sqlglot import TokenType

    toks = tokens(statement)
    i = S.using_index(toks)
    if i == len(toks):
        raise DmlSyntaxError(f"MERGE without USING (in: {head(statement)})")
    j = i + 1
    if j < len(toks) and toks[j].token_type == TokenType.L_PAREN:
        return S.inner_text(statement, toks, j, DmlSyntaxError), True
    k = j
    while k < len(toks):  # name(.name)* [ ( args ) ]
        if k + 1 < len(toks) and toks[k + 1].token_type == TokenType.DOT:
            k += 2
            continue
        if k + 1 < len(toks) and toks[k + 1].token_type == TokenType.L_PAREN:
            k = closing(toks, k + 1)
        break
    if k >= len(toks):
        raise DmlSyntaxError(f"MERGE: USING needs a table or a (subquery) (in: {head(statement)})")
    return statement[toks[j].start:toks[k].end + 1].strip(), False


def in_subquery_text(statement: str) -> str:
    """The original text of the (one) `IN ( subquery )` of a DELETE / UPDATE condition."""
    from sqlglot import TokenType

    toks = tokens(statement)
    for i, tok in enumerate(toks[:-2]):
        if tok.token_type == TokenType.IN and toks[i + 1].token_type == TokenType.L_PAREN \
                and toks[i + 2].token_type in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN,
                                               TokenType.VALUES, TokenType.FROM, TokenType.TABLE):
            return S.inner_text(statement, toks, i + 1, DmlSyntaxError)
    raise DmlError(f"cannot locate the IN subquery (in: {head(statement)})")


def closing(toks: list[Any], open_index: int) -> int:
    return S.closing(toks, open_index, DmlSyntaxError)


def strip_qualifier(node: Any, alias: str) -> Any:
    """`node` with `alias.col` (and `alias.struct.field`) written as `col` (`struct.field`): DELETE and
    UPDATE predicates name one table, and the kernel reads plain column names."""
    from sqlglot import exp

    alias_l = alias.lower()

    def fix(n: Any) -> Any:
        if not isinstance(n, exp.Column):
            return n
        db, tbl = n.args.get("db"), n.args.get("table")
        if db is not None and tbl is not None and n.args.get("catalog") is None and db.name.lower() == alias_l:
            return exp.Column(this=n.this.copy(), table=tbl.copy())
        if db is None and tbl is not None and tbl.name.lower() == alias_l:
            return exp.Column(this=n.this.copy())
        return n

    return node.transform(fix)


def check_no_subquery(node: Any, what: str) -> None:
    """delta-spark's rule (DELTA_UNSUPPORTED_SUBQUERY) with its wording, and what to write instead."""
    if has_subquery(node):
        raise DmlError(f"Subqueries are not supported in the {what} (condition = {sql_text(node)!r}); "
                       "subqueries in DELETE / UPDATE conditions are refused as by delta-spark, except one "
                       "`column IN (SELECT ...)` conjunct. Write it as MERGE INTO ... USING (subquery) ... "
                       "WHEN MATCHED THEN DELETE / UPDATE")


__all__ = [
    "DmlError", "DmlSyntaxError", "DmlTargetError", "Statement", "blank_with", "check_no_subquery", "closing",
    "has_subquery", "head", "in_subquery_text", "parse", "parse_statement", "query_text", "sql_text",
    "strip_qualifier", "tokens", "using_text", "with_clause", "with_prefixed",
]
