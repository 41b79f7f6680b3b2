"""A DataFusion DataFrame as one pyarrow stream whose partitions all run at once.

Why: `pa.RecordBatchReader.from_stream(df)` uses DataFusion's `__arrow_c_stream__`, which in datafusion-python
55 reads the plan's output partitions one after the other (`execute_stream_partitioned`, partition order kept).
A hash join with a dynamic filter (on by default) makes its probe partitions wait for each other: each one
reports its part of the build side's bounds and the filter is complete only when all have. Read in sequence,
partition 0 waits for partition 1, which nobody polls - the query hangs (QueryBuilder.execute of a two-table
join over listing views did). `execute_stream()` merges the partitions into one stream and polls them all
concurrently, as `collect()` / `to_arrow_table()` do. Order: an ordered result is one partition anyway; the
rows of an unordered one may interleave.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa


def reader(df: Any) -> pa.RecordBatchReader:
    """`df`'s result as a `pyarrow.RecordBatchReader` (see the module docstring for why not `from_stream`).
    Execution starts here (planning errors raise now); errors while reading raise from the reader."""
    stream = df.execute_stream()

    def pull() -> Iterator[pa.RecordBatch]:
        for batch in stream:
            yield batch.to_pyarrow()

    return pa.RecordBatchReader.from_batches(df.schema(), pull())


__all__ = ["reader"]
