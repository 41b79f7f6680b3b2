"""Version checksum files (`_delta_log/N.crc`, PROTOCOL.md "Version Checksum File").

Writing: after each commit the transaction derives the table state at the new version from what it
already holds -- the snapshot it read (exact: its file table is in memory), the commits of other writers it
rebased over (read during its conflict checks) and its own actions, reconciled by (path, DV id) as log replay
does -- and puts `N.crc` if absent (`DELTAKERNEL_WRITE_CHECKSUMS=false` turns it off). No other crc is read:
a rebased commit gets an exact crc whether or not the winners wrote one. The work is array work over the
actions (a 50k-action commit: a few tens of ms); only file-table rows sharing a path with an action are read.

Reading: `verify_snapshot` compares a loaded snapshot with the crc at its version (numFiles,
tableSizeBytes, protocol, metadata). The log is the source of truth and the crc optional, so a mismatch
is a logged warning by default (kernel-rs' `crc-full` fixture, read by deltalake, has a crc that does
not match its log); `DELTAKERNEL_VERIFY_CHECKSUMS=strict` raises CorruptLogError instead (delta-spark's
`checksum.mismatch.fatal`), `false` skips the check. A missing or unparsable crc is ignored.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CorruptLogError, FileAlreadyExistsError, ObjectNotFoundError, StorageError
from ..storage.base import Storage
from .arrow_build import arrow_to_np, bytes_to_arrow, np_to_arrow, str_scalar
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
    """The DV part of a file's replay key, as `action_tables.dv_unique_ids` builds it."""
    if not dv:
        return ""
    base = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


class _Totals:
    """Aggregates of a set of files: count, bytes, DVs, deleted rows, size histogram (counts and bytes)."""

    def __init__(self, num_files: int, size: int, num_dvs: int, deleted: int, hist: np.ndarray,
                 hist_bytes: np.ndarray) -> None:
        self.num_files, self.size, self.num_dvs, self.deleted = num_files, size, num_dvs, deleted
        self.hist, self.hist_bytes = hist, hist_bytes

    @classmethod
    def of(cls, sizes: np.ndarray, has_dv: np.ndarray, cards: np.ndarray) -> _Totals:
        """Totals of files given as arrays (one vector pass, whatever their number)."""
        bins = np.asarray(FILE_SIZE_BINS, dtype=np.int64)
        idx = np.maximum(np.searchsorted(bins, sizes, side="right") - 1, 0)
        hist = np.bincount(idx, minlength=len(bins)).astype(np.int64)
        hist_bytes = np.bincount(idx, weights=sizes, minlength=len(bins)).astype(np.int64)
        return cls(len(sizes), int(sizes.sum()), int(has_dv.sum()), int(cards[has_dv].sum()), hist, hist_bytes)

    @classmethod
    def of_files(cls, files: pa.Table) -> _Totals:
        """Totals of a file table (size, deletion_vector columns)."""
        size_col = files.column("size")
        sizes = arrow_to_np(pc.fill_null(size_col, 0) if size_col.null_count else size_col).astype(np.int64,
                                                                                                   copy=False)
        dv = files.column("deletion_vector")
        has_dv = arrow_to_np(pc.is_valid(dv)) if files.num_rows else np.zeros(0, np.bool_)
        cards = np.zeros(files.num_rows, np.int64)
        if has_dv.any():
            card = pc.fill_null(pc.struct_field(dv, "cardinality"), 0)
            cards = arrow_to_np(card).astype(np.int64, copy=False)
        return cls.of(sizes, has_dv, cards)

    def plus(self, other: _Totals, sign: int = 1) -> _Totals:
        return _Totals(self.num_files + sign * other.num_files, self.size + sign * other.size,
                       self.num_dvs + sign * other.num_dvs, self.deleted + sign * other.deleted,
                       self.hist + sign * other.hist, self.hist_bytes + sign * other.hist_bytes)


# the totals after each commit this process made, by (table, version): the next commit's crc starts from them
# instead of summing the whole file table again (a writer appending in a loop)
_RECENT: collections.OrderedDict[tuple[str, int], tuple[str, _Totals]] = collections.OrderedDict()
_RECENT_MAX = 64
_recent_lock = threading.Lock()


def _remember(storage: Storage, version: int, totals: _Totals, txn_id: str | None) -> None:
    if not txn_id:
        return
    with _recent_lock:
        _RECENT[(storage.root_uri, version)] = (txn_id, totals)
        _RECENT.move_to_end((storage.root_uri, version))
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.popitem(last=False)


def _snapshot_totals(snapshot: Any) -> _Totals:
    """Totals of a snapshot's files: remembered from the commit that made its version (the same commit: its
    `txnId`), else summed."""
    with _recent_lock:
        known = _RECENT.get((snapshot.storage.root_uri, snapshot.version))
    if known is not None:
        txn_id, totals = known
        info = snapshot.commit_infos.get(snapshot.version) or {}
        if info.get("txnId") == txn_id and totals.num_files == snapshot.files.num_rows:
            return totals
    return _Totals.of_files(snapshot.files)


def _empty_totals() -> _Totals:
    return _Totals.of(np.zeros(0, np.int64), np.zeros(0, np.bool_), np.zeros(0, np.int64))


class _FileActions:
    """The add/remove actions of a sequence of commits, in log order, as arrays (reconciled by replay key).

    Raises TypeError / KeyError / ValueError on an add without a usable size (the caller writes no crc then).
    """

    def __init__(self, commits: Sequence[tuple[Sequence[dict[str, Any]], Sequence[dict[str, Any]]]]) -> None:
        adds = [a for c in commits for a in c[0]]
        removes = [r for c in commits for r in c[1]]
        n_add, n = len(adds), len(adds) + len(removes)
        # one comprehension per field: the only per-action Python work (the actions are dicts already)
        self.paths = _strings([a["path"] for a in adds] + [r["path"] for r in removes])
        dvs = [a.get("deletionVector") for a in adds] + [r.get("deletionVector") for r in removes]
        any_dv = any(dvs)
        uids = _strings([_dv_uid(d) for d in dvs]) if any_dv else str_scalar("")
        self.keys = pc.binary_join_element_wise(self.paths, uids, str_scalar("\x00"))  # file_keys' shape
        self.is_add = np.zeros(n, np.bool_)
        self.is_add[:n_add] = True
        self.sizes = np.zeros(n, np.int64)
        self.sizes[:n_add] = np.fromiter((a["size"] for a in adds), np.int64, n_add)
        self.has_dv = np.zeros(n, np.bool_)
        self.cards = np.zeros(n, np.int64)
        if any_dv:
            self.has_dv[:n_add] = np.fromiter((bool(d) for d in dvs[:n_add]), np.bool_, n_add)
            self.cards[:n_add] = np.fromiter((int(d.get("cardinality") or 0) if d else 0 for d in dvs[:n_add]),
                                             np.int64, n_add)
        # log order: commits in sequence; within a commit a key appears once (PROTOCOL.md), so the newest
        # action of a key is the one of the latest commit holding it
        self.order = np.zeros(n, np.int64)
        pos_a, pos_r = 0, n_add
        for i, (c_adds, c_removes) in enumerate(commits):
            self.order[pos_a:pos_a + len(c_adds)] = i
            self.order[pos_r:pos_r + len(c_removes)] = i
            pos_a += len(c_adds)
            pos_r += len(c_removes)

    def newest(self, distinct: int) -> np.ndarray:
        """Index of the newest action per key (`distinct` keys; a sort only when some key repeats)."""
        n = len(self.order)
        if distinct == n:
            return np.arange(n, dtype=np.int64)
        t = pa.table({"k": self.keys, "o": np_to_arrow(self.order), "i": np_to_arrow(np.arange(n, dtype=np.int64))})
        idx = pc.sort_indices(t, sort_keys=[("k", "ascending"), ("o", "descending")])
        k = pc.take(self.keys, idx)
        first = np.ones(n, np.bool_)
        first[1:] = arrow_to_np(pc.not_equal(k.slice(1), k.slice(0, n - 1)))
        return arrow_to_np(pc.take(t.column("i"), idx)).astype(np.int64)[first]


def _apply(base: _Totals, files: pa.Table | None, actions: _FileActions) -> _Totals:
    """`base` (the totals of `files`) after the actions: every file table row whose key an action touches is
    replaced by that key's newest action (kept if it is an add), exactly as log replay reconciles."""
    if not len(actions.keys):
        return base
    state = base
    touched = pc.unique(actions.keys)
    if files is not None and files.num_rows:
        hit = files.filter(pc.is_in(files.column("path"), value_set=actions.paths))
        if hit.num_rows:
            hit_keys = pc.binary_join_element_wise(hit.column("path").combine_chunks(),
                                                   dv_unique_ids(hit.column("deletion_vector")), str_scalar("\x00"))
            superseded = hit.filter(pc.is_in(hit_keys, value_set=touched))
            state = state.plus(_Totals.of_files(superseded), -1)
    newest = actions.newest(len(touched))
    live = newest[actions.is_add[newest]]
    return state.plus(_Totals.of(actions.sizes[live], actions.has_dv[live], actions.cards[live]))


def _strings(values: Sequence[str]) -> pa.Array:
    return bytes_to_arrow([v.encode("utf-8", "surrogatepass") for v in values], pa.string())


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _parts(actions: Sequence[dict[str, Any]]) -> dict[str, Any]:
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


def checksum_after_commit(storage: Storage, snapshot: Any | None, version: int, actions: Sequence[dict[str, Any]],
                          txn_id: str | None, winners: Sequence[Any] = ()) -> dict[str, Any] | None:
    """The crc of `version`, committed with `actions` on top of `snapshot` after the `winners` (the other writers'
    commits between the snapshot and `version`, `conflicts.WinningCommit`s, in order); None when it cannot be
    exact.

    Exact because it is the log replay in miniature: the snapshot's file table, then each winner's and this
    commit's adds and removes reconciled by (path, DV id). Only rows of the file table sharing a path with an
    action are looked at; everything is array work (a 50k-action commit costs a few tens of ms).
    """
    if os.environ.get("DELTAKERNEL_WRITE_CHECKSUMS", "true").strip().lower() in ("false", "0", "no", "off"):
        return None
    parts = _parts(actions)
    adds, removes = parts["adds"], parts["removes"]
    if snapshot is None:
        if version != 0 or winners:
            return None
        files, base = None, _empty_totals()
        metadata, protocol, domains = parts["metaData"], parts["protocol"], {}
    else:
        if snapshot.version + 1 + len(winners) != version:
            return None
        if any(w.metadata_changed or w.protocol_changed for w in winners):
            return None  # a rebase past a metadata/protocol change is refused by the conflict checks anyway
        files, base = snapshot.files, _snapshot_totals(snapshot)
        metadata = parts["metaData"] or _metadata_json(snapshot.metadata)
        protocol = parts["protocol"] or snapshot.protocol.to_json()
        domains = {d.domain: {"domain": d.domain, "configuration": d.configuration, "removed": False}
                   for d in snapshot.domain_metadata.values()}
    if metadata is None or protocol is None:
        return None
    commits = [(w.all_adds, w.all_removes) for w in winners] + [(adds, removes)]
    try:
        file_actions = _FileActions(commits)
    except (TypeError, KeyError, ValueError) as e:
        log.debug("no version checksum for version %d: %s", version, e)
        return None  # an add without a size (or a malformed action): the state cannot be exact
    state = _apply(base, files, file_actions)
    _remember(storage, version, state, txn_id)
    for changes in [list(w.domains.values()) for w in winners] + [parts["domains"]]:
        for d in changes:
            if d.get("removed"):
                domains.pop(d["domain"], None)
            else:
                domains[d["domain"]] = d
    out: dict[str, Any] = {}
    if txn_id:
        out["txnId"] = txn_id
    out["tableSizeBytes"] = state.size
    out["numFiles"] = state.num_files
    if Protocol.from_json(protocol).has_feature("deletionVectors"):
        out["numDeletedRecordsOpt"] = state.deleted
        out["numDeletionVectorsOpt"] = state.num_dvs
    out["numMetadata"] = 1
    out["numProtocol"] = 1
    ict = parts["commitInfo"].get("inCommitTimestamp")
    if ict is not None:
        out["inCommitTimestampOpt"] = int(ict)
    out["domainMetadata"] = list(domains.values())
    out["metadata"] = _drop_none(dict(metadata))
    out["protocol"] = protocol
    out["fileSizeHistogram"] = {"sortedBinBoundaries": list(FILE_SIZE_BINS),
                                "fileCounts": [int(x) for x in state.hist],
                                "totalBytes": [int(x) for x in state.hist_bytes]}
    return out


def _metadata_json(md: Metadata) -> dict[str, Any]:
    return _drop_none(md.to_json())


def write_checksum(storage: Storage, version: int, crc: dict[str, Any]) -> bool:
    """Put `N.crc` if absent (never overwritten); False when it exists or the put failed (warned)."""
    key = checksum_key(version)
    try:
        storage.put_cache_if_absent(key, json.dumps(crc, separators=(",", ":")).encode())
        return True
    except FileAlreadyExistsError:
        return False
    except StorageError as e:
        log.warning("could not write version checksum %s: %s", storage.full_uri(key), e)
        return False
