"""What `deltalake.table` exposes besides `DeltaTable`: protocol/metadata/config records, module constants,
`TableFeatures`, and the table introspection helpers `DeltaTable` delegates to (partitions, deletion vectors,
add actions restricted to indexed columns, pyarrow dataset fragments with min/max guarantees).

Kept out of `table.py` so that file stays the thin API surface; every helper takes the snapshot it reads.
"""

from __future__ import annotations

import datetime as dt
import os
import warnings
from enum import Enum
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from .kernel.log.actions import Metadata as KernelMetadata
from .kernel.log.actions import Protocol
from .kernel.schema.types import PrimitiveType, StructType

# ----------------------------------------------------------------------------- deltalake.table constants
# The protocol levels deltalake's *pyarrow dataset* path accepts (same values as deltalake 1.6.6, which
# documents them as the limits of `to_pyarrow_dataset`); deltakernel's own reader supports more, see
# `deltakernel.kernel.protocol.features`.
MAX_SUPPORTED_PYARROW_WRITER_VERSION = 7
NOT_SUPPORTED_PYARROW_WRITER_VERSIONS = [3, 4, 5, 6]
SUPPORTED_WRITER_FEATURES = {"appendOnly", "invariants", "timestampNtz", "variantType", "variantType-preview"}
MAX_SUPPORTED_READER_VERSION = 3
NOT_SUPPORTED_READER_VERSION = -1
SUPPORTED_READER_FEATURES = {"timestampNtz", "variantType", "variantType-preview"}
FSCK_METRICS_FILES_REMOVED_LABEL = "files_removed"

#: deltalake's default `log_buffer_size` (4 x CPUs), reported by `table_config`
DEFAULT_LOG_BUFFER_SIZE = 4 * (os.cpu_count() or 1)
#: string statistics longer than this may be truncated prefixes (Delta writers keep 32 characters)
_STRING_PREFIX = 32


class TableFeatures(Enum):
    """Table features as deltalake's `TableFeatures` names them (`dt.alter.add_feature(TableFeatures.X)`)."""

    ColumnMapping = "ColumnMapping"
    DeletionVectors = "DeletionVectors"
    TimestampWithoutTimezone = "TimestampWithoutTimezone"
    V2Checkpoint = "V2Checkpoint"
    AppendOnly = "AppendOnly"
    Invariants = "Invariants"
    CheckConstraints = "CheckConstraints"
    ChangeDataFeed = "ChangeDataFeed"
    GeneratedColumns = "GeneratedColumns"
    IdentityColumns = "IdentityColumns"
    RowTracking = "RowTracking"
    DomainMetadata = "DomainMetadata"
    IcebergCompatV1 = "IcebergCompatV1"
    VariantType = "VariantType"
    VariantTypePreview = "VariantTypePreview"
    TimestampNanos = "TimestampNanos"


class ProtocolVersions(NamedTuple):
    """deltalake's protocol record: feature lists (sorted) or None below reader 3 / writer 7."""

    min_reader_version: int
    min_writer_version: int
    writer_features: list[str] | None
    reader_features: list[str] | None

    @classmethod
    def of(cls, p: Protocol) -> ProtocolVersions:
        return cls(p.min_reader_version, p.min_writer_version,
                   sorted(p.writer_features) if p.writer_features is not None else None,
                   sorted(p.reader_features) if p.reader_features is not None else None)

    def has_feature(self, name: str) -> bool:
        return name in (self.reader_features or ()) or name in (self.writer_features or ())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Protocol):
            return tuple(self) == tuple(ProtocolVersions.of(other))
        return tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other


class DeltaTableConfig(NamedTuple):
    """deltalake's (deprecated) load options record; deltakernel, like deltalake 1.6.6, reports defaults."""

    without_files: bool
    log_buffer_size: int
    skip_stats: bool = False


def table_config() -> DeltaTableConfig:
    warnings.warn("The 'table_config' property is deprecated (as in deltalake); it reports effective defaults",
                  DeprecationWarning, stacklevel=3)
    return DeltaTableConfig(False, DEFAULT_LOG_BUFFER_SIZE, False)


class Metadata:
    """deltalake's `Metadata`: id, name, description, partition_columns (a list), created_time,
    configuration; other attributes of the kernel's metaData action (`schema_string`, `schema`, `format`,
    `to_json()`) stay reachable."""

    def __init__(self, md: KernelMetadata) -> None:
        self._md = md

    @property
    def id(self) -> str:
        return self._md.id

    @property
    def name(self) -> str | None:
        return self._md.name

    @property
    def description(self) -> str | None:
        return self._md.description

    @property
    def partition_columns(self) -> list[str]:
        return list(self._md.partition_columns)

    @property
    def created_time(self) -> int | None:
        return self._md.created_time

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self._md.configuration)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._md, name)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Metadata):
            return self._md == other._md
        if isinstance(other, KernelMetadata):
            return self._md == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        return (f"Metadata(id: {self.id}, name: {self.name}, description: {self.description}, "
                f"partition_columns: {self.partition_columns}, created_time: {self.created_time}, "
                f"configuration: {self.configuration})")

    __repr__ = __str__


# ----------------------------------------------------------------------------- partitions
def partitions(snapshot: Any, files: pa.Table) -> list[dict[str, str | None]]:
    """The distinct partitions of `files` as deltalake gives them: logical name -> serialized value."""
    if not snapshot.partition_columns or files.num_rows == 0:
        return []
    from .kernel.schema.column_mapping import physical_name

    raw = files.column("partition_values").combine_chunks()
    cols: dict[str, pa.Array] = {}
    names = {raw.type.field(i).name: i for i in range(raw.type.num_fields)}
    for f in snapshot.partition_fields:
        idx = names.get(physical_name(f, snapshot.column_mapping_mode))
        arr = raw.field(idx) if idx is not None else pa.nulls(len(raw), pa.string())
        cols[f.name] = pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.string()), arr)
    distinct = pa.table(cols).group_by(list(cols), use_threads=False).aggregate([])
    rows: list[dict[str, str | None]] = distinct.select(list(cols)).to_pylist()
    return rows


def transaction_version(snapshot: Any, app_id: str) -> int | None:
    txn = snapshot.txns.get(app_id)
    return None if txn is None else int(txn.version)


# ----------------------------------------------------------------------------- deletion vectors
def deletion_vectors(snapshot: Any) -> pa.RecordBatchReader:
    """deltalake's `deletion_vectors()`: (filepath URI, selection_vector keep-mask) of files that have a DV.

    The mask has one entry per row of the file (`numRecords`; the last deleted row + 1 without stats).
    One batch per file, so memory holds one file's mask at a time.
    """
    import numpy as np

    from .kernel.deletion_vectors import DeletionVectorDescriptor, read_deletion_vector
    from .kernel.paths import file_uri
    from .kernel.stats.parse import parse_stats

    schema = pa.schema([pa.field("filepath", pa.large_string(), nullable=False),
                        pa.field("selection_vector", pa.list_(pa.field("item", pa.bool_(), nullable=False)),
                                 nullable=False)])
    files: pa.Table = snapshot.files
    with_dv = files.filter(pc.is_valid(files.column("deletion_vector")))
    storage = snapshot.storage
    counts = parse_stats(with_dv.column("stats"), StructType(()), snapshot.column_mapping_mode).num_records

    def batches() -> Any:
        for path, dv, n in zip(with_dv.column("path").to_pylist(), with_dv.column("deletion_vector").to_pylist(),
                               counts.to_pylist()):
            rows = read_deletion_vector(storage, DeletionVectorDescriptor.from_dict(dv))
            size = int(n) if n is not None else (int(rows[-1]) + 1 if rows.size else 0)
            keep = np.ones(size, dtype=bool)
            keep[rows[rows < size].astype(np.int64)] = False
            uri = file_uri(storage, path)
            if "://" not in uri:
                uri = "file://" + os.path.abspath(uri)
            mask = pa.ListArray.from_arrays(pa.array([0, size], pa.int32()), pa.array(keep),
                                            type=schema.field("selection_vector").type)
            yield pa.record_batch([pa.array([uri], pa.large_string()), mask], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


# ----------------------------------------------------------------------------- add actions
def _keep_path(path: tuple[str, ...], indexed: StructType) -> bool:
    t: Any = indexed
    for part in path:
        if not isinstance(t, StructType) or not t.has(part):
            return False
        t = t.field(part).type
    return True


def restrict_add_actions(snapshot: Any, table: pa.Table, flatten: bool) -> pa.Table:
    """deltalake's `get_add_actions` columns: no `data_change`, and stats columns only for the columns
    that have statistics under `delta.dataSkippingStatsColumns` / `delta.dataSkippingNumIndexedCols`."""
    from .kernel.stats.collect import stats_schema

    indexed = stats_schema(snapshot.schema, snapshot.configuration, snapshot.partition_columns)
    stat_groups = ("null_count", "min", "max")
    if "data_change" in table.column_names:
        table = table.drop_columns(["data_change"])
    if flatten:
        drop = [c for c in table.column_names
                if c.split(".", 1)[0] in stat_groups and "." in c
                and not _keep_path(_split_flat(c, snapshot.schema), indexed)]
        return _with_bound_columns(table.drop_columns(drop), indexed)
    for group in stat_groups:
        if group in table.column_names:
            col = table.column(group).combine_chunks()
            pruned = _prune_struct(col, indexed)
            table = table.set_column(table.column_names.index(group), group, pruned)
    return table


def _with_bound_columns(table: pa.Table, indexed: StructType) -> pa.Table:
    """deltalake lists `min.x` / `max.x` for every indexed leaf that has bounds, null when no file has
    statistics; the kernel's table omits columns no file has. Order: null_count.*, min.*, max.*, then the rest."""
    from .kernel.schema.arrow import to_arrow_type
    from .kernel.stats.collect import stat_kind, stat_leaves

    cols = {name: table.column(name) for name in table.column_names}
    for path, _, dtype in stat_leaves(indexed, "none"):
        if stat_kind(dtype) is None and dtype != PrimitiveType("boolean"):  # deltalake lists booleans too
            continue
        for group in ("min", "max"):
            name = ".".join((group, *path))
            if name not in cols:
                cols[name] = pa.nulls(table.num_rows, to_arrow_type(dtype))
    groups = {"null_count": 1, "min": 2, "max": 3}
    order = sorted(cols, key=lambda c: groups.get(c.split(".", 1)[0], 0 if not c.startswith("partition.") else 4)
                   if "." in c else 0)
    return pa.table({c: cols[c] for c in order})


def _split_flat(name: str, schema: StructType) -> tuple[str, ...]:
    """`min.a.b` -> ('a', 'b'), resolving dotted column names against the schema where they exist."""
    rest = name.split(".", 1)[1]
    out: list[str] = []
    t: Any = schema
    while rest:
        match = None
        if isinstance(t, StructType):
            for f in t.fields:  # longest field name first: a column may itself contain dots
                if (rest == f.name or rest.startswith(f.name + ".")) and (match is None or len(f.name) > len(match)):
                    match = f.name
        if match is None:
            return (*out, *rest.split("."))
        out.append(match)
        t = t.field(match).type
        rest = rest[len(match) + 1:]
    return tuple(out)


def _prune_struct(arr: pa.Array, indexed: Any) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        return arr
    names, children = [], []
    for i in range(arr.type.num_fields):
        name = arr.type.field(i).name
        if isinstance(indexed, StructType) and indexed.has(name):
            names.append(name)
            children.append(_prune_struct(arr.field(i), indexed.field(name).type))
    if not names:
        return pa.StructArray.from_arrays([], fields=[], mask=None) if len(arr) == 0 else \
            pa.array([{}] * len(arr), pa.struct([]))
    return pa.StructArray.from_arrays(children, names=names)


# ----------------------------------------------------------------------------- dataset guarantees
def _bound_ok(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_date(t)
            or pa.types.is_timestamp(t) or pa.types.is_string(t) or pa.types.is_large_string(t))


def fragment_expressions(snapshot: Any, files: pa.Table, schema: pa.Schema) -> list[pc.Expression]:
    """Per file: partition values AND what its stats guarantee (null counts, min/max), as deltalake's
    `dataset_partitions`, so pyarrow (and DuckDB through it) skip fragments a filter cannot match.

    Bounds that may be inexact are left out: timestamp max is truncated to milliseconds (compared as
    max + 999 us), and string max values of 32+ characters may be truncated prefixes (no upper bound).
    """
    from .kernel.scan.partition_values import partition_columns_table
    from .kernel.stats.parse import parse_stats

    n = files.num_rows
    exprs: list[Any] = [None] * n
    if snapshot.partition_columns:
        typed = partition_columns_table(files.column("partition_values"), snapshot.partition_fields,
                                        snapshot.column_mapping_mode, paths=files.column("path"))
        for name, arr in typed.items():
            values = arr.to_pylist()
            typ = schema.field(name).type if name in schema.names else arr.type
            exprs = [_and(e, pc.field(name).is_null() if v is None else pc.field(name) == pc.scalar(pa.scalar(v, typ)))
                     for e, v in zip(exprs, values)]
    parts = {p.lower() for p in snapshot.partition_columns}
    top = [f for f in snapshot.schema.fields if f.name.lower() not in parts and f.name in schema.names]
    if not top or "stats" not in files.column_names:
        return [pc.scalar(True) if e is None else e for e in exprs]
    data_schema = StructType(tuple(top))
    stats = parse_stats(files.column("stats"), data_schema, snapshot.column_mapping_mode,
                        columns={(f.name,) for f in top})
    if "stats_parsed" in files.column_names:
        from .kernel.stats.parse import stats_from_struct

        stats = stats.coalesce(stats_from_struct(files.column("stats_parsed"), data_schema,
                                                 snapshot.column_mapping_mode))
    records = stats.num_records.to_pylist()
    for f in top:
        typ = schema.field(f.name).type
        nulls = stats.null_count.get((f.name,))
        mins, maxs = stats.min_values.get((f.name,)), stats.max_values.get((f.name,))
        nl = nulls.to_pylist() if nulls is not None else [None] * n
        bounded = _bound_ok(typ) and mins is not None and maxs is not None
        mn = mins.to_pylist() if bounded and mins is not None else [None] * n
        mx = maxs.to_pylist() if bounded and maxs is not None else [None] * n
        col = pc.field(f.name)
        for i in range(n):
            nc, rc = nl[i], records[i]
            if nc is not None and rc is not None and nc == rc:
                exprs[i] = _and(exprs[i], col.is_null())
                continue
            parts_i = []
            lo, hi = mn[i], mx[i]
            if lo is not None:
                parts_i.append(col >= pc.scalar(pa.scalar(lo, typ)))
            if hi is not None:
                hi = _upper(hi, typ)
                if hi is not None:
                    parts_i.append(col <= pc.scalar(pa.scalar(hi, typ)))
            if nc == 0:
                exprs[i] = _and(exprs[i], col.is_valid())
            for p in parts_i:
                exprs[i] = _and(exprs[i], p if nc == 0 else (p | col.is_null()))
    return [pc.scalar(True) if e is None else e for e in exprs]


def _and(a: pc.Expression | None, b: pc.Expression) -> pc.Expression:
    return b if a is None else a & b


def _upper(value: Any, typ: pa.DataType) -> Any:
    if pa.types.is_timestamp(typ) and isinstance(value, dt.datetime):
        return value + dt.timedelta(microseconds=999)
    if (pa.types.is_string(typ) or pa.types.is_large_string(typ)) and len(value) >= _STRING_PREFIX:
        return None
    if pa.types.is_floating(typ) and value != value:  # NaN bound: no guarantee
        return None
    return value


__all__ = [
    "DeltaTableConfig", "FSCK_METRICS_FILES_REMOVED_LABEL", "MAX_SUPPORTED_PYARROW_WRITER_VERSION",
    "MAX_SUPPORTED_READER_VERSION", "Metadata", "NOT_SUPPORTED_PYARROW_WRITER_VERSIONS",
    "NOT_SUPPORTED_READER_VERSION", "ProtocolVersions", "SUPPORTED_READER_FEATURES", "SUPPORTED_WRITER_FEATURES",
    "TableFeatures",
]
