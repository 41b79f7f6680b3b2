"""deltakernel: Delta Lake implemented in Python."""

from __future__ import annotations

from .errors import (
    CommitConflictError,
    CorruptLogError,
    DeltaError,
    InvalidPathError,
    MissingFileError,
    TableNotFoundError,
    UnsupportedFeatureError,
    VersionNotFoundError,
)
from .operations.properties import CommitProperties, PostCommitHookProperties, Transaction
from .operations.write import write_deltalake
from .operations.writer_properties import WriterProperties
from .query import QueryBuilder
from .table import DeltaTable

__version__ = "0.1.0"

__all__ = [
    "CommitProperties",
    "PostCommitHookProperties",
    "Transaction",
    "WriterProperties",
    "write_deltalake",
    "DeltaTable",
    "QueryBuilder",
    "DeltaError",
    "CommitConflictError",
    "CorruptLogError",
    "InvalidPathError",
    "MissingFileError",
    "TableNotFoundError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
    "__version__",
]
