"""`uc://catalog.schema.table`: a Unity Catalog table name opened as the table's storage, catalog attached.

Why at the storage level: every entry point of deltakernel (DeltaTable, write_deltalake, DataFusion, the CLI)
opens a table with `storage_for_uri(uri, storage_options)`. This module registers itself as the opener of the `uc`
scheme (`storage.register_table_scheme`), so a name works wherever a path does: the opener asks the catalog for the
table (loadTable: location, uuid), its temporary credentials (becoming storage options over the user's own), and
returns the storage of the table's location with a `UCTableCatalog` (committer.py) as `storage.catalog`. The kernel
takes the catalog from there for every snapshot load (the log tail) and commit (the catalog committer), so DML,
OPTIMIZE, VACUUM, RESTORE, time travel and CDF need no Unity-Catalog-specific code.

Configuration (deltalake's names, storage options first, then the environment): `DATABRICKS_HOST` /
`DATABRICKS_TOKEN` or `UNITY_CATALOG_URL` / `UNITY_CATALOG_TOKEN` (config.py); the catalog's keys are kept out of
the object store's options.

A missing table is `UCTableNotFoundError` (a `TableNotFoundError`), except for writers (`create=True`): they get
the storage of a new staging table, whose first commit (version 0, with the features and properties the catalog
requires: `new_table_configuration`) is then registered with createTable (`UCTableCatalog.table_created`).
External tables (not catalog-managed) open as plain path tables at their location.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from deltakernel.storage import ObjectStoreStorage, Storage, register_table_scheme, storage_for_uri
from deltakernel.unity.client import UnityCatalogClient, parse_table_name
from deltakernel.unity.committer import DEFAULT_PERMITTED, PERMITTED_KEY, UCTableCatalog
from deltakernel.unity.config import is_uc_option
from deltakernel.unity.credentials import VendedCredentials
from deltakernel.unity.errors import UCPermissionDeniedError, UCTableNotFoundError
from deltakernel.unity.models import READ, READ_WRITE

SCHEME = "uc"


def _option(options: Mapping[str, str], key: str) -> str | None:
    for k, v in options.items():
        if k.strip().lower() == key:
            return str(v)
    return os.environ.get(key.upper())


def _base_options(options: Mapping[str, str]) -> dict[str, str]:
    """The user's storage options minus the catalog's own keys (object_store would reject them)."""
    return {k: v for k, v in options.items() if not is_uc_option(k) and k.strip().lower() != PERMITTED_KEY}


def _attach(storage: Storage, adapter: UCTableCatalog, creds: VendedCredentials | None) -> Storage:
    """`storage.catalog = adapter`; with vended credentials, each tail load (every snapshot load) re-vends them
    when due and hands the fresh ones to the object store."""
    storage.catalog = adapter  # type: ignore[attr-defined]
    adapter.credentials = creds
    if creds is not None and isinstance(storage, ObjectStoreStorage):
        def refresh() -> None:
            fresh = creds.storage_options()
            if fresh != storage.storage_options:
                storage.refresh_options(fresh)

        adapter.on_load = refresh
    return storage


#: tables being created (staging table made, createTable not yet done) by (server, catalog, schema, name): a
#: write that opens the name again before its first commit (Spark's file job) gets the same staging table
_PENDING: dict[tuple[str, str, str, str], Storage] = {}
_PENDING_LOCK = threading.Lock()

#: options of catalogs configured in this process by name (an engine's session configuration, e.g. Spark's
#: `spark.sql.catalog.<name>.uri` / `.token`), under the options a caller passes
_CATALOG_OPTIONS: dict[str, dict[str, str]] = {}


def configure_catalog(name: str, options: Mapping[str, str]) -> None:
    """Remember the options (`unity_catalog_url`, `unity_catalog_token`, storage keys) for `uc://<name>.*`."""
    _CATALOG_OPTIONS[name.lower()] = dict(options)


def forget_catalog(name: str) -> None:
    """Drop what `configure_catalog` remembered for `name` (a session whose catalog configuration was unset):
    later `uc://<name>.*` opens use only the caller's options and the environment again."""
    _CATALOG_OPTIONS.pop(name.lower(), None)


def configured_options(name: str) -> dict[str, str] | None:
    return _CATALOG_OPTIONS.get(name.lower())


def worker_options(storage: Storage) -> tuple[str, dict[str, str]] | None:
    """(`uc://` name, options) another process (an engine's worker) opens `storage`'s Unity Catalog table with:
    the catalog's URL and token and the options registered for the catalog (object-store endpoint, region); None
    for a storage not opened through a Unity Catalog. The worker goes through the catalog itself (a catalog-managed
    table read by its location alone is refused)."""
    adapter = getattr(storage, "catalog", None)
    if not isinstance(adapter, UCTableCatalog):
        return None
    quoted = ".".join(f"`{p}`" if "." in p else p for p in (adapter.catalog, adapter.schema, adapter.name))
    config = adapter.client.config
    options = {**_CATALOG_OPTIONS.get(adapter.catalog.lower(), {}), "unity_catalog_url": config.base_url}
    if config.token:
        options["unity_catalog_token"] = config.token
    return f"{SCHEME}://{quoted}", options


def open_table(uri: str, storage_options: Mapping[str, str] | None = None, create: bool = False,
               client: UnityCatalogClient | None = None) -> Storage:
    """The storage of the Unity Catalog table `uri` (`uc://catalog.schema.table`), its catalog attached."""
    catalog, schema, name = parse_table_name(uri)
    options = {**_CATALOG_OPTIONS.get(catalog.lower(), {}), **(storage_options or {})}
    client = client or UnityCatalogClient.from_options(options)
    base = _base_options(options)
    permitted_raw = _option(options, PERMITTED_KEY)
    permitted = tuple(permitted_raw.split(",")) if permitted_raw is not None else DEFAULT_PERMITTED
    key = (client.config.base_url, catalog.lower(), schema.lower(), name.lower())
    if not client.supports_delta_api(catalog):  # UC before the Delta REST API: the preview commits API
        try:
            info = client.get_table(f"{catalog}.{schema}.{name}")
        except UCTableNotFoundError:
            with _PENDING_LOCK:
                pending = _PENDING.get(key)
                if pending is not None and getattr(pending.catalog, "staging", None) is not None:  # type: ignore[attr-defined]
                    return pending
                if not create:
                    raise
                staging = client.create_staging_table_legacy(catalog, schema, name)
                adapter = UCTableCatalog(client, catalog, schema, name, location=staging.location, table_uuid=None,
                                         staging=staging, delta_api=False, permitted=permitted)
                storage = _PENDING[key] = _attach(storage_for_uri(staging.location, base), adapter, None)
                return storage
        with _PENDING_LOCK:
            _PENDING.pop(key, None)
        adapter = UCTableCatalog(client, catalog, schema, name, location=info.storage_location,
                                 table_uuid=info.table_id, delta_api=False, permitted=permitted)
        return _attach(storage_for_uri(info.storage_location, base), adapter, None)
    try:
        loaded = client.load_table(catalog, schema, name)
    except UCTableNotFoundError:
        with _PENDING_LOCK:
            pending = _PENDING.get(key)
            if pending is not None and getattr(pending.catalog, "staging", None) is not None:  # type: ignore[attr-defined]
                return pending  # the same write opens the name again (an engine's file job): its staging table
            if not create:
                raise
            staging = client.create_staging_table(catalog, schema, name)
            creds = client.staging_table_credentials(staging, base_options=base)
            adapter = UCTableCatalog(client, catalog, schema, name, location=staging.location, table_uuid=None,
                                     staging=staging, permitted=permitted)
            storage = _PENDING[key] = _attach(storage_for_uri(staging.location, creds.storage_options()), adapter,
                                              creds)
            return storage
    with _PENDING_LOCK:
        _PENDING.pop(key, None)
    location = loaded.location
    creds = client.table_credentials(catalog, schema, name, location, operation=READ_WRITE, base_options=base)
    try:
        opts = creds.storage_options()
    except UCPermissionDeniedError:  # a reader without write privileges
        creds = client.table_credentials(catalog, schema, name, location, operation=READ, base_options=base)
        opts = creds.storage_options()
    storage = storage_for_uri(location, opts)
    if loaded.metadata.table_type.upper() != "MANAGED":
        return storage  # an external table: its `_delta_log` is the truth, commits go to the filesystem
    adapter = UCTableCatalog(client, catalog, schema, name, location=location, table_uuid=loaded.table_uuid,
                             permitted=permitted, last=loaded)
    return _attach(storage, adapter, creds)


def _opener(uri: str, storage_options: dict[str, str] | None, create: bool) -> Storage:
    return open_table(uri, storage_options, create)


register_table_scheme(SCHEME, _opener)

__all__ = ["SCHEME", "configure_catalog", "configured_options", "forget_catalog", "open_table", "worker_options"]
