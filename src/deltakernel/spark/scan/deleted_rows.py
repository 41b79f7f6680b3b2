"""Rows deleted by deletion vectors, dropped from a Spark Parquet scan by `_metadata.file_path` and
`_metadata.row_index` (the physical row position, what a deletion vector stores).

The vectors are read on the driver when the DataFrame is built: a SQL `NOT (file AND row_index IN (...))`
filter when they delete few rows, a broadcast anti-join when many. Shared by the file-index plan (classic
sessions) and the public-API plan (Spark Connect).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ...kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector

MAX_INLINE_DELETED_ROWS = 5000


def drop_deleted_rows(spark: Any, df: Any, storage: Any, uris: pa.Array, descriptors: pa.Array | pa.ChunkedArray
                      ) -> Any:
    """`df` (a scan with `_metadata`) without the rows the files' deletion vectors delete; `uris[i]` is file
    i's `_metadata.file_path`, `descriptors[i]` its DV (null: none)."""
    from pyspark.sql import functions as F

    if len(descriptors) == 0 or descriptors.null_count == len(descriptors):
        return df
    has_dv = descriptors.is_valid()
    keep_uris = uris.filter(has_dv).to_pylist()
    kept = descriptors.filter(has_dv).to_pylist()
    deleted = []
    for uri, desc in zip(keep_uris, kept):
        rows = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(desc))
        if rows.size:
            deleted.append((uri, rows))
    total = sum(int(r.size) for _, r in deleted)
    if total == 0:
        return df
    if total <= MAX_INLINE_DELETED_ROWS:
        conds = []
        for uri, rows in deleted:
            lit = uri.replace("\\", "\\\\").replace("'", "\\'")
            conds.append(f"(_metadata.file_path = '{lit}' AND _metadata.row_index IN "
                         f"({','.join(str(int(i)) for i in rows)}))")
        return df.where(f"NOT ({' OR '.join(conds)})")
    paths = pa.array(np.repeat(np.array([u for u, _ in deleted], dtype=object), [r.size for _, r in deleted]),
                     pa.string())
    idx = pa.array(np.concatenate([r.astype(np.int64) for _, r in deleted]), pa.int64())
    table = pa.table({"__dk_dv_path": paths, "__dk_dv_row": idx})
    marked = df.withColumns({"__dk_dv_path": F.col("_metadata.file_path"), "__dk_dv_row": F.col("_metadata.row_index")})
    out = marked.join(F.broadcast(spark.createDataFrame(table)), ["__dk_dv_path", "__dk_dv_row"], "left_anti")
    return out.drop("__dk_dv_path", "__dk_dv_row")


__all__ = ["MAX_INLINE_DELETED_ROWS", "drop_deleted_rows"]
