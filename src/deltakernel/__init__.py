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
from .operations.convert import convert_to_deltalake
from .operations.properties import CommitProperties, PostCommitHookProperties, Transaction
from .operations.write import write_deltalake
from .operations.writer_properties import BloomFilterProperties, ColumnProperties, WriterProperties
from .query import QueryBuilder
from .schema import DataType, Field, Schema, VariantType
from .table import DeltaTable
from .table_info import Metadata, TableFeatures

__version__ = "0.1.0"

__all__ = [
    "CommitProperties",
    "PostCommitHookProperties",
    "Transaction",
    "WriterProperties",
    "BloomFilterProperties",
    "ColumnProperties",
    "DataType",
    "Field",
    "Schema",
    "VariantType",
    "Metadata",
    "TableFeatures",
    "write_deltalake",
    "convert_to_deltalake",
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
