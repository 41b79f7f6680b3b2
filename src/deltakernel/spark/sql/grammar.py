"""The Delta-only SQL statements Spark's own parser does not know, parsed by a small tokenizer grammar.

Spark 4 parses MERGE / DELETE / UPDATE / INSERT / CREATE / ALTER ... natively, and the router reads those
plans (`plans.py`). What is left is delta-spark's extension grammar (`DeltaSqlBase.g4`): VACUUM, DESCRIBE
DETAIL / HISTORY, GENERATE, CONVERT TO DELTA, RESTORE, OPTIMIZE, REORG, and the ALTER TABLE forms ADD / DROP
CONSTRAINT, DROP FEATURE and CLUSTER BY. Spark would reject them or, worse, misread them (`DESCRIBE HISTORY t`
parses as "describe column t of table HISTORY"), so they are recognised here first, by their leading
keywords. Conditions (OPTIMIZE's WHERE, CHECK constraints) are kept as the original text, as delta-spark's
grammar keeps them (`predicateToken: .+?`), and handed to Spark / the kernel as SQL strings.

No pyspark or sqlglot import: this module is pure and unit-tested on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .syntax import DeltaSqlError, DeltaSqlSyntaxError, Statement, TableName, Token, head, tokenize


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class Vacuum(Statement):
    retain_hours: float | None = None
    dry_run: bool = False
    mode: str | None = None  # LITE / FULL (Delta 3.3+)


@dataclass(frozen=True)
class DescribeDetail(Statement):
    pass


@dataclass(frozen=True)
class DescribeHistory(Statement):
    limit: int | None = None


@dataclass(frozen=True)
class Generate(Statement):
    mode: str = ""


@dataclass(frozen=True)
class ConvertToDelta(Statement):
    no_statistics: bool = False
    partition_schema: str | None = None  # "a INT, b STRING" (DDL text) or None


@dataclass(frozen=True)
class Restore(Statement):
    version: int | None = None
    timestamp: str | None = None  # a string literal's value
    timestamp_expression: str | None = None  # or an expression's text (Spark evaluates it)


@dataclass(frozen=True)
class Optimize(Statement):
    where: str | None = None
    zorder_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class AddConstraint(Statement):
    name: str = ""
    expression: str = ""


@dataclass(frozen=True)
class DropConstraint(Statement):
    name: str = ""
    if_exists: bool = False


@dataclass(frozen=True)
class DropFeature(Statement):
    feature: str = ""
    truncate_history: bool = False


@dataclass(frozen=True)
class ClusterBy(Statement):
    columns: tuple[str, ...] | None = field(default=None)  # None = CLUSTER BY NONE


@dataclass(frozen=True)
class Reorg(Statement):
    pass


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)  # strict: a Delta statement with a lexical error is a syntax error
        while self.toks and self.toks[-1].kind == "op" and self.toks[-1].text == ";":
            self.toks.pop()
        self.i = 0

    # -- primitives
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at_kw(self, *words: str) -> bool:
        t = self.peek()
        return t is not None and t.is_kw(*words)

    def accept_kw(self, *words: str) -> bool:
        if self.at_kw(*words):
            self.i += 1
            return True
        return False

    def expect_kw(self, *words: str) -> Token:
        t = self.peek()
        if t is None or not t.is_kw(*words):
            self.fail(f"expected {' or '.join(words)}")
        self.i += 1
        assert t is not None
        return t

    def at_op(self, op: str) -> bool:
        t = self.peek()
        return t is not None and t.kind == "op" and t.text == op

    def expect_op(self, op: str) -> None:
        if not self.at_op(op):
            self.fail(f"expected {op!r}")
        self.i += 1

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def expect_end(self) -> None:
        if not self.done():
            self.fail("unexpected input")

    def fail(self, what: str) -> None:
        t = self.peek()
        where = f"at {t.text!r} (position {t.start})" if t is not None else "at the end"
        raise DeltaSqlSyntaxError(f"syntax error {where}: {what} (in: {head(self.text)})")

    # -- pieces
    def identifier(self) -> str:
        t = self.peek()
        if t is None or t.kind not in ("word", "quoted"):
            self.fail("expected an identifier")
        assert t is not None
        self.i += 1
        return t.text

    def qualified_name(self) -> tuple[str, ...]:
        parts = [self.identifier()]
        while self.at_op("."):
            self.i += 1
            parts.append(self.identifier())
        return tuple(parts)

    def table(self, allow_path: bool = True) -> TableName:
        t = self.peek()
        if allow_path and t is not None and t.kind == "string":
            self.i += 1
            return TableName(path=t.text, text=self.text[t.start:t.end])
        start = t.start if t is not None else len(self.text)
        parts = self.qualified_name()
        return TableName(parts=parts, text=self.text[start:self.toks[self.i - 1].end])

    def string(self) -> str:
        t = self.peek()
        if t is None or t.kind != "string":
            self.fail("expected a string literal")
        assert t is not None
        self.i += 1
        return t.text

    def integer(self) -> int:
        t = self.peek()
        if t is None or t.kind != "number" or not t.text.isdigit():
            self.fail("expected an integer")
        assert t is not None
        self.i += 1
        return int(t.text)

    def number(self) -> float:
        neg = False
        if self.at_op("-"):
            self.i += 1
            neg = True
        t = self.peek()
        if t is None or t.kind != "number":
            self.fail("expected a number")
        assert t is not None
        self.i += 1
        raw = re.sub(r"(?i)(bd|d|l|s|y|f)$", "", t.text)
        try:
            value = float(raw)
        except ValueError:
            self.fail("expected a number")
        return -value if neg else value

    def raw_until(self, stop: tuple[str, ...]) -> str:
        """Original text from here to the first top-level keyword in `stop` (or the end)."""
        depth = 0
        first = self.i
        while not self.done():
            t = self.toks[self.i]
            if t.kind == "op" and t.text == "(":
                depth += 1
            elif t.kind == "op" and t.text == ")":
                depth -= 1
            elif depth == 0 and t.is_kw(*stop):
                break
            self.i += 1
        if self.i == first:
            self.fail("expected an expression")
        return self.text[self.toks[first].start:self.toks[self.i - 1].end].strip()

    def paren_list(self) -> tuple[str, ...]:
        self.expect_op("(")
        names = [".".join(self.qualified_name())]
        while self.at_op(","):
            self.i += 1
            names.append(".".join(self.qualified_name()))
        self.expect_op(")")
        return tuple(names)

    def name_list(self) -> tuple[str, ...]:
        if self.at_op("("):
            return self.paren_list()
        names = [".".join(self.qualified_name())]
        while self.at_op(","):
            self.i += 1
            names.append(".".join(self.qualified_name()))
        return tuple(names)

    def temporal(self) -> tuple[int | None, str | None, str | None]:
        """(version, timestamp literal, timestamp expression text) of `[FOR] VERSION|TIMESTAMP AS OF ...`."""
        self.accept_kw("FOR")
        kw = self.expect_kw("VERSION", "SYSTEM_VERSION", "TIMESTAMP", "SYSTEM_TIME")
        self.expect_kw("AS")
        self.expect_kw("OF")
        if kw.text.upper() in ("VERSION", "SYSTEM_VERSION"):
            t = self.peek()
            if t is not None and t.kind == "string" and t.text.strip().isdigit():
                self.i += 1
                return int(t.text), None, None
            return self.integer(), None, None
        t = self.peek()
        if t is not None and t.kind == "string" and self.peek(1) is None:
            self.i += 1
            return None, t.text, None
        return None, None, self.raw_until(())  # an expression (current_timestamp() - INTERVAL ...)


# ----------------------------------------------------------------------------- entry point
def parse_delta_statement(text: str) -> Statement | None:
    """The Delta-only statement `text` is, or None when it is not one (it then goes to Spark's parser).
    A statement that starts like one but does not parse raises DeltaSqlSyntaxError."""
    toks = tokenize(text, strict=False)  # statements that are not Delta's keep Spark's own errors
    if not toks:
        return None
    first = toks[0]
    second = toks[1] if len(toks) > 1 else None
    if first.is_kw("VACUUM"):
        return _vacuum(_Parser(text))
    if first.is_kw("DESC", "DESCRIBE") and second is not None and second.is_kw("DETAIL", "HISTORY"):
        # `DESCRIBE HISTORY` alone, or a table/column literally named so (`DESCRIBE detail.col`) go to Spark
        if len(toks) == 2 or (len(toks) > 2 and toks[2].kind == "op" and toks[2].text == "."):
            return None
        return _describe(_Parser(text))
    if first.is_kw("GENERATE"):
        return _generate(_Parser(text))
    if first.is_kw("CONVERT") and second is not None and second.is_kw("TO"):
        return _convert(_Parser(text))
    if first.is_kw("RESTORE"):
        return _restore(_Parser(text))
    if first.is_kw("OPTIMIZE"):
        return _optimize(_Parser(text))
    if first.is_kw("REORG"):
        p = _Parser(text)
        p.expect_kw("REORG")
        p.expect_kw("TABLE")
        return Reorg(table=p.table(allow_path=False), text=text)
    if first.is_kw("ALTER") and second is not None and second.is_kw("TABLE") and _delta_alter(toks):
        return _alter(_Parser(text))
    return None


def _delta_alter(toks: list[Token]) -> bool:
    """ALTER TABLE <name> ADD CONSTRAINT | DROP CONSTRAINT | DROP FEATURE | CLUSTER BY (other forms: Spark)."""
    j = 2
    while j < len(toks) and toks[j].kind in ("word", "quoted"):
        if j + 1 < len(toks) and toks[j + 1].kind == "op" and toks[j + 1].text == ".":
            j += 2
            continue
        j += 1
        break
    if j + 1 >= len(toks):
        return False
    a, b = toks[j], toks[j + 1]
    from .change_column import is_change_column

    return (a.is_kw("ADD") and b.is_kw("CONSTRAINT")) or (a.is_kw("DROP") and b.is_kw("CONSTRAINT", "FEATURE")) \
        or (a.is_kw("CLUSTER") and b.is_kw("BY")) or is_change_column(toks, j)


def _vacuum(p: _Parser) -> Vacuum:
    p.expect_kw("VACUUM")
    table = p.table()
    if p.at_kw("USING"):
        p.fail("VACUUM ... USING INVENTORY is not supported")
    mode = None
    if p.at_kw("LITE", "FULL"):
        mode = p.expect_kw("LITE", "FULL").text.upper()
    hours = None
    if p.accept_kw("RETAIN"):
        hours = p.number()
        p.expect_kw("HOURS")
    dry = False
    if p.accept_kw("DRY"):
        p.expect_kw("RUN")
        dry = True
    p.expect_end()
    return Vacuum(table=table, text=p.text, retain_hours=hours, dry_run=dry, mode=mode)


def _describe(p: _Parser) -> Statement:
    p.expect_kw("DESC", "DESCRIBE")
    kind = p.expect_kw("DETAIL", "HISTORY").text.upper()
    table = p.table()
    if kind == "DETAIL":
        p.expect_end()
        return DescribeDetail(table=table, text=p.text)
    limit = None
    if p.accept_kw("LIMIT"):
        limit = p.integer()
    p.expect_end()
    return DescribeHistory(table=table, text=p.text, limit=limit)


def _generate(p: _Parser) -> Generate:
    p.expect_kw("GENERATE")
    mode = p.identifier()
    p.expect_kw("FOR")
    p.expect_kw("TABLE")
    table = p.table(allow_path=False)
    p.expect_end()
    return Generate(table=table, text=p.text, mode=mode)


def _convert(p: _Parser) -> ConvertToDelta:
    p.expect_kw("CONVERT")
    p.expect_kw("TO")
    p.expect_kw("DELTA")
    table = p.table(allow_path=False)
    no_stats = False
    if p.accept_kw("NO"):
        p.expect_kw("STATISTICS")
        no_stats = True
    schema = None
    if p.accept_kw("PARTITIONED"):
        p.expect_kw("BY")
        t = p.peek()
        if t is None or not (t.kind == "op" and t.text == "("):
            p.fail("expected '(' column type, ... ')'")
        assert t is not None
        depth, j = 0, p.i
        while j < len(p.toks):
            tok = p.toks[j]
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(p.toks):
            p.fail("unbalanced parentheses")
        schema = p.text[t.end:p.toks[j].start].strip()
        if not schema:
            p.fail("expected column types")
        p.i = j + 1
    p.expect_end()
    return ConvertToDelta(table=table, text=p.text, no_statistics=no_stats, partition_schema=schema)


def _restore(p: _Parser) -> Restore:
    p.expect_kw("RESTORE")
    p.accept_kw("TABLE")
    table = p.table(allow_path=False)
    p.accept_kw("TO")
    version, ts, expression = p.temporal()
    p.expect_end()
    return Restore(table=table, text=p.text, version=version, timestamp=ts, timestamp_expression=expression)


def _optimize(p: _Parser) -> Optimize:
    p.expect_kw("OPTIMIZE")
    table = p.table()
    where = None
    if p.accept_kw("WHERE"):
        where = p.raw_until(("ZORDER",))
    zorder: tuple[str, ...] = ()
    if p.accept_kw("ZORDER"):
        p.expect_kw("BY")
        zorder = p.name_list()
    p.expect_end()
    return Optimize(table=table, text=p.text, where=where, zorder_by=zorder)


def _alter(p: _Parser) -> Statement | None:
    p.expect_kw("ALTER")
    p.expect_kw("TABLE")
    table = p.table(allow_path=False)
    if p.at_kw("ADD") and (t := p.peek(1)) is not None and t.is_kw("CONSTRAINT"):
        p.i += 2
        name = p.identifier()
        p.expect_kw("CHECK")
        if not p.at_op("("):
            p.fail("expected CHECK (condition)")
        open_tok = p.toks[p.i]
        depth, j = 0, p.i
        while j < len(p.toks):
            tok = p.toks[j]
            if tok.kind == "op" and tok.text == "(":
                depth += 1
            elif tok.kind == "op" and tok.text == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(p.toks) or j == p.i + 1:
            p.fail("expected CHECK (condition)")
        expression = p.text[open_tok.end:p.toks[j].start].strip()
        p.i = j + 1
        p.expect_end()
        return AddConstraint(table=table, text=p.text, name=name, expression=expression)
    if p.at_kw("DROP") and (t := p.peek(1)) is not None and t.is_kw("CONSTRAINT"):
        p.i += 2
        if_exists = False
        if p.accept_kw("IF"):
            p.expect_kw("EXISTS")
            if_exists = True
        name = p.identifier()
        p.expect_end()
        return DropConstraint(table=table, text=p.text, name=name, if_exists=if_exists)
    if p.at_kw("DROP") and (t := p.peek(1)) is not None and t.is_kw("FEATURE"):
        p.i += 2
        nxt = p.peek()
        if nxt is not None and nxt.kind == "string":
            feature = p.string()
        else:
            feature = p.identifier()
        truncate = False
        if p.accept_kw("TRUNCATE"):
            p.expect_kw("HISTORY")
            truncate = True
        p.expect_end()
        return DropFeature(table=table, text=p.text, feature=feature, truncate_history=truncate)
    if p.at_kw("CLUSTER") and (t := p.peek(1)) is not None and t.is_kw("BY"):
        p.i += 2
        if p.accept_kw("NONE"):
            p.expect_end()
            return ClusterBy(table=table, text=p.text, columns=None)
        cols = p.paren_list()
        p.expect_end()
        return ClusterBy(table=table, text=p.text, columns=cols)
    if p.at_kw("ALTER", "CHANGE"):  # ALTER / CHANGE COLUMN: change_column.py (a form it cannot read: Spark's)
        from .change_column import parse as parse_change

        try:
            return parse_change(p, table)
        except DeltaSqlSyntaxError:
            return None
    return None  # every other ALTER TABLE form: Spark's parser


__all__ = [
    "AddConstraint",
    "ClusterBy",
    "ConvertToDelta",
    "DeltaSqlError",
    "DeltaSqlSyntaxError",
    "DescribeDetail",
    "DescribeHistory",
    "DropConstraint",
    "DropFeature",
    "Generate",
    "Optimize",
    "Reorg",
    "Restore",
    "Statement",
    "TableName",
    "Token",
    "Vacuum",
    "head",
    "parse_delta_statement",
    "tokenize",
]
