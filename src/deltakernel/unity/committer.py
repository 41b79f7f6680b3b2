"""The kernel's catalog protocol (`kernel/catalog_client.py`) over a Unity Catalog server: one table's adapter.

Why an adapter and not the client itself: the kernel speaks versions, staged files and a log tail; Unity Catalog's
Delta REST API speaks table names, uuids, etags and `updateTable` actions. `UCTableCatalog` holds what joins them
for one table (client, three-part name, table uuid, location, the staging table while the table is being created)
and maps one call each:

- `get_log_tail()` -> loadTable: the unpublished commits (served newest first: sorted ascending) as staged file
  keys, `latest-table-version` as the maximum catalog version;
- `ratify(request)` -> updateTable `assert-table-uuid` + `add-commit` (+ `set-latest-backfilled-version` when the
  committer knows a published version, + the commit's schema / property / protocol changes in the same request,
  the managed-table spec's lockstep rule). No `assert-etag`: the version check already orders commits, and an
  etag failure is no version conflict the committer could rebase on;
- `published(v)` -> updateTable `set-latest-backfilled-version`;
- `table_created(request)` -> createTable of the staging table the write started from;
- `permits(op)` -> the maintenance the user allowed in the options (`unity_catalog_permitted_maintenance`,
  default `VACUUM`: a user-issued VACUUM with the catalog's write credentials; metadata cleanup is left to the
  catalog unless allowed).

The UC error classes subclass the kernel's catalog outcomes (`unity/errors.py`), so 409 / 429 / unknown outcomes
reach the committer unchanged. The older preview commits API (`/delta/preview/commits`) is used when the server has
no Delta REST API (`supports_delta_api()` False): get_commits for the tail, commit() to ratify and report
backfills.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from deltakernel.kernel.catalog_client import RatifyRequest
from deltakernel.kernel.log.segment import LogTail
from deltakernel.unity.client import UnityCatalogClient
from deltakernel.unity.errors import UCAlreadyExistsError, UCCommitStateUnknownError, UnityCatalogError
from deltakernel.unity.models import (
    AddCommit,
    AssertTableUUID,
    Commit,
    DeltaProtocol,
    LoadTableResult,
    RemoveProperties,
    Requirement,
    SetColumns,
    SetLatestBackfilledVersion,
    SetPartitionColumns,
    SetProperties,
    SetProtocol,
    StagingTable,
    Update,
)

#: storage option naming the maintenance operations the user allows on catalog-managed tables (comma list)
PERMITTED_KEY = "unity_catalog_permitted_maintenance"
DEFAULT_PERMITTED = ("VACUUM",)

#: properties a server derives itself (never sent in createTable / set-properties)
_DERIVED = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.lastUpdateVersion",
            "delta.lastCommitTimestamp", "delta.rowTracking.rowIdHighWaterMark", "delta.clusteringColumns")


def _sendable(configuration: Mapping[str, str]) -> dict[str, str]:
    return {k: str(v) for k, v in configuration.items()
            if v is not None and not k.startswith("delta.feature.") and k not in _DERIVED}


def _protocol(p: Mapping[str, Any]) -> DeltaProtocol:
    return DeltaProtocol(int(p.get("minReaderVersion", 1)), int(p.get("minWriterVersion", 2)),
                         tuple(p.get("readerFeatures") or ()), tuple(p.get("writerFeatures") or ()))


class UCTableCatalog:
    """One Unity Catalog table as the kernel's `CatalogCommitClient` (see the module docstring)."""

    def __init__(self, client: UnityCatalogClient, catalog: str, schema: str, name: str, *,
                 location: str, table_uuid: str | None, staging: StagingTable | None = None,
                 delta_api: bool = True, permitted: tuple[str, ...] = DEFAULT_PERMITTED,
                 last: LoadTableResult | None = None) -> None:
        self.client = client
        self.catalog, self.schema, self.name = catalog, schema, name
        self.location = location
        self.table_uuid = table_uuid
        #: while the table is being created: the staging table whose location version 0 is written to
        self.staging = staging
        self.delta_api = delta_api
        self.permitted = {p.strip().upper() for p in permitted if p.strip()}
        #: the last loadTable answer (metadata, etag); refreshed by each `get_log_tail`
        self.last = last
        #: hook called after each tail load (the storage refreshes vended credentials through it)
        self.on_load: Any = None
        #: the handle's vended credentials (credentials.VendedCredentials), None when the catalog vends none
        self.credentials: Any = None

    @property
    def full_name(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.name}"

    def __repr__(self) -> str:
        return f"UCTableCatalog({self.full_name!r}, {self.location!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a storage shipped to Spark / DataFusion workers) by the client's configuration: an ssl context
        and the credential hook stay in this process."""
        return {**self.__dict__, "client": self.client.config, "on_load": None, "credentials": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.client = UnityCatalogClient(state["client"])

    # ------------------------------------------------------------------ reads
    def get_log_tail(self) -> LogTail:
        if self.staging is not None:  # not registered yet: no commits, no cap (the write creates version 0)
            return LogTail.published_only()
        if self.delta_api:
            loaded = self.client.load_table(self.catalog, self.schema, self.name)
            self.last = loaded
            self.table_uuid = loaded.table_uuid
            commits, latest = loaded.commits, loaded.latest_table_version
        else:
            assert self.table_uuid is not None
            got = self.client.get_commits(self.table_uuid, self.location, 0)
            commits, latest = got.commits, got.latest_table_version
            if latest is not None and latest < 0 and not commits:
                # the preview API's "no commit through the catalog yet" (-1): every commit there is, version 0
                # written at creation, is published - `_delta_log/` is the whole table
                if self.on_load is not None:
                    self.on_load()
                return LogTail.published_only()
        if self.on_load is not None:
            self.on_load()
        if latest is None:
            latest = max((c.version for c in commits), default=0)
        return LogTail.of([(c.version, c.file_name, c.file_size, c.file_modification_timestamp) for c in commits],
                          latest)

    # ------------------------------------------------------------------ commits
    def ratify(self, request: RatifyRequest) -> None:
        commit = Commit(request.version, int(request.in_commit_timestamp), os.path.basename(request.staged.key),
                        int(request.staged.size), int(request.staged.last_modified_ms) or 1)
        if not self.delta_api:
            assert self.table_uuid is not None
            self.client.commit(self.table_uuid, self.location, commit=commit,
                               latest_backfilled_version=request.latest_published_version,
                               metadata=request.metadata)
            return
        assert self.table_uuid is not None, "ratify before the table is registered"
        requirements: list[Requirement] = [AssertTableUUID(self.table_uuid)]
        updates: list[Update] = [AddCommit(commit)]
        if request.latest_published_version is not None and request.latest_published_version > 0:
            updates.append(SetLatestBackfilledVersion(request.latest_published_version))
        updates.extend(self._metadata_updates(request))
        self.client.update_table(self.catalog, self.schema, self.name, requirements, updates)

    def _metadata_updates(self, request: RatifyRequest) -> list[Update]:
        """The catalog's copy of the table's schema, partitioning, properties and protocol, changed in the same
        request as the commit that changes them (the managed-table spec's lockstep rule)."""
        out: list[Update] = []
        md = request.metadata
        if md is not None:
            out.append(SetColumns(json.loads(md["schemaString"])))
            out.append(SetPartitionColumns(tuple(md.get("partitionColumns") or ())))
            new = _sendable(md.get("configuration") or {})
            old = _sendable(self.last.metadata.properties) if self.last is not None else {}
            if new:
                out.append(SetProperties(new))
            gone = tuple(sorted(k for k in old if k not in new and not k.startswith("io.unitycatalog.")))
            if gone:
                out.append(RemoveProperties(gone))
        if request.protocol is not None:
            out.append(SetProtocol(_protocol(request.protocol)))
        return out

    def published(self, version: int) -> None:
        if version <= 0:
            return  # version 0 is published by createTable itself
        if not self.delta_api:
            assert self.table_uuid is not None
            self.client.commit(self.table_uuid, self.location, latest_backfilled_version=version)
            return
        assert self.table_uuid is not None
        self.client.set_latest_backfilled_version(self.catalog, self.schema, self.name, table_uuid=self.table_uuid,
                                                  version=version)

    def table_created(self, request: RatifyRequest) -> None:
        """createTable for the staging table version 0 was just written to (`_delta_log/0.json`)."""
        staging = self.staging
        if staging is None:
            raise UnityCatalogError(f"{self.full_name} is already registered in Unity Catalog: cannot create it")
        md = request.metadata or {}
        proto = _protocol(request.protocol or {})
        if not self.delta_api:  # an older server: POST /tables at the staging location (no protocol, no etag)
            info = self.client.create_table_legacy(
                self.catalog, self.schema, self.name, location=staging.location, table_type="MANAGED",
                columns=json.loads(md["schemaString"]).get("fields", []),
                properties=_sendable(md.get("configuration") or {}), comment=md.get("description"))
            self.staging = None
            self.table_uuid = info.table_id
            return
        try:
            loaded = self.client.create_table(
                self.catalog, self.schema, self.name, location=staging.location, table_type="MANAGED",
                columns=json.loads(md["schemaString"]), protocol=proto,
                properties=_sendable(md.get("configuration") or {}),
                last_commit_timestamp_ms=int(request.in_commit_timestamp),
                partition_columns=list(md.get("partitionColumns") or ()), comment=md.get("description"))
        except (UCCommitStateUnknownError, UCAlreadyExistsError):
            # no answer, or a resend refused: did our create land? (only the staging table's creator finalizes it)
            if not self.client.resolve_create(self.catalog, self.schema, self.name, staging.table_id):
                raise
            loaded = self.client.load_table(self.catalog, self.schema, self.name)
        self.staging = None
        self.last = loaded
        self.table_uuid = loaded.table_uuid

    def permits(self, operation: str) -> bool:
        return operation.strip().upper() in self.permitted

    # ------------------------------------------------------------------ creation
    def new_table_configuration(self) -> dict[str, str]:
        """What the first commit of a table created from the staging table must carry: the required features
        (as `delta.feature.<f>=supported`) and properties (its `io.unitycatalog.tableId`, in-commit timestamps)."""
        staging = self.staging
        if staging is None:
            return {}
        out: dict[str, str] = {}
        req = staging.required_protocol
        for f in (*req.reader_features, *req.writer_features):
            out[f"delta.feature.{f}"] = "supported"
        if "inCommitTimestamp" in req.writer_features:
            out["delta.enableInCommitTimestamps"] = "true"
        for k, v in staging.required_properties.items():
            if v is not None:
                out[k] = v
            elif staging.suggested_properties.get(k) is not None:
                out[k] = str(staging.suggested_properties[k])
        return out
