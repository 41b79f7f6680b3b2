"""Delta per-file statistics from the Parquet footer of a file Spark wrote (the native write path).

Why footers: Spark's Parquet writer (parquet-java) already computed exact per-row-group null counts and
min/max while encoding; reading them back costs one footer read per file instead of a second pass over the
data. The document has the shape `kernel/stats/collect.StatsCollector` writes (same columns, truncation,
number/date/timestamp formats), so both write paths produce the same stats for the same data.

What parquet-java's statistics mean, and how they map:
- null counts are exact, and a leaf under a null struct counts as null (Spark's rule); lists and maps are
  not handled here (their leaf null counts also count empty lists/null elements) - the native path is only
  chosen for schemas of structs and primitives.
- floats compare with `Double.compare`: NaN sorts above everything, so a NaN max means "contains NaN"
  (Delta then drops the max) and a NaN min means "only NaN" (no bound). Checked up to parquet-mr 1.17
  (Spark 4.x); a newer or unknown `created_by` may skip NaN instead (as Arrow does), so float maxima
  from such files are dropped rather than trusted.
- a chunk whose min+max exceed 4 KiB (long strings) has no statistics at all: that leaf's nullCount and
  min/max are omitted for the file - never a bound that is too narrow.
- timestamps must be INT64 microseconds (the job sets `outputTimestampType=TIMESTAMP_MICROS`); anything
  else gets no bounds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow.parquet as pq

from ...kernel.schema.types import PrimitiveType, StructType
from ...kernel.stats.collect import (
    LeafStats,
    fold_footer_chunk,
    stat_kind,
    stat_leaves,
    stats_document,
    stats_json,
    stats_schema,
)


class FooterStats:
    """Per-table plan: which Parquet leaf column feeds which Delta stats leaf (computed once per write)."""

    def __init__(self, schema: StructType, partition_columns: list[str], mode: str,
                 configuration: Mapping[str, str]) -> None:
        parts = {p.lower() for p in partition_columns}
        data = StructType(tuple(f for f in schema.fields if f.name.lower() not in parts))
        self.data_leaves = [pp for _, pp, _ in stat_leaves(data, mode)]
        index = {p: i for i, p in enumerate(self.data_leaves)}
        self.leaves: list[tuple[tuple[str, ...], tuple[str, ...], int, str | None, bool]] = []
        for lp, pp, dtype in stat_leaves(stats_schema(schema, configuration, partition_columns), mode):
            utc = not (isinstance(dtype, PrimitiveType) and dtype.name == "timestamp_ntz")
            self.leaves.append((lp, pp, index[pp], stat_kind(dtype), utc))
        self.tight = str(configuration.get("delta.enableDeletionVectors", "false")).strip().lower() == "true"

    def stats_json(self, md: pq.FileMetaData) -> str:
        """The add action's `stats` for a file with footer `md` (written with the data leaves in order)."""
        if md.num_columns != len(self.data_leaves):
            raise ValueError(f"file has {md.num_columns} leaf columns, expected {len(self.data_leaves)}")
        for i, path in enumerate(self.data_leaves):
            if md.schema.column(i).path != ".".join(path):
                raise ValueError(f"file column {i} is {md.schema.column(i).path!r}, expected {path}")
        leaves = [(LeafStats(lp, pp, kind, utc), col) for lp, pp, col, kind, utc in self.leaves]
        nan_sorts_last = _nan_sorts_last(md.created_by or "")
        if not nan_sorts_last:  # whether a float chunk holds NaN is unknown: its max cannot be trusted
            for leaf, _ in leaves:
                leaf.has_nan = leaf.kind in ("float", "double")
        for r in range(md.num_row_groups):
            rg = md.row_group(r)
            for leaf, col in leaves:
                fold_footer_chunk(leaf, rg.column(col), rg.num_rows, count_nulls=True, nan_sorts_last=nan_sorts_last)
        return stats_json(stats_document(md.num_rows, [leaf for leaf, _ in leaves], tight_bounds=self.tight))


_PARQUET_MR = re.compile(r"parquet-mr version (\d+)\.(\d+)")
_NAN_CHECKED_UP_TO = (1, 17)


def _nan_sorts_last(created_by: str) -> bool:
    """Whether this writer's float statistics order NaN last (parquet-mr up to the version we checked)."""
    m = _PARQUET_MR.match(created_by)
    return m is not None and (int(m.group(1)), int(m.group(2))) <= _NAN_CHECKED_UP_TO


__all__ = ["FooterStats"]
