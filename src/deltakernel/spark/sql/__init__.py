"""Delta SQL through `spark.sql` (after `deltakernel.spark.enable(spark)`), without delta-spark's jars.

Modules: `router.py` (what goes where), `grammar.py` (delta-spark's own statements, a small tokenizer grammar;
`syntax.py`: its tokens, names and errors), `plans.py` (reading Spark's parsed plans through py4j), `dml.py` (MERGE
/ DELETE / UPDATE / INSERT, `insertInto`), `ddl.py` (CREATE / REPLACE / ALTER / DESCRIBE / SHOW TBLPROPERTIES),
`commands.py` (HISTORY, DETAIL, OPTIMIZE, VACUUM, RESTORE, CONVERT, GENERATE, constraints, features, clustering),
`relations.py` (queries reading Delta tables: temporary views over the native read plan). On Spark Connect sessions
(no py4j, no Spark parser) statements are parsed with sqlglot instead: `connect_router.py` (dispatch, ALTER /
DESCRIBE / SHOW), `text_plans.py` (sqlglot helpers), `connect_dml.py`, `connect_ddl.py`, `connect_relations.py`
(Delta references as temporary views over client-planned scans, with the WHERE's file skipping),
`public_catalog.py` (the session catalog through public SQL). See docs/decisions.md, "Delta SQL on Spark".
"""

from __future__ import annotations

from .grammar import DeltaSqlError, DeltaSqlSyntaxError, parse_delta_statement
from .router import execute_sql

__all__ = ["DeltaSqlError", "DeltaSqlSyntaxError", "execute_sql", "parse_delta_statement"]
