"""One write, start to end: resolve the target → plan the table state (`plan.py`) → write the data files
(`data_files.py`, or the engine's own workers) → commit (`commit.py`).

`write_deltalake` (`api.py`) is the deltalake-compatible front; engines call :func:`execute_write` with a
`WriteRequest` and, when their workers write the files themselves (Spark), a `write_files` callback that
runs once the metadata is planned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ...errors import DeltaError, SchemaError, SchemaMismatchError, TableNotFoundError
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage, storage_for_uri
from .commit import commit_write
from .data_files import write_data
from .inputs import to_reader
from .plan import normalize_arrow_schema, plan_metadata
from .request import MODE_NAMES, WriteRequest

#: `(metadata, protocol) -> (adds, rows[, identity high-water marks])`: files written by an engine's workers
WriteFiles = Callable[[Metadata, Protocol], Any]


def load_snapshot(storage: Storage) -> Snapshot | None:
    """The table's latest snapshot, None when there is no table yet."""
    try:
        return Snapshot.load(storage)
    except TableNotFoundError:
        return None


def is_table(obj: Any) -> bool:
    """A DeltaTable (or an engine's stand-in): something with a storage and a pinned snapshot."""
    return hasattr(obj, "_storage") and hasattr(obj, "_snapshot")


def resolve_target(table_or_uri: Any, storage_options: dict[str, str] | None) -> tuple[Storage, Snapshot | None]:
    """The storage and the snapshot the write reads at. A DeltaTable is used at its own version (as
    deltalake does): later commits are conflict-checked by the transaction, not absorbed silently."""
    if is_table(table_or_uri):
        return table_or_uri._storage, table_or_uri._snapshot
    if isinstance(table_or_uri, Storage):
        return table_or_uri, load_snapshot(table_or_uri)
    storage = storage_for_uri(str(table_or_uri), storage_options, create=True)
    return storage, load_snapshot(storage)


def _catalog_requirements(storage: Storage, snapshot: Snapshot | None, request: WriteRequest) -> None:
    """A new table created through a catalog's table name (`uc://...`): the catalog's required table features
    and properties (catalogManaged, in-commit timestamps, its table id) go into the first commit's metadata,
    over the caller's own keys (the catalog refuses to register a table without them)."""
    required = getattr(getattr(storage, "catalog", None), "new_table_configuration", None)
    if snapshot is None and callable(required):
        request.configuration = {**(request.configuration or {}), **required()}


def _proceeds(storage: Storage, snapshot: Snapshot | None, request: WriteRequest) -> bool:
    """False when the write is a no-op on an existing table (mode 'ignore', an idempotent app transaction
    already committed); raises when it must fail before anything is written."""
    if snapshot is None:
        return True
    if (request.predicate is not None or request.partition_overwrite_mode == "dynamic") \
            and request.schema_mode == "overwrite":
        if request.partition_by is None:
            # a partial overwrite keeps the table's partitioning (deltalake does too); schema_mode="overwrite"
            # alone would otherwise plan an unpartitioned table and strip the kept files' partition values
            request.partition_by = list(snapshot.partition_columns)
        elif [p.lower() for p in request.partition_by] != [p.lower() for p in snapshot.partition_columns]:
            what = "replaceWhere (predicate)" if request.predicate is not None else "dynamic partition overwrite"
            raise SchemaMismatchError(
                f"{what} replaces only part of the table at {storage.root_uri}, so it cannot repartition it: "
                f"partition_by {request.partition_by} differs from the table's partition columns "
                f"{list(snapshot.partition_columns)}. Overwrite the whole table (no predicate) to change the "
                "partitioning."
            )
    if request.mode == "error":
        raise DeltaError(f"A table already exists at: {storage.root_uri} (Delta table already exists, mode='error')")
    if request.mode == "ignore":
        return False
    # idempotent writes: an (app_id, version) already committed is skipped, as Spark does
    apps = request.commit_properties.app_transactions or []
    return not (apps and all(
        (snapshot.txns.get(t.app_id) is not None and snapshot.txns[t.app_id].version >= t.version) for t in apps))


def _plan(snapshot: Snapshot | None, schema: pa.Schema, request: WriteRequest) -> tuple[Metadata, Protocol, bool]:
    return plan_metadata(
        snapshot, normalize_arrow_schema(schema), request.partition_by, request.mode, request.schema_mode,
        request.new_configuration, request.name, request.description, request.delta_schema,
        partitions_last=request.partitions_last,
    )


def planned_table_state(table_or_uri: Any, schema: pa.Schema, request: WriteRequest) -> tuple[Metadata, Protocol]:
    """The metadata and protocol the write would commit, without writing or committing anything (the
    table's current ones when the write would be a no-op)."""
    storage, snapshot = resolve_target(table_or_uri, request.storage_options)
    if not _proceeds(storage, snapshot, request):
        assert snapshot is not None
        return snapshot.metadata, snapshot.protocol
    _catalog_requirements(storage, snapshot, request)
    metadata, protocol, _ = _plan(snapshot, schema, request)
    return metadata, protocol


def execute_write(table_or_uri: Any, data: Any, request: WriteRequest, *, schema: pa.Schema | None = None,
                  write_files: WriteFiles | None = None) -> None:
    """Run one write. `write_files`: the engine's workers write the files (then `data` only supplies the
    schema); it may return identity high-water marks its generated values reached, committed with the adds."""
    storage, snapshot = resolve_target(table_or_uri, request.storage_options)
    if not _proceeds(storage, snapshot, request):
        return
    _catalog_requirements(storage, snapshot, request)
    reader = to_reader(data, schema)
    if snapshot is None and len(reader.schema) == 0:
        raise SchemaError("At least one column must be defined to create a table.")
    params: dict[str, Any] = {"mode": MODE_NAMES[request.mode],
                              "partitionBy": list(request.partition_by or (snapshot.partition_columns
                                                                           if snapshot is not None else []))}
    if request.predicate is not None:
        params["predicate"] = request.predicate
    txn = KernelTransaction(storage, snapshot, operation=request.operation, operation_parameters=params,
                            engine_info=request.engine_info or "deltakernel/0.1.0")
    metadata, protocol, new_meta = _plan(snapshot, reader.schema, request)
    if new_meta:
        txn.update_metadata(metadata)
    if snapshot is None or protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    if request.domain_metadata is not None:  # a clustered table's creation: its `delta.clustering` domain
        for domain, domain_conf in request.domain_metadata(metadata).items():
            txn.set_domain_metadata(domain, domain_conf)

    if write_files is not None:
        written = write_files(metadata, protocol)
        adds, rows = written[0], written[1]
        marks = dict(written[2]) if len(written) > 2 else {}
    else:
        adds, rows, marks = write_data(
            storage, iter(reader), metadata, protocol, predicate=request.predicate,
            target_file_size=request.target_file_size, writer_properties=request.writer_properties,
            max_rows_per_file=request.max_rows_per_file, progress=request.progress,
            variant_shredding_schema=request.variant_shredding_schema)
    try:
        commit_write(txn, storage, snapshot, metadata, request, adds, rows, marks)
    finally:
        if txn.committed_version is not None and is_table(table_or_uri):
            table_or_uri._snapshot = snapshot.advance(txn.committed_version) if snapshot is not None \
                else Snapshot.load(storage, txn.committed_version)


__all__ = ["WriteFiles", "execute_write", "is_table", "load_snapshot", "planned_table_state", "resolve_target"]
