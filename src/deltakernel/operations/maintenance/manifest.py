"""Symlink format manifests: delta-spark's `GENERATE symlink_format_manifest` / `DeltaTable.generate`.

Why: Presto, Trino, Athena and Redshift Spectrum can read a Delta table through Hive's
`SymlinkTextInputFormat` without understanding the log: one `manifest` text file per partition directory lists
the absolute paths of that partition's live data files. A full generation (what `generate` does, not the
incremental post-commit hook of `delta.compatibility.symlinkFormatManifest.enabled`):
- refused on tables with column mapping (external readers would read the physical names) or with deletion
  vectors (they would read deleted rows), as delta-spark refuses them;
- `_symlink_format_manifest/manifest` for an unpartitioned table (written even when the table is empty), or
  `_symlink_format_manifest/<col>=<value>/.../manifest` per partition holding files (Hive-escaped names, null
  and empty values as `__HIVE_DEFAULT_PARTITION__`, the raw serialized partition values, as delta-spark does);
- one line per data file, each ending in `\\n`: `file:/abs/path` on a local disk (Hadoop's `Path.toString`,
  not percent-encoded), the store URI (`s3://bucket/...`) elsewhere;
- manifests of partitions that no longer hold files are deleted. Nothing is committed to the log.
Vectorized: log paths become storage keys in Arrow (`vacuum.row_path_keys`), files are grouped per partition
with `Table.group_by` and each manifest's text is one `binary_join`; Python loops only over partitions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError, FileAlreadyExistsError, UnsupportedFeatureError
from ...kernel.arrow_build import np_to_arrow, str_scalar
from ...kernel.paths import resolve_file
from ...kernel.snapshot import Snapshot
from ...storage import Storage
from ...storage.local import LocalStorage
from ..files.layout import partition_dir
from .vacuum import row_path_keys, strings

log = logging.getLogger(__name__)

MANIFEST_DIR = "_symlink_format_manifest"
MANIFEST_NAME = "manifest"
SYMLINK_FORMAT_MANIFEST = "symlink_format_manifest"
_WRITE_THREADS = 16


def check_generate_supported(snapshot: Snapshot) -> None:
    """delta-spark's preconditions: no column mapping, no deletion vector on any live file."""
    if snapshot.column_mapping_mode != "none":
        raise UnsupportedFeatureError("columnMapping", "cannot generate symlink format manifests for a table with "
                                      "column mapping: external readers would read the physical column names")
    files = snapshot.files
    if files.num_rows and files.column("deletion_vector").null_count < files.num_rows:
        raise UnsupportedFeatureError("deletionVectors", "cannot generate symlink format manifests for a table "
                                      "whose files have deletion vectors (external readers would return deleted "
                                      "rows); purge them first (OPTIMIZE, or drop the deletionVectors feature)")


def manifest_prefix(storage: Storage) -> str:
    """What each manifest line starts with before the table-relative key."""
    if isinstance(storage, LocalStorage):
        return "file:" + storage.full_uri("").rstrip("/") + "/"
    return storage.root_uri.rstrip("/") + "/"


def absolute_paths(storage: Storage, paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The manifest line of each data file path in the log (vectorized; absolute paths outside the table
    root, as a shallow clone has, are resolved one by one)."""
    keys = row_path_keys(storage, paths)
    out = pc.binary_join_element_wise(str_scalar(manifest_prefix(storage)), keys, str_scalar(""))
    outside = pc.is_null(keys)
    if not pc.any(outside).as_py():
        return out
    arr = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    resolved = []
    for p in arr.filter(outside).to_pylist():
        file_storage, key = resolve_file(storage, str(p))
        resolved.append(manifest_prefix(file_storage) + key)
    return pc.replace_with_mask(out, outside, strings(resolved))


def _manifests(snapshot: Snapshot) -> list[tuple[str, str]]:
    """(manifest key, text) of every manifest the current state needs."""
    storage = snapshot.storage
    files = snapshot.files
    parts = list(snapshot.partition_columns)
    if not parts:
        text = ""
        if files.num_rows:
            lines = absolute_paths(storage, files.column("path"))
            one = pa.ListArray.from_arrays(np_to_arrow([0, len(lines)], pa.int32()), lines)
            text = pc.binary_join(one, str_scalar("\n"))[0].as_py() + "\n"
        return [(f"{MANIFEST_DIR}/{MANIFEST_NAME}", text)]
    if not files.num_rows:
        return []
    values = files.column("partition_values")
    cols: dict[str, Any] = {f"p{i}": pc.struct_field(values, c) for i, c in enumerate(parts)}
    cols["line"] = absolute_paths(storage, files.column("path"))
    grouped = pa.table(cols).group_by([f"p{i}" for i in range(len(parts))], use_threads=False) \
        .aggregate([("line", "list")])
    texts = pc.binary_join(grouped.column("line_list"), str_scalar("\n"))
    out = []
    keys = grouped.select([f"p{i}" for i in range(len(parts))]).to_pylist()
    for row, text in zip(keys, texts.to_pylist()):
        directory = partition_dir([(c, row[f"p{i}"]) for i, c in enumerate(parts)])
        out.append((f"{MANIFEST_DIR}/{directory}{MANIFEST_NAME}", f"{text}\n"))
    return out


def _overwrite(storage: Storage, key: str, data: bytes) -> None:
    put = getattr(storage, "put", None)
    if callable(put):
        put(key, data)
        return
    storage.delete(key)
    try:
        storage.put_if_absent(key, data)
    except FileAlreadyExistsError as e:  # another generation won the race: its manifest is as current
        log.debug("manifest %s written concurrently: %s", key, e)


def generate_symlink_manifest(snapshot: Snapshot,
                              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write the table's full symlink format manifest; returns delta-spark's SymlinkManifestStats
    (`filesWritten`, `filesDeleted`, `partitioned`). `progress(done, total)` after each manifest written."""
    check_generate_supported(snapshot)
    storage = snapshot.storage
    manifests = _manifests(snapshot)
    wanted = {key for key, _ in manifests}
    total = len(manifests)
    done = 0

    def write(item: tuple[str, str]) -> None:
        _overwrite(storage, item[0], item[1].encode("utf-8"))

    if progress is not None:
        progress(0, total)
    if total <= 2 or storage.sequential_reads:
        for item in manifests:
            write(item)
            done += 1
            if progress is not None:
                progress(done, total)
    else:
        with ThreadPoolExecutor(max_workers=min(_WRITE_THREADS, total)) as pool:
            for _ in pool.map(write, manifests):
                done += 1
                if progress is not None:
                    progress(done, total)
    # manifests of partitions gone since the last generation (and anything else left in their directories)
    wanted_dirs = {k.rsplit("/", 1)[0] for k in wanted}
    stale = [m.key for m in storage.list_from(f"{MANIFEST_DIR}/", recursive=True)
             if m.key.rsplit("/", 1)[0] not in wanted_dirs]
    stale_manifests = sum(1 for k in stale if k.rsplit("/", 1)[-1] == MANIFEST_NAME)
    if stale:
        storage.delete_many(stale)
    log.info("generated %d symlink manifest(s) for %s at version %d, deleted %d", total, storage.root_uri,
             snapshot.version, stale_manifests)
    return {"filesWritten": total, "filesDeleted": stale_manifests, "partitioned": bool(snapshot.partition_columns)}


def generate(snapshot: Snapshot, mode: str, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """delta-spark's `generate(mode)`: the mode is case-insensitive; only `symlink_format_manifest` exists."""
    if not isinstance(mode, str) or mode.strip().lower() != SYMLINK_FORMAT_MANIFEST:
        raise DeltaError(f"Specified mode '{mode}' is not supported. Supported modes are: {SYMLINK_FORMAT_MANIFEST}")
    return generate_symlink_manifest(snapshot, progress)


__all__ = ["MANIFEST_DIR", "SYMLINK_FORMAT_MANIFEST", "absolute_paths", "check_generate_supported", "generate",
           "generate_symlink_manifest"]
