"""CLONE on Spark: delta-spark's `clone` / `cloneAtVersion` / `cloneAtTimestamp` (operation "CLONE").

Shallow clones copy nothing (adds reference the source's files by absolute path): the embedded
`operations/clone.clone_table` runs on the driver. A deep clone copies every data file and deletion-vector file,
which is proportional to the data, so the copy is a Spark job and never streams bytes through the driver:
- the driver lists the copies (each data file under its relative path in the source, files outside the source
  root under their file name; each distinct DV file once, under a fresh UUID name);
- tasks copy their share with the kernel's storage (pyarrow streams, a few MiB at a time, so memory does not
  grow with file size); a name already taken in the target (a replaced target that holds a file of the same
  name) gets a fresh `<8 hex>-` prefix, never an overwrite; a task that fails deletes its partial copy;
- the driver commits the CLONE transaction exactly as `clone_table` builds it (the source's metadata with a new
  id, `properties` applied, protocol never lowered on a replaced target, domain metadata and row ids kept),
  with delta-spark's metrics. When the commit fails and is known absent, the copies are deleted again; when
  the job fails, only the failing task's partial copy is (the finished tasks' copies stay as orphans, never
  referenced; VACUUM of the target removes them).
"""

from __future__ import annotations

import logging
import posixpath
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ...errors import DeltaError, InvalidArgumentValueError, MissingFileError, StorageError
from ...kernel.deletion_vectors import DeletionVectorDescriptor
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ...operations.create.clone import (
    base_add,
    check_clone_target,
    clone_table,
    clone_transaction,
    copy_destination,
    dv_source,
)
from ...operations.files.dml_output import delete_quietly
from ...operations.files.layout import uri_encode_path
from ...storage import Storage, storage_for_uri
from ..common.task_errors import marked, task_errors
from ..kinds.session import default_parallelism
from ._common import ENGINE_INFO, executor_storage, map_partitions, spark_timestamp

log = logging.getLogger(__name__)

COPY_CHUNK = 8 * 1024 * 1024
_DELTA_PATH = "delta.`"


def target_path(target: str) -> str:
    """The clone's location: a path, or `delta.\\`/path\\``; catalog names are not supported here."""
    if not isinstance(target, str) or not target.strip():
        raise DeltaError(f"target needs to be a non-empty string but got {target!r}")
    text = target.strip()
    if text.lower().startswith(_DELTA_PATH) and text.endswith("`"):
        return text[len(_DELTA_PATH):-1].replace("``", "`")
    if "/" not in text and "\\" not in text:
        raise DeltaError(f"clone target {target!r} looks like a catalog table name; deltakernel clones to paths "
                         "(a directory, or delta.`/path`)")
    return text


def check_types(target: Any, is_shallow: Any, replace: Any, properties: Any) -> None:
    """delta-spark's argument checks."""
    if not isinstance(is_shallow, bool):
        raise InvalidArgumentValueError(f"isShallow needs to be a bool but got '{type(is_shallow)}'.")
    if not isinstance(replace, bool):
        raise InvalidArgumentValueError(f"replace needs to be a bool but got '{type(replace)}'.")
    if properties is not None and (not isinstance(properties, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in properties.items())):
        raise DeltaError("properties needs to be a dict of str to str")
    target_path(target)


# ----------------------------------------------------------------------------- the copy job
def _copy_one(src: Storage, src_key: str, dst: Storage, dst_key: str, rename: bool) -> str:
    """Stream one object into `dst` under `dst_key` (or a fresh name when taken and `rename`)."""
    import pyarrow.fs as pafs

    if dst.exists(dst_key):
        if not rename:
            return dst_key
        d, name = posixpath.split(dst_key)
        fresh = f"{uuid.uuid4().hex[:8]}-{name}"
        dst_key = posixpath.join(d, fresh) if d else fresh
    sfs, _ = src.arrow_filesystem()
    dfs, _ = dst.arrow_filesystem()
    out_path = dst.arrow_path(dst_key)
    if isinstance(dfs, pafs.LocalFileSystem) and "/" in out_path:
        dfs.create_dir(out_path.rsplit("/", 1)[0], recursive=True)
    try:
        reader = sfs.open_input_stream(src.arrow_path(src_key))
    except FileNotFoundError as e:
        raise MissingFileError(f"cannot clone {src.full_uri(src_key)}: the file does not exist ({e})") from e
    try:
        with reader, dfs.open_output_stream(out_path) as writer:
            while True:
                chunk = reader.read(COPY_CHUNK)
                if not chunk:
                    break
                writer.write(chunk)
    except BaseException as e:
        try:
            dst.delete(dst_key)
        except Exception:
            pass
        if isinstance(e, OSError):
            raise StorageError(f"cannot copy {src.full_uri(src_key)} to {dst.full_uri(dst_key)}: {e}") from e
        raise
    return dst_key


def _copy_task(target_uri: str, options: dict[str, str] | None) -> Any:
    def run(items: Iterator[tuple[int, str, str, str, bool]]) -> Iterator[tuple[int, str]]:
        out = []
        with marked():
            target = executor_storage(target_uri, options)
            for index, src_root, src_key, dst_key, rename in items:
                src = executor_storage(src_root, options)
                out.append((index, _copy_one(src, src_key, target, dst_key, rename)))
        yield from out
    return run


def _plan_copies(source: Storage, rows: list[dict[str, Any]]) -> tuple[list[tuple[int, str, str, str, bool]],
                                                                       dict[int, DeletionVectorDescriptor]]:
    """The copy items (row index or -1-k for the k-th DV file, source root, key, target key, may rename) and
    each row's new deletion-vector descriptor."""
    items: list[tuple[int, str, str, str, bool]] = []
    new_dvs: dict[int, DeletionVectorDescriptor] = {}
    dv_files: dict[tuple[str, str], uuid.UUID] = {}
    for i, row in enumerate(rows):
        src, key, dst = copy_destination(source, row["path"])
        items.append((i, src.root_uri, key, dst, True))
        raw = row.get("deletion_vector")
        if not raw:
            continue
        dv = DeletionVectorDescriptor.from_dict(raw)
        if dv.is_inline:
            new_dvs[i] = dv
            continue
        dv_storage, dv_key = dv_source(source, dv)
        ident = (dv_storage.root_uri, dv_key)
        fresh = ident not in dv_files
        if fresh:
            dv_files[ident] = uuid.uuid4()
        out = DeletionVectorDescriptor.for_uuid(dv_files[ident], dv.offset or 0, dv.size_in_bytes, dv.cardinality)
        new_dvs[i] = out
        if fresh:
            items.append((-len(dv_files), dv_storage.root_uri, dv_key, out.relative_key(), False))
    return items, new_dvs


def _run_copies(spark: Any, items: list[tuple[int, str, str, str, bool]], target_uri: str,
                options: dict[str, str] | None) -> dict[int, str]:
    slices = max(1, min(len(items), default_parallelism(spark) * 4))
    with task_errors():
        done = map_partitions(spark, items, _copy_task(target_uri, options), slices)
    return {int(i): str(k) for i, k in done}


# ----------------------------------------------------------------------------- commit
def _commit_clone(source_storage: Storage, source: Snapshot, target: Storage, existing: Snapshot | None,
                  adds: list[dict[str, Any]], properties: dict[str, str] | None) -> Transaction:
    """The CLONE commit of a deep clone (`operations/clone.clone_transaction`, as the embedded clone)."""
    size = int(sum(int(r or 0) for r in source.files.column("size").to_pylist()))
    txn, _ = clone_transaction(source_storage, source, target, existing, adds, properties, shallow=False,
                               source_size=size, engine_info=ENGINE_INFO)
    txn.commit()
    return txn


def deep_clone(spark: Any, source_storage: Storage, source: Snapshot, target_uri: str, replace: bool,
               properties: dict[str, str] | None, storage_options: dict[str, str] | None) -> int:
    """Copy the files with a Spark job, then commit; returns the target's version."""
    target = storage_for_uri(target_uri, storage_options)
    existing = check_clone_target(source_storage, target, replace)
    start = time.perf_counter()
    rows = source.files.to_pylist()
    items, new_dvs = _plan_copies(source_storage, rows)
    landed: dict[int, str] = {}
    txn: Transaction | None = None
    try:
        if items:
            landed = _run_copies(spark, items, target.root_uri, storage_options)
        adds = []
        for i, row in enumerate(rows):
            add = base_add(row, uri_encode_path(landed[i]))
            if i in new_dvs:
                add["deletionVector"] = new_dvs[i].to_dict()
            adds.append(add)
        txn = _commit_clone(source_storage, source, target, existing, adds, properties)
    except BaseException:
        # copies the job reported are ours (never an existing object: taken names were renamed); after a
        # failed job the finished tasks' copies are unknown and stay as orphans
        if landed and not (txn is not None and txn.may_have_committed):
            delete_quietly(target, [uri_encode_path(k) for k in sorted(set(landed.values()))])
        raise
    assert txn.committed_version is not None
    log.info("Spark deep clone of %s@%d into %s: %d files in %.2fs", source_storage.root_uri, source.version,
             target.root_uri, len(rows), time.perf_counter() - start)
    return int(txn.committed_version)


# ----------------------------------------------------------------------------- entry point
def clone(spark: Any, uri: str, storage_options: dict[str, str] | None, target: str, is_shallow: bool,
          replace: bool, properties: dict[str, str] | None, version: int | None = None,
          timestamp: str | None = None) -> str:
    """delta-spark's clone family; returns the target path (for `DeltaTable.forPath`)."""
    from ...table import DeltaTable as KernelTable
    from ..common.schema import table_uri

    check_types(target, is_shallow, replace, properties)
    path = target_path(target)
    table = KernelTable(uri, storage_options=storage_options)
    current = table.snapshot
    storage = current.storage
    source = current
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentValueError(f"version needs to be an int but got '{type(version)}'.")
        source = Snapshot.load_at(storage, version, reference=current)
    elif timestamp is not None:
        source = Snapshot.load_at(storage, spark_timestamp(spark, timestamp), reference=current)
    if is_shallow:
        clone_table(storage, source, table_uri(path), shallow=True, replace=replace, properties=properties,
                    storage_options=storage_options)
    else:
        deep_clone(spark, storage, source, table_uri(path), replace, properties, storage_options)
    return path


__all__ = ["check_types", "clone", "deep_clone", "target_path"]
