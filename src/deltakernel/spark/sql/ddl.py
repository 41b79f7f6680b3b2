"""CREATE / REPLACE TABLE ... USING delta [AS SELECT], ALTER TABLE, DESCRIBE TABLE and SHOW TBLPROPERTIES for
Delta tables, from Spark's own parse of the statement.

- CREATE [OR REPLACE] / REPLACE TABLE: the columns (types, NOT NULL, comments, GENERATED ALWAYS AS,
  GENERATED ... AS IDENTITY, DEFAULT), PARTITIONED BY / CLUSTER BY, LOCATION, COMMENT, TBLPROPERTIES and
  OPTIONS come from Spark's `CreateTable` / `ReplaceTable[AsSelect]` plan and go to `catalog.create` (the
  Delta table through the kernel, the name into Spark's session catalog). `delta`.`/path` names create path
  tables. A provider other than delta (or none, unless `spark.sql.sources.default` is delta) is Spark's.
- ALTER TABLE ADD COLUMNS / RENAME COLUMN / DROP COLUMN(S) / SET / UNSET TBLPROPERTIES run through the
  kernel's `alter` (log-only commits, delta-spark's operation names), then the catalog's column list is
  re-synced. Other ALTER TABLE forms on a Delta table are refused with a clear error.
- DESCRIBE [TABLE] [EXTENDED] and SHOW TBLPROPERTIES answer from the log (schema, partitioning, properties,
  protocol), like delta-spark, for path tables and catalog tables alike.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog import DeltaRef, TableSpec, create, resolve, sync_schema
from . import plans as P
from .commands import empty_frame
from .grammar import DeltaSqlError, head

_CREATE = ("CreateTable", "CreateTableAsSelect", "ReplaceTable", "ReplaceTableAsSelect")
_CHAR = ("char(", "varchar(")


# ----------------------------------------------------------------------------- CREATE / REPLACE
def is_delta_provider(spark: Any, provider: str | None) -> bool:
    """Whether `USING provider` (or, without one, the session's default source) is delta."""
    if provider is None:
        try:
            provider = spark.conf.get("spark.sql.sources.default", None)
        except Exception:
            provider = None
    return str(provider or "").lower() == "delta"


def _field(col: Any) -> dict[str, Any]:
    """A Spark ColumnDefinition as a Delta schema field (JSON)."""
    typ: Any = json.loads(str(col.dataType().json()))
    meta: dict[str, Any] = {}
    if isinstance(typ, str) and typ.startswith(_CHAR):
        meta["__CHAR_VARCHAR_TYPE_STRING"] = typ
        typ = "string"
    comment = P.opt(col.comment())
    if comment is not None:
        meta["comment"] = str(comment)
    gen = P.opt(col.generationExpression())
    if gen is not None:
        meta["delta.generationExpression"] = _original_sql(gen)
    default = P.opt(col.defaultValue())
    if default is not None:
        meta["CURRENT_DEFAULT"] = _original_sql(default)
    ident = P.opt(col.identityColumnSpec())
    if ident is not None:
        meta["delta.identity.start"] = int(ident.getStart())
        meta["delta.identity.step"] = int(ident.getStep())
        meta["delta.identity.allowExplicitInsert"] = bool(ident.isAllowExplicitInsert())
    return {"name": str(col.name()), "type": typ, "nullable": bool(col.nullable()), "metadata": meta}


def _original_sql(node: Any) -> str:
    for attr in ("originalSQL", "sql"):
        fn = getattr(node, attr, None)
        if fn is not None:
            try:
                return str(fn())
            except Exception:
                continue
    return str(node.toString())


def _partitioning(plan: Any) -> tuple[list[str], list[str]]:
    """(PARTITIONED BY columns, CLUSTER BY columns) of a create plan."""
    parts: list[str] = []
    cluster: list[str] = []
    for t in P.seq(plan.partitioning()):
        kind = str(t.name()).lower()
        refs = [".".join(str(x) for x in r.fieldNames()) for r in t.references()]
        if kind == "identity":
            parts.extend(refs)
        elif kind in ("cluster_by", "clusterby"):
            cluster.extend(refs)
        else:
            raise UnsupportedFeatureError(f"{kind} partitioning", f"PARTITIONED BY {t.toString()}: Delta tables are "
                                          "partitioned by columns only")
    return parts, cluster


def run_create(spark: Any, text: str, plan: Any, run_sql: Any) -> Any:
    kind = P.name(plan)
    spec_node = plan.tableSpec()
    provider = P.opt(spec_node.provider())
    parts = P.identifier_parts(plan.name())
    if parts is None:
        return None
    from ..catalog import path_of

    if not is_delta_provider(spark, provider):
        if path_of(parts) is not None and provider is None:
            pass  # CREATE TABLE delta.`/p` (...) without USING: a Delta path table
        else:
            return None
    if P.opt(spec_node.serde()) is not None:
        raise UnsupportedFeatureError("STORED AS / ROW FORMAT", "Hive storage clauses do not apply to Delta tables")
    options = {str(k): str(v) for k, v in _options(spec_node).items()}
    props = {str(k): str(v) for k, v in P.scala_map(spec_node.properties()).items()}
    location = P.opt(spec_node.location()) or options.pop("path", None)
    props.update({k: v for k, v in options.items() if k.lower().startswith("delta.")})
    comment = P.opt(spec_node.comment())
    partition_by, cluster_by = _partitioning(plan)
    if partition_by and cluster_by:
        raise DeltaSqlError("CLUSTER BY and PARTITIONED BY cannot be used together")
    schema = None
    if kind in ("CreateTable", "ReplaceTable"):
        fields = [_field(c) for c in P.seq(plan.columns())]
        if fields:
            from ...kernel.schema.types import parse_schema_string

            schema = parse_schema_string(json.dumps({"type": "struct", "fields": fields}))
    df = None
    if kind in ("CreateTableAsSelect", "ReplaceTableAsSelect"):
        query = P.query_text(spark, text, plan.query())
        if query is None:
            raise DeltaSqlError(f"cannot locate the AS SELECT query of the statement (in: {head(text)})")
        df = run_sql(query)
    if kind.startswith("Create"):
        mode = "ignore" if bool(plan.ignoreIfExists()) else "create"
    else:
        mode = "create_or_replace" if bool(plan.orCreate()) else "replace"
    spec = TableSpec(schema=schema, location=str(location) if location is not None else None,
                     partition_by=partition_by or None, cluster_by=cluster_by or None, properties=props or None,
                     comment=str(comment) if comment is not None else None)
    create(spark, parts, spec, mode, df=df, label=".".join(parts))
    return empty_frame(spark)


def run_create_like(spark: Any, plan: Any) -> Any:
    """CREATE TABLE t LIKE source [USING delta] [LOCATION ...] [TBLPROPERTIES ...]: a Delta table when asked for,
    or when `source` is one (its schema, partitioning, clustering-free properties and comment are copied)."""
    provider = P.opt(plan.provider())
    src_parts = P.identifier_parts(plan.source())
    src = resolve(spark, src_parts) if src_parts is not None else None
    if not (is_delta_provider(spark, provider) if provider is not None else src is not None):
        return None
    parts = P.identifier_parts(plan.name())
    if parts is None:
        return None
    props = {str(k): str(v) for k, v in P.scala_map(plan.properties()).items()}
    location = P.opt(plan.location())
    spec = like_spec(spark, src, src_parts or [], props, str(location) if location is not None else None)
    create(spark, parts, spec, "ignore" if bool(plan.ifNotExists()) else "create", label=".".join(parts))
    return empty_frame(spark)


def like_spec(spark: Any, src: DeltaRef | None, src_parts: list[str], properties: dict[str, str],
              location: str | None) -> TableSpec:
    """The new table of CREATE TABLE ... LIKE source: a Delta `src`'s schema, partitioning, comment and
    properties (not its constraints), the statement's `properties` winning; else the schema Spark gives the
    (non-Delta) table `src_parts`."""
    comment = None
    partition_by: list[str] = []
    if src is not None:
        from ...table import DeltaTable as KernelTable
        from .._schema import table_uri

        snap = KernelTable(table_uri(src.location)).snapshot
        schema = snap.schema
        partition_by = list(snap.partition_columns)
        comment = snap.metadata.description
        properties = {**{k: v for k, v in snap.metadata.configuration.items()
                         if not k.startswith("delta.constraints.")}, **properties}
    else:
        from .._schema import from_spark_schema

        schema = from_spark_schema(spark.table(P.quote_name(src_parts)).schema)
    return TableSpec(schema=schema, location=location, partition_by=partition_by or None,
                     properties=properties or None, comment=comment)


def run_truncate(spark: Any, plan: Any) -> Any:
    """TRUNCATE TABLE on a Delta table: every row deleted (delta-spark's TRUNCATE of a whole table)."""
    parts = P.identifier_parts(plan.table())
    ref = resolve(spark, parts) if parts is not None else None
    if ref is None:
        return None
    from .commands import method, spark_table

    method(spark_table(spark, ref), "delete", "TRUNCATE TABLE")()
    return empty_frame(spark)


def _options(spec_node: Any) -> dict[str, Any]:
    """OPTIONS (k 'v') of a table spec (an OptionList of literal expressions in Spark 4)."""
    out: dict[str, Any] = {}
    opts = spec_node.optionExpression()
    for pair in P.seq(opts.options()):
        value = pair._2()
        out[str(pair._1())] = value.value() if P.name(value) == "Literal" else value.sql()
    return out


# ----------------------------------------------------------------------------- ALTER TABLE
_ALTER = ("AddColumns", "RenameColumn", "DropColumns", "SetTableProperties", "UnsetTableProperties",
          "AlterColumns", "ReplaceColumns", "AlterColumn")


def _alter_target(spark: Any, plan: Any) -> DeltaRef | None:
    node = P.call(plan, "table", "child")
    parts = P.identifier_parts(node) if node is not None else None
    return resolve(spark, parts) if parts is not None else None


def run_alter(spark: Any, text: str, plan: Any) -> Any:
    ref = _alter_target(spark, plan)
    if ref is None:
        return None
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    alter = KernelTable(table_uri(ref.location)).alter
    kind = P.name(plan)
    if kind == "AddColumns":
        alter.add_columns([_added_field(c) for c in P.seq(plan.columnsToAdd())])
    elif kind == "RenameColumn":
        old = ".".join(str(p) for p in P.seq(plan.column().name()))
        alter.rename_column(old, str(plan.newName()))
    elif kind == "DropColumns":
        names = [".".join(str(p) for p in P.seq(f.name())) for f in P.seq(plan.columnsToDrop())]
        if bool(plan.ifExists()):
            existing = {f.name.lower() for f in KernelTable(table_uri(ref.location)).snapshot.schema.fields}
            names = [n for n in names if n.split(".")[0].lower() in existing]
            if not names:
                return empty_frame(spark)
        alter.drop_columns(names)
    elif kind == "SetTableProperties":
        alter.set_table_properties({str(k): str(v) for k, v in P.scala_map(plan.properties()).items()})
    elif kind == "UnsetTableProperties":
        unset_properties(ref, [str(k) for k in P.seq(plan.propertyKeys())], bool(plan.ifExists()))
    else:
        raise UnsupportedFeatureError(f"ALTER TABLE ({kind})", f"this ALTER TABLE form is not supported on Delta "
                                      f"tables by deltakernel (in: {head(text)})")
    sync_schema(spark, ref)
    return empty_frame(spark)


def _added_field(col: Any) -> Any:
    """A QualifiedColType of ADD COLUMNS as a kernel field (nested `a.b.c` wrapped in its parent structs)."""
    from ...kernel.schema.types import parse_schema_string

    if P.opt(col.position()) is not None:
        raise UnsupportedFeatureError("ADD COLUMNS ... FIRST / AFTER", "column positions are not supported")
    typ: Any = json.loads(str(col.dataType().json()))
    meta: dict[str, Any] = {}
    comment = P.opt(col.comment())
    if comment is not None:
        meta["comment"] = str(comment)
    if P.opt(col.default()) is not None:
        raise UnsupportedFeatureError("ADD COLUMNS ... DEFAULT", "adding a column with a DEFAULT is not supported")
    field: dict[str, Any] = {"name": str(col.colName()), "type": typ, "nullable": bool(col.nullable()),
                             "metadata": meta}
    parent = P.opt(col.path())
    for name in reversed([str(p) for p in P.seq(parent.name())] if parent is not None else []):
        field = {"name": name, "type": {"type": "struct", "fields": [field]}, "nullable": True, "metadata": {}}
    return parse_schema_string(json.dumps({"type": "struct", "fields": [field]})).fields[0]


def unset_properties(ref: DeltaRef, keys: list[str], if_exists: bool) -> None:
    """ALTER TABLE ... UNSET TBLPROPERTIES: one metadata commit without the keys (delta-spark's operation)."""
    from dataclasses import replace

    from ...kernel.transaction.transaction import Transaction
    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri
    from ..tables import ENGINE_INFO

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
def run_describe(spark: Any, plan: Any) -> Any:
    parts = P.identifier_parts(plan.relation())
    ref = resolve(spark, parts) if parts is not None else None
    if ref is None:
        return None
    try:
        partition_spec = P.scala_map(plan.partitionSpec())
    except Exception:  # Spark versions whose DescribeRelation does not expose it
        partition_spec = {}
    if partition_spec:
        raise UnsupportedFeatureError("DESCRIBE ... PARTITION", "DESCRIBE of a partition is not supported")
    return describe_frame(spark, ref, bool(plan.isExtended()))


def describe_frame(spark: Any, ref: DeltaRef, extended: bool) -> Any:
    """DESCRIBE [TABLE] [EXTENDED] of a Delta table, answered from its log (delta-spark's rows)."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri, to_spark_schema

    snap = KernelTable(table_uri(ref.location)).snapshot
    schema = to_spark_schema(snap.schema)
    rows = [(f.name, f.dataType.simpleString(), f.metadata.get("comment")) for f in schema.fields]
    if snap.partition_columns:
        rows += [("# Partition Information", "", ""), ("# col_name", "data_type", "comment")]
        by_name = {f.name: f for f in schema.fields}
        for p in snap.partition_columns:
            f = by_name[p]
            rows.append((f.name, f.dataType.simpleString(), f.metadata.get("comment")))
    if extended:
        md = snap.metadata
        rows += [("", "", ""), ("# Detailed Table Information", "", "")]
        if ref.is_catalog:
            rows += [("Catalog", "spark_catalog", ""), ("Database", ref.db or "", ""), ("Table", ref.table or "", "")]
        rows += [("Name", ref.label, ""), ("Location", snap.storage.root_uri, ""), ("Provider", "delta", ""),
                 ("Type", ("MANAGED" if ref.managed else "EXTERNAL") if ref.is_catalog else "PATH", ""),
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


def run_show_properties(spark: Any, plan: Any) -> Any:
    parts = P.identifier_parts(plan.table())
    ref = resolve(spark, parts) if parts is not None else None
    if ref is None:
        return None
    key = P.opt(plan.propertyKey())
    return properties_frame(spark, ref, str(key) if key is not None else None)


def properties_frame(spark: Any, ref: DeltaRef, key: str | None) -> Any:
    """SHOW TBLPROPERTIES of a Delta table [one key], from its log."""
    from pyspark.sql.types import StringType, StructField, StructType

    from ...table import DeltaTable as KernelTable
    from .._schema import table_uri

    props = table_properties(KernelTable(table_uri(ref.location)).snapshot)
    if key is not None:
        value = props.get(key, f"Table {ref.label} does not have property: {key}")
        rows = [(key, value)]
    else:
        rows = sorted(props.items())
    schema = StructType([StructField("key", StringType(), False), StructField("value", StringType(), False)])
    return spark.createDataFrame(rows, schema)


__all__ = ["describe_frame", "is_delta_provider", "like_spec", "properties_frame", "run_alter", "run_create",
           "run_create_like", "run_describe", "run_show_properties", "run_truncate", "table_properties",
           "unset_properties"]
