"""`DeltaDataset`: a snapshot of a Delta table as a `pyarrow.dataset.Dataset` that DataFusion can scan.

Why a Dataset subclass: datafusion-python (55) has no pure-Python TableProvider, but its pyarrow-dataset
provider (`register_dataset` / `register_table`) only checks `isinstance(obj, pyarrow.dataset.Dataset)`
and then *calls Python methods* on it: `schema`, `scanner(columns=, filter=)` (plan time, for the
projected schema), `get_fragments(filter)` (plan time, one DataFusion partition per fragment) and, per
partition, `fragment.scanner(schema, columns=, filter=, batch_size=).to_batches()`. Simple predicates are
declared *Exact* and removed from DataFusion's plan, so every fragment must apply the filter exactly.

That gives us projection and filter pushdown with our own code in the loop:
- `get_fragments(filter)` translates the pyarrow filter into a kernel predicate and runs the kernel's
  conservative file skipping (partition values + per-file stats) before any file is opened; survivors
  are grouped into a bounded number of fragments (thousands of small files would otherwise become
  thousands of DataFusion partitions, each with its own Python round trips).
- Local files that DataFusion reads exactly as the kernel would (no deletion vector, no column mapping,
  every data column present under its logical name and type) are read by DataFusion's own Parquet
  reader (`native.py`: row-group + page-index pruning, view types, decoding without the GIL), planned
  in `get_fragments` for the projection recorded by the preceding `scanner()` call.
- Other *plain* files (no deletion vector, no column mapping, file columns absent or losslessly cast)
  use pyarrow's Parquet scanner: partition values come from per-fragment `partition_expression`s, the
  filter prunes row groups by Parquet statistics and is applied exactly.
- Everything else (deletion vectors, column mapping, type widening, case-mismatched or differently
  typed file columns) goes through the kernel's `Scan.read_file`: DVs by physical row index, physical ->
  logical names, widened types, partition columns from the log, then the same filter.

With `view_types` (the default, as DataFusion's own Parquet tables and deltalake's provider) top-level
strings / binaries are exposed as string_view / binary_view; the pyarrow and kernel paths work on the
logical types (pyarrow cannot filter views) and cast their output.

The object is only a Dataset as far as DataFusion needs: the C++-backed methods of the base class
(`to_table`, `head`, `join`, ...) are reimplemented on top of `scanner` or refused, never left to run
on the uninitialised native dataset.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import threading
from collections.abc import Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ..errors import InvalidPathError
from ..kernel import row_tracking as rt
from ..kernel.expressions.predicate import (
    And,
    Comparison,
    Expr,
    In,
    Literal,
    Not,
    Or,
    from_pyarrow,
    referenced_columns,
    to_pyarrow,
)
from ..kernel.paths import is_absolute, resolve_file
from ..kernel.scan.partition_values import partition_columns_table
from ..kernel.scan.scan import Scan, read_in_order
from ..kernel.scan.skipping import file_skipping_mask
from ..kernel.schema.arrow import to_arrow_schema
from ..kernel.snapshot import Snapshot
from . import native

# Everything a query runs is imported with this module (the predicate package brings `from_pyarrow`'s
# decoder with it): the first query should not pay for compiling modules.
DEFAULT_TARGET_GROUP_BYTES = 256 * 1024 * 1024
_SCHEMA_CHECK_WORKERS = 8
MIN_BATCH_ROWS = 131_072
native.inner_context(MIN_BATCH_ROWS)  # created with the module, not by the first query


@dataclass
class DatasetMetrics:
    """What the last planning and the scans so far did (pushdown evidence for tests and EXPLAIN users)."""

    plans: int = 0
    files_total: int = 0  # live files at the pinned version (last plan)
    files_skipped: int = 0  # pruned by partition values / stats before opening (last plan)
    fragments: int = 0  # DataFusion partitions handed out (last plan)
    files_opened: int = 0  # files actually read, cumulative over all scans
    files_kernel_path: int = 0  # of those, read through the kernel (DVs / column mapping / widening)
    files_native_path: int = 0  # of those, read by DataFusion's own Parquet reader (see native.py)
    last_predicate: str | None = None

    def reset_counts(self) -> None:
        self.files_opened = 0
        self.files_kernel_path = 0
        self.files_native_path = 0


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause cyclic garbage collection while DataFusion executes a plan over our datasets. A collection there
    can finalize an unreachable DataFusion object (an earlier SessionContext or DataFrame caught in a reference
    cycle) re-entrantly, inside DataFusion's own execution: the clean-clone CI runs crashed twice with SIGSEGV
    while "Garbage-collecting" (in `get_fragments`, and while an INSERT ... SELECT streamed). Reference counting
    still frees everything acyclic; the pending cycles are collected when the pause ends."""
    global _GC_PAUSES, _GC_WAS_ENABLED
    with _GC_LOCK:  # a counter: pauses of interleaved streams may end in any order
        if _GC_PAUSES == 0:
            _GC_WAS_ENABLED = gc.isenabled()
            gc.disable()
        _GC_PAUSES += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES -= 1
            if _GC_PAUSES == 0 and _GC_WAS_ENABLED:
                gc.enable()


_GC_LOCK = threading.Lock()
_GC_PAUSES = 0
_GC_WAS_ENABLED = True


class DeltaDataset(ds.Dataset):  # type: ignore[misc]
    """A pinned snapshot exposed through pyarrow's Dataset protocol (see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> DeltaDataset:
        # ds.Dataset's __init__ refuses direct construction; the Cython __cinit__ via __new__ is fine.
        return ds.Dataset.__new__(cls)  # type: ignore[no-any-return]

    def __init__(
        self,
        snapshot: Snapshot,
        *,
        target_partitions: int | None = None,
        target_group_bytes: int = DEFAULT_TARGET_GROUP_BYTES,
        native_reader: bool = True,
        view_types: bool = True,
        row_tracking: bool = False,
        provider: str = "auto",
    ) -> None:
        self.snapshot = snapshot
        if provider not in ("auto", "dataset"):
            raise ValueError(f"provider must be 'auto' or 'dataset', got {provider!r}")
        # "auto": registered as a listing view when `listing.plan` accepts the table (DataFusion scans the
        # files itself); "dataset": always this pyarrow-Dataset provider. `scan_path` says which was used.
        self.provider = provider
        self.scan_path = "dataset"
        # `_row_id` / `_row_commit_version` columns (PROTOCOL.md "Row Tracking"): only the kernel's reader
        # knows physical row positions, so every file goes through it
        self.row_tracking = row_tracking
        if row_tracking:
            rt.check_readable(snapshot.protocol, snapshot.configuration, list(snapshot.schema.names),
                              snapshot.storage.root_uri)
        # the kernel's Arrow types; DataFusion sees `schema`, where top-level strings / binaries are
        # views when `view_types` (DataFusion's own Parquet tables and deltalake's provider do the same,
        # and its reader decodes views much faster than contiguous strings)
        self.logical_schema = to_arrow_schema(snapshot.schema, include_metadata=False)
        if row_tracking:
            self.logical_schema = pa.schema([*self.logical_schema, *rt.METADATA_FIELDS])
        self._schema = _with_view_types(self.logical_schema) if view_types else self.logical_schema
        self.target_partitions = target_partitions or max(1, os.cpu_count() or 1)
        self.target_group_bytes = target_group_bytes
        self.metrics = DatasetMetrics()
        self._lock = threading.Lock()
        self._fs, self._base = snapshot.storage.arrow_filesystem()
        self._format = ds.ParquetFileFormat(
            read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"),
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True),
        )
        self._plain_table = snapshot.column_mapping_mode == "none" and not row_tracking
        self._partition_names = {c.lower() for c in snapshot.partition_columns}
        self._data_fields = [f for f in self.logical_schema if f.name.lower() not in self._partition_names]
        # file path -> can pyarrow read it as-is (checked once per file: the snapshot is immutable)
        self._file_ok: dict[str, bool] = {}
        # file path -> does DataFusion's reader give exactly the logical columns (native.py)
        self._native_ok: dict[str, bool] = {}
        # parsed stats of the pinned files per set of predicate columns (file_skipping_mask; bounded there):
        # stats JSON parsed once per snapshot, not per query
        self._stats_cache: dict[Any, Any] = {}
        self.native_reader = native_reader
        # (columns, filter) of the last `scanner()` call on this thread: DataFusion's DatasetExec calls
        # scanner(columns, filter) then get_fragments(filter), and the native streams need the projection
        self._pending = threading.local()
        # the live files this provider scans: all (None) or the subset `restricted_to` gave it
        self._only_files: pa.Table | None = None

    def restricted_to(self, files: pa.Table) -> DeltaDataset:
        """This dataset (same snapshot, options, caches and metrics) over `files` only, a subset of its live
        files: the listing path (`listing.py`) scans the other files itself and leaves these - the ones with
        deletion vectors, which only the kernel's reader applies - to this provider."""
        sub: DeltaDataset = DeltaDataset.__new__(DeltaDataset)
        sub.__dict__.update(self.__dict__)
        sub._only_files, sub._pending, sub.provider, sub.scan_path = files, threading.local(), "dataset", "dataset"
        return sub

    # ------------------------------------------------------------------ what DataFusion calls
    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def scanner(self, schema: Any = None, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                batch_size: int | None = None, **_: Any) -> DeltaScanner:
        """A scanner over the whole snapshot (DataFusion only reads `projected_schema` from it)."""
        scanner = DeltaScanner(self, None, columns, filter, batch_size)
        self._pending.scan = (scanner.columns, filter)
        return scanner

    def get_fragments(self, filter: pc.Expression | None = None) -> list[DeltaFragment]:
        """Files that may match `filter`, grouped into fragments (= DataFusion partitions).

        DataFusion calls this from inside its own execution (`__arrow_c_stream__`); a garbage collection there
        can finalize DataFusion objects re-entrantly and crashed the interpreter once in CI (SIGSEGV while
        "Garbage-collecting" in this call). Collection is paused for the planning and resumed after.
        """
        with gc_paused():
            return self._fragments(filter)

    def _fragments(self, filter: pc.Expression | None) -> list[DeltaFragment]:
        files = self.snapshot.files if self._only_files is None else self._only_files
        total = files.num_rows
        pred = self._kernel_predicate(filter)
        if pred is not None and total:
            files = files.filter(file_skipping_mask(self.snapshot, files, pred, self._stats_cache))
        groups = self._group(files)
        with self._lock:
            m = self.metrics
            m.plans += 1
            m.files_total, m.files_skipped, m.fragments = total, total - files.num_rows, len(groups)
            m.last_predicate = None if filter is None else str(filter)
        frags = [DeltaFragment(self, g) for g in groups]
        pending = getattr(self._pending, "scan", None)
        self._pending.scan = None
        if pending is not None and native.same_filter(pending[1], filter) and self._native_enabled():
            for frag in frags:
                frag.plan_native(pending[0], filter, pred)
        return frags

    # ------------------------------------------------------------------ Dataset API on top of scanner
    def to_batches(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                   batch_size: int | None = None, **_: Any) -> Iterator[pa.RecordBatch]:
        return self.scanner(columns=columns, filter=filter, batch_size=batch_size).to_batches()

    def to_table(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                 **_: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter).to_table()

    def count_rows(self, filter: pc.Expression | None = None, **_: Any) -> int:
        return self.scanner(columns=[], filter=filter).count_rows()

    def head(self, num_rows: int, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
             **_: Any) -> pa.Table:
        return self.scanner(columns=columns, filter=filter).head(num_rows)

    def _unsupported(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("DeltaDataset supports scanner/get_fragments/to_table/to_batches/count_rows/head;"
                                  " use DeltaTable for the rest")

    take = filter = sort_by = join = join_asof = replace_schema = _unsupported
    _get_fragments = _scanner_options = _scan_options = _unsupported

    @property
    def partition_expression(self) -> pc.Expression:
        return pc.scalar(True)

    def __reduce__(self) -> Any:
        raise TypeError("DeltaDataset is not picklable; pickle the table URI and version instead")

    def __repr__(self) -> str:
        return f"DeltaDataset({self.snapshot.storage.root_uri!r}, version={self.snapshot.version})"

    # ------------------------------------------------------------------ planning helpers
    def _native_enabled(self) -> bool:
        return self.native_reader and self._plain_table and native.available(self._fs)

    def native_file_ok(self, path: str, size: int | None) -> bool:
        """True when DataFusion's reader gives exactly the logical values: every data column present
        under its exact name and type (stricter than `plain_file_ok`: no casts, no missing columns)."""
        cached = self._native_ok.get(path)
        if cached is not None:
            return cached
        frag = self.make_parquet_fragment(path, size, pc.scalar(True))
        physical = frag.physical_schema
        ok = self.plain_file_ok(frag, path)
        for f in self._data_fields if ok else []:
            idx = physical.get_field_index(f.name)
            if idx < 0 or physical.field(idx).type != f.type:
                ok = False
                break
        self._native_ok[path] = ok
        return ok

    def local_path(self, path: str) -> str:
        """`path` (from the log) in this dataset's filesystem (absolute paths may leave the table root)."""
        target, key = resolve_file(self.snapshot.storage, path)
        if not self.own_store(path):
            raise InvalidPathError(f"{path!r} is in another store than {self.snapshot.storage.root_uri}")
        return target.arrow_path(key)

    def own_store(self, path: str) -> bool:
        """False for a file in another store (DELTAKERNEL_ALLOW_FOREIGN_PATHS): only the kernel path reads it."""
        if not is_absolute(path):
            return True
        target, _ = resolve_file(self.snapshot.storage, path)
        return bool(target.arrow_filesystem()[0] == self._fs)

    def _kernel_predicate(self, filter: pc.Expression | None) -> Expr | None:
        if filter is None:
            return None
        pred = from_pyarrow(filter, self.snapshot.schema)
        if pred is None or self._schema is self.logical_schema:
            return pred
        return _without_views(pred)

    def row_filter(self, filter: pc.Expression | None) -> pc.Expression | None:
        """`filter` for pyarrow over the logical types: DataFusion writes string literals as views when the
        schema has views, and pyarrow cannot compare or filter views, so the kernel's translation is used."""
        if filter is None or self._schema is self.logical_schema:
            return filter
        pred = self._kernel_predicate(filter)
        return filter if pred is None else to_pyarrow(pred, self.snapshot.schema)

    def _group(self, files: pa.Table) -> list[pa.Table]:
        """Split the surviving files into at most ~target_partitions size-balanced groups.

        Why: one fragment per file costs a DataFusion partition, a Python scanner and a pyarrow dataset
        per file; grouping lets pyarrow's scanner read many small files with its own readahead.
        """
        n = files.num_rows
        if n == 0:
            return []
        sizes = files.column("size").to_pylist()
        total = sum(s or 0 for s in sizes)
        n_groups = min(n, max(self.target_partitions, math.ceil(total / self.target_group_bytes)))
        if n_groups == n:
            return [files.slice(i, 1) for i in range(n)]
        # longest-processing-time first: biggest file into the currently lightest group
        order = sorted(range(n), key=lambda i: -(sizes[i] or 0))
        loads = [0] * n_groups
        members: list[list[int]] = [[] for _ in range(n_groups)]
        for i in order:
            g = loads.index(min(loads))
            members[g].append(i)
            loads[g] += sizes[i] or 0
        return [files.take(sorted(m)) for m in members if m]

    # ------------------------------------------------------------------ file classification
    def plain_file_ok(self, fragment: ds.ParquetFileFragment, path: str) -> bool:
        """True when pyarrow alone reads this file right: every logical data column is either absent
        (a column added later: nulls, as the protocol says) or present under the exact name and type."""
        cached = self._file_ok.get(path)
        if cached is not None:
            return cached
        physical = fragment.physical_schema
        names = {n.lower(): n for n in physical.names}
        ok = True
        for f in self._data_fields:
            actual = names.get(f.name.lower())
            if actual is None:
                continue
            if actual != f.name or not _same_values(physical.field(actual).type, f.type):
                ok = False
                break
        self._file_ok[path] = ok
        return ok

    def make_parquet_fragment(self, path: str, size: int | None, partition_expression: pc.Expression) -> Any:
        full = self.local_path(path)
        return self._format.make_fragment(full, filesystem=self._fs, partition_expression=partition_expression,
                                          file_size=size)

    def partition_expressions(self, files: pa.Table) -> list[pc.Expression]:
        """`col == value` / `is_null(col)` guarantees per file, from the typed partition values."""
        fields = self.snapshot.partition_fields
        if not fields:
            return [pc.scalar(True)] * files.num_rows
        typed = partition_columns_table(files.column("partition_values"), fields, self.snapshot.column_mapping_mode)
        columns = {f.name: typed[f.name].to_pylist() for f in fields}
        types = {f.name: self.logical_schema.field(f.name).type for f in fields}
        out = []
        for i in range(files.num_rows):
            e: pc.Expression | None = None
            for f in fields:
                v = columns[f.name][i]
                term = pc.field(f.name).is_null() if v is None else pc.field(f.name) == pa.scalar(v, types[f.name])
                e = term if e is None else e & term
            out.append(e if e is not None else pc.scalar(True))
        return out


class DeltaFragment:
    """A group of files = one DataFusion partition. Duck-types `pyarrow.dataset.Fragment.scanner`."""

    def __init__(self, dataset: DeltaDataset, files: pa.Table) -> None:
        self.dataset = dataset
        self.files = files
        self.native: native.NativeStreams | None = None
        self.native_rows: list[int] = []  # rows of `files` the native streams read

    def plan_native(self, columns: list[str], filter: pc.Expression | None, pred: Expr | None) -> None:
        """Plan DataFusion's reader over this fragment's files that it reads exactly (see native.py)."""
        d = self.dataset
        if not columns or (filter is not None and pred is None):
            return
        files = self.files
        no_dv = files.column("deletion_vector").is_null().to_pylist()
        paths = files.column("path").to_pylist()
        sizes = files.column("size").to_pylist()
        own = [d.own_store(p) for p in paths]
        local = [os.path.abspath(d.local_path(p)) if ok else "" for p, ok in zip(paths, own)]
        candidates = [i for i in range(files.num_rows) if no_dv[i] and own[i] and native.safe_path(local[i])]
        if not candidates or len(candidates) > native.MAX_NATIVE_FILES:
            return
        unchecked = [i for i in candidates if paths[i] not in d._native_ok]
        if len(unchecked) > 1:  # footers of several files: fetch them in parallel
            with ThreadPoolExecutor(max_workers=min(_SCHEMA_CHECK_WORKERS, len(unchecked))) as pool:
                list(pool.map(lambda i: d.native_file_ok(paths[i], sizes[i]), unchecked))
        rows = [i for i in candidates if d.native_file_ok(paths[i], sizes[i])]
        if not rows:
            return
        fields = d.snapshot.partition_fields
        part_types = {f.name: d.schema.field(f.name).type for f in fields}
        typed: dict[str, pa.Array] = {}
        if fields:
            cols = partition_columns_table(files.column("partition_values"), fields, d.snapshot.column_mapping_mode)
            typed = {n: cols[n].cast(t) for n, t in part_types.items()}
        specs = [(local[i], {n: typed[n][i] for n in part_types}) for i in rows]
        data_schema = pa.schema([d.schema.field(f.name) for f in d._data_fields])
        streams = native.plan_streams(specs, data_schema, part_types, columns, pred, filter, MIN_BATCH_ROWS)
        if streams is not None:
            self.native, self.native_rows = streams, rows

    @property
    def num_files(self) -> int:
        return int(self.files.num_rows)

    def scanner(self, schema: Any = None, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                batch_size: int | None = None, **_: Any) -> DeltaScanner:
        return DeltaScanner(self.dataset, [self], columns, filter, batch_size)

    def __repr__(self) -> str:
        return f"<DeltaFragment {self.num_files} files of {self.dataset!r}>"


class DeltaScanner:
    """Duck-types `pyarrow.dataset.Scanner`: `projected_schema`, `to_batches`, `to_table`, `to_reader`."""

    def __init__(self, dataset: DeltaDataset, fragments: list[DeltaFragment] | None,
                 columns: Sequence[str] | None, filter: pc.Expression | None, batch_size: int | None) -> None:
        self.dataset = dataset
        self._fragments = fragments
        schema = dataset.schema
        self.columns = list(schema.names) if columns is None else [schema.field(c).name for c in columns]
        self.filter = filter
        # DataFusion asks for 8192-row batches; each batch crosses into Python under the GIL, so fewer,
        # larger batches are much cheaper (DataFusion accepts any batch size from a dataset)
        self.batch_size = max(batch_size or 0, MIN_BATCH_ROWS)
        self.projected_schema = pa.schema([schema.field(c) for c in self.columns])

    # ------------------------------------------------------------------ outputs
    def to_batches(self) -> Iterator[pa.RecordBatch]:
        frags = self._fragments if self._fragments is not None else self.dataset.get_fragments(self.filter)
        for frag in frags:
            yield from self._scan_fragment(frag)

    def to_table(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.projected_schema)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def count_rows(self) -> int:
        return sum(b.num_rows for b in self.to_batches())

    def head(self, num_rows: int) -> pa.Table:
        out, n = [], 0
        for b in self.to_batches():
            out.append(b.slice(0, num_rows - n))
            n += out[-1].num_rows
            if n >= num_rows:
                break
        return pa.Table.from_batches(out, schema=self.projected_schema)

    # ------------------------------------------------------------------ scanning one fragment
    def _scan_fragment(self, frag: DeltaFragment) -> Iterator[pa.RecordBatch]:
        d = self.dataset
        files = frag.files
        streams = frag.native.take(self.columns, self.filter) if frag.native is not None else None
        if streams is not None:
            with d._lock:
                d.metrics.files_opened += len(frag.native_rows)
                d.metrics.files_native_path += len(frag.native_rows)
            yield from native.iterate(streams, self.projected_schema)
            done = set(frag.native_rows)
            rest = [i for i in range(files.num_rows) if i not in done]
            if not rest:
                return
            files = files.take(pa.array(rest, pa.int64()))
        has_dv = files.column("deletion_vector").is_valid().to_pylist()
        paths = files.column("path").to_pylist()
        plain_rows = [i for i, dv in enumerate(has_dv) if not dv and d.own_store(paths[i])] if d._plain_table else []
        kernel_rows = sorted(set(range(files.num_rows)) - set(plain_rows))
        if plain_rows:
            pfiles = files.take(plain_rows)
            rejected = yield from self._scan_plain(pfiles)
            kernel_rows = sorted(kernel_rows + [plain_rows[i] for i in rejected])
        if kernel_rows:
            yield from self._scan_kernel(files.take(kernel_rows))

    def _scan_plain(self, files: pa.Table) -> Generator[pa.RecordBatch, None, list[int]]:
        """pyarrow's native scanner over the files whose schema it reads right; returns the row numbers
        of the others (they go to the kernel path)."""
        d = self.dataset
        paths = files.column("path").to_pylist()
        sizes = files.column("size").to_pylist()
        exprs = d.partition_expressions(files)
        frags = [d.make_parquet_fragment(p, s, e) for p, s, e in zip(paths, sizes, exprs)]
        unchecked = [i for i, p in enumerate(paths) if p not in d._file_ok]
        if len(unchecked) > 1:  # footers of a group of small files: fetch them in parallel
            with ThreadPoolExecutor(max_workers=min(_SCHEMA_CHECK_WORKERS, len(unchecked))) as pool:
                list(pool.map(lambda i: d.plain_file_ok(frags[i], paths[i]), unchecked))
        good = [i for i in range(len(paths)) if d.plain_file_ok(frags[i], paths[i])]
        rejected = [i for i in range(len(paths)) if i not in set(good)]
        if good:
            pyds = ds.FileSystemDataset([frags[i] for i in good], schema=d.logical_schema, format=d._format,
                                        filesystem=d._fs)
            with d._lock:
                d.metrics.files_opened += len(good)
            scanner = pyds.scanner(columns=self.columns, filter=d.row_filter(self.filter), batch_size=self.batch_size)
            for batch in scanner.to_batches():
                yield batch if batch.schema == self.projected_schema else _conform(batch, self.projected_schema)
        return rejected

    def _scan_kernel(self, files: pa.Table) -> Iterator[pa.RecordBatch]:
        """The kernel's per-file read (DVs, column mapping, widening, partition values), then the filter."""
        d = self.dataset
        snap = d.snapshot
        pred = d._kernel_predicate(self.filter)
        after: pc.Expression | None = None
        if d.row_tracking:  # the row-id columns are appended by the scan; filter on the result
            scan = Scan(snap, columns=None, batch_size=self.batch_size, row_tracking=True)
            after, project = d.row_filter(self.filter), self.columns
        elif pred is not None:
            scan = Scan(snap, columns=self.columns, predicate=pred, batch_size=self.batch_size)
            project = None
        else:  # filter not translatable: read every column the filter could touch, filter, then project
            scan = Scan(snap, columns=None, row_filter=d.row_filter(self.filter), batch_size=self.batch_size)
            project = self.columns
        cols = ["path", "partition_values", "deletion_vector", "size"]
        if d.row_tracking:
            cols += ["base_row_id", "default_row_commit_version"]
        tasks = files.select(cols).to_pylist()
        for table in read_in_order(scan.read_file, tasks, 4):
            with d._lock:
                d.metrics.files_opened += 1
                d.metrics.files_kernel_path += 1
            if after is not None:
                table = table.filter(after)
            if project is not None:
                table = table.select(project)
            if table.schema != self.projected_schema:
                table = table.cast(self.projected_schema)
            if table.num_rows == 0:
                continue
            yield from table.to_batches(max_chunksize=self.batch_size)


_UNVIEW = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}


def _without_views(e: Expr) -> Expr:
    """The predicate with string_view / binary_view literal types replaced by string / binary."""
    if isinstance(e, Literal) and e.arrow_type in _UNVIEW:
        return Literal(e.value, _UNVIEW[e.arrow_type])
    if isinstance(e, Comparison):
        left, right = _without_views(e.left), _without_views(e.right)
        return Comparison(e.op, left, right)  # type: ignore[arg-type]
    if isinstance(e, In) and e.value_type in _UNVIEW:
        return In(e.column, e.values, e.negated, _UNVIEW[e.value_type])
    if isinstance(e, Not):
        return Not(_without_views(e.child))
    if isinstance(e, (And, Or)):
        return type(e)(*[_without_views(c) for c in e.children])
    return e


def _with_view_types(schema: pa.Schema) -> pa.Schema:
    """Top-level string / binary fields as string_view / binary_view (DataFusion's
    `schema_force_view_types`, also top-level only)."""
    views = {pa.string(): pa.string_view(), pa.binary(): pa.binary_view()}
    return pa.schema([f.with_type(views.get(f.type, f.type)) for f in schema])


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` with `schema`'s types (strings to views); names and order already match."""
    return pa.RecordBatch.from_arrays(
        [a if a.type == f.type else a.cast(f.type) for a, f in zip(batch.columns, schema)], schema=schema)


def _same_values(file_type: pa.DataType, logical: pa.DataType) -> bool:
    """Whether pyarrow's scan-time cast from `file_type` gives exactly the kernel's logical values.

    Only lossless, value-preserving casts are allowed (the kernel's `conform_table` does the same):
    integer and float widening, and Spark's INT96 / naive microsecond timestamps relabelled as UTC.
    Anything else, nested types included, must match exactly or the file takes the kernel path.
    """
    if file_type == logical:
        return True
    if pa.types.is_timestamp(file_type) and pa.types.is_timestamp(logical):
        return file_type.unit == logical.unit == "us" and file_type.tz is None and logical.tz in ("UTC", "+00:00")
    if pa.types.is_signed_integer(file_type) and pa.types.is_signed_integer(logical):
        return bool(file_type.bit_width <= logical.bit_width)
    return bool(pa.types.is_float32(file_type) and pa.types.is_float64(logical))


def predicate_columns(pred: Expr) -> set[str]:
    """Top-level columns a kernel predicate reads (used by tests and EXPLAIN helpers)."""
    return {p[0] for p in referenced_columns(pred)}


__all__ = ["DeltaDataset", "DeltaFragment", "DeltaScanner", "DatasetMetrics", "predicate_columns"]
