"""OPTIMIZE planning: which live files are rewritten, grouped into bins (one partition per bin).

Compaction (deltalake's `compact`, delta-spark's bin-packing):
- files larger than the target size are skipped (counted in `totalFilesSkipped`), except files whose
  deletion vector deletes more than 5 % of their rows (or a DV on a file without `numRecords`): those are
  rewritten alone, which purges the deleted rows (delta-spark's `maxDeletedRowsRatio`);
- the other files of a partition, in insertion order (modification time, then path), are packed into
  *contiguous* bins of at most the target size: a bin's rows stay together and in order, so compaction
  keeps the insertion order of each partition (deltalake 1.6's "preserveLocality" planner);
- a bin holding a single file without a deletion vector is dropped (rewriting it changes nothing).
Z-order: every selected file of a partition is rewritten, in contiguous bins of at most `zorder_bin_bytes`
(the bin is sorted in memory, so its size bounds the memory; a single file is rewritten too, as deltalake
and delta-spark do). Clustered tables: like Z-order over the files not yet clustered by the current
clustering columns (and any file with a deletion vector).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

#: delta-spark's `optimize.maxDeletedRowsRatio`: a file with more deleted rows is rewritten whatever its size
MAX_DELETED_ROWS_RATIO = 0.05

PLAN_COLUMNS = ["path", "size", "modification_time", "partition_values", "deletion_vector", "base_row_id",
                "default_row_commit_version", "tags", "stats"]


@dataclass
class Bin:
    """Files of one partition rewritten together (compaction: into one file; Z-order: sorted together)."""

    partition: dict[str, str | None]  # physical partition column -> serialized value, as in the log
    files: list[dict[str, Any]] = field(default_factory=list)  # file-table rows
    size: int = 0

    def add(self, row: dict[str, Any]) -> None:
        self.files.append(row)
        self.size += int(row["size"] or 0)

    @property
    def has_deletion_vector(self) -> bool:
        return any(f.get("deletion_vector") for f in self.files)


@dataclass
class OptimizePlan:
    bins: list[Bin]
    considered: int  # files matching the partition filters
    skipped: int  # considered files left alone
    partitions: int  # partitions with at least one bin


def _num_records(row: dict[str, Any]) -> int | None:
    try:
        value = json.loads(row["stats"]).get("numRecords") if row.get("stats") else None
        return int(value) if value is not None else None
    except (ValueError, TypeError, AttributeError):
        return None


def too_many_deleted(row: dict[str, Any]) -> bool:
    """delta-spark's rule: a DV deleting > 5 % of the file's rows, or a DV on a file without numRecords."""
    dv = row.get("deletion_vector")
    if not dv:
        return False
    n = _num_records(row)
    if not n:
        return True
    return int(dv.get("cardinality") or 0) / n > MAX_DELETED_ROWS_RATIO


def _ordered_partitions(files: pa.Table) -> list[tuple[dict[str, str | None], list[dict[str, Any]]]]:
    """Files grouped by partition (first-seen order of partitions), each in insertion order."""
    if files.num_rows == 0:
        return []
    cols = [c for c in PLAN_COLUMNS if c in files.schema.names]
    order = pc.sort_indices(files, sort_keys=[("modification_time", "ascending"), ("path", "ascending")])
    rows = files.select(cols).take(order).to_pylist()
    groups: dict[tuple[tuple[str, str | None], ...], tuple[dict[str, str | None], list[dict[str, Any]]]] = {}
    for r in rows:
        pv = dict(r.get("partition_values") or {})
        key = tuple(sorted(pv.items()))
        groups.setdefault(key, (pv, []))[1].append(r)
    return [groups[k] for k in sorted(groups, key=lambda k: [(n, v or "") for n, v in k])]


def _compact_partition(pv: dict[str, str | None], rows: list[dict[str, Any]],
                       target_size: int) -> tuple[list[Bin], int]:
    """(bins kept, files skipped) of one partition's files in insertion order."""
    kept: list[Bin] = []
    skipped = 0
    current = Bin(pv)
    for r in [*rows, None]:
        size = int(r["size"] or 0) if r is not None else 0
        big = r is not None and size > target_size
        if r is None or big or (current.files and current.size + size > target_size):
            if len(current.files) > 1 or (current.files and current.has_deletion_vector):
                kept.append(current)
            else:
                skipped += len(current.files)
            current = Bin(pv)
        if r is None:
            break
        if big:
            if too_many_deleted(r):  # rewritten alone: purges its deleted rows
                kept.append(Bin(pv))
                kept[-1].add(r)
            else:
                skipped += 1
            continue
        current.add(r)
    return kept, skipped


def plan_compaction(files: pa.Table, target_size: int) -> OptimizePlan:
    """Contiguous bins of files smaller than `target_size`, per partition (see the module docstring)."""
    bins: list[Bin] = []
    skipped = 0
    partitions = 0
    for pv, rows in _ordered_partitions(files):
        kept, skip = _compact_partition(pv, rows, target_size)
        skipped += skip
        if kept:
            partitions += 1
            bins.extend(kept)
    return OptimizePlan(bins, files.num_rows, skipped, partitions)


def plan_sorted(files: pa.Table, max_bin_bytes: int,
                select: Callable[[dict[str, Any]], bool] | None = None) -> OptimizePlan:
    """Z-order / clustering: the selected files of each partition in contiguous bins of <= `max_bin_bytes`
    (a file larger than that is a bin of its own); every bin is rewritten, also a single file."""
    bins: list[Bin] = []
    considered = files.num_rows
    skipped = 0
    partitions = 0
    for pv, rows in _ordered_partitions(files):
        current = Bin(pv)
        found = False
        for r in rows:
            if select is not None and not select(r):
                skipped += 1
                continue
            size = int(r["size"] or 0)
            if current.files and current.size + size > max_bin_bytes:
                bins.append(current)
                current = Bin(pv)
            current.add(r)
            found = True
        if current.files:
            bins.append(current)
        partitions += int(found)
    return OptimizePlan(bins, considered, skipped, partitions)


__all__ = ["MAX_DELETED_ROWS_RATIO", "Bin", "OptimizePlan", "plan_compaction", "plan_sorted", "too_many_deleted"]
