"""Reading checkpoints: classic, multi-part and V2 (JSON or Parquet, with sidecars) as Arrow tables.

Only the columns replay needs are read (nested column projection), so a checkpoint with 1M adds stays
a few Parquet column reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import CorruptLogError, MissingFileError, ObjectNotFoundError
from ..storage.base import Storage
from .action_tables import (
    _BULK_RE,
    _conform_file_actions,
    _json_action_type,
    _parse_json_lines,
    _read_commit_bytes,
    split_lines,
)
from .log_segment import LOG_DIR, Checkpoint

_ADD_CP_FIELDS = ["path", "partitionValues", "size", "modificationTime", "dataChange", "stats", "deletionVector",
                  "baseRowId", "defaultRowCommitVersion", "tags", "stats_parsed"]
_REMOVE_CP_FIELDS = ["path", "partitionValues", "size", "dataChange", "deletionTimestamp", "deletionVector",
                     "baseRowId", "defaultRowCommitVersion"]


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
        # single-threaded decode: same speed here, and ~20% less peak memory (fewer decode buffers alive)
        return pf.read(columns=cols, use_threads=False)
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


#: column marking the rows of a checkpoint table that hold this kind of action
VALID = "__valid"


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
            # no filtering here: replay applies "is this kind of action" and "not superseded" in one pass
            valid = pc.fill_null(pc.and_(col.is_valid(), col.field("path").is_valid()), False)
            conformed = _conform_file_actions(col, pnames, kind)
            if kind == "add" and "stats_parsed" in {f.name for f in col.type}:
                conformed = conformed.append_column("stats_parsed", col.field("stats_parsed"))
            out.append(conformed.append_column(VALID, valid))
    return _concat(adds), _concat(removes)


def _concat(tables: list[pa.Table]) -> pa.Table | None:
    tables = [t for t in tables if t is not None]
    if not tables:
        return None
    if len(tables) == 1:
        return tables[0]
    return pa.concat_tables(tables, promote_options="permissive")
