"""CREATE / REPLACE TABLE ... USING delta [AS SELECT], CREATE TABLE ... LIKE, ALTER TABLE, DESCRIBE TABLE, SHOW
TBLPROPERTIES and TRUNCATE TABLE of Delta tables: the one executor of the DDL statements (`statements.py`),
whichever parser read them.

- CREATE [OR REPLACE] / REPLACE TABLE: the columns (types, NOT NULL, comments, GENERATED ALWAYS AS,
  GENERATED ... AS IDENTITY, DEFAULT: a kernel schema the parser built), PARTITIONED BY / CLUSTER BY, LOCATION,
  COMMENT, TBLPROPERTIES and OPTIONS (delta.* options are table properties, `path` a location) go to
  `catalog.create` (the Delta table through the kernel, the name into Spark's session catalog). `delta`.`/path`
  names create path tables.
- ALTER TABLE ADD COLUMNS / RENAME COLUMN / DROP COLUMN(S) / SET / UNSET TBLPROPERTIES run through the
  kernel's `alter` (log-only commits, delta-spark's operation names), then the catalog's column list is
  re-synced. Other ALTER TABLE forms on a Delta table are refused by the parsers with a clear error.
- DESCRIBE [TABLE] [EXTENDED] and SHOW TBLPROPERTIES answer from the log (schema, partitioning, properties,
  protocol), like delta-spark, for path tables and catalog tables alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..catalog.tables import DeltaRef, TableSpec, create, sync_schema
from .commands import empty_frame, method, spark_table
from .grammar import DeltaSqlError
from .statements import (
    AddColumns,
    AlterTable,
    CreateLike,
    CreateTable,
    Describe,
    DropColumns,
    RenameColumn,
    SetProperties,
    ShowProperties,
    Truncate,
    UnsetProperties,
)


def is_delta_provider(spark: Any, provider: str | None) -> bool:
    """Whether `USING provider` (or, without one, the session's default source) is delta."""
    if provider is None:
        try:
            provider = spark.conf.get("spark.sql.sources.default", None)
        except Exception:
            provider = None
    return str(provider or "").lower() == "delta"


# ----------------------------------------------------------------------------- CREATE / REPLACE
def run_create(spark: Any, stmt: CreateTable, run_sql: Callable[[str], Any]) -> Any:
    options = dict(stmt.options)
    location = stmt.location or options.pop("path", None)
    properties = {**dict(stmt.properties), **{k: v for k, v in options.items() if k.lower().startswith("delta.")}}
    if stmt.partition_by and stmt.cluster_by:
        raise DeltaSqlError("CLUSTER BY and PARTITIONED BY cannot be used together")
    df = run_sql(stmt.query) if stmt.query is not None else None
    spec = TableSpec(schema=stmt.schema, location=location, partition_by=list(stmt.partition_by) or None,
                     cluster_by=list(stmt.cluster_by) or None, properties=properties or None, comment=stmt.comment)
    create(spark, list(stmt.name), spec, stmt.mode, df=df, label=".".join(stmt.name))
    return empty_frame(spark)


def run_create_like(spark: Any, stmt: CreateLike) -> Any:
    """CREATE TABLE t LIKE source: a Delta `source`'s schema, partitioning, comment and properties (not its
    constraints), the statement's properties winning; else the schema Spark gives the (non-Delta) source."""
    properties = dict(stmt.properties)
    comment = None
    partition_by: list[str] = []
    if stmt.source is not None:
        from ...table import DeltaTable as KernelTable
        from ..common.schema import table_uri

        snap = KernelTable(table_uri(stmt.source.location)).snapshot
        schema = snap.schema
        partition_by = list(snap.partition_columns)
        comment = snap.metadata.description
        properties = {**{k: v for k, v in snap.metadata.configuration.items()
                         if not k.startswith("delta.constraints.")}, **properties}
    else:
        from ..common.schema import from_spark_schema
        from .public_catalog import quote

        schema = from_spark_schema(spark.table(".".join(quote(p) for p in stmt.source_name)).schema)
    spec = TableSpec(schema=schema, location=stmt.location, partition_by=partition_by or None,
                     properties=properties or None, comment=comment)
    create(spark, list(stmt.name), spec, "ignore" if stmt.if_not_exists else "create", label=".".join(stmt.name))
    return empty_frame(spark)


def run_truncate(spark: Any, stmt: Truncate) -> Any:
    """TRUNCATE TABLE on a Delta table: every row deleted (delta-spark's TRUNCATE of a whole table)."""
    method(spark_table(spark, stmt.target), "delete", "TRUNCATE TABLE")()
    return empty_frame(spark)


# ----------------------------------------------------------------------------- ALTER TABLE
def run_alter(spark: Any, stmt: AlterTable) -> Any:
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    ref = stmt.target
    kt = KernelTable(table_uri(ref.location))
    for action in stmt.actions:
        if isinstance(action, AddColumns):
            kt.alter.add_columns(list(action.fields))
        elif isinstance(action, RenameColumn):
            kt.alter.rename_column(action.column, action.new_name)
        elif isinstance(action, DropColumns):
            names = list(action.columns)
            if action.if_exists:
                existing = {f.name.lower() for f in KernelTable(table_uri(ref.location)).snapshot.schema.fields}
                names = [n for n in names if n.split(".")[0].lower() in existing]
            if names:
                kt.alter.drop_columns(names)
        elif isinstance(action, SetProperties):
            kt.alter.set_table_properties(dict(action.properties))
        elif isinstance(action, UnsetProperties):
            unset_properties(ref, list(action.keys), action.if_exists)
    sync_schema(spark, ref)
    return empty_frame(spark)


def unset_properties(ref: DeltaRef, keys: list[str], if_exists: bool) -> None:
    """ALTER TABLE ... UNSET TBLPROPERTIES: one metadata commit without the keys (delta-spark's operation)."""
    from dataclasses import replace

    from ...kernel.transaction.transaction import Transaction
    from ...table import DeltaTable as KernelTable
    from ..api.tables import ENGINE_INFO
    from ..common.schema import table_uri

    snap = KernelTable(table_uri(ref.location)).snapshot
    conf = dict(snap.metadata.configuration)
    lower = {k.lower(): k for k in conf}
    missing = [k for k in keys if k.lower() not in lower]
    if missing and not if_exists:
        raise DeltaSqlError(f"cannot unset {missing}: no such table propert{'ies' if len(missing) > 1 else 'y'} "
                            "(use UNSET TBLPROPERTIES IF EXISTS)")
    present = [lower[k.lower()] for k in keys if k.lower() in lower]
    if not present:
        return
    for k in present:
        del conf[k]
    txn = Transaction(snap.storage, snap, operation="UNSET TBLPROPERTIES",
                      operation_parameters={"properties": json.dumps(present), "ifExists": if_exists},
                      engine_info=ENGINE_INFO)
    txn.update_metadata(replace(snap.metadata, configuration=conf))
    txn.commit()


# ----------------------------------------------------------------------------- DESCRIBE / SHOW TBLPROPERTIES
def run_describe(spark: Any, stmt: Describe) -> Any:
    """DESCRIBE [TABLE] [EXTENDED] of a Delta table, answered from its log (delta-spark's rows)."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ...table import DeltaTable as KernelTable
    from ..common.geo_types import session_geo_types, spark_schema_with_geo
    from ..common.schema import table_uri, to_spark_schema

    ref = stmt.target
    snap = KernelTable(table_uri(ref.location)).snapshot
    # the column types a read shows (geometry/geography as Spark's types where the session has them)
    schema = spark_schema_with_geo(to_spark_schema(snap.schema), session_geo_types(spark, snap.schema))
    rows = [(f.name, f.dataType.simpleString(), f.metadata.get("comment")) for f in schema.fields]
    if snap.partition_columns:
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        by_name = {f.name: f for f in schema.fields}
        for p in snap.partition_columns:
            f = by_name[p]
            rows.append((f.name, f.dataType.simpleString(), f.metadata.get("comment")))
    if stmt.extended:
        md = snap.metadata
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        kind = ("MANAGED" if ref.managed else "EXTERNAL") if ref.is_catalog else "PATH"
        if ref.is_catalog:
            rows += [("Catalog", "spark_catalog", ""), ("Database", ref.db or "", ""), ("Table", ref.table or "", "")]
        elif ref.location.lower().startswith("uc://"):  # a Unity Catalog's table: its catalog's names and type
            from ...unity.client import parse_table_name

            rows += list(zip(("Catalog", "Database", "Table"), parse_table_name(ref.location), ("", "", "")))
            kind = "MANAGED" if getattr(snap.storage, "catalog", None) is not None else "EXTERNAL"
        rows += [("Name", ref.label, ""), ("Location", snap.storage.root_uri, ""), ("Provider", "delta", ""),
                 ("Type", kind, ""),
                 ("Table Properties", "[" + ",".join(f"{k}={v}" for k, v in sorted(md.configuration.items())) + "]",
                  "")]
        if md.description:
            rows.append(("Comment", md.description, ""))
    out = StructType([StructField("col_name", StringType(), False), StructField("data_type", StringType(), False),
                      StructField("comment", StringType(), True)])
    return spark.createDataFrame(rows, out)


def table_properties(snap: Any) -> dict[str, str]:
    """What SHOW TBLPROPERTIES lists for a Delta table: the configuration, the protocol versions and a
    `delta.feature.<name> = supported` entry per table feature (as delta-spark's table properties)."""
    props = dict(snap.metadata.configuration)
    proto = snap.protocol
    props["delta.minReaderVersion"] = str(proto.min_reader_version)
    props["delta.minWriterVersion"] = str(proto.min_writer_version)
    for feat in sorted(set(proto.reader_features or ()) | set(proto.writer_features or ())):
        props[f"delta.feature.{feat}"] = "supported"
    return props


def run_show_properties(spark: Any, stmt: ShowProperties) -> Any:
    """SHOW TBLPROPERTIES of a Delta table [one key], from its log."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    ref, key = stmt.target, stmt.key
    props = table_properties(KernelTable(table_uri(ref.location)).snapshot)
    if key is not None:
        value = props.get(key, f"Table {ref.label} does not have property: {key}")
        rows = [(key, value)]
    else:
        rows = sorted(props.items())
    schema = StructType([StructField("key", StringType(), False), StructField("value", StringType(), False)])
    return spark.createDataFrame(rows, schema)


__all__ = ["is_delta_provider", "run_alter", "run_create", "run_create_like", "run_describe", "run_show_properties",
           "run_truncate", "table_properties", "unset_properties"]
