"""The rows a Spark MERGE writes, when they need more than Spark's Parquet writer: a `mapInArrow` task.

Used when the change data feed is on or an updated / inserted row must meet a table rule (generated or
default columns, NOT NULL, CHECK constraints, invariants); otherwise `output.write_rows` writes the rows
natively. Each row carries `__dk_clause`, the index of the clause that produced it (-1: a copied row):
- copied rows (copy-on-write) are written as they are;
- updated rows go through the clause's Enforcer (`output.update_rules`: generated columns the clause does
  not assign are recomputed; identity columns keep their values), then are written; with change data, the
  pre-image (old values from the `__dk_old<k>` carriers) and post-image are written too;
- inserted rows keep only the columns their clause assigns and go through `Enforcer.prepare` (defaults and
  generated columns filled, rules checked), as the embedded MERGE does;
- deleted rows only come in with change data on, and are written as `delete` change data.
Each task returns the actions of the files it wrote (`output._result`), never rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.log.actions import Metadata, Protocol
from ...kernel.schema.arrow import to_arrow_schema
from ...operations.files.change_data import ChangeDataWriter
from ...operations.write.enforcement import Enforcer
from ..common.task_errors import marked
from ..kinds.session import Shared
from .frame import Target, executor_storage
from .merge_plan import ACTION as CLAUSE
from .output import Written, cast_table, collect_written, with_hidden_columns, write_task_files


@dataclass(frozen=True)
class ClauseRules:
    """How one clause's rows are written: `update`, `insert` or `delete`; the Enforcer's metadata (None:
    nothing to check or fill) and the columns kept before `Enforcer.prepare` (None: all)."""

    kind: str
    metadata: Metadata | None = None
    keep: tuple[str, ...] | None = None


@dataclass(frozen=True)
class MergeRowsPlan:
    uri: str
    storage_options: dict[str, str] | None
    metadata: Metadata  # the commit's
    protocol: Protocol
    hidden: tuple[str, str] | None
    change_data: bool
    clauses: tuple[ClauseRules, ...]
    old: tuple[str, ...] = ()  # pre-image carrier per logical column (with change data)


class _MergeTask:
    def __init__(self, plan: MergeRowsPlan) -> None:
        self.plan = plan
        md = plan.metadata
        self.storage = executor_storage(plan.uri, plan.storage_options)
        self.names = [f.name for f in md.schema.fields]
        self.target = to_arrow_schema(md.schema, include_metadata=False)
        self.mode = md.configuration.get("delta.columnMapping.mode", "none") or "none"
        self.cdc = ChangeDataWriter(self.storage, md.schema, list(md.partition_columns), self.mode,
                                    md.configuration) if plan.change_data else None
        self.enforcers: dict[int, Enforcer] = {}
        self.rows = 0

    def _enforcer(self, i: int) -> Enforcer | None:
        rules = self.plan.clauses[i]
        if rules.metadata is None:
            return None
        if i not in self.enforcers:
            self.enforcers[i] = Enforcer(rules.metadata, self.plan.protocol)
        return self.enforcers[i]

    def _new(self, i: int, part: pa.Table) -> pa.Table:
        new = part.select(self.names)
        enforcer = self._enforcer(i)
        if enforcer is not None:
            keep = self.plan.clauses[i].keep
            if keep is not None:
                new = new.select(list(keep))
            new = enforcer.prepare(new).select(self.names)
        return cast_table(new, self.target)

    def _pre_image(self, part: pa.Table) -> pa.Table:
        pre = part.select(self.names)
        for k, carrier in enumerate(self.plan.old):
            pre = pre.set_column(k, pre.schema.field(k).with_type(part.column(carrier).type), part.column(carrier))
        return cast_table(pre, self.target)

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        hidden = self.plan.hidden
        for raw in batches:
            if raw.num_rows == 0:
                continue
            table = pa.Table.from_batches([raw])
            which = pc.fill_null(table.column(CLAUSE), -1).to_numpy()
            for i in np.unique(which):
                part = table.filter(pa.array(which == i))
                if i < 0:
                    data = cast_table(part.select(self.names), self.target)
                else:
                    kind = self.plan.clauses[int(i)].kind
                    if kind == "delete":
                        if self.cdc is not None:
                            self.cdc.add(cast_table(part.select(self.names), self.target), "delete")
                        continue
                    data = self._new(int(i), part)
                    if self.cdc is not None:
                        if kind == "update":
                            self.cdc.add(self._pre_image(part), "update_preimage")
                            self.cdc.add(data, "update_postimage")
                        else:
                            self.cdc.add(data, "insert")
                data = with_hidden_columns(data, part, hidden)
                self.rows += data.num_rows
                yield from data.to_batches()

    def run(self, batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch:
        return write_task_files(self.storage, self.plan.metadata, self.plan.hidden, self.mode, self.cdc,
                                self.batches(batches), lambda: self.rows)


def _task(bc: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with marked():  # a constraint violation reaches the driver as itself
            out = _MergeTask(bc.value).run(batches)
        yield out
    return run


def write_merge_rows(target: Target, frame: Any, plan: MergeRowsPlan,
                     on_written: Callable[[Written], None]) -> Written:
    """Write `frame` (logical columns, hidden row-tracking columns, `__dk_clause`, pre-image carriers)."""
    bc = Shared(target.spark, plan)
    try:
        written = collect_written(frame, _task(bc))
    finally:
        bc.destroy()
    on_written(written)
    return written


__all__ = ["CLAUSE", "ClauseRules", "MergeRowsPlan", "write_merge_rows"]
