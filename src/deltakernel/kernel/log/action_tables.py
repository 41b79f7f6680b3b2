"""Arrow shapes of file actions (the file table) and bulk parsing of JSON log lines.

Shared by log replay, checkpoint reading and the change data feed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from ...errors import MissingFileError, ObjectNotFoundError
from ...storage.base import ObjectMeta, Storage
from ..arrow_build import arrow_to_np, bytes_to_arrow, int_scalar, np_to_arrow, null_scalar, str_scalar

DV_TYPE = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
    ]
)

#: columns of the file table (see docs/architecture.md), partition_values is added per table
FILE_COLUMNS: list[tuple[str, str, pa.DataType]] = [
    ("path", "path", pa.string()),
    ("size", "size", pa.int64()),
    ("modification_time", "modificationTime", pa.int64()),
    ("data_change", "dataChange", pa.bool_()),
    ("stats", "stats", pa.string()),
    ("deletion_vector", "deletionVector", DV_TYPE),
    ("base_row_id", "baseRowId", pa.int64()),
    ("default_row_commit_version", "defaultRowCommitVersion", pa.int64()),
]
#: the columns a `remove` has beyond FILE_COLUMNS (same triples: table name, JSON name, type)
REMOVE_EXTRA_COLUMNS = [("deletion_timestamp", "deletionTimestamp", pa.int64())]

#: a log line holding an add / remove / cdc action: these are parsed in bulk, every other line one by one
FILE_ACTION_LINE_RE = r'^\s*\{\s*"(add|remove|cdc)"\s*:'


# ----------------------------------------------------------------------------- helpers
def partition_struct_type(names: Sequence[str]) -> pa.DataType:
    return pa.struct([(n, pa.string()) for n in names])


TAGS_TYPE = pa.map_(pa.string(), pa.string())


def file_schema(partition_names: Sequence[str], extra: Sequence[tuple[str, str, pa.DataType]] = ()) -> pa.Schema:
    """The schema of a file-action table (adds, or removes with REMOVE_EXTRA_COLUMNS) for these partitions."""
    fields = [pa.field(n, t) for n, _, t in FILE_COLUMNS]
    fields.insert(4, pa.field("partition_values", partition_struct_type(partition_names)))
    fields.append(pa.field("tags", TAGS_TYPE))
    fields += [pa.field(n, t) for n, _, t in extra]
    return pa.schema(fields)


def json_action_type(kind: str, partition_names: Sequence[str]) -> pa.DataType:
    """The Arrow type a log line's `add` / `remove` / `cdc` object is parsed into (JSON field names)."""
    cols: list[tuple[str, pa.DataType]] = [(j, t) for _, j, t in FILE_COLUMNS]
    if kind == "remove":
        cols += [(j, t) for _, j, t in REMOVE_EXTRA_COLUMNS]
    if partition_names:
        cols.append(("partitionValues", partition_struct_type(partition_names)))
    return pa.struct(cols)


def conform_file_actions(
    struct: pa.StructArray | pa.ChunkedArray, partition_names: Sequence[str], kind: str
) -> pa.Table:
    """Turn an `add`/`remove` struct column (JSON- or checkpoint-shaped) into file-table columns."""
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks() if struct.num_chunks != 1 else struct.chunk(0)
    n = len(struct)
    stype = struct.type
    names = {stype.field(i).name for i in range(stype.num_fields)}
    extra = REMOVE_EXTRA_COLUMNS if kind == "remove" else []
    cols: dict[str, pa.Array] = {}
    for out_name, json_name, typ in [*FILE_COLUMNS, *extra]:
        if json_name in names:
            arr = struct.field(json_name)
            if out_name == "deletion_vector":
                arr = _conform_dv(arr)
            elif arr.type != typ:
                arr = arr.cast(typ)
            cols[out_name] = arr
        else:
            cols[out_name] = pa.nulls(n, typ)
    tags = struct.field("tags") if "tags" in names else None
    cols["tags"] = tags.cast(TAGS_TYPE) if tags is not None and pa.types.is_map(tags.type) else pa.nulls(n, TAGS_TYPE)
    cols["partition_values"] = _conform_partition_values(
        struct.field("partitionValues") if "partitionValues" in names else None, partition_names, n
    )
    schema = file_schema(partition_names, extra)
    return pa.table([cols[f.name] for f in schema], schema=schema)


def _conform_dv(arr: pa.Array) -> pa.Array:
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), DV_TYPE)
    sub = {arr.type.field(i).name for i in range(arr.type.num_fields)}
    children = [
        arr.field(f.name).cast(f.type) if f.name in sub else pa.nulls(len(arr), f.type) for f in DV_TYPE
    ]
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=arr.is_null())


def _conform_partition_values(arr: pa.Array | None, names: Sequence[str], n: int) -> pa.Array:
    if not names:
        return _empty_struct(n)
    if arr is None or pa.types.is_null(arr.type):
        return pa.StructArray.from_arrays([pa.nulls(n, pa.string()) for _ in names], names=list(names))
    if pa.types.is_map(arr.type):
        children = _map_columns(arr, names, n)
    else:
        sub = {arr.type.field(i).name for i in range(arr.type.num_fields)}
        children = [
            arr.field(name).cast(pa.string()) if name in sub else pa.nulls(n, pa.string()) for name in names
        ]
    return pa.StructArray.from_arrays(children, names=list(names))


def _map_columns(arr: pa.Array, names: Sequence[str], n: int) -> list[pa.Array]:
    """Columns of a map<string,string> by key; one pass over the flat entries (faster than map_lookup)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    offsets = arrow_to_np(arr.offsets)
    start, stop = int(offsets[0]), int(offsets[-1])
    keys, items = arr.keys, arr.items
    if len(keys) != stop - start:  # the child arrays are not sliced with the parent
        keys, items = keys.slice(start, stop - start), items.slice(start, stop - start)
    items = items.cast(pa.string())
    parents = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    out = []
    for name in names:
        hit = arrow_to_np(pc.equal(keys, str_scalar(name, keys.type)))  # map keys are never null
        rows = parents[hit]
        pos = np.full(n, -1, dtype=np.int64)
        pos[rows] = np.nonzero(hit)[0]
        out.append(pc.take(items, np_to_arrow(np.maximum(pos, 0), mask=pos < 0)))
    return out


def _empty_struct(n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.struct([]), n, [None], children=[])


def dv_unique_ids(dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`storageType + pathOrInlineDv [+ '@' + offset]`, empty for files without a DV."""
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks() if dv.num_chunks != 1 else dv.chunk(0)
    if len(dv) == 0:
        return pa.nulls(0, pa.string())
    if dv.null_count == len(dv):  # no file has a DV (appends, tables without DVs): skip five kernels
        return pa.repeat(str_scalar(""), len(dv))  # (pa.array of a list would import pandas)
    empty = str_scalar("")
    base = pc.binary_join_element_wise(dv.field("storageType"), dv.field("pathOrInlineDv"), empty)
    offset = dv.field("offset").cast(pa.string())
    with_offset = pc.binary_join_element_wise(base, offset, str_scalar("@"))
    uid = pc.if_else(pc.is_null(offset), base, with_offset)
    return pc.fill_null(pc.if_else(dv.is_null(), null_scalar(pa.string()), uid), empty)


def file_keys(table: pa.Table) -> pa.Array:
    paths = table.column("path").combine_chunks() if table.num_rows else pa.nulls(0, pa.string())
    return pc.binary_join_element_wise(paths, dv_unique_ids(table.column("deletion_vector")), str_scalar("\x00"))


def read_commit_bytes(storage: Storage, metas: Sequence[ObjectMeta]) -> list[bytes]:
    """Bytes of many small commit files in one bulk storage call (parallel on object stores)."""
    try:
        return storage.read_many([m.key for m in metas])
    except ObjectNotFoundError as e:
        raise MissingFileError(f"commit file disappeared while reading the Delta log of {storage.root_uri}: {e}") from e


def read_commit_joined(storage: Storage, metas: Sequence[ObjectMeta]) -> tuple[bytes | bytearray, list[int]]:
    """Commit files back to back in one buffer, each ending in a newline, and their end offsets."""
    try:
        return storage.read_joined([m.key for m in metas], [m.size for m in metas])
    except ObjectNotFoundError as e:
        raise MissingFileError(f"commit file disappeared while reading the Delta log of {storage.root_uri}: {e}") from e


def split_lines(blobs: Sequence[bytes]) -> tuple[pa.Array, pa.Array]:
    """(lines, index of the blob each line came from), empty lines dropped, vectorized."""
    if not blobs:
        return pa.nulls(0, pa.string()), pa.nulls(0, pa.int32())
    arr = bytes_to_arrow(blobs, pa.large_binary()).cast(pa.large_string())
    parts = pc.split_pattern(arr, "\n")
    parents = pc.list_parent_indices(parts)
    lines = pc.list_flatten(parts)
    lines = pc.ascii_trim_whitespace(lines)  # JSON whitespace is ASCII; cheaper than the utf8 kernel
    keep = pc.greater(pc.utf8_length(lines), int_scalar(0))
    return pc.filter(lines, keep), pc.filter(parents, keep)


_THREADED_JSON_BYTES = 32 << 20


def parse_json_lines(lines: pa.Array, typ: pa.DataType) -> pa.StructArray:
    """JSON lines parsed in one pass by Arrow's reader into `typ` (unknown fields ignored); one row per line."""
    if len(lines) == 0:
        return pa.nulls(0, typ)
    one = pa.LargeListArray.from_arrays(np_to_arrow([0, len(lines)]), lines)
    buf = pc.binary_join(one, str_scalar("\n", lines.type))[0].as_buffer()
    small = buf.size < (1 << 16)  # a commit of a few actions: one block
    max_len = pc.max(pc.binary_length(lines)).as_py() or 0 if not small else 0
    block = buf.size + 16 if small else max(1 << 20, 2 * max_len + 16)
    schema = pa.schema(list(typ))
    table = pajson.read_json(
        pa.BufferReader(buf),
        # threads only pay off for large logs: below that, starting Arrow's pool in a fresh process costs more
        # (and varies more) than it saves (a 5 MB commit: 67-183 ms threaded, 79-85 ms not, two cores)
        read_options=pajson.ReadOptions(block_size=block, use_threads=buf.size >= _THREADED_JSON_BYTES),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    if table.num_rows != len(lines):
        raise ValueError("line count mismatch")
    batch = table.combine_chunks().to_batches()
    if not batch:
        return pa.nulls(0, typ)
    return pa.StructArray.from_arrays(batch[0].columns, fields=list(typ))
