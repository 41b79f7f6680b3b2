"""The clauses of a MERGE's matched pairs per source row, looked up in the write's tasks instead of joined.

When every written value comes from the source row (`MergePlan.source_rows`), the rows a MERGE with deletion
vectors writes are the source rows, each once per pair it is in (with that pair's clause) or, in no pair, once
with its NOT MATCHED clause. The deletion-vector job returns every pair's `(source row id, clause)` to the
driver with its per-file result (`touched.write_deletion_vectors_and_pairs`). Joining the source with those
pairs would cost a Spark job of its own (a broadcast: Spark collects even a local relation in a job before it
broadcasts it), and keeping the pairs on the executors for that join cost another (AQE builds a cache in its
own job). Instead an Arrow UDF over the source row id finds the row's clauses in the sorted pairs shipped with
the tasks (`Shared`: a broadcast variable on classic sessions, the task closure over Spark Connect), inside the
write's one stage; `explode_outer` makes one row per pair. Only used when the pairs are few (the MERGE's source
row limit and `touched.PAIRS_LIMIT`): they live on the driver and in every task.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..kinds.session import Shared


def sorted_pairs(pairs: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """`(sids, clauses)` of the pairs `(sid, a)`, ordered by source row id."""
    sids = pairs.column("sid").to_numpy().astype(np.int64, copy=False)
    clauses = pairs.column("a").to_numpy().astype(np.int32, copy=False)
    order = np.argsort(sids, kind="stable")
    return sids[order], clauses[order]


def lookup(keys: np.ndarray, values: np.ndarray, sid: pa.Array) -> pa.Array:
    """Per source row id of `sid`, the list of the clauses of its pairs (empty: in no pair)."""
    s = sid.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    lo = np.searchsorted(keys, s, "left")
    counts = np.searchsorted(keys, s, "right") - lo
    offsets = np.zeros(len(s) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(counts)
    total = int(offsets[-1])
    # pair positions of row r: lo[r] .. lo[r] + counts[r] - 1, laid out at offsets[r] ..
    index = np.repeat(lo - offsets[:-1], counts) + np.arange(total)
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values[index], pa.int32()))


def pair_clauses_column(spark: Any, pairs: pa.Table, sid_column: str) -> tuple[Any, Shared]:
    """An `array<int>` Column: the clauses of the pairs of each row's `sid_column`; and the `Shared` holding the
    pairs (destroy it once the write ran)."""
    from pyspark.sql import functions as F

    shared = Shared(spark, sorted_pairs(pairs))

    def clauses_of(sid: pa.Array) -> pa.Array:
        keys, values = shared.value
        return lookup(keys, values, sid)

    udf = getattr(F, "arrow_udf", None)
    if udf is not None:  # type hints (pa.Array -> pa.Array) make it a scalar Arrow UDF
        return udf(clauses_of, "array<int>")(F.col(sid_column)), shared
    # pyspark 4.0 has no Arrow UDFs: a pandas UDF
    from pyspark.sql.functions import PandasUDFType  # type: ignore[attr-defined]

    def clauses_pd(sid: Any) -> Any:
        return clauses_of(pa.array(sid)).to_pandas()

    return F.pandas_udf(clauses_pd, "array<int>", PandasUDFType.SCALAR)(F.col(sid_column)), shared  # type: ignore[attr-defined]


__all__ = ["lookup", "pair_clauses_column", "sorted_pairs"]
