"""Every HTTP answer maps to one typed outcome, in both error formats (Delta REST API and the older UC API)."""

from __future__ import annotations

import pytest

from deltakernel.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    DeltaError,
    TableNotFoundError,
)
from deltakernel.unity import (
    UCAlreadyExistsError,
    UCAuthenticationError,
    UCBadRequestError,
    UCCommitConflictError,
    UCCommitStateUnknownError,
    UCNotFoundError,
    UCNotImplementedError,
    UCPermissionDeniedError,
    UCRateLimitedError,
    UCRequirementConflictError,
    UCServerError,
    UCTableNotFoundError,
    UCTooManyUnpublishedCommitsError,
    UCUnsupportedTableFormatError,
)
from deltakernel.unity.errors import error_for_status


def _delta(status: int, etype: str) -> dict:
    return {"error": {"message": "m", "type": etype, "code": status}}


def _old(etype: str) -> dict:
    return {"error_code": etype, "message": "m"}


@pytest.mark.parametrize(("status", "body", "mutating", "commit", "cls"), [
    (400, _delta(400, "InvalidParameterValueException"), True, True, UCBadRequestError),
    (400, _delta(400, "UnsupportedTableFormatException"), False, False, UCUnsupportedTableFormatError),
    (401, _delta(401, "NotAuthorizedException"), False, False, UCAuthenticationError),
    (403, _delta(403, "PermissionDeniedException"), True, True, UCPermissionDeniedError),
    (404, _delta(404, "NoSuchTableException"), False, False, UCTableNotFoundError),
    (404, _old("TABLE_DOES_NOT_EXIST"), False, False, UCTableNotFoundError),
    (404, _delta(404, "NoSuchSchemaException"), False, False, UCNotFoundError),
    (409, _delta(409, "AlreadyExistsException"), True, False, UCAlreadyExistsError),
    (409, _delta(409, "CommitVersionConflictException"), True, True, UCCommitConflictError),
    (409, _old("ALREADY_EXISTS"), True, True, UCCommitConflictError),
    (409, _delta(409, "UpdateRequirementConflictException"), True, False, UCRequirementConflictError),
    (429, _delta(429, "ResourceExhaustedException"), True, True, UCTooManyUnpublishedCommitsError),
    (429, _old("RESOURCE_EXHAUSTED"), True, True, UCTooManyUnpublishedCommitsError),
    (429, _delta(429, "TooManyRequestsException"), False, False, UCRateLimitedError),
    (500, _delta(500, "CommitStateUnknownException"), True, True, UCCommitStateUnknownError),
    (503, None, True, False, UCCommitStateUnknownError),
    (500, _delta(500, "InternalServerErrorException"), False, False, UCServerError),
    (501, _delta(501, "NotImplementedException"), False, False, UCNotImplementedError),
])
def test_status_and_type_to_class(status, body, mutating, commit, cls) -> None:
    err = error_for_status(status, body, operation="op", mutating=mutating, commit=commit)
    assert type(err) is cls
    assert isinstance(err, DeltaError) and err.status == status and err.operation == "op"


def test_the_classes_sit_under_deltakernels_roots() -> None:
    assert issubclass(UCCommitConflictError, CommitConflictError)
    assert issubclass(UCRequirementConflictError, CommitConflictError)
    assert issubclass(UCTooManyUnpublishedCommitsError, CommitFailedError)
    assert not issubclass(UCTooManyUnpublishedCommitsError, CommitConflictError)
    assert issubclass(UCCommitStateUnknownError, CommitStateUnknownError)
    assert issubclass(UCTableNotFoundError, TableNotFoundError)
    assert not issubclass(UCServerError, CommitStateUnknownError)


def test_message_names_operation_status_type_and_server_message() -> None:
    err = error_for_status(409, _delta(409, "CommitVersionConflictException"), operation="updateTable",
                           mutating=True, commit=True)
    assert str(err) == "Unity Catalog updateTable: HTTP 409 CommitVersionConflictException: m"
    assert "HTTP 502" in str(error_for_status(502, {"message": "bad gateway"}, operation="x", mutating=False))
