"""Per-file columns of the native read plan: partition values and row-tracking ids, one scan for any table.

Partition values. Spark's `_metadata` column survives Projects and Filters over a file scan but not a
Union or a Join, and a Union per partition value makes plans grow with the table. So:
- when every file sits in the Hive-style directories Spark itself parses (`col=value/`, the names and
  values in the log, types whose directory text Spark reads exactly like Delta: string, integers, boolean,
  date - what the kernel and Spark write), the files are read by one scan with `basePath` = the table root
  and Spark's own partition discovery supplies the values (`_metadata` works, the plan is one scan
  whatever the number of partitions; the values were checked against the log on the driver first);
- otherwise (other layouts such as column mapping's random prefixes, timestamp/decimal/binary partition
  columns, absolute paths) one scan is joined with a broadcast table `_metadata.file_path` -> values; the
  plan is still one scan, but `_metadata` is not available on such frames.
Row tracking (`readRowTracking`) uses the same broadcast table for `baseRowId` / `defaultRowCommitVersion`.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..errors import DeltaError
from ..kernel.paths import is_absolute, resolve_file
from ..kernel.scan.partition_values import parse_partition_array, parse_partition_value
from ..kernel.schema.column_mapping import physical_name
from ..kernel.schema.types import PrimitiveType
from ..kernel.snapshot import Snapshot
from ..operations.data_layout import HIVE_DEFAULT_PARTITION, unescape_path_name
from ..storage.local import LocalStorage

DISCOVERY_TYPES = {"string", "byte", "short", "integer", "long", "boolean", "date"}
PATH_COL = "__dk_path"
BASE_ROW_ID = "__dk_base_row_id"
DEFAULT_VERSION = "__dk_default_row_commit_version"


def hive_layout(snapshot: Snapshot, rows: list[dict[str, Any]]) -> bool:
    """True when Spark's partition discovery over these files yields exactly the log's partition values."""
    mode = snapshot.column_mapping_mode
    fields = snapshot.partition_fields
    if not fields or any(not (isinstance(f.type, PrimitiveType) and f.type.name in DISCOVERY_TYPES)
                         for f in fields):
        return False
    names = {physical_name(f, mode).lower(): f for f in fields}
    if len(names) != len(fields):
        return False
    for r in rows:
        path = r["path"]
        if is_absolute(path):
            return False
        dirs = path.split("/")[:-1]
        if len(dirs) != len(fields):
            return False
        pv = r["partition_values"] or {}
        seen = set()
        for d in dirs:
            name, sep, text = d.partition("=")
            f = names.get(unescape_path_name(name).lower()) if sep else None
            if f is None or f.name in seen:
                return False
            seen.add(f.name)
            raw = pv.get(physical_name(f, mode), pv.get(f.name))
            try:
                want = parse_partition_value(raw, f.type)
                got = None if text == HIVE_DEFAULT_PARTITION else parse_partition_value(
                    _spark_text(unescape_path_name(text), f.type), f.type)
            except Exception:
                return False
            if want != got:
                return False
    return True


def _spark_text(text: str, dtype: PrimitiveType) -> str | None:
    """How Spark reads a directory value of this type, as Delta's serialized text."""
    if dtype.name == "string":
        return text or None
    if dtype.name == "boolean":
        low = text.lower()
        if low not in ("true", "false"):
            raise DeltaError(f"not a boolean: {text!r}")
        return low
    if dtype.name in ("byte", "short", "integer", "long"):
        return str(int(text))
    return text


def base_path(storage: Any) -> str:
    """The table root as Spark's `basePath` option (a plain path, not a glob)."""
    if isinstance(storage, LocalStorage):
        return "file://" + storage.full_uri("").rstrip("/")
    root = storage.root_uri.rstrip("/")
    return "s3a://" + root[len("s3://"):] if root.startswith("s3://") else root


def file_table(snapshot: Snapshot, files: pa.Table, partitions: bool, row_tracking: bool) -> pa.Table:
    """`__dk_path` (as `_metadata.file_path`) plus typed partition columns and/or row-tracking columns."""
    from .reader import _spark_compatible, metadata_file_path

    storage = snapshot.storage
    mode = snapshot.column_mapping_mode
    paths = [metadata_file_path(*resolve_file(storage, p)) for p in files.column("path").to_pylist()]
    cols: dict[str, Any] = {PATH_COL: pa.array(paths, pa.string())}
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
    return _spark_compatible(pa.table(cols))


__all__ = ["BASE_ROW_ID", "DEFAULT_VERSION", "PATH_COL", "base_path", "file_table", "hive_layout"]
