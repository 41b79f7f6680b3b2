"""`DeltaTable.clone`: a shallow or deep copy of a table at a version (delta-spark's `clone` /
`cloneAtVersion` / `cloneAtTimestamp`, operation "CLONE").

Shallow: the target's adds reference the source's data files by absolute path (the protocol allows absolute
paths; our reader reaches them anywhere in the table's store, other stores with
`DELTAKERNEL_ALLOW_FOREIGN_PATHS=true`); relative ('u') deletion vectors become absolute ('p') ones. Nothing
is copied, so the source's files must outlive the clone (a VACUUM of the source breaks it). The form is the one
other readers accept (docs/decisions.md, "Shallow clone paths"): a local file as a percent-encoded absolute path
(`/data/src/part-0.parquet`, an RFC 2396 absolute-path reference: DuckDB's delta extension reads it, `file:`
URIs it joins to the table root), an object-store file as its full URI (`s3://bucket/src/part-0.parquet`, what
delta-spark writes; a bare `/key` would be read by Spark against its default filesystem); deletion vectors as
full URIs (`file:///...`; delta-kernel-rs parses 'p' DV paths as URLs).
Deep: every data file (and deletion-vector file) is copied into the target and added by relative path;
copies never overwrite (put-if-absent; a name already taken gets a fresh one), run on a few threads with a
bounded number of bytes in flight, and are deleted again if the commit is known not to have landed.

The clone's metadata is the source's (schema, partitioning, configuration + `properties`) with a new table id
(a replaced target keeps its id); its protocol is the source's (raised over a replaced target's, never down).
Row ids and domain metadata are kept, so row tracking stays consistent.
"""

from __future__ import annotations

import json
import logging
import posixpath
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from ...errors import DeltaError, FileAlreadyExistsError, TableNotFoundError
from ...kernel.deletion_vectors import DeletionVectorDescriptor
from ...kernel.log.action_types import AddAction, RemoveAction
from ...kernel.log.actions import Metadata
from ...kernel.paths import is_absolute, resolve_file, resolve_key
from ...kernel.protocol.select import features_in_effect, minimal_protocol, with_min_versions
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import ROW_TRACKING_DOMAIN, Transaction
from ...storage import Storage, storage_for_uri
from ..dml.rewrite import remove_action
from ..files.dml_output import delete_quietly
from ..files.layout import uri_encode_path

log = logging.getLogger(__name__)

COPY_THREADS = 4
COPY_BYTES_IN_FLIGHT = 256 * 1024 * 1024


def clone_table(
    source_storage: Storage,
    source: Snapshot,
    target: str,
    *,
    shallow: bool = True,
    replace: bool = False,
    properties: Mapping[str, str | None] | None = None,
    storage_options: dict[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], int]:
    """Clone `source` into `target`; returns (delta-spark's CLONE metrics, the target's committed version)."""
    target_storage = storage_for_uri(target, storage_options)
    existing = check_clone_target(source_storage, target_storage, replace)
    start = time.perf_counter()
    files = source.files
    sizes = files.column("size").to_pylist()
    rows = files.to_pylist()
    copied: list[str] = []
    txn: Transaction | None = None
    try:
        if shallow:
            adds = [_shallow_add(source_storage, r) for r in rows]
        else:
            adds = _DeepCopier(source_storage, target_storage, progress).run(rows, copied)
        txn, metrics = clone_transaction(source_storage, source, target_storage, existing, adds, properties,
                                         shallow=shallow, source_size=int(sum(int(x or 0) for x in sizes)))
        txn.commit()
    except BaseException:
        if copied and not (txn is not None and txn.may_have_committed):
            delete_quietly(target_storage, copied)
        raise
    assert txn.committed_version is not None
    log.info("cloned %s@%d into %s (%s, %d files) in %.2fs", source_storage.root_uri, source.version,
             target_storage.root_uri, "shallow" if shallow else "deep", len(rows), time.perf_counter() - start)
    return metrics, txn.committed_version


def check_clone_target(source_storage: Storage, target_storage: Storage, replace: bool) -> Snapshot | None:
    """The Delta table already at the clone target (None when there is none), after the checks every clone
    makes before copying anything: the target is not the source, and a table there is replaced only with
    `replace`. Shared by `clone_table` and Spark's deep clone."""
    if target_storage.root_uri.rstrip("/") == source_storage.root_uri.rstrip("/"):
        raise DeltaError(f"cannot clone {source_storage.root_uri} onto itself")
    try:
        existing: Snapshot | None = Snapshot.load(target_storage)
    except TableNotFoundError:
        existing = None
    if existing is not None and not replace:
        raise DeltaError(f"a Delta table already exists at {target_storage.root_uri}; pass replace=True to "
                         "replace it")
    return existing


def copy_destination(source: Storage, path: str) -> tuple[Storage, str, str]:
    """(storage, key, target key) of a deep clone's copy of the data file at log path `path`: the file keeps its
    path relative to the source root, a file outside the root lands under its file name."""
    src, key = resolve_file(source, path)
    try:
        dst = resolve_key(source.root_uri, path) if src is source else posixpath.basename(key)
    except DeltaError:
        dst = posixpath.basename(key)
    return src, key, dst


def dv_source(source: Storage, dv: DeletionVectorDescriptor) -> tuple[Storage, str]:
    """(storage, key) of a stored (not inline) deletion vector's file, for copying it."""
    if dv.storage_type == "u":
        return source, dv.relative_key()
    if is_absolute(dv.path_or_inline_dv):
        return resolve_file(source, dv.path_or_inline_dv)
    return source, dv.relative_key(source.root_uri)


def clone_transaction(source_storage: Storage, source: Snapshot, target_storage: Storage, existing: Snapshot | None,
                      adds: list[AddAction], properties: Mapping[str, str | None] | None, *, shallow: bool,
                      source_size: int, engine_info: str | None = None) -> tuple[Transaction, dict[str, Any]]:
    """The CLONE commit (not yet committed) and delta-spark's metrics: the source's metadata and protocol, the
    target's files removed when replaced, domain metadata carried over, the row-id high-water mark never going
    down. Shared by `clone_table` and Spark's deep clone (which copies the files with a job)."""
    now = int(time.time() * 1000)
    kwargs: dict[str, Any] = {"engine_info": engine_info} if engine_info is not None else {}
    txn = Transaction(target_storage, existing, operation="CLONE", operation_parameters={
        "source": source_storage.root_uri, "sourceVersion": source.version, "isShallow": shallow}, **kwargs)
    md, protocol = metadata_and_protocol(source, existing, properties)
    txn.update_metadata(md)
    if existing is None or protocol != existing.protocol:
        txn.update_protocol(protocol)
    removes: list[RemoveAction] = []
    if existing is not None:
        txn.read_whole_table()
        removes = [remove_action(r, now) for r in existing.files.to_pylist()]
        txn.remove_files(removes)
        for name in existing.domain_metadata:
            if name not in source.domain_metadata:
                txn.set_domain_metadata(name, existing.domain_metadata[name].configuration, removed=True)
    for name, dm in source.domain_metadata.items():
        txn.set_domain_metadata(name, dm.configuration)
    if existing is not None and ROW_TRACKING_DOMAIN in source.domain_metadata:
        # row ids stay unique over the target's history: the high-water mark never goes down
        txn.set_domain_metadata(ROW_TRACKING_DOMAIN, json.dumps({"rowIdHighWaterMark": max(
            row_id_high_water_mark(source), row_id_high_water_mark(existing))}, separators=(",", ":")))
    if ROW_TRACKING_DOMAIN not in source.domain_metadata and any(a.get("baseRowId") is not None for a in adds):
        adds = [cast(AddAction, {k: v for k, v in a.items() if k not in ("baseRowId", "defaultRowCommitVersion")})
                for a in adds]
    txn.add_files(adds)
    metrics = {
        "sourceTableSize": source_size,
        "sourceNumOfFiles": source.files.num_rows,
        "numRemovedFiles": len(removes),
        "numCopiedFiles": 0 if shallow else len(adds),
        "copiedFilesSize": 0 if shallow else int(sum(int(a["size"]) for a in adds)),
        "removedFilesSize": int(sum(int(r["size"]) for r in removes)),
    }
    txn.operation_metrics.update(metrics)
    return txn, metrics


def metadata_and_protocol(source: Snapshot, existing: Snapshot | None,
                           properties: Mapping[str, str | None] | None) -> tuple[Metadata, Any]:
    from ..write.plan import required_features

    smd = source.metadata
    conf = dict(smd.configuration)
    for k, v in (properties or {}).items():
        if v is None:
            conf.pop(k, None)
        else:
            conf[k] = str(v)
    # in-commit timestamps: on from version 0 of a new clone; from the next version of a replaced target
    for key in (ICT_VERSION, ICT_TIMESTAMP):
        conf.pop(key, None)
    if conf.get("delta.enableInCommitTimestamps", "").lower() == "true" and existing is not None:
        old = existing.configuration
        if old.get("delta.enableInCommitTimestamps", "").lower() == "true":
            conf.update({k: old[k] for k in (ICT_VERSION, ICT_TIMESTAMP) if k in old})
        else:
            conf[ICT_VERSION] = str(existing.version + 1)
            conf[ICT_TIMESTAMP] = str(int(time.time() * 1000))
    md = Metadata(id=existing.metadata.id if existing is not None else str(uuid.uuid4()),
                  schema_string=smd.schema_string, partition_columns=smd.partition_columns, configuration=conf,
                  name=smd.name, description=smd.description, format=smd.format,
                  created_time=int(time.time() * 1000))
    protocol = source.protocol
    extra = required_features(md.schema, conf) - features_in_effect(protocol)
    current = existing.protocol if existing is not None else None
    if extra or current is not None:
        protocol = minimal_protocol(features_in_effect(protocol) | extra, current)
        protocol = with_min_versions(protocol, source.protocol.min_reader_version, source.protocol.min_writer_version)
    return md, protocol


ICT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"


def row_id_high_water_mark(snap: Snapshot) -> int:
    dm = snap.domain_metadata.get(ROW_TRACKING_DOMAIN)
    try:
        return int(json.loads(dm.configuration).get("rowIdHighWaterMark", -1)) if dm is not None else -1
    except (ValueError, TypeError, AttributeError):
        return -1


# ----------------------------------------------------------------------------- add actions
def _absolute_uri(storage: Storage, key: str) -> str:
    """The URI a log stores for `key` of `storage`: `file:///...` locally, `scheme://bucket/...` otherwise,
    percent-encoded as paths in the log are."""
    full = storage.full_uri(key)
    if full.startswith("/"):
        return "file://" + uri_encode_path(full)
    if "://" not in full:  # a local path that is not POSIX (Windows drive)
        return Path(full).as_uri()
    scheme, rest = full.split("://", 1)
    netloc, _, path = rest.partition("/")
    return f"{scheme}://{netloc}/{uri_encode_path(path)}"


def _data_file_path(storage: Storage, key: str) -> str:
    """The `add.path` of a shallow clone's data file: a percent-encoded absolute path for a local (POSIX) file,
    which DuckDB's delta extension, deltalake's DataFusion scan and Spark resolve against the clone's `file:`
    root to the source file; the full URI on object stores (as delta-spark writes)."""
    full = storage.full_uri(key)
    return uri_encode_path(full) if full.startswith("/") else _absolute_uri(storage, key)


def base_add(row: Mapping[str, Any], path: str) -> AddAction:
    """The `add` of a cloned file at `path`: the source row's size, time, stats, tags and row-tracking fields."""
    add: AddAction = {"path": path, "partitionValues": dict(row.get("partition_values") or {}),
                      "size": row["size"], "modificationTime": row["modification_time"], "dataChange": True}
    if row.get("stats"):
        add["stats"] = row["stats"]
    if row.get("tags"):
        add["tags"] = dict(row["tags"])
    if row.get("base_row_id") is not None:
        add["baseRowId"] = row["base_row_id"]
    if row.get("default_row_commit_version") is not None:
        add["defaultRowCommitVersion"] = row["default_row_commit_version"]
    return add


def _dv(row: Mapping[str, Any]) -> DeletionVectorDescriptor | None:
    d = row.get("deletion_vector")
    return DeletionVectorDescriptor.from_dict(d) if d else None


def _shallow_add(storage: Storage, row: Mapping[str, Any]) -> AddAction:
    target, key = resolve_file(storage, row["path"])
    add = base_add(row, _data_file_path(target, key))
    dv = _dv(row)
    if dv is not None:
        if dv.storage_type == "u":
            dv = DeletionVectorDescriptor("p", _absolute_uri(storage, dv.relative_key()), dv.offset,
                                          dv.size_in_bytes, dv.cardinality)
        elif dv.storage_type == "p" and not is_absolute(dv.path_or_inline_dv):
            dv = DeletionVectorDescriptor("p", _absolute_uri(storage, dv.relative_key(storage.root_uri)), dv.offset,
                                          dv.size_in_bytes, dv.cardinality)
        add["deletionVector"] = dv.to_dict()
    return add


class _DeepCopier:
    """Copies data and DV files into the target (put-if-absent, bounded bytes in flight)."""

    def __init__(self, source: Storage, target: Storage, progress: Callable[[int, int], None] | None) -> None:
        self.source, self.target, self.progress = source, target, progress
        self.budget = threading.Condition()
        self.in_flight = 0
        self.dv_files: dict[tuple[str, str], tuple[str, str]] = {}  # (source uri, key) -> new 'u' prefix, uuid z85
        self.dv_lock = threading.Lock()

    def _copy(self, src: Storage, src_key: str, dst_key: str, size: int, copied: list[str],
              rename: bool = True) -> str:
        """Copy one object; returns the key it landed at (a fresh name when `dst_key` is taken and `rename`)."""
        need = min(max(size, 1), COPY_BYTES_IN_FLIGHT)
        with self.budget:
            while self.in_flight and self.in_flight + need > COPY_BYTES_IN_FLIGHT:
                self.budget.wait()
            self.in_flight += need
        try:
            data = src.read(src_key)
            try:
                self.target.put_if_absent(dst_key, data)
            except FileAlreadyExistsError:
                if not rename:
                    return dst_key
                d, name = posixpath.split(dst_key)
                dst_key = posixpath.join(d, f"{uuid.uuid4().hex[:8]}-{name}") if d else f"{uuid.uuid4().hex[:8]}-{name}"
                self.target.put_if_absent(dst_key, data)
            copied.append(dst_key)
            return dst_key
        finally:
            with self.budget:
                self.in_flight -= need
                self.budget.notify_all()

    def _one(self, row: Mapping[str, Any], copied: list[str]) -> AddAction:
        src, key, dst = copy_destination(self.source, row["path"])
        dst = self._copy(src, key, dst, int(row["size"]), copied)
        add = base_add(row, uri_encode_path(dst))
        dv = _dv(row)
        if dv is not None:
            add["deletionVector"] = self._copy_dv(dv, copied).to_dict()
        return add

    def _copy_dv(self, dv: DeletionVectorDescriptor, copied: list[str]) -> DeletionVectorDescriptor:
        if dv.is_inline:
            return dv
        src, key = dv_source(self.source, dv)
        ident = (src.root_uri, key)
        with self.dv_lock:
            known = self.dv_files.get(ident)
            if known is None:  # one copy per DV file (many adds share one), named by a fresh UUID
                new = uuid.uuid4()
                self.dv_files[ident] = known = ("", str(new))
                fresh = True
            else:
                fresh = False
        new_uuid = uuid.UUID(known[1])
        out = DeletionVectorDescriptor.for_uuid(new_uuid, dv.offset or 0, dv.size_in_bytes, dv.cardinality)
        if fresh:
            self._copy(src, key, out.relative_key(), src.head(key).size, copied, rename=False)
        return out

    def run(self, rows: list[dict[str, Any]], copied: list[str]) -> list[AddAction]:
        total = len(rows)
        done = 0
        lock = threading.Lock()

        def one(row: dict[str, Any]) -> AddAction:
            nonlocal done
            add = self._one(row, copied)
            if self.progress is not None:
                with lock:
                    done += 1
                    self.progress(done, total)
            return add

        if total <= 1:
            return [one(r) for r in rows]
        with ThreadPoolExecutor(max_workers=COPY_THREADS) as pool:
            return list(pool.map(one, rows))


__all__ = ["check_clone_target", "clone_table", "clone_transaction", "copy_destination", "dv_source"]
