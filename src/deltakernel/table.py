"""`DeltaTable`: the public read API, with the `deltalake` package's names and keywords."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .errors import (
    DeltaError,
    InvalidArgumentTypeError,
    InvalidArgumentValueError,
    InvalidFilterError,
    TableNotFoundError,
    UnsupportedFeatureError,
)
from .kernel.log.replay import commit_infos_for
from .kernel.log.segment import LOG_DIR, list_commits
from .kernel.log.time_travel import commit_timestamps
from .kernel.paths import file_uri_list, resolve_file
from .kernel.scan.scan import Scan
from .kernel.schema.types import StructType
from .kernel.snapshot import Snapshot
from .schema import Schema
from .storage import Storage, storage_for_uri
from .table_info import (  # noqa: F401  (deltalake.table's module-level names)
    FSCK_METRICS_FILES_REMOVED_LABEL,
    MAX_SUPPORTED_PYARROW_WRITER_VERSION,
    MAX_SUPPORTED_READER_VERSION,
    NOT_SUPPORTED_PYARROW_WRITER_VERSIONS,
    NOT_SUPPORTED_READER_VERSION,
    SUPPORTED_READER_FEATURES,
    SUPPORTED_WRITER_FEATURES,
    DeltaTableConfig,
    Metadata,
    ProtocolVersions,
    TableFeatures,
)
from .table_operations import TableOperations

if TYPE_CHECKING:  # the classes the public methods return; imported where they are built (heavy modules)
    import pandas as pd
    import pyarrow.dataset as ds

    from .datafusion.dataset import DeltaDataset

FilterLike = Any  # list[tuple] | list[list[tuple]] | pyarrow.compute.Expression | kernel expression


class DeltaTable(TableOperations):
    """A Delta table at one version. Mirrors `deltalake.DeltaTable` for reads."""

    def __init__(
        self,
        table_uri: str,
        version: int | None = None,
        storage_options: dict[str, str] | None = None,
        without_files: bool = False,
        log_buffer_size: int | None = None,
    ) -> None:
        self._table_uri = table_uri
        self._storage_options = storage_options
        self._storage: Storage = storage_for_uri(table_uri, storage_options)
        self._snapshot = Snapshot.load(self._storage, version)

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(
        cls,
        table_uri: str,
        schema: Any,
        mode: str = "error",
        partition_by: list[str] | str | None = None,
        name: str | None = None,
        description: str | None = None,
        configuration: dict[str, str | None] | None = None,
        storage_options: dict[str, str] | None = None,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
        raise_if_key_not_exists: bool = True,
        cluster_by: list[str] | None = None,
    ) -> DeltaTable:
        """Create an empty table with `schema` (a pyarrow Schema or a Delta StructType).

        Commit options after `storage_options` by position are deprecated (DeprecationWarning), as deltalake.
        `raise_if_key_not_exists`: unknown `delta.*` configuration keys raise (other keys are user properties).
        `cluster_by` (ours; deltalake has none): a clustered table (writer feature `clustering`, its columns
        in the `delta.clustering` domain); `optimize.compact()` then clusters it by those columns."""
        from .operations.commit_options import positional_commit_args
        from .operations.write.api import create_table
        from .schema import to_kernel_schema

        if args:  # deltalake's legacy positionals: commit_properties, post_commithook_properties, raise_if_key_...
            commit_properties, post_commithook_properties = positional_commit_args(
                "create", args[:2], commit_properties, post_commithook_properties, stacklevel=3)
            if len(args) > 3:
                raise TypeError("create() got unexpected positional arguments")
            if len(args) == 3:
                raise_if_key_not_exists = bool(args[2])
        if raise_if_key_not_exists and configuration:
            from .operations.alter.table_properties import check_known_keys

            check_known_keys(configuration)

        if not isinstance(schema, (pa.Schema, StructType)):  # deltalake's Schema, or any Arrow-exportable schema
            schema = to_kernel_schema(schema) or pa.schema(schema)
        create_table(table_uri, schema, mode=mode, partition_by=partition_by, name=name, description=description,
                     configuration=configuration, storage_options=storage_options,
                     commit_properties=commit_properties, cluster_by=cluster_by,
                     post_commithook_properties=post_commithook_properties)
        return cls(table_uri, storage_options=storage_options)

    @staticmethod
    def is_deltatable(table_uri: str, storage_options: dict[str, str] | None = None) -> bool:
        try:
            storage = storage_for_uri(table_uri, storage_options)
            return any(True for _ in storage.list_from(f"{LOG_DIR}/0"))
        except DeltaError:
            return False

    @property
    def table_uri(self) -> str:
        return self._storage.root_uri

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def version(self) -> int:
        return self._snapshot.version

    def update_incremental(self) -> None:
        """Move to the latest version, reading only the commits after the loaded one."""
        self._snapshot = self._snapshot.advance()

    def load_as_version(self, version: int | str | dt.datetime, *, strict: bool = False) -> None:
        """Switch to `version`: an int, or a datetime / ISO-8601 string (latest commit at or before it). A time
        before the earliest commit still in the log loads that commit, as deltalake; `strict=True` (ours:
        delta-spark's `timestampAsOf` rule, the CLI) raises VersionNotFoundError instead."""
        self._snapshot = Snapshot.load_at(self._storage, version, reference=self._snapshot,
                                          clamp_to_earliest=not strict)

    def load_with_datetime(self, datetime_string: str | dt.datetime) -> None:
        self.load_as_version(datetime_string)

    def _timestamps(self) -> dict[int, int]:
        return commit_timestamps(self._storage, self._snapshot.ict_enablement_version,
                                 log_tail=self._snapshot.log_tail)

    # ------------------------------------------------------------------ metadata
    def schema(self) -> Schema:
        """deltalake's `Schema` (JSON string `to_json()`, Arrow export); `snapshot.schema` is the kernel's."""
        return Schema._of(self._snapshot.schema)

    def metadata(self) -> Metadata:
        """deltalake's `Metadata` (partition_columns a list); kernel metaData attributes stay reachable."""
        return Metadata(self._snapshot.metadata)

    def protocol(self) -> ProtocolVersions:
        """deltalake's `ProtocolVersions` (sorted feature lists); equal to the kernel `Protocol` it reflects."""
        return ProtocolVersions.of(self._snapshot.protocol)

    @property
    def table_config(self) -> DeltaTableConfig:
        """Deprecated in deltalake; the effective load options (defaults)."""
        from .table_info import table_config

        return table_config()

    def partitions(self, partition_filters: FilterLike | None = None, *,
                   file_pruning_predicate: FilterLike | None = None) -> list[dict[str, str | None]]:
        """The distinct partitions of the live files (filtered), e.g. `[{'year': '2020', 'month': '1'}]`."""
        from .table_info import partitions

        filters = partition_filters if partition_filters is not None else file_pruning_predicate
        return partitions(self._snapshot, self._planned_files(filters))

    def transaction_version(self, app_id: str) -> int | None:
        """The latest `txn` version of application `app_id`, or None."""
        from .table_info import transaction_version

        if not isinstance(app_id, str):  # deltalake's TypeError (an int id would silently find nothing)
            raise InvalidArgumentTypeError(f"'{type(app_id).__name__}' object is not an instance of 'str'")

        return transaction_version(self._snapshot, app_id)

    def deletion_vectors(self) -> pa.RecordBatchReader:
        """(filepath, selection_vector) for each live file with a deletion vector; True = row kept."""
        from .table_info import deletion_vectors

        return deletion_vectors(self._snapshot)

    def partition_columns(self) -> list[str]:
        return self._snapshot.partition_columns

    def transaction_versions(self) -> dict[str, int]:
        return {k: t.version for k, t in self._snapshot.txns.items()}

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """commitInfo of each commit, newest first, with `version` and `timestamp` set."""
        commits = list_commits(self._storage, self._snapshot.log_tail)  # a catalog's unpublished commits too
        versions = sorted((v for v in commits if v <= self.version()), reverse=True)
        if limit is not None and not isinstance(limit, bool) and isinstance(limit, int) and limit < 0:
            raise InvalidArgumentValueError(f"history limit must be >= 0, got {limit}")  # deltalake refuses it too
        if limit is not None:
            versions = versions[:limit]
        infos = commit_infos_for(self._storage, [commits[v] for v in sorted(versions)])
        out = []
        for v in versions:
            info = dict(infos.get(v) or {})
            info["version"] = v
            info.setdefault("timestamp", commits[v].last_modified_ms)
            out.append(info)
        return out

    # ------------------------------------------------------------------ files
    def _filter_expr(self, filters: FilterLike | None, rows: bool = True) -> tuple[Any, pc.Expression | None]:
        """(kernel predicate or None, leftover pyarrow row filter or None).

        Row filters (`filters=`) have deltalake's pyarrow semantics (`""` is the empty string,
        `not in` keeps nulls); partition filters (`partition_filters=`) its file-pruning semantics
        (`""` is null, `not in` never matches null partitions).
        """
        if filters is None or (isinstance(filters, (list, tuple)) and len(filters) == 0):
            return None, None
        from .kernel.expressions import predicate as ex

        if isinstance(filters, pc.Expression):
            converted = ex.from_pyarrow(filters, self._snapshot.schema)
            return (converted, None) if converted is not None else (None, filters)
        if isinstance(filters, (list, tuple)):
            if rows:
                return ex.from_dnf(filters, self._snapshot.schema, empty_string_is_null=False,
                                   not_in_keeps_nulls=True), None
            return ex.from_dnf(filters, self._snapshot.schema), None
        if isinstance(filters, ex.EXPR_TYPES):
            return filters, None
        raise InvalidFilterError(f"unsupported filter type: {type(filters).__name__}")

    def _partition_filter(self, partition_filters: FilterLike | None) -> Any:
        pred, row = self._filter_expr(partition_filters, rows=False)
        if row is not None:
            raise InvalidFilterError("partition_filters must be DNF tuples over partition columns")
        if pred is not None:
            from .kernel.expressions.predicate import referenced_columns

            parts = {c.lower() for c in self.partition_columns()}
            for path in referenced_columns(pred):
                if path[0].lower() not in parts:
                    raise InvalidFilterError(f"{path[0]!r} is not a partition column")
        return pred

    def _planned_files(self, partition_filters: FilterLike | None) -> pa.Table:
        pred = self._partition_filter(partition_filters)
        return Scan(self._snapshot, predicate=pred).plan()

    def files(self, partition_filters: FilterLike | None = None) -> list[str]:
        """Paths of the live files, as stored in the log (relative to the table root)."""
        paths: list[str] = self._planned_files(partition_filters).column("path").to_pylist()
        return paths

    def file_uris(self, partition_filters: FilterLike | None = None) -> list[str]:
        """Absolute URIs (local paths for local tables) of the live files, as deltalake's `file_uris()`."""
        return file_uri_list(self._storage, self._planned_files(partition_filters).column("path"))

    def get_add_actions(self, flatten: bool = False) -> pa.Table:
        from .kernel.scan.add_actions import add_actions_table
        from .table_info import restrict_add_actions

        return restrict_add_actions(self._snapshot, add_actions_table(self._snapshot, flatten=flatten), flatten)

    # ------------------------------------------------------------------ data
    def scan(
        self,
        columns: Sequence[str] | None = None,
        filters: FilterLike | None = None,
        progress: Callable[[int, int], None] | None = None,
        batch_size: int | None = None,
        row_tracking: bool = False,
    ) -> Scan:
        """A kernel Scan; `row_tracking=True` appends `_row_id` and `_row_commit_version` (int64, stable ids)."""
        pred, row = self._filter_expr(filters)
        kwargs: dict[str, Any] = {}
        if batch_size:
            kwargs["batch_size"] = batch_size
        return Scan(self._snapshot, columns=columns, predicate=pred, row_filter=row, progress=progress,
                    row_tracking=row_tracking, **kwargs)

    def to_pyarrow_table(
        self,
        partitions: FilterLike | None = None,
        columns: Sequence[str] | None = None,
        filesystem: Any = None,
        filters: FilterLike | None = None,
        row_tracking: bool = False,
    ) -> pa.Table:
        """The table as Arrow; `row_tracking=True` appends `_row_id` / `_row_commit_version` (needs row tracking)."""
        scan = self.scan(columns=columns, filters=_and_filters(partitions, filters), row_tracking=row_tracking)
        return scan.to_table()

    def to_batches(
        self, columns: Sequence[str] | None = None, filters: FilterLike | None = None, batch_size: int | None = None,
        row_tracking: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """Stream the table as record batches; memory stays bounded by a few files."""
        return self.scan(columns=columns, filters=filters, batch_size=batch_size,
                         row_tracking=row_tracking).to_batches()

    def to_pyarrow_reader(
        self, columns: Sequence[str] | None = None, filters: FilterLike | None = None
    ) -> pa.RecordBatchReader:
        return self.scan(columns=columns, filters=filters).to_reader()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.to_pyarrow_reader().__arrow_c_stream__(requested_schema)

    def to_pandas(
        self,
        partitions: FilterLike | None = None,
        columns: Sequence[str] | None = None,
        filesystem: Any = None,
        filters: FilterLike | None = None,
        types_mapper: Callable[[pa.DataType], Any] | None = None,
    ) -> pd.DataFrame:
        """deltalake's keywords: `filesystem` as in `to_pyarrow_table`, `types_mapper` passed to pyarrow's
        `Table.to_pandas` (e.g. `pd.ArrowDtype` for Arrow-backed columns)."""
        table = self.to_pyarrow_table(partitions=partitions, columns=columns, filesystem=filesystem, filters=filters)
        return table.to_pandas(types_mapper=types_mapper)

    def count(self, filters: FilterLike | None = None) -> int:
        return self.scan(filters=filters).count()

    def to_pyarrow_dataset(
        self,
        partitions: FilterLike | None = None,
        filesystem: Any = None,
        parquet_read_options: Any = None,
        schema: pa.Schema | None = None,
        as_large_types: bool = False,
        file_pruning_predicate: FilterLike | None = None,
    ) -> ds.FileSystemDataset:
        """A `pyarrow.dataset.Dataset` over the live files (deltalake's keywords).

        Each fragment's `partition_expression` holds its partition values and what its statistics
        guarantee (null counts, min/max), so pyarrow and DuckDB skip files a filter cannot match.

        Plain Parquet datasets cannot drop deleted rows, rename physical columns or widen types, so
        tables whose live files need any of that are refused with UnsupportedFeatureError rather than
        returning wrong rows; use `to_pyarrow_table` / `to_batches` for them.
        """
        import pyarrow.dataset as ds

        snap = self._snapshot
        files = self._planned_files(partitions if partitions is not None else file_pruning_predicate)
        if files.column("deletion_vector").null_count != files.num_rows:
            raise UnsupportedFeatureError("deletionVectors", "to_pyarrow_dataset cannot apply deletion vectors; "
                                          "use to_pyarrow_table() or to_batches()")
        if snap.column_mapping_mode != "none":
            raise UnsupportedFeatureError("columnMapping", "to_pyarrow_dataset cannot map physical column names; "
                                          "use to_pyarrow_table() or to_batches()")
        if snap.protocol.has_feature("typeWidening") or snap.protocol.has_feature("typeWidening-preview"):
            raise UnsupportedFeatureError("typeWidening", "to_pyarrow_dataset cannot widen column types; "
                                          "use to_pyarrow_table() or to_batches()")
        if snap.protocol.has_feature("variantShredding") or snap.protocol.has_feature("variantShredding-preview"):
            raise UnsupportedFeatureError("variantShredding", "to_pyarrow_dataset cannot unshred variants; "
                                          "use to_pyarrow_table() or to_batches()")
        from .kernel.schema.arrow import to_arrow_schema
        from .table_info import fragment_expressions

        fs, _ = self._storage.arrow_filesystem()
        if schema is None:
            schema = Schema._of(snap.schema).to_arrow(as_large_types) if as_large_types else \
                to_arrow_schema(snap.schema, include_metadata=False)
        if filesystem is not None:  # deltalake: a filesystem rooted at the table; keys are the log's paths
            from urllib.parse import unquote

            fs = filesystem
            paths = [unquote(p) for p in files.column("path").to_pylist()]
        else:
            paths = [_arrow_path(self._storage, fs, p) for p in files.column("path").to_pylist()]
        exprs = fragment_expressions(snap, files, schema)
        fmt = ds.ParquetFileFormat(read_options=parquet_read_options,
                                   default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=True))
        frags = [fmt.make_fragment(p, filesystem=fs, partition_expression=e) for p, e in zip(paths, exprs)]
        return ds.FileSystemDataset(frags, schema=schema, format=fmt, filesystem=fs)

    # ------------------------------------------------------------------ change data feed
    def load_cdf(
        self,
        starting_version: int = 0,
        ending_version: int | None = None,
        starting_timestamp: str | dt.datetime | None = None,
        ending_timestamp: str | dt.datetime | None = None,
        columns: Sequence[str] | None = None,
        predicate: FilterLike | str | None = None,
        allow_out_of_range: bool = False,
    ) -> pa.RecordBatchReader:
        """The change data feed (deltalake's `load_cdf`).

        Out of range, as deltalake: a start (version or timestamp) after the latest commit raises
        VersionNotFoundError, or gives an empty result with `allow_out_of_range=True`; an end timestamp
        before the first commit gives an empty result.
        """
        from .kernel.table_changes import between

        catalog = self._snapshot.catalog  # a catalog-managed table: the catalog's current tail (its latest commits)
        tail = catalog.get_log_tail() if catalog is not None else self._snapshot.log_tail
        changes = between(self._storage, starting_version, ending_version, starting_timestamp, ending_timestamp,
                          allow_out_of_range, self._snapshot.ict_enablement_version, log_tail=tail)
        pred, row = (None, None)
        if predicate is not None and not isinstance(predicate, str):
            pred, row = self._filter_expr(predicate)
        return changes.to_reader(columns=columns, predicate=pred, row_filter=row, sql_predicate=predicate
                                 if isinstance(predicate, str) else None)

    def __repr__(self) -> str:
        return f"DeltaTable({self.table_uri!r}, version={self.version()})"

    # ------------------------------------------------------------------ engines
    def register(self, ctx: Any, name: str) -> DeltaDataset:
        """Register this table (its loaded version, pinned) in a DataFusion `SessionContext` as `name`.

        Filters and projections are pushed into the kernel's skipping; DVs and column mapping apply.
        Returns the `deltakernel.datafusion.DeltaDataset` (its `metrics` show skipped/opened files).
        """
        from .datafusion import register

        return register(ctx, name, self)


def _and_filters(a: FilterLike | None, b: FilterLike | None) -> FilterLike | None:
    if a is None or (isinstance(a, list) and not a):
        return b
    if b is None or (isinstance(b, list) and not b):
        return a
    if isinstance(a, list) and isinstance(b, list) and a and b and isinstance(a[0], tuple) and isinstance(b[0], tuple):
        return [*a, *b]
    raise InvalidFilterError("combine `partitions` and `filters` as one filter list")


def read(table_path: str, version: int | None = None) -> pa.Table:
    """The conformance harness entry point: `python run.py deltakernel.table:read`."""
    return DeltaTable(table_path, version=version).to_pyarrow_table()


__all__ = ["DeltaTable", "read", "TableNotFoundError", "json"]


def _arrow_path(storage: Storage, fs: Any, path: str) -> str:
    """`path` (from the log) in `fs`, the table storage's arrow filesystem; files in another store (allowed
    by DELTAKERNEL_ALLOW_FOREIGN_PATHS) cannot join one dataset with the table's files."""
    target, key = resolve_file(storage, path)
    target_fs, _ = target.arrow_filesystem()
    if target_fs != fs:
        raise UnsupportedFeatureError("foreign file paths", f"to_pyarrow_dataset cannot read {path!r} from another "
                                      "store; use to_pyarrow_table() or to_batches()")
    return target.arrow_path(key)
