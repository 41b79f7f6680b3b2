"""One error root for everything deltakernel raises.

Every failure a user can meet is a subclass of :class:`DeltaError`, so ``except DeltaError`` catches
them all; the subclasses exist so callers (and the Spark connector) can react to the specific case.
"""

from __future__ import annotations


class DeltaError(Exception):
    """Root of every deltakernel error."""


# ----------------------------------------------------------------------------- deltalake's names
# `deltalake.exceptions` raises four classes; ours are placed under them so `except <deltalake name>`
# in ported code catches the same failures (see docs/decisions.md "deltalake's exception names").
class DeltaProtocolError(DeltaError):
    """The table or the data violates the Delta protocol: corrupt log, unsupported feature, constraint."""


class CommitFailedError(DeltaError):
    """A commit did not land (a concurrent commit conflicts); the table is unchanged by this transaction."""


class SchemaMismatchError(DeltaError):
    """A schema does not match: data vs table, or a schema that cannot be parsed or converted."""


# ----------------------------------------------------------------------------- table / log
class TableNotFoundError(DeltaError):
    """The URI holds no Delta table (no `_delta_log` with a commit or checkpoint)."""


class VersionNotFoundError(DeltaError):
    """A requested version or timestamp is not available in the log."""


class InvalidTimestampError(VersionNotFoundError, ValueError):
    """A time-travel timestamp that cannot be parsed (deltalake raises ValueError)."""


class CorruptLogError(DeltaProtocolError):
    """The transaction log is damaged: unparsable JSON, a gap in versions, a missing checkpoint part."""


class LogTruncatedError(CorruptLogError, VersionNotFoundError):
    """Early commits were cleaned up and no checkpoint covers them: the version cannot be rebuilt."""


class ChangeDataFeedNotEnabledError(DeltaError):
    """A change data feed read covers versions where `delta.enableChangeDataFeed` was off."""


class MissingFileError(DeltaError):
    """A file the log references (data file, deletion vector, sidecar) does not exist."""


class InvalidPathError(DeltaError):
    """A path in the log points outside the table's storage (`..`, another bucket, ...)."""


class DeletionVectorError(DeltaError):
    """A deletion vector is malformed: bad magic, size or checksum."""


class SchemaError(SchemaMismatchError):
    """A schema cannot be parsed or converted, or data does not match it."""


class InvalidFilterError(DeltaError, ValueError):
    """A filter or predicate is malformed or names an unknown column."""


class InvalidArgumentTypeError(DeltaError, TypeError):
    """An argument has the wrong Python type (deltalake raises TypeError there, e.g. non-SQL `updates` values)."""


class InvalidUpdatesError(InvalidArgumentTypeError, InvalidFilterError):
    """`update(updates=...)` with a value that is not SQL text: deltalake's TypeError, and a ValueError as before."""


class InvalidNewValueError(InvalidArgumentTypeError, SchemaError):
    """`update(new_values=...)` with a value of an unsupported Python type: deltalake's TypeError, and a
    SchemaError as before."""


class UnsupportedFeatureError(DeltaProtocolError):
    """The table needs a protocol feature this version of deltakernel does not implement."""

    def __init__(self, feature: str, message: str | None = None) -> None:
        self.feature = feature
        super().__init__(message or f"unsupported Delta table feature: {feature!r}")


# ----------------------------------------------------------------------------- storage
class StorageError(DeltaError):
    """An I/O failure in the storage layer."""


class ObjectNotFoundError(StorageError, MissingFileError):
    """The object does not exist."""


class FileAlreadyExistsError(StorageError):
    """A put-if-absent found the object already there (the commit race was lost)."""


# ----------------------------------------------------------------------------- commits
class CommitConflictError(CommitFailedError):
    """A concurrent commit conflicts with this transaction (mirrors Spark's exceptions)."""


class ConcurrentAppendError(CommitConflictError):
    """Files were added to data this transaction read."""


class ConcurrentDeleteReadError(CommitConflictError):
    """A file this transaction read was deleted concurrently."""


class ConcurrentDeleteDeleteError(CommitConflictError):
    """A file this transaction deletes was deleted concurrently."""


class MetadataChangedError(CommitConflictError):
    """The table's metadata changed concurrently."""


class ProtocolChangedError(CommitConflictError):
    """The table's protocol changed concurrently."""


class ConcurrentTransactionError(CommitConflictError):
    """The same application transaction (txn appId) committed concurrently."""


class InvalidCommitMetadataError(DeltaError, ValueError):
    """Commit metadata (`CommitProperties.custom_metadata`) has a non-string key or a non-JSON value."""


class CommitStateUnknownError(DeltaError):
    """The outcome of a commit put could not be determined."""


class CatalogManagedTableError(UnsupportedFeatureError):
    """A catalog-managed table (`catalogManaged`) used without its catalog: read by path without the catalog's
    log tail, or committed by the filesystem instead of the catalog's committer (PROTOCOL.md "Catalog-managed
    tables"). An UnsupportedFeatureError, as the same access was refused before the feature was supported."""


class CatalogCommitConflictError(CommitConflictError):
    """The catalog ratified another commit at the version this commit asked for (Unity Catalog's 409). The
    catalog committer reads the winner from the catalog's log tail and rebases, as for a filesystem race."""


class CatalogTooManyUnpublishedError(CommitFailedError):
    """The catalog refuses to ratify more commits until earlier ones are published (Unity Catalog's 429)."""


class CatalogCommitUnknownError(CommitStateUnknownError):
    """A ratify request's outcome is unknown (lost response, timeout, 5xx): the committer reloads the catalog's
    log tail to learn whether the commit was ratified, and never ratifies it twice."""


class ConstraintViolationError(DeltaProtocolError):
    """Data violates a table constraint (CHECK, NOT NULL, invariant, generated column)."""


class VacuumRetentionError(DeltaError, ValueError):
    """VACUUM was asked for a retention shorter than the table's `delta.deletedFileRetentionDuration`."""


class RestoreError(DeltaError, ValueError):
    """The restore target is not an earlier version of the table."""


class FeatureDropWaitError(DeltaError):
    """The feature is gone from the current state but still in the history: truncate it (after the wait)."""

    def __init__(self, feature: str, message: str) -> None:
        self.feature = feature
        super().__init__(message)


class ForkedProcessError(DeltaError):
    """A native library's runtime (obstore's, DataFusion's) was started before this process was forked from its
    parent, and a fresh instance could not be loaded here (or an object made before the fork was used)."""


class InvalidArgumentValueError(DeltaError, ValueError):
    """An argument's value is out of its range (e.g. a target file size of 0): deltalake raises ValueError for
    these, so ported code that catches ValueError keeps working."""


class InvalidPredicateTypeError(InvalidArgumentTypeError, InvalidFilterError):
    """A DML predicate that is not a string: deltalake raises TypeError; it stays an InvalidFilterError (and a
    ValueError) for code written against deltakernel's earlier type."""
