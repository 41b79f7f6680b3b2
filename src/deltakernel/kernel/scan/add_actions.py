"""The live add actions as a table shaped like deltalake's `get_add_actions()` (stats parsed, typed)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..schema.types import StructType
from ..stats.parse import FileStats, parse_stats, stats_from_struct
from .partition_values import partition_columns_table

Path = tuple[str, ...]


def _nest(values: dict[Path, pa.Array], n: int) -> pa.Array:
    """Rebuild a struct column from leaf paths (min.a, min.s.q -> struct<a, s: struct<q>>)."""
    tree: dict[str, Any] = {}
    for path, arr in values.items():
        node = tree
        for p in path[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                break
        else:
            node[path[-1]] = arr

    def build(node: dict[str, Any]) -> pa.Array:
        names = list(node)
        children = [build(v) if isinstance(v, dict) else v for v in node.values()]
        if not names:
            return pa.array([{}] * n, pa.struct([]))
        return pa.StructArray.from_arrays(children, names=names)

    return build(tree)


def _stats(snapshot: Any, files: pa.Table) -> FileStats:
    schema: StructType = snapshot.schema
    data_schema = StructType(tuple(f for f in schema.fields if f.name not in snapshot.partition_columns))
    stats = parse_stats(files.column("stats"), data_schema, snapshot.column_mapping_mode)
    if "stats_parsed" in files.column_names:
        parsed = stats_from_struct(files.column("stats_parsed"), data_schema, snapshot.column_mapping_mode)
        stats = stats.coalesce(parsed)
    return stats


def add_actions_table(snapshot: Any, flatten: bool = False) -> pa.Table:
    files: pa.Table = snapshot.files
    n = files.num_rows
    cols: dict[str, pa.Array | pa.ChunkedArray] = {
        "path": files.column("path"),
        "size_bytes": files.column("size"),
        "modification_time": files.column("modification_time"),
        "data_change": files.column("data_change"),
    }
    stats = _stats(snapshot, files)
    cols["num_records"] = stats.num_records
    groups = {"null_count": stats.null_count, "min": stats.min_values, "max": stats.max_values}
    if flatten:
        for prefix, values in groups.items():
            for path, arr in values.items():
                cols[".".join((prefix, *path))] = arr
    else:
        for prefix, values in groups.items():
            cols[prefix] = _nest(values, n)
    if snapshot.partition_columns:
        typed = partition_columns_table(files.column("partition_values"), snapshot.partition_fields,
                                        snapshot.column_mapping_mode)
        if flatten:
            for name, arr in typed.items():
                cols[f"partition.{name}"] = arr
        else:
            cols["partition"] = pa.StructArray.from_arrays(list(typed.values()), names=list(typed))
    dv = files.column("deletion_vector")
    if dv.null_count != len(dv):
        cols["deletion_vector"] = dv
    table = pa.table(cols)
    return table
