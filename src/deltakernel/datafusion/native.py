"""DataFusion's own Parquet reader for the *plain* files of a `DeltaDataset` fragment.

Why: pyarrow's scanner decodes whole row groups (no page index) and is slower than DataFusion's reader
on strings; a 1 % range query on a 500k-row file paid for the whole file. The kernel still plans the
query (file skipping in `get_fragments`, DVs, column mapping), and only files that DataFusion reads
exactly as the kernel would (no deletion vector, no column mapping, every data column present with
the logical name and type, local filesystem) are handed to an inner DataFusion plan: per file
`read_parquet` with partition values as typed literals, the kernel predicate translated to a
DataFusion expression (row-group + page-index pruning, exact filtering), the projection on top.

Threading (datafusion-python runs every query on one global tokio runtime):
- A `DatasetExec` partition is polled *on* a runtime thread, where blocking on the runtime panics, and
  `DataFrame.execute_stream()` spawns onto the runtime's workers — which may all be blocked polling
  Python partitions, a deadlock. So the inner streams are created at *plan* time (`get_fragments`,
  when the workers are free) on a helper thread, with a timeout that falls back to pyarrow.
- At scan time a helper thread pulls the per-partition streams (`execute_stream_partitioned`; polling
  a Parquet scan / filter / projection stream runs inline and local reads use tokio's blocking pool,
  so no worker is needed) and hands batches over a bounded queue, without the GIL while decoding.
"""

from __future__ import annotations

import os
import queue
import re
import threading
from collections.abc import Iterator
from typing import Any

import datafusion
import pyarrow as pa
import pyarrow.fs as pafs
from datafusion import col, lit
from datafusion import functions as dff

from ..kernel.expressions.predicate import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Column,
    Comparison,
    Expr,
    In,
    IsNull,
    Literal,
    Not,
    Or,
)

# A fragment with more files than this is read by pyarrow (planning a union of thousands of tiny
# scans costs more than pyarrow's readahead over them).
MAX_NATIVE_FILES = 128
PLAN_TIMEOUT_S = 10.0
_QUEUE_DEPTH = 4
_SENTINEL = object()


def available(filesystem: Any) -> bool:
    """Native reads need datafusion, a local filesystem (DataFusion opens the paths itself) and a
    runtime with at least two workers (one may be busy planning the outer query)."""
    if os.environ.get("DELTAKERNEL_DATAFUSION_NATIVE", "1") == "0":  # kill switch
        return False
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return isinstance(filesystem, pafs.LocalFileSystem) and cpus >= 2


# DataFusion parses a local path as a URL and treats glob characters as patterns; only paths made of
# these characters are handed to it (others are read by pyarrow)
_SAFE_PATH = re.compile(r"[A-Za-z0-9._\-/=+:,@ ]+")


def safe_path(path: str) -> bool:
    return os.path.isabs(path) and _SAFE_PATH.fullmatch(path) is not None


def same_filter(a: Any, b: Any) -> bool:
    """Whether two optional pyarrow filter expressions are the same expression."""
    if a is None or b is None:
        return a is None and b is None
    return a is b or bool(a.equals(b))


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ----------------------------------------------------------------------------- kernel Expr -> DataFusion
def to_datafusion(expr: Expr, types: dict[str, pa.DataType]) -> Any | None:
    """The kernel predicate as a DataFusion expression (same Kleene semantics); None if not expressible.

    Only top-level columns are translated (nested field access is left to the pyarrow path)."""
    def operand(o: Any, hint: pa.DataType | None) -> Any:
        if isinstance(o, Column):
            if len(o.path) != 1 or o.path[0] not in types:
                raise _Untranslatable
            return col(quote(o.path[0]))
        return lit(o.to_scalar(hint))

    def hint_of(o: Any) -> pa.DataType | None:
        return types.get(o.path[0]) if isinstance(o, Column) and len(o.path) == 1 else None

    def go(e: Expr) -> Any:
        if isinstance(e, AlwaysTrue):
            return lit(True)
        if isinstance(e, AlwaysFalse):
            return lit(False)
        if isinstance(e, (Column, Literal)):
            return operand(e, None)
        if isinstance(e, Comparison):
            left, right = operand(e.left, hint_of(e.right)), operand(e.right, hint_of(e.left))
            return {"=": left.__eq__, "!=": left.__ne__, "<": left.__lt__, "<=": left.__le__,
                    ">": left.__gt__, ">=": left.__ge__}[e.op](right)
        if isinstance(e, IsNull):
            c = operand(e.column, None)
            return c.is_not_null() if e.negated else c.is_null()
        if isinstance(e, In):
            c = operand(e.column, None)
            hint = e.value_type or hint_of(e.column)
            if not e.values:  # x IN () is FALSE for non-null x, NULL for NULL x (kernel semantics)
                base = dff.when(c.is_null(), lit(pa.scalar(None, pa.bool_()))).otherwise(lit(False))
                return ~base if e.negated else base
            return dff.in_list(c, [operand(Literal(v), hint) for v in e.values], negated=e.negated)
        if isinstance(e, Not):
            return ~go(e.child)
        if isinstance(e, (And, Or)):
            if not e.children:
                return lit(isinstance(e, And))
            out = go(e.children[0])
            for child in e.children[1:]:
                out = (out & go(child)) if isinstance(e, And) else (out | go(child))
            return out
        raise _Untranslatable

    try:
        return go(expr)
    except (_Untranslatable, pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


class _Untranslatable(Exception):
    pass


# ----------------------------------------------------------------------------- plan time
_contexts: dict[int, Any] = {}
_contexts_lock = threading.Lock()


def inner_context(batch_size: int) -> Any:
    """The process-wide inner SessionContext for `batch_size`: single-partition plans (one stream per
    file, never a spawned task at scan time), view types, no plan-time statistics (the reader reads each
    footer anyway). Shared so that DataFusion's Parquet metadata cache serves every query and dataset."""
    with _contexts_lock:
        ctx = _contexts.get(batch_size)
        if ctx is None:
            config = (datafusion.SessionConfig()
                      .with_target_partitions(1)
                      .with_batch_size(batch_size)
                      .with_repartition_file_scans(False)
                      .set("datafusion.optimizer.enable_round_robin_repartition", "false")
                      .set("datafusion.execution.parquet.schema_force_view_types", "true")
                      .set("datafusion.execution.collect_statistics", "false"))
            ctx = _contexts[batch_size] = datafusion.SessionContext(config)
        return ctx


class NativeStreams:
    """The inner plan's per-partition streams for one fragment, single use (see the module docstring)."""

    def __init__(self, streams: list[Any], columns: list[str], filter: Any, num_files: int) -> None:
        self.pid = os.getpid()  # the streams run on this process's DataFusion runtime only
        self.streams = streams
        self.columns = columns
        self.filter = filter
        self.num_files = num_files
        self._taken = False
        self._lock = threading.Lock()

    def take(self, columns: list[str], filter: Any) -> list[Any] | None:
        """The streams if they answer exactly this scan (same projection and filter) and are unused."""
        with self._lock:
            if self._taken or columns != self.columns or not same_filter(filter, self.filter) or \
                    self.pid != os.getpid():
                return None
            self._taken = True
            return self.streams


def plan_streams(
    files: list[tuple[str, dict[str, pa.Scalar]]],
    data_schema: pa.Schema,
    partition_types: dict[str, pa.DataType],
    columns: list[str],
    predicate: Expr | None,
    filter: Any,
    batch_size: int,
) -> NativeStreams | None:
    """Create (on a helper thread) the inner DataFusion streams reading `files` = [(local path,
    {partition column: typed value})]; None when the predicate is not expressible or planning fails."""
    from ..errors import ForkedProcessError
    from .forking import ensure_usable

    try:
        ensure_usable()  # in a fork child: may reload this module (the names below are then the new instance's)
    except ForkedProcessError:
        return None  # DataFusion cannot run in this process: pyarrow reads the files
    types = {**{f.name: f.type for f in data_schema}, **partition_types}
    if predicate is not None and to_datafusion(predicate, types) is None:
        return None
    result: dict[str, Any] = {}

    def build() -> None:
        try:
            result["streams"] = _build(files, data_schema, partition_types, columns, predicate, types,
                                       batch_size)
        except BaseException as exc:  # reported to the planning thread, which falls back to pyarrow
            result["error"] = exc

    t = threading.Thread(target=build, name="deltakernel-df-plan", daemon=True)
    t.start()
    t.join(PLAN_TIMEOUT_S)
    if t.is_alive() or "streams" not in result:
        return None
    return NativeStreams(result["streams"], columns, filter, len(files))


def _build(files: list[tuple[str, dict[str, pa.Scalar]]], data_schema: pa.Schema,
           partition_types: dict[str, pa.DataType], columns: list[str], predicate: Expr | None,
           types: dict[str, pa.DataType], batch_size: int) -> list[Any]:
    ctx = inner_context(batch_size)
    data_cols = [col(quote(f.name)) for f in data_schema]
    df = None
    for path, values in files:
        one = ctx.read_parquet(path, schema=data_schema, file_extension="")
        if partition_types:
            one = one.select(*data_cols, *[lit(values[name]).alias(name) for name in partition_types])
        df = one if df is None else df.union(one)
    assert df is not None
    if predicate is not None:
        condition = to_datafusion(predicate, types)
        if condition is None:  # checked by plan_streams; never scan unfiltered by mistake
            raise _Untranslatable(repr(predicate))
        df = df.filter(condition)
    df = df.select(*[col(quote(c)) for c in columns])
    return list(df.execute_stream_partitioned())


# ----------------------------------------------------------------------------- scan time
def iterate(streams: list[Any], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Batches of `streams`, pulled on a helper thread (never on a runtime thread) and cast to `schema`."""
    q: queue.Queue[Any] = queue.Queue(_QUEUE_DEPTH)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def pump() -> None:
        try:
            for stream in streams:
                for batch in stream:
                    if not put(batch.to_pyarrow()):
                        return
        except BaseException as exc:
            put(exc)
            return
        put(_SENTINEL)

    t = threading.Thread(target=pump, name="deltakernel-df-scan", daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is _SENTINEL:
                return
            if isinstance(item, BaseException):
                raise item
            if item.num_rows == 0:
                continue
            if item.schema != schema:
                item = pa.RecordBatch.from_arrays(
                    [a if a.type == f.type else a.cast(f.type) for a, f in zip(item.columns, schema)],
                    schema=schema)
            yield item
    finally:
        stop.set()


__all__ = [
    "MAX_NATIVE_FILES", "NativeStreams", "available", "inner_context", "iterate", "plan_streams", "safe_path",
    "same_filter", "to_datafusion",
]
