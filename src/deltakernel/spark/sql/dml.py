"""MERGE INTO, DELETE FROM, UPDATE and INSERT on Delta tables, from Spark's own parse of the statement.

- DELETE / UPDATE / MERGE run through the Spark `DeltaTable` (delta-spark's names: `delete`, `update`,
  `merge(...).whenMatchedUpdate(...)...execute()`), i.e. as Spark jobs; conditions, SET values and INSERT
  values are handed over as SQL text (the original text where Spark's spans allow, else Spark's `.sql()`).
  MERGE's source is a Spark DataFrame of the USING clause, itself routed (a subquery may read Delta tables).
- INSERT INTO / OVERWRITE [REPLACE WHERE] / PARTITION (...) runs the query in Spark and writes it with the
  Spark writer (`writer.write`): columns by position (or by the column list / BY NAME), cast to the table's
  types; static partition values become literal columns (and, for OVERWRITE, the replaceWhere condition).
- Results are delta-spark's rows: DELETE / UPDATE `num_affected_rows`; MERGE `num_affected_rows,
  num_updated_rows, num_deleted_rows, num_inserted_rows`; INSERT `num_affected_rows, num_inserted_rows`,
  taken from the operation's commit (`operationMetrics`), zero when nothing was committed.
"""

from __future__ import annotations

from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog import DeltaRef, resolve, resolve_name, sync_schema
from . import plans as P
from .commands import method, spark_table
from .grammar import DeltaSqlError, head, tokenize


# ----------------------------------------------------------------------------- targets
def target(spark: Any, node: Any, what: str) -> tuple[DeltaRef, str | None] | None:
    """(Delta table, alias) of a DML target node, None when it is not a Delta table."""
    alias, inner = P.unwrap_alias(node)
    if P.name(inner) == "RelationTimeTravel":
        inner_parts = P.identifier_parts(inner.relation())
        if inner_parts is not None and resolve(spark, inner_parts) is not None:
            raise DeltaSqlError(f"{what}: the target cannot be a time-travel version of a table")
        return None
    parts = P.identifier_parts(inner)
    if parts is None:
        return None
    ref = resolve(spark, parts)
    if ref is None:
        return None
    return ref, alias


def strip_qualifier(text: str, qualifiers: set[tuple[str, ...]], columns: set[str]) -> str:
    """`text` with `q.col` written `col` for each qualifier `q` (the statement's alias, or the table's name
    `t` / `db.t` / `spark_catalog.db.t`) whose first part is not also a column name: DELETE / UPDATE
    conditions name one table, and the kernel prunes on plain names."""
    quals = sorted({tuple(p.lower() for p in q) for q in qualifiers if q and q[0].lower() not in columns},
                   key=len, reverse=True)
    if not quals:
        return text
    toks = tokenize(text)
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(toks):
        prev = toks[i - 1] if i > 0 else None
        skip = 0
        if prev is None or not (prev.kind == "op" and prev.text == "."):
            for q in quals:
                n = 2 * len(q)
                window = toks[i:i + n + 1]
                if len(window) == n + 1 and window[-1].kind in ("word", "quoted") and all(
                        window[2 * k].kind in ("word", "quoted") and window[2 * k].text.lower() == q[k]
                        and window[2 * k + 1].kind == "op" and window[2 * k + 1].text == "." for k in range(len(q))):
                    skip = n
                    break
        if skip:
            out.append(text[pos:toks[i].start])
            pos = toks[i + skip - 1].end
            i += skip
        else:
            i += 1
    out.append(text[pos:])
    return "".join(out)


def table_columns(ref: DeltaRef) -> list[str]:
    """The table's top-level column names (latest version)."""
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    return [f.name for f in KernelTable(table_uri(ref.location)).snapshot.schema.fields]


def table_version(ref: DeltaRef) -> int:
    """The table's latest version (before a statement, for `commit_metrics`)."""
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    return int(KernelTable(table_uri(ref.location)).version())


def commit_metrics(ref: DeltaRef, before: int, operations: tuple[str, ...]) -> dict[str, str]:
    """operationMetrics of the newest commit after `before` whose operation is one of `operations` (any when
    empty); {} when the statement committed nothing."""
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    kt = KernelTable(table_uri(ref.location))
    latest = int(kt.version())
    if latest <= before:
        return {}
    for info in kt.history(latest - before):
        if not operations or str(info.get("operation")) in operations:
            return {str(k): str(v) for k, v in (info.get("operationMetrics") or {}).items()}
    return {}


def metrics_frame(spark: Any, **values: int) -> Any:
    from pyspark.sql.types import LongType, StructField, StructType

    schema = StructType([StructField(k, LongType(), True) for k in values])
    return spark.createDataFrame([tuple(int(v) for v in values.values())], schema)


def metric_int(metrics: dict[str, str], key: str) -> int:
    """An operation metric as an int (0 when absent or not a number)."""
    try:
        return int(metrics.get(key) or 0)
    except ValueError:
        return 0


def _no_subquery(node: Any, what: str) -> None:
    if P.seq(node.subqueries()):
        raise UnsupportedFeatureError(f"{what} with a subquery", f"{what}: subqueries in the condition are not "
                                      "supported; write it as MERGE INTO ... USING (subquery) ...")


def _assignment_key(key: Any, qualifiers: set[tuple[str, ...]], columns: set[str]) -> str:
    """A SET target as a column path without the target's alias / name."""
    parts = [str(p) for p in P.seq(key.nameParts())] if P.class_name(key) == "UnresolvedAttribute" \
        else [str(key.sql())]
    return column_path(parts, qualifiers, columns)


def column_path(parts: list[str], qualifiers: set[tuple[str, ...]], columns: set[str]) -> str:
    """A column's name parts as a dotted path, less a leading qualifier (the longest of `qualifiers` that it
    starts with, unless that qualifier's first part is a column name: `s.x` of a struct `s` stays)."""
    lower = [p.lower() for p in parts]
    for q in sorted(qualifiers, key=len, reverse=True):
        ql = [x.lower() for x in q]
        if len(parts) > len(q) and lower[:len(q)] == ql and ql[0] not in columns:
            return ".".join(parts[len(q):])
    return ".".join(parts)


def target_qualifiers(ref: DeltaRef, alias: str | None) -> set[tuple[str, ...]]:
    """The prefixes a column of the target may be written with (its alias, or its name's parts)."""
    if alias:
        return {(alias,)}
    if ref.table:
        return {(ref.table,), (ref.db or "", ref.table), ("spark_catalog", ref.db or "", ref.table)}
    return set()


# ----------------------------------------------------------------------------- DELETE / UPDATE
def run_delete(spark: Any, text: str, plan: Any) -> Any:
    found = target(spark, plan.table(), "DELETE")
    if found is None:
        return None
    ref, alias = found
    _no_subquery(plan, "DELETE")
    cond = plan.condition()
    condition = None
    if not (P.name(cond) == "Literal" and str(cond.sql()).upper() == "TRUE"):
        columns = {c.lower() for c in table_columns(ref)}
        condition = strip_qualifier(P.expr_text(spark, text, cond), target_qualifiers(ref, alias), columns)
    before = table_version(ref)
    table = spark_table(spark, ref)
    method(table, "delete", "DELETE")(condition)
    metrics = commit_metrics(ref, before, ("DELETE",))
    return metrics_frame(spark, num_affected_rows=metric_int(metrics, "numDeletedRows"))


def run_update(spark: Any, text: str, plan: Any) -> Any:
    found = target(spark, plan.table(), "UPDATE")
    if found is None:
        return None
    ref, alias = found
    _no_subquery(plan, "UPDATE")
    columns = {c.lower() for c in table_columns(ref)}
    quals = target_qualifiers(ref, alias)
    updates: dict[str, str] = {}
    for a in P.seq(plan.assignments()):
        key = _assignment_key(a.key(), quals, columns)
        if key in updates:
            raise DeltaSqlError(f"UPDATE assigns column {key!r} twice")
        updates[key] = strip_qualifier(P.expr_text(spark, text, a.value()), quals, columns)
    cond = P.opt(plan.condition())
    condition = strip_qualifier(P.expr_text(spark, text, cond), quals, columns) if cond is not None else None
    before = table_version(ref)
    method(spark_table(spark, ref), "update", "UPDATE")(condition, updates)
    metrics = commit_metrics(ref, before, ("UPDATE",))
    return metrics_frame(spark, num_affected_rows=metric_int(metrics, "numUpdatedRows"))


# ----------------------------------------------------------------------------- MERGE
_RELATIONS = ("UnresolvedRelation", "RelationTimeTravel", "UnresolvedTableValuedFunction")


def _source(spark: Any, text: str, node: Any, run_sql: Any) -> tuple[Any, str | None]:
    """The USING clause as a (routed) Spark DataFrame and its alias."""
    alias, inner = P.unwrap_alias(node)
    if P.name(inner) in _RELATIONS:
        s = P.relation_span(inner)
        if s is None:
            raise DeltaSqlError(f"MERGE: cannot locate the USING table in the statement (in: {head(text)})")
        df = run_sql("SELECT * FROM " + text[s[0]:s[1] + 1])
        if alias is None:
            parts = P.identifier_parts(inner.relation() if P.name(inner) == "RelationTimeTravel" else inner)
            alias = parts[-1] if parts else None
        return df, alias
    query = P.query_text(spark, text, inner)
    if query is None:
        raise DeltaSqlError(f"MERGE: cannot locate the USING query in the statement (in: {head(text)})")
    return run_sql(query), alias


def run_merge(spark: Any, text: str, plan: Any, run_sql: Any) -> Any:
    found = target(spark, plan.targetTable(), "MERGE")
    if found is None:
        return None
    ref, t_alias = found
    if t_alias is None and ref.table:
        t_alias = ref.table
    columns = {c.lower() for c in table_columns(ref)}
    t_quals: set[tuple[str, ...]] = {(t_alias,)} if t_alias else set()
    table = spark_table(spark, ref)
    if t_alias:
        table = table.alias(t_alias)
    merge = method(table, "merge", "MERGE INTO")
    source, s_alias = _source(spark, text, plan.sourceTable(), run_sql)
    if s_alias:
        source = source.alias(s_alias)

    def cond_of(action: Any) -> str | None:
        c = P.opt(action.condition())
        return P.expr_text(spark, text, c) if c is not None else None

    def sets(action: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for a in P.seq(action.assignments()):
            key = _assignment_key(a.key(), t_quals, columns)
            if key in out:
                raise DeltaSqlError(f"MERGE assigns column {key!r} twice")
            out[key] = P.expr_text(spark, text, a.value())
        return out

    builder = merge(source, P.expr_text(spark, text, plan.mergeCondition()))
    for action in P.seq(plan.matchedActions()):
        kind = P.class_name(action)
        if kind == "DeleteAction":
            builder = builder.whenMatchedDelete(cond_of(action))
        elif kind == "UpdateStarAction" or (kind == "UpdateAction" and _from_star(action)):
            builder = builder.whenMatchedUpdateAll(cond_of(action))
        elif kind == "UpdateAction":
            builder = builder.whenMatchedUpdate(cond_of(action), sets(action))
        else:
            raise DeltaSqlError(f"MERGE: unsupported WHEN MATCHED action {kind}")
    for action in P.seq(plan.notMatchedActions()):
        kind = P.class_name(action)
        if kind == "InsertStarAction":
            builder = builder.whenNotMatchedInsertAll(cond_of(action))
        elif kind == "InsertAction":
            builder = builder.whenNotMatchedInsert(cond_of(action), sets(action))
        else:
            raise DeltaSqlError(f"MERGE: unsupported WHEN NOT MATCHED action {kind}")
    for action in P.seq(plan.notMatchedBySourceActions()):
        kind = P.class_name(action)
        if kind == "DeleteAction":
            builder = method(builder, "whenNotMatchedBySourceDelete", "MERGE ... WHEN NOT MATCHED BY SOURCE")(
                cond_of(action))
        elif kind == "UpdateAction":
            builder = method(builder, "whenNotMatchedBySourceUpdate", "MERGE ... WHEN NOT MATCHED BY SOURCE")(
                cond_of(action), sets(action))
        else:
            raise DeltaSqlError(f"MERGE: unsupported WHEN NOT MATCHED BY SOURCE action {kind}")
    if _schema_evolution(plan):
        builder = method(builder, "withSchemaEvolution", "MERGE WITH SCHEMA EVOLUTION")()
    before = table_version(ref)
    result = builder.execute()
    sync_schema(spark, ref)
    if result is not None and hasattr(result, "columns") and "num_affected_rows" in result.columns:
        return result
    m = commit_metrics(ref, before, ("MERGE",))
    u, d, i = (metric_int(m, "numTargetRowsUpdated"), metric_int(m, "numTargetRowsDeleted"),
               metric_int(m, "numTargetRowsInserted"))
    return metrics_frame(spark, num_affected_rows=u + d + i, num_updated_rows=u, num_deleted_rows=d,
                         num_inserted_rows=i)


def _from_star(action: Any) -> bool:
    try:
        return bool(action.fromStar())
    except Exception:
        return False


def _schema_evolution(plan: Any) -> bool:
    try:
        return bool(plan.withSchemaEvolution())
    except Exception:
        return False


# ----------------------------------------------------------------------------- INSERT
def positional_frame(df: Any, ref: DeltaRef, columns: list[str] | None, by_name: bool = False,
                     static: dict[str, str] | None = None) -> Any:
    """`df`'s columns as the table's: by position (the leading columns of the table, less static partition
    columns), by an explicit column list, or by name; cast to the table's types; static partition values
    appended as literals."""
    from pyspark.sql import functions as F

    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri, to_spark_schema

    schema = to_spark_schema(KernelTable(table_uri(ref.location)).snapshot.schema)
    by_lower = {f.name.lower(): f for f in schema.fields}
    static = static or {}
    for p in static:
        if p.lower() not in by_lower:
            raise DeltaSqlError(f"INSERT INTO {ref.label}: PARTITION column {p!r} is not in the table")
    static_lower = {p.lower() for p in static}
    incoming = list(df.columns)
    if by_name:
        unknown = [c for c in incoming if c.lower() not in by_lower]
        if unknown:
            raise DeltaSqlError(f"INSERT INTO {ref.label} BY NAME: column(s) {unknown} are not in the table")
        names = [by_lower[c.lower()].name for c in incoming]
    elif columns:
        unknown = [c for c in columns if c.lower() not in by_lower]
        if unknown:
            raise DeltaSqlError(f"INSERT INTO {ref.label}: column(s) {unknown} are not in the table")
        names = [by_lower[c.lower()].name for c in columns]
        if len(incoming) != len(names):
            raise DeltaSqlError(f"INSERT INTO {ref.label}: the query gives {len(incoming)} column(s) for "
                                f"{len(names)} listed column(s) {names}")
    else:
        names = [f.name for f in schema.fields if f.name.lower() not in static_lower]
        if len(incoming) > len(names):
            raise DeltaSqlError(f"INSERT INTO {ref.label}: the query gives {len(incoming)} column(s), the table has "
                                f"{len(names)} {names}")
        names = names[:len(incoming)]
    if len({n.lower() for n in names}) != len(names):
        raise DeltaSqlError(f"INSERT INTO {ref.label}: a column appears twice in {names}")
    positional = df.toDF(*[f"__dk_c{i}" for i in range(len(incoming))])
    cols = [F.col(f"__dk_c{i}").cast(by_lower[n.lower()].dataType).alias(n) for i, n in enumerate(names)]
    cols += [F.lit(v).cast(by_lower[p.lower()].dataType).alias(by_lower[p.lower()].name) for p, v in static.items()]
    return positional.select(*cols)


def _literal(value: str, spark_type: Any) -> str:
    from pyspark.sql.types import NumericType

    if isinstance(spark_type, NumericType):
        try:
            float(value)
            return value
        except ValueError:
            pass
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def static_condition(ref: DeltaRef, static: dict[str, str]) -> str:
    """INSERT OVERWRITE ... PARTITION (k = v, ...) as the replaceWhere condition of those partitions."""
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri, to_spark_schema

    types = {f.name.lower(): f.dataType
             for f in to_spark_schema(KernelTable(table_uri(ref.location)).snapshot.schema).fields}
    return " AND ".join(f"{P.quote(k)} = {_literal(v, types[k.lower()])}" for k, v in static.items())


def run_insert(spark: Any, text: str, plan: Any, run_sql: Any) -> Any:
    found = target(spark, plan.table(), "INSERT")
    if found is None:
        return None
    ref, _alias = found
    if P.name(plan.table()) == "SubqueryAlias":
        raise DeltaSqlError("INSERT: the target cannot have an alias")
    spec = P.scala_map(plan.partitionSpec())
    static = {k: str(P.opt(v)) for k, v in spec.items() if P.opt(v) is not None}
    if bool(plan.ifPartitionNotExists()):
        raise UnsupportedFeatureError("INSERT ... IF NOT EXISTS", "INSERT ... PARTITION (...) IF NOT EXISTS is not "
                                      "supported on Delta tables")
    replace_where = None
    criteria = P.opt(P.call(plan, "replaceCriteriaOpt"))
    overwrite = bool(plan.overwrite())
    if criteria is not None:
        if P.class_name(criteria) != "InsertReplaceWhere":
            raise UnsupportedFeatureError("INSERT ... REPLACE ON / USING", "only INSERT ... REPLACE WHERE is supported")
        replace_where = P.expr_text(spark, text, criteria.cond())
        overwrite = False  # Spark marks REPLACE WHERE as an overwrite; it replaces only the matching rows
        if static:
            raise UnsupportedFeatureError("INSERT ... PARTITION ... REPLACE WHERE", "use REPLACE WHERE alone")
    query = P.query_text(spark, text, plan.query())
    if query is None:
        raise DeltaSqlError(f"INSERT: cannot locate the query in the statement (in: {head(text)})")
    df = run_sql(query)
    cols = [str(c) for c in P.seq(plan.userSpecifiedCols())] or None
    frame = positional_frame(df, ref, cols, by_name=bool(plan.byName()), static=static)
    if overwrite and static and replace_where is None:
        replace_where = static_condition(ref, static)
    before = table_version(ref)
    from ..writer import write

    opts = {"replaceWhere": replace_where, "partitionOverwriteMode": "static"} if replace_where is not None else {}
    write(frame, ref.location, mode="overwrite" if overwrite or replace_where is not None else "append", **opts)
    sync_schema(spark, ref)
    metrics = commit_metrics(ref, before, ())
    rows = metric_int(metrics, "numOutputRows")
    return metrics_frame(spark, num_affected_rows=rows, num_inserted_rows=rows)


def insert_into(df: Any, name: str, overwrite: bool) -> bool:
    """`df.write.insertInto(name)` for a Delta table: columns by position, append or overwrite. False when
    `name` is not a Delta table (Spark inserts as before)."""
    spark = df.sparkSession
    ref = resolve_name(spark, name)
    if ref is None:
        return False
    from ..writer import write

    frame = positional_frame(df, ref, None)
    write(frame, ref.location, mode="overwrite" if overwrite else "append")
    sync_schema(spark, ref)
    return True


__all__ = [
    "column_path",
    "commit_metrics",
    "insert_into",
    "metric_int",
    "metrics_frame",
    "positional_frame",
    "run_delete",
    "run_insert",
    "run_merge",
    "run_update",
    "static_condition",
    "strip_qualifier",
    "table_columns",
    "table_version",
    "target",
    "target_qualifiers",
]
