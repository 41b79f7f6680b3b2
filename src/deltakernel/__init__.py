"""deltakernel: Delta Lake implemented in Python."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names
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

if TYPE_CHECKING:
    from .operations.commit_options import CommitProperties, PostCommitHookProperties, Transaction
    from .operations.create.convert import convert_to_deltalake
    from .operations.files.writer_options import BloomFilterProperties, ColumnProperties, WriterProperties
    from .operations.write.api import write_deltalake
    from .query import QueryBuilder
    from .schema import DataType, Field, Schema, VariantType
    from .table import DeltaTable
    from .table_info import Metadata, TableFeatures

# Public names load on first use (py-polars' lazy imports): a process that needs only part of the package
# (Spark's Python workers, a streaming source's driver-side process) does not import all of it.
_LAZY = {
    "convert_to_deltalake": ".operations.create.convert",
    "CommitProperties": ".operations.commit_options",
    "PostCommitHookProperties": ".operations.commit_options",
    "Transaction": ".operations.commit_options",
    "write_deltalake": ".operations.write.api",
    "BloomFilterProperties": ".operations.files.writer_options",
    "ColumnProperties": ".operations.files.writer_options",
    "WriterProperties": ".operations.files.writer_options",
    "QueryBuilder": ".query",
    "DataType": ".schema",
    "Field": ".schema",
    "Schema": ".schema",
    "VariantType": ".schema",
    "DeltaTable": ".table",
    "Metadata": ".table_info",
    "TableFeatures": ".table_info",
}


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


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
