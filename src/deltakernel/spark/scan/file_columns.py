"""Per-file columns of Spark DML scans: partition values and row-tracking bases keyed by the file's URI.

A DML scan (`dml/frame.py`) joins its rows with this small table on `_metadata.file_path` (or looks the
integer columns up in a map) to get each row's typed partition values, its file id and, with row tracking,
`baseRowId` / `defaultRowCommitVersion`. The key is `scan/paths.file_uris`: the same URI the Delta file index
gives Spark for the file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ...kernel.scan.partition_values import parse_partition_array
from ...kernel.schema.column_mapping import physical_name
from ...kernel.snapshot import Snapshot
from ..common.schema import spark_compatible

PATH_COL = "__dk_path"
BASE_ROW_ID = "__dk_base_row_id"
DEFAULT_VERSION = "__dk_default_row_commit_version"


def file_table(snapshot: Snapshot, files: pa.Table, partitions: bool, row_tracking: bool) -> pa.Table:
    """`__dk_path` (as `_metadata.file_path`) plus typed partition columns and/or row-tracking columns."""
    from .paths import file_uris

    mode = snapshot.column_mapping_mode
    cols: dict[str, Any] = {PATH_COL: file_uris(snapshot.storage, files.column("path"))}
    if partitions:
        pv = files.column("partition_values").combine_chunks()
        names = [f.name for f in pv.type] if pa.types.is_struct(pv.type) else []
        for f in snapshot.partition_fields:
            phys = physical_name(f, mode)
            name = phys if phys in names else f.name
            raw = pv.field(name) if name in names else pa.nulls(len(files), pa.string())
            cols[f.name] = parse_partition_array(raw, f.type)
    if row_tracking:
        cols[BASE_ROW_ID] = files.column("base_row_id").cast(pa.int64())
        cols[DEFAULT_VERSION] = files.column("default_row_commit_version").cast(pa.int64())
    return spark_compatible(pa.table(cols))


__all__ = ["BASE_ROW_ID", "DEFAULT_VERSION", "PATH_COL", "file_table"]
