"""Delta SQL through `spark.sql` (after `deltakernel.spark.enable(spark)`), without delta-spark's jars: one router,
one statement model and one executor per kind of statement for classic and Spark Connect sessions alike.

Modules: `router.py` (what goes where), `grammar.py` (delta-spark's own statements, a small tokenizer grammar;
`syntax.py`: its tokens, names and errors) run by `commands.py` (HISTORY, DETAIL, OPTIMIZE, VACUUM, RESTORE,
CONVERT, GENERATE, constraints, features, clustering; `change_column.py`); `statements.py` (the statement model and
the `StatementParser` seam) with its two parsers, `parse_classic.py` (Spark's parsed plan through py4j, `plans.py`)
and `parse_connect.py` (sqlglot's tree, `text_plans.py`: a Connect client has no Spark parser); the executors
`execute_dml.py` (MERGE / DELETE / UPDATE / INSERT, `insertInto`) and `execute_ddl.py` (CREATE / REPLACE / LIKE,
ALTER, DESCRIBE, SHOW TBLPROPERTIES, TRUNCATE); the one relation rewriter for queries reading Delta tables,
`relations.py`, with each kind's side of it as the parser's `relations` (`relations_classic.py`: uses in Spark's
parsed plan, temporary views over the native read plan; `relations_connect.py`: uses found with sqlglot, temporary
views over client-planned scans with the statement's conjuncts, `pushdown.py`); `public_catalog.py` (the session
catalog through public SQL). See docs/decisions.md, "Delta SQL on Spark", "One SQL statement model for both
session kinds" and "One relation rewriter".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_names

if TYPE_CHECKING:
    from .grammar import DeltaSqlError, DeltaSqlSyntaxError, parse_delta_statement
    from .router import execute_sql

# loaded on first use: the session kinds import `sql.public_catalog` / `sql.syntax` without the whole router
_LAZY = {"DeltaSqlError": ".grammar", "DeltaSqlSyntaxError": ".grammar", "parse_delta_statement": ".grammar",
         "execute_sql": ".router"}

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())

__all__ = ["DeltaSqlError", "DeltaSqlSyntaxError", "execute_sql", "parse_delta_statement"]
