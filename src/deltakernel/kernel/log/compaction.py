"""Log compaction files: `_delta_log/<x>.<y>.compacted.json` (PROTOCOL.md "Log Compaction Files").

A compaction holds the reconciled actions of commits x..y: per (path, DV unique id) only the newest add or
remove (a file added and removed in the range leaves its remove), the newest protocol and metaData, the
newest txn per appId and domainMetadata per domain (tombstones kept: they hide older state); commitInfo
and cdc actions are dropped. File actions are reconciled with Arrow on the replay's parsed tables and
written as their original JSON lines, so fields this reader does not model survive.

Readers may use compactions instead of the commits; ours does not (the listing ignores the name): replay
already reads many commits in bulk, and commit-level information (commitInfo, in-commit timestamps, the
change data feed) has to come from the commits anyway. Writing them serves other readers.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError, FileAlreadyExistsError
from ...storage.base import Storage
from ..arrow_build import arrow_to_np, np_to_arrow, str_scalar
from .action_tables import FILE_ACTION_LINE_RE, file_keys, split_lines
from .replay import read_commits
from .segment import LOG_DIR, list_commits


def compaction_key(start: int, end: int) -> str:
    return f"{LOG_DIR}/{start:020d}.{end:020d}.compacted.json"


def compact_logs(storage: Storage, snapshot: Any, start_version: int | None = None,
                 end_version: int | None = None) -> str | None:
    """Write the compaction of commits start..end (default: after the snapshot's checkpoint up to its
    version); returns its key, or None when the range has fewer than two commits. Never overwrites."""
    segment = snapshot.segment
    end = snapshot.version if end_version is None else int(end_version)
    if start_version is None:
        start = segment.checkpoint.version + 1 if segment.checkpoint is not None else 0
    else:
        start = int(start_version)
    if start < 0 or end > snapshot.version or start > end:
        raise DeltaError(f"invalid compaction range {start}..{end} (the table is at version {snapshot.version})")
    if end - start < 1:
        return None
    commits = list_commits(storage)
    missing = [v for v in range(start, end + 1) if v not in commits]
    if missing:
        raise DeltaError(f"cannot compact {start}..{end}: commit(s) {missing[:5]} are not in the log")
    metas = [commits[v] for v in range(start, end + 1)]
    payload = compacted_lines(storage, metas)
    key = compaction_key(start, end)
    try:
        storage.put_if_absent(key, payload)
    except FileAlreadyExistsError:
        pass  # same commits, same reconciliation: the existing file says the same
    return key


def compacted_lines(storage: Storage, metas: list[Any]) -> bytes:
    """The reconciled actions of the commits `metas` (ascending), as newline-delimited JSON."""
    batch = read_commits(storage, metas)
    out: list[str] = []
    latest: dict[str, Any] = {}
    txns: dict[str, Any] = {}
    domains: dict[str, Any] = {}
    for _, obj in batch.rare:  # few: protocol, metaData, txn, domainMetadata, commitInfo
        if isinstance(obj.get("protocol"), dict):
            latest["protocol"] = obj
        elif isinstance(obj.get("metaData"), dict):
            latest["metaData"] = obj
        elif isinstance(obj.get("txn"), dict):
            txns[str(obj["txn"].get("appId"))] = obj
        elif isinstance(obj.get("domainMetadata"), dict):
            domains[str(obj["domainMetadata"].get("domain"))] = obj
    for obj in [*latest.values(), *txns.values(), *domains.values()]:
        out.append(json.dumps(obj, separators=(",", ":")))
    head = "".join(f"{line}\n" for line in out).encode()
    return head + _file_action_lines(storage, metas, batch.adds, batch.removes)


def _file_action_lines(storage: Storage, metas: list[Any], adds: pa.Table, removes: pa.Table) -> bytes:
    """Original JSON lines of the newest add/remove per (path, DV id), in log order, newline-terminated."""
    n = adds.num_rows + removes.num_rows
    if n == 0:
        return b""
    keys = pa.concat_arrays([file_keys(adds), file_keys(removes)])
    order = np.concatenate([arrow_to_np(adds.column("_order")), arrow_to_np(removes.column("_order"))])
    # newest per key: sort by (key, order) and keep each key's last row
    sort_idx = pc.sort_indices(pa.table({"k": keys, "o": np_to_arrow(order)}),
                               sort_keys=[("k", "ascending"), ("o", "ascending")])
    sorted_keys = pc.take(keys, sort_idx)
    if len(sorted_keys) > 1:
        differs = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, len(sorted_keys) - 1))
        last = np.append(arrow_to_np(differs.fill_null(True)), True)
    else:
        last = np.ones(1, dtype=np.bool_)
    winners = np.sort(order[arrow_to_np(sort_idx)[last]])
    blobs = storage.read_many([m.key for m in metas])
    lines, _ = split_lines(blobs)
    bulk = pc.filter(lines, pc.match_substring_regex(lines, FILE_ACTION_LINE_RE))
    chosen = pc.take(bulk, np_to_arrow(winners)).cast(pa.large_string())
    one = pa.LargeListArray.from_arrays(np_to_arrow([0, len(chosen)]), chosen)
    joined = pc.binary_join(one, str_scalar("\n", pa.large_string()))[0].as_buffer()
    return bytes(joined.to_pybytes()) + b"\n"


__all__ = ["compact_logs", "compacted_lines", "compaction_key"]
