"""CREATE [OR REPLACE] / REPLACE TABLE ... USING delta [AS SELECT] and CREATE TABLE ... LIKE on a Spark Connect
session, from sqlglot's parse of the statement (`text_plans.py`); the same `catalog.create` as classic sessions.

Column types are written back as Spark DDL and parsed by the server (`SparkSession._parse_ddl`, Connect's
`ddl_parse` analysis), so a type means what Spark says; NOT NULL, COMMENT, GENERATED ALWAYS AS (expr),
GENERATED ... AS IDENTITY and DEFAULT become the Delta field's nullability and metadata as delta-spark writes
them. PARTITIONED BY / CLUSTER BY columns, LOCATION, COMMENT, TBLPROPERTIES and OPTIONS (delta.* options are
table properties, `path` a location) follow classic `ddl.run_create`.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog import TableSpec, create, path_of, resolve
from . import text_plans as T
from .commands import empty_frame
from .ddl import is_delta_provider, like_spec
from .grammar import DeltaSqlError, head


def node_value(node: Any) -> str:
    """A sqlglot literal / identifier / column as its plain text (a property key or value, a provider...)."""
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return str(node.name)
    if isinstance(node, (exp.Var, exp.Identifier)):
        return str(node.name)
    if isinstance(node, exp.Column):
        return ".".join(p.name for p in node.parts)
    return T.sql_text(node)


def _properties(tree: Any) -> dict[str, Any]:
    """provider, location, comment, partition_by, cluster_by, properties, options, like of a Create tree."""
    from sqlglot import exp

    out: dict[str, Any] = {"properties": {}, "options": {}, "partition_by": [], "cluster_by": []}
    props = tree.args.get("properties")
    for p in props.expressions if props is not None else []:
        if isinstance(p, exp.FileFormatProperty):
            out["provider"] = node_value(p.this)
        elif isinstance(p, exp.LocationProperty):
            out["location"] = node_value(p.this)
        elif isinstance(p, exp.SchemaCommentProperty):
            out["comment"] = node_value(p.this)
        elif isinstance(p, exp.PartitionedByProperty):
            cols = p.this.expressions if isinstance(p.this, (exp.Schema, exp.Tuple)) else [p.this]
            for c in cols:
                if not isinstance(c, (exp.Identifier, exp.Column)):
                    raise UnsupportedFeatureError("partition transforms", f"PARTITIONED BY {T.sql_text(c)}: Delta "
                                                  "tables are partitioned by columns only")
                out["partition_by"].append(node_value(c))
        elif isinstance(p, exp.ClusterProperty):
            out["cluster_by"] = [node_value(c) for c in p.expressions]
        elif isinstance(p, exp.OptionsProperty):
            out["options"].update({node_value(q.this): node_value(q.args["value"]) for q in p.expressions})
        elif isinstance(p, exp.LikeProperty):
            out["like"] = p.this
        elif isinstance(p, exp.Property):
            out["properties"][node_value(p.this)] = node_value(p.args["value"])
        elif isinstance(p, exp.TemporaryProperty):
            out["temporary"] = True  # CREATE TEMPORARY TABLE ... USING: a temporary view, Spark's own
        elif isinstance(p, exp.ExternalProperty):
            out["unsupported"] = "EXTERNAL"
        else:
            out["unsupported"] = T.sql_text(p)
    return out


def columns_schema(spark: Any, columns: list[Any]) -> Any:
    """Kernel schema of sqlglot ColumnDefs: types parsed by Spark, constraints as Delta metadata."""
    from sqlglot import exp

    from ...kernel.schema.types import parse_schema_string
    from .public_catalog import quote, sql_string

    ddl: list[str] = []
    metas: list[dict[str, Any]] = []
    for col in columns:
        meta: dict[str, Any] = {}
        piece = f"{quote(col.name)} {col.args['kind'].sql(dialect='spark')}"
        for c in col.constraints:
            kind = c.kind
            if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
                piece += " NOT NULL"
            elif isinstance(kind, exp.CommentColumnConstraint):
                meta["comment"] = node_value(kind.this)
            elif isinstance(kind, exp.ComputedColumnConstraint):
                meta["delta.generationExpression"] = T.sql_text(kind.this)
            elif isinstance(kind, exp.DefaultColumnConstraint):
                meta["CURRENT_DEFAULT"] = T.sql_text(kind.this)
            elif isinstance(kind, exp.GeneratedAsIdentityColumnConstraint):
                start, step = kind.args.get("start"), kind.args.get("increment")
                meta["delta.identity.start"] = int(node_value(start)) if start is not None else 1
                meta["delta.identity.step"] = int(node_value(step)) if step is not None else 1
                meta["delta.identity.allowExplicitInsert"] = not bool(kind.this)
            else:
                raise UnsupportedFeatureError("column constraint", f"column {col.name}: {T.sql_text(c)} is not "
                                              "supported on Delta tables")
        if "comment" in meta:
            piece += f" COMMENT {sql_string(meta['comment'])}"
        ddl.append(piece)
        metas.append(meta)
    parsed = json.loads(spark._parse_ddl(", ".join(ddl)).json())
    fields = []
    for f, meta in zip(parsed["fields"], metas):
        typ = f["type"]
        m = dict(meta)
        if isinstance(typ, str) and typ.startswith(("char(", "varchar(")):
            m["__CHAR_VARCHAR_TYPE_STRING"] = typ
            typ = "string"
        fields.append({"name": f["name"], "type": typ, "nullable": f["nullable"], "metadata": m})
    return parse_schema_string(json.dumps({"type": "struct", "fields": fields}))


def run_create(ctx: Any, text: str, tree: Any, mode_override: str | None = None) -> Any:
    """CREATE / REPLACE TABLE of a Delta table (None when the table is not Delta: Spark's)."""
    from sqlglot import exp

    spark = ctx.spark
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    parts = T.table_parts(target)
    if parts is None:
        return None
    props = _properties(tree)
    if props.get("temporary"):
        return None
    if "like" in props:
        return _create_like(ctx, tree, parts, props)
    provider = props.get("provider")
    if not is_delta_provider(spark, provider) and not (path_of(parts) is not None and provider is None):
        return None
    ctx.delta_statement()
    if "unsupported" in props:
        raise UnsupportedFeatureError("CREATE TABLE clause", f"{props['unsupported']} does not apply to Delta "
                                      f"tables (in: {head(text)})")
    options = {k: v for k, v in props["options"].items()}
    location = props.get("location") or options.pop("path", None)
    properties = {**props["properties"], **{k: v for k, v in options.items() if k.lower().startswith("delta.")}}
    if props["partition_by"] and props["cluster_by"]:
        raise DeltaSqlError("CLUSTER BY and PARTITIONED BY cannot be used together")
    columns = [c for c in tree.this.expressions if isinstance(c, exp.ColumnDef)] \
        if isinstance(tree.this, exp.Schema) else []
    schema = columns_schema(spark, columns) if columns else None
    df = None
    query = tree.args.get("expression")
    if query is not None:
        query_sql = T.query_text(text, query)
        if query_sql is None:
            raise DeltaSqlError(f"cannot locate the AS SELECT query of the statement (in: {head(text)})")
        df = ctx.run_sql(query_sql)
    if mode_override is not None:
        mode = mode_override
    elif bool(tree.args.get("replace")):
        mode = "create_or_replace"
    else:
        mode = "ignore" if bool(tree.args.get("exists")) else "create"
    spec = TableSpec(schema=schema, location=location, partition_by=props["partition_by"] or None,
                     cluster_by=props["cluster_by"] or None, properties=properties or None,
                     comment=props.get("comment"))
    create(spark, parts, spec, mode, df=df, label=".".join(parts))
    return empty_frame(spark)


def _create_like(ctx: Any, tree: Any, parts: list[str], props: dict[str, Any]) -> Any:
    """CREATE TABLE t LIKE source [USING delta] [LOCATION] [TBLPROPERTIES]: as classic `ddl.run_create_like`."""
    spark = ctx.spark
    src_parts = T.table_parts(props["like"]) or []
    src = resolve(spark, src_parts) if src_parts else None
    provider = props.get("provider")
    if not (is_delta_provider(spark, provider) if provider is not None else src is not None):
        return None
    ctx.delta_statement()
    spec = like_spec(spark, src, src_parts, dict(props["properties"]), props.get("location"))
    create(spark, parts, spec, "ignore" if bool(tree.args.get("exists")) else "create", label=".".join(parts))
    return empty_frame(spark)


__all__ = ["columns_schema", "node_value", "run_create"]
