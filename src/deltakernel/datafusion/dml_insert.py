"""`INSERT INTO | OVERWRITE` on a Delta table of a DataFusion session (Spark SQL syntax), for `dml.py`.

Forms: a column list, `BY NAME`, `REPLACE WHERE <condition>`, a static / mixed partition spec
`PARTITION (p = 'x', q)` and common table expressions before the statement or before its query.

The query (`SELECT ...` / `VALUES ...`) runs in the session as written, under the statement's `WITH`, and
streams into `write_deltalake`. With a partition spec (Spark's semantics, checked against delta-spark's
InsertInto suites): the static columns get their constant value (cast to the column's type; a value that
does not fit is an error), the query supplies the other columns in table order (or the column list), and
`INSERT OVERWRITE ... PARTITION (p = 'x')` replaces only that partition (Spark's default static partition
overwrite: `replaceWhere p = 'x'`; with no static value, the whole table). A name in PARTITION (...) that is
not a partition column is an error, as in Spark.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pyarrow as pa

from ..kernel.arrow_build import broadcast
from .dml_parse import (
    DmlError,
    DmlSyntaxError,
    Statement,
    blank_with,
    head,
    query_text,
    sql_text,
    strip_qualifier,
    with_prefixed,
)
from .dml_targets import Target, metrics_row, resolve_target, run_query


class _Pinned:
    """What `write_deltalake` treats as a DeltaTable: the registered snapshot (the write reads at it, as
    deltalake does with a DeltaTable), updated in place with the version it commits."""

    def __init__(self, snapshot: Any) -> None:
        self._storage = snapshot.storage
        self._snapshot = snapshot


def _unsupported(tree: Any, keys: tuple[str, ...], what: str, statement: str) -> None:
    for key in keys:
        if tree.args.get(key):
            raise DmlError(f"{what} is not supported (in: {head(statement)})")


def insert(ctx: Any, stmt: Statement) -> pa.Table | None:
    from sqlglot import exp

    from ..operations.write.api import write_deltalake

    tree, statement = stmt.tree, stmt.text
    table, columns = tree.this, None
    if isinstance(table, exp.Schema):
        table, columns = table.this, [c.name for c in table.expressions]
    if not isinstance(table, exp.Table):
        raise DmlError(f"INSERT target must be a table, got {table.sql(dialect='spark')!r}")
    _unsupported(tree, ("ignore", "exists", "returning", "conflict", "alternative", "settings", "stored"),
                 "this INSERT form", statement)
    target = resolve_target(ctx, table, statement, "INSERT")
    if target is None:
        return None
    query = tree.expression
    if query is None:
        raise DmlSyntaxError(f"INSERT needs SELECT ... or VALUES ... (in: {head(statement)})")
    replace_where = tree.args.get("where")
    overwrite = bool(tree.args.get("overwrite"))
    if replace_where is not None and overwrite:
        raise DmlError("INSERT OVERWRITE ... REPLACE WHERE: use INSERT INTO t REPLACE WHERE <condition> ...")
    static = _partition_spec(table.args.get("partition") or tree.args.get("partition"), target)
    if static and replace_where is not None:
        raise DmlError("INSERT ... PARTITION (...) REPLACE WHERE: use one or the other")
    predicate = sql_text(strip_qualifier(replace_where, target.alias)) if replace_where is not None else None
    if overwrite and static:
        predicate = " AND ".join(_equals_sql(name, value) for name, value in static.items())
    schema = target.snapshot.schema
    table_names = [n for n in schema.names if n not in static]
    by_lower = {n.lower(): n for n in schema.names}
    if columns is not None:
        names = []
        for c in columns:
            if c.lower() not in by_lower:
                raise DmlError(f"INSERT INTO {target.label}: column {c!r} is not in the table "
                               f"(columns: {list(schema.names)})")
            if by_lower[c.lower()] in static:
                raise DmlError(f"INSERT INTO {target.label}: column {c!r} has a static value in PARTITION (...) "
                               "and cannot be in the column list too")
            names.append(by_lower[c.lower()])
        if len(set(names)) != len(names):
            raise DmlError(f"INSERT INTO {target.label}: a column appears twice in {columns}")
    else:
        names = table_names
    text = with_prefixed(stmt.with_text, query_text(blank_with(stmt), query))
    reader = run_query(ctx, text, f"INSERT INTO {target.label}")
    try:
        names = _query_names(reader, names, table_names, by_lower, static, target, bool(tree.args.get("by_name")))
    except DmlError:
        reader.close()
        raise
    constants = [(name, value) for name, value in static.items()]
    renamed = pa.schema([f.with_name(n) for f, n in zip(reader.schema, names)]
                        + [pa.field(name, value.type) for name, value in constants])
    counts = {"rows": 0}

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            counts["rows"] += batch.num_rows
            extra = [broadcast(value, batch.num_rows) for _, value in constants]
            yield pa.RecordBatch.from_arrays([*batch.columns, *extra], schema=renamed)

    pinned = _Pinned(target.snapshot)
    mode = "overwrite" if overwrite or predicate is not None else "append"
    try:
        write_deltalake(pinned, pa.RecordBatchReader.from_batches(renamed, batches()), mode=mode,
                        predicate=predicate)
    finally:
        reader.close()
    if pinned._snapshot is not target.snapshot:
        target.repin(pinned._snapshot)
    return metrics_row(num_affected_rows=counts["rows"], num_inserted_rows=counts["rows"])


def _query_names(reader: pa.RecordBatchReader, names: list[str], table_names: list[str], by_lower: dict[str, str],
                 static: dict[str, pa.Scalar], target: Target, by_name: bool) -> list[str]:
    """The table column each query column goes to: by position, or by name (`BY NAME`); arity checked."""
    out_names = reader.schema.names
    if by_name:
        unknown = [n for n in out_names if n.lower() not in by_lower]
        if unknown:
            raise DmlError(f"INSERT INTO {target.label} BY NAME: query column(s) {unknown} not in the table "
                           f"(columns: {list(by_lower.values())})")
        fixed = [n for n in out_names if by_lower[n.lower()] in static]
        if fixed:
            raise DmlError(f"INSERT INTO {target.label} BY NAME: query column(s) {fixed} have a static value in "
                           "PARTITION (...)")
        return [by_lower[n.lower()] for n in out_names]
    if len(out_names) != len(names):
        note = f" (the static partition column(s) {list(static)} excluded)" if static else ""
        raise DmlError(f"INSERT INTO {target.label}: the query gives {len(out_names)} column(s) {out_names} "
                       f"for {len(names)} target column(s) {names}{note}")
    return names


def _partition_spec(spec: Any, target: Target) -> dict[str, pa.Scalar]:
    """`PARTITION (p = value, q)`: the static columns and their values as the columns' Arrow types (dynamic
    entries only need to be partition columns)."""
    if not spec:  # sqlglot leaves False in an INSERT's `partition` argument
        return {}
    from sqlglot import exp

    from ..errors import SchemaError
    from ..kernel.schema.arrow import to_arrow_type
    from ..operations.write.enforcement import cast_for_column
    from ..sqleval import evaluate

    snapshot = target.snapshot
    partition_columns = {c.lower(): c for c in snapshot.partition_columns}
    schema = snapshot.schema
    static: dict[str, pa.Scalar] = {}
    seen: set[str] = set()
    for entry in spec.expressions:
        column, value = (entry.this, entry.expression) if isinstance(entry, exp.EQ) else (entry, None)
        if not isinstance(column, exp.Column) or column.args.get("table") is not None:
            raise DmlError(f"PARTITION (...) wants `column = value` or `column`, got {entry.sql(dialect='spark')!r}")
        name = partition_columns.get(column.name.lower())
        if name is None:
            raise DmlError(f"PARTITION clause cannot contain the non-partition column {column.name!r} "
                           f"(partition columns of {target.label}: {list(partition_columns.values())})")
        if name in seen:
            raise DmlError(f"PARTITION (...) names column {name!r} twice")
        seen.add(name)
        if value is None:
            continue
        if value.find(exp.Column) is not None or value.find(exp.Select) is not None:
            raise DmlError(f"PARTITION ({name} = ...) wants a constant, got {value.sql(dialect='spark')!r}")
        raw = evaluate(sql_text(value), pa.table({"__one": pa.array([0], pa.int8())}))
        target_type = to_arrow_type(schema.field(name).type)
        try:
            typed = cast_for_column(raw, target_type, name, strict=True, what="INSERT ... PARTITION")
        except SchemaError as e:
            raise SchemaError(f"PARTITION ({name} = {value.sql(dialect='spark')}): the value cannot be stored in "
                              f"column {name!r} ({target_type})") from e
        static[name] = typed[0]
    return static


def _equals_sql(name: str, value: pa.Scalar) -> str:
    """`name = <literal>` (or `name IS NULL`) as Spark SQL the kernel translates into a partition filter."""
    column = "`" + name.replace("`", "``") + "`"
    if not value.is_valid:
        return f"{column} IS NULL"
    return f"{column} = {_literal_sql(value.as_py())}"


def _literal_sql(v: Any) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, Decimal):
        return f"{v}BD"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, dt.datetime):
        return f"TIMESTAMP '{v.isoformat()}'" if v.tzinfo is not None else f"TIMESTAMP_NTZ '{v.isoformat()}'"
    if isinstance(v, dt.date):
        return f"DATE '{v.isoformat()}'"
    if isinstance(v, bytes):
        return f"X'{v.hex()}'"
    raise DmlError(f"unsupported partition value {v!r}")


__all__ = ["insert"]
