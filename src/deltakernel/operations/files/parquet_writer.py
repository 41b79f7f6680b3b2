"""Write data files for a commit: Parquet files plus their `add` actions (path, partition values, stats).

Why it looks like this:
- streaming with bounded memory: batches are split by partition (`layout.split_by_partition`, one
  vectorized sort per batch, one batch ahead on a helper thread), buffered per partition up to one row
  group, then encoded on a small pool (row groups of different files encode concurrently: pyarrow releases
  the GIL); the total buffered bytes and the number of open Parquet writers are capped, so input larger
  than memory works. Buffering matters because each pyarrow `write_table` call starts new row groups.
  A partition with more than one full row group is written as two files (lanes) so its row groups encode
  on two cores; the buffering thread never waits for the encoder except on back-pressure and rolling.
- stats: null counts and NaN flags from the data (`kernel/stats/collect.py`), min/max folded from the footer
  of each file written (the encoder computes them anyway).
- dictionary encoding is chosen per column from a sample of the first row group flushed (nearly-unique columns
  are written plain instead of overflowing a dictionary in every column chunk); a file's Parquet writer opens at
  its first flush, once that choice is made.
- paths, partition directories and the physical file schema: `layout.py`; timestamps are INT64
  microseconds (UTC-adjusted for `timestamp`, not for `timestamp_ntz`).
- nothing here commits: on failure every file written so far is deleted (best effort) and the error re-raised.
- one writer for every data file: appends, overwrites, DML rewrites and OPTIMIZE (`one_file_per_partition` and
  `partition_values` give OPTIMIZE one file per bin, in the bin's row order, under the bin's logged partition
  values), so row groups, encodings and stats are the same whichever operation wrote a file.
- shredded variants (`variant_shredding`, only where the table allows it: `shredding.py`): each file's Parquet
  schema is fixed at its first flush, from the shredding schema inferred on that row group's first rows (or the
  one the caller forces); every row group of the file is shredded to it.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ...kernel.log.action_types import AddAction
from ...kernel.schema.types import StructType
from ...kernel.stats.collect import StatsCollector
from ...storage.base import Storage
from .layout import (
    HIVE_DEFAULT_PARTITION,
    Layout,
    conform,
    escape_path_name,
    has_dotted_name,
    make_layout,
    parquet_column_paths,
    partition_dir,
    random_prefix,
    random_prefix_length,
    split_conformed,
    to_physical,
    uri_encode_path,
)
from .shredding import VariantShredder
from .writer_options import COMPRESSION_EXTENSIONS, WriterProperties

log = logging.getLogger(__name__)

DEFAULT_TARGET_FILE_SIZE = 100 * 1024 * 1024  # deltalake's default; Spark's delta.targetFileSize default is 100 MiB too
MAX_OPEN_FILES = 64
MEMORY_BUDGET = 256 * 1024 * 1024  # uncompressed bytes buffered across all partitions
#: uncompressed (Arrow) bytes of one buffered row group: pyarrow encodes a row group from one Arrow table, so this
#: bounds a row group's memory when `max_row_group_size` rows are wide (parquet-mr's default block is 128 MB too)
MAX_ROW_GROUP_BYTES = 128 * 1024 * 1024
#: row groups per target-sized file at least (their encoded size is capped at target / this): Spark splits a
#: large file only between row groups, so a file of one or two huge row groups is read by one or two tasks
#: (issue 32: lineitem written as files of 1-4 row groups read slower than the generator's 14)
ROW_GROUPS_PER_FILE = 4
MIN_ROW_GROUP_BYTES = 1024 * 1024  # encoded bytes: no tiny row groups when the target file size is small
#: a file rolls once its encoded size is within this fraction of the target (measured, not estimated)
ROLL_SLACK = 0.05
_DICT_SAMPLE_ROWS = 32768  # rows looked at to decide dictionary encoding per column
_DICT_SAMPLE_MIN_ROWS = 16384  # smaller row groups do not decide (their file keeps dictionary everywhere)
_PARALLEL_STATS_ROWS = 65536  # below this a thread hand-off costs more than it hides
LANES = 2  # files written side by side per partition once it has a full row group (see _FileWriter.add)
_LANE_MIN_ROWS = 65536  # a flushed row group smaller than this does not open a second file


# ----------------------------------------------------------------------------- the writer
class _CountingFile:
    """Byte counter for output streams that cannot `tell()` (Python-backed object store streams)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.written = 0
        self.closed = False

    def write(self, data: Any) -> int:
        self._inner.write(data)
        size = memoryview(data).nbytes
        self.written += size
        return size

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()


class _OpenFile:
    """One Parquet file being written for one partition."""

    def __init__(self, key: str, slot: tuple[tuple[str | None, ...], int], stats: StatsCollector) -> None:
        self.key = key
        self.slot = slot  # (partition values, lane)
        self.values = slot[0]
        self.sink: Any = None  # opened with the writer at the first flush (see _FileWriter._start)
        self.writer: pq.ParquetWriter | None = None
        self.stats = stats
        self.rows = 0  # rows handed to the encoder (encoded or being encoded)
        self.buffer: list[pa.RecordBatch] = []
        self.buffered_rows = 0
        self.buffered_bytes = 0
        self.pending: Future[None] | None = None  # the row group being encoded on the encode pool
        self.pending_bytes = 0  # uncompressed bytes of that row group
        self.encoded_size = 0  # bytes in the sink after the last finished row group (set by the encoder)
        self.schema: pa.Schema | None = None  # the file's Parquet (Arrow) schema when it differs from the layout's
        self.shapes: dict[tuple[int, ...], Any] = {}  # variant path -> shredding shape (shredded files only)

    def estimated_size(self, ratio: float) -> float:
        """The file's size once pending and buffered rows are encoded, without waiting for the encoder."""
        return self.encoded_size + (self.pending_bytes + self.buffered_bytes) * ratio

    def wait(self) -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            pending.result()

    def size(self) -> int:
        self.wait()  # never read the sink's position while another thread writes to it
        return int(self.sink.tell()) if self.sink is not None else 0


_INLINE_ROWS = 4096  # row groups this small are encoded on the caller's thread when nothing else is in flight


def dictionary_options(options: dict[str, Any], sample: pa.Table | pa.RecordBatch,
                       layout: Layout) -> dict[str, Any]:
    """`options` with dictionary encoding turned off for columns nearly unique in `sample` (physical rows).

    Parquet writers try a dictionary for every column and fall back to plain once it outgrows the
    dictionary page (1 MiB); for high-cardinality numbers and timestamps that attempt is pure cost
    (a third of pyarrow's encoding CPU on the benchmark data) and leaves a useless dictionary page in
    every column chunk. Above 90 % distinct in a 32k-row sample the column has > ~150k distinct values,
    so a dictionary of 8-byte values (or longer strings) would overflow in a row group of ordinary size
    anyway. (A 32k sample costs ~15 ms on the first batch; 64k cost twice that.) Only when the caller left
    dictionary encoding on for all columns, only for top-level primitive columns, and not when a dotted field
    name makes Parquet column paths ambiguous.
    """
    if options.get("use_dictionary") is not True or sample.num_rows < _DICT_SAMPLE_MIN_ROWS \
            or has_dotted_name(layout.physical_arrow):
        return options
    head = sample.slice(0, _DICT_SAMPLE_ROWS)
    plain: set[str] = set()
    for field, arr in zip(head.schema, head.columns):
        t = field.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
                or pa.types.is_decimal(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
                or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            continue
        if pc.count_distinct(arr, mode="all").as_py() > 0.9 * len(arr):
            plain.add(field.name)
    if not plain:
        return options
    return {**options, "use_dictionary": [path for path in parquet_column_paths(layout.physical_arrow)
                                          if path.split(".", 1)[0] not in plain]}


class _FileWriter:
    def __init__(self, storage: Storage, layout: Layout, mode: str, configuration: Mapping[str, str],
                 props: WriterProperties, target_file_size: int, max_rows_per_file: int | None,
                 data_change: bool, path_prefix: str, tight_bounds: bool | None,
                 one_file_per_partition: bool = False, shredder: VariantShredder | None = None) -> None:
        self.storage = storage
        self.shredder = shredder
        self.fs, self.base = storage.arrow_filesystem()
        self.layout = layout
        self.mode = mode
        self.configuration = configuration
        self.props = props
        self.options = props.parquet_options(layout)
        # one file per partition (OPTIMIZE's bins): no rolling at the target size and no second lane
        self.target: int | None = None if one_file_per_partition else max(1, target_file_size)
        self.lanes = 1 if one_file_per_partition else LANES
        self.max_rows = max_rows_per_file if max_rows_per_file and max_rows_per_file > 0 else None
        self.rg_rows = max(1, props.max_row_group_size)
        # encoded bytes per row group (see ROW_GROUPS_PER_FILE); None: no target (OPTIMIZE's bins)
        self.rg_bytes = None if self.target is None else max(self.target // ROW_GROUPS_PER_FILE, MIN_ROW_GROUP_BYTES)
        self.data_change = data_change
        self.prefix = path_prefix.strip("/") + "/" if path_prefix.strip("/") else ""
        self.tight_bounds = tight_bounds
        # min/max come from the footers pyarrow writes anyway, unless statistics are off or a dotted
        # field name makes footer column paths ambiguous
        self.dotted_names = has_dotted_name(layout.physical_arrow)
        self.footer_stats = self.options["write_statistics"] is True and not self.dotted_names
        self.dictionary_planned = False
        self.prefix_length = random_prefix_length(mode, configuration)
        self.open: OrderedDict[tuple[tuple[str | None, ...], int], _OpenFile] = OrderedDict()
        self.lane: dict[tuple[str | None, ...], int] = {}  # the lane a partition's next rows go to
        self.created_keys: list[str] = []
        self.adds: list[AddAction] = []
        self.buffered_total = 0
        self.ratio = 1.0  # encoded bytes per buffered (Arrow) byte, learned from flushed row groups
        self.ratio_learned = False  # the first measured ratio replaces the 1.0 guess (no averaging with it)
        self.counter = 0
        self.made_dirs: set[str] = set()
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="deltakernel-stats")
        self.encode_workers = max(2, os.cpu_count() or 2)
        self.encode_pool = ThreadPoolExecutor(max_workers=self.encode_workers, thread_name_prefix="deltakernel-encode")
        self.in_flight: deque[Future[None]] = deque()
        ext = COMPRESSION_EXTENSIONS[self.options["compression"]]
        self.suffix = f"-c000.{ext}parquet"

    # -------------------------------------------------------------- encoding choice
    def plan_dictionary(self, physical: pa.Table) -> None:
        """Choose dictionary columns once, from the first row group flushed (physical rows): see
        `dictionary_options`. Not from the first input batch: a DML's first batch may be a few updated rows,
        too few to judge, and dictionary-encoding unique columns doubles the encoder's memory and time. Files
        started before a row group large enough to judge keep pyarrow's default (dictionary everywhere)."""
        if self.dictionary_planned:
            return
        if physical.num_rows >= _DICT_SAMPLE_MIN_ROWS:
            self.dictionary_planned = True
            self.options = dictionary_options(self.options, physical.slice(0, _DICT_SAMPLE_ROWS), self.layout)

    # -------------------------------------------------------------- files
    def _path(self, key: str) -> str:
        return f"{self.base.rstrip('/')}/{key}" if self.base else key

    def _open(self, slot: tuple[tuple[str | None, ...], int]) -> _OpenFile:
        values = slot[0]
        if len(self.open) >= MAX_OPEN_FILES:
            _, oldest = self.open.popitem(last=False)
            self._close(oldest)
        if self.prefix_length is not None:
            directory = self.prefix + random_prefix(self.prefix_length)
        else:
            directory = self.prefix + partition_dir(list(zip(self.layout.partition_physical, values)))
        name = f"part-{self.counter:05d}-{uuid.uuid4()}{self.suffix}"
        self.counter += 1
        key = directory + name
        if isinstance(self.fs, pafs.LocalFileSystem) and directory not in self.made_dirs:
            self.fs.create_dir(self._path(directory.rstrip("/")) if directory else self.base, recursive=True)
            self.made_dirs.add(directory)
        stats = StatsCollector(self.layout.data_schema, self.mode, self.configuration,
                               tight_bounds=self.tight_bounds, footer_min_max=self.footer_stats,
                               string_prefix_length=self.props.stats_string_prefix())
        f = _OpenFile(key, slot, stats)
        self.open[slot] = f
        return f

    def _start(self, f: _OpenFile, physical: pa.Table) -> None:
        """Create `f`'s file and Parquet writer at its first flush (encoding options planned by then)."""
        self.plan_dictionary(physical)
        self.created_keys.append(f.key)
        sink = self.fs.open_output_stream(self._path(f.key))
        try:
            sink.tell()
        except (OSError, AttributeError, NotImplementedError, pa.ArrowNotImplementedError):
            sink = _CountingFile(sink)
        f.sink = sink
        options = self.options if f.schema is None else VariantShredder.file_options(self.options, f.schema)
        f.writer = pq.ParquetWriter(sink, f.schema or self.layout.physical_arrow, **options)

    def _flush(self, f: _OpenFile) -> None:
        """Hand the buffered rows of `f` to the encode pool as one row group (stats from the logical columns).

        Row groups of *different* files encode concurrently (pyarrow releases the GIL), which is what makes
        partitioned writes use every core; row groups of one file stay in order (one pending job per file).
        """
        if not f.buffer:
            return
        f.wait()
        table = pa.Table.from_batches(f.buffer, schema=self.layout.logical_arrow)
        if f.writer is None and self.shredder is not None:
            f.shapes, f.schema = self.shredder.plan(table, self.layout)
        physical = pa.Table.from_batches([to_physical(b, self.layout) for b in f.buffer],
                                         schema=self.layout.physical_arrow)
        if f.shapes:
            assert self.shredder is not None and f.schema is not None
            physical = self.shredder.apply(physical, f.shapes, f.schema)
        if f.writer is None:
            self._start(f, physical)
        buffered_bytes, buffered_rows = f.buffered_bytes, f.buffered_rows
        self.buffered_total -= buffered_bytes
        f.buffer, f.buffered_rows, f.buffered_bytes = [], 0, 0
        f.rows += buffered_rows
        while len(self.in_flight) >= self.encode_workers * 2:  # bound the memory held by queued jobs
            self.in_flight.popleft().result()
        f.pending_bytes = buffered_bytes
        if buffered_rows <= _INLINE_ROWS and not self.in_flight:
            # a small write (a few hundred rows): encoding here costs less than starting the pool's thread and
            # handing the row group over (~0.3 ms of a 4 ms append)
            done: Future[None] = Future()
            try:
                self._encode(f, table, physical, buffered_bytes)
                done.set_result(None)
            except Exception as e:  # raised where the pool's would be: at `f.wait()`
                done.set_exception(e)
            f.pending = done
            return
        f.pending = self.encode_pool.submit(self._encode, f, table, physical, buffered_bytes)
        self.in_flight.append(f.pending)

    def _encode(self, f: _OpenFile, table: pa.Table, physical: pa.Table, buffered_bytes: int) -> None:
        before = int(f.sink.tell())
        # stats on another thread while Parquet encodes (both release the GIL): hides the stats cost
        pending = self.pool.submit(f.stats.update, table) if table.num_rows >= _PARALLEL_STATS_ROWS else None
        if pending is None:
            f.stats.update(table)
        assert f.writer is not None
        try:
            f.writer.write_table(physical, row_group_size=max(self.rg_rows, physical.num_rows))
        finally:
            if pending is not None:
                pending.result()
        after = int(f.sink.tell())
        written = after - before
        if buffered_bytes > 0 and written > 0:
            measured = written / buffered_bytes
            # averaging the first measurement with the 1.0 guess overestimated sizes 2-3x for several row groups
            # and rolled files early (issue 32: a 21 MiB first file of one row group, then 91 and 84 MiB)
            self.ratio = 0.5 * self.ratio + 0.5 * measured if self.ratio_learned else measured
            self.ratio_learned = True
        f.encoded_size, f.pending_bytes = after, 0

    def _close(self, f: _OpenFile) -> None:
        self._flush(f)
        f.wait()
        if f.writer is None:  # no row was ever flushed: no file was created
            return
        f.writer.close()
        f.stats.fold_parquet_footer(f.writer.writer.metadata)
        size = f.size()
        f.sink.close()
        if f.rows == 0:  # cannot happen through `add`, kept for safety: no empty files in the log
            self.storage.delete(f.key)
            return
        log.debug("wrote %s: %d rows, %d bytes", f.key, f.rows, size)
        self.adds.append({
            "path": uri_encode_path(f.key),
            "partitionValues": dict(zip(self.layout.partition_physical, f.values)),
            "size": size,
            "modificationTime": int(time.time() * 1000),
            "dataChange": self.data_change,
            "stats": f.stats.to_json(),
        })

    def _reached_target(self, f: _OpenFile) -> bool:
        """Is `f` at its target size? The estimate decides when it is clearly below; otherwise the row group
        just handed over is waited for and the encoded size decides, so a file never rolls on a guess (files
        end within `ROLL_SLACK` of the target, the last of a partition excepted)."""
        if self.target is None or f.estimated_size(self.ratio) < self.target:
            return False
        f.wait()
        return f.encoded_size >= self.target * (1 - ROLL_SLACK)

    def _roll(self, f: _OpenFile) -> None:
        self._close(f)
        del self.open[f.slot]

    # -------------------------------------------------------------- rows
    def add(self, values: tuple[str | None, ...], batch: pa.RecordBatch) -> None:
        """Buffer `batch` for partition `values`; flush full row groups to the encode pool.

        Lanes: pyarrow encodes one file on one thread, so a single big partition (an unpartitioned write or
        rewrite) would encode on one core. Once a partition flushes a full row group its next rows go to a
        second file (lane) while the first encodes, and back: two files of that partition encode side by side.
        Small writes (no row group of `_LANE_MIN_ROWS`) stay one file. Nothing here waits for the encoder
        except flushing a file whose previous row group is still encoding (the back-pressure) and rolling.
        """
        while batch.num_rows:
            lane = self.lane.get(values, 0)
            slot = (values, lane)
            f = self.open.get(slot)
            if f is None:
                f = self._open(slot)
            else:
                self.open.move_to_end(slot)
            take = min(batch.num_rows, self.rg_rows - f.buffered_rows)
            if self.max_rows is not None:
                take = min(take, self.max_rows - f.rows - f.buffered_rows)
            part = batch.slice(0, take) if take < batch.num_rows else batch
            batch = batch.slice(take)
            nbytes = part.nbytes
            f.buffer.append(part)
            f.buffered_rows += take
            f.buffered_bytes += nbytes
            self.buffered_total += nbytes
            full_file = self.max_rows is not None and f.rows + f.buffered_rows >= self.max_rows
            near_target = self.target is not None and f.estimated_size(self.ratio) >= self.target
            full_group = f.buffered_rows >= self.rg_rows or f.buffered_bytes >= MAX_ROW_GROUP_BYTES \
                or (self.rg_bytes is not None and f.buffered_bytes * self.ratio >= self.rg_bytes)
            if full_file or full_group or near_target:
                flushed = f.buffered_rows
                self._flush(f)
                if full_file or self._reached_target(f):
                    self._roll(f)
                    # the next rows fill the other lane's file first (it is below target), not a new file: a
                    # lane's tail after a roll no longer becomes a third, small file (issue 32: 93 + 101 + 4 MiB)
                    self.lane[values] = (lane + 1) % self.lanes
                elif flushed >= _LANE_MIN_ROWS:
                    self.lane[values] = (lane + 1) % self.lanes
        while self.buffered_total > MEMORY_BUDGET and self.open:
            largest = max(self.open.values(), key=lambda o: o.buffered_bytes)
            if not largest.buffered_bytes:
                break
            self._flush(largest)

    def finish(self) -> list[AddAction]:
        # hand every file's last row group to the encode pool before waiting on any: closing file by
        # file (flush, wait, close) would encode the tails of a partitioned write one at a time
        for f in list(self.open.values()):
            self._flush(f)
        while self.open:
            _, f = self.open.popitem(last=False)
            self._close(f)
        self.encode_pool.shutdown()
        self.pool.shutdown()
        return self.adds

    def abort(self) -> None:
        self.encode_pool.shutdown(wait=True)
        self.pool.shutdown(wait=True)
        for f in self.open.values():
            for obj in (f.writer, f.sink):
                try:
                    if obj is not None:
                        obj.close()
                except Exception:  # best effort: the original error matters
                    pass
        self.open.clear()
        for key in self.created_keys:
            try:
                self.storage.delete(key)
            except Exception:  # orphans are harmless: never committed
                pass


def write_data_files(
    storage: Storage,
    batches: Iterable[pa.RecordBatch],
    *,
    schema: StructType,
    partition_columns: list[str],
    column_mapping_mode: str,
    configuration: Mapping[str, str],
    target_file_size: int | None = None,
    writer_properties: WriterProperties | Any | None = None,
    data_change: bool = True,
    max_rows_per_file: int | None = None,
    path_prefix: str = "",
    tight_bounds: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
    partition_values: Mapping[str, str | None] | None = None,
    one_file_per_partition: bool = False,
    variant_shredding: bool = False,
    variant_shapes: Any = None,
) -> list[AddAction]:
    """Write `batches` (logical schema, table types) as Parquet data files; return their `add` actions.

    `target_file_size` (bytes) defaults to `delta.targetFileSize`, else 100 MiB; files also roll at
    `max_rows_per_file`. `tight_bounds` as in `StatsCollector` (None: from `delta.enableDeletionVectors`).
    `progress(rows, files)` is called on the calling thread after every input batch and once at the end
    with the rows taken so far and the files completed so far.
    `partition_values` (serialized, keyed by physical partition column name): every row belongs to that
    partition, taken as given instead of read from the rows (OPTIMIZE keeps a bin's values as logged).
    `one_file_per_partition`: each partition's rows go to one file in input order (no second encoding lane, no
    rolling at `target_file_size`; `max_rows_per_file` still applies) — OPTIMIZE's one file per bin.
    `variant_shredding`: write variant columns shredded (the caller checked the table allows it:
    `shredding.shredding_enabled`), with `variant_shapes` (`shredding.parse_shapes`) or else Spark's inference.
    Nothing is committed; on error the files written so far are deleted and the error re-raised.
    """
    mode = column_mapping_mode or "none"
    layout = make_layout(schema, list(partition_columns), mode)
    if target_file_size is None:
        raw = (configuration or {}).get("delta.targetFileSize")
        target_file_size = int(raw) if raw is not None and str(raw).strip().isdigit() else DEFAULT_TARGET_FILE_SIZE
    writer = _FileWriter(storage, layout, mode, configuration or {}, WriterProperties.coerce(writer_properties),
                         target_file_size, max_rows_per_file, data_change, path_prefix, tight_bounds,
                         one_file_per_partition,
                         VariantShredder.for_layout(layout, variant_shapes) if variant_shredding else None)
    fixed = None if partition_values is None else tuple(partition_values.get(p) for p in layout.partition_physical)
    splitter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltakernel-split") \
        if layout.partition_fields and fixed is None else None
    ahead: deque[Future[list[tuple[tuple[str | None, ...], pa.RecordBatch]]]] = deque()
    rows = 0
    try:
        for raw_batch in batches:
            if raw_batch.num_rows == 0:
                continue
            rows += raw_batch.num_rows
            if progress is not None:
                progress(rows, len(writer.adds))
            if splitter is None:
                writer.add(fixed or (), conform(raw_batch, layout))
                continue
            # split the next batch by partition on another thread (pyarrow's take and numpy's sort release
            # the GIL) while this one is buffered and encoded; one batch ahead bounds the extra memory
            ahead.append(splitter.submit(split_conformed, raw_batch, layout))
            if len(ahead) > 1:
                for values, part in ahead.popleft().result():
                    writer.add(values, part)
        while ahead:
            for values, part in ahead.popleft().result():
                writer.add(values, part)
        adds = writer.finish()
        if progress is not None:
            progress(rows, len(adds))
        return adds
    except BaseException:
        for pending in ahead:
            pending.cancel()
        writer.abort()
        raise
    finally:
        if splitter is not None:
            splitter.shutdown(wait=True)


__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "HIVE_DEFAULT_PARTITION",
    "WriterProperties",
    "escape_path_name",
    "partition_dir",
    "uri_encode_path",
    "write_data_files",
]

