"""`SparkSession.sql` in sessions where `deltakernel.spark.enable()` ran: Delta statements run through
deltakernel, everything else goes to Spark unchanged.

Order, for one statement:
1. delta-spark's own statements (`grammar.parse_delta_statement`: VACUUM, DESCRIBE HISTORY / DETAIL, OPTIMIZE,
   RESTORE, CONVERT TO DELTA, GENERATE, ALTER TABLE ADD / DROP CONSTRAINT, DROP FEATURE, CLUSTER BY) are
   recognised by their leading keywords before Spark sees them (`commands.py`);
2. anything else is parsed by Spark's own parser; MERGE / DELETE / UPDATE / INSERT (`dml.py`), CREATE /
   REPLACE TABLE, ALTER TABLE, DESCRIBE TABLE, SHOW TBLPROPERTIES (`ddl.py`) whose table is a Delta table
   (`delta`.`/path` or a catalog table with provider delta) run through deltakernel;
3. any other statement that reads a Delta table is rewritten to read temporary views over the native read
   plan (`relations.py`) and run by Spark;
4. the rest — and statements on non-Delta tables — reach Spark exactly as written.
On a Spark Connect session (no py4j, so no Spark parser) steps 2-4 parse with sqlglot instead
(`connect_router.py`); Delta catalog tables are rewritten to temporary views there too (no relation cache).
A statement Spark cannot parse goes to Spark (its own ParseException), unless it is visibly about a Delta
table (a `delta`.`...` name, `USING delta`, or a DML target that is a Delta table): that is a
DeltaSqlSyntaxError carrying Spark's message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...errors import UnsupportedFeatureError
from ..session import is_connect
from . import plans as P
from .grammar import DeltaSqlSyntaxError, head, parse_delta_statement, tokenize

_log = logging.getLogger(__name__)
_CREATE = ("CreateTable", "CreateTableAsSelect", "ReplaceTable", "ReplaceTableAsSelect")
_OTHER_DDL = ("DescribeRelation", "ShowTableProperties", "CreateTableLike", "TruncateTable")
_ALTER = ("AddColumns", "RenameColumn", "DropColumns", "SetTableProperties", "UnsetTableProperties",
          "AlterColumns", "ReplaceColumns", "AlterColumn")


class Router:
    """One routed `spark.sql` call (and the statements nested in it: INSERT's query, MERGE's source)."""

    def __init__(self, spark: Any, original: Callable[[str, Any], Any], args: Any = None) -> None:
        self.spark = spark
        self.original = original
        self.args = args

    def run_sql(self, text: str) -> Any:
        """A nested query (INSERT ... SELECT, AS SELECT, MERGE's USING): routed, with the call's parameters."""
        return self.execute(text)

    def passthrough(self, text: str) -> Any:
        return self.original(text, self.args)

    def execute(self, text: str) -> Any:
        stmt = parse_delta_statement(text)
        if stmt is not None:
            self.refuse_parameters(text)
            from .commands import run

            out = run(self.spark, stmt, self.passthrough)
            return out if out is not None else self.passthrough(text)
        if is_connect(self.spark):  # no Spark parser on the client: sqlglot's parse (connect_router.py)
            from .connect_router import execute

            return execute(self, text)
        try:
            plan = P.parse_plan(self.spark, text)
        except P.parse_error_types() as e:
            if self.about_delta(text):
                raise DeltaSqlSyntaxError(f"syntax error: {_first_line(e)} (in: {head(text)})") from e
            return self.passthrough(text)
        out = self._dispatch(text, plan)
        if out is not None:
            return out
        from .relations import rewrite

        rewritten = rewrite(self.spark, text, plan, self.passthrough, self.execute)
        return self.passthrough(rewritten if rewritten is not None else text)

    def _dispatch(self, text: str, plan: Any) -> Any:
        kind = P.name(plan)
        handler: Callable[[], Any] | None = None
        if kind in ("MergeIntoTable", "DeleteFromTable", "UpdateTable", "InsertIntoStatement"):
            from . import dml

            handler = {
                "MergeIntoTable": lambda: dml.run_merge(self.spark, text, plan, self.run_sql),
                "DeleteFromTable": lambda: dml.run_delete(self.spark, text, plan),
                "UpdateTable": lambda: dml.run_update(self.spark, text, plan),
                "InsertIntoStatement": lambda: dml.run_insert(self.spark, text, plan, self.run_sql),
            }[kind]
        elif kind in _CREATE or kind in _ALTER or kind in _OTHER_DDL:
            from . import ddl

            if kind == "CreateTableLike":
                handler = lambda: ddl.run_create_like(self.spark, plan)  # noqa: E731
            elif kind == "TruncateTable":
                handler = lambda: ddl.run_truncate(self.spark, plan)  # noqa: E731
            elif kind in _CREATE:
                handler = lambda: ddl.run_create(self.spark, text, plan, self.run_sql)  # noqa: E731
            elif kind in _ALTER:
                handler = lambda: ddl.run_alter(self.spark, text, plan)  # noqa: E731
            elif kind == "DescribeRelation":
                handler = lambda: ddl.run_describe(self.spark, plan)  # noqa: E731
            else:
                handler = lambda: ddl.run_show_properties(self.spark, plan)  # noqa: E731
        if handler is None:
            return None
        if self.args:
            # only a statement about a Delta table is refused; others pass (handler returns None first)
            probe = _Probe(self, text, plan, kind)
            if probe.is_delta():
                self.refuse_parameters(text)
            return None
        return handler()

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
            from ..catalog import resolve

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


class _Probe:
    """Whether a parsed statement's table is a Delta table (for refusing parameterized Delta statements)."""

    def __init__(self, router: Router, text: str, plan: Any, kind: str) -> None:
        self.router, self.text, self.plan, self.kind = router, text, plan, kind

    def is_delta(self) -> bool:
        from ..catalog import path_of

        plan, kind = self.plan, self.kind
        if kind == "MergeIntoTable":
            node = plan.targetTable()
        elif kind in ("DeleteFromTable", "UpdateTable", "InsertIntoStatement"):
            node = plan.table()
        elif kind == "CreateTableLike":
            return str(P.opt(plan.provider()) or "").lower() == "delta" or self._resolves(plan.source())
        elif kind in _CREATE:
            parts = P.identifier_parts(plan.name()) or []
            provider = P.opt(plan.tableSpec().provider())
            return str(provider or "").lower() == "delta" or path_of(parts) is not None
        elif kind == "DescribeRelation":
            node = plan.relation()
        elif kind == "ShowTableProperties":
            node = plan.table()
        else:
            node = P.call(plan, "table", "child")
        return node is not None and self._resolves(node)

    def _resolves(self, node: Any) -> bool:
        from ..catalog import resolve

        _alias, inner = P.unwrap_alias(node)
        parts = P.identifier_parts(inner)
        return parts is not None and resolve(self.router.spark, parts) is not None


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


def execute_sql(spark: Any, text: str, args: Any, original: Callable[[str, Any], Any]) -> Any:
    """Route one `spark.sql(text, args)` call (see the module docstring)."""
    return Router(spark, original, args).execute(text)


__all__ = ["Router", "execute_sql"]
