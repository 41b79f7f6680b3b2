"""The Delta tables of a DataFusion session: `dataset()` opens one at a pinned snapshot, and the registry
remembers, per `SessionContext` (weakly), those registered through deltakernel.

Every way a table enters a session (`register()`, `QueryBuilder.register`, `CREATE EXTERNAL TABLE ... STORED
AS DELTA`, a `register_catalog` directory catalog) records it here, so SQL DML (`dml_targets.py`) can find
its target and re-pin it. Kept apart from the SQL entry points (`sql_tables.py`) and the DML targets, which
both use it.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..kernel.snapshot import Snapshot
from ..storage import storage_for_uri
from .dataset import DeltaDataset
from .dml_parse import DmlTargetError
from .listing import register_in

DEFAULT_CATALOG = "datafusion"
DEFAULT_SCHEMA = "public"


def dataset(
    table_or_uri: Any,
    *,
    version: int | str | None = None,
    storage_options: dict[str, str] | None = None,
    target_partitions: int | None = None,
    native_reader: bool = True,
    view_types: bool = True,
    row_tracking: bool = False,
    provider: str = "auto",
) -> DeltaDataset:
    """A `DeltaDataset` pinned to one snapshot of `table_or_uri` (a URI or a `deltakernel.DeltaTable`).

    `version` is an int or a timestamp (datetime / ISO-8601 string); a DeltaTable keeps its loaded
    version unless `version` is given. `native_reader=False` reads every file with pyarrow / the kernel
    instead of DataFusion's Parquet reader (see `native.py`); `view_types=False` exposes top-level
    strings and binaries as `string` / `binary` instead of DataFusion's view types; `row_tracking=True` adds
    the stable `_row_id` / `_row_commit_version` columns of a row-tracking table. `provider="dataset"` keeps
    the pyarrow-Dataset provider even where the listing view (`listing.py`: DataFusion scans the files
    itself) would do; registrations use the view by default where it is exact.
    """
    opts: dict[str, Any] = {"target_partitions": target_partitions, "native_reader": native_reader,
                            "view_types": view_types, "row_tracking": row_tracking, "provider": provider}
    loaded = getattr(table_or_uri, "snapshot", None)  # a deltakernel.DeltaTable (duck-typed: no import cycle)
    if isinstance(loaded, Snapshot):
        if version is None:
            return DeltaDataset(loaded, **opts)
        return DeltaDataset(Snapshot.load_at(loaded.storage, version), **opts)
    storage = storage_for_uri(str(table_or_uri), storage_options)
    return DeltaDataset(Snapshot.load_at(storage, version), **opts)


# ----------------------------------------------------------------------------- the session registry
_TABLES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, str], DeltaDataset]] = weakref.WeakKeyDictionary()
_CATALOGS: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def _split_name(name: str) -> list[str]:
    """A DataFusion table reference as DataFusion resolves it: `.`-separated, unquoted parts lower-cased,
    `"quoted"` parts exact."""
    parts: list[str] = []
    cur: list[str] = []
    quoted = False
    i = 0
    while i < len(name):
        ch = name[i]
        if quoted:
            if ch == '"' and name[i + 1:i + 2] == '"':
                cur.append('"')
                i += 1
            elif ch == '"':
                quoted = False
            else:
                cur.append(ch)
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch.lower())
        i += 1
    parts.append("".join(cur))
    return parts


def table_key(parts: list[str]) -> tuple[str, str, str]:
    """(catalog, schema, table) of a resolved table name, DataFusion's defaults filling the missing parts."""
    if not parts or len(parts) > 3 or not all(parts):
        raise DmlTargetError(f"not a table name: {'.'.join(parts)!r}")
    full = [DEFAULT_CATALOG, DEFAULT_SCHEMA][: 3 - len(parts)] + list(parts)
    return full[0], full[1], full[2]


def quoted_name(key: tuple[str, ...]) -> str:
    """A key as a DataFusion table reference, every part quoted (exact)."""
    return ".".join('"' + p.replace('"', '""') + '"' for p in key)


def remember_table(ctx: Any, name: str, dataset: DeltaDataset, *, normalized: bool = False) -> None:
    """Record that `name` in `ctx` is the Delta table `dataset` (called by every deltakernel registration).
    `normalized`: `name` is already resolved (DataFusion's DDL hands over the name that way)."""
    parts = name.split(".") if normalized else _split_name(name)
    try:
        _TABLES.setdefault(ctx, {})[table_key(parts)] = dataset
    except TypeError:  # a context object that cannot be weakly referenced: DML on it is not available
        pass


def remember_catalog(ctx: Any, name: str, provider: Any) -> None:
    """Record a `register_catalog` directory catalog: its tables may be DML targets."""
    try:
        _CATALOGS.setdefault(ctx, {})[_split_name(name)[0]] = provider
    except TypeError:
        pass


def registered_tables(ctx: Any) -> dict[tuple[str, str, str], DeltaDataset]:
    """The live registry of `ctx`'s Delta tables, by `table_key` (callers drop and re-pin entries in it)."""
    return _TABLES.get(ctx, {})


def registered_catalogs(ctx: Any) -> dict[str, Any]:
    """`ctx`'s directory catalogs, by name."""
    return _CATALOGS.get(ctx, {})


def copy_tables(old_ctx: Any, new_ctx: Any) -> None:
    """Register in `new_ctx` the Delta tables deltakernel registered in `old_ctx`, at their pinned versions."""
    for key, ds in list(_TABLES.get(old_ctx, {}).items()):
        register_in(new_ctx, quoted_name(key), ds)
        _TABLES.setdefault(new_ctx, {})[key] = ds


def delta_tables(ctx: Any) -> dict[str, DeltaDataset]:
    """The Delta tables registered through deltakernel in `ctx` (`catalog.schema.table` -> pinned dataset)."""
    try:
        tables = _TABLES.get(ctx, {})
    except TypeError:
        return {}
    return {".".join(k): v for k, v in tables.items()}


__all__ = ["DEFAULT_CATALOG", "DEFAULT_SCHEMA", "copy_tables", "dataset", "delta_tables", "quoted_name",
           "registered_catalogs", "registered_tables", "remember_catalog", "remember_table", "table_key"]
