"""Row tracking (PROTOCOL.md "Row Tracking"): the table properties and the reconstruction of stable row ids.

A row's stable id is its *materialized* row id (a hidden physical column named by
`delta.rowTracking.materializedRowIdColumnName`) when present and not null, else the file's `baseRowId` plus
the row's physical index in the file (before deletion vectors); its commit version likewise falls back to
the file's `defaultRowCommitVersion`. Rewrites keep rows' ids by writing the materialized columns.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DeltaError

ENABLE_KEY = "delta.enableRowTracking"
ROW_ID_COLUMN_KEY = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN_KEY = "delta.rowTracking.materializedRowCommitVersionColumnName"
#: output columns of a read with row tracking (same names on every engine)
ROW_ID = "_row_id"
ROW_COMMIT_VERSION = "_row_commit_version"
METADATA_FIELDS = (pa.field(ROW_ID, pa.int64()), pa.field(ROW_COMMIT_VERSION, pa.int64()))


def row_tracking_enabled(configuration: Mapping[str, str]) -> bool:
    return str(configuration.get(ENABLE_KEY, "false")).strip().lower() == "true"


def materialized_names(configuration: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(materialized row id column, materialized row commit version column) physical names, if assigned."""
    return configuration.get(ROW_ID_COLUMN_KEY), configuration.get(ROW_COMMIT_VERSION_COLUMN_KEY)


def with_materialized_names(configuration: Mapping[str, str]) -> dict[str, str]:
    """`configuration` with the materialized column names assigned when row tracking is enabled.

    The protocol requires both names before `delta.enableRowTracking=true`; delta-spark names them
    `_row-id-col-<uuid>` / `_row-commit-version-col-<uuid>` (never equal to a column name), so do we.
    Names already present are kept (they must never change).
    """
    out = dict(configuration)
    if row_tracking_enabled(out):
        out.setdefault(ROW_ID_COLUMN_KEY, f"_row-id-col-{uuid.uuid4()}")
        out.setdefault(ROW_COMMIT_VERSION_COLUMN_KEY, f"_row-commit-version-col-{uuid.uuid4()}")
    return out


def columns_to_write(protocol: Any, table_configuration: Mapping[str, str], configuration: Mapping[str, str],
                     where: str) -> tuple[str, str] | None:
    """The physical (row id, row commit version) columns a rewrite writes for the rows it carries over, or
    None when row tracking is off (in the table as read or in the commit's `configuration`). Raises
    DeltaError when row tracking is on but the names are missing (`with_materialized_names` sets them)."""
    if not (protocol.has_feature("rowTracking") and row_tracking_enabled(table_configuration)
            and row_tracking_enabled(configuration)):
        return None
    id_col, version_col = materialized_names(configuration)
    if id_col is None or version_col is None:
        raise DeltaError(f"row tracking is enabled on {where} but the materialized column names "
                         f"({ROW_ID_COLUMN_KEY}, {ROW_COMMIT_VERSION_COLUMN_KEY}) are not set")
    return id_col, version_col


def check_readable(protocol: Any, configuration: Mapping[str, str], column_names: list[str], where: str) -> None:
    """Refuse row-tracking reads on tables without row tracking, or whose columns clash with the output."""
    if not protocol.has_feature("rowTracking") or not row_tracking_enabled(configuration):
        raise DeltaError(
            f"cannot read row ids of {where}: the table does not have row tracking enabled "
            f"(set {ENABLE_KEY}=true on a table whose protocol has the rowTracking feature)"
        )
    clash = [n for n in column_names if n.lower() in (ROW_ID, ROW_COMMIT_VERSION)]
    if clash:
        raise DeltaError(f"cannot read row ids of {where}: the table has a column named {clash[0]!r}")


def stable_row_ids(
    physical_index: pa.Array,
    materialized: pa.Array | pa.ChunkedArray | None,
    base_row_id: int | None,
    path: str,
) -> pa.Array:
    """coalesce(materialized row id, baseRowId + physical row index), int64."""
    mat = _as_int64(materialized, len(physical_index))
    if mat is not None and mat.null_count == 0:
        return mat
    if base_row_id is None:
        raise DeltaError(f"data file {path!r} has no baseRowId: its row ids are unknown (row tracking)")
    fresh = pc.add(physical_index.cast(pa.int64()), pa.scalar(int(base_row_id), pa.int64()))
    return fresh if mat is None else pc.coalesce(mat, fresh)


def stable_commit_versions(
    n: int,
    materialized: pa.Array | pa.ChunkedArray | None,
    default_version: int | None,
    path: str,
) -> pa.Array:
    """coalesce(materialized row commit version, defaultRowCommitVersion), int64."""
    mat = _as_int64(materialized, n)
    if mat is not None and mat.null_count == 0:
        return mat
    if default_version is None:
        raise DeltaError(f"data file {path!r} has no defaultRowCommitVersion: its row commit versions are unknown")
    fresh = pa.repeat(pa.scalar(int(default_version), pa.int64()), n)
    return fresh if mat is None else pc.coalesce(mat, fresh)


def physical_row_index(num_rows: int, offset: int = 0) -> pa.Array:
    return pa.array(np.arange(offset, offset + num_rows, dtype=np.int64))


def _as_int64(arr: pa.Array | pa.ChunkedArray | None, n: int) -> pa.Array | None:
    if arr is None:
        return None
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if len(arr) != n:
        raise DeltaError(f"materialized row tracking column has {len(arr)} values for {n} rows")
    return arr.cast(pa.int64()) if arr.type != pa.int64() else arr


__all__ = [
    "columns_to_write",
    "ENABLE_KEY",
    "METADATA_FIELDS",
    "ROW_COMMIT_VERSION",
    "ROW_COMMIT_VERSION_COLUMN_KEY",
    "ROW_ID",
    "ROW_ID_COLUMN_KEY",
    "check_readable",
    "materialized_names",
    "physical_row_index",
    "row_tracking_enabled",
    "stable_commit_versions",
    "stable_row_ids",
    "with_materialized_names",
]
