"""The Delta SQL grammar's building blocks: its errors, Spark SQL tokens (`tokenize`), table names and the
`Statement` base.

Below `grammar.py` (delta-spark's statements) and `change_column.py` (ALTER / CHANGE COLUMN, which the grammar
hands its statements to). No pyspark or sqlglot import: pure, unit-tested with the grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import DeltaError


class DeltaSqlError(DeltaError):
    """A Delta SQL statement that cannot run as written (unknown table, unsupported form, ...)."""


class DeltaSqlSyntaxError(DeltaSqlError):
    """A Delta SQL statement that does not parse."""


# ----------------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class Token:
    kind: str  # "word", "quoted" (backquoted identifier), "string", "number", "op"
    text: str  # the value: unquoted identifier / unescaped string / operator text
    start: int  # offsets in the statement, [start, end)
    end: int

    def is_kw(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


_TOKEN = re.compile(
    r"""(?P<ws>\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)
      |(?P<quoted>`(?:[^`]|``)*`)
      |(?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      |(?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[a-zA-Z]*)
      |(?P<word>[A-Za-z_][A-Za-z0-9_]*)
      |(?P<op><=>|<=|>=|<>|!=|==|\|\||[(),.;=<>+\-*/%!:\[\]{}?&|^~@$#])""",
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.DOTALL)


def tokenize(text: str, strict: bool = True) -> list[Token]:
    """Spark SQL tokens (comments and whitespace dropped); an unterminated quote or an unknown character is a
    syntax error, or (`strict=False`) ends the token list there."""
    out: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if not strict:
                return out
            raise DeltaSqlSyntaxError(f"syntax error: unexpected character {text[pos]!r} at position {pos} "
                                      f"(in: {head(text)})")
        kind = m.lastgroup or "op"
        raw = m.group()
        if kind == "quoted":
            out.append(Token("quoted", raw[1:-1].replace("``", "`"), m.start(), m.end()))
        elif kind == "string":
            out.append(Token("string", _unescape(raw[1:-1]), m.start(), m.end()))
        elif kind != "ws":
            out.append(Token(kind, raw, m.start(), m.end()))
        pos = m.end()
    return out


def head(text: str) -> str:
    first = " ".join(text.split())
    return first if len(first) <= 80 else first[:79] + "…"


# ----------------------------------------------------------------------------- statements
@dataclass(frozen=True)
class TableName:
    """A table as written: `path` for `'...'` strings, else the name's parts (`delta`.`/p` included)."""

    parts: tuple[str, ...] = ()
    path: str | None = None
    text: str = ""  # as written, for messages


@dataclass(frozen=True)
class Statement:
    table: TableName
    text: str


__all__ = ["DeltaSqlError", "DeltaSqlSyntaxError", "Statement", "TableName", "Token", "head", "tokenize"]
