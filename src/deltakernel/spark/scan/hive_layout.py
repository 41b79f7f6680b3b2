"""Whether Spark's own partition discovery reads a Delta table's partition values exactly (public-API plan).

Spark's `_metadata` column survives Projects and Filters over a file scan but not a Join, and a literal map of
per-file values grows the plan with the table. When every file sits in the Hive-style directories Spark parses
(`col=value/`: the names and values in the log, types whose directory text Spark reads as Delta does - string,
integers, boolean, date: what deltakernel, delta-rs and delta-spark write without column mapping), the public
plan reads the files with `basePath` = the table root and lets Spark supply the values: one scan, `_metadata`
intact, whatever the number of partitions. The check runs once per distinct (directory, partition values)
pair - per partition, not per file.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError
from ...kernel.scan.partition_values import parse_partition_value
from ...kernel.schema.column_mapping import physical_name
from ...kernel.schema.types import PrimitiveType
from ...kernel.snapshot import Snapshot
from ...operations.files.layout import HIVE_DEFAULT_PARTITION, unescape_path_name
from ...storage.local import LocalStorage

DISCOVERY_TYPES = {"string", "byte", "short", "integer", "long", "boolean", "date"}


def hive_discoverable(snapshot: Snapshot, files: pa.Table) -> bool:
    """True when Spark's partition discovery over `files` yields exactly the log's partition values."""
    mode = snapshot.column_mapping_mode
    fields = snapshot.partition_fields
    if not fields or files.num_rows == 0 or any(
            not (isinstance(f.type, PrimitiveType) and f.type.name in DISCOVERY_TYPES) for f in fields):
        return False
    names = {physical_name(f, mode).lower(): f for f in fields}
    if len(names) != len(fields):
        return False
    paths = files.column("path").combine_chunks()
    if pc.any(pc.match_substring_regex(paths, r"^[A-Za-z][A-Za-z0-9+.\-]*:|^/")).as_py():
        return False  # absolute paths (shallow clones)
    dirs = pc.replace_substring_regex(paths, r"/?[^/]*$", "")
    pv = files.column("partition_values").combine_chunks()
    pv_names = [f.name for f in pv.type] if pa.types.is_struct(pv.type) else []
    cols: dict[str, Any] = {"dir": dirs}
    for i, f in enumerate(fields):
        key = physical_name(f, mode) if physical_name(f, mode) in pv_names else f.name
        cols[f"v{i}"] = pv.field(key) if key in pv_names else pa.nulls(len(paths), pa.string())
    distinct = pa.table(cols).group_by(list(cols)).aggregate([])
    if len(pc.unique(distinct.column("dir"))) != distinct.num_rows:
        return False  # one directory holding files of different partitions
    for row in distinct.to_pylist():
        segments = row["dir"].split("/") if row["dir"] else []
        if len(segments) != len(fields):
            return False
        seen = set()
        for seg in segments:
            name, sep, text = seg.partition("=")
            f = names.get(unescape_path_name(name).lower()) if sep else None
            if f is None or f.name in seen:
                return False
            seen.add(f.name)
            try:
                want = parse_partition_value(row[f"v{fields.index(f)}"], f.type)
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


__all__ = ["DISCOVERY_TYPES", "base_path", "hive_discoverable"]
