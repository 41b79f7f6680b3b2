"""Reading checkpoints: classic, multi-part and V2 (JSON or Parquet, with sidecars) as Arrow tables.

Only the columns replay needs are read (nested column projection), so a checkpoint with 1M adds stays
a few Parquet column reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import CorruptLogError, MissingFileError, ObjectNotFoundError
from ...storage.base import Storage
from ..log.action_tables import (
    FILE_ACTION_LINE_RE,
    conform_file_actions,
    file_keys,
    json_action_type,
    parse_json_lines,
    read_commit_bytes,
    split_lines,
)
from ..log.segment import LOG_DIR, Checkpoint

_ADD_CP_FIELDS = ["path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "deletionVector",
                  "baseRowId", "defaultRowCommitVersion", "tags", "stats_parsed"]
_REMOVE_CP_FIELDS = ["path", "partitionValues", "size", "dataChange", "deletionTimestamp", "deletionVector",
                     "baseRowId", "defaultRowCommitVersion"]


def _open_parquet(storage: Storage, key: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(storage.open_input_file(key), pre_buffer=False)
    except ObjectNotFoundError as e:
        raise MissingFileError(f"checkpoint file {storage.full_uri(key)} is missing") from e
    except (pa.ArrowInvalid, OSError) as e:
        if isinstance(e, FileNotFoundError):
            raise MissingFileError(f"checkpoint file {storage.full_uri(key)} is missing") from e
        raise CorruptLogError(f"checkpoint file {storage.full_uri(key)} is not valid Parquet: {e}") from e


_RARE = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")
#: rows decoded at a time when streaming file actions out of a Parquet checkpoint: bounds the transient
#: memory of decoding (string builders grow by doubling) to a few MB instead of twice the whole column
_BATCH_ROWS = 8192


def _file_action_columns(schema: pa.Schema) -> list[str]:
    cols: list[str] = []
    for kind, fields in (("add", _ADD_CP_FIELDS), ("remove", _REMOVE_CP_FIELDS)):
        if kind in schema.names:
            sub = {f.name for f in schema.field(kind).type}
            cols += [f"{kind}.{n}" for n in fields if n in sub]
    return cols


def _read_rare_columns(storage: Storage, key: str, pf: pq.ParquetFile) -> list[dict[str, Any]]:
    cols = [n for n in _RARE if n in pf.schema_arrow.names]
    if not cols:
        return []
    try:
        return _rare_from_table(pf.read(columns=cols, use_threads=False))
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


@dataclass
class CheckpointParts:
    """An opened checkpoint: its non-file actions are read, its file actions are still on storage.

    File actions are streamed later (`checkpoint_file_actions`), once replay knows the partition columns
    and which files newer commits superseded, so superseded and non-file rows are never materialized.
    """

    parquet: list[tuple[str, pq.ParquetFile | None]] = field(default_factory=list)  # (key, opened file)
    json_lines: list[pa.Array] = field(default_factory=list)  # bulk action lines of JSON checkpoints


def read_checkpoint(storage: Storage, checkpoint: Checkpoint) -> tuple[CheckpointParts, list[dict[str, Any]]]:
    """Open every checkpoint part (and V2 sidecar) and read its non-file actions."""
    parts = CheckpointParts()
    rare: list[dict[str, Any]] = []
    for meta in checkpoint.files:
        if meta.key.endswith(".json"):
            blob = read_commit_bytes(storage, [meta])[0]
            try:
                lines, _ = split_lines([blob])
            except pa.ArrowInvalid as e:
                raise CorruptLogError(f"corrupt checkpoint {storage.full_uri(meta.key)}: {e}") from e
            is_bulk = pc.match_substring_regex(lines, FILE_ACTION_LINE_RE)
            for text in pc.filter(lines, pc.invert(is_bulk)).to_pylist():
                try:
                    rare.append(json.loads(text))
                except ValueError as e:
                    raise CorruptLogError(f"corrupt checkpoint {storage.full_uri(meta.key)}: {e}") from e
            parts.json_lines.append(pc.filter(lines, is_bulk))
        else:
            pf = _open_parquet(storage, meta.key)
            rare += _read_rare_columns(storage, meta.key, pf)
            parts.parquet.append((meta.key, pf))
    for r in rare:
        if "sidecar" in r:
            parts.parquet.append((_sidecar_key(r["sidecar"]["path"]), None))
    return parts, rare


def _sidecar_key(path: str) -> str:
    if "://" in path:
        return f"{LOG_DIR}/{path.split(f'/{LOG_DIR}/', 1)[-1]}"
    return path if "/" in path and not path.startswith("_sidecars") else f"{LOG_DIR}/_sidecars/{path}"


def checkpoint_file_actions(
    storage: Storage, parts: CheckpointParts, pnames: Sequence[str], superseded: pa.Array | None
) -> tuple[pa.Table | None, pa.Table | None]:
    """Live adds and tombstones of the checkpoint as file tables, minus the files in `superseded`.

    `superseded` holds the reconciliation keys (`file_keys`) that newer commits touched. Parquet parts are
    decoded `_BATCH_ROWS` at a time and each batch is filtered before the next is read, so the peak is
    the result plus one batch, not the whole checkpoint decoded and then copied.
    """
    if superseded is not None and len(superseded) == 0:
        superseded = None
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    for lines in parts.json_lines:
        typ = pa.struct([("add", json_action_type("add", pnames)), ("remove", json_action_type("remove", pnames))])
        try:
            parsed = parse_json_lines(lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines, typ)
        except (pa.ArrowInvalid, ValueError) as e:
            raise CorruptLogError(f"corrupt JSON checkpoint: {e}") from e
        a, r = _batch_file_actions({"add": parsed.field("add"), "remove": parsed.field("remove")}, pnames, superseded)
        adds += a
        removes += r

    def stream(item: tuple[str, pq.ParquetFile | None]) -> tuple[list[pa.Table], list[pa.Table]]:
        key, pf = item
        if pf is None:
            pf = _open_parquet(storage, key)
        cols = _file_action_columns(pf.schema_arrow)
        a_out: list[pa.Table] = []
        r_out: list[pa.Table] = []
        if not cols:
            return a_out, r_out
        try:
            for batch in pf.iter_batches(batch_size=_BATCH_ROWS, columns=cols, use_threads=False):
                cols_by_name = {n: batch.column(n) for n in batch.schema.names}
                a, r = _batch_file_actions(cols_by_name, pnames, superseded)
                a_out += a
                r_out += r
        except (pa.ArrowInvalid, OSError) as e:
            raise CorruptLogError(f"checkpoint file {storage.full_uri(key)} could not be read: {e}") from e
        return a_out, r_out

    if len(parts.parquet) > 1:
        with ThreadPoolExecutor(max_workers=min(8, len(parts.parquet))) as pool:
            results = list(pool.map(stream, parts.parquet))
    else:
        results = [stream(item) for item in parts.parquet]
    for a, r in results:
        adds += a
        removes += r
    return _concat(adds), _concat(removes)


def _batch_file_actions(
    columns: dict[str, pa.Array], pnames: Sequence[str], superseded: pa.Array | None
) -> tuple[list[pa.Table], list[pa.Table]]:
    """One batch of raw checkpoint rows -> (add tables, remove tables) holding only the live rows."""
    out: dict[str, list[pa.Table]] = {"add": [], "remove": []}
    for kind in ("add", "remove"):
        col = columns.get(kind)
        if col is None:
            continue
        valid = pc.and_(col.is_valid(), col.field("path").is_valid())  # never null (no literal: see np_to_arrow)
        n_valid = int(pc.sum(valid).as_py() or 0)
        if n_valid == 0:
            continue
        conformed = conform_file_actions(col, pnames, kind)
        if kind == "add" and "stats_parsed" in {f.name for f in col.type}:
            conformed = conformed.append_column("stats_parsed", col.field("stats_parsed"))
        keep = valid
        if superseded is not None:
            keep = pc.and_(keep, pc.invert(pc.is_in(file_keys(conformed), value_set=superseded)))
            n_valid = int(pc.sum(keep).as_py() or 0)
        if n_valid == len(conformed):
            out[kind].append(conformed)
        elif n_valid:
            out[kind].append(conformed.filter(keep))
    return out["add"], out["remove"]


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive")
