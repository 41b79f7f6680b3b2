"""The Delta REST API's payloads (api/delta.yaml of Unity Catalog) as small frozen dataclasses.

Why hand-written dataclasses and not generated models: the client needs a dozen shapes, each read leniently (unknown
keys ignored, so a newer server does not break an older client) and written exactly (hyphenated keys, `action` /
`type` discriminators). Each `to_json` produces the wire form; each `from_json` reads it. The preview commits API
(`/delta/preview/commits`) spells the same commit with underscores: `Commit.to_preview_json` / `from_json` handle
both spellings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

READ = "READ"
READ_WRITE = "READ_WRITE"


def _get(d: dict[str, Any], hyphen: str, default: Any = None) -> Any:
    """A field under its delta.yaml (hyphenated) or its preview / all.yaml (underscored) name."""
    if hyphen in d:
        return d[hyphen]
    return d.get(hyphen.replace("-", "_"), default)


@dataclass(frozen=True)
class CatalogConfig:
    """getConfig: the endpoints the server offers for the negotiated `protocol_version`."""

    endpoints: tuple[str, ...]
    protocol_version: str

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CatalogConfig:
        return cls(tuple(d.get("endpoints") or ()), str(_get(d, "protocol-version", "")))

    def supports(self, endpoint: str) -> bool:
        """`endpoint` like "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}"."""
        return endpoint in self.endpoints


@dataclass(frozen=True)
class Commit:
    """A ratified (or to-be-ratified) commit: `file_name` is the UUID-named file under
    `_delta_log/_staged_commits/`; `timestamp` its in-commit timestamp (ms)."""

    version: int
    timestamp: int
    file_name: str
    file_size: int
    file_modification_timestamp: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Commit:
        return cls(int(d["version"]), int(_get(d, "timestamp", 0) or 0), str(_get(d, "file-name")),
                   int(_get(d, "file-size", 0) or 0), int(_get(d, "file-modification-timestamp", 0) or 0))

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp, "file-name": self.file_name,
                "file-size": self.file_size, "file-modification-timestamp": self.file_modification_timestamp}

    def to_preview_json(self) -> dict[str, Any]:
        return {k.replace("-", "_"): v for k, v in self.to_json().items()}


@dataclass(frozen=True)
class DeltaProtocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] = ()
    writer_features: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DeltaProtocol:
        return cls(int(_get(d, "min-reader-version", 1)), int(_get(d, "min-writer-version", 2)),
                   tuple(_get(d, "reader-features") or ()), tuple(_get(d, "writer-features") or ()))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"min-reader-version": self.min_reader_version,
                               "min-writer-version": self.min_writer_version}
        if self.reader_features:
            out["reader-features"] = list(self.reader_features)
        if self.writer_features:
            out["writer-features"] = list(self.writer_features)
        return out


@dataclass(frozen=True)
class StorageCredential:
    """A vended temporary credential: valid under `prefix`, for `operation`, until `expiration_time_ms`.
    `config` holds the cloud's keys (`s3.access-key-id`, `azure.sas-token`, `gcs.oauth-token`, ...)."""

    prefix: str
    operation: str
    config: dict[str, str]
    expiration_time_ms: int

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StorageCredential:
        return cls(str(d.get("prefix", "")), str(d.get("operation", READ)),
                   {k: str(v) for k, v in (d.get("config") or {}).items() if v is not None},
                   int(_get(d, "expiration-time-ms", 0) or 0))

    def __repr__(self) -> str:  # never print secrets
        return (f"StorageCredential(prefix={self.prefix!r}, operation={self.operation!r}, "
                f"keys={sorted(self.config)}, expiration_time_ms={self.expiration_time_ms})")


def credentials_from_json(d: dict[str, Any] | None) -> tuple[StorageCredential, ...]:
    return tuple(StorageCredential.from_json(c) for c in ((d or {}).get("storage-credentials") or ()))


@dataclass(frozen=True)
class TableMetadata:
    """loadTable's `metadata`: `etag` for `assert-etag`, `table_uuid` for `assert-table-uuid`; `columns` is the
    DeltaStructType as sent (`{"type": "struct", "fields": [...]}`)."""

    etag: str
    table_type: str
    table_uuid: str
    location: str
    created_time: int
    updated_time: int
    columns: dict[str, Any]
    partition_columns: tuple[str, ...]
    properties: dict[str, str]
    last_commit_version: int | None
    last_commit_timestamp_ms: int | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableMetadata:
        lcv = _get(d, "last-commit-version")
        lct = _get(d, "last-commit-timestamp-ms")
        return cls(str(d.get("etag", "")), str(_get(d, "table-type", "")), str(_get(d, "table-uuid", "")),
                   str(d.get("location", "")), int(_get(d, "created-time", 0) or 0),
                   int(_get(d, "updated-time", 0) or 0), dict(d.get("columns") or {}),
                   tuple(_get(d, "partition-columns") or ()), {k: str(v) for k, v in
                                                               (d.get("properties") or {}).items()},
                   None if lcv is None else int(lcv), None if lct is None else int(lct))


@dataclass(frozen=True)
class LoadTableResult:
    """loadTable / createTable / updateTable: the metadata, the unpublished commits newest first (complete and
    contiguous up to `latest_table_version` for managed tables), and the latest ratified version."""

    metadata: TableMetadata
    commits: tuple[Commit, ...]
    latest_table_version: int | None
    uniform: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LoadTableResult:
        commits = sorted((Commit.from_json(c) for c in d.get("commits") or ()), key=lambda c: -c.version)
        ltv = _get(d, "latest-table-version")
        return cls(TableMetadata.from_json(d.get("metadata") or {}), tuple(commits),
                   None if ltv is None else int(ltv), d.get("uniform"))

    @property
    def etag(self) -> str:
        return self.metadata.etag

    @property
    def table_uuid(self) -> str:
        return self.metadata.table_uuid

    @property
    def location(self) -> str:
        return self.metadata.location


@dataclass(frozen=True)
class StagingTable:
    """createStagingTable: the table id and location the catalog allocated, credentials to write version 0, and
    the protocol / properties the first commit must carry (`None` values: any value, client-chosen)."""

    table_id: str
    table_type: str
    location: str
    storage_credentials: tuple[StorageCredential, ...]
    required_protocol: DeltaProtocol
    required_properties: dict[str, str | None]
    suggested_protocol: dict[str, Any] = field(default_factory=dict)
    suggested_properties: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> StagingTable:
        return cls(str(_get(d, "table-id")), str(_get(d, "table-type", "MANAGED")), str(d.get("location", "")),
                   credentials_from_json(d), DeltaProtocol.from_json(_get(d, "required-protocol") or {}),
                   dict(_get(d, "required-properties") or {}), dict(_get(d, "suggested-protocol") or {}),
                   dict(_get(d, "suggested-properties") or {}))


@dataclass(frozen=True)
class CommitResolution:
    """Whether a proposed commit won its version, from a reload (the spec's "commit recovery").

    `state`:
    - "ratified": the catalog lists our file name at our version - resume with publishing;
    - "not_ratified": the latest ratified version is below ours - re-send the same commit;
    - "lost": another file won our version (`winner`) - rebuild the snapshot and retry at latest+1;
    - "published": the version is ratified and already backfilled, so the catalog no longer lists it - compare
      `_delta_log/<version>.json` with our staged file to tell (the catalog cannot)."""

    state: str
    version: int
    latest_table_version: int | None
    winner: Commit | None = None

    @classmethod
    def of(cls, commit: Commit, commits: tuple[Commit, ...] | list[Commit], latest: int | None) -> CommitResolution:
        if latest is None or latest < commit.version:
            return cls("not_ratified", commit.version, latest)
        found = next((c for c in commits if c.version == commit.version), None)
        if found is None:
            return cls("published", commit.version, latest)
        if found.file_name == commit.file_name:
            return cls("ratified", commit.version, latest, found)
        return cls("lost", commit.version, latest, found)


# ---------------------------------------------------------------------------------------------- updateTable
@dataclass(frozen=True)
class AssertTableUUID:
    uuid: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "assert-table-uuid", "uuid": self.uuid}


@dataclass(frozen=True)
class AssertEtag:
    etag: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "assert-etag", "etag": self.etag}


Requirement = AssertTableUUID | AssertEtag


@dataclass(frozen=True)
class AddCommit:
    """Ratify `commit` (version must be the latest ratified + 1)."""

    commit: Commit
    uniform: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": "add-commit", "commit": self.commit.to_json()}
        if self.uniform is not None:
            out["uniform"] = self.uniform
        return out


@dataclass(frozen=True)
class SetLatestBackfilledVersion:
    """Every version up to `version` is published to `_delta_log/<v>.json`: the catalog may forget them."""

    version: int

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-latest-backfilled-version", "latest-published-version": self.version}


@dataclass(frozen=True)
class SetProperties:
    updates: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-properties", "updates": dict(self.updates)}


@dataclass(frozen=True)
class RemoveProperties:
    removals: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"action": "remove-properties", "removals": list(self.removals)}


@dataclass(frozen=True)
class SetColumns:
    columns: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-columns", "columns": self.columns}


@dataclass(frozen=True)
class SetTableComment:
    comment: str

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-table-comment", "comment": self.comment}


@dataclass(frozen=True)
class SetProtocol:
    protocol: DeltaProtocol

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-protocol", "protocol": self.protocol.to_json()}


@dataclass(frozen=True)
class SetPartitionColumns:
    partition_columns: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-partition-columns", "partition-columns": list(self.partition_columns)}


@dataclass(frozen=True)
class SetDomainMetadata:
    updates: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"action": "set-domain-metadata", "updates": self.updates}


@dataclass(frozen=True)
class RemoveDomainMetadata:
    domains: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"action": "remove-domain-metadata", "domains": list(self.domains)}


Update = (AddCommit | SetLatestBackfilledVersion | SetProperties | RemoveProperties | SetColumns | SetTableComment
          | SetProtocol | SetPartitionColumns | SetDomainMetadata | RemoveDomainMetadata)


# ---------------------------------------------------------------------------------------------- older UC API
@dataclass(frozen=True)
class TableInfo:
    """GET /tables/{full_name} of the UC API (all.yaml): what the preview commits API needs (`table_id`,
    `storage_location`)."""

    name: str
    catalog_name: str
    schema_name: str
    table_type: str
    data_source_format: str
    storage_location: str
    table_id: str
    properties: dict[str, str]

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> TableInfo:
        return cls(str(d.get("name", "")), str(d.get("catalog_name", "")), str(d.get("schema_name", "")),
                   str(d.get("table_type", "")), str(d.get("data_source_format", "")),
                   str(d.get("storage_location", "")), str(d.get("table_id", "")),
                   {k: str(v) for k, v in (d.get("properties") or {}).items()})


@dataclass(frozen=True)
class PreviewCommits:
    """GET /delta/preview/commits: unbackfilled commits in the asked range (sorted newest first here), and the
    latest version the catalog tracks (-1: no commit went through the catalog yet)."""

    commits: tuple[Commit, ...]
    latest_table_version: int

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> PreviewCommits:
        d = d or {}
        commits = sorted((Commit.from_json(c) for c in d.get("commits") or ()), key=lambda c: -c.version)
        return cls(tuple(commits), int(_get(d, "latest-table-version", -1)))
