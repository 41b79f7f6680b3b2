"""Version checksum files (`_delta_log/N.crc`, PROTOCOL.md "Version Checksum File").

Writing: after each commit the transaction derives the table state at the new version from what it
already holds -- the snapshot it read (exact: its file table is in memory) plus the commit's actions --
and puts `N.crc` if absent (`DELTAKERNEL_WRITE_CHECKSUMS=false` turns it off). A rebased commit (other
writers landed in between) has no exact base in memory: it derives the state from the previous version's
crc only for a commit that adds new paths and removes nothing; otherwise no crc is written (the protocol
makes the file optional; a wrong one would make the table unreadable for validating readers).

Reading: `verify_snapshot` compares a loaded snapshot with the crc at its version (numFiles,
tableSizeBytes, protocol, metadata). The log is the source of truth and the crc optional, so a mismatch
is a logged warning by default (kernel-rs' `crc-full` fixture, read by deltalake, has a crc that does
not match its log); `DELTAKERNEL_VERIFY_CHECKSUMS=strict` raises CorruptLogError instead (delta-spark's
`checksum.mismatch.fatal`), `false` skips the check. A missing or unparsable crc is ignored.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptLogError, FileAlreadyExistsError, ObjectNotFoundError, StorageError
from ..storage.base import Storage
from .arrow_build import arrow_to_np, bytes_to_arrow
from .log.action_tables import dv_unique_ids
from .log.actions import Metadata, Protocol
from .log.segment import LOG_DIR

log = logging.getLogger(__name__)

#: delta-spark's file size histogram bins (bytes; each bin's inclusive start), as found in its crc files
FILE_SIZE_BINS: tuple[int, ...] = (
    0, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304, 8388608, 12582912,
    16777216, 20971520, 25165824, 29360128, 33554432, 37748736, 41943040, 50331648, 58720256, 67108864,
    75497472, 83886080, 92274688, 100663296, 109051904, 117440512, 125829120, 130023424, 134217728, 138412032,
    142606336, 146800640, 150994944, 167772160, 184549376, 201326592, 218103808, 234881024, 251658240,
    268435456, 285212672, 301989888, 318767104, 335544320, 352321536, 369098752, 385875968, 402653184,
    419430400, 436207616, 452984832, 469762048, 486539264, 503316480, 520093696, 536870912, 553648128,
    570425344, 587202560, 603979776, 671088640, 738197504, 805306368, 872415232, 939524096, 1006632960,
    1073741824, 1140850688, 1207959552, 1275068416, 1342177280, 1409286144, 1476395008, 1610612736,
    1744830464, 1879048192, 2013265920, 2147483648, 2415919104, 2684354560, 2952790016, 3221225472,
    3489660928, 3758096384, 4026531840, 4294967296, 8589934592, 17179869184, 34359738368, 68719476736,
    137438953472, 274877906944,
)

_Key = tuple[str, str]  # (path, deletion vector unique id or "")


def checksum_key(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.crc"


def verification_mode() -> str:
    """"warn" (default), "strict" or "off", from `DELTAKERNEL_VERIFY_CHECKSUMS`."""
    raw = os.environ.get("DELTAKERNEL_VERIFY_CHECKSUMS", "warn").strip().lower()
    if raw in ("false", "0", "no", "off"):
        return "off"
    return "strict" if raw in ("strict", "error", "fatal") else "warn"


# ----------------------------------------------------------------------------- reading
def read_checksum(storage: Storage, version: int) -> dict[str, Any] | None:
    """The crc of `version` as a dict; None when absent or not a JSON object (it is optional: warn only)."""
    key = checksum_key(version)
    try:
        raw = storage.read(key)
    except ObjectNotFoundError:
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        log.warning("ignoring unparsable version checksum %s", storage.full_uri(key))
        return None
    if not isinstance(obj, dict):
        log.warning("ignoring version checksum %s: not a JSON object", storage.full_uri(key))
        return None
    return obj


def _protocol_tuple(p: Protocol) -> tuple[int, int, frozenset[str], frozenset[str]]:
    return (p.min_reader_version, p.min_writer_version, p.reader_features or frozenset(),
            p.writer_features or frozenset())


def _metadata_tuple(md: Metadata) -> tuple[Any, ...]:
    try:
        schema = json.loads(md.schema_string)
    except ValueError:
        schema = md.schema_string
    return (md.id, schema, tuple(md.partition_columns), md.configuration, md.format.provider)


def checksum_mismatches(crc: dict[str, Any], *, num_files: int, table_size: int, protocol: Protocol,
                        metadata: Metadata) -> list[str]:
    """The fields of `crc` that disagree with the given state (the protocol's required fields)."""
    out: list[str] = []
    if "numFiles" in crc and crc["numFiles"] != num_files:
        out.append(f"numFiles {crc['numFiles']} != {num_files}")
    if "tableSizeBytes" in crc and crc["tableSizeBytes"] != table_size:
        out.append(f"tableSizeBytes {crc['tableSizeBytes']} != {table_size}")
    if isinstance(crc.get("protocol"), dict):
        try:
            if _protocol_tuple(Protocol.from_json(crc["protocol"])) != _protocol_tuple(protocol):
                out.append(f"protocol {crc['protocol']} != {protocol.to_json()}")
        except CorruptLogError:
            out.append("protocol is malformed")
    if isinstance(crc.get("metadata"), dict):
        try:
            if _metadata_tuple(Metadata.from_json(crc["metadata"])) != _metadata_tuple(metadata):
                out.append("metadata differs (id, schema, partition columns, configuration or format)")
        except CorruptLogError:
            out.append("metadata is malformed")
    return out


def verify_snapshot(snapshot: Any) -> list[str]:
    """Compare `snapshot` with the crc the listing found at its version: a warning on a mismatch, or
    CorruptLogError in strict mode. Returns the mismatches.

    Costs one small read when the crc exists (the listing already knows whether it does) and one Arrow
    reduction; nothing when it does not.
    """
    meta = getattr(snapshot.segment, "checksum", None)
    mode = verification_mode()
    if meta is None or mode == "off":
        return []
    crc = read_checksum(snapshot.storage, snapshot.version)
    if crc is None:
        return []
    files = snapshot.files
    size = pc.sum(files.column("size")).as_py() if files.num_rows else 0
    bad = checksum_mismatches(crc, num_files=files.num_rows, table_size=int(size or 0),
                              protocol=snapshot.protocol, metadata=snapshot.metadata)
    if bad:
        msg = (f"the table state of {snapshot.storage.root_uri} at version {snapshot.version} does not match its "
               f"version checksum {checksum_key(snapshot.version)}: {'; '.join(bad)}. The log or the crc may have "
               "been modified in place")
        if mode == "strict":
            raise CorruptLogError(msg)
        log.warning("%s (the log is used as it is)", msg)
    return bad


# ----------------------------------------------------------------------------- writing
def _dv_uid(dv: dict[str, Any] | None) -> str:
    if not dv:
        return ""
    base = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


def _dv_card(dv: dict[str, Any] | None) -> int:
    return int(dv.get("cardinality") or 0) if dv else 0


class _State:
    """Aggregates of a set of live files, updated by removing / adding single files."""

    def __init__(self, num_files: int, size: int, num_dvs: int, deleted: int, hist: np.ndarray | None,
                 hist_bytes: np.ndarray | None, bins: Sequence[int], dv_known: bool = True) -> None:
        self.num_files, self.size, self.num_dvs, self.deleted = num_files, size, num_dvs, deleted
        self.dv_known = dv_known
        self.hist, self.hist_bytes, self.bins = hist, hist_bytes, np.asarray(bins, dtype=np.int64)

    def change(self, size: int, dv: dict[str, Any] | None, sign: int) -> None:
        self.num_files += sign
        self.size += sign * size
        if dv:
            self.num_dvs += sign
            self.deleted += sign * _dv_card(dv)
        if self.hist is not None and self.hist_bytes is not None:
            b = int(np.searchsorted(self.bins, size, side="right")) - 1
            self.hist[max(b, 0)] += sign
            self.hist_bytes[max(b, 0)] += sign * size


def _state_from_files(files: pa.Table) -> _State:
    size_col = files.column("size")
    sizes = arrow_to_np(pc.fill_null(size_col, 0) if size_col.null_count else size_col).astype(np.int64, copy=False)
    bins = np.asarray(FILE_SIZE_BINS, dtype=np.int64)
    idx = np.maximum(np.searchsorted(bins, sizes, side="right") - 1, 0)
    hist = np.bincount(idx, minlength=len(bins)).astype(np.int64)
    hist_bytes = np.bincount(idx, weights=sizes, minlength=len(bins)).astype(np.int64)
    dv = files.column("deletion_vector")
    num_dvs = len(dv) - dv.null_count
    deleted = 0
    if num_dvs:
        card = pc.struct_field(dv, "cardinality")
        deleted = int(pc.sum(card).as_py() or 0)
    return _State(files.num_rows, int(sizes.sum()), num_dvs, deleted, hist, hist_bytes, FILE_SIZE_BINS)


def _split(actions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"adds": [], "removes": [], "commitInfo": {}, "metaData": None, "protocol": None,
                           "domains": []}
    for a in actions:
        if "add" in a:
            out["adds"].append(a["add"])
        elif "remove" in a:
            out["removes"].append(a["remove"])
        elif "commitInfo" in a:
            out["commitInfo"] = a["commitInfo"]
        elif "metaData" in a:
            out["metaData"] = a["metaData"]
        elif "protocol" in a:
            out["protocol"] = a["protocol"]
        elif "domainMetadata" in a:
            out["domains"].append(a["domainMetadata"])
    return out


def _apply_exact(state: _State, files: pa.Table, adds: list[dict[str, Any]], removes: list[dict[str, Any]]) -> None:
    """Reconcile the commit's file actions against `files` (only rows sharing a path are materialized)."""
    touched = {a["path"] for a in adds} | {r["path"] for r in removes}
    live: dict[_Key, tuple[int, dict[str, Any] | None]] = {}
    if touched and files.num_rows:
        hit = files.filter(pc.is_in(files.column("path"), value_set=_strings(sorted(touched))))
        if hit.num_rows:
            uids = dv_unique_ids(hit.column("deletion_vector")).to_pylist()
            for path, size, dv, uid in zip(hit.column("path").to_pylist(), hit.column("size").to_pylist(),
                                           hit.column("deletion_vector").to_pylist(), uids):
                live[(path, uid or "")] = (int(size), dv)
    for r in removes:
        old = live.pop((r["path"], _dv_uid(r.get("deletionVector"))), None)
        if old is not None:
            state.change(old[0], old[1], -1)
    for a in adds:
        key = (a["path"], _dv_uid(a.get("deletionVector")))
        old = live.pop(key, None)
        if old is not None:
            state.change(old[0], old[1], -1)
        state.change(int(a["size"]), a.get("deletionVector"), +1)


def _strings(values: Sequence[str]) -> pa.Array:
    return bytes_to_arrow([v.encode() for v in values], pa.string())


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def checksum_after_commit(storage: Storage, snapshot: Any | None, version: int,
                          actions: Sequence[dict[str, Any]], txn_id: str | None) -> dict[str, Any] | None:
    """The crc of `version` committed with `actions` on top of `snapshot`; None when it cannot be exact."""
    if os.environ.get("DELTAKERNEL_WRITE_CHECKSUMS", "true").strip().lower() in ("false", "0", "no", "off"):
        return None
    parts = _split(actions)
    adds, removes = parts["adds"], parts["removes"]
    if any(a.get("size") is None for a in adds):
        return None
    domains: dict[str, dict[str, Any]] | None
    if snapshot is None and version == 0:
        n = len(FILE_SIZE_BINS)
        state = _State(0, 0, 0, 0, np.zeros(n, np.int64), np.zeros(n, np.int64), FILE_SIZE_BINS)
        _apply_exact(state, pa.table({"path": pa.array([], pa.string())}), adds, removes)
        metadata, protocol, domains = parts["metaData"], parts["protocol"], {}
    elif snapshot is not None and snapshot.version == version - 1:
        state = _state_from_files(snapshot.files)
        _apply_exact(state, snapshot.files, adds, removes)
        metadata = parts["metaData"] or _metadata_json(snapshot.metadata)
        protocol = parts["protocol"] or snapshot.protocol.to_json()
        domains = {d.domain: {"domain": d.domain, "configuration": d.configuration, "removed": False}
                   for d in snapshot.domain_metadata.values()}
    else:
        state_or_none = _incremental(storage, snapshot, version, adds, removes)
        if state_or_none is None:
            return None
        state, prev = state_or_none
        metadata = parts["metaData"] or prev.get("metadata")
        protocol = parts["protocol"] or prev.get("protocol")
        prev_domains = prev.get("domainMetadata")
        domains = {d["domain"]: d for d in prev_domains} if isinstance(prev_domains, list) else None
    if metadata is None or protocol is None:
        return None
    if domains is not None:
        for d in parts["domains"]:
            if d.get("removed"):
                domains.pop(d["domain"], None)
            else:
                domains[d["domain"]] = d
    out: dict[str, Any] = {}
    if txn_id:
        out["txnId"] = txn_id
    out["tableSizeBytes"] = state.size
    out["numFiles"] = state.num_files
    proto = Protocol.from_json(protocol)
    if proto.has_feature("deletionVectors") and state.dv_known:
        out["numDeletedRecordsOpt"] = state.deleted
        out["numDeletionVectorsOpt"] = state.num_dvs
    out["numMetadata"] = 1
    out["numProtocol"] = 1
    ict = parts["commitInfo"].get("inCommitTimestamp")
    if ict is not None:
        out["inCommitTimestampOpt"] = int(ict)
    if domains is not None:
        out["domainMetadata"] = list(domains.values())
    out["metadata"] = _drop_none(dict(metadata))
    out["protocol"] = protocol
    if state.hist is not None and state.hist_bytes is not None:
        out["fileSizeHistogram"] = {"sortedBinBoundaries": [int(b) for b in state.bins],
                                    "fileCounts": [int(x) for x in state.hist],
                                    "totalBytes": [int(x) for x in state.hist_bytes]}
    return out


def _incremental(storage: Storage, snapshot: Any | None, version: int, adds: list[dict[str, Any]],
                 removes: list[dict[str, Any]]) -> tuple[_State, dict[str, Any]] | None:
    """A rebased commit: the previous crc + this commit, only when the commit cannot touch a live file."""
    if removes or snapshot is None:
        return None
    if adds and snapshot.files.num_rows:
        paths = _strings(sorted({a["path"] for a in adds}))
        if pc.any(pc.is_in(snapshot.files.column("path"), value_set=paths)).as_py():
            return None  # a re-add of a file we saw: its fate under the winning commits is unknown here
    prev = read_checksum(storage, version - 1)
    if prev is None or not isinstance(prev.get("numFiles"), int) or not isinstance(prev.get("tableSizeBytes"), int):
        return None
    hist = prev.get("fileSizeHistogram") or prev.get("histogramOpt")
    counts = bytes_ = None
    bins: Sequence[int] = FILE_SIZE_BINS
    if isinstance(hist, dict):
        try:
            bins = [int(b) for b in hist["sortedBinBoundaries"]]
            counts = np.asarray(hist["fileCounts"], dtype=np.int64)
            bytes_ = np.asarray(hist["totalBytes"], dtype=np.int64)
            if not (len(bins) == len(counts) == len(bytes_)):
                counts = bytes_ = None
        except (KeyError, TypeError, ValueError):
            counts = bytes_ = None
    has_dv = isinstance(prev.get("numDeletionVectorsOpt"), int) and isinstance(prev.get("numDeletedRecordsOpt"), int)
    state = _State(prev["numFiles"], prev["tableSizeBytes"], int(prev.get("numDeletionVectorsOpt") or 0),
                   int(prev.get("numDeletedRecordsOpt") or 0), counts, bytes_, bins, dv_known=has_dv)
    for a in adds:
        state.change(int(a["size"]), a.get("deletionVector"), +1)
    return state, prev


def _metadata_json(md: Metadata) -> dict[str, Any]:
    return _drop_none(md.to_json())


def write_checksum(storage: Storage, version: int, crc: dict[str, Any]) -> bool:
    """Put `N.crc` if absent (never overwritten); False when it exists or the put failed (warned)."""
    key = checksum_key(version)
    try:
        storage.put_if_absent(key, json.dumps(crc, separators=(",", ":")).encode())
        return True
    except FileAlreadyExistsError:
        return False
    except StorageError as e:
        log.warning("could not write version checksum %s: %s", storage.full_uri(key), e)
        return False
