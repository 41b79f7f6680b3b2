"""The Delta tables a DataFusion session may change with SQL DML, and running queries in that session.

Targets are Delta tables registered through deltakernel: `register()` / `QueryBuilder.register`, `CREATE
EXTERNAL TABLE ... STORED AS DELTA` (on a session set up by `install` / `session_context`) and tables of a
`register_catalog` directory catalog, remembered per session by `session_tables.py`. A statement runs
at the registered (pinned) version and the registration is re-pinned to the version it committed, so the
next SELECT in the session sees the change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import DeltaError
from .dataset import DeltaDataset, gc_paused
from .dml_parse import DmlError, DmlTargetError, head
from .listing import register_in, same_columns
from .session_tables import (
    DEFAULT_SCHEMA,
    delta_tables,
    quoted_name,
    registered_catalogs,
    registered_tables,
    table_key,
)
from .streams import reader
from .udtf_errors import udtf_error


# ----------------------------------------------------------------------------- targets
@dataclass
class Target:
    label: str  # as written, for messages
    alias: str  # what qualifies its columns in the statement (alias, else the table's name)
    dataset: DeltaDataset
    repin: Callable[[Any], None]  # new Snapshot -> the session's registration now reads it

    @property
    def snapshot(self) -> Any:
        return self.dataset.snapshot


def _ident_parts(table: Any) -> list[tuple[str, bool]] | None:
    """(text, quoted) of catalog / db / name of a sqlglot Table; None when it is not a plain name."""
    from sqlglot import exp

    parts = []
    for key in ("catalog", "db", "this"):
        ident = table.args.get(key)
        if ident is None:
            continue
        if not isinstance(ident, exp.Identifier):
            return None
        parts.append((ident.name, bool(ident.args.get("quoted"))))
    return parts or None


def _same_dataset(new_snapshot: Any, old: DeltaDataset) -> DeltaDataset:
    """`old`'s options over a new snapshot."""
    return DeltaDataset(new_snapshot, target_partitions=old.target_partitions,
                        target_group_bytes=old.target_group_bytes, native_reader=old.native_reader,
                        view_types=old.schema != old.logical_schema, row_tracking=old.row_tracking,
                        provider=old.provider)


def _session_table(ctx: Any, key: tuple[str, str, str], label: str, alias: str) -> Target | None:
    tables = registered_tables(ctx)
    found = key if key in tables else None
    if found is None:  # Spark resolves names case-insensitively
        matches = [k for k in tables if tuple(p.lower() for p in k) == tuple(p.lower() for p in key)]
        if len(matches) > 1:
            raise DmlTargetError(f"table name {label!r} is ambiguous: {['.'.join(m) for m in matches]}")
        found = matches[0] if matches else None
    if found is None:
        return None
    ds = tables[found]
    name = quoted_name(found)
    try:
        provider = ctx.table_provider(name)
    except Exception:  # dropped behind our back (DROP TABLE, deregister_table)
        del tables[found]
        return None
    if not same_columns(provider.schema, ds.schema):  # replaced by something else under the same name
        del tables[found]
        return None

    def repin(snapshot: Any) -> None:
        new = _same_dataset(snapshot, tables[found])
        ctx.deregister_table(name)
        register_in(ctx, name, new)
        tables[found] = new

    return Target(label, alias, ds, repin)


def _catalog_table(ctx: Any, parts: list[str], label: str, alias: str) -> Target | None:
    catalogs = registered_catalogs(ctx)
    if len(parts) == 3 and parts[0] in catalogs:
        catalog, schema_name, table = catalogs[parts[0]], parts[1], parts[2]
    elif len(parts) == 2 and parts[0] in catalogs:
        catalog, schema_name, table = catalogs[parts[0]], DEFAULT_SCHEMA, parts[1]
    else:
        return None
    schema = catalog.schema(schema_name)
    ds = schema.delta_dataset(table) if schema is not None else None
    if ds is None:
        raise DmlTargetError(f"unknown table {label!r} in Delta catalog {parts[0]!r}")

    def repin(snapshot: Any) -> None:
        schema.repin(table, _same_dataset(snapshot, ds))

    return Target(label, alias, ds, repin)


def resolve_target(ctx: Any, table: Any, statement: str, kind: str) -> Target | None:
    """The Delta target of a statement; None when the target is one of DataFusion's own tables (INSERT,
    DELETE and UPDATE then go to DataFusion as before)."""
    raw = _ident_parts(table)
    if raw is None:
        raise DmlTargetError(f"{kind} target must be a table name, got {table.sql(dialect='spark')!r}")
    label = ".".join(p for p, _ in raw)
    alias_node = table.args.get("alias")
    alias = alias_node.name if alias_node is not None and alias_node.name else raw[-1][0]
    parts = [p if quoted else p.lower() for p, quoted in raw]
    target = _catalog_table(ctx, parts, label, alias)
    if target is None:
        target = _session_table(ctx, table_key(parts), label, alias)
    if target is not None:
        return target
    df_name = quoted_name(tuple(parts))
    try:
        ctx.table_provider(df_name)
        exists = True
    except Exception:
        exists = False
    if exists and kind != "MERGE":
        return None
    known = sorted(delta_tables(ctx))
    if exists:
        raise DmlTargetError(f"MERGE target {label!r} is not a Delta table registered through deltakernel "
                             "(register it with deltakernel.datafusion.register, QueryBuilder.register or "
                             "CREATE EXTERNAL TABLE ... STORED AS DELTA)")
    raise DmlTargetError(f"{kind}: unknown table {label!r} (Delta tables in this session: {known})")


# ----------------------------------------------------------------------------- DataFusion side
def run_query(ctx: Any, text: str, what: str) -> pa.RecordBatchReader:
    """`text` run in the session as a stream; DataFusion's own exceptions become DmlError."""
    try:
        df = ctx.sql(text)
        schema = df.schema()
        stream = reader(df)  # all partitions at once: a join's dynamic filter waits for each (streams.py)
    except DeltaError:
        raise
    except Exception as e:
        raise _query_error(e, what, text) from e
    return pa.RecordBatchReader.from_batches(schema, _guarded(stream, what, text))


def _guarded(stream: pa.RecordBatchReader, what: str, text: str) -> Iterator[pa.RecordBatch]:
    """The query's batches with errors typed, garbage collection paused while the stream is open (see
    `dataset.gc_paused`: a collection while DataFusion executes crashed CI; its partitions run our Python
    fragment code on its own threads between our pulls too)."""
    try:
        with gc_paused():
            yield from stream
    except DeltaError:
        raise
    except Exception as e:
        raise _query_error(e, what, text) from e
    finally:
        stream.close()


def _query_error(e: Exception, what: str, text: str) -> DeltaError:
    original = udtf_error(e)
    if original is not None:  # delta_scan / delta_changes raised it: keep its type and message
        return original
    return DmlError(f"{what}: {e} (in: {head(text)})")


def metrics_row(**values: int) -> pa.Table:
    return pa.table({k: pa.array([int(v)], pa.int64()) for k, v in values.items()})


def repin_committed(target: Target, version: int | None) -> None:
    if version is None:  # nothing changed: no commit
        return
    from ..kernel.snapshot import Snapshot

    target.repin(Snapshot.load(target.snapshot.storage, version))


__all__ = ["Target", "metrics_row", "repin_committed", "resolve_target", "run_query"]
