"""delta-spark's error class names in the errors deltakernel shows Spark users.

Why: delta-spark users (and their tests) match on error classes (`[DELTA_ZORDERING_ON_PARTITION_COLUMN] ...`)
and on the Spark settings its messages name. deltakernel keeps its own exception types (DeltaError
subclasses, so `except DeltaError` and `except ValueError` keep working) and its own explanation, but a
Spark-facing message starts with delta-spark's class in brackets, as Spark prints it, and names Spark's
settings rather than the embedded engine's keyword arguments. The class names are delta-spark's
(`spark/src/main/resources/error/delta-error-classes.json`); only classes users match on are used.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TypeVar

from ...errors import DeltaError, VacuumRetentionError

E = TypeVar("E", bound=BaseException)

RETENTION_CHECK_CONF = "spark.databricks.delta.retentionDurationCheck.enabled"

# delta-spark's classes used by the Spark engine (a name here is one delta-spark raises for the same case)
ZORDERING_ON_PARTITION_COLUMN = "DELTA_ZORDERING_ON_PARTITION_COLUMN"
RESTORE_TIMESTAMP_EARLIER = "DELTA_CANNOT_RESTORE_TIMESTAMP_EARLIER"
RESTORE_TIMESTAMP_GREATER = "DELTA_CANNOT_RESTORE_TIMESTAMP_GREATER"
UNSUPPORTED_FEATURES_IN_CONFIG = "DELTA_UNSUPPORTED_FEATURES_IN_CONFIG"
CLUSTER_BY_WITH_PARTITIONED_BY = "DELTA_CLUSTER_BY_WITH_PARTITIONED_BY"
CLUSTER_BY_INVALID_NUM_COLUMNS = "DELTA_CLUSTER_BY_INVALID_NUM_COLUMNS"
IDENTITY_UNSUPPORTED_DATA_TYPE = "DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE"
TIMESTAMP_INVALID = "DELTA_TIMESTAMP_INVALID"
CANNOT_REPLACE_MISSING_TABLE = "DELTA_CANNOT_REPLACE_MISSING_TABLE"
FEATURE_DROP_UNSUPPORTED_CLIENT = "DELTA_FEATURE_DROP_UNSUPPORTED_CLIENT_FEATURE"
FEATURE_DROP_NOT_PRESENT = "DELTA_FEATURE_DROP_FEATURE_NOT_PRESENT"
FEATURE_DROP_DEPENDENT = "DELTA_FEATURE_DROP_DEPENDENT_FEATURE"
FEATURE_DROP_TRUNCATION_NOT_ALLOWED = "DELTA_FEATURE_DROP_HISTORY_TRUNCATION_NOT_ALLOWED"
FEATURE_DROP_WAIT = "DELTA_FEATURE_DROP_WAIT_FOR_RETENTION_PERIOD"
ALTER_CHANGE_COLUMN_OP = "DELTA_UNSUPPORTED_ALTER_TABLE_CHANGE_COL_OP"
MISSING_DELTA_TABLE = "DELTA_MISSING_DELTA_TABLE"
TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION = "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION"
TIMESTAMP_GREATER_THAN_COMMIT = "DELTA_TIMESTAMP_GREATER_THAN_COMMIT"

MAX_CLUSTERING_COLUMNS = 4


def classed(error_class: str, message: str) -> str:
    """`message` with delta-spark's error class in front, as Spark prints an error with a class."""
    return f"[{error_class}] {message}"


def error_class(exc: BaseException) -> str | None:
    """The delta-spark class a deltakernel message starts with, or None."""
    text = str(exc)
    if text.startswith("[") and "]" in text:
        name = text[1 : text.index("]")]
        if name.startswith("DELTA_"):
            return name
    return None


def reworded(exc: E, message: str) -> E:
    """An exception of `exc`'s own type carrying `message` (constructors with other signatures included)."""
    try:
        new = type(exc)(message)
        if str(new) == message:
            return new
    except Exception:
        pass
    new = type(exc).__new__(type(exc))
    Exception.__init__(new, message)
    return new


def vacuum_retention_message(hours: float | None, table_hours: float) -> str:
    """delta-spark's VACUUM retention check wording (an IllegalArgumentException without a class there)."""
    shown = f"{hours:g} hours" if hours is not None else "the given retention"
    return (
        f"Are you sure you would like to vacuum files with such a low retention period ({shown})? If you "
        "have writers that are currently writing to this table, there is a risk that you may corrupt the "
        "state of your Delta table. If you are certain that there are no operations being performed on this "
        "table, such as insert/upsert/delete/optimize, then you may turn off this check by setting: "
        f"{RETENTION_CHECK_CONF} = false. If you are not sure, please use a value not less than "
        f'"{table_hours:g} hours".'
    )


@contextlib.contextmanager
def spark_vacuum_errors(hours: float | None, table_hours: float) -> Iterator[None]:
    """Around the embedded VACUUM on Spark: the retention check's message as delta-spark words it (Spark's
    setting, not `enforce_retention_duration=False`); the exception type stays VacuumRetentionError."""
    try:
        yield
    except VacuumRetentionError as e:
        if hours is not None and hours < 0:
            raise
        raise reworded(e, vacuum_retention_message(hours, table_hours)) from e


def with_class(exc: DeltaError, name: str) -> DeltaError:
    """`exc` (its own type) with `[name]` in front of its message, unless it already has a class."""
    if error_class(exc) is not None:
        return exc
    return reworded(exc, classed(name, str(exc)))


__all__ = [
    "ALTER_CHANGE_COLUMN_OP",
    "CANNOT_REPLACE_MISSING_TABLE",
    "CLUSTER_BY_INVALID_NUM_COLUMNS",
    "CLUSTER_BY_WITH_PARTITIONED_BY",
    "FEATURE_DROP_DEPENDENT",
    "FEATURE_DROP_NOT_PRESENT",
    "FEATURE_DROP_TRUNCATION_NOT_ALLOWED",
    "FEATURE_DROP_UNSUPPORTED_CLIENT",
    "FEATURE_DROP_WAIT",
    "IDENTITY_UNSUPPORTED_DATA_TYPE",
    "MAX_CLUSTERING_COLUMNS",
    "MISSING_DELTA_TABLE",
    "RESTORE_TIMESTAMP_EARLIER",
    "RESTORE_TIMESTAMP_GREATER",
    "RETENTION_CHECK_CONF",
    "TIMESTAMP_INVALID",
    "UNSUPPORTED_FEATURES_IN_CONFIG",
    "ZORDERING_ON_PARTITION_COLUMN",
    "classed",
    "error_class",
    "reworded",
    "spark_vacuum_errors",
    "vacuum_retention_message",
    "with_class",
]
