"""MERGE INTO, DELETE FROM, UPDATE and INSERT on Delta tables: the one executor of the DML statements
(`statements.py`), whichever parser read them.

- DELETE / UPDATE / MERGE run through the Spark `DeltaTable` (delta-spark's names: `delete`, `update`,
  `merge(...).whenMatchedUpdate(...)...execute()`), i.e. as Spark jobs, with the statement's conditions and
  values as SQL text; DELETE / UPDATE texts lose the target's qualifier (`strip_qualifier`: the kernel prunes on
  plain names). MERGE's source is a Spark DataFrame of the USING query, itself routed (it may read Delta tables).
- INSERT INTO / OVERWRITE [REPLACE WHERE] / PARTITION (...) runs the query (routed) and writes it with the
  Spark writer (`writer.write`): columns by position (or by the column list / BY NAME), cast to the table's
  types; static partition values become literal columns (and, for OVERWRITE, the replaceWhere condition).
- Results are delta-spark's rows: DELETE / UPDATE `num_affected_rows`; MERGE `num_affected_rows,
  num_updated_rows, num_deleted_rows, num_inserted_rows`; INSERT `num_affected_rows, num_inserted_rows`,
  taken from the operation's commit (`operationMetrics`), zero when nothing was committed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..catalog.tables import DeltaRef, resolve_name, sync_schema
from .commands import method, spark_table
from .grammar import DeltaSqlError, tokenize
from .statements import Assignment, Delete, Insert, Merge, MergeClause, Update


# ----------------------------------------------------------------------------- names
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


def column_path(parts: list[str] | tuple[str, ...], qualifiers: set[tuple[str, ...]], columns: set[str]) -> str:
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


def assignments(items: tuple[Assignment, ...], quals: set[tuple[str, ...]], columns: set[str], what: str,
                strip_values: bool) -> dict[str, str]:
    """SET / INSERT VALUES items as {column path: value text}; a column assigned twice is an error."""
    out: dict[str, str] = {}
    for parts, value in items:
        key = column_path(parts, quals, columns)
        if key in out:
            raise DeltaSqlError(f"{what} assigns column {key!r} twice")
        out[key] = strip_qualifier(value, quals, columns) if strip_values else value
    return out


# ----------------------------------------------------------------------------- the table's log
def table_columns(ref: DeltaRef) -> list[str]:
    """The table's top-level column names (latest version)."""
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    return [f.name for f in KernelTable(table_uri(ref.location)).snapshot.schema.fields]


def table_version(ref: DeltaRef) -> int:
    """The table's latest version (before a statement, for `commit_metrics`)."""
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    return int(KernelTable(table_uri(ref.location)).version())


def commit_metrics(ref: DeltaRef, before: int, operations: tuple[str, ...]) -> dict[str, str]:
    """operationMetrics of the newest commit after `before` whose operation is one of `operations` (any when
    empty); {} when the statement committed nothing."""
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

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


# ----------------------------------------------------------------------------- DELETE / UPDATE
def run_delete(spark: Any, stmt: Delete) -> Any:
    ref = stmt.target
    condition = None
    if stmt.condition is not None:
        columns = {c.lower() for c in table_columns(ref)}
        condition = strip_qualifier(stmt.condition, target_qualifiers(ref, stmt.alias), columns)
    before = table_version(ref)
    method(spark_table(spark, ref), "delete", "DELETE")(condition)
    metrics = commit_metrics(ref, before, ("DELETE",))
    return metrics_frame(spark, num_affected_rows=metric_int(metrics, "numDeletedRows"))


def run_update(spark: Any, stmt: Update) -> Any:
    ref = stmt.target
    columns = {c.lower() for c in table_columns(ref)}
    quals = target_qualifiers(ref, stmt.alias)
    updates = assignments(stmt.assignments, quals, columns, "UPDATE", strip_values=True)
    condition = strip_qualifier(stmt.condition, quals, columns) if stmt.condition is not None else None
    before = table_version(ref)
    method(spark_table(spark, ref), "update", "UPDATE")(condition, updates)
    metrics = commit_metrics(ref, before, ("UPDATE",))
    return metrics_frame(spark, num_affected_rows=metric_int(metrics, "numUpdatedRows"))


# ----------------------------------------------------------------------------- MERGE
_BY_SOURCE = "MERGE ... WHEN NOT MATCHED BY SOURCE"


def run_merge(spark: Any, stmt: Merge, run_sql: Callable[[str], Any]) -> Any:
    ref = stmt.target
    t_alias = stmt.alias or ref.table
    columns = {c.lower() for c in table_columns(ref)}
    t_quals: set[tuple[str, ...]] = {(t_alias,)} if t_alias else set()
    table = spark_table(spark, ref)
    if t_alias:
        table = table.alias(t_alias)
    merge = method(table, "merge", "MERGE INTO")
    source = run_sql(stmt.source)
    if stmt.source_alias:
        source = source.alias(stmt.source_alias)
    builder = merge(source, stmt.on)
    for clause in stmt.clauses:
        builder = _clause(builder, clause, t_quals, columns)
    if stmt.schema_evolution:
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


def _clause(builder: Any, clause: MergeClause, t_quals: set[tuple[str, ...]], columns: set[str]) -> Any:
    cond, star = clause.condition, clause.assignments is None
    what = "MERGE INSERT" if clause.action == "insert" else "MERGE"
    sets = None if star else assignments(clause.assignments or (), t_quals, columns, what, strip_values=False)
    if clause.when == "matched":
        if clause.action == "delete":
            return builder.whenMatchedDelete(cond)
        if clause.action == "update":
            return builder.whenMatchedUpdateAll(cond) if star else builder.whenMatchedUpdate(cond, sets)
    elif clause.when == "not_matched" and clause.action == "insert":
        return builder.whenNotMatchedInsertAll(cond) if star else builder.whenNotMatchedInsert(cond, sets)
    elif clause.when == "not_matched_by_source":
        if clause.action == "delete":
            return method(builder, "whenNotMatchedBySourceDelete", _BY_SOURCE)(cond)
        if clause.action == "update" and not star:
            return method(builder, "whenNotMatchedBySourceUpdate", _BY_SOURCE)(cond, sets)
    raise DeltaSqlError(f"MERGE: unsupported clause WHEN {clause.when.upper().replace('_', ' ')} THEN "
                        f"{clause.action.upper()}{' *' if star else ''}")


# ----------------------------------------------------------------------------- INSERT
def positional_frame(df: Any, ref: DeltaRef, columns: list[str] | None, by_name: bool = False,
                     static: dict[str, str] | None = None) -> Any:
    """`df`'s columns as the table's: by position (the leading columns of the table, less static partition
    columns), by an explicit column list, or by name; cast to the table's types; static partition values
    appended as literals."""
    from pyspark.sql import functions as F

    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri, to_spark_schema

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


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def static_condition(ref: DeltaRef, static: dict[str, str]) -> str:
    """INSERT OVERWRITE ... PARTITION (k = v, ...) as the replaceWhere condition of those partitions."""
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri, to_spark_schema

    types = {f.name.lower(): f.dataType
             for f in to_spark_schema(KernelTable(table_uri(ref.location)).snapshot.schema).fields}
    return " AND ".join(f"{_quote(k)} = {_literal(v, types[k.lower()])}" for k, v in static.items())


def run_insert(spark: Any, stmt: Insert, run_sql: Callable[[str], Any]) -> Any:
    ref = stmt.target
    static = dict(stmt.static)
    df = run_sql(stmt.query)
    frame = positional_frame(df, ref, list(stmt.columns) if stmt.columns else None, by_name=stmt.by_name,
                             static=static)
    replace_where = stmt.replace_where
    if stmt.overwrite and static and replace_where is None:
        replace_where = static_condition(ref, static)
    before = table_version(ref)
    from ..writing.writer import write

    opts = {"replaceWhere": replace_where, "partitionOverwriteMode": "static"} if replace_where is not None else {}
    write(frame, ref.location, mode="overwrite" if stmt.overwrite or replace_where is not None else "append", **opts)
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
    from ..writing.writer import write

    frame = positional_frame(df, ref, None)
    write(frame, ref.location, mode="overwrite" if overwrite else "append")
    sync_schema(spark, ref)
    return True


__all__ = [
    "assignments",
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
    "target_qualifiers",
]
