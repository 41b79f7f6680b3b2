"""`SparkSession.sql` in sessions where `deltakernel.spark.enable()` ran: Delta statements run through
deltakernel, everything else goes to Spark unchanged. One router for both session kinds.

Order, for one statement:
1. delta-spark's own statements (`grammar.parse_delta_statement`: VACUUM, DESCRIBE HISTORY / DETAIL, OPTIMIZE,
   RESTORE, CONVERT TO DELTA, GENERATE, ALTER TABLE ADD / DROP CONSTRAINT, DROP FEATURE, CLUSTER BY) are
   recognised by their leading keywords before Spark sees them (`commands.py`);
2. anything else is read by the session's statement parser (`statements.StatementParser`, chosen by the session's kind,
   `parser_for`: Spark's own parsed plan on a classic session, `parse_classic.py`; sqlglot's tree on Spark
   Connect, which has no parser on the client, `parse_connect.py`) into the one statement model: MERGE / DELETE /
   UPDATE / INSERT, CREATE / REPLACE TABLE [LIKE], ALTER TABLE, DESCRIBE TABLE, SHOW TBLPROPERTIES, TRUNCATE TABLE
   whose table is a Delta table (`delta`.`/path` or a catalog table with provider delta) run through the one
   executor of their kind (`execute_dml.py`, `execute_ddl.py`);
3. any other statement that reads a Delta table is rewritten by the one relation rewriter (`relations.py`, with the
   parser's `relations`, the kind's side of it: temporary views over the native read plan on classic,
   `relations_classic.py`; over client-planned scans on Connect, `relations_connect.py`) and run by Spark;
4. the rest — and statements on non-Delta tables — reach Spark exactly as written.
Before all of them, SHOW TABLES / DROP TABLE on a Unity Catalog configured on the session are answered from the
catalog (`unity_statements.py`): Spark cannot load the catalog's plugin class.
A statement the parser cannot read goes to Spark (its own error), unless it is visibly about a Delta table (a
`delta`.`...` name, `USING delta`, or a DML target that is a Delta table): that is a DeltaSqlSyntaxError. A Delta
statement with parameter markers (`args=...`) is refused, on both kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import UnsupportedFeatureError
from ..kinds import kind_of
from . import statements as S
from .grammar import DeltaSqlSyntaxError, head, parse_delta_statement, tokenize
from .statements import Statement, StatementParser


def _classic_parser(spark: Any) -> StatementParser:
    from .parse_classic import ClassicParser

    return ClassicParser(spark)


def _connect_parser(spark: Any) -> StatementParser:
    from .parse_connect import ConnectParser

    return ConnectParser(spark)


#: the statement parser of each session kind (`kinds.kind_of(spark).name`)
PARSERS: dict[str, Callable[[Any], StatementParser]] = {"classic": _classic_parser, "connect": _connect_parser}


def parser_for(spark: Any) -> StatementParser:
    """The session's statement parser, by the session's kind (chosen once per session by `kinds.kind_of`)."""
    return PARSERS[kind_of(spark).name](spark)


class Router:
    """One routed `spark.sql` call (and the statements nested in it: INSERT's query, MERGE's source)."""

    def __init__(self, spark: Any, original: Callable[..., Any], args: Any = None,
                 lazy: Callable[[str, list[tuple[Any, str]]], Any] | None = None) -> None:
        self.spark = spark
        self.original = original
        self.args = args
        self.lazy = lazy  # `lazy(text, [(frame, name)])`: an unsent frame of a query (scoped kinds; relations.run)
        self.parser = parser_for(spark)

    def run_sql(self, text: str) -> Any:
        """A nested query (INSERT ... SELECT, AS SELECT, MERGE's USING): routed, with the call's parameters."""
        return self.execute(text)

    def passthrough(self, text: str, relations: dict[str, Any] | None = None) -> Any:
        """`text` run by Spark as written; `relations` (name -> frame) travel with it as its references (a scoped
        relation kind's rewritten statement)."""
        if relations:
            return self.original(text, self.args, [(frame, name) for name, frame in relations.items()])
        return self.original(text, self.args)

    def execute(self, text: str) -> Any:
        from .unity_statements import run_unity_statement

        out = run_unity_statement(self.spark, text)  # SHOW TABLES / DROP TABLE on a configured Unity Catalog
        if out is not None:
            return out
        stmt = parse_delta_statement(text)
        if stmt is not None:
            self.refuse_parameters(text)
            from .commands import run

            out = run(self.spark, stmt, self.passthrough)
            return out if out is not None else self.passthrough(text)
        try:
            statement = self.parser.parse(text)
        except DeltaSqlSyntaxError:
            if self.about_delta(text):
                raise
            return self.passthrough(text)
        if statement is not None:
            self.refuse_parameters(text)
            return run_statement(self.spark, statement, self.run_sql)
        from .relations import run as run_query

        lazy = self.lazy_query if self.lazy is not None else None
        return run_query(self.spark, text, self.parser.relations, self.passthrough, lazy)

    def lazy_query(self, text: str, relations: dict[str, Any]) -> Any:
        """`text` with `relations` as its references, as an unsent frame."""
        assert self.lazy is not None
        return self.lazy(text, [(frame, name) for name, frame in relations.items()])

    def refuse_parameters(self, text: str) -> None:
        """A statement about a Delta table with parameter markers (args=...) is refused."""
        if self.args:
            raise UnsupportedFeatureError("parameterized Delta statements", "parameter markers (args=...) are not "
                                          f"supported in Delta statements; inline the values (in: {head(text)})")

    def about_delta(self, text: str) -> bool:
        """Is an unparsable statement visibly about a Delta table?"""
        try:
            toks = tokenize(text)
        except Exception:
            return False
        for i, t in enumerate(toks[:-2]):
            if t.is_kw("DELTA") and toks[i + 1].text == "." and toks[i + 2].kind in ("quoted",):
                return True
            if t.is_kw("USING") and toks[i + 1].is_kw("DELTA"):
                return True
        if toks and toks[0].is_kw("MERGE", "UPDATE", "DELETE", "INSERT"):
            from ..catalog.tables import resolve

            j = 1
            while j < len(toks) and toks[j].is_kw("INTO", "FROM", "OVERWRITE", "TABLE"):
                j += 1
            parts: list[str] = []
            while j < len(toks) and toks[j].kind in ("word", "quoted"):
                parts.append(toks[j].text)
                if j + 1 < len(toks) and toks[j + 1].text == ".":
                    j += 2
                    continue
                break
            try:
                return bool(parts) and resolve(self.spark, parts) is not None
            except Exception:
                return False
        return False


def run_statement(spark: Any, stmt: Statement, run_sql: Callable[[str], Any]) -> Any:
    """Run one parsed Delta statement through the executor of its kind (the same on both session kinds)."""
    from . import execute_ddl as DDL
    from . import execute_dml as DML

    if isinstance(stmt, S.Delete):
        return DML.run_delete(spark, stmt)
    if isinstance(stmt, S.Update):
        return DML.run_update(spark, stmt)
    if isinstance(stmt, S.Merge):
        return DML.run_merge(spark, stmt, run_sql)
    if isinstance(stmt, S.Insert):
        return DML.run_insert(spark, stmt, run_sql)
    if isinstance(stmt, S.CreateTable):
        return DDL.run_create(spark, stmt, run_sql)
    if isinstance(stmt, S.CreateLike):
        return DDL.run_create_like(spark, stmt)
    if isinstance(stmt, S.AlterTable):
        return DDL.run_alter(spark, stmt)
    if isinstance(stmt, S.Describe):
        return DDL.run_describe(spark, stmt)
    if isinstance(stmt, S.ShowProperties):
        return DDL.run_show_properties(spark, stmt)
    if isinstance(stmt, S.Truncate):
        return DDL.run_truncate(spark, stmt)
    raise TypeError(f"no executor for {type(stmt).__name__}")


def execute_sql(spark: Any, text: str, args: Any, original: Callable[..., Any],
                lazy: Callable[[str, list[tuple[Any, str]]], Any] | None = None) -> Any:
    """Route one `spark.sql(text, args)` call (see the module docstring); `original(text, args[, views])` runs a
    text as pyspark would (`views`: (frame, name) pairs travelling with it, Spark Connect only); `lazy(text,
    views)`, when given, builds the same statement as a frame sent only by its first action (a read-only query
    whose shape Spark already analysed in this session: `relations.run`)."""
    return Router(spark, original, args, lazy).execute(text)


__all__ = ["PARSERS", "Router", "execute_sql", "parser_for", "run_statement"]
