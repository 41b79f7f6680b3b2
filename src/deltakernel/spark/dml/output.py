"""Rows a Spark DML writes back (copied and updated rows) and its change data files, from the executors.

Two write paths, as for ordinary writes (`spark/writing/writer.py`):
- native (`native_write`): Spark's own Parquet writer and footer statistics, when nothing needs checking
  (copied rows were valid already; updated rows only when the table has no rule that could fail or fill
  a column) and no change data is written in the same pass. The rows carry their stable row ids in the
  table's hidden materialized columns (written like any column, left out of the stats);
- `mapInArrow` (everything else): each task runs the kernel's `Enforcer` on its updated rows
  (generated columns recomputed, NOT NULL / CHECK / invariants verified), casts, writes files with the
  kernel's file writer and, with the change data feed on, the updated rows' pre- and post-images through a
  `ChangeDataWriter`. Tasks return only the actions of the files they wrote.
`write_change_data` writes rows as change data of one type (DELETE's deleted rows) the same way.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError
from ...kernel.arrow_build import scalar
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.protocol.select import features_in_effect
from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.schema.types import PrimitiveType, StructField, StructType, schema_to_json
from ...operations.files.change_data import ChangeDataWriter
from ...operations.files.dml_output import without_stats_of
from ...operations.write.enforcement import (
    CONSTRAINT_PREFIX,
    CURRENT_DEFAULT,
    GENERATION_EXPRESSION,
    IDENTITY_EXPLICIT,
    IDENTITY_HWM,
    IDENTITY_START,
    IDENTITY_STEP,
    INVARIANTS,
    Enforcer,
)
from ..common.task_errors import marked, task_errors
from ..kinds.session import Shared
from ..writing.native_write import WRITE_PATH_OPTION, native_or_fallback, write_native, write_path_choice
from ..writing.writer import ARROW_BATCH_ROWS, arrow_batch_rows
from .frame import Target, executor_storage
from .touched import to_arrow

OUTPUT = "kind string, action string, rows long"
_OUT_SCHEMA = pa.schema([("kind", pa.string()), ("action", pa.string()), ("rows", pa.int64())])
_FALSE = scalar(False)
_IDENTITY_KEYS = (IDENTITY_START, IDENTITY_STEP, IDENTITY_HWM, IDENTITY_EXPLICIT)
_RULE_KEYS = (GENERATION_EXPRESSION, INVARIANTS, CURRENT_DEFAULT, *_IDENTITY_KEYS)


@dataclass
class Written:
    """Actions of the files a job wrote (data `add`s, `cdc`s) and the data rows written."""

    adds: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    cdcs: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    rows: int = 0


# ----------------------------------------------------------------------------- the rules of a table
def _with_fields(md: Metadata, fields: tuple[StructField, ...],
                 configuration: dict[str, str] | None = None) -> Metadata:
    return dataclasses.replace(md, schema_string=schema_to_json(StructType(fields)),
                               configuration=dict(md.configuration if configuration is None else configuration))


def _plain_field(f: StructField) -> StructField:
    t = f.type
    if isinstance(t, StructType):
        t = StructType(tuple(_plain_field(c) for c in t.fields))
    return StructField(f.name, t, True, {k: v for k, v in f.metadata.items() if k not in _RULE_KEYS})


def plain_metadata(md: Metadata, hidden: tuple[str, str] | None) -> Metadata:
    """`md` without any rule (for rows known to satisfy them: nothing to check or fill), plus the hidden
    row-tracking columns as plain long columns (what the native writer writes)."""
    fields = tuple(_plain_field(f) for f in md.schema.fields)
    if hidden is not None:
        fields += tuple(StructField(n, PrimitiveType("long"), True, {}) for n in hidden)
    conf = {k: v for k, v in md.configuration.items() if not k.startswith(CONSTRAINT_PREFIX)}
    return _with_fields(md, fields, conf)


def _relaxed(f: StructField) -> StructField:
    """A column UPDATE does not assign: its values stay, so its NOT NULL holds; identity never refilled."""
    t = f.type
    if isinstance(t, StructType):
        t = StructType(tuple(_relaxed(c) for c in t.fields))
    return StructField(f.name, t, True, {k: v for k, v in f.metadata.items() if k not in _IDENTITY_KEYS})


@dataclass(frozen=True)
class UpdateRules:
    """The rules updated rows meet: `metadata` for their Enforcer, the generated columns recomputed, and
    whether anything needs the Enforcer at all (else the native path may write them)."""

    metadata: Metadata
    regenerate: tuple[str, ...]
    enforce: bool


def update_rules(md: Metadata, protocol: Protocol, assigned: set[str]) -> UpdateRules:
    """Columns not assigned keep their values (their NOT NULL holds); generated columns not assigned are
    recomputed from the new values; CHECK constraints and invariants apply to the whole row."""
    generated_on = "generatedColumns" in features_in_effect(protocol)
    fields = []
    for f in md.schema.fields:
        if f.name in assigned:
            fields.append(StructField(f.name, f.type, f.nullable,
                                      {k: v for k, v in f.metadata.items() if k not in _IDENTITY_KEYS}))
        else:
            fields.append(_relaxed(f))
    regenerate = tuple(f.name for f in md.schema.fields
                       if generated_on and GENERATION_EXPRESSION in f.metadata and f.name not in assigned)
    relaxed = _with_fields(md, tuple(fields))
    return UpdateRules(relaxed, regenerate, Enforcer(relaxed, protocol).needed)


# ----------------------------------------------------------------------------- the rows task
@dataclass(frozen=True)
class RowsPlan:
    """What a rows task needs (`session.Shared`: a broadcast on classic sessions, in the task over Connect).

    `updated`: the boolean column marking updated rows, True (every row is updated) or False (every row is
    copied). Updated rows go through the Enforcer when `enforce` (generated columns of `regenerate`
    recomputed); with `change_data`, their pre-images (old values from `old_values`: column -> carrier
    column) and post-images are written as change data.
    """

    uri: str
    storage_options: dict[str, str] | None
    metadata: Metadata  # the commit's (configuration with materialized row-tracking names)
    rules: Metadata  # the updated rows' Enforcer metadata
    protocol: Protocol
    hidden: tuple[str, str] | None
    updated: str | bool
    enforce: bool = False
    regenerate: tuple[str, ...] = ()
    old_values: tuple[tuple[str, str], ...] = ()
    change_data: bool = False


def cast_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """`table` cast to the table's `target` schema (`cast_batch`'s rules; every field nullable)."""
    from ...operations.write.data_files import cast_batch

    schema = pa.schema([f.with_nullable(True) for f in target])  # `cast_batch`'s output: nullable fields
    if table.num_rows == 0:
        return schema.empty_table()
    return pa.Table.from_batches([cast_batch(b, target) for b in table.combine_chunks().to_batches()], schema)


def with_hidden_columns(rows: pa.Table, source: pa.Table, hidden: tuple[str, str] | None) -> pa.Table:
    """`rows` with the hidden row-tracking columns `hidden` taken (as int64) from `source`."""
    if hidden is None:
        return rows
    for name in hidden:
        rows = rows.append_column(pa.field(name, pa.int64()), source.column(name).cast(pa.int64()))
    return rows


class _RowsTask:
    """One task's share of a rows job (see `RowsPlan`)."""

    def __init__(self, plan: RowsPlan) -> None:
        self.plan = plan
        md = plan.metadata
        self.storage = executor_storage(plan.uri, plan.storage_options)
        self.names = [f.name for f in md.schema.fields]
        self.target = to_arrow_schema(md.schema, include_metadata=False)
        self.enforcer = Enforcer(plan.rules, plan.protocol) if plan.enforce else None
        mode = md.configuration.get("delta.columnMapping.mode", "none") or "none"
        self.mode = mode
        self.cdc = ChangeDataWriter(self.storage, md.schema, list(md.partition_columns), mode,
                                    md.configuration) if plan.change_data else None
        self.rows = 0

    def _updated(self, old: pa.Table) -> pa.Table:
        plan = self.plan
        new = old.select(self.names)
        if self.enforcer is not None:
            if plan.regenerate:
                new = new.drop_columns(list(plan.regenerate))
            new = self.enforcer.prepare(new)
            new = new.select(self.names)
        new = cast_table(new, self.target)
        if self.cdc is not None:
            pre = old.select(self.names)
            for column, carrier in plan.old_values:
                i = pre.schema.get_field_index(column)
                pre = pre.set_column(i, pre.schema.field(i).with_type(old.column(carrier).type), old.column(carrier))
            self.cdc.add(cast_table(pre, self.target), "update_preimage")
            self.cdc.add(new, "update_postimage")
        return with_hidden_columns(new, old, plan.hidden)

    def batches(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        plan = self.plan
        for raw in batches:
            if raw.num_rows == 0:
                continue
            table = pa.Table.from_batches([raw])
            if plan.updated is True or plan.updated is False:
                upd = table if plan.updated else table.slice(0, 0)
                copied = table.slice(0, 0) if plan.updated else table
            else:
                mask = pc.fill_null(table.column(plan.updated), _FALSE)
                upd, copied = table.filter(mask), table.filter(pc.invert(mask))
            for part in (with_hidden_columns(cast_table(copied.select(self.names), self.target), copied, plan.hidden)
                         if copied.num_rows else None,
                         self._updated(upd) if upd.num_rows else None):
                if part is not None and part.num_rows:
                    self.rows += part.num_rows
                    yield from part.to_batches()

    def run(self, batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch:
        return write_task_files(self.storage, self.plan.metadata, self.plan.hidden, self.mode, self.cdc,
                                self.batches(batches), lambda: self.rows)


def write_task_files(storage: Any, md: Metadata, hidden: tuple[str, str] | None, mode: str,
                     cdc: ChangeDataWriter | None, rows: Iterator[pa.RecordBatch],
                     count: Callable[[], int]) -> pa.RecordBatch:
    """On an executor: write `rows` as data files (and the change data the iteration collected) and return
    their actions (`_result`); on failure every file written is deleted. Shared by UPDATE/DELETE and MERGE."""
    from ...operations.files.dml_output import delete_quietly
    from ...operations.files.parquet_writer import write_data_files

    schema = md.schema
    if hidden is not None:
        schema = StructType((*schema.fields, *(StructField(n, PrimitiveType("long"), True, {}) for n in hidden)))
    adds: list[dict[str, Any]] = []
    try:
        adds = write_data_files(storage, rows, schema=schema, partition_columns=list(md.partition_columns),
                                column_mapping_mode=mode, configuration=md.configuration)
        cdcs = cdc.actions() if cdc is not None else []
    except BaseException:
        if cdc is not None:
            cdc.abort()
        delete_quietly(storage, [a["path"] for a in adds])
        raise
    if hidden is not None:
        adds = [without_stats_of(a, hidden) for a in adds]
    return _result(adds, cdcs, count())


def _result(adds: list[dict[str, Any]], cdcs: list[dict[str, Any]], rows: int) -> pa.RecordBatch:
    kinds = ["add"] * len(adds) + ["cdc"] * len(cdcs)
    actions: list[str | None] = [json.dumps(a, separators=(",", ":")) for a in (*adds, *cdcs)]
    if not actions:
        kinds, actions = ["none"], [None]
    counts = [rows] + [0] * (len(actions) - 1)
    return pa.RecordBatch.from_arrays([pa.array(kinds, pa.string()), pa.array(actions, pa.string()),
                                       pa.array(counts, pa.int64())], schema=_OUT_SCHEMA)


def _rows_task(bc: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with marked():  # a DeltaError (constraint violation...) reaches the driver as itself
            out = _RowsTask(bc.value).run(batches)
        yield out
    return run


def collect_written(frame: Any, task: Any) -> Written:
    """Run `task` over `frame` (mapInArrow, big Arrow batches) and gather the files it wrote."""
    with arrow_batch_rows(frame.sparkSession, ARROW_BATCH_ROWS), task_errors():
        out = to_arrow(frame.mapInArrow(task, OUTPUT))
    return written_from(out)


def written_from(out: pa.Table) -> Written:
    """What rows tasks wrote, from their `_result` rows (`OUTPUT`)."""
    kinds = out.column("kind").to_pylist()
    actions = out.column("action").to_pylist()
    written = Written(rows=int(pc.sum(out.column("rows")).as_py() or 0) if out.num_rows else 0)
    for kind, action in zip(kinds, actions):
        if kind == "add":
            written.adds.append(json.loads(action))
        elif kind == "cdc":
            written.cdcs.append(json.loads(action))
    return written


def write_rows(target: Target, frame: Any, plan: RowsPlan, on_written: Callable[[Written], None]) -> Written:
    """Write `frame` (the table's logical columns, the hidden row-tracking columns and the plan's control
    columns) as new data files. `on_written` is called with what was written before anything else can
    fail, so the caller can delete the files if the commit never lands."""
    spark = target.spark
    md = plan.metadata
    logical = [f.name for f in md.schema.fields] + list(plan.hidden or ())
    choice = write_path_choice(spark, {})
    simple = not plan.change_data and (plan.updated is False or not plan.enforce)
    if choice != "arrow" and simple:
        native_md = plain_metadata(md, plan.hidden)
        nf = native_or_fallback(spark, frame.select(*logical), target.storage, native_md, plan.protocol, None,
                                choice, "DML rewrite")
        if nf is not None:
            adds, rows = write_native(nf, target.path, target.uri, target.storage_options, native_md, None)
            if plan.hidden is not None:
                adds = [without_stats_of(a, plan.hidden) for a in adds]
            written = Written(adds, [], rows)
            on_written(written)
            return written
    elif choice == "native":
        raise DeltaError(f"{WRITE_PATH_OPTION}=native is not possible for this write: its rows need the "
                         "table's rules checked or change data written")
    control = [plan.updated] if isinstance(plan.updated, str) else []
    control += [carrier for _, carrier in plan.old_values]
    bc = Shared(spark, plan)
    try:
        written = collect_written(frame.select(*logical, *control), _rows_task(bc))
    finally:
        bc.destroy()
    on_written(written)
    return written


# ----------------------------------------------------------------------------- change data only
@dataclass(frozen=True)
class ChangePlan:
    uri: str
    storage_options: dict[str, str] | None
    metadata: Metadata
    change_type: str


def _change_task(bc: Any) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with marked():
            plan: ChangePlan = bc.value
            md = plan.metadata
            storage = executor_storage(plan.uri, plan.storage_options)
            mode = md.configuration.get("delta.columnMapping.mode", "none") or "none"
            cdc = ChangeDataWriter(storage, md.schema, list(md.partition_columns), mode, md.configuration)
            target = to_arrow_schema(md.schema, include_metadata=False)
            names = [f.name for f in md.schema.fields]
            try:
                for batch in batches:
                    if batch.num_rows:
                        cdc.add(cast_table(pa.Table.from_batches([batch]).select(names), target), plan.change_type)
                actions = cdc.actions()
            except BaseException:
                cdc.abort()
                raise
            out = _result([], actions, cdc.num_rows)
        yield out
    return run


def write_change_data(target: Target, rows: Any, metadata: Metadata, change_type: str,
                      on_written: Callable[[Written], None]) -> Written:
    """Write the logical rows of `rows` as `_change_data` files of `change_type` (partitioned like the table)."""
    names = [f.name for f in metadata.schema.fields]
    bc = Shared(target.spark, ChangePlan(target.uri, target.storage_options, metadata, change_type))
    try:
        written = collect_written(rows.select(*names), _change_task(bc))
    finally:
        bc.destroy()
    on_written(written)
    return written


__all__ = ["ChangePlan", "RowsPlan", "UpdateRules", "Written", "cast_table", "collect_written", "plain_metadata",
           "update_rules", "with_hidden_columns", "write_change_data", "write_rows", "write_task_files", "written_from"]
