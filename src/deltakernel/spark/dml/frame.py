"""The target rows of a Spark DML: the candidate files' rows with the file they live in and their position.

One Parquet scan (per group below) over the files the kernel selected; right at the scan, before any join,
`_metadata.file_path` and `_metadata.row_index` (the *physical* row position, which is what deletion
vectors store) are projected into ordinary columns, so they survive the broadcast join that adds partition
values, the file id `__dk_fid` (the file's position in the candidate table: an int, a cheap shuffle key)
and, with row tracking, `baseRowId` / `defaultRowCommitVersion`. Unpartitioned scans of up to
`MAP_LOOKUP_FILES` files get those integer columns by a map lookup on the path instead of the join.
Columns come out with logical names (column mapping undone as the reader does).

Rows an existing deletion vector already deletes: files without a DV are scanned as they are; files with
one form a second scan whose rows pass an Arrow UDF over `(file id, row index)` that reads each DV on the
executor (cached per worker), so the driver never reads a deletion vector and files without DVs pay
nothing. `skip_deleted=False` leaves them in (the deletion-vector job subtracts them itself).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ...kernel.arrow_build import bool_to_arrow
from ...kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
from ...kernel.snapshot import Snapshot
from ...storage import Storage, storage_for_uri
from ..kinds.session import Shared
from ..scan import file_columns as fc
from ..scan.layout import ScanLayout, quote

FID = "__dk_fid"
MAP_LOOKUP_FILES = 2_000  # unpartitioned scans of at most this many files get their file columns by map lookup
ROW = "__dk_row"
_PATH = fc.PATH_COL


@dataclass
class Target:
    """The table one DML works on: how Spark addresses it (`path`), how the kernel does (`uri`), the
    snapshot read, and the DeltaTable's alias (conditions may name it)."""

    spark: Any
    path: str
    uri: str
    storage_options: dict[str, str] | None
    snapshot: Snapshot
    alias: str | None = None

    @property
    def storage(self) -> Storage:
        return self.snapshot.storage


# ----------------------------------------------------------------------------- executor-side caches
_LOCK = threading.Lock()
_STORAGES: dict[tuple[str, tuple[tuple[str, str], ...]], Storage] = {}
_DVS: dict[tuple[str, str], np.ndarray] = {}
_MAX_CACHED_DVS = 256


def executor_storage(uri: str, options: dict[str, str] | None) -> Storage:
    """The table's storage in a Python worker (one per table per worker process)."""
    key = (uri, tuple(sorted((options or {}).items())))
    with _LOCK:
        storage = _STORAGES.get(key)
        if storage is None:
            storage = _STORAGES[key] = storage_for_uri(uri, options)
        return storage


def existing_deleted(storage: Storage, descriptor: dict[str, Any] | None) -> np.ndarray:
    """Sorted uint64 rows a file's current deletion vector deletes (cached per worker)."""
    if not descriptor:
        return np.empty(0, dtype=np.uint64)
    dv = DeletionVectorDescriptor.from_dict(descriptor)
    key = (storage.root_uri, dv.unique_id)
    with _LOCK:
        hit = _DVS.get(key)
    if hit is not None:
        return hit
    rows = read_deletion_vector(storage, dv)
    with _LOCK:
        if len(_DVS) >= _MAX_CACHED_DVS:
            _DVS.clear()
        _DVS[key] = rows
    return rows


def _deleted_udf(target: Target, dv_files: pa.Table) -> Any:
    """Arrow UDF `(file id, row index) -> already deleted?` over the files of `dv_files` (fid, deletion_vector)."""
    from pyspark.sql import functions as F

    order = np.argsort(dv_files.column(FID).to_numpy())
    table = dv_files.take(pa.array(order))
    bc = Shared(target.spark, table)
    uri, options = target.uri, target.storage_options

    def deleted(fid: pa.Array, row: pa.Array) -> pa.Array:
        files = bc.value
        ids = files.column(FID).to_numpy()
        storage = executor_storage(uri, options)
        fids = fid.to_numpy(zero_copy_only=False)
        rows = row.to_numpy(zero_copy_only=False).astype(np.uint64)
        out = np.zeros(len(rows), dtype=np.bool_)
        for f in np.unique(fids):
            sel = fids == f
            i = int(np.searchsorted(ids, f))
            dv = files.column("deletion_vector")[i].as_py() if i < len(ids) and ids[i] == f else None
            out[sel] = np.isin(rows[sel], existing_deleted(storage, dv))
        return bool_to_arrow(out)

    udf = getattr(F, "arrow_udf", None)
    if udf is not None:  # type hints (pa.Array -> pa.Array) make it a scalar Arrow UDF
        return udf(deleted, "boolean")
    import pandas as pd  # pyspark 4.0 has no Arrow UDFs: a pandas UDF
    from pyspark.sql.functions import PandasUDFType  # type: ignore[attr-defined]

    def deleted_pd(fid: Any, row: Any) -> Any:
        return pd.Series(deleted(pa.array(fid), pa.array(row)).to_numpy(zero_copy_only=False))

    return F.pandas_udf(deleted_pd, "boolean", PandasUDFType.SCALAR)  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- the frame
def target_frame(target: Target, files: pa.Table, fids: Sequence[int] | np.ndarray | None = None, *,
                 hidden: tuple[str, str] | None = None, skip_deleted: bool = True) -> Any:
    """Rows of `files` (all, or the file ids `fids`: positions in `files`) as a DataFrame with the table's
    logical columns, `__dk_fid`, `__dk_row` and, with `hidden` (the materialized row-tracking columns to
    write), those two columns holding each row's stable row id and row commit version. None: no files."""
    from pyspark.sql import functions as F

    ids = np.arange(files.num_rows, dtype=np.int32) if fids is None else np.asarray(fids, dtype=np.int32)
    if ids.size == 0:
        return None
    sub = files if fids is None else files.take(pa.array(ids))
    spark, snapshot = target.spark, target.snapshot
    layout = ScanLayout.of(snapshot)
    parts = layout.partitions
    read_schema = layout.read_schema(hidden or ())
    meta = fc.file_table(snapshot, sub, bool(parts), hidden is not None).append_column(FID, pa.array(ids))
    has_dv = sub.column("deletion_vector").is_valid().to_numpy(zero_copy_only=False)
    groups = [(~has_dv, False), (has_dv, True)] if skip_deleted and has_dv.any() else \
        [(np.ones(len(ids), dtype=np.bool_), False)]
    frames = []
    for mask, with_dv in groups:
        if not mask.any():
            continue
        keep = bool_to_arrow(mask)
        df = _scan(spark, snapshot, read_schema, sub.filter(keep), layout.data_names())
        group_meta = meta.filter(keep)
        if not parts and group_meta.num_rows <= MAP_LOOKUP_FILES:
            # no `df.columns`: a schema is an analyze request on Spark Connect (py4j calls on classic)
            df = df.select(F.col("*"), *_lookups(group_meta)).drop(_PATH)
        else:
            df = df.join(F.broadcast(spark.createDataFrame(group_meta)), _PATH, "inner").drop(_PATH)
        if with_dv:
            dv_files = pa.table({FID: group_meta.column(FID), "deletion_vector": sub.filter(keep).column(
                "deletion_vector")})
            df = df.where(~_deleted_udf(target, dv_files)(F.col(FID), F.col(ROW)))
        frames.append(df)
    df = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    cols = [*layout.logical_columns(), F.col(FID), F.col(ROW)]
    if hidden is not None:
        id_col, version_col = hidden
        cols.append(F.coalesce(F.col(quote(id_col)), F.col(fc.BASE_ROW_ID) + F.col(ROW)).alias(id_col))
        cols.append(F.coalesce(F.col(quote(version_col)), F.col(fc.DEFAULT_VERSION)).alias(version_col))
    frame = df.select(*cols)
    return frame.alias(target.alias) if target.alias else frame


def _lookups(meta: pa.Table) -> list[Any]:
    """The per-file integer columns of `meta` (file id, row-tracking bases) as map lookups on the row's file
    path: one hash lookup per row in generated code instead of a broadcast join on the path string (the join
    made a 5M-row MERGE classification scan ~2x slower, and it runs before the join with the source)."""
    from pyspark.sql import functions as F

    paths = meta.column(_PATH).to_pylist()
    out = []
    for name in meta.column_names:
        if name == _PATH:
            continue
        sql_type = "int" if name == FID else "long"
        values = meta.column(name).to_pylist()
        pairs = [x for path, v in zip(paths, values) for x in (F.lit(path), F.lit(v).cast(sql_type))]
        out.append(F.element_at(F.create_map(*pairs), F.col(_PATH)).alias(name))
    return out


def _scan(spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table, data_names: dict[str, str]) -> Any:
    """One Parquet scan of exactly `files` with the file and physical row position as columns; rows of
    existing deletion vectors are kept (`target_frame` handles them). Classic sessions scan through the Delta
    file index (no listing, no existence checks, and filters Spark pushes prune the files further); Spark
    Connect, which cannot hand Spark a file index, through Spark's Parquet reader of the files' paths."""
    from ..scan.read_plans import read_plans

    return read_plans(spark).files_frame(spark, snapshot, read_schema, files, data_names)


__all__ = ["FID", "ROW", "Target", "executor_storage", "existing_deleted", "quote", "target_frame"]
