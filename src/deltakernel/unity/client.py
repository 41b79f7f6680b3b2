"""A Unity Catalog client for the Delta REST API (UC 0.5+, `api/delta.yaml`) and the older preview commits API.

Why one method per API operation: the kernel's catalog committer (stage -> ratify -> publish) is written against a
small protocol of its own; an adapter maps that protocol onto these calls (docs/decisions.md, "Unity Catalog
client"). Keeping this surface a faithful mirror of the wire API - same operations, same payloads, typed results
and typed errors - lets the adapter (and tests) see exactly what crossed the wire, and lets the same client serve
readers (loadTable for the log tail), writers (updateTable add-commit / set-latest-backfilled-version), table
creation (staging table -> write version 0 -> createTable) and storage (vended credentials).

Servers without the Delta REST API (UC before 0.5) are detected with `supports_delta_api()` (getConfig answering
404, or not listing loadTable / updateTable); for them `get_table` + `get_commits` / `commit` speak
`/delta/preview/commits`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from deltakernel.unity.config import UCConfig, resolve_config
from deltakernel.unity.credentials import VendedCredentials
from deltakernel.unity.errors import (
    UCBadRequestError,
    UCConfigurationError,
    UCNotFoundError,
    UCTableNotFoundError,
    UCTooManyUnpublishedCommitsError,
    UnityCatalogError,
)
from deltakernel.unity.models import (
    READ,
    READ_WRITE,
    AddCommit,
    AssertEtag,
    AssertTableUUID,
    CatalogConfig,
    Commit,
    CommitResolution,
    DeltaProtocol,
    LoadTableResult,
    PreviewCommits,
    Requirement,
    SetLatestBackfilledVersion,
    StagingTable,
    StorageCredential,
    TableInfo,
    Update,
    credentials_from_json,
)
from deltakernel.unity.transport import Transport, path_segment

#: the Delta REST API protocol versions this client speaks (getConfig's `protocol-versions`)
PROTOCOL_VERSIONS = "1.0"

LOAD_TABLE = "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}"
UPDATE_TABLE = "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}"
#: the table feature of managed tables on servers before the Delta REST API (catalog-owned commits, preview)
LEGACY_MANAGED_FEATURE = "catalogOwned-preview"


def parse_table_name(name: str) -> tuple[str, str, str]:
    """`uc://catalog.schema.table` or `catalog.schema.table` -> (catalog, schema, table); backquoted parts may hold
    dots (`cat.sch.`my.table``)."""
    raw = name[len("uc://"):] if name.lower().startswith("uc://") else name
    parts: list[str] = []
    cur, quoted = "", False
    for ch in raw:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    if quoted or len(parts) != 3 or not all(parts):
        raise UCConfigurationError(f"{name!r}: expected a three-part name catalog.schema.table")
    return parts[0], parts[1], parts[2]


def _table_path(catalog: str, schema: str, table: str) -> str:
    return (f"/delta/v1/catalogs/{path_segment(catalog)}/schemas/{path_segment(schema)}"
            f"/tables/{path_segment(table)}")


def column_infos(fields: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Delta schema fields as the older UC API's ColumnInfo (name, type_text, type_json, type_name, position,
    nullable)."""
    import json

    out = []
    for i, f in enumerate(fields):
        t = f.get("type")
        name = t if isinstance(t, str) else str((t or {}).get("type", "struct"))
        base = name.split("(")[0].upper()
        out.append({"name": f.get("name"), "type_text": name if isinstance(t, str) else base.lower(),
                    "type_json": json.dumps(dict(f)), "type_name": base, "position": i,
                    "nullable": bool(f.get("nullable", True))})
    return out


class UnityCatalogClient:
    """Talks to one Unity Catalog server. Thread-safe (each request opens its own connection)."""

    def __init__(self, config: UCConfig, *, max_retries: int = 2, backoff: float = 0.2,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._t = Transport(config, max_retries=max_retries, backoff=backoff, sleep=sleep)
        self._delta_api: dict[str, bool] = {}

    @classmethod
    def from_options(cls, storage_options: Mapping[str, str] | None = None,
                     env: Mapping[str, str] | None = None, **kw: Any) -> UnityCatalogClient:
        """A client configured from storage options, then the environment (`deltakernel.unity.config`)."""
        return cls(resolve_config(storage_options, env), **kw)

    def __repr__(self) -> str:
        return f"UnityCatalogClient({self.config.base_url!r})"

    # ================================================================== Delta REST API: configuration
    def get_config(self, catalog: str, protocol_versions: str = PROTOCOL_VERSIONS) -> CatalogConfig:
        """getConfig: the endpoints the server offers for the newest protocol version both sides speak."""
        data = self._t.request("GET", "/delta/v1/config", operation="getConfig",
                               query={"catalog": catalog, "protocol-versions": protocol_versions})
        return CatalogConfig.from_json(data or {})

    def supports_delta_api(self, catalog: str) -> bool:
        """True when the server offers loadTable and updateTable of the Delta REST API for `catalog`; False when
        getConfig is unknown (404: a server before the Delta REST API - use the preview commits API) or shares no
        protocol version with this client (400). Cached."""
        if catalog not in self._delta_api:
            try:
                cfg = self.get_config(catalog)
            except UCNotFoundError as exc:
                if exc.error_type in ("NoSuchCatalogException", "CATALOG_DOES_NOT_EXIST"):
                    raise
                self._delta_api[catalog] = False
            except UCBadRequestError:  # no mutually supported protocol version: treat as an older server
                self._delta_api[catalog] = False
            else:
                self._delta_api[catalog] = cfg.supports(LOAD_TABLE) and cfg.supports(UPDATE_TABLE)
        return self._delta_api[catalog]

    # ================================================================== Delta REST API: tables
    def create_staging_table(self, catalog: str, schema: str, name: str) -> StagingTable:
        """createStagingTable: the catalog allocates a table id and a location for a new managed table."""
        data = self._t.request(
            "POST", f"/delta/v1/catalogs/{path_segment(catalog)}/schemas/{path_segment(schema)}/staging-tables",
            operation="createStagingTable", body={"name": name}, mutating=True)
        return StagingTable.from_json(data or {})

    def create_table(self, catalog: str, schema: str, name: str, *, location: str, table_type: str,
                     columns: Mapping[str, Any], protocol: DeltaProtocol, properties: Mapping[str, str],
                     last_commit_timestamp_ms: int, partition_columns: Sequence[str] | None = None,
                     comment: str | None = None, domain_metadata: Mapping[str, Any] | None = None,
                     uniform: Mapping[str, Any] | None = None) -> LoadTableResult:
        """createTable: register a table whose version 0 the client already wrote at `location` (for MANAGED, the
        staging table's location and id: `properties["io.unitycatalog.tableId"]`)."""
        body: dict[str, Any] = {"name": name, "location": location, "table-type": table_type,
                                "columns": dict(columns), "protocol": protocol.to_json(),
                                "properties": dict(properties), "last-commit-timestamp-ms": last_commit_timestamp_ms}
        if partition_columns is not None:
            body["partition-columns"] = list(partition_columns)
        if comment is not None:
            body["comment"] = comment
        if domain_metadata is not None:
            body["domain-metadata"] = dict(domain_metadata)
        if uniform is not None:
            body["uniform"] = dict(uniform)
        data = self._t.request(
            "POST", f"/delta/v1/catalogs/{path_segment(catalog)}/schemas/{path_segment(schema)}/tables",
            operation="createTable", body=body, mutating=True)
        return LoadTableResult.from_json(data or {})

    def resolve_create(self, catalog: str, schema: str, name: str, staging_table_id: str) -> bool:
        """After `create_table` ended in an unknown outcome (or a retry was refused because the staging table is
        already finalized): True when the table exists with the staging table's id - the first attempt succeeded
        (only the staging table's creator can finalize it); False when the create did not happen."""
        try:
            loaded = self.load_table(catalog, schema, name)
        except UCTableNotFoundError:
            return False
        return loaded.table_uuid == staging_table_id

    def load_table(self, catalog: str, schema: str, table: str) -> LoadTableResult:
        """loadTable: metadata (etag, uuid, location), the unpublished commits newest first, the latest version."""
        data = self._t.request("GET", _table_path(catalog, schema, table), operation="loadTable")
        return LoadTableResult.from_json(data or {})

    def update_table(self, catalog: str, schema: str, table: str, requirements: Sequence[Requirement],
                     updates: Sequence[Update]) -> LoadTableResult:
        """updateTable: apply `updates` atomically if every requirement holds (`assert-table-uuid` is always
        required by the API). Outcomes: 409 -> `UCCommitConflictError` (another writer took the version) or
        `UCRequirementConflictError` (etag / uuid); 429 -> `UCTooManyUnpublishedCommitsError` filled from a reload;
        5xx or no answer -> `UCCommitStateUnknownError` (reload to see whether the commit was ratified)."""
        body = {"requirements": [r.to_json() for r in requirements], "updates": [u.to_json() for u in updates]}
        commit = next((u.commit for u in updates if isinstance(u, AddCommit)), None)
        try:
            data = self._t.request("POST", _table_path(catalog, schema, table), operation="updateTable",
                                   body=body, mutating=True, commit=commit is not None)
        except UCTooManyUnpublishedCommitsError as exc:
            exc.table = f"{catalog}.{schema}.{table}"
            exc.version = commit.version if commit else None
            try:
                loaded = self.load_table(catalog, schema, table)
            except UnityCatalogError:
                pass
            else:
                exc.unpublished_commits = sorted(loaded.commits, key=lambda c: c.version)
                exc.latest_table_version = loaded.latest_table_version
            raise
        return LoadTableResult.from_json(data or {})

    def add_commit(self, catalog: str, schema: str, table: str, *, table_uuid: str, commit: Commit,
                   etag: str | None = None, latest_backfilled_version: int | None = None) -> LoadTableResult:
        """Ratify `commit` (updateTable with `add-commit`, plus `set-latest-backfilled-version` when given)."""
        reqs: list[Requirement] = [AssertTableUUID(table_uuid)]
        if etag is not None:
            reqs.append(AssertEtag(etag))
        ups: list[Update] = [AddCommit(commit)]
        if latest_backfilled_version is not None:
            ups.append(SetLatestBackfilledVersion(latest_backfilled_version))
        return self.update_table(catalog, schema, table, reqs, ups)

    def set_latest_backfilled_version(self, catalog: str, schema: str, table: str, *, table_uuid: str,
                                      version: int, etag: str | None = None) -> LoadTableResult:
        """Report that every version up to `version` is published (updateTable `set-latest-backfilled-version`)."""
        reqs: list[Requirement] = [AssertTableUUID(table_uuid)]
        if etag is not None:
            reqs.append(AssertEtag(etag))
        return self.update_table(catalog, schema, table, reqs, [SetLatestBackfilledVersion(version)])

    def resolve_commit(self, catalog: str, schema: str, table: str, commit: Commit) -> CommitResolution:
        """After an unknown outcome (`UCCommitStateUnknownError`), or a 409 on a resend: did `commit` win its
        version? Reloads the table and compares the version's `file-name` (the UUID in it is the only
        deduplication handle the API has). See `CommitResolution` for the answers."""
        loaded = self.load_table(catalog, schema, table)
        return CommitResolution.of(commit, loaded.commits, loaded.latest_table_version)

    def delete_table(self, catalog: str, schema: str, table: str) -> None:
        self._t.request("DELETE", _table_path(catalog, schema, table), operation="deleteTable", mutating=True)

    def table_exists(self, catalog: str, schema: str, table: str) -> bool:
        try:
            self._t.request("HEAD", _table_path(catalog, schema, table), operation="tableExists")
        except UCNotFoundError:
            return False
        return True

    def rename_table(self, catalog: str, schema: str, table: str, new_name: str) -> None:
        self._t.request("POST", _table_path(catalog, schema, table) + "/rename", operation="renameTable",
                        body={"new-name": new_name}, mutating=True)

    # ================================================================== Delta REST API: credentials
    def get_table_credentials(self, catalog: str, schema: str, table: str,
                              operation: str = READ) -> tuple[StorageCredential, ...]:
        data = self._t.request("GET", _table_path(catalog, schema, table) + "/credentials",
                               operation="getTableCredentials", query={"operation": operation})
        return credentials_from_json(data)

    def get_staging_table_credentials(self, table_id: str) -> tuple[StorageCredential, ...]:
        data = self._t.request("GET", f"/delta/v1/staging-tables/{path_segment(table_id)}/credentials",
                               operation="getStagingTableCredentials")
        return credentials_from_json(data)

    def get_temporary_path_credentials(self, location: str,
                                       operation: str = READ_WRITE) -> tuple[StorageCredential, ...]:
        data = self._t.request("GET", "/delta/v1/temporary-path-credentials",
                               operation="getTemporaryPathCredentials",
                               query={"location": location, "operation": operation})
        return credentials_from_json(data)

    def table_credentials(self, catalog: str, schema: str, table: str, location: str, *,
                          operation: str = READ_WRITE, base_options: Mapping[str, str] | None = None,
                          **kw: Any) -> VendedCredentials:
        """Refreshing storage options for a table's `location` (`VendedCredentials`)."""
        return VendedCredentials(lambda: self.get_table_credentials(catalog, schema, table, operation), location,
                                 base_options, **kw)

    def staging_table_credentials(self, staging: StagingTable, *, base_options: Mapping[str, str] | None = None,
                                  **kw: Any) -> VendedCredentials:
        """Refreshing storage options for writing a staging table's version 0 (starts from the credentials the
        createStagingTable answer carried, re-vends through getStagingTableCredentials)."""
        first: list[Sequence[StorageCredential]] = [staging.storage_credentials]

        def vend() -> Sequence[StorageCredential]:
            return first.pop() if first else self.get_staging_table_credentials(staging.table_id)

        return VendedCredentials(vend, staging.location, base_options, **kw)

    def path_credentials(self, location: str, *, operation: str = READ_WRITE,
                         base_options: Mapping[str, str] | None = None, **kw: Any) -> VendedCredentials:
        """Refreshing storage options for a path (an external table being created)."""
        return VendedCredentials(lambda: self.get_temporary_path_credentials(location, operation), location,
                                 base_options, **kw)

    # ================================================================== older UC API (preview commits)
    def get_table(self, full_name: str) -> TableInfo:
        """GET /tables/{full_name}: the table id and storage location the preview commits API is keyed by."""
        data = self._t.request("GET", f"/tables/{path_segment(full_name)}", operation="getTable")
        return TableInfo.from_json(data or {})

    def create_staging_table_legacy(self, catalog: str, schema: str, name: str) -> StagingTable:
        """POST /staging-tables of the older UC API (servers before the Delta REST API): an id and a location for
        a new managed table. Such servers state no requirements, so the first commit carries what their managed
        tables need: the `catalogOwned-preview` feature, in-commit timestamps and the id as
        `io.unitycatalog.tableId` (what delta-spark writes for them)."""
        data = self._t.request("POST", "/staging-tables", operation="createStagingTable", mutating=True,
                               body={"catalog_name": catalog, "schema_name": schema, "name": name}) or {}
        table_id = str(data.get("id") or "")
        location = str(data.get("staging_location") or "")
        if not table_id or not location:
            raise UCBadRequestError(f"createStagingTable of {catalog}.{schema}.{name}: no id / staging_location "
                                    f"in the answer {sorted(data)}")
        protocol = DeltaProtocol(3, 7, (LEGACY_MANAGED_FEATURE,), (LEGACY_MANAGED_FEATURE, "inCommitTimestamp"))
        return StagingTable(table_id, "MANAGED", location, (), protocol, {"io.unitycatalog.tableId": table_id})

    def create_table_legacy(self, catalog: str, schema: str, name: str, *, location: str, table_type: str,
                            columns: Sequence[Mapping[str, Any]], properties: Mapping[str, str],
                            comment: str | None = None) -> TableInfo:
        """POST /tables of the older UC API: register a table at `location` (a staging table's, for MANAGED)."""
        body: dict[str, Any] = {"name": name, "catalog_name": catalog, "schema_name": schema,
                                "table_type": table_type, "data_source_format": "DELTA",
                                "storage_location": location, "columns": column_infos(columns),
                                "properties": dict(properties)}
        if comment:
            body["comment"] = comment
        data = self._t.request("POST", "/tables", operation="createTable", body=body, mutating=True)
        return TableInfo.from_json(data or {})

    def list_tables(self, catalog: str, schema: str, *, page_size: int = 100) -> list[TableInfo]:
        """GET /tables?catalog_name=&schema_name= (the UC API's listTables; the Delta REST API has no listing),
        every page followed: the tables of one schema (Spark's SHOW TABLES on a Unity Catalog)."""
        out: list[TableInfo] = []
        token: str | None = None
        while True:
            query = {"catalog_name": catalog, "schema_name": schema, "max_results": str(page_size)}
            if token:
                query["page_token"] = token
            data = self._t.request("GET", "/tables", operation="listTables", query=query) or {}
            out.extend(TableInfo.from_json(t) for t in data.get("tables") or ())
            token = data.get("next_page_token") or None
            if token is None:
                return out

    def get_commits(self, table_id: str, table_uri: str, start_version: int,
                    end_version: int | None = None) -> PreviewCommits:
        """GET /delta/preview/commits: unbackfilled commits from `start_version` (inclusive) to `end_version`."""
        body: dict[str, Any] = {"table_id": table_id, "table_uri": table_uri, "start_version": start_version}
        if end_version is not None:
            body["end_version"] = end_version
        data = self._t.request("GET", "/delta/preview/commits", operation="getCommits", body=body)
        return PreviewCommits.from_json(data)

    def resolve_preview_commit(self, table_id: str, table_uri: str, commit: Commit) -> CommitResolution:
        """`resolve_commit` for the preview API (reads `get_commits` from the commit's version)."""
        got = self.get_commits(table_id, table_uri, commit.version)
        return CommitResolution.of(commit, got.commits, got.latest_table_version)

    def commit(self, table_id: str, table_uri: str, *, commit: Commit | None = None,
               latest_backfilled_version: int | None = None, metadata: Mapping[str, Any] | None = None,
               uniform: Mapping[str, Any] | None = None) -> None:
        """POST /delta/preview/commits: ratify `commit` and/or report `latest_backfilled_version`. Same outcomes as
        `update_table` (409 conflict, 429 filled from `get_commits`, 5xx / lost -> outcome unknown)."""
        if commit is None and latest_backfilled_version is None:
            raise UCConfigurationError("commit(): give a commit, a latest_backfilled_version, or both")
        body: dict[str, Any] = {"table_id": table_id, "table_uri": table_uri}
        if commit is not None:
            body["commit_info"] = commit.to_preview_json()
        if latest_backfilled_version is not None:
            body["latest_backfilled_version"] = latest_backfilled_version
        if metadata is not None:
            body["metadata"] = dict(metadata)
        if uniform is not None:
            body["uniform"] = dict(uniform)
        try:
            self._t.request("POST", "/delta/preview/commits", operation="commit", body=body, mutating=True,
                            commit=commit is not None)
        except UCTooManyUnpublishedCommitsError as exc:
            exc.table = table_id
            exc.version = commit.version if commit else None
            try:
                got = self.get_commits(table_id, table_uri, 0)
            except UnityCatalogError:
                pass
            else:
                exc.unpublished_commits = sorted(got.commits, key=lambda c: c.version)
                exc.latest_table_version = got.latest_table_version
            raise
