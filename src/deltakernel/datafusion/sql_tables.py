"""SQL entry points: `CREATE EXTERNAL TABLE ... STORED AS DELTA`, `delta_scan(uri[, version])`, a catalog.

All three produce the same `DeltaDataset` as `register()`, so pushdown, deletion vectors and column
mapping behave identically whichever way a table enters the session.

- DDL: datafusion-python 55 accepts a Python `TableProviderFactory`; DataFusion hands us the location and
  the OPTIONS with a `format.` prefix and lower-cased keys. `version` (int or timestamp) pins a snapshot,
  every other option is a storage option (deltalake's keys, which are case-insensitive in deltakernel's
  storage layer and object_store).
- `delta_scan`: a Python UDTF receives literal expressions, so time travel is `delta_scan('uri', 3)` or
  `delta_scan('uri', '2026-11-01T00:00:00Z')`. Storage options come from `install(..., storage_options=)`.
- `delta_changes(uri [, start [, end]])`: the change data feed as a table (`changes.py`), same literal rules.
- Catalog: a directory (local or object store) whose child directories holding a `_delta_log` are
  tables of schema `public`; child directories without one that hold tables become schemas. Tables load
  lazily on first reference and stay pinned for the provider's life (`refresh()` forgets them).

Tables created by the DDL factory of `install(ctx)` and the catalog's tables are recorded as DML targets of
their session (`session_tables.py`): SQL DML through deltakernel re-pins them to the version it commits.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import datafusion
from datafusion import SessionContext, Table
from datafusion.catalog import CatalogProvider, SchemaProvider, TableProviderFactory

from ..errors import DeltaError
from .forking import check_context, ensure_usable
from .listing import as_table
from .session_tables import copy_tables, dataset, registered_catalogs, remember_catalog, remember_table
from .udtf_errors import remember_errors, udtf_error

_VERSION_KEYS = ("version", "delta.version", "timestamp", "delta.timestamp")


def _parse_version(value: str | int | None) -> int | str | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    return int(text) if text.lstrip("-").isdigit() else text


class DeltaTableFactory(TableProviderFactory):
    """`CREATE EXTERNAL TABLE name STORED AS DELTA LOCATION 'uri' [OPTIONS ('version' '3', 'aws_region' ...)]`."""

    def __init__(self, storage_options: dict[str, str] | None = None, ctx: SessionContext | None = None) -> None:
        self.storage_options = dict(storage_options or {})
        # the session the factory is installed in (weakly): tables it creates become DML targets there
        self._ctx = weakref.ref(ctx) if ctx is not None else None

    def create(self, cmd: Any) -> Table:
        locations = list(cmd.locations()) if hasattr(cmd, "locations") else [cmd.location()]
        if len(locations) != 1:
            raise DeltaError(f"STORED AS DELTA needs exactly one LOCATION, got {locations}")
        options: dict[str, str] = {}
        for key, value in dict(cmd.options()).items():
            options[key[len("format."):] if key.startswith("format.") else key] = value
        version = None
        for key in _VERSION_KEYS:
            if key in options:
                version = _parse_version(options.pop(key))
        storage_options = {**self.storage_options, **options}
        ds = dataset(locations[0], version=version, storage_options=storage_options or None)
        ctx = self._ctx() if self._ctx is not None else None
        if ctx is not None:
            remember_table(ctx, cmd.name(), ds, normalized=True)
        return as_table(ds)


def _literal_value(expr: Any, function: str = "delta_scan") -> Any:
    """The Python value of a literal UDTF argument (`'text'`, `3`)."""
    lit = expr.to_variant()
    if not isinstance(lit, datafusion.expr.Literal):
        raise DeltaError(f"{function} arguments must be literals, got {expr}")
    kind = str(lit.data_type()).lower()
    if "utf8" in kind or "string" in kind:
        return lit.value_string()
    if kind.startswith("int") or kind.startswith("uint"):
        return lit.value_i64()
    if kind == "null":
        return None
    raise DeltaError(f"unsupported {function} argument type {kind}")


def delta_scan_udtf(name: str = "delta_scan", storage_options: dict[str, str] | None = None) -> Any:
    """A table function `delta_scan(uri [, version_or_timestamp])` returning the pinned table."""
    def delta_scan(*args: Any) -> Table:
        if not 1 <= len(args) <= 2:
            raise DeltaError("delta_scan(uri [, version or timestamp])")
        uri = _literal_value(args[0])
        version = _parse_version(_literal_value(args[1])) if len(args) == 2 else None
        return as_table(dataset(uri, version=version, storage_options=storage_options))

    return datafusion.udtf(remember_errors(delta_scan), name)


def delta_changes_udtf(name: str = "delta_changes", storage_options: dict[str, str] | None = None) -> Any:
    """A table function `delta_changes(uri [, start [, end]])`: the change data feed (see `changes.py`)."""
    from .changes import changes_dataset

    def delta_changes(*args: Any) -> Table:
        if not 1 <= len(args) <= 3:
            raise DeltaError("delta_changes(uri [, start [, end]]): start/end are versions or ISO-8601 timestamps")
        values = [_literal_value(a, "delta_changes") for a in args]
        bounds = [_parse_version(v) for v in values[1:]]
        start = bounds[0] if bounds and bounds[0] is not None else 0
        end = bounds[1] if len(bounds) == 2 else None
        return Table(changes_dataset(str(values[0]), start, end, storage_options=storage_options))

    return datafusion.udtf(remember_errors(delta_changes), name)


def install(ctx: SessionContext, storage_options: dict[str, str] | None = None) -> SessionContext:
    """Enable `STORED AS DELTA` DDL and the `delta_scan` / `delta_changes` table functions on `ctx`."""
    check_context(ctx)
    ctx.register_table_factory("DELTA", DeltaTableFactory(storage_options, ctx))
    ctx.register_udtf(delta_scan_udtf(storage_options=storage_options))
    ctx.register_udtf(delta_changes_udtf(storage_options=storage_options))
    return ctx


def session_context(config: Any = None, storage_options: dict[str, str] | None = None) -> SessionContext:
    """A new SessionContext with `install()` applied; without `config`, with deltakernel's settings
    (`session_defaults.py`: join broadcast thresholds for the listing path's exact statistics)."""
    ensure_usable()  # in a fork child: may reload this module (the names below are then the new instance's)
    from .session_defaults import session_config

    ctx = SessionContext(config if config is not None else session_config())
    return install(ctx, storage_options)


# ----------------------------------------------------------------------------- catalog
class DeltaSchemaProvider(SchemaProvider):
    """The Delta tables directly under one directory (each child with a `_delta_log`)."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None = None,
                 table_dirs: dict[str, str] | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.storage_options = storage_options
        self._table_dirs = table_dirs
        self._tables: dict[str, Table] = {}
        self._datasets: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _dirs(self) -> dict[str, str]:
        if self._table_dirs is None:
            tables, _ = _scan_directory(self.uri, self.storage_options)
            self._table_dirs = tables
        return self._table_dirs

    def table_names(self) -> set[str]:
        return set(self._dirs())

    def table_exist(self, name: str) -> bool:
        return name in self._dirs()

    def table(self, name: str) -> Table | None:
        with self._lock:
            if name not in self._tables and self._load(name) is None:
                return None
            return self._tables[name]

    def _load(self, name: str) -> Any:
        uri = self._dirs().get(name)
        if uri is None:
            return None
        ds = dataset(uri, storage_options=self.storage_options)
        self._datasets[name], self._tables[name] = ds, as_table(ds)
        return ds

    def delta_dataset(self, name: str) -> Any:
        """The pinned `DeltaDataset` of table `name` (loaded on first use, as `table`); None if unknown."""
        with self._lock:
            return self._datasets[name] if name in self._datasets else self._load(name)

    def repin(self, name: str, ds: Any) -> None:
        """Serve `ds` (a newer snapshot of table `name`) from now on: SQL DML through deltakernel calls it."""
        with self._lock:
            self._datasets[name], self._tables[name] = ds, as_table(ds)

    def register_table(self, name: str, table: Any) -> None:
        raise DeltaError("the Delta directory catalog is read-only; write with deltakernel.write_deltalake")

    def deregister_table(self, name: str, cascade: bool = True) -> None:
        raise DeltaError("the Delta directory catalog is read-only")

    def refresh(self) -> None:
        """Forget loaded snapshots and the directory listing (next reference loads the latest version)."""
        with self._lock:
            self._tables.clear()
            self._datasets.clear()
            self._table_dirs = None


class DeltaCatalogProvider(CatalogProvider):
    """A directory of Delta tables: `public` holds the tables at its top level, sub-directories
    without a `_delta_log` that hold tables are further schemas."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None = None) -> None:
        self.uri = uri.rstrip("/")
        self.storage_options = storage_options
        tables, subdirs = _scan_directory(self.uri, storage_options)
        self._schemas: dict[str, DeltaSchemaProvider] = {
            "public": DeltaSchemaProvider(self.uri, storage_options, tables)}
        for name, sub in subdirs.items():
            sub_tables, _ = _scan_directory(sub, storage_options)
            if sub_tables and name != "public":
                self._schemas[name] = DeltaSchemaProvider(sub, storage_options, sub_tables)

    def schema_names(self) -> set[str]:
        return set(self._schemas)

    def schema(self, name: str) -> Any:
        return self._schemas.get(name)

    def refresh(self) -> None:
        for s in self._schemas.values():
            s.refresh()


def register_catalog(ctx: SessionContext, name: str, uri: str,
                     storage_options: dict[str, str] | None = None) -> DeltaCatalogProvider:
    """Expose a directory of Delta tables as catalog `name` (`SELECT * FROM name.public.table`)."""
    check_context(ctx)
    provider = DeltaCatalogProvider(uri, storage_options)
    ctx.register_catalog_provider(name, provider)
    remember_catalog(ctx, name, provider)
    return provider


def carry_over(old_ctx: Any, new_ctx: Any) -> None:
    """Register in `new_ctx` the Delta tables and directory catalogs deltakernel registered in `old_ctx`, at their
    pinned versions (a QueryBuilder's session rebuilt in a fork child, where the old one cannot run)."""
    copy_tables(old_ctx, new_ctx)
    for name, provider in list(registered_catalogs(old_ctx).items()):
        register_catalog(new_ctx, name, provider.uri, provider.storage_options)


def _scan_directory(uri: str, storage_options: dict[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """(table name -> uri, other sub-directory name -> uri) of the direct children of `uri`."""
    import pyarrow.fs as pafs

    from ..storage import storage_for_uri

    storage = storage_for_uri(uri, storage_options)
    fs, base = storage.arrow_filesystem()
    tables: dict[str, str] = {}
    others: dict[str, str] = {}
    for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=False)):
        if info.type != pafs.FileType.Directory or info.base_name.startswith((".", "_")):
            continue
        child = f"{uri}/{info.base_name}"
        log = fs.get_file_info(f"{info.path}/_delta_log")
        if log.type == pafs.FileType.Directory:
            tables[info.base_name] = child
        else:
            others[info.base_name] = child
    return tables, others


__all__ = [
    "DeltaCatalogProvider",
    "DeltaSchemaProvider",
    "DeltaTableFactory",
    "carry_over",
    "delta_changes_udtf",
    "delta_scan_udtf",
    "install",
    "register_catalog",
    "session_context",
    "udtf_error",
]
