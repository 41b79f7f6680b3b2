"""Writing checkpoints (PROTOCOL.md "Checkpoints", "V2 Spec",
"Checkpoint Schema", "Last Checkpoint File"); log cleanup is in `log_cleanup.py`.

Why streaming: a snapshot can hold millions of live files. The file table is already columnar, so the
checkpoint is produced by slicing it into batches and reshaping each slice with Arrow compute into the
checkpoint's `add` / `remove` structs; no Python object is ever built per action. Batches go through one
`ParquetWriter` into a spooled temp file that is uploaded once, with an atomic create, so a reader never
sees a partial classic checkpoint.

Layout follows what Spark writes (column order txn, add, remove, metaData, protocol, domainMetadata, plus
checkpointMetadata and sidecar for V2-spec checkpoints), so every Delta reader accepts it.
"""

from __future__ import annotations

import bisect
import itertools
import json
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import DeltaError, FileAlreadyExistsError
from ...storage.base import Storage
from ..arrow_build import bool_to_arrow, bytes_to_arrow, int_scalar, np_to_arrow, rows_to_table, scalar
from ..geo.bbox import POINT_TYPE
from ..log.retention import DEFAULT_TOMBSTONE_RETENTION, parse_interval_ms
from ..log.retention import flag as _flag
from ..log.retention import interval_conf as _interval_conf
from ..log.segment import LAST_CHECKPOINT_KEY, LOG_DIR, commit_key, last_checkpoint_checksum, read_last_checkpoint
from ..protocol.features import is_catalog_managed
from ..scan.partition_values import parse_partition_array
from ..schema.arrow import from_arrow_schema, to_arrow_type
from ..schema.types import StructField, StructType, schema_to_json
from ..snapshot import Snapshot
from ..stats.parse import FileStats, parse_stats, stats_from_struct, stats_leaf_columns

#: actions per Parquet row group / per reshaping step; bounds the memory of one step
BATCH_ROWS = 50_000
#: V2 checkpoints put file actions into sidecars once there are more than this many
SIDECAR_THRESHOLD = 100_000
#: file actions per sidecar file
SIDECAR_ROWS = 1_000_000
#: spooled Parquet output stays in memory up to this size, then moves to a temp file
SPOOL_MEMORY = 64 << 20

_TRUE, _FALSE = scalar(True), scalar(False)  # Arrow scalars: Python literals make pyarrow import pandas


STR_MAP = pa.map_(pa.string(), pa.string())
_S, _L, _I, _B = pa.string(), pa.int64(), pa.int32(), pa.bool_()
DV_TYPE = pa.struct([("storageType", _S), ("pathOrInlineDv", _S), ("offset", _I), ("sizeInBytes", _I),
                     ("cardinality", _L), ("maxRowIndex", _L)])
TXN_TYPE = pa.struct([("appId", _S), ("version", _L), ("lastUpdated", _L)])
METADATA_TYPE = pa.struct([
    ("id", _S), ("name", _S), ("description", _S), ("format", pa.struct([("provider", _S), ("options", STR_MAP)])),
    ("schemaString", _S), ("partitionColumns", pa.list_(_S)), ("configuration", STR_MAP), ("createdTime", _L)])
PROTOCOL_TYPE = pa.struct([("minReaderVersion", _I), ("minWriterVersion", _I), ("readerFeatures", pa.list_(_S)),
                           ("writerFeatures", pa.list_(_S))])
DOMAIN_TYPE = pa.struct([("domain", _S), ("configuration", _S), ("removed", _B)])
CHECKPOINT_METADATA_TYPE = pa.struct([("version", _L), ("tags", STR_MAP)])
SIDECAR_TYPE = pa.struct([("path", _S), ("sizeInBytes", _L), ("modificationTime", _L), ("tags", STR_MAP)])
REMOVE_TYPE = pa.struct([
    ("path", _S), ("deletionTimestamp", _L), ("dataChange", _B), ("extendedFileMetadata", _B),
    ("partitionValues", STR_MAP), ("size", _L), ("deletionVector", DV_TYPE), ("baseRowId", _L),
    ("defaultRowCommitVersion", _L)])


# ----------------------------------------------------------------------------- the plan
@dataclass
class _Plan:
    """Everything decided once per checkpoint, so every batch has the same schema."""

    snapshot: Snapshot
    json_stats: bool
    struct_stats: bool
    partition_names: list[str]  # physical, as keys of the file table's partition_values
    partition_fields: list[StructField]  # logical fields, same order
    data_schema: StructType  # the schema without partition columns (stats cover data columns only)
    tight_bounds: bool
    add_type: pa.StructType = field(init=False)

    def __post_init__(self) -> None:
        fields: list[tuple[str, pa.DataType]] = [
            ("path", pa.string()), ("partitionValues", STR_MAP), ("size", pa.int64()),
            ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("tags", STR_MAP),
            ("deletionVector", DV_TYPE), ("baseRowId", pa.int64()), ("defaultRowCommitVersion", pa.int64()),
            ("clusteringProvider", pa.string()),
        ]
        if self.json_stats:
            fields.append(("stats", pa.string()))
        if self.struct_stats:
            if self.partition_fields:
                fields.append(("partitionValues_parsed", pa.struct(
                    [(n, to_arrow_type(f.type)) for n, f in zip(self.partition_names, self.partition_fields)])))
            fields.append(("stats_parsed", self._stats_type()))
        self.add_type = pa.struct(fields)

    def _stats_type(self) -> pa.DataType:
        leaves = stats_leaf_columns(self.data_schema, self.snapshot.column_mapping_mode, None)
        out: list[tuple[str, pa.DataType]] = [("numRecords", pa.int64())]
        if self.tight_bounds:
            out.append(("tightBounds", pa.bool_()))
        # geometry bounds stay in the JSON `stats` only: their JSON form is WKT text, which has no agreed typed form
        mm = [lf for lf in leaves if lf.minmax and lf.arrow != POINT_TYPE]
        if mm:
            out.append(("minValues", _nested_type([(lf.physical, lf.arrow) for lf in mm])))
            out.append(("maxValues", _nested_type([(lf.physical, lf.arrow) for lf in mm])))
        if leaves:
            out.append(("nullCount", _nested_type([(lf.physical, pa.int64()) for lf in leaves])))
        return pa.struct(out)

    def schema(self, *, v2: bool, file_actions_only: bool = False) -> pa.Schema:
        if file_actions_only:  # a sidecar holds add and remove only
            return pa.schema([("add", self.add_type), ("remove", REMOVE_TYPE)])
        cols = [("txn", TXN_TYPE), ("add", self.add_type), ("remove", REMOVE_TYPE), ("metaData", METADATA_TYPE),
                ("protocol", PROTOCOL_TYPE), ("domainMetadata", DOMAIN_TYPE)]
        if v2:
            cols += [("checkpointMetadata", CHECKPOINT_METADATA_TYPE), ("sidecar", SIDECAR_TYPE)]
        return pa.schema(cols)


def _make_plan(snapshot: Snapshot) -> _Plan:
    conf = snapshot.configuration
    files = snapshot.files
    struct_stats = _flag(conf, "delta.checkpoint.writeStatsAsStruct", False)
    if not struct_stats and "stats_parsed" in files.column_names and files.num_rows:
        # stats that only exist as a struct (a checkpoint written without JSON stats) must not be lost
        lost = pc.and_(pc.is_null(files.column("stats")), pc.is_valid(files.column("stats_parsed")))
        struct_stats = bool(pc.any(lost).as_py())
    part_cols = set(snapshot.partition_columns)
    data_schema = StructType(tuple(f for f in snapshot.schema.fields if f.name not in part_cols))
    pstruct = files.schema.field("partition_values").type
    return _Plan(
        snapshot=snapshot,
        json_stats=_flag(conf, "delta.checkpoint.writeStatsAsJson", True),
        struct_stats=struct_stats,
        partition_names=[pstruct.field(i).name for i in range(pstruct.num_fields)],
        partition_fields=list(snapshot.partition_fields),
        data_schema=data_schema,
        tight_bounds=snapshot.protocol.has_feature("deletionVectors"),
    )


# ----------------------------------------------------------------------------- reshaping
def _nested_type(leaves: list[tuple[tuple[str, ...], pa.DataType]]) -> pa.DataType:
    tree = _tree(leaves)

    def build(node: dict[str, Any]) -> pa.DataType:
        return pa.struct([(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


def _tree(leaves: list[tuple[tuple[str, ...], Any]]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, value in leaves:
        node = tree
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        else:
            node.setdefault(path[-1], value)
    return tree


def _nested_array(leaves: list[tuple[tuple[str, ...], pa.Array]], typ: pa.DataType, n: int) -> pa.Array:
    tree = _tree(leaves)

    def build(node: dict[str, Any], t: pa.DataType) -> pa.Array:
        children = []
        for f in t:
            sub = node.get(f.name)
            if isinstance(sub, dict):
                children.append(build(sub, f.type))
            elif sub is None:
                children.append(pa.nulls(n, f.type))
            else:
                children.append(sub if sub.type == f.type else sub.cast(f.type))
        return pa.StructArray.from_arrays(children, fields=list(t))

    return build(tree, typ)


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def _children(struct: pa.StructArray) -> list[pa.Array]:
    """The struct's children sliced like the struct (pc.struct_field honours the parent's offset)."""
    return [pc.struct_field(struct, [i]) for i in range(struct.type.num_fields)]


def struct_to_map(struct: pa.StructArray) -> pa.Array:
    """struct<k1: string, ...> -> map<string, string> with every key on every row (nulls kept)."""
    n, k = len(struct), struct.type.num_fields
    names = [struct.type.field(i).name for i in range(k)]
    offsets = np_to_arrow(np.arange(0, n * k + 1, k, dtype=np.int32) if k else np.zeros(n + 1, dtype=np.int32),
                          pa.int32())
    if k == 0 or n == 0:
        empty = pa.nulls(0, pa.string())
        return pa.MapArray.from_arrays(offsets, empty, empty).cast(STR_MAP)
    values = pa.concat_arrays([c.cast(pa.string()) for c in _children(struct)])
    order = (np.arange(n)[:, None] + np.arange(k)[None, :] * n).ravel()
    items = values.take(np_to_arrow(order))
    keys = bytes_to_arrow([x.encode() for x in names], pa.string()).take(np_to_arrow(np.tile(np.arange(k), n)))
    return pa.MapArray.from_arrays(offsets, keys, items).cast(STR_MAP)


def _dv(arr: pa.StructArray) -> pa.Array:
    n = len(arr)
    children = [*_children(arr), pa.nulls(n, pa.int64())]
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=arr.is_null())


def _add_struct(files: pa.Table, plan: _Plan) -> pa.StructArray:
    n = files.num_rows
    pv = _column(files, "partition_values")
    cols: dict[str, pa.Array] = {
        "path": _column(files, "path"),
        "partitionValues": struct_to_map(pv),
        "size": _column(files, "size"),
        "modificationTime": _column(files, "modification_time"),
        "dataChange": bool_to_arrow(np.zeros(n, dtype=bool)),
        "tags": _column(files, "tags").cast(STR_MAP),
        "deletionVector": _dv(_column(files, "deletion_vector")),
        "baseRowId": _column(files, "base_row_id"),
        "defaultRowCommitVersion": _column(files, "default_row_commit_version"),
        "clusteringProvider": pa.nulls(n, pa.string()),
    }
    if plan.json_stats:
        cols["stats"] = _column(files, "stats")
    if plan.struct_stats:
        if plan.partition_fields:
            children = _children(pv)
            by_name = {pv.type.field(i).name: children[i] for i in range(len(children))}
            parsed = [parse_partition_array(by_name[name], f.type)
                      for name, f in zip(plan.partition_names, plan.partition_fields)]
            cols["partitionValues_parsed"] = pa.StructArray.from_arrays(
                parsed, fields=list(plan.add_type.field("partitionValues_parsed").type))
        cols["stats_parsed"] = _stats_parsed(files, plan)
    typ = plan.add_type
    return pa.StructArray.from_arrays([cols[f.name].cast(f.type) for f in typ], fields=list(typ))


def _stats_parsed(files: pa.Table, plan: _Plan) -> pa.Array:
    n = files.num_rows
    mode = plan.snapshot.column_mapping_mode
    stats_json = _column(files, "stats")
    fs: FileStats = parse_stats(stats_json, plan.data_schema, mode)
    has_struct = "stats_parsed" in files.column_names
    if has_struct:
        fs = fs.coalesce(stats_from_struct(_column(files, "stats_parsed"), plan.data_schema, mode))
    typ = plan.add_type.field("stats_parsed").type
    leaves = stats_leaf_columns(plan.data_schema, mode, None)
    cols: dict[str, pa.Array] = {"numRecords": fs.num_records, "tightBounds": fs.tight_bounds}
    for key, source in (("minValues", fs.min_values), ("maxValues", fs.max_values), ("nullCount", fs.null_count)):
        if typ.get_field_index(key) < 0:
            continue
        pairs = [(lf.physical, source[lf.logical]) for lf in leaves if lf.logical in source
                 and (key == "nullCount" or lf.arrow != POINT_TYPE)]
        cols[key] = _nested_array(pairs, typ.field(key).type, n)
    missing = pc.is_null(stats_json)
    if has_struct:
        missing = pc.and_(missing, pc.is_null(_column(files, "stats_parsed")))
    return pa.StructArray.from_arrays([cols[f.name].cast(f.type) for f in typ], fields=list(typ),
                                      mask=pc.fill_null(missing, _TRUE))


def _remove_struct(tombs: pa.Table) -> pa.StructArray:
    n = tombs.num_rows
    size = _column(tombs, "size")
    cols = [
        _column(tombs, "path"), _column(tombs, "deletion_timestamp"), bool_to_arrow(np.zeros(n, dtype=bool)),
        pc.is_valid(size), struct_to_map(_column(tombs, "partition_values")), size,
        _dv(_column(tombs, "deletion_vector")), _column(tombs, "base_row_id"),
        _column(tombs, "default_row_commit_version"),
    ]
    return pa.StructArray.from_arrays([c.cast(f.type) for c, f in zip(cols, REMOVE_TYPE)], fields=list(REMOVE_TYPE))


def _batch(schema: pa.Schema, column: str, values: pa.Array) -> pa.RecordBatch:
    n = len(values)
    arrays = [values if f.name == column else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _chunk_bounds(files: pa.Table) -> list[int]:
    """Row offsets where the big columns' chunks end: slicing there never copies (no combine_chunks)."""
    bounds: set[int] = set()
    for name in ("path", "stats"):
        if name in files.column_names:
            bounds.update(itertools.accumulate(len(c) for c in files.column(name).chunks))
    return sorted(bounds)


def _file_action_batches(files: pa.Table, tombstones: pa.Table, plan: _Plan, schema: pa.Schema,
                         start: int = 0, stop: int | None = None) -> Iterator[pa.RecordBatch]:
    """Batches for file actions [start, stop) of the sequence adds ++ removes."""
    total = files.num_rows + tombstones.num_rows
    stop = total if stop is None else min(stop, total)
    bounds = _chunk_bounds(files)
    pos = start
    while pos < stop:
        if pos < files.num_rows:
            end = min(stop, files.num_rows, pos + BATCH_ROWS)
            nxt = bisect.bisect_right(bounds, pos)
            if nxt < len(bounds):
                end = min(end, bounds[nxt])
            yield _batch(schema, "add", _add_struct(files.slice(pos, end - pos), plan))
        else:
            end = min(stop, pos + BATCH_ROWS)
            off = pos - files.num_rows
            yield _batch(schema, "remove", _remove_struct(tombstones.slice(off, end - pos)))
        pos = end


# ----------------------------------------------------------------------------- non-file actions
def _pairs(d: dict[str, str] | None) -> list[tuple[str, str]]:
    return list((d or {}).items())


def _non_file_table(snapshot: Snapshot, schema: pa.Schema, txns: list[dict[str, Any]],
                    v2: bool, sidecars: list[dict[str, Any]]) -> pa.Table:
    md = snapshot.metadata.to_json()
    md["configuration"] = _pairs(md.get("configuration"))
    md["format"] = {"provider": md["format"]["provider"], "options": _pairs(md["format"].get("options"))}
    proto = snapshot.protocol
    rows: list[dict[str, Any]] = []
    if v2:
        rows.append({"checkpointMetadata": {"version": snapshot.version, "tags": None}})
    rows.append({"protocol": {
        "minReaderVersion": proto.min_reader_version, "minWriterVersion": proto.min_writer_version,
        "readerFeatures": sorted(proto.reader_features) if proto.reader_features is not None else None,
        "writerFeatures": sorted(proto.writer_features) if proto.writer_features is not None else None,
    }})
    rows.append({"metaData": md})
    rows += [{"txn": t} for t in txns]
    rows += [{"domainMetadata": {"domain": d.domain, "configuration": d.configuration, "removed": False}}
             for d in snapshot.domain_metadata.values() if not d.removed]
    rows += [{"sidecar": {**s, "tags": None}} for s in sidecars]
    return rows_to_table(rows, schema)


def _live_txns(snapshot: Snapshot, now_ms: int) -> list[dict[str, Any]]:
    retention = _interval_conf(snapshot.configuration, "delta.setTransactionRetentionDuration", None)
    out = []
    for t in snapshot.txns.values():
        if retention is not None and t.last_updated is not None and t.last_updated < now_ms - retention:
            continue  # expired application transaction (only when the table asks for expiry)
        out.append({"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated})
    return out


def _live_tombstones(snapshot: Snapshot, now_ms: int) -> pa.Table:
    retention = _interval_conf(snapshot.configuration, "delta.deletedFileRetentionDuration",
                               DEFAULT_TOMBSTONE_RETENTION)
    tombs = snapshot.tombstones
    if not tombs.num_rows:
        return tombs
    assert retention is not None
    keep = pc.fill_null(pc.greater(tombs.column("deletion_timestamp"), int_scalar(now_ms - retention)), _FALSE)
    return tombs.filter(keep)


# ----------------------------------------------------------------------------- output
class _Spool:
    """A Parquet file built batch by batch in a bounded spool, uploaded once at the end."""

    def __init__(self, schema: pa.Schema) -> None:
        self.file: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)
        self.writer = pq.ParquetWriter(pa.PythonFile(self.file, mode="w"), schema, compression="snappy",
                                       write_statistics=False)
        self.rows = 0
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer small batches into row groups of about BATCH_ROWS actions."""
        if batch.num_rows:
            self.pending.append(batch)
            self.pending_rows += batch.num_rows
            self.rows += batch.num_rows
            if self.pending_rows >= BATCH_ROWS:
                self._flush()

    def _flush(self) -> None:
        if self.pending_rows:
            self.writer.write_table(pa.Table.from_batches(self.pending), row_group_size=self.pending_rows)
        self.pending, self.pending_rows = [], 0

    def finish(self) -> bytes:
        self._flush()
        self.writer.close()
        self.file.seek(0)
        data = self.file.read()
        self.file.close()
        return data


def _put_new(storage: Storage, key: str, data: bytes) -> bool:
    """Atomic create; False when the object already exists (another writer's checkpoint stands)."""
    try:
        storage.put_if_absent(key, data)
        return True
    except FileAlreadyExistsError:
        return False


def _overwrite(storage: Storage, key: str, data: bytes) -> None:
    put = getattr(storage, "put", None)
    if callable(put):
        put(key, data)
        return
    storage.delete(key)  # a storage without unconditional put: best effort replace
    _put_new(storage, key, data)


def _write_last_checkpoint(storage: Storage, info: dict[str, Any]) -> None:
    current = read_last_checkpoint(storage)
    if current is not None and int(current["version"]) > int(info["version"]):
        return  # never move the hint backwards
    info = dict(info)
    info["checksum"] = last_checkpoint_checksum(info)
    _overwrite(storage, LAST_CHECKPOINT_KEY, json.dumps(info, separators=(",", ":")).encode())


def _checkpoint_schema_json(schema: pa.Schema) -> dict[str, Any] | None:
    try:
        result: dict[str, Any] = json.loads(schema_to_json(from_arrow_schema(schema)))
        return result
    except (DeltaError, ValueError, TypeError):
        return None


# ----------------------------------------------------------------------------- entry point
def write_checkpoint(snapshot: Snapshot, *, kind: str | None = None, now_ms: int | None = None,
                     sidecar_threshold: int | None = None) -> int:
    """Write a checkpoint of `snapshot` (classic, or UUID-named V2 when the table has v2Checkpoint).

    Returns the checkpoint's version. An existing classic checkpoint for that version is left alone.
    """
    v2_table = snapshot.protocol.has_feature("v2Checkpoint")
    kind = kind or ("v2" if v2_table else "classic")
    if kind not in ("classic", "v2"):
        raise ValueError(f"unknown checkpoint kind {kind!r} (use 'classic' or 'v2')")
    if kind == "v2" and not v2_table:
        raise DeltaError("UUID-named V2 checkpoints need the v2Checkpoint table feature")
    now = int(time.time() * 1000) if now_ms is None else now_ms
    storage, version = snapshot.storage, snapshot.version
    if is_catalog_managed(snapshot.protocol) and not storage.exists(commit_key(version)):
        # PROTOCOL.md "Maintenance Operations on Catalog-managed Tables": only published versions
        raise DeltaError(f"cannot checkpoint version {version} of {storage.root_uri}: it is ratified by the "
                         "catalog but not yet published to _delta_log/ (publish it first)")
    plan = _make_plan(snapshot)
    files = snapshot.files
    tombs = _live_tombstones(snapshot, now)
    txns = _live_txns(snapshot, now)
    n_files = files.num_rows + tombs.num_rows
    main_schema = plan.schema(v2=v2_table)

    if kind == "classic":
        key = f"{LOG_DIR}/{version:020d}.checkpoint.parquet"
        if storage.exists(key):
            return version
        spool = _Spool(main_schema)
        spool.write(_non_file_table(snapshot, main_schema, txns, v2_table, []).to_batches()[0])
        for b in _file_action_batches(files, tombs, plan, main_schema):
            spool.write(b)
        rows, data = spool.rows, spool.finish()
        if not _put_new(storage, key, data):
            return version
        total_bytes = len(data)
    else:
        threshold = SIDECAR_THRESHOLD if sidecar_threshold is None else sidecar_threshold
        sidecars: list[dict[str, Any]] = []
        rows = total_bytes = 0
        if n_files > threshold:
            side_schema = plan.schema(v2=True, file_actions_only=True)
            n_parts = max(1, -(-n_files // SIDECAR_ROWS))
            for i in range(n_parts):
                spool = _Spool(side_schema)
                for b in _file_action_batches(files, tombs, plan, side_schema, i * SIDECAR_ROWS,
                                              (i + 1) * SIDECAR_ROWS):
                    spool.write(b)
                rows += spool.rows
                data = spool.finish()
                name = f"{version:020d}.checkpoint.{i + 1:010d}.{n_parts:010d}.{uuid.uuid4()}.parquet"
                skey = f"{LOG_DIR}/_sidecars/{name}"
                storage.put_if_absent(skey, data)
                total_bytes += len(data)
                sidecars.append({"path": name, "sizeInBytes": len(data),
                                 "modificationTime": storage.head(skey).last_modified_ms})
        key = f"{LOG_DIR}/{version:020d}.checkpoint.{uuid.uuid4()}.parquet"
        spool = _Spool(main_schema)
        spool.write(_non_file_table(snapshot, main_schema, txns, True, sidecars).to_batches()[0])
        if not sidecars:
            for b in _file_action_batches(files, tombs, plan, main_schema):
                spool.write(b)
        rows += spool.rows
        data = spool.finish()
        storage.put_if_absent(key, data)
        total_bytes += len(data)

    info: dict[str, Any] = {"version": version, "size": rows, "sizeInBytes": total_bytes,
                            "numOfAddFiles": files.num_rows}
    schema_json = _checkpoint_schema_json(main_schema)
    if schema_json is not None:
        info["checkpointSchema"] = schema_json
    _write_last_checkpoint(storage, info)
    return version


__all__ = ["write_checkpoint", "parse_interval_ms", "struct_to_map"]
