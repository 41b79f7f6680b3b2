"""The JSON shapes of the file actions and commitInfo a writer builds (PROTOCOL.md "Add File and Remove File",
"Add CDC File", "Commit Provenance Information"), as TypedDicts.

Writers keep actions as plain dicts (what `json.dumps` writes into the commit); these types only let mypy
check the field names and value types on the write path. Keys a protocol action may omit are in the
`total=False` half; the required ones in the base class (Python 3.10 has no `NotRequired`).
Replay never builds these: it reads file actions into Arrow tables (`action_tables.py`).
"""

from __future__ import annotations

from typing import Any, TypedDict

#: partition column (physical name) -> serialized value, None for a null partition value
PartitionValues = dict[str, str | None]


class _AddRequired(TypedDict):
    path: str
    partitionValues: PartitionValues
    size: int
    modificationTime: int
    dataChange: bool


class AddAction(_AddRequired, total=False):
    """The `add` action: a data file that becomes part of the table."""

    stats: str
    tags: dict[str, str]
    #: the `deletionVector` descriptor (`DeletionVectorDescriptor.to_dict()`)
    deletionVector: dict[str, Any]
    baseRowId: int
    defaultRowCommitVersion: int
    clusteringProvider: str


class _RemoveRequired(TypedDict):
    path: str
    dataChange: bool


class RemoveAction(_RemoveRequired, total=False):
    """The `remove` action: a logical file leaves the table (a tombstone until VACUUM)."""

    deletionTimestamp: int
    extendedFileMetadata: bool
    partitionValues: PartitionValues
    size: int
    stats: str
    tags: dict[str, str]
    deletionVector: dict[str, Any]
    baseRowId: int
    defaultRowCommitVersion: int


class _CdcRequired(TypedDict):
    path: str
    partitionValues: PartitionValues
    size: int
    dataChange: bool


class CdcAction(_CdcRequired, total=False):
    """The `cdc` action: a `_change_data` file holding the commit's change rows."""

    tags: dict[str, str]


class CommitInfoAction(TypedDict, total=False):
    """The fields of `commitInfo` the engine writes (the user's `custom_metadata` keys come on top, untyped).

    Not to be confused with `actions.CommitInfo`, a commit's info read back from the log.
    """

    timestamp: int
    inCommitTimestamp: int
    operation: str
    operationParameters: dict[str, str]
    readVersion: int
    isolationLevel: str
    isBlindAppend: bool
    operationMetrics: dict[str, str]
    engineInfo: str
    txnId: str
    userMetadata: str
    tags: dict[str, str]


__all__ = ["AddAction", "CdcAction", "CommitInfoAction", "PartitionValues", "RemoveAction"]
