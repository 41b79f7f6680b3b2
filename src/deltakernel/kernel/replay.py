"""Log replay, vectorized with Arrow (PROTOCOL.md "Action Reconciliation").

Commit files are split into lines with Arrow compute; the bulk file actions (add/remove/cdc) are parsed
in one `pyarrow.json` call with an explicit schema, only the rare actions (protocol, metaData, txn,
domainMetadata, commitInfo, ...) go through `json.loads`. Checkpoints are read as Parquet column
projections. Reconciliation keys each file by (path, deletion-vector unique id); the newest action wins,
computed with a group-by rather than a Python loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson
import pyarrow.parquet as pq

from ..errors import CorruptLogError, DeltaError, MissingFileError, ObjectNotFoundError
from ..storage.base import ObjectMeta, Storage
from .actions import CommitInfo, DomainMetadata, Metadata, Protocol, Txn
from .log_segment import LOG_DIR, Checkpoint, LogSegment, version_of

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
_REMOVE_EXTRA = [("deletion_timestamp", "deletionTimestamp", pa.int64())]

_BULK_RE = r'^\s*\{\s*"(add|remove|cdc)"\s*:'


@dataclass
class ReplayResult:
    protocol: Protocol
    metadata: Metadata
    files: pa.Table  # the live add actions (file table)
    tombstones: pa.Table  # remove actions still in the log state
    txns: dict[str, Txn] = field(default_factory=dict)
    domain_metadata: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)


# ----------------------------------------------------------------------------- helpers
def partition_struct_type(names: Sequence[str]) -> pa.DataType:
    return pa.struct([(n, pa.string()) for n in names])


TAGS_TYPE = pa.map_(pa.string(), pa.string())


def _file_schema(partition_names: Sequence[str], extra: Sequence[tuple[str, str, pa.DataType]] = ()) -> pa.Schema:
    fields = [pa.field(n, t) for n, _, t in FILE_COLUMNS]
    fields.insert(4, pa.field("partition_values", partition_struct_type(partition_names)))
    fields.append(pa.field("tags", TAGS_TYPE))
    fields += [pa.field(n, t) for n, _, t in extra]
    return pa.schema(fields)


def _json_action_type(kind: str, partition_names: Sequence[str]) -> pa.DataType:
    cols: list[tuple[str, pa.DataType]] = [(j, t) for _, j, t in FILE_COLUMNS]
    if kind == "remove":
        cols += [(j, t) for _, j, t in _REMOVE_EXTRA]
    if partition_names:
        cols.append(("partitionValues", partition_struct_type(partition_names)))
    return pa.struct(cols)


def _conform_file_actions(
    struct: pa.StructArray | pa.ChunkedArray, partition_names: Sequence[str], kind: str
) -> pa.Table:
    """Turn an `add`/`remove` struct column (JSON- or checkpoint-shaped) into file-table columns."""
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks() if struct.num_chunks != 1 else struct.chunk(0)
    n = len(struct)
    stype = struct.type
    names = {stype.field(i).name for i in range(stype.num_fields)}
    extra = _REMOVE_EXTRA if kind == "remove" else []
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
    schema = _file_schema(partition_names, extra)
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
    offsets = arr.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    keys, items = arr.keys, arr.items
    if len(keys) != stop - start:  # the child arrays are not sliced with the parent
        keys, items = keys.slice(start, stop - start), items.slice(start, stop - start)
    items = items.cast(pa.string())
    parents = np.repeat(np.arange(n, dtype=np.int64), np.diff(offsets))
    out = []
    for name in names:
        hit = pc.equal(keys, pa.scalar(name, keys.type)).to_numpy(zero_copy_only=False)
        rows = parents[hit]
        pos = np.full(n, -1, dtype=np.int64)
        pos[rows] = np.nonzero(hit)[0]
        out.append(pc.take(items, pa.array(pos, mask=pos < 0)))
    return out


def _empty_struct(n: int) -> pa.Array:
    return pa.array([{}] * n, type=pa.struct([]))


def dv_unique_ids(dv: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`storageType + pathOrInlineDv [+ '@' + offset]`, empty for files without a DV."""
    if isinstance(dv, pa.ChunkedArray):
        dv = dv.combine_chunks() if dv.num_chunks != 1 else dv.chunk(0)
    if len(dv) == 0:
        return pa.array([], pa.string())
    base = pc.binary_join_element_wise(dv.field("storageType"), dv.field("pathOrInlineDv"), "")
    offset = dv.field("offset").cast(pa.string())
    with_offset = pc.binary_join_element_wise(base, offset, "@")
    uid = pc.if_else(pc.is_null(offset), base, with_offset)
    return pc.fill_null(pc.if_else(dv.is_null(), pa.scalar(None, pa.string()), uid), "")


def file_keys(table: pa.Table) -> pa.Array:
    paths = table.column("path").combine_chunks() if table.num_rows else pa.array([], pa.string())
    return pc.binary_join_element_wise(paths, dv_unique_ids(table.column("deletion_vector")), "\x00")


# ----------------------------------------------------------------------------- commits
@dataclass
class _CommitBatch:
    versions: list[int]
    adds: pa.Table  # with extra columns _version, _order
    removes: pa.Table
    cdc_versions: list[int]
    rare: list[tuple[int, dict[str, Any]]]  # (version, action) in log order
    #: cdc actions (file-table columns: path, size, partition_values, data_change; others null) tagged
    #: with _version/_order; read by the change data feed (table_changes.py)
    cdcs: pa.Table | None = None


def _read_commit_bytes(storage: Storage, metas: Sequence[ObjectMeta]) -> list[bytes]:
    def get(m: ObjectMeta) -> bytes:
        try:
            return storage.read(m.key)
        except ObjectNotFoundError as e:
            raise MissingFileError(f"commit file {storage.full_uri(m.key)} disappeared while reading") from e

    if len(metas) <= 4:
        return [get(m) for m in metas]
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(get, metas))


def split_lines(blobs: Sequence[bytes]) -> tuple[pa.Array, pa.Array]:
    """(lines, index of the blob each line came from), empty lines dropped, vectorized."""
    if not blobs:
        return pa.array([], pa.string()), pa.array([], pa.int32())
    arr = pa.array(blobs, pa.large_binary()).cast(pa.large_string())
    parts = pc.split_pattern(arr, "\n")
    parents = pc.list_parent_indices(parts)
    lines = pc.list_flatten(parts)
    lines = pc.ascii_trim_whitespace(lines)  # JSON whitespace is ASCII; cheaper than the utf8 kernel
    keep = pc.greater(pc.utf8_length(lines), 0)
    return pc.filter(lines, keep), pc.filter(parents, keep)


def _parse_json_lines(lines: pa.Array, typ: pa.DataType) -> pa.StructArray:
    if len(lines) == 0:
        return pa.array([], typ)
    one = pa.LargeListArray.from_arrays(pa.array([0, len(lines)], pa.int64()), lines)
    buf = pc.binary_join(one, pa.scalar("\n", lines.type))[0].as_buffer()
    max_len = pc.max(pc.binary_length(lines)).as_py() or 0
    block = max(1 << 20, 2 * max_len + 16)
    schema = pa.schema(list(typ))
    table = pajson.read_json(
        pa.BufferReader(buf),
        read_options=pajson.ReadOptions(block_size=block, use_threads=True),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )
    if table.num_rows != len(lines):
        raise ValueError("line count mismatch")
    batch = table.combine_chunks().to_batches()
    if not batch:
        return pa.array([], typ)
    return pa.StructArray.from_arrays(batch[0].columns, fields=list(typ))


def read_commits(
    storage: Storage,
    metas: Sequence[ObjectMeta],
    partition_names_hint: Sequence[str] | None = None,
    file_actions: bool = True,
) -> _CommitBatch:
    versions = [version_of(m.key) for m in metas]
    blobs = _read_commit_bytes(storage, metas)
    try:
        lines, parents = split_lines(blobs)
    except pa.ArrowInvalid as e:  # invalid UTF-8 somewhere: name the file
        for meta, blob in zip(metas, blobs):
            try:
                blob.decode("utf-8")
            except UnicodeDecodeError as ue:
                raise CorruptLogError(f"corrupt commit file {storage.full_uri(meta.key)}: not UTF-8 ({ue})") from e
        raise CorruptLogError(f"corrupt commit file(s) in the Delta log of {storage.root_uri}: {e}") from e
    is_bulk = pc.match_substring_regex(lines, _BULK_RE)
    rare_idx = pc.indices_nonzero(pc.invert(is_bulk)).to_numpy()
    rare_lines = pc.take(lines, pa.array(rare_idx, pa.int64())).to_pylist()
    rare_parents = pc.take(parents, pa.array(rare_idx, pa.int64())).to_pylist()
    rare: list[tuple[int, dict[str, Any]]] = []
    for text, p in zip(rare_lines, rare_parents):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise CorruptLogError(
                f"corrupt commit file {storage.full_uri(metas[p].key)}: invalid JSON line ({e}): {text[:200]!r}"
            ) from e
        if not isinstance(obj, dict):
            raise CorruptLogError(f"corrupt commit file {storage.full_uri(metas[p].key)}: line is not an object")
        rare.append((versions[p], obj))

    # partition columns: every metaData seen here plus the caller's hint (checkpoint metadata)
    pnames: list[str] = list(partition_names_hint or [])
    for _, obj in rare:
        md = obj.get("metaData")
        if isinstance(md, dict):
            for name in _physical_partition_names(md):
                if name not in pnames:
                    pnames.append(name)

    if not file_actions:
        empty = _file_schema(pnames).empty_table()
        return _CommitBatch(versions, empty, empty, [], rare)
    bulk_lines = pc.filter(lines, is_bulk)
    bulk_parents = pc.filter(parents, is_bulk)
    typ = pa.struct(
        [
            ("add", _json_action_type("add", pnames)),
            ("remove", _json_action_type("remove", pnames)),
            ("cdc", _json_action_type("cdc", pnames)),
        ]
    )
    try:
        parsed = _parse_json_lines(bulk_lines, typ)
    except (pa.ArrowInvalid, ValueError) as e:
        _locate_bad_line(storage, metas, bulk_lines, bulk_parents, e)
        raise
    order = pa.array(range(len(bulk_lines)), pa.int64())
    line_versions = pc.take(pa.array(versions, pa.int64()), bulk_parents)
    tags = extract_tags(bulk_lines)
    adds = _tagged(parsed, "add", pnames, line_versions, order, tags)
    removes = _tagged(parsed, "remove", pnames, line_versions, order, tags)
    cdcs = _tagged(parsed, "cdc", pnames, line_versions, order)
    cdc_versions = sorted(set(cdcs.column("_version").to_pylist()))
    return _CommitBatch(versions, adds, removes, cdc_versions, rare, cdcs)


def _tagged(
    parsed: pa.StructArray,
    kind: str,
    pnames: Sequence[str],
    versions: pa.Array,
    order: pa.Array,
    tags: pa.Array | None = None,
) -> pa.Table:
    col = parsed.field(kind)
    mask = col.is_valid()
    sub = pc.filter(col, mask)
    table = _conform_file_actions(sub, pnames, kind)
    if tags is not None and "tags" in table.column_names:
        table = table.set_column(table.schema.get_field_index("tags"), "tags", pc.filter(tags, mask))
    table = table.append_column("_version", pc.filter(versions, mask))
    table = table.append_column("_order", pc.filter(order, mask))
    if table.num_rows and table.column("path").null_count:
        raise CorruptLogError(f"{kind} action without a path in the Delta log")
    return table


_TAGS_RE = r'(?:^|[^\\])"tags"\s*:\s*(?P<t>\{[^{}]*\})'


def extract_tags(lines: pa.Array) -> pa.Array:
    """`tags` objects of file-action lines as map<string,string> (null where absent), vectorized.

    pyarrow's JSON reader cannot produce maps, so the (flat, string-valued) tag objects are cut out
    with a regex and parsed as their own JSON lines with inferred fields, then pivoted into a map.
    """
    n = len(lines)
    if n == 0:
        return pa.array([], TAGS_TYPE)
    raw = pc.struct_field(pc.extract_regex(lines, _TAGS_RE), [0])
    valid = raw.is_valid()
    m = int(pc.sum(valid).as_py() or 0)
    if m == 0:
        return pa.nulls(n, TAGS_TYPE)
    objs = pc.filter(raw, valid)
    try:
        compact = _pivot_tags(objs)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        compact = pa.array(
            [[(str(k), None if v is None else str(v)) for k, v in json.loads(o).items()] for o in objs.to_pylist()],
            TAGS_TYPE,
        )
    positions = np.cumsum(valid.to_numpy(zero_copy_only=False)) - 1
    mask = ~valid.to_numpy(zero_copy_only=False)
    return pc.take(compact, pa.array(positions, pa.int64(), mask=mask))


def _pivot_tags(objs: pa.Array) -> pa.Array:
    one = pa.ListArray.from_arrays(pa.array([0, len(objs)], pa.int32()), objs)
    buf = pc.binary_join(one, pa.scalar("\n", objs.type))[0].as_buffer()
    table = pajson.read_json(
        pa.BufferReader(buf),
        read_options=pajson.ReadOptions(block_size=max(1 << 20, buf.size + 16), use_threads=False),
        parse_options=pajson.ParseOptions(unexpected_field_behavior="infer"),
    )
    m = len(objs)
    names = table.column_names
    if not names:
        return pa.array([[]] * m, TAGS_TYPE)
    cols = [table.column(c).combine_chunks().cast(pa.string()) for c in names]
    valid = np.stack([c.is_valid().to_numpy(zero_copy_only=False) for c in cols], axis=1)  # m x K
    flat = np.nonzero(valid.ravel())[0]
    rows, ks = flat // len(names), flat % len(names)
    values = pc.take(pa.concat_arrays(cols), pa.array(ks * m + rows, pa.int64()))
    keys = pc.take(pa.array(names, pa.string()), pa.array(ks, pa.int64()))
    offsets = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int32)
    return pa.MapArray.from_arrays(pa.array(offsets), keys, values)


def _locate_bad_line(
    storage: Storage, metas: Sequence[ObjectMeta], lines: pa.Array, parents: pa.Array, err: Exception
) -> None:
    for text, p in zip(lines.to_pylist(), parents.to_pylist()):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise CorruptLogError(
                f"corrupt commit file {storage.full_uri(metas[p].key)}: invalid JSON ({e}): {text[:200]!r}"
            ) from e
        if not isinstance(obj, dict):
            raise CorruptLogError(f"corrupt commit file {storage.full_uri(metas[p].key)}: line is not an object")
    raise CorruptLogError(f"could not parse file actions in the Delta log: {err}") from err


def _physical_partition_names(md: dict[str, Any]) -> list[str]:
    """Partition column names as they appear in partitionValues (physical under column mapping)."""
    cols = list(md.get("partitionColumns") or [])
    mode = (md.get("configuration") or {}).get("delta.columnMapping.mode", "none")
    if mode in ("name", "id") and cols:
        try:
            schema = json.loads(md["schemaString"])
            phys = {}
            for f in schema.get("fields", []):
                phys[f["name"]] = (f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"])
            return [phys.get(c, c) for c in cols]
        except (ValueError, KeyError, TypeError):
            return cols
    return cols


# ----------------------------------------------------------------------------- checkpoints
_ADD_CP_FIELDS = ["path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "deletionVector",
                  "baseRowId", "defaultRowCommitVersion", "tags", "stats_parsed"]
_REMOVE_CP_FIELDS = ["path", "partitionValues", "size", "dataChange", "deletionTimestamp", "deletionVector",
                     "baseRowId", "defaultRowCommitVersion"]


@dataclass
class _CheckpointContent:
    adds: pa.Table
    removes: pa.Table
    rare: list[dict[str, Any]]
    stats_parsed: pa.Array | None


def _open_parquet(storage: Storage, key: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(storage.open_input_file(key))
    except ObjectNotFoundError as e:
        raise MissingFileError(f"checkpoint file {storage.full_uri(key)} is missing") from e
    except (pa.ArrowInvalid, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise MissingFileError(f"checkpoint file {storage.full_uri(key)} is missing") from e
        raise CorruptLogError(f"checkpoint file {storage.full_uri(key)} is not valid Parquet: {e}") from e


def _read_checkpoint_parquet(storage: Storage, key: str) -> pa.Table:
    pf = _open_parquet(storage, key)
    schema = pf.schema_arrow
    cols: list[str] = []
    for top in schema.names:
        if top == "add":
            sub = {f.name for f in schema.field("add").type}
            cols += [f"add.{n}" for n in _ADD_CP_FIELDS if n in sub]
        elif top == "remove":
            sub = {f.name for f in schema.field("remove").type}
            cols += [f"remove.{n}" for n in _REMOVE_CP_FIELDS if n in sub]
        elif top in ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar"):
            cols.append(top)
    try:
        return pf.read(columns=cols)
    except (pa.ArrowInvalid, OSError) as e:
        raise CorruptLogError(f"checkpoint file {storage.full_uri(key)} could not be read: {e}") from e


def _rare_from_table(table: pa.Table) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar"):
        if name not in table.column_names:
            continue
        col = table.column(name)
        valid = pc.filter(col, col.is_valid())
        for v in valid.to_pylist():
            if name == "metaData":
                v = _maps_to_dicts(v)
            elif name == "protocol":
                v = {k: x for k, x in v.items() if x is not None}
            out.append({name: v})
    return out


def _maps_to_dicts(v: dict[str, Any]) -> dict[str, Any]:
    def m(x: Any) -> Any:
        if isinstance(x, list) and all(isinstance(i, tuple) and len(i) == 2 for i in x):
            return dict(x)
        return x if x is not None else {}

    v = dict(v)
    v["configuration"] = m(v.get("configuration"))
    fmt = dict(v.get("format") or {})
    fmt["options"] = m(fmt.get("options"))
    v["format"] = fmt
    return v


def read_checkpoint(storage: Storage, checkpoint: Checkpoint) -> tuple[list[pa.Table], list[dict[str, Any]]]:
    """All checkpoint parts (and V2 sidecars) as raw Arrow tables, plus their non-file actions."""
    tables: list[pa.Table] = []
    rare: list[dict[str, Any]] = []
    for meta in checkpoint.files:
        if meta.key.endswith(".json"):
            blob = _read_commit_bytes(storage, [meta])[0]
            try:
                lines, _ = split_lines([blob])
            except pa.ArrowInvalid as e:
                raise CorruptLogError(f"corrupt checkpoint {storage.full_uri(meta.key)}: {e}") from e
            # file actions stay raw lines until the partition columns are known (_checkpoint_file_actions)
            is_bulk = pc.match_substring_regex(lines, _BULK_RE)
            for text in pc.filter(lines, pc.invert(is_bulk)).to_pylist():
                try:
                    rare.append(json.loads(text))
                except ValueError as e:
                    raise CorruptLogError(f"corrupt checkpoint {storage.full_uri(meta.key)}: {e}") from e
            tables.append(pa.table({"__json_lines": pc.filter(lines, is_bulk)}))
        else:
            t = _read_checkpoint_parquet(storage, meta.key)
            rare += _rare_from_table(t)
            tables.append(t)
    sidecars = [r["sidecar"] for r in rare if "sidecar" in r]
    if sidecars:
        def read_sidecar(sc: dict[str, Any]) -> pa.Table:
            path = sc["path"]
            key = path if "/" in path and not path.startswith("_sidecars") else f"{LOG_DIR}/_sidecars/{path}"
            if "://" in path:
                key = path.split(f"/{LOG_DIR}/", 1)[-1]
                key = f"{LOG_DIR}/{key}"
            return _read_checkpoint_parquet(storage, key)

        with ThreadPoolExecutor(max_workers=8) as pool:
            tables += list(pool.map(read_sidecar, sidecars))
    return tables, rare


def _checkpoint_file_actions(tables: list[pa.Table], pnames: Sequence[str]) -> tuple[pa.Table, pa.Table]:
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    for t in tables:
        if "__json_lines" in t.column_names:
            typ = pa.struct(
                [("add", _json_action_type("add", pnames)), ("remove", _json_action_type("remove", pnames))]
            )
            try:
                parsed = _parse_json_lines(t.column("__json_lines").combine_chunks(), typ)
            except (pa.ArrowInvalid, ValueError) as e:
                raise CorruptLogError(f"corrupt JSON checkpoint: {e}") from e
            t = pa.table({"add": parsed.field("add"), "remove": parsed.field("remove")})
        for kind, out in (("add", adds), ("remove", removes)):
            if kind not in t.column_names:
                continue
            col = t.column(kind)
            col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
            valid = pc.filter(col, pc.and_(col.is_valid(), col.field("path").is_valid()))
            conformed = _conform_file_actions(valid, pnames, kind)
            if kind == "add" and "stats_parsed" in {f.name for f in valid.type}:
                conformed = conformed.append_column("stats_parsed", valid.field("stats_parsed"))
            out.append(conformed)
    return _concat(adds), _concat(removes)


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive")


# ----------------------------------------------------------------------------- replay
def replay(segment: LogSegment) -> ReplayResult:
    storage = segment.storage
    cp_tables: list[pa.Table] = []
    cp_rare: list[dict[str, Any]] = []
    if segment.checkpoint is not None:
        cp_tables, cp_rare = read_checkpoint(storage, segment.checkpoint)

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = {}
    domains: dict[str, DomainMetadata] = {}
    for obj in cp_rare:
        protocol, metadata = _apply_rare(obj, protocol, metadata, txns, domains)
    cp_pnames = _physical_partition_names(metadata.to_json()) if metadata else []

    commits = read_commits(storage, segment.commits, cp_pnames)
    commit_infos: dict[int, dict[str, Any]] = {}
    for version, obj in commits.rare:
        if "commitInfo" in obj and isinstance(obj["commitInfo"], dict):
            commit_infos[version] = obj["commitInfo"]
        protocol, metadata = _apply_rare(obj, protocol, metadata, txns, domains)
    if protocol is None or metadata is None:
        missing = "protocol" if protocol is None else "metaData"
        raise CorruptLogError(
            f"Delta log of {storage.root_uri} at version {segment.version} has no {missing} action"
        )
    pnames = _physical_partition_names(metadata.to_json())
    cp_adds, cp_removes = _checkpoint_file_actions(cp_tables, pnames) if cp_tables else (None, None)

    files, tombstones = _reconcile(cp_adds, cp_removes, commits.adds, commits.removes, pnames)
    return ReplayResult(protocol, metadata, files, tombstones, txns, domains, commit_infos)


def _apply_rare(
    obj: dict[str, Any],
    protocol: Protocol | None,
    metadata: Metadata | None,
    txns: dict[str, Txn],
    domains: dict[str, DomainMetadata],
) -> tuple[Protocol | None, Metadata | None]:
    if "protocol" in obj and obj["protocol"] is not None:
        protocol = Protocol.from_json(obj["protocol"])
    if "metaData" in obj and obj["metaData"] is not None:
        metadata = Metadata.from_json(obj["metaData"])
    if "txn" in obj and obj["txn"] is not None:
        t = obj["txn"]
        txns[t["appId"]] = Txn(t["appId"], int(t["version"]), t.get("lastUpdated"))
    if "domainMetadata" in obj and obj["domainMetadata"] is not None:
        d = obj["domainMetadata"]
        if d.get("removed"):
            domains.pop(d["domain"], None)
        else:
            domains[d["domain"]] = DomainMetadata(d["domain"], d.get("configuration", ""), False)
    return protocol, metadata


def _reconcile(
    cp_adds: pa.Table | None,
    cp_removes: pa.Table | None,
    adds: pa.Table,
    removes: pa.Table,
    pnames: Sequence[str],
) -> tuple[pa.Table, pa.Table]:
    schema = _file_schema(pnames)
    rschema = _file_schema(pnames, _REMOVE_EXTRA)
    adds = _select(adds, schema, keep_tags=True)
    removes = _select(removes, rschema, keep_tags=True)
    if adds.num_rows == 0 and removes.num_rows == 0:
        files = cp_adds if cp_adds is not None else schema.empty_table()
        tomb = _select(cp_removes, rschema) if cp_removes is not None else rschema.empty_table()
        return _select(files, schema, keep_stats_parsed=True), tomb

    both = pa.concat_tables(
        [
            adds.select(["_order"]).append_column("key", file_keys(adds)).append_column(
                "is_add", pa.repeat(pa.scalar(True), adds.num_rows)
            ),
            removes.select(["_order"]).append_column("key", file_keys(removes)).append_column(
                "is_add", pa.repeat(pa.scalar(False), removes.num_rows)
            ),
        ]
    )
    win_orders, touched = _newest_per_key(both.column("key"), both.column("_order"))
    live_adds = adds.filter(pc.is_in(adds.column("_order"), value_set=win_orders))
    live_removes = removes.filter(pc.is_in(removes.column("_order"), value_set=win_orders))

    parts = []
    tparts = []
    if cp_adds is not None and cp_adds.num_rows:
        keep = pc.invert(pc.is_in(file_keys(cp_adds), value_set=touched))
        parts.append(_select(cp_adds.filter(keep), schema, keep_stats_parsed=True))
    parts.append(_select(live_adds, schema))
    if cp_removes is not None and cp_removes.num_rows:
        keep = pc.invert(pc.is_in(file_keys(cp_removes), value_set=touched))
        tparts.append(_select(cp_removes.filter(keep), rschema))
    tparts.append(_select(live_removes, rschema))
    files = pa.concat_tables(parts, promote_options="permissive")
    tombstones = pa.concat_tables(tparts, promote_options="permissive")
    return files, tombstones


def _newest_per_key(keys: pa.ChunkedArray, order: pa.ChunkedArray) -> tuple[pa.Array, pa.Array]:
    """(order of the newest action per key, distinct keys) by sorting — no hash group-by (and no Acero)."""
    t = pa.table({"k": keys, "o": order})
    idx = pc.sort_indices(t, sort_keys=[("k", "ascending"), ("o", "descending")])
    k = pc.take(t.column("k"), idx).combine_chunks()
    o = pc.take(t.column("o"), idx).combine_chunks()
    n = len(k)
    if n == 0:
        return o, k
    first = pc.not_equal(k.slice(1), k.slice(0, n - 1))
    mask = pa.concat_arrays([pa.array([True]), first.cast(pa.bool_())])
    return pc.filter(o, mask), pc.filter(k, mask)


def _select(table: pa.Table, schema: pa.Schema, keep_tags: bool = False, keep_stats_parsed: bool = False) -> pa.Table:
    names = list(schema.names)
    if keep_tags:
        names += [n for n in ("_order", "_version") if n in table.column_names]
    if keep_stats_parsed and "stats_parsed" in table.column_names:
        names.append("stats_parsed")
    return table.select(names)


def commit_infos_for(storage: Storage, metas: Sequence[ObjectMeta]) -> dict[int, dict[str, Any]]:
    """commitInfo of each commit (history, timestamps); only the non-file lines are JSON-decoded."""
    out: dict[int, dict[str, Any]] = {}
    if not metas:
        return out
    batch = read_commits(storage, metas, file_actions=False)
    for version, obj in batch.rare:
        if "commitInfo" in obj and isinstance(obj["commitInfo"], dict) and version not in out:
            out[version] = obj["commitInfo"]
    return out


def commit_info_from(version: int, info: dict[str, Any]) -> CommitInfo:
    return CommitInfo(version, info)


__all__ = ["ReplayResult", "replay", "read_commits", "commit_infos_for", "file_keys", "DeltaError"]
