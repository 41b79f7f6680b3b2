"""Delta tables in Spark's session catalog, without delta-spark.

Design (see docs/decisions.md, "Catalog tables on Spark"):
- **The catalog holds the name, the location and a display schema; the Delta log holds the table.** A
  Delta catalog table is an ordinary session-catalog entry whose provider is the registered "delta" Python
  data source, created with Spark's own `CREATE TABLE name (columns) USING delta [LOCATION ...]` (run on the
  JVM session, below the Python routing). Without LOCATION Spark makes it MANAGED under
  `spark.sql.warehouse.dir` (`<db>.db/<name>`; it creates the empty directory and refuses a non-empty one),
  with LOCATION it is EXTERNAL. `DROP TABLE` is Spark's own: it deletes a managed table's directory and
  keeps an external table's data. With a persistent (Hive) metastore the entries persist like any table.
- **Every read and write by name resolves the location here** (`resolve`: `getTableMetadata` of the
  session catalog, provider `delta`) and runs through deltakernel: reads are the native plan
  (`reader.read`), writes `writer.write`, DML / maintenance the Spark `DeltaTable`. Spark itself cannot read
  these entries through the Python source (Spark 4 passes no options, hence no path, to a Python source
  behind a catalog table), so the routing in `routing.py` / `spark/sql` must see every access (classic
  sessions also put the native plan in the relation cache, `table_frames.py`, so Spark resolves the name in
  permanent views and SQL it runs by itself).
- **The two session kinds differ only in how the catalog is asked** (`kinds/`: `CatalogAccess`): a classic session
  asks the JVM's `SessionCatalog` over py4j (`kinds/classic.py`); a Spark Connect session reads entries with
  `SHOW TABLE EXTENDED`, registers and drops them with the session's own (un-routed) `sql` and splits names with
  the Delta SQL tokenizer (`kinds/connect.py`, `sql/public_catalog.py`).
  There is no relation cache to fill, so over Connect a Delta catalog table is readable only through the
  router (`spark.sql` rewrites it to a temporary view), `spark.table` / `spark.read.table` and
  `DeltaTable.forName`; a permanent view over one is refused.
- **The catalog's schema follows the log** (`sync_schema` after writes that may change it, via
  `SessionCatalog.alterTableDataSchema`; over Connect only added columns reach the catalog, and
  `spark.catalog.listColumns` answers from the log), so `spark.catalog.listColumns` / `SHOW COLUMNS` stay right;
  partitioning and properties live only in the log (DESCRIBE TABLE and SHOW TBLPROPERTIES for Delta tables
  are answered from the log by `spark/sql`).
- `delta`.`/path` names are path tables (delta-spark's path identifiers): no catalog entry.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError, TableNotFoundError
from ...kernel.schema.types import StructType
from ..common.schema import catalog_schema_json, table_uri, to_spark_schema
from ..kinds import kind_of
from .entry import SESSION_CATALOG, CatalogEntry, session_table

SOURCE_NAME = "delta"
_log = logging.getLogger(__name__)


class CatalogTableError(DeltaError):
    """A catalog operation on a Delta table that cannot run (exists already, not a Delta table, ...)."""


@dataclass(frozen=True)
class DeltaRef:
    """A Delta table reached by path or by catalog name."""

    location: str  # what reader / writer / DeltaTable.forPath take
    label: str  # as written, for messages
    db: str | None = None  # session-catalog database and table (None for a path)
    table: str | None = None
    managed: bool = False

    @property
    def is_catalog(self) -> bool:
        return self.table is not None

    @property
    def quoted_name(self) -> str | None:
        if self.table is None:
            return None
        return f"`{SESSION_CATALOG}`.{_q(self.db or 'default')}.{_q(self.table)}"


def _q(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def split_name(spark: Any, name: str) -> list[str]:
    """A table name as Spark reads it (backquotes, dots); a malformed name is a DeltaError."""
    try:
        return kind_of(spark).catalog.split_name(name)
    except Exception as e:
        raise CatalogTableError(f"invalid table name {name!r}: {_first_line(e)}") from e


def path_of(parts: list[str] | tuple[str, ...]) -> str | None:
    """The path of a delta.`/path` identifier (delta-spark's path tables), else None."""
    if len(parts) == 2 and parts[0].lower() == SOURCE_NAME and ("/" in parts[1] or ":" in parts[1]
                                                               or "\\" in parts[1]):
        return parts[1]
    return None


def _db_table(spark: Any, parts: list[str] | tuple[str, ...]) -> tuple[str, str] | None:
    """(database, table) in the session catalog for a name, None for names of other catalogs / temp views."""
    return session_table(parts, kind_of(spark).catalog.unqualified)


def catalog_table(spark: Any, parts: list[str] | tuple[str, ...]) -> Any:
    """The JVM's CatalogTable (table or permanent view) for a name, or None (temp views too): classic sessions
    only (the classic relation rewriter reads a view's plan from it)."""
    from ..kinds.classic import ClassicCatalog

    dt = _db_table(spark, parts)
    return ClassicCatalog(spark).table_metadata(*dt) if dt is not None else None


def lookup(spark: Any, parts: list[str] | tuple[str, ...]) -> CatalogEntry | None:
    """The session-catalog entry a name denotes (any provider, tables and permanent views), or None."""
    return kind_of(spark).catalog.lookup(list(parts))


def resolve(spark: Any, parts: list[str] | tuple[str, ...], label: str | None = None) -> DeltaRef | None:
    """The Delta table a name denotes (`delta`.`/path` or a catalog table whose provider is delta), or None
    when it is something else (a temp view, another provider, an unknown name)."""
    label = label or ".".join(parts)
    path = path_of(parts)
    if path is not None:
        return DeltaRef(path, label)
    from .unity import unity_location  # a configured Unity Catalog's table (catalog/unity.py)

    uc = unity_location(spark, parts)
    if uc is not None:
        return DeltaRef(uc, label)
    return delta_ref(lookup(spark, parts), label)


def delta_ref(entry: CatalogEntry | None, label: str) -> DeltaRef | None:
    """The Delta table a catalog entry is (provider delta), or None."""
    if entry is None or entry.provider.lower() != SOURCE_NAME:
        return None
    if entry.location is None:
        raise CatalogTableError(f"catalog table {label!r} has no location")
    return DeltaRef(table_uri(entry.location), label, entry.db, entry.table, entry.managed)


def require(spark: Any, parts: list[str] | tuple[str, ...], label: str | None = None) -> DeltaRef:
    """As `resolve`, but an unknown name is a TableNotFoundError and a non-Delta table a CatalogTableError."""
    label = label or ".".join(parts)
    ref = resolve(spark, parts, label)
    if ref is not None:
        return ref
    entry = lookup(spark, parts)
    if entry is not None:
        raise CatalogTableError(f"{label!r} is not a Delta table (provider {entry.provider or 'unknown'})")
    raise TableNotFoundError(f"table or view {label!r} not found")


def resolve_name(spark: Any, name: str) -> DeltaRef | None:
    return resolve(spark, split_name(spark, name), name)


def default_location(spark: Any, db: str, table: str) -> str:
    return table_uri(kind_of(spark).catalog.default_location(db, table))


def _first_line(e: BaseException) -> str:
    s = str(e).strip()
    return s.splitlines()[0] if s else type(e).__name__


# ----------------------------------------------------------------------------- registration
def register(spark: Any, db: str, table: str, schema_json: str, location: str | None,
             comment: str | None = None) -> None:
    """Record `db.table` in the session catalog (managed when `location` is None)."""
    ddl = kind_of(spark).catalog.columns_ddl(schema_json)
    text = f"CREATE TABLE {_q(SESSION_CATALOG)}.{_q(db)}.{_q(table)} ({ddl}) USING {SOURCE_NAME}"
    if location is not None:
        text += f" LOCATION {_sql_string(location)}"
    if comment:
        text += f" COMMENT {_sql_string(comment)}"
    try:
        _run_ddl(spark, text)
    except Exception as e:
        raise CatalogTableError(f"cannot register table {db}.{table} in the session catalog: {_first_line(e)}") from e


def unregister(spark: Any, db: str, table: str) -> None:
    _run_ddl(spark, f"DROP TABLE IF EXISTS {_q(SESSION_CATALOG)}.{_q(db)}.{_q(table)}")


def _run_ddl(spark: Any, text: str) -> None:
    """A catalog statement below the Delta SQL router."""
    kind_of(spark).catalog.run_ddl(text)


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sync_schema(spark: Any, ref: DeltaRef) -> None:
    """Make the catalog's column list the log's (after a write or ALTER that may have changed it)."""
    if not ref.is_catalog:
        return
    from ...table import DeltaTable as KernelTable

    try:
        want = catalog_schema_json(KernelTable(table_uri(ref.location)).snapshot.schema)
        kind_of(spark).catalog.sync_columns(ref, want)
    except Exception as e:  # the log is the truth; a stale display schema must not fail a committed write
        _log.warning("deltakernel: could not update the catalog schema of %s: %s", ref.label, _first_line(e))


# ----------------------------------------------------------------------------- create / replace
@dataclass
class TableSpec:
    """What CREATE / REPLACE TABLE, saveAsTable and DeltaTableBuilder.tableName give."""

    schema: StructType | None = None  # declared columns (None: from the query / the existing table)
    location: str | None = None
    partition_by: list[str] | None = None
    cluster_by: list[str] | None = None
    properties: dict[str, str] | None = None
    comment: str | None = None
    options: dict[str, Any] | None = None  # write options for a query (mergeSchema, userMetadata, ...)


def create(spark: Any, parts: list[str] | tuple[str, ...], spec: TableSpec, mode: str, df: Any = None,
           label: str | None = None) -> DeltaRef:
    """CREATE (`mode` "create" / "ignore"), REPLACE ("replace") or CREATE OR REPLACE ("create_or_replace") a
    Delta table by catalog name or `delta`.`/path`, empty with `spec.schema` or filled with `df`."""
    label = label or ".".join(parts)
    path = path_of(parts)
    if path is not None:
        return _create_at(spark, DeltaRef(path, label), spec, mode, df)
    from .unity import unity_location

    uc = unity_location(spark, parts)
    if uc is not None:  # a configured Unity Catalog: a new MANAGED table (staging table -> v0 -> createTable)
        if spec.location is not None:
            raise CatalogTableError(f"CREATE TABLE {label}: LOCATION is not supported for Unity Catalog tables "
                                    "(the catalog chooses a managed table's location)")
        return _create_at(spark, DeltaRef(uc, label), spec, mode, df)
    dt = _db_table(spark, parts)
    if dt is None:
        raise CatalogTableError(f"{label!r} is not a table name of the session catalog ({SESSION_CATALOG})")
    entry = lookup(spark, parts)
    if entry is not None:
        if entry.provider.lower() != SOURCE_NAME:
            raise CatalogTableError(f"table {label!r} exists and is not a Delta table (provider {entry.provider})")
        if mode == "create":
            raise CatalogTableError(f"table {label!r} already exists")
        ref = DeltaRef(table_uri(entry.location or ""), label, entry.db, entry.table, entry.managed)
        if mode == "ignore":
            return ref
        if spec.location is not None and table_uri(spec.location).rstrip("/") != ref.location.rstrip("/"):
            raise CatalogTableError(f"cannot replace {label!r} at another location ({spec.location}); it is at "
                                    f"{ref.location}")
        return _create_at(spark, ref, spec, mode, df)
    if mode == "replace":
        raise TableNotFoundError(  # delta-spark's error class and sentence (DeltaErrors.cannotReplaceMissingTable)
            f"[DELTA_CANNOT_REPLACE_MISSING_TABLE] Table {label} cannot be replaced as it does not exist. "
            "Use CREATE OR REPLACE TABLE to create the table.")
    db, table = dt
    if spec.location is None:  # managed: Spark creates the directory (and refuses a non-empty one) first
        schema_json = _declared_schema_json(spec, df)
        if schema_json is None:
            raise CatalogTableError(f"CREATE TABLE {label}: a managed table needs columns or a query")
        register(spark, db, table, schema_json, None, spec.comment)
        entry = lookup(spark, [db, table])
        assert entry is not None
        ref = DeltaRef(table_uri(entry.location or default_location(spark, db, table)), label, entry.db,
                       entry.table, True)
        try:
            _create_at(spark, ref, spec, "create", df)
        except BaseException:
            from ...table import DeltaTable as KernelTable

            if not KernelTable.is_deltatable(ref.location):  # nothing committed: undo the registration
                unregister(spark, db, table)
            raise
        return ref
    ref = DeltaRef(table_uri(spec.location), label, db, table, False)
    _create_at(spark, ref, spec, "external", df)
    from ...table import DeltaTable as KernelTable

    schema = KernelTable(ref.location).snapshot.schema
    register(spark, db, table, catalog_schema_json(schema), spec.location, spec.comment)
    return ref


def _declared_schema_json(spec: TableSpec, df: Any) -> str | None:
    if spec.schema is not None:
        return catalog_schema_json(spec.schema)
    if df is not None:
        return str(df.schema.json())
    return None


def _create_at(spark: Any, ref: DeltaRef, spec: TableSpec, mode: str, df: Any) -> DeltaRef:
    """The Delta side of create / replace at `ref.location`."""
    from ...table import DeltaTable as KernelTable

    uri = table_uri(ref.location)
    exists = KernelTable.is_deltatable(uri)
    if exists and mode in ("create", "ignore", "external"):
        if mode == "ignore":
            return ref
        if mode == "create" or df is not None:
            raise CatalogTableError(f"a Delta table already exists at {ref.location} ({ref.label})")
        # external CREATE TABLE over an existing Delta table: columns, if given, must be the table's
        if spec.schema is not None:
            have = KernelTable(uri).snapshot.schema
            if _plain(have) != _plain(spec.schema):
                raise CatalogTableError(f"the columns given for {ref.label} differ from those of the Delta table at "
                                        f"{ref.location}: {_plain(spec.schema)} vs {_plain(have)}")
        return ref
    if mode == "replace" and not exists:
        raise TableNotFoundError(f"cannot replace {ref.label}: no Delta table at {ref.location}")
    replacing = exists and mode in ("replace", "create_or_replace")
    if df is None:
        if spec.schema is None:
            if exists:
                return ref
            raise CatalogTableError(f"CREATE TABLE {ref.label}: the table needs columns (or AS SELECT ...)")
        _create_empty(uri, spec, replacing)
    else:
        _write_query(spark, ref, spec, df, replacing, mode)
    sync_schema(spark, ref)
    return ref


def _plain(schema: StructType) -> list[tuple[str, str]]:
    return [(f.name.lower(), json.dumps(f.to_json()["type"], sort_keys=True)) for f in schema.fields]


def _create_empty(uri: str, spec: TableSpec, replacing: bool) -> None:
    from ...operations.write.api import create_table

    assert spec.schema is not None
    create_table(uri, spec.schema, mode="overwrite" if replacing else "error", partition_by=spec.partition_by or None,
                 description=spec.comment, configuration=dict(spec.properties or {}) or None,
                 cluster_by=spec.cluster_by or None)


_CTAS_OPERATION = {"replace": "REPLACE TABLE AS SELECT", "create_or_replace": "CREATE OR REPLACE TABLE AS SELECT"}


def _write_query(spark: Any, ref: DeltaRef, spec: TableSpec, df: Any, replacing: bool, mode: str) -> None:
    """CREATE / REPLACE ... AS SELECT (and saveAsTable of a new table): ONE commit holding the protocol, the
    metadata (comment, properties, clustering) and the data, recorded as delta-spark records it
    (`CREATE TABLE AS SELECT`, `CREATE OR REPLACE TABLE AS SELECT`, `REPLACE TABLE AS SELECT`)."""
    from ..writing.writer import TableCreation, write

    opts: dict[str, Any] = dict(spec.options or {})
    if replacing:
        opts.setdefault("overwriteSchema", "true")
    table = TableCreation(_CTAS_OPERATION.get(mode, "CREATE TABLE AS SELECT"), spec.comment,
                          dict(spec.properties or {}) or None, spec.cluster_by or None)
    write(df, ref.location, mode="overwrite" if replacing else "error", partitionBy=spec.partition_by or None,
          _table=table, **opts)


# ----------------------------------------------------------------------------- DataFrame API by name
def read_table(spark: Any, name: str, options: dict[str, Any] | None = None) -> Any:
    """`spark.table(name)` / `spark.read.table(name)` for a Delta table: the native read plan; None when
    `name` is not a Delta table (Spark reads it as before)."""
    from ..scan.connect_plan import frame_view_table

    view = frame_view_table(spark, name)  # Connect: a temporary view made from a Delta DataFrame
    if view is None:
        view = _read_text_view(spark, name)  # Connect: one made by SQL
    if view is not None:
        return view
    ref = resolve_name(spark, name)
    if ref is None:
        return _read_view(spark, name)
    from .table_frames import cache_catalog_plan, latest_frame

    if options:
        return latest_frame(spark, ref.location, options, table=(ref.db or "default", str(ref.table)))
    return cache_catalog_plan(spark, ref)


def _read_text_view(spark: Any, name: str) -> Any:
    """`spark.table(v)` of a temporary view whose text this session recorded (`CREATE TEMPORARY VIEW v AS <query
    over Delta tables>` on Connect: `connect_plan.text_view`): `SELECT * FROM v` through the Delta SQL router, as
    SQL over `v` reads it - its tables at their latest version, Parquet scans of the files its conditions and
    those chained after the frame keep (`connect_plan.RoutedQuery`) - rather than Spark's own copy of the view
    (its tables through the Python data source at the versions of when it was made). None for any other name (a
    classic session records none: Spark's view there reads the native plan)."""
    from ..scan.connect_plan import text_view

    if "." in name or "`" in name or text_view(spark, name) is None:
        return None
    return spark.sql(f"SELECT * FROM {_q(name)}")


def _read_view(spark: Any, name: str) -> Any:
    """`spark.table(view)` of a permanent view: read as `SELECT * FROM view` through the Delta SQL router, which
    expands the view's stored text (its Delta catalog tables read natively, their files skipped by the
    statement's conditions, and on Connect by the conditions chained after it: `connect_plan.RoutedQuery`).
    Why not Spark's own resolution: over Spark Connect the server would read a Delta catalog table inside the
    view through the registered Python data source, which is given no path option (`a Delta table path is
    needed`); one route for both session kinds. None for anything but a view."""
    entry = lookup(spark, split_name(spark, name))
    if entry is None or not entry.view_text:
        return None
    return spark.sql(f"SELECT * FROM {_q(entry.db or 'default')}.{_q(entry.table)}")


def save_as_table(df: Any, name: str, mode: str | None, partition_by: list[str] | None,
                  options: dict[str, Any]) -> None:
    """`df.write.format("delta").saveAsTable(name)` with delta-spark's modes: error / errorifexists, ignore,
    append (creates a missing table), overwrite (replaces data, schema and partitioning of an existing table,
    as delta-spark's CREATE OR REPLACE TABLE AS SELECT does; with replaceWhere it overwrites only that)."""
    from ..common.schema import Options
    from ..writing.writer import write

    spark = df.sparkSession
    parts = split_name(spark, name)
    mode = (mode or "error").lower()
    opts = Options(options)
    location = opts.get("path")
    write_opts = {k: v for k, v in options.items() if k.lower() != "path"}
    props = {k: str(v) for k, v in write_opts.items() if k.lower().startswith("delta.")}
    ref = resolve(spark, parts, name)
    if ref is None and lookup(spark, parts) is not None:
        raise CatalogTableError(f"table {name!r} exists and is not a Delta table")
    if ref is not None and not ref.is_catalog:
        from ...table import DeltaTable as KernelTable

        if not KernelTable.is_deltatable(table_uri(ref.location)):
            ref = None  # delta.`/path` with no table there yet: created below
    if ref is not None:
        if mode in ("error", "errorifexists", "default"):
            raise CatalogTableError(f"table {name!r} already exists (mode 'error'); use mode('append') or "
                                    "mode('overwrite')")
        if mode == "ignore":
            return
        if mode == "append":
            write(df, ref.location, mode="append", partitionBy=partition_by, **write_opts)
        elif mode == "overwrite":
            replace = None
            if not opts.get("replaceWhere") and not (opts.get("partitionOverwriteMode") or "").lower() == "dynamic":
                write_opts.setdefault("overwriteSchema", "true")
                from ..writing.writer import TableCreation

                # delta-spark runs a full overwrite as ReplaceTableAsSelect: its history names it so
                replace = TableCreation("CREATE OR REPLACE TABLE AS SELECT")
            write(df, ref.location, mode="overwrite", partitionBy=partition_by, _table=replace, **write_opts)
        else:
            raise CatalogTableError(f"unknown save mode {mode!r}")
        sync_schema(spark, ref)
        return
    if mode not in ("error", "errorifexists", "default", "ignore", "append", "overwrite"):
        raise CatalogTableError(f"unknown save mode {mode!r}")
    spec = TableSpec(location=location, partition_by=partition_by, properties=props or None,
                     options={k: v for k, v in write_opts.items() if not k.lower().startswith("delta.")})
    create(spark, parts, spec, "create", df=df, label=name)


def log_columns(spark: Any, name: str) -> list[Any] | None:
    """`spark.catalog.listColumns(name)` of a Delta catalog table, from its log; None for other names."""
    from pyspark.sql.catalog import Column

    try:
        ref = resolve_name(spark, name)
    except DeltaError:
        return None
    if ref is None or not ref.is_catalog:
        return None
    from ...table import DeltaTable as KernelTable

    snap = KernelTable(table_uri(ref.location)).snapshot
    parts = {p.lower() for p in snap.partition_columns}
    return [Column(f.name, f.metadata.get("comment"), f.dataType.simpleString(), f.nullable, f.name.lower() in parts,
                   False, False) for f in to_spark_schema(snap.schema).fields]


def create_from_catalog_api(spark: Any, name: str, path: str | None, schema: Any, description: str | None,
                            options: dict[str, Any]) -> Any:
    """`spark.catalog.createTable(name, path, source="delta", schema, description, **options)`: an external
    table at `path` (an existing Delta table, or a new one with `schema`), else a managed one."""
    from ..common.schema import from_spark_schema

    location = path or options.get("path")
    spec = TableSpec(schema=from_spark_schema(schema) if schema is not None else None, location=location,
                     comment=description,
                     properties={k: str(v) for k, v in options.items() if k.lower().startswith("delta.")} or None)
    ref = create(spark, split_name(spark, name), spec, "create", label=name)
    from ..scan.reader import read

    return read(spark, ref.location)


__all__ = [
    "CatalogTableError",
    "DeltaRef",
    "TableSpec",
    "catalog_table",
    "create",
    "create_from_catalog_api",
    "delta_ref",
    "log_columns",
    "lookup",
    "path_of",
    "read_table",
    "register",
    "require",
    "resolve",
    "resolve_name",
    "save_as_table",
    "split_name",
    "sync_schema",
]
