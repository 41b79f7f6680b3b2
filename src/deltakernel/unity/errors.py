"""Typed outcomes of Unity Catalog calls, all under `DeltaError`.

Why typed: a catalog committer reacts differently to each outcome - a 409 is a lost race (rebase and retry, as for
a filesystem conflict), a 429 "too many unpublished commits" means publish first, a 5xx or a lost response after the
request was sent means the commit may or may not be ratified (reload and look, never blindly resend a different
commit). The classes sit under the kernel's catalog outcomes (`CatalogCommitConflictError`,
`CatalogTooManyUnpublishedError`, `CatalogCommitUnknownError`, themselves `CommitConflictError` /
`CommitFailedError` / `CommitStateUnknownError`) and `TableNotFoundError`, so the kernel's `CatalogCommitter` reacts
to a Unity Catalog answer with no translation layer, and code that already handles filesystem commits handles
catalog commits the same way.

Both wire formats are read: the Delta REST API's `{"error": {"message", "type", "code"}}` and the older UC API's
`{"error_code", "message"}` (the preview commits endpoint).
"""

from __future__ import annotations

from typing import Any

from deltakernel.errors import (
    CatalogCommitConflictError,
    CatalogCommitUnknownError,
    CatalogTooManyUnpublishedError,
    DeltaError,
    TableNotFoundError,
)


class UnityCatalogError(DeltaError):
    """A Unity Catalog request failed. `status` is the HTTP status (None: no response), `error_type` the
    server's error type (`NoSuchTableException`, `RESOURCE_EXHAUSTED`, ...), `operation` the API operation."""

    def __init__(self, message: str, *, status: int | None = None, error_type: str | None = None,
                 operation: str | None = None, body: Any = None) -> None:
        self.status = status
        self.error_type = error_type
        self.operation = operation
        self.body = body
        super().__init__(message)


class UCConfigurationError(UnityCatalogError, ValueError):
    """No catalog URL / token could be found in the storage options or the environment, or one is malformed."""


class UCBadRequestError(UnityCatalogError, ValueError):
    """400: the request is malformed or fails server-side validation (e.g. a missing required table feature)."""


class UCUnsupportedTableFormatError(UCBadRequestError):
    """400 UnsupportedTableFormatException: not a Delta table, or one the Delta REST API does not serve yet; the
    spec says to fall back to the older UC table API (`get_table`)."""


class UCAuthenticationError(UnityCatalogError):
    """401: the bearer token is missing, expired or invalid."""


class UCPermissionDeniedError(UnityCatalogError):
    """403: the token's principal may not do this."""


class UCNotFoundError(UnityCatalogError):
    """404: the catalog, schema, table or staging table does not exist (or the endpoint is unknown)."""


class UCTableNotFoundError(UCNotFoundError, TableNotFoundError):
    """404 NoSuchTableException: the table (or staging table) does not exist."""


class UCAlreadyExistsError(UnityCatalogError):
    """409 AlreadyExistsException: a table, schema or catalog of that name already exists."""


class UCCommitConflictError(UnityCatalogError, CatalogCommitConflictError):
    """409 on a commit: another writer ratified this version first (CommitVersionConflictException). Reload the
    table (its log tail), rebase the transaction on the winner and retry with the next version."""


class UCRequirementConflictError(UCCommitConflictError):
    """409 UpdateRequirementConflictException: an `assert-etag` / `assert-table-uuid` requirement failed (the table
    changed, or was dropped and recreated, since it was loaded). Reload and retry."""


class UCTooManyUnpublishedCommitsError(UnityCatalogError, CatalogTooManyUnpublishedError):
    """429 ResourceExhaustedException: the table holds the maximum number of ratified-but-unpublished commits; the
    commit was NOT ratified. Publish (copy `_delta_log/_staged_commits/<file>` to `_delta_log/<version>.json`)
    the commits in `unpublished_commits`, report them with `set-latest-backfilled-version`, then retry.

    `table` is the full name (or the table id on the preview API), `version` the version that was refused;
    `unpublished_commits` (oldest first) and `latest_table_version` come from a reload the client made when it got
    the 429 (None if that reload failed too); `retry_after` is the server's Retry-After in seconds, if any."""

    def __init__(self, message: str, *, table: str | None = None, version: int | None = None,
                 unpublished_commits: list[Any] | None = None, latest_table_version: int | None = None,
                 retry_after: float | None = None, **kw: Any) -> None:
        self.table = table
        self.version = version
        self.unpublished_commits = unpublished_commits
        self.latest_table_version = latest_table_version
        self.retry_after = retry_after
        super().__init__(message, **kw)


class UCRateLimitedError(UnityCatalogError):
    """429 TooManyRequestsException (request rate, not unpublished commits): retry after `retry_after` seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kw)


class UCServerError(UnityCatalogError):
    """5xx on a request that changes nothing (or that the client may safely repeat)."""


class UCNotImplementedError(UCServerError):
    """501: the server does not implement this operation."""


class UCConnectionError(UnityCatalogError):
    """The server could not be reached: nothing was sent (connection refused, connect timeout, DNS)."""


class UCCommitStateUnknownError(UnityCatalogError, CatalogCommitUnknownError):
    """A state-changing request was sent and its outcome is unknown: a 5xx answer (CommitStateUnknownException,
    InternalServerError), or no answer (timeout, connection reset after sending). The change may have been applied.
    Resolve by reloading the table: a commit whose `file-name` shows in the log tail (or whose version is now
    published with that content) was ratified; never ratify the same version with another file."""


def _parse_body(body: Any) -> tuple[str | None, str | None]:
    """(error type, message) from either UC error format."""
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return (str(err["type"]) if err.get("type") else None), (str(err["message"]) if err.get("message")
                                                                    else None)
        if body.get("error_code") or body.get("message"):
            return (str(body["error_code"]) if body.get("error_code") else None), (
                str(body["message"]) if body.get("message") else None)
    return None, None


#: error types that mean a 409 lost a commit race / failed a requirement (both wire formats)
_REQUIREMENT_TYPES = {"UpdateRequirementConflictException"}
_EXHAUSTED_TYPES = {"ResourceExhaustedException", "RESOURCE_EXHAUSTED"}
_TABLE_NOT_FOUND_TYPES = {"NoSuchTableException", "TABLE_DOES_NOT_EXIST", "TABLE_NOT_FOUND"}


def error_for_status(status: int, body: Any, *, operation: str, mutating: bool, commit: bool = False,
                     retry_after: float | None = None) -> UnityCatalogError:
    """The typed error for a non-2xx answer. `mutating`: the request may have changed state (a commit, a table
    update, a create), so a 5xx is "outcome unknown" rather than a plain server error. `commit`: the request
    ratifies a commit, so a 409 is a lost race (the preview API answers a taken version with ALREADY_EXISTS)."""
    error_type, message = _parse_body(body)
    text = f"Unity Catalog {operation}: HTTP {status}" + (f" {error_type}" if error_type else "") + (
        f": {message}" if message else "")
    kw: dict[str, Any] = {"status": status, "error_type": error_type, "operation": operation, "body": body}
    if status == 400:
        if error_type == "UnsupportedTableFormatException":
            return UCUnsupportedTableFormatError(text, **kw)
        return UCBadRequestError(text, **kw)
    if status == 401:
        return UCAuthenticationError(text, **kw)
    if status == 403:
        return UCPermissionDeniedError(text, **kw)
    if status == 404:
        if error_type in _TABLE_NOT_FOUND_TYPES:
            return UCTableNotFoundError(text, **kw)
        return UCNotFoundError(text, **kw)
    if status == 409:
        if error_type in _REQUIREMENT_TYPES:
            return UCRequirementConflictError(text, **kw)
        if commit:
            return UCCommitConflictError(text, **kw)
        return UCAlreadyExistsError(text, **kw)
    if status == 429:
        if error_type in _EXHAUSTED_TYPES or (error_type is None and commit):
            return UCTooManyUnpublishedCommitsError(text, retry_after=retry_after, **kw)
        return UCRateLimitedError(text, retry_after=retry_after, **kw)
    if status == 501:
        return UCNotImplementedError(text, **kw)
    if status >= 500:
        if mutating:
            return UCCommitStateUnknownError(text, **kw)
        return UCServerError(text, **kw)
    return UnityCatalogError(text, **kw)
