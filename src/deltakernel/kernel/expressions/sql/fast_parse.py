"""A fast path for the simplest Spark SQL expressions, so that they do not import sqlglot.

Why: importing sqlglot and building its Spark dialect costs ~0.12 s, paid by every process on its first SQL
expression - a tenth of a MERGE on 5M rows, half of a deletion-vector DELETE. Most DML predicates and
assignments are tiny: `t.id = s.id`, `id % 100 = 7`, `value + 1`, `p = 'a' AND x > 5`. This module parses
exactly that subset - column references (plain, dotted, backticked), integer and plain string literals, TRUE /
FALSE / NULL, parentheses, + - * / %, one comparison per level (= == != <> < <= > >= <=>), AND / OR / NOT,
IS [NOT] NULL, unary minus - into the same AST as `sql_parse` (a differential test checks this against
sqlglot on generated expressions). Everything else, including every malformed text, returns None and goes
through sqlglot, which keeps the one source of error messages.
"""

from __future__ import annotations

import functools
import re

from .ast import Binary, Col, IsNull, Lit, SqlExpr, Unary

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<num>\d+)(?![\w.])"
    r"|(?P<str>'[^'\\]*')(?!\s*')"  # adjacent strings concatenate in Spark: leave those to sqlglot
    r"|(?P<bq>`[^`]+`)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><=>|<=|>=|<>|!=|==|[=<>+\-*/%().])"
    r")"
)
_CMP = {"=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "<=>": "<=>"}
_INT, _LONG = 2**31, 2**63
_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "TRUE", "FALSE"}
# Words sqlglot's Spark dialect reads as something other than a column in expression position (types, typed
# literals, niladic functions, operators, clauses). A column with such a name takes the sqlglot path.
# tests/unit/test_sql_fast.py checks, against the installed sqlglot, that every tokenizer keyword left out of
# this list parses the same on both paths (so a sqlglot release adding a keyword is caught, not silently wrong).
_RESERVED = frozenset("""
ALL ALTER ANALYZE AND ANTI ANY APPLY ARRAY AS ASC ASOF AUTOINCREMENT AUTO_INCREMENT BEGIN BETWEEN BIGDECIMAL BIGINT
BIGNUM BIGNUMERIC BINARY BIT BLOB BOOL BOOLEAN BPCHAR BYTE BYTEA CACHE CALL CASE CAST CHAR CHARACTER CLOB COLLATE
COLUMN COMMENT COMMIT CONSTRAINT COPY CREATE CROSS CUBE CURRENT_CATALOG CURRENT_DATE CURRENT_DATETIME CURRENT_ROLE
CURRENT_SCHEMA CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER DATABASE DATE DATEMULTIRANGE DATERANGE DATETIME DEC
DECFLOAT DECIMAL DECLARE DEFAULT DELETE DESC DESCRIBE DISTINCT DIV DOUBLE DROP ELSE END ENUM ESCAPE EXCEPT EXECUTE
EXISTS EXPLAIN EXTRACT FALSE FETCH FILE FILTER FIRST FIXED FLOAT FOR FORMAT FROM FULL FUNCTION GEOGRAPHY GEOMETRY GLOB
GRANT HAVING HUGEINT IF ILIKE IN INDEX INET INNER INSERT INT INTEGER INTERSECT INTERVAL INTO IS ISNULL JOIN JSON JSONB
KEEP KILL LATERAL LEFT LIKE LIMIT LIST LOAD LOCALTIME LOCALTIMESTAMP LOCK LONG LONGBLOB LONGTEXT LONGVARCHAR MAP
MEDIUMBLOB MEDIUMINT MEDIUMTEXT MERGE MINUS NAMESPACE NATURAL NCHAR NEXT NOT NOTNULL NULL NULLABLE NUMBER NUMERIC
NUMMULTIRANGE NUMRANGE NVARCHAR OBJECT OFFSET ON OPERATOR OPTIMIZE OR ORDINALITY OUT OUTER OVER OVERLAPS OVERWRITE
PARTITION PARTITIONED_BY PERCENT PIVOT PRAGMA PREPARE PROCEDURE QUALIFY RANGE REAL RECURSIVE REF REFERENCES REFRESH
REGEXP RELEASE RENAME REPLACE RETURNING REVOKE RIGHT RLIKE ROLLBACK ROLLUP ROW ROWS SAVEPOINT SCHEMA SELECT SEMI
SEQUENCE SERDEPROPERTIES SESSION SESSION_USER SET SETTINGS SHORT SHOW SMALLINT SOME STR STRAIGHT_JOIN STRING STRUCT
TABLE TABLESAMPLE TEMP TEMPORARY TEXT THEN TIME TIMESTAMP TIMESTAMPLTZ TIMESTAMPNTZ TIMESTAMPTZ TIMESTAMP_LTZ
TIMESTAMP_NTZ TIMETZ TIME_NS TINYBLOB TINYINT TINYTEXT TRIGGER TRUE TRUNCATE TRY_CAST TSMULTIRANGE TSRANGE
TSTZMULTIRANGE TSTZRANGE UHUGEINT UINT UNCACHE UNION UNIQUE UNKNOWN UNNEST UNPIVOT UPDATE USE USING UUID VACUUM VALUES
VARBINARY VARCHAR VARIANT VECTOR VIEW VOLATILE WHEN WHERE WINDOW WITH XOR
""".split())


class _Fallback(Exception):
    """Outside the subset: let sqlglot parse it (and word any error)."""


def _tokens(text: str) -> list[tuple[str, str]]:
    if "--" in text or "/*" in text or '"' in text or "\\" in text:
        raise _Fallback
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise _Fallback
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "word":
            upper = value.upper()
            if upper in _KEYWORDS:
                kind, value = "kw", upper
            elif upper in _RESERVED:
                raise _Fallback
        out.append((kind, value))
        pos = m.end()
    return out


class _Parser:
    """Recursive descent with sqlglot's precedence: OR < AND < NOT < comparison / IS < + - < * / % < unary -."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.toks = tokens
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.toks[self.i] if self.i < len(self.toks) else ("end", "")

    def take(self) -> tuple[str, str]:
        tok = self.peek()
        if tok[0] == "end":
            raise _Fallback
        self.i += 1
        return tok

    def expect(self, kind: str, value: str) -> None:
        if self.take() != (kind, value):
            raise _Fallback

    def parse(self) -> SqlExpr:
        out = self.or_()
        if self.peek()[0] != "end":
            raise _Fallback
        return out

    def or_(self) -> SqlExpr:
        out = self.and_()
        while self.peek() == ("kw", "OR"):
            self.take()
            out = Binary("OR", out, self.and_())
        return out

    def and_(self) -> SqlExpr:
        out = self.not_()
        while self.peek() == ("kw", "AND"):
            self.take()
            out = Binary("AND", out, self.not_())
        return out

    def not_(self) -> SqlExpr:
        if self.peek() == ("kw", "NOT"):
            self.take()  # only NOT (...): `NOT a IS NULL` folds into IS NOT NULL in sqlglot's tree, and after
            self.expect("op", "(")  # `NOT (a) = b` the comparison binds first; those go to sqlglot
            inner = self.or_()
            self.expect("op", ")")
            nxt = self.peek()
            if nxt not in (("end", ""), ("kw", "AND"), ("kw", "OR"), ("op", ")")):
                raise _Fallback
            return Unary("NOT", inner)
        return self.comparison()

    def comparison(self) -> SqlExpr:
        left = self.additive()
        kind, value = self.peek()
        if kind == "op" and value in _CMP:
            self.take()
            out: SqlExpr = Binary(_CMP[value], left, self.additive())
        elif (kind, value) == ("kw", "IS"):
            self.take()
            negated = self.peek() == ("kw", "NOT")
            if negated:
                self.take()
            self.expect("kw", "NULL")
            out = IsNull(left, negated)
        else:
            return left
        nxt = self.peek()
        if (nxt[0] == "op" and nxt[1] in _CMP) or nxt == ("kw", "IS"):  # chained: sqlglot's levels differ
            raise _Fallback
        return out

    def additive(self) -> SqlExpr:
        out = self.multiplicative()
        while self.peek() in (("op", "+"), ("op", "-")):
            out = Binary(self.take()[1], out, self.multiplicative())
        return out

    def multiplicative(self) -> SqlExpr:
        out = self.unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "%")):
            out = Binary(self.take()[1], out, self.unary())
        return out

    def unary(self) -> SqlExpr:
        if self.peek() != ("op", "-"):
            return self.primary()
        self.take()
        if self.peek()[0] == "num":  # -2147483648 is an INT, as in Spark
            return _integer(-int(self.take()[1]))
        inner = self.unary()
        if isinstance(inner, Lit) and isinstance(inner.value, int) and not isinstance(inner.value, bool):
            value = -inner.value
            if inner.type == "integer" and not -_INT <= value < _INT:
                return Lit(value, "long")
            return Lit(value, inner.type)
        return Unary("-", inner)

    def primary(self) -> SqlExpr:
        kind, value = self.take()
        if kind == "num":
            return _integer(int(value))
        if kind == "str":
            return Lit(value[1:-1])
        if kind == "kw" and value in ("TRUE", "FALSE"):
            return Lit(value == "TRUE")
        if kind == "kw" and value == "NULL":
            return Lit(None)
        if kind == "op" and value == "(":
            out = self.or_()
            self.expect("op", ")")
            return out
        if kind in ("word", "bq"):
            path = [_name(kind, value)]
            while self.peek() == ("op", "."):
                self.take()
                nk, nv = self.take()
                if nk not in ("word", "bq"):
                    raise _Fallback
                path.append(_name(nk, nv))
            if self.peek() == ("op", "(") or len(path) > 4:  # a function call; sqlglot nests long paths
                raise _Fallback
            return Col(tuple(path))
        raise _Fallback


def _name(kind: str, value: str) -> str:
    return value[1:-1] if kind == "bq" else value


def _integer(n: int) -> Lit:
    if -_INT <= n < _INT:
        return Lit(n, "integer")
    if -_LONG <= n < _LONG:
        return Lit(n, "long")
    raise _Fallback  # a decimal literal: sqlglot's path types it


@functools.lru_cache(maxsize=1024)
def parse_simple(text: str) -> SqlExpr | None:
    """The AST of `text` when it is in the subset above, else None (the caller uses sqlglot)."""
    try:
        return _Parser(_tokens(text)).parse()
    except (_Fallback, RecursionError):
        return None
