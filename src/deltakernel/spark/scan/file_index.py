"""The Delta file index: Spark asks it for the files of a scan, with the query's pushed filters.

Spark's file scans (`HadoopFsRelation`) list their files through a `FileIndex` while planning the physical
scan, handing it the filters its optimizer pushed down to that scan: from SQL, views, joins (including
constant filters inferred across a join), CTEs, subqueries and DataFrame chains alike. delta-spark plugs its
`TahoeFileIndex` in there; deltakernel does the same without JVM code: `DeltaFileIndex` is a Python object
implementing the `FileIndex` interface through py4j's callback server. `listFiles` translates the filters
(`catalyst.py`), prunes the snapshot's files with the kernel's partition pruning and min/max/nullCount
skipping, and returns Spark's listing built in one call from the log's metadata alone (`jvm_files.py`: path,
size and modification time from the add actions, typed partition values) - no file is listed, opened or
checked for existence while planning.

Partition filters: Spark does not re-apply them after listing, so a partition filter the kernel cannot
express exactly is evaluated by Spark's own interpreter (`InterpretedPredicate`) on each candidate partition's
values. Data filters are re-applied by Spark, so any sound pruning will do.

Each index keeps its last listings (files kept of the total); `rootPaths` shows the latest in the scan's
`Location` (explain, Spark UI) and `report.py` reads them per scan of an executed plan.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.expressions.predicate import And, Expr
from ...kernel.scan.partition_values import partition_columns_table
from ...kernel.scan.skipping import file_skipping_mask
from ...kernel.schema.types import DataType
from ...kernel.snapshot import Snapshot
from . import catalyst, jvm_files
from .callbacks import note_callback
from .jvm_refs import as_scala_list, jclass, static
from .paths import file_uri, file_uris

_log = logging.getLogger("deltakernel.spark")
_ids = itertools.count(1)
INDEXES: weakref.WeakValueDictionary[int, DeltaFileIndex] = weakref.WeakValueDictionary()
NAME = "DeltaFileIndex"
STATS_SKIPPING_CONF = "spark.databricks.delta.stats.skipping"


@dataclass(frozen=True)
class Listing:
    """One `listFiles` call: what the kernel kept."""

    files_total: int
    files_kept: int
    partition_filters: int
    data_filters: int
    seconds: float


class DeltaFileIndex:
    """`org.apache.spark.sql.execution.datasources.FileIndex` over one snapshot's files (see module docstring).

    `files` is the file table rows this index serves (the snapshot's, or a subset); `resolve` maps the scan's
    attribute names (physical under column mapping) to logical columns; `partition_schema` is the JVM
    `StructType` of the partition columns, in `snapshot.partition_fields` order (`partitioned=False`: the scan
    has no partition columns; DML scans join partition values in themselves).
    """

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.execution.datasources.FileIndex"]

    def __init__(self, spark: Any, snapshot: Snapshot, files: pa.Table, resolve: catalyst.Resolver,
                 partition_schema: Any, *, partitioned: bool = True, time_travel: bool = False,
                 on_listing: Callable[[Listing], None] | None = None) -> None:
        self._spark = spark
        self._jvm = spark._jvm
        self.snapshot = snapshot
        self.files = files
        self._resolve = resolve
        self._partition_schema = partition_schema
        self._partitioned = partitioned and bool(snapshot.partition_fields)  # else: no partition columns in scans
        self._time_travel = time_travel
        self._on_listing = on_listing
        self._lock = threading.Lock()
        self._uris: pa.Array | None = None
        self._partition_arrays: list[pa.Array] | None = None
        self.listings: list[Listing] = []
        self._root_paths: tuple[str, Any] | None = None  # (the kept-files text shown, JVM Seq[Path])
        self._conf: Any = None  # the session's JVM RuntimeConfig (`_stats_skipping`)
        self._size: int | None = None  # `sizeInBytes`
        self._no_time: Any = None  # `metadataOpsTimeNs`
        self.id = next(_ids)
        INDEXES[self.id] = self

    # ------------------------------------------------------------------ per-file columns, computed once
    def uris(self) -> pa.Array:
        if self._uris is None:
            self._uris = self._per_snapshot("_dk_file_uris", lambda: file_uris(self.snapshot.storage,
                                                                               self.files.column("path")))
        return self._uris

    def _partitions(self) -> list[pa.Array]:
        if self._partition_arrays is None:
            fields = self.snapshot.partition_fields
            if not self._partitioned:
                self._partition_arrays = []
            else:
                def typed_values() -> list[pa.Array]:
                    typed = partition_columns_table(self.files.column("partition_values"), fields,
                                                    self.snapshot.column_mapping_mode, paths=self.files.column("path"))
                    return [_plain(typed[f.name]) for f in fields]

                self._partition_arrays = self._per_snapshot("_dk_partition_arrays", typed_values)
        return self._partition_arrays

    def _per_snapshot(self, attr: str, compute: Callable[[], Any]) -> Any:
        """`compute()` once per snapshot when this index serves all the snapshot's files (the session keeps its
        latest snapshot across queries, `read_snapshot.py`: each `load()` builds a new index over it); kept on the
        snapshot, so it lives exactly as long."""
        if self.files is not self.snapshot.files:
            return compute()
        found = self.snapshot.__dict__.get(attr)
        if found is None:
            found = self.snapshot.__dict__.setdefault(attr, compute())
        return found

    @property
    def label(self) -> str:
        return f"{self.snapshot.storage.root_uri} v{self.snapshot.version}"

    # ------------------------------------------------------------------ FileIndex
    def listFiles(self, partitionFilters: Any, dataFilters: Any) -> Any:
        start = time.perf_counter()
        note_callback(self._jvm)  # a JVM pool thread's connection is closed once that thread ends
        # the filters are read in bulk (`catalyst.translate_all`): a few round trips per scan, not a few per filter
        n_part = int(partitionFilters.size())
        preds: list[Expr] = []
        inexact_partition: list[Any] = []
        if n_part:
            part = catalyst.translate_all(self._jvm, partitionFilters, self._resolve)
            for i, (pred, exact) in enumerate(part.translated):
                if pred is not None:
                    preds.append(pred)
                if not exact:
                    inexact_partition.append(part.expression(i))
        if self._stats_skipping():
            data = catalyst.translate_all(self._jvm, dataFilters, self._resolve)
            preds += [pred for pred, _exact in data.translated if pred is not None]
            n_data = len(data.translated)
        else:
            n_data = int(dataFilters.size())
        n = self.files.num_rows
        if preds and n:
            keep = file_skipping_mask(self.snapshot, self.files, preds[0] if len(preds) == 1 else And(*preds))
        else:
            keep = pa.array(np.ones(n, dtype=np.bool_))
        kept = self.files.filter(keep)
        document = jvm_files.listing_xml(
            self.uris().filter(keep), kept.column("size").combine_chunks().fill_null(0),
            kept.column("modification_time").combine_chunks().fill_null(0),
            [a.filter(keep) for a in self._partitions()])
        listing = jvm_files.partition_directories(self._spark, document)
        kept_files = kept.num_rows
        if inexact_partition:
            listing, kept_files = self._filter_partitions(listing, inexact_partition)
        record = Listing(n, kept_files, n_part, n_data, time.perf_counter() - start)
        with self._lock:
            self.listings = [*self.listings[-15:], record]
        _log.info("deltakernel: scan of %s keeps %d of %d files (%d partition + %d data filters, %.3f s)",
                  self.label, record.files_kept, n, record.partition_filters, record.data_filters, record.seconds)
        if self._on_listing is not None:
            self._on_listing(record)
        return listing

    def _stats_skipping(self) -> bool:
        """delta-spark's switch for statistics-based skipping (partition pruning always applies); read at every
        listing (one round trip: the session's `RuntimeConfig` is the same object for its lifetime)."""
        try:
            conf = self._conf
            if conf is None:
                conf = self._conf = self._spark._jsparkSession.conf()
            value = conf.get(STATS_SKIPPING_CONF, "true")
        except Exception:
            return True
        return str(value).strip().lower() != "false"

    def inputFiles(self) -> Any:
        return jvm_files.decode(self._spark, jvm_files.strings_xml(self.uris()))

    def refresh(self) -> None:
        """Nothing to refresh: the index serves one snapshot (a new read plans the next version)."""

    def sizeInBytes(self) -> int:
        """The files' total size (Spark's plan statistics ask for it many times per query: computed once)."""
        if self._size is None:
            self._size = int(pc.sum(self.files.column("size")).as_py() or 0) if self.files.num_rows else 0
        return self._size

    def partitionSchema(self) -> Any:
        return self._partition_schema

    def rootPaths(self) -> Any:
        """The table root, its URI fragment naming the version and the latest listing's kept files. Spark asks for
        it whenever it describes the scan (the SQL UI event of every (re)planned stage: ~9 calls per query), so
        the JVM list is built once per distinct text shown."""
        last = self.listings[-1] if self.listings else None
        kept = f"kept {last.files_kept} of {last.files_total} files" if last else f"{self.files.num_rows} files"
        cached = self._root_paths
        if cached is not None and cached[0] == kept:
            return cached[1]  # the same text: the same list (a query re-run over this index lists the same files)
        jvm = self._jvm
        uri_class = jclass(jvm, "java.net.URI")
        root = uri_class(file_uri(self.snapshot.storage, ""))
        uri = uri_class(root.getScheme(), root.getSchemeSpecificPart(), f"delta v{self.snapshot.version}, {kept}")
        paths = jclass(jvm, "java.util.ArrayList")()
        paths.add(jclass(jvm, "org.apache.hadoop.fs.Path")(uri))
        out = as_scala_list(jvm, paths)
        self._root_paths = (kept, out)
        return out

    def isTimeTravel(self) -> bool:
        return self._time_travel

    def metadataOpsTimeNs(self) -> Any:
        if self._no_time is None:  # Scala's `None` singleton: fetched once, then no round trip in the callback
            self._no_time = static(self._jvm, "scala.Option", "empty")()
        return self._no_time

    def toString(self) -> str:
        return f"{NAME}#{self.id}({self.label})"

    def hashCode(self) -> int:
        return self.id

    def equals(self, other: Any) -> bool:
        if other is self:
            return True
        if isinstance(other, DeltaFileIndex):
            return other.id == self.id
        try:
            return str(other.toString()) == self.toString()
        except Exception:
            return False

    # ------------------------------------------------------------------ inexact partition filters
    def _filter_partitions(self, listing: Any, exprs: list[Any]) -> tuple[Any, int]:
        """Keep the directories whose partition values satisfy every expression, evaluated by Spark."""
        jvm = self._jvm
        pkg = "org.apache.spark.sql.catalyst.expressions."  # classes resolved once per gateway (`jvm_refs`)
        attrs = _seq(static(jvm, "org.apache.spark.sql.catalyst.types.DataTypeUtils", "toAttributes")(
            self._partition_schema))
        names = [str(a.name()).lower() for a in attrs]
        predicates = []
        for e in exprs:
            bound_attrs = list(attrs)
            for ref in _seq(e.references().toSeq()):
                name = str(ref.name()).lower()
                if name in names:
                    bound_attrs[names.index(name)] = ref
            java_list = jclass(jvm, "java.util.ArrayList")()
            for a in bound_attrs:
                java_list.add(a)
            seq = as_scala_list(jvm, java_list)
            attr_seq = jclass(jvm, pkg + "package$AttributeSeq")(seq)
            bound = static(jvm, pkg + "BindReferences", "bindReference")(e, attr_seq, False)
            predicates.append(static(jvm, pkg + "Predicate", "createInterpreted")(bound))
        kept = jclass(jvm, "java.util.ArrayList")()
        files = 0
        for directory in _seq(listing):
            values = directory.values()
            if all(p.eval(values) for p in predicates):
                kept.add(directory)
                files += int(directory.files().size())
        return as_scala_list(jvm, kept), files


def _seq(scala_seq: Any) -> list[Any]:
    n = int(scala_seq.size())
    return [scala_seq.apply(i) for i in range(n)]


def _plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def find(location: Any) -> DeltaFileIndex | None:
    """Our index behind a JVM `FileIndex` (a py4j proxy comes back as a JavaObject)."""
    try:
        text = str(location.toString())
    except Exception:
        return None
    if not text.startswith(NAME + "#"):
        return None
    try:
        return INDEXES.get(int(text[len(NAME) + 1:].split("(", 1)[0]))
    except ValueError:
        return None


def resolver_for(snapshot: Snapshot, data_names: dict[str, str]) -> catalyst.Resolver:
    """Scan attribute names -> logical columns: data columns by their physical name in the scan (`data_names`:
    physical -> logical top-level name), partition columns by logical name; nested fields by physical name."""
    from ...kernel.schema.column_mapping import physical_name
    from ...kernel.schema.types import StructType

    schema = snapshot.schema
    mode = snapshot.column_mapping_mode
    lowered = {k.lower(): v for k, v in data_names.items()}
    parts = {f.name.lower(): f.name for f in snapshot.partition_fields}

    def resolve(name: str, nested: tuple[str, ...]) -> tuple[tuple[str, ...], DataType] | None:
        top = lowered.get(name.lower()) or parts.get(name.lower())
        if top is None or not schema.has(top):
            return None
        f = schema.field(top)
        path = [f.name]
        dtype: DataType = f.type
        for part in nested:
            if not isinstance(dtype, StructType):
                return None
            match = next((c for c in dtype.fields if physical_name(c, mode).lower() == part.lower()), None)
            if match is None:
                return None
            path.append(match.name)
            dtype = match.type
        return tuple(path), dtype

    return resolve


__all__ = ["INDEXES", "DeltaFileIndex", "Listing", "find", "resolver_for"]
