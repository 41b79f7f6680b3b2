"""Unity Catalog: the HTTP client of the Delta REST API (and the older preview commits API).

An engine/connector-layer package: it may import storage, kernel and errors; nothing below the engines imports it.
The kernel's catalog committer reaches it through an adapter (see docs/decisions.md, "Unity Catalog client").

- `UnityCatalogClient` (client.py): one method per API operation, typed results (models.py).
- errors.py: typed outcomes under `DeltaError` (409 conflict, 429 too many unpublished commits, outcome unknown).
- credentials.py: vended credentials -> storage options, refreshed before expiry.
- config.py: URL / token from storage options or the environment (`DATABRICKS_HOST` / `DATABRICKS_TOKEN`,
  `UNITY_CATALOG_URL` / `UNITY_CATALOG_TOKEN`).
"""

from deltakernel.unity.client import UnityCatalogClient, parse_table_name
from deltakernel.unity.config import UCConfig, resolve_config
from deltakernel.unity.credentials import VendedCredentials, select_credential, to_storage_options
from deltakernel.unity.errors import (
    UCAlreadyExistsError,
    UCAuthenticationError,
    UCBadRequestError,
    UCCommitConflictError,
    UCCommitStateUnknownError,
    UCConfigurationError,
    UCConnectionError,
    UCNotFoundError,
    UCNotImplementedError,
    UCPermissionDeniedError,
    UCRateLimitedError,
    UCRequirementConflictError,
    UCServerError,
    UCTableNotFoundError,
    UCTooManyUnpublishedCommitsError,
    UCUnsupportedTableFormatError,
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
    RemoveDomainMetadata,
    RemoveProperties,
    SetColumns,
    SetDomainMetadata,
    SetLatestBackfilledVersion,
    SetPartitionColumns,
    SetProperties,
    SetProtocol,
    SetTableComment,
    StagingTable,
    StorageCredential,
    TableInfo,
    TableMetadata,
)

__all__ = [
    "READ", "READ_WRITE", "AddCommit", "AssertEtag", "AssertTableUUID", "CatalogConfig", "Commit", "CommitResolution",
    "DeltaProtocol",
    "LoadTableResult", "PreviewCommits", "RemoveDomainMetadata", "RemoveProperties", "SetColumns",
    "SetDomainMetadata", "SetLatestBackfilledVersion", "SetPartitionColumns", "SetProperties", "SetProtocol",
    "SetTableComment", "StagingTable", "StorageCredential", "TableInfo", "TableMetadata", "UCAlreadyExistsError",
    "UCAuthenticationError", "UCBadRequestError", "UCCommitConflictError", "UCCommitStateUnknownError", "UCConfig",
    "UCConfigurationError", "UCConnectionError", "UCNotFoundError", "UCNotImplementedError",
    "UCPermissionDeniedError", "UCRateLimitedError", "UCRequirementConflictError", "UCServerError",
    "UCTableNotFoundError", "UCTooManyUnpublishedCommitsError", "UCUnsupportedTableFormatError", "UnityCatalogClient",
    "UnityCatalogError",
    "VendedCredentials", "parse_table_name", "resolve_config", "select_credential", "to_storage_options",
]
