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
- A fragment scans its *plain* files (no deletion vector, no column mapping, file schema identical to
  the logical schema) with pyarrow's native Parquet scanner: partition values come from per-fragment
  `partition_expression`s, the filter prunes row groups by Parquet statistics and is applied exactly.
- Everything else (deletion vectors, column mapping, type widening, case-mismatched or differently
  typed file columns) goes through the kernel's `Scan.read_file`: DVs by physical row index, physical ->
  logical names, widened types, partition columns from the log, then the same filter.

The object is only a Dataset as far as DataFusion needs: the C++-backed methods of the base class
(`to_table`, `head`, `join`, ...) are reimplemented on top of `scanner` or refused, never left to run
on the uninitialised native dataset.
"""

from __future__ import annotations

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

from ..kernel.expressions import Expr, from_pyarrow, referenced_columns
from ..kernel.partition_values import partition_columns_table
from ..kernel.paths import resolve_key
from ..kernel.scan import Scan, read_in_order
from ..kernel.schema.arrow import to_arrow_schema
from ..kernel.snapshot import Snapshot

DEFAULT_TARGET_GROUP_BYTES = 256 * 1024 * 1024
_SCHEMA_CHECK_WORKERS = 8
MIN_BATCH_ROWS = 131_072


@dataclass
class DatasetMetrics:
    """What the last planning and the scans so far did (pushdown evidence for tests and EXPLAIN users)."""

    plans: int = 0
    files_total: int = 0  # live files at the pinned version (last plan)
    files_skipped: int = 0  # pruned by partition values / stats before opening (last plan)
    fragments: int = 0  # DataFusion partitions handed out (last plan)
    files_opened: int = 0  # files actually read, cumulative over all scans
    files_kernel_path: int = 0  # of those, read through the kernel (DVs / column mapping / widening)
    last_predicate: str | None = None

    def reset_counts(self) -> None:
        self.files_opened = 0
        self.files_kernel_path = 0


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
    ) -> None:
        self.snapshot = snapshot
        self._schema = to_arrow_schema(snapshot.schema, include_metadata=False)
        self.target_partitions = target_partitions or max(1, os.cpu_count() or 1)
        self.target_group_bytes = target_group_bytes
        self.metrics = DatasetMetrics()
        self._lock = threading.Lock()
        self._fs, self._base = snapshot.storage.arrow_filesystem()
        self._format = ds.ParquetFileFormat(
            read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"),
            default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True),
        )
        self._plain_table = snapshot.column_mapping_mode == "none"
        self._partition_names = {c.lower() for c in snapshot.partition_columns}
        self._data_fields = [f for f in self._schema if f.name.lower() not in self._partition_names]
        # file path -> can pyarrow read it as-is (checked once per file: the snapshot is immutable)
        self._file_ok: dict[str, bool] = {}

    # ------------------------------------------------------------------ what DataFusion calls
    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def scanner(self, schema: Any = None, columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                batch_size: int | None = None, **_: Any) -> DeltaScanner:
        """A scanner over the whole snapshot (DataFusion only reads `projected_schema` from it)."""
        return DeltaScanner(self, None, columns, filter, batch_size)

    def get_fragments(self, filter: pc.Expression | None = None) -> list[DeltaFragment]:
        """Files that may match `filter`, grouped into fragments (= DataFusion partitions)."""
        files = self.snapshot.files
        total = files.num_rows
        pred = self._kernel_predicate(filter)
        if pred is not None and total:
            from ..kernel.skipping import file_skipping_mask

            files = files.filter(file_skipping_mask(self.snapshot, files, pred))
        groups = self._group(files)
        with self._lock:
            m = self.metrics
            m.plans += 1
            m.files_total, m.files_skipped, m.fragments = total, total - files.num_rows, len(groups)
            m.last_predicate = None if filter is None else str(filter)
        return [DeltaFragment(self, g) for g in groups]

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
    def _kernel_predicate(self, filter: pc.Expression | None) -> Expr | None:
        if filter is None:
            return None
        return from_pyarrow(filter, self.snapshot.schema)

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
        full = f"{self._base}/{resolve_key(self.snapshot.storage.root_uri, path)}"
        return self._format.make_fragment(full, filesystem=self._fs, partition_expression=partition_expression,
                                          file_size=size)

    def partition_expressions(self, files: pa.Table) -> list[pc.Expression]:
        """`col == value` / `is_null(col)` guarantees per file, from the typed partition values."""
        fields = self.snapshot.partition_fields
        if not fields:
            return [pc.scalar(True)] * files.num_rows
        typed = partition_columns_table(files.column("partition_values"), fields, self.snapshot.column_mapping_mode)
        columns = {f.name: typed[f.name].to_pylist() for f in fields}
        types = {f.name: self._schema.field(f.name).type for f in fields}
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
        has_dv = files.column("deletion_vector").is_valid().to_pylist()
        plain_rows = [i for i, dv in enumerate(has_dv) if not dv] if d._plain_table else []
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
            native = ds.FileSystemDataset([frags[i] for i in good], schema=d.schema, format=d._format,
                                          filesystem=d._fs)
            with d._lock:
                d.metrics.files_opened += len(good)
            scanner = native.scanner(columns=self.columns, filter=self.filter, batch_size=self.batch_size)
            yield from scanner.to_batches()
        return rejected

    def _scan_kernel(self, files: pa.Table) -> Iterator[pa.RecordBatch]:
        """The kernel's per-file read (DVs, column mapping, widening, partition values), then the filter."""
        d = self.dataset
        snap = d.snapshot
        pred = d._kernel_predicate(self.filter)
        if pred is not None:
            scan = Scan(snap, columns=self.columns, predicate=pred, batch_size=self.batch_size)
            project = None
        else:  # filter not translatable: read every column the filter could touch, filter, then project
            scan = Scan(snap, columns=None, row_filter=self.filter, batch_size=self.batch_size)
            project = self.columns
        tasks = files.select(["path", "partition_values", "deletion_vector", "size"]).to_pylist()
        for table in read_in_order(scan.read_file, tasks, 4):
            with d._lock:
                d.metrics.files_opened += 1
                d.metrics.files_kernel_path += 1
            if project is not None:
                table = table.select(project)
            if table.schema != self.projected_schema:
                table = table.cast(self.projected_schema)
            if table.num_rows == 0:
                continue
            yield from table.to_batches(max_chunksize=self.batch_size)


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
