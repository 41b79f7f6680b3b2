"""deltalake's `deltalake.exceptions` names, for code ported by changing the import.

Each is a class of `deltakernel.errors` (one hierarchy): deltakernel's specific errors subclass them,
e.g. `ConcurrentAppendError` is a `CommitFailedError`, `ConstraintViolationError` a `DeltaProtocolError`.
"""

from __future__ import annotations

from .errors import CommitFailedError, DeltaError, DeltaProtocolError, SchemaMismatchError, TableNotFoundError

__all__ = ["CommitFailedError", "DeltaError", "DeltaProtocolError", "SchemaMismatchError", "TableNotFoundError"]
