"""The Delta SQL router's second step on a Spark Connect session: statements parsed by sqlglot, not by Spark.

A Connect client has no Spark parser (no py4j), so after the Delta-only statements (`grammar.py`, the same on
both kinds) the statement is parsed with sqlglot's Spark dialect (`text_plans.py`) and dispatched on its kind:
- DELETE / UPDATE / MERGE / INSERT on a Delta table: `connect_dml.py`;
- CREATE [OR REPLACE] / REPLACE TABLE, CREATE TABLE LIKE: `connect_ddl.py`; ALTER TABLE ADD COLUMN(S) / RENAME
  COLUMN / DROP COLUMN(S) / SET / UNSET TBLPROPERTIES, DESCRIBE [TABLE] [EXTENDED], SHOW TBLPROPERTIES and
  TRUNCATE TABLE of a Delta table: here (the kernel's `alter`, answers from the log - as `ddl.py`);
- anything else - queries, EXPLAIN, temporary views, CTAS of other formats - reaches Spark with its Delta
  references rewritten to temporary views over client-planned scans (`connect_relations.py`).
Statements sqlglot cannot read reach Spark unchanged (Spark's own error), unless they are visibly about a Delta
table: a DeltaSqlSyntaxError then. `DROP TABLE` is Spark's own (a managed table's directory goes with it).
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog import DeltaRef, resolve, sync_schema
from . import text_plans as T
from .commands import empty_frame
from .grammar import DeltaSqlError, DeltaSqlSyntaxError, head, tokenize

_EXPLAIN = re.compile(r"^\s*EXPLAIN(?:\s+(?:EXTENDED|FORMATTED|CODEGEN|COST|LOGICAL))?\s+", re.I)


class ConnectStatement:
    """One statement routed over Connect: the session, how to run nested SQL, and the parameter rule."""

    def __init__(self, router: Any, text: str) -> None:
        self.router = router
        self.spark = router.spark
        self.text = text

    def run_sql(self, text: str) -> Any:
        """A nested query (INSERT's query, AS SELECT, MERGE's USING), routed, with the call's parameters."""
        return self.router.execute(text)

    def delta_statement(self) -> None:
        """The statement is about a Delta table: parameter markers are refused (as on classic sessions)."""
        self.router.refuse_parameters(self.text)


def execute(router: Any, text: str) -> Any:
    """Run one statement that is not a Delta-only one (see the module docstring)."""
    from sqlglot import exp

    ctx = ConnectStatement(router, text)
    parse_text, evolution = text, False
    toks = tokenize(text, strict=False)
    if toks and toks[0].is_kw("MERGE"):
        from .connect_dml import strip_schema_evolution

        parse_text, evolution = strip_schema_evolution(text)
    replace_only = len(toks) > 1 and toks[0].is_kw("REPLACE") and toks[1].is_kw("TABLE")
    if replace_only:  # REPLACE TABLE (sqlglot reads CREATE TABLE; same length keeps the offsets)
        parse_text = "CREATE " + text[toks[0].end:]
    try:
        tree = T.parse(parse_text)
    except DeltaSqlSyntaxError:
        if router.about_delta(text):
            raise
        return router.passthrough(text)
    if isinstance(tree, exp.Command):
        out = _command(ctx, text, tree)
        return out if out is not None else router.passthrough(text)
    out = _dispatch(ctx, parse_text, tree, evolution, replace_only)
    if out is not None:
        return out
    from .connect_relations import rewrite

    rewritten = rewrite(router.spark, text, tree, router.passthrough)
    return router.passthrough(rewritten if rewritten is not None else text)


def _dispatch(ctx: Any, text: str, tree: Any, evolution: bool, replace_only: bool) -> Any:
    from sqlglot import exp

    from . import connect_dml as D

    if isinstance(tree, exp.Delete):
        return D.run_delete(ctx, text, tree)
    if isinstance(tree, exp.Update):
        return D.run_update(ctx, text, tree)
    if isinstance(tree, exp.Merge):
        return D.run_merge(ctx, text, tree, evolution)
    if isinstance(tree, exp.Insert):
        return D.run_insert(ctx, text, tree)
    if isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "TABLE":
        from .connect_ddl import run_create

        return run_create(ctx, text, tree, "replace" if replace_only else None)
    if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "").upper() == "TABLE":
        return _alter(ctx, text, tree)
    if isinstance(tree, exp.Describe) and isinstance(tree.this, exp.Table):
        ref = _ref(ctx, tree.this)
        if ref is None:
            return None
        if tree.args.get("partition") is not None:
            raise UnsupportedFeatureError("DESCRIBE ... PARTITION", "DESCRIBE of a partition is not supported")
        from .ddl import describe_frame

        return describe_frame(ctx.spark, ref, str(tree.args.get("style") or "").upper() in ("EXTENDED", "FORMATTED"))
    if isinstance(tree, exp.TruncateTable) and len(tree.expressions) == 1:
        ref = _ref(ctx, tree.expressions[0])
        if ref is None:
            return None
        from .commands import method, spark_table

        method(spark_table(ctx.spark, ref), "delete", "TRUNCATE TABLE")()
        return empty_frame(ctx.spark)
    return None


def _ref(ctx: Any, table: Any) -> DeltaRef | None:
    parts = T.table_parts(table)
    ref = resolve(ctx.spark, parts) if parts is not None else None
    if ref is not None:
        ctx.delta_statement()
    return ref


# ----------------------------------------------------------------------------- ALTER TABLE
def _alter(ctx: Any, text: str, tree: Any) -> Any:
    from sqlglot import exp

    ref = _ref(ctx, tree.this)
    if ref is None:
        return None
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    kt = KernelTable(table_uri(ref.location))
    for action in tree.args.get("actions") or []:
        if isinstance(action, (exp.Schema, exp.ColumnDef)):
            cols = action.expressions if isinstance(action, exp.Schema) else [action]
            kt.alter.add_columns([_added_field(ctx.spark, c) for c in cols])
        elif isinstance(action, exp.RenameColumn):
            kt.alter.rename_column(".".join(p.name for p in action.this.parts), action.args["to"].name)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() in ("COLUMN", "COLUMNS"):
            names: list[str] = []
            for t in action.args.get("tables") or []:
                items = t.expressions if isinstance(t, exp.Schema) else [t]
                names += [".".join(p.name for p in i.parts) if isinstance(i, exp.Column) else i.name for i in items]
            if action.args.get("exists"):
                existing = {f.name.lower() for f in kt.snapshot.schema.fields}
                names = [n for n in names if n.split(".")[0].lower() in existing]
            if names:
                kt.alter.drop_columns(names)
        elif isinstance(action, exp.AlterSet) and action.expressions and \
                isinstance(action.expressions[0], exp.Properties):
            from .connect_ddl import node_value

            kt.alter.set_table_properties({node_value(p.this): node_value(p.args["value"])
                                           for p in action.expressions[0].expressions})
        else:
            raise UnsupportedFeatureError(f"ALTER TABLE ({type(action).__name__})", "this ALTER TABLE form is not "
                                          f"supported on Delta tables by deltakernel (in: {head(text)})")
    sync_schema(ctx.spark, ref)
    return empty_frame(ctx.spark)


def _added_field(spark: Any, col: Any) -> Any:
    """A ColumnDef of ADD COLUMNS as a kernel field (nested `a.b.c` wrapped in its parent structs)."""
    from sqlglot import exp

    from .connect_ddl import columns_schema

    if col.args.get("position") is not None:
        raise UnsupportedFeatureError("ADD COLUMNS ... FIRST / AFTER", "column positions are not supported")
    if any(isinstance(c.kind, exp.DefaultColumnConstraint) for c in col.constraints):
        raise UnsupportedFeatureError("ADD COLUMNS ... DEFAULT", "adding a column with a DEFAULT is not supported")
    path: list[str] = []
    node = col.this
    while isinstance(node, exp.Dot):
        path.insert(0, node.expression.name)
        node = node.this
    path.insert(0, node.name)
    leaf = col.copy()
    leaf.set("this", exp.to_identifier(path[-1]))
    field = columns_schema(spark, [leaf]).fields[0]
    if len(path) == 1:
        return field
    import json

    from ...kernel.schema.types import parse_schema_string

    js: dict[str, Any] = field.to_json()
    for name in reversed(path[:-1]):
        js = {"name": name, "type": {"type": "struct", "fields": [js]}, "nullable": True, "metadata": {}}
    return parse_schema_string(json.dumps({"type": "struct", "fields": [js]})).fields[0]


# ----------------------------------------------------------------------------- statements sqlglot keeps as text
def _command(ctx: Any, text: str, tree: Any) -> Any:
    """EXPLAIN, SHOW TBLPROPERTIES, ALTER TABLE ... UNSET TBLPROPERTIES (sqlglot's `Command`s); None: Spark's."""
    m = _EXPLAIN.match(text)
    if m is not None:
        inner = text[m.end():]
        try:
            inner_tree = T.parse(inner)
        except DeltaSqlSyntaxError:
            return None
        from .connect_relations import rewrite

        rewritten = rewrite(ctx.spark, inner, inner_tree, ctx.router.passthrough)
        return ctx.router.passthrough(text[:m.end()] + rewritten) if rewritten is not None else None
    toks = tokenize(text, strict=False)
    while toks and toks[-1].kind == "op" and toks[-1].text == ";":
        toks.pop()
    if len(toks) > 2 and toks[0].is_kw("SHOW") and toks[1].is_kw("TBLPROPERTIES"):
        parts, i = _name(toks, 2)
        ref = resolve(ctx.spark, parts) if parts else None
        if ref is None:
            return None
        ctx.delta_statement()
        key = None
        if i < len(toks):
            if not (toks[i].text == "(" and i + 2 < len(toks) and toks[i + 2].text == ")"):
                raise DeltaSqlSyntaxError(f"syntax error: SHOW TBLPROPERTIES name [('key')] (in: {head(text)})")
            key = toks[i + 1].text
        from .ddl import properties_frame

        return properties_frame(ctx.spark, ref, key)
    if len(toks) > 3 and toks[0].is_kw("ALTER") and toks[1].is_kw("TABLE"):
        parts, i = _name(toks, 2)
        if not (i + 1 < len(toks) and toks[i].is_kw("UNSET") and toks[i + 1].is_kw("TBLPROPERTIES")):
            return None
        ref = resolve(ctx.spark, parts) if parts else None
        if ref is None:
            return None
        ctx.delta_statement()
        i += 2
        if_exists = i + 1 < len(toks) and toks[i].is_kw("IF") and toks[i + 1].is_kw("EXISTS")
        i += 2 if if_exists else 0
        keys = [t.text for t in toks[i:] if t.kind in ("string", "word", "quoted")]
        if not keys:
            raise DeltaSqlError(f"UNSET TBLPROPERTIES needs ('key', ...) (in: {head(text)})")
        from .ddl import unset_properties

        unset_properties(ref, keys, if_exists)
        return empty_frame(ctx.spark)
    return None


def _name(toks: list[Any], i: int) -> tuple[list[str], int]:
    """A dotted name starting at token `i`, and the index after it."""
    parts: list[str] = []
    while i < len(toks) and toks[i].kind in ("word", "quoted"):
        parts.append(toks[i].text)
        i += 1
        if i < len(toks) and toks[i].text == ".":
            i += 1
            continue
        break
    return parts, i


__all__ = ["ConnectStatement", "execute"]
