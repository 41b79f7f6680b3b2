"""Log replay, vectorized with Arrow (PROTOCOL.md "Action Reconciliation").

Commit files are split into lines with Arrow compute; the bulk file actions (add/remove/cdc) are parsed
in one `pyarrow.json` call with an explicit schema, only the rare actions (protocol, metaData, txn,
domainMetadata, commitInfo, ...) go through `json.loads`. Checkpoints are read as Parquet column
projections. Reconciliation keys each file by (path, deletion-vector unique id); the newest action wins,
computed by sorting on (key, log order) rather than a Python loop.
"""


from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from ...errors import CorruptLogError, DeltaError
from ...storage.base import ObjectMeta, Storage
from ..arrow_build import arrow_to_np, bool_to_arrow, bytes_to_arrow, int_scalar, np_to_arrow, str_scalar
from ..checkpoints.read import CheckpointParts, checkpoint_file_actions, read_checkpoint
from .action_tables import (  # noqa: F401  (re-exported: the file table's shape is part of replay's API)
    DV_TYPE,
    FILE_ACTION_LINE_RE,
    FILE_COLUMNS,
    REMOVE_EXTRA_COLUMNS,
    TAGS_TYPE,
    conform_file_actions,
    dv_unique_ids,
    file_keys,
    file_schema,
    json_action_type,
    parse_json_lines,
    partition_struct_type,
    read_commit_bytes,
    read_commit_joined,
    split_lines,
)
from .actions import DomainMetadata, Metadata, Protocol, Txn
from .commit_buffer import CommitIndex, contains, index_joined
from .segment import LogSegment, version_of


@dataclass
class ReplayResult:
    protocol: Protocol
    metadata: Metadata
    files: pa.Table  # the live add actions (file table)
    tombstones: pa.Table  # remove actions still in the log state
    txns: dict[str, Txn] = field(default_factory=dict)
    domain_metadata: dict[str, DomainMetadata] = field(default_factory=dict)
    commit_infos: dict[int, dict[str, Any]] = field(default_factory=dict)


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


def read_commits(
    storage: Storage,
    metas: Sequence[ObjectMeta],
    partition_names_hint: Sequence[str] | None = None,
    file_actions: bool = True,
) -> _CommitBatch:
    versions = [version_of(m.key) for m in metas]
    buf, ends = read_commit_joined(storage, metas)
    index = index_joined(buf, ends)
    if index is not None:
        fast = _read_indexed(index, versions, partition_names_hint, file_actions)
        if fast is not None:
            return fast
    blobs = [bytes(buf[a:b]) for a, b in zip([0, *ends[:-1]], ends)]  # the general path reads file by file
    return _read_general(storage, metas, versions, blobs, partition_names_hint, file_actions)


def _partition_names(rare: list[tuple[int, dict[str, Any]]], hint: Sequence[str] | None) -> list[str]:
    """Partition columns: every metaData seen in these commits plus the caller's hint (checkpoint metadata)."""
    pnames: list[str] = list(hint or [])
    for _, obj in rare:
        md = obj.get("metaData")
        if isinstance(md, dict):
            for name in physical_partition_names(md):
                if name not in pnames:
                    pnames.append(name)
    return pnames


#: file-action fields most logs never write; the fast path parses them only when some line names them
_OPTIONAL_FIELDS = ("deletionVector", "baseRowId", "defaultRowCommitVersion")


def _file_action_type(pnames: Sequence[str], without: Sequence[str] = ()) -> pa.StructType:
    def kind(k: str) -> pa.StructType:
        t = json_action_type(k, pnames)
        return pa.struct([f for f in t if f.name not in without]) if without else t

    return pa.struct([("add", kind("add")), ("remove", kind("remove")), ("cdc", kind("cdc"))])


def _read_indexed(
    index: CommitIndex, versions: list[int], hint: Sequence[str] | None, file_actions: bool
) -> _CommitBatch | None:
    """`read_commits` over the one-buffer line index (commit_buffer.py); None: take the general path."""
    rare = [(versions[p], obj) for p, obj in index.rare]
    pnames = _partition_names(rare, hint)
    if not file_actions:
        empty = file_schema(pnames).empty_table()
        return _CommitBatch(versions, empty, empty, [], rare)
    # optional fields no line names are left out of the parse (a per-row null append each in the reader)
    absent = [k for k in _OPTIONAL_FIELDS if not contains(index.buffer, f'"{k}"'.encode())]
    typ = _file_action_type(pnames, absent)
    order = index.row_order
    line_versions = np.asarray(versions, dtype=np.int64)[index.parents]
    tags = None
    if len(index.starts) and contains(index.buffer, b'"tags"'):  # only then: a regex pass and a second JSON parse
        lines = index.lines()
        if pc.any(pc.match_substring(lines, '"tags"')).as_py():
            tags = extract_tags(lines)
    tables = []
    kinds = ((1, "add"), (2, "remove"), (3, "cdc"))
    for (_code, kind), parsed in zip(kinds, index.parse_kinds([(c, k, typ.field(k).type) for c, k in kinds])):
        if parsed is None:
            return None
        col, rows = parsed
        if not len(rows):
            tables.append(_empty_tagged(tuple(pnames), kind))
            continue
        kind_tags = None if tags is None else tags.take(np_to_arrow(rows))
        tables.append(_conformed(col, kind, pnames, line_versions[rows], order[rows], kind_tags))
    adds, removes, cdcs = tables
    cdc_versions = sorted(set(cdcs.column("_version").to_pylist()))
    return _CommitBatch(versions, adds, removes, cdc_versions, rare, cdcs)


def _conformed(col: pa.ChunkedArray, kind: str, pnames: Sequence[str], versions: np.ndarray, order: np.ndarray,
               tags: pa.Array | None) -> pa.Table:
    """The parsed structs of one kind (every row an action) as a file table tagged with `_version` / `_order`,
    chunk by chunk: the reader's chunks are kept (combining them would copy every string once more)."""
    parts = [conform_file_actions(chunk, pnames, kind) for chunk in col.chunks if len(chunk)]
    table = pa.concat_tables(parts) if len(parts) != 1 else parts[0]
    if tags is not None and "tags" in table.column_names:
        table = table.set_column(table.schema.get_field_index("tags"), "tags", tags)
    table = table.append_column("_version", np_to_arrow(versions))
    table = table.append_column("_order", np_to_arrow(order))
    if table.column("path").null_count:
        raise CorruptLogError(f"{kind} action without a path in the Delta log")
    return table


def _read_general(
    storage: Storage,
    metas: Sequence[ObjectMeta],
    versions: list[int],
    blobs: list[bytes],
    partition_names_hint: Sequence[str] | None,
    file_actions: bool,
) -> _CommitBatch:
    """`read_commits` line by line in Arrow: any log shape, and the errors that name the file at fault."""
    try:
        lines, parents = split_lines(blobs)
    except pa.ArrowInvalid as e:  # invalid UTF-8 somewhere: name the file
        for meta, blob in zip(metas, blobs):
            try:
                blob.decode("utf-8")
            except UnicodeDecodeError as ue:
                raise CorruptLogError(f"corrupt commit file {storage.full_uri(meta.key)}: not UTF-8 ({ue})") from e
        raise CorruptLogError(f"corrupt commit file(s) in the Delta log of {storage.root_uri}: {e}") from e
    is_bulk = pc.match_substring_regex(lines, FILE_ACTION_LINE_RE)
    rare_idx = pc.indices_nonzero(pc.invert(is_bulk))
    rare_lines = pc.take(lines, rare_idx).to_pylist()
    rare_parents = pc.take(parents, rare_idx).to_pylist()
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

    pnames = _partition_names(rare, partition_names_hint)

    if not file_actions:
        empty = file_schema(pnames).empty_table()
        return _CommitBatch(versions, empty, empty, [], rare)
    bulk_lines = pc.filter(lines, is_bulk)
    bulk_parents = pc.filter(parents, is_bulk)
    typ = _file_action_type(pnames)
    try:
        parsed = parse_json_lines(bulk_lines, typ)
    except (pa.ArrowInvalid, ValueError) as e:
        _locate_bad_line(storage, metas, bulk_lines, bulk_parents, e, typ)
        raise
    order = np_to_arrow(np.arange(len(bulk_lines), dtype=np.int64))
    line_versions = pc.take(np_to_arrow(versions), bulk_parents)
    # lines without a `"tags"` key skip the tag extraction (a regex pass and a second JSON parse)
    tags = extract_tags(bulk_lines) if pc.any(pc.match_substring(bulk_lines, '"tags"')).as_py() else None
    adds = _tagged(parsed, "add", pnames, line_versions, order, tags)
    removes = _tagged(parsed, "remove", pnames, line_versions, order, tags)
    cdcs = _tagged(parsed, "cdc", pnames, line_versions, order)
    cdc_versions = sorted(set(cdcs.column("_version").to_pylist()))
    return _CommitBatch(versions, adds, removes, cdc_versions, rare, cdcs)


def _tagged(
    parsed: pa.StructArray | pa.Table,
    kind: str,
    pnames: Sequence[str],
    versions: pa.Array,
    order: pa.Array,
    tags: pa.Array | None = None,
) -> pa.Table:
    col = parsed.column(kind) if isinstance(parsed, pa.Table) else parsed.field(kind)
    if col.null_count == len(col):  # no action of this kind (most commits have no removes and no cdc)
        return _empty_tagged(tuple(pnames), kind)
    mask = col.is_valid()
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    sub = pc.filter(col, mask)
    table = conform_file_actions(sub, pnames, kind)
    if tags is not None and "tags" in table.column_names:
        table = table.set_column(table.schema.get_field_index("tags"), "tags", pc.filter(tags, mask))
    table = table.append_column("_version", pc.filter(versions, mask))
    table = table.append_column("_order", pc.filter(order, mask))
    if table.num_rows and table.column("path").null_count:
        raise CorruptLogError(f"{kind} action without a path in the Delta log")
    return table


@functools.lru_cache(maxsize=64)
def _empty_tagged(pnames: tuple[str, ...], kind: str) -> pa.Table:
    """The (immutable) empty table `_tagged` returns for a kind with no action."""
    empty = pa.nulls(0, json_action_type(kind, pnames))
    table = conform_file_actions(empty, pnames, kind)
    table = table.append_column("_version", np_to_arrow(np.zeros(0, np.int64)))
    return table.append_column("_order", np_to_arrow(np.zeros(0, np.int64)))


_TAGS_RE = r'(?:^|[^\\])"tags"\s*:\s*(?P<t>\{[^{}]*\})'


def extract_tags(lines: pa.Array) -> pa.Array:
    """`tags` objects of file-action lines as map<string,string> (null where absent), vectorized.

    pyarrow's JSON reader cannot produce maps, so the (flat, string-valued) tag objects are cut out
    with a regex and parsed as their own JSON lines with inferred fields, then pivoted into a map.
    """
    n = len(lines)
    if n == 0:
        return pa.nulls(0, TAGS_TYPE)
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
    valid_np = arrow_to_np(valid)
    positions = np.maximum(np.cumsum(valid_np) - 1, 0)
    return pc.take(compact, np_to_arrow(positions, mask=~valid_np))


def _pivot_tags(objs: pa.Array) -> pa.Array:
    one = pa.ListArray.from_arrays(np_to_arrow([0, len(objs)], pa.int32()), objs)
    buf = pc.binary_join(one, str_scalar("\n", objs.type))[0].as_buffer()
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
    valid = np.stack([arrow_to_np(c.is_valid()) for c in cols], axis=1)  # m x K
    flat = np.nonzero(valid.ravel())[0]
    rows, ks = flat // len(names), flat % len(names)
    values = pc.take(pa.concat_arrays(cols), np_to_arrow(ks * m + rows))
    keys = pc.take(bytes_to_arrow([n.encode() for n in names], pa.string()), np_to_arrow(ks))
    offsets = np.concatenate([[0], np.cumsum(valid.sum(axis=1))]).astype(np.int32)
    return pa.MapArray.from_arrays(np_to_arrow(offsets, pa.int32()), keys, values)


def _locate_bad_line(
    storage: Storage, metas: Sequence[ObjectMeta], lines: pa.Array, parents: pa.Array, err: Exception,
    typ: pa.DataType | None = None,
) -> None:
    """After a bulk parse failed: name the commit file and line at fault (error path only, line by line)."""
    for text, p in zip(lines.to_pylist(), parents.to_pylist()):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise CorruptLogError(
                f"corrupt commit file {storage.full_uri(metas[p].key)}: invalid JSON ({e}): {text[:200]!r}"
            ) from e
        if not isinstance(obj, dict):
            raise CorruptLogError(f"corrupt commit file {storage.full_uri(metas[p].key)}: line is not an object")
        if typ is not None:  # valid JSON of the wrong shape, e.g. `"size": "big"`
            try:
                parse_json_lines(pa.array([text], lines.type), typ)
            except (pa.ArrowInvalid, ValueError) as e:
                raise CorruptLogError(
                    f"corrupt commit file {storage.full_uri(metas[p].key)}: {e}: {text[:200]!r}"
                ) from e
    raise CorruptLogError(f"could not parse file actions in the Delta log: {err}") from err


def physical_partition_names(md: dict[str, Any]) -> list[str]:
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


# ----------------------------------------------------------------------------- replay
def replay(segment: LogSegment) -> ReplayResult:
    storage = segment.storage
    parts: CheckpointParts | None = None
    cp_rare: list[dict[str, Any]] = []
    if segment.checkpoint is not None:
        parts, cp_rare = read_checkpoint(storage, segment.checkpoint)

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = {}
    domains: dict[str, DomainMetadata] = {}
    for obj in cp_rare:
        protocol, metadata = _apply_rare(obj, protocol, metadata, txns, domains)
    cp_pnames = physical_partition_names(metadata.to_json()) if metadata else []

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
    pnames = physical_partition_names(metadata.to_json())
    files, tombstones = _reconcile(storage, parts, commits.adds, commits.removes, pnames)
    return ReplayResult(protocol, metadata, files, tombstones, txns, domains, commit_infos)


def replay_onto(previous: ReplayResult, storage: Storage, metas: Sequence[ObjectMeta]) -> ReplayResult | None:
    """The state after `metas` (the commits right after `previous`'s version, ascending) applied to `previous`:
    only the new commits are read. None when a new metaData changes the partition columns (the caller loads
    from scratch)."""
    pnames = physical_partition_names(previous.metadata.to_json())
    commits = read_commits(storage, metas, pnames)
    protocol: Protocol | None = previous.protocol
    metadata: Metadata | None = previous.metadata
    txns, domains = dict(previous.txns), dict(previous.domain_metadata)
    commit_infos = dict(previous.commit_infos)
    for version, obj in commits.rare:
        if "commitInfo" in obj and isinstance(obj["commitInfo"], dict):
            commit_infos[version] = obj["commitInfo"]
        protocol, metadata = _apply_rare(obj, protocol, metadata, txns, domains)
    assert protocol is not None and metadata is not None
    if physical_partition_names(metadata.to_json()) != pnames:
        return None
    files, tombstones = previous.files, previous.tombstones
    if commits.adds.num_rows or commits.removes.num_rows:
        new_files, new_tombstones = _reconcile(storage, None, commits.adds, commits.removes, pnames)
        touched = pa.concat_arrays([file_keys(commits.adds).cast(pa.string()),
                                    file_keys(commits.removes).cast(pa.string())])
        files = pa.concat_tables([_drop_keys(files, touched), new_files], promote_options="permissive")
        tombstones = pa.concat_tables([_drop_keys(tombstones, touched), new_tombstones],
                                      promote_options="permissive")
    return ReplayResult(protocol, metadata, files, tombstones, txns, domains, commit_infos)


def _drop_keys(table: pa.Table, keys: pa.Array) -> pa.Table:
    """`table` without the rows whose (path, DV id) key is in `keys` (keys computed only for rows whose path
    is among the touched ones: appends of fresh files cost one `is_in` over paths)."""
    if not table.num_rows or not len(keys):
        return table
    paths = pc.list_element(pc.split_pattern(keys, "\x00", max_splits=1), int_scalar(0))
    maybe = pc.is_in(table.column("path"), value_set=paths)
    if not pc.any(maybe).as_py():
        return table
    candidates = pc.indices_nonzero(maybe)
    hit = pc.is_in(file_keys(table.take(candidates)), value_set=keys)
    drop = np.zeros(table.num_rows, dtype=np.bool_)
    drop[candidates.to_numpy()[hit.to_numpy(zero_copy_only=False)]] = True
    return table.filter(bool_to_arrow(~drop))


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
    storage: Storage,
    parts: CheckpointParts | None,
    adds: pa.Table,
    removes: pa.Table,
    pnames: Sequence[str],
) -> tuple[pa.Table, pa.Table]:
    """Newest action per file wins: commits are reconciled among themselves first, then the checkpoint is
    streamed minus every file a commit touched (a checkpoint row is always older than any commit)."""
    schema = file_schema(pnames)
    rschema = file_schema(pnames, REMOVE_EXTRA_COLUMNS)
    adds = _select(adds, schema, keep_tags=True)
    removes = _select(removes, rschema, keep_tags=True)
    touched: pa.Array | None = None
    live_adds, live_removes = adds, removes
    if removes.num_rows == 0 and adds.num_rows <= 1:  # one add (a small append): it is the newest of its key
        touched = file_keys(adds) if adds.num_rows else None
    elif adds.num_rows or removes.num_rows:
        add_wins, remove_wins, touched = _newest_per_key(adds, removes, want_keys=parts is not None)
        if not add_wins.all():  # (appends only: every add is live, nothing to copy)
            live_adds = adds.filter(bool_to_arrow(add_wins))
        if not remove_wins.all():
            live_removes = removes.filter(bool_to_arrow(remove_wins))
    cp_adds, cp_removes = (
        checkpoint_file_actions(storage, parts, pnames, touched) if parts is not None else (None, None)
    )
    parts_out = [_select(cp_adds, schema, keep_stats_parsed=True)] if cp_adds is not None else []
    tparts = [_select(cp_removes, rschema)] if cp_removes is not None else []
    if live_adds.num_rows or not parts_out:
        parts_out.append(_select(live_adds, schema))
    if live_removes.num_rows or not tparts:
        tparts.append(_select(live_removes, rschema))
    files = pa.concat_tables(parts_out, promote_options="permissive") if len(parts_out) > 1 else parts_out[0]
    tombstones = pa.concat_tables(tparts, promote_options="permissive") if len(tparts) > 1 else tparts[0]
    return files, tombstones


def _newest_per_key(adds: pa.Table, removes: pa.Table,
                    want_keys: bool = True) -> tuple[np.ndarray, np.ndarray, pa.Array | None]:
    """(per add: is it the newest action of its key; the same per remove; the distinct keys when `want_keys`).
    The keys are hashed once (`dictionary_encode`) and the newest log position per key taken with numpy: no
    sort of the key strings, no hash set built per `is_in`. Without any deletion vector a key is its path (the
    `file_keys` strings are built only for the distinct keys, and only when asked for)."""
    no_dvs = all(t.column("deletion_vector").null_count == t.num_rows for t in (adds, removes))
    if no_dvs:
        keys = pa.chunked_array([*adds.column("path").chunks, *removes.column("path").chunks],
                                pa.string()).combine_chunks()
    else:
        keys = pa.concat_arrays([file_keys(adds), file_keys(removes)])
    encoded = pc.dictionary_encode(keys)
    codes = arrow_to_np(encoded.indices).astype(np.int64, copy=False)
    orders = np.concatenate([arrow_to_np(adds.column("_order").combine_chunks()),
                             arrow_to_np(removes.column("_order").combine_chunks())]).astype(np.int64, copy=False)
    newest = np.full(len(encoded.dictionary), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(newest, codes, orders)
    wins = newest[codes] == orders
    distinct: pa.Array | None = None
    if want_keys:
        distinct = encoded.dictionary
        if no_dvs:
            distinct = pc.binary_join_element_wise(distinct, str_scalar(""), str_scalar("\x00"))
    return wins[: adds.num_rows], wins[adds.num_rows :], distinct


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



__all__ = ["ReplayResult", "replay", "replay_onto", "read_commits", "commit_infos_for", "file_keys", "DeltaError"]
