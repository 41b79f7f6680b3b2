"""`write_deltalake`: create, append, overwrite (full, replaceWhere, dynamic partitions), ignore/error,
with schema evolution and constraint enforcement, committed as one kernel Transaction.

Data is consumed as a stream of record batches: each batch is checked and completed by the
constraint enforcer, cast to the table schema and handed to the file writer, so input larger than
memory works. Nothing is visible until the commit; a failure at any point leaves the table at its
previous version (written files become orphans for VACUUM; the writer also deletes them best-effort).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConstraintViolationError, DeltaError, SchemaError, SchemaMismatchError, TableNotFoundError
from ...kernel.log.actions import Format, Metadata, Protocol
from ...kernel.protocol.select import with_min_versions
from ...kernel.row_tracking import with_materialized_names
from ...kernel.schema.arrow import from_arrow_schema, to_arrow_schema
from ...kernel.schema.evolution import (
    added_fields,
    assign_column_mapping,
    check_unique_names,
    fields_with_metadata,
    max_column_id,
    merge_schemas,
    schema_has_type,
)
from ...kernel.schema.types import StructField, StructType, schema_to_json
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage, storage_for_uri
from ..alter.table_properties import split_protocol_requests
from ..commit_options import CommitProperties, PostCommitHookProperties, check_commit_properties, commit_with
from ..files.dml_output import delete_quietly
from .inputs import to_reader
from .overwrite import plan_overwrite

MODES = ("error", "append", "overwrite", "ignore")
_MODE_NAMES = {"error": "ErrorIfExists", "append": "Append", "overwrite": "Overwrite", "ignore": "Ignore"}


# ----------------------------------------------------------------------------- input
def _normalize_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """Arrow types Delta has no distinct name for become their Delta equivalents."""

    def typ(t: pa.DataType) -> pa.DataType:
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return pa.string()
        if pa.types.is_large_binary(t) or pa.types.is_binary_view(t) or pa.types.is_fixed_size_binary(t):
            return pa.binary()
        if pa.types.is_dictionary(t):
            return typ(t.value_type)
        if pa.types.is_timestamp(t):
            return pa.timestamp("us", tz="UTC") if t.tz is not None else pa.timestamp("us")
        if pa.types.is_date64(t):
            return pa.date32()
        if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_fixed_size_list(t):
            return pa.list_(pa.field("element", typ(t.value_type), t.value_field.nullable))
        if pa.types.is_list(t):
            return pa.list_(pa.field("element", typ(t.value_type), t.value_field.nullable))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, typ(f.type), f.nullable, f.metadata) for f in t])
        if pa.types.is_map(t):
            return pa.map_(typ(t.key_type), pa.field("value", typ(t.item_type), t.item_field.nullable))
        return t

    return pa.schema([pa.field(f.name, typ(f.type), f.nullable, f.metadata) for f in schema])


# ----------------------------------------------------------------------------- protocol
def required_features(schema: StructType, configuration: dict[str, str]) -> set[str]:
    """Table features a schema and a configuration need (PROTOCOL.md "Table Features")."""
    feats: set[str] = set()
    if configuration.get("delta.appendOnly", "").lower() == "true":
        feats.add("appendOnly")
    if any(k.startswith("delta.constraints.") for k in configuration):
        feats.add("checkConstraints")
    if configuration.get("delta.enableChangeDataFeed", "").lower() == "true":
        feats.add("changeDataFeed")
    if configuration.get("delta.columnMapping.mode", "none").lower() in ("name", "id"):
        feats.add("columnMapping")
    if configuration.get("delta.enableDeletionVectors", "").lower() == "true":
        feats.add("deletionVectors")
    if configuration.get("delta.enableRowTracking", "").lower() == "true":
        feats.update({"rowTracking", "domainMetadata"})
    if configuration.get("delta.enableInCommitTimestamps", "").lower() == "true":
        feats.add("inCommitTimestamp")
    if configuration.get("delta.checkpointPolicy", "").lower() == "v2":
        feats.add("v2Checkpoint")
    if configuration.get("delta.enableTypeWidening", "").lower() == "true":
        feats.add("typeWidening")
    if schema_has_type(schema, "timestamp_ntz"):
        feats.add("timestampNtz")
    if schema_has_type(schema, "variant"):
        feats.add("variantType")
    if fields_with_metadata(schema, "delta.invariants"):
        feats.add("invariants")
    if fields_with_metadata(schema, "delta.generationExpression"):
        feats.add("generatedColumns")
    if fields_with_metadata(schema, "delta.identity.start"):
        feats.add("identityColumns")
    if fields_with_metadata(schema, "CURRENT_DEFAULT"):
        feats.add("allowColumnDefaults")
    for k in configuration:
        if k.startswith("delta.feature.") and configuration[k].lower() in ("supported", "enabled"):
            feats.add(k[len("delta.feature."):])
    return feats


def protocol_for(features: set[str], current: Protocol | None = None) -> Protocol:
    from ...kernel.protocol.select import minimal_protocol

    if "typeWidening" in features and current is not None and current.has_feature("typeWidening-preview") \
            and not current.has_feature("typeWidening"):
        # a table that enabled type widening during its preview keeps that feature (same spec, as delta-spark)
        features = (set(features) - {"typeWidening"}) | {"typeWidening-preview"}
    return minimal_protocol(features, current)


def schema_merge_options(configuration: dict[str, str]) -> dict[str, bool]:
    """`merge_schemas` options a table's properties imply (shared by writes and MERGE): type widening only
    with `delta.enableTypeWidening=true` (PROTOCOL.md: writers must reject widening otherwise), restricted to
    Iceberg V2's changes under IcebergCompatV1/V2."""
    def on(key: str) -> bool:
        return str(configuration.get(key, "false")).strip().lower() == "true"

    return {"allow_widening": on("delta.enableTypeWidening"),
            "iceberg_compat": on("delta.enableIcebergCompatV1") or on("delta.enableIcebergCompatV2")}


# ----------------------------------------------------------------------------- helpers
def load_snapshot(storage: Storage) -> Snapshot | None:
    try:
        return Snapshot.load(storage)
    except TableNotFoundError:
        return None


def _match_columns(batch: pa.RecordBatch, schema: StructType) -> pa.RecordBatch:
    """Rename input columns to the table's spelling (Delta names are case-insensitive)."""
    names = []
    for n in batch.schema.names:
        names.append(schema.field(n).name if schema.has(n) else n)
    return batch.rename_columns(names) if names != batch.schema.names else batch


def cast_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    cols = []
    for f in target:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            cols.append(pa.nulls(batch.num_rows, f.type))
            continue
        col = batch.column(idx)
        if col.type != f.type:
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaError(f"column {f.name!r}: cannot write {col.type} into {f.type}: {e}") from e
        cols.append(col)
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema([pa.field(f.name, f.type, True) for f in target]))


# ----------------------------------------------------------------------------- the operation
def write_deltalake(
    table_or_uri: Any,
    data: Any,
    *,
    schema: pa.Schema | None = None,
    partition_by: list[str] | str | None = None,
    mode: str = "error",
    schema_mode: str | None = None,
    predicate: str | None = None,
    partition_overwrite_mode: str = "static",
    configuration: dict[str, str | None] | None = None,
    name: str | None = None,
    description: str | None = None,
    target_file_size: int | None = None,
    writer_properties: Any = None,
    storage_options: dict[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    post_commithook_properties: PostCommitHookProperties | None = None,
    max_rows_per_file: int | None = None,
    engine_info: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    _operation: str = "WRITE",
    _write_files: Any = None,
    _domain_metadata: Any = None,
    _delta_schema: StructType | None = None,
) -> None:
    """Write Arrow data to a Delta table (deltalake's `write_deltalake`).

    `progress(rows, files)`: called after every input batch with the rows consumed and data files completed
    so far (a hook for progress bars; logger `deltakernel.operations.files.parquet_writer` logs each file at DEBUG).

    `_write_files(metadata, protocol) -> (adds, num_rows)`, for engines whose workers write the data
    files themselves (deltakernel.spark): called once the table's metadata is planned, instead of
    writing `data` (which then only supplies the schema). It may return `(adds, num_rows, hwm)`: identity
    high-water marks (column -> value) the workers' generated values reached, committed with the adds.

    `_delta_schema`: the Delta schema of `data` when the caller has one (`create_table` with a Delta
    StructType): its metadata is kept as typed there, not re-read from Arrow metadata (which is text).
    """
    if mode not in MODES:
        raise DeltaError(f"mode must be one of {MODES}, got {mode!r}")
    if schema_mode not in (None, "merge", "overwrite"):
        raise DeltaError(f"schema_mode must be None, 'merge' or 'overwrite', got {schema_mode!r}")
    if schema_mode == "overwrite" and mode != "overwrite":
        raise DeltaError("schema_mode='overwrite' needs mode='overwrite'")
    if partition_overwrite_mode not in ("static", "dynamic"):
        raise DeltaError("partition_overwrite_mode must be 'static' or 'dynamic'")
    if predicate is not None and mode != "overwrite":
        raise DeltaError("predicate (replaceWhere) needs mode='overwrite'")
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    check_commit_properties(commit_properties)  # deltalake's ValueError before any file is written
    commit_properties = commit_properties or CommitProperties()

    storage, snapshot = _resolve(table_or_uri, storage_options)
    if snapshot is not None:
        if (predicate is not None or partition_overwrite_mode == "dynamic") and schema_mode == "overwrite":
            if partition_by is None:
                # a partial overwrite keeps the table's partitioning (deltalake does too); schema_mode="overwrite"
                # alone would otherwise plan an unpartitioned table and strip the kept files' partition values
                partition_by = list(snapshot.partition_columns)
            elif [p.lower() for p in partition_by] != [p.lower() for p in snapshot.partition_columns]:
                what = "replaceWhere (predicate)" if predicate is not None else "dynamic partition overwrite"
                raise SchemaMismatchError(
                    f"{what} replaces only part of the table at {storage.root_uri}, so it cannot repartition it: "
                    f"partition_by {partition_by} differs from the table's partition columns "
                    f"{list(snapshot.partition_columns)}. Overwrite the whole table (no predicate) to change the "
                    "partitioning."
                )
        if mode == "error":
            raise DeltaError(f"Delta table already exists at {storage.root_uri} (mode='error')")
        if mode == "ignore":
            return
        # idempotent writes: an (app_id, version) already committed is skipped, as Spark does
        apps = commit_properties.app_transactions or []
        if apps and all((snapshot.txns.get(t.app_id) is not None and snapshot.txns[t.app_id].version >= t.version)
                        for t in apps):
            return

    reader = to_reader(data, schema)
    in_schema = _normalize_arrow_schema(reader.schema)
    conf_in = {k: v for k, v in (configuration or {}).items() if v is not None}

    txn_op = _operation
    existing_parts = snapshot.partition_columns if snapshot is not None else []
    params: dict[str, Any] = {"mode": _MODE_NAMES[mode], "partitionBy": list(partition_by or existing_parts)}
    if predicate is not None:
        params["predicate"] = predicate
    txn = KernelTransaction(storage, snapshot, operation=txn_op, operation_parameters=params,
                            engine_info=engine_info or "deltakernel/0.1.0")

    metadata, protocol, new_meta = plan_metadata(
        snapshot, in_schema, partition_by, mode, schema_mode, conf_in, name, description, _delta_schema,
        partitions_last=not (engine_info or "").startswith("deltakernel-spark"),  # Spark keeps delta-spark's order
    )
    if new_meta:
        txn.update_metadata(metadata)
    if snapshot is None or protocol != snapshot.protocol:
        txn.update_protocol(protocol)
    if _domain_metadata is not None:  # `_domain_metadata(metadata) -> {domain: configuration}` (clustered create)
        for domain, domain_conf in _domain_metadata(metadata).items():
            txn.set_domain_metadata(domain, domain_conf)

    table_schema = metadata.schema
    target = to_arrow_schema(table_schema, include_metadata=False)
    mode_cm = metadata.configuration.get("delta.columnMapping.mode", "none")
    enforcer = enforcer_for(metadata, protocol)
    sql_pred = _parse_predicate(predicate) if predicate is not None else None

    counts = {"rows": 0}

    def batches() -> Iterator[pa.RecordBatch]:
        for raw in reader:
            batch = _match_columns(raw, table_schema)
            extra = [n for n in batch.schema.names if not table_schema.has(n)]
            if extra:
                raise SchemaError(
                    f"data has column(s) {extra} not in the table schema; pass schema_mode='merge' to add them"
                )
            if enforcer is not None:
                batch = enforcer.prepare(batch)
            batch = cast_batch(batch, target)
            if sql_pred is not None:
                _check_replace_where(batch, sql_pred, predicate or "")
            counts["rows"] += batch.num_rows
            yield batch

    from ..files.parquet_writer import write_data_files

    engine_hwm: dict[str, int] = {}
    if _write_files is not None:
        written = _write_files(metadata, protocol)
        adds, counts["rows"] = written[0], written[1]
        engine_hwm = dict(written[2]) if len(written) > 2 else {}
    else:
        adds = write_data_files(
            storage,
            batches(),
            schema=table_schema,
            partition_columns=list(metadata.partition_columns),
            column_mapping_mode=mode_cm,
            configuration=metadata.configuration,
            target_file_size=target_file_size or _conf_int(metadata.configuration, "delta.targetFileSize"),
            writer_properties=writer_properties,
            max_rows_per_file=max_rows_per_file,
            progress=progress,
        )
    try:
        updates = dict(engine_hwm)
        if enforcer is not None and getattr(enforcer, "identity_updates", None):
            updates.update(enforcer.identity_updates())
        if updates:
            metadata = _with_identity_hwm(metadata, updates)
            txn.update_metadata(metadata)
        txn.add_files(adds)
        if snapshot is not None and mode == "overwrite":
            plan_overwrite(txn, snapshot, adds, predicate, sql_pred, partition_overwrite_mode, storage,
                            writer_properties)
        txn.operation_metrics.update(
            {
                "numFiles": len(adds),
                "numOutputRows": counts["rows"],
                "numOutputBytes": sum(int(a["size"]) for a in adds),
                "numRemovedFiles": len(txn.removes),
            }
        )
        commit_with(txn, commit_properties, post_commithook_properties)
    except BaseException:
        # only a commit known to be absent lets go of its files: a landed (or possibly landed) commit
        # references them, and deleting them would make the table unreadable
        if not txn.may_have_committed:
            delete_quietly(storage, list(dict.fromkeys([a["path"] for a in [*adds, *txn.adds, *txn.cdcs]])))
        raise
    finally:
        if txn.committed_version is not None and _is_table(table_or_uri):
            table_or_uri._snapshot = snapshot.advance(txn.committed_version) if snapshot is not None \
                else Snapshot.load(storage, txn.committed_version)


def _is_table(obj: Any) -> bool:
    return hasattr(obj, "_storage") and hasattr(obj, "_snapshot")


def _resolve(table_or_uri: Any, storage_options: dict[str, str] | None) -> tuple[Storage, Snapshot | None]:
    """The storage and the snapshot the write reads at. A DeltaTable is used at its own version (as
    deltalake does): later commits are conflict-checked by the transaction, not absorbed silently."""
    if _is_table(table_or_uri):
        return table_or_uri._storage, table_or_uri._snapshot
    if isinstance(table_or_uri, Storage):
        return table_or_uri, load_snapshot(table_or_uri)
    storage = storage_for_uri(str(table_or_uri), storage_options)
    return storage, load_snapshot(storage)


def _conf_int(conf: dict[str, str], key: str) -> int | None:
    v = conf.get(key)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def plan_metadata(
    snapshot: Snapshot | None,
    in_schema: pa.Schema,
    partition_by: list[str] | None,
    mode: str,
    schema_mode: str | None,
    conf_in: dict[str, str],
    name: str | None,
    description: str | None,
    delta_schema: StructType | None = None,
    *,
    partitions_last: bool = False,
) -> tuple[Metadata, Protocol, bool]:
    """(metadata, protocol, whether metadata changes) for this write. `partitions_last`: a `schema_mode="merge"`
    that changes the schema of a partitioned table puts the partition columns after the data columns, before
    the new ones (deltalake's order; delta-spark keeps the table's order and appends)."""
    incoming = delta_schema if delta_schema is not None else from_arrow_schema(in_schema)
    check_unique_names(incoming)
    conf_in, requested, min_versions = split_protocol_requests(conf_in)
    if snapshot is None or schema_mode == "overwrite":
        configuration = dict(snapshot.configuration) if snapshot is not None else {}
        configuration.update(conf_in)
        configuration = with_materialized_names(configuration)  # row tracking: hidden column names
        schema = incoming
        if snapshot is not None and schema_mode == "overwrite":
            # keep column mapping metadata of surviving columns by name
            old = {f.name.lower(): f for f in snapshot.schema.fields}
            schema = StructType(tuple(
                StructField(f.name, f.type, f.nullable, {**old[f.name.lower()].metadata}
                            if f.name.lower() in old and old[f.name.lower()].type == f.type else dict(f.metadata))
                for f in schema.fields
            ))
        parts = list(partition_by or (snapshot.partition_columns if snapshot is not None and
                                      schema_mode != "overwrite" else []))
        for p in parts:
            if not schema.has(p):
                raise SchemaError(f"partition column {p!r} is not in the schema {schema.names}")
        parts = [schema.field(p).name for p in parts]
        schema = _with_column_mapping(schema, configuration)
        feats = required_features(schema, configuration) | requested
        current = snapshot.protocol if snapshot is not None else None
        protocol = protocol_for(feats, current)
        if min_versions is not None:
            protocol = with_min_versions(protocol, *min_versions)
        if "inCommitTimestamp" in feats and "delta.inCommitTimestampEnablementVersion" not in configuration \
                and snapshot is not None:
            configuration["delta.inCommitTimestampEnablementVersion"] = str(snapshot.version + 1)
            configuration["delta.inCommitTimestampEnablementTimestamp"] = str(int(time.time() * 1000))
        md = Metadata(
            id=snapshot.metadata.id if snapshot is not None else str(uuid.uuid4()),
            schema_string=schema_to_json(schema),
            partition_columns=tuple(parts),
            configuration=configuration,
            name=name if name is not None else (snapshot.metadata.name if snapshot else None),
            description=description if description is not None else (snapshot.metadata.description
                                                                      if snapshot else None),
            format=Format("parquet", {}),
            created_time=int(time.time() * 1000) if snapshot is None else snapshot.metadata.created_time,
        )
        return md, protocol, True

    md = snapshot.metadata
    if partition_by and [p.lower() for p in partition_by] != [p.lower() for p in md.partition_columns]:
        raise DeltaError(
            f"partition_by {partition_by} does not match the table's partition columns {list(md.partition_columns)}"
        )
    changed = False
    schema = snapshot.schema
    if schema_mode == "merge":
        merged = merge_schemas(schema, incoming, partition_columns=md.partition_columns,
                               **schema_merge_options(md.configuration))
        generated = [n for n, f in added_fields(schema, merged) if "delta.generationExpression" in f.metadata]
        if generated and snapshot.num_files > 0:
            raise SchemaError(
                "Schema evolved fields cannot have generated expressions. Recreate the table to achieve this. "
                f"(deltakernel: schema evolution cannot add generated column(s) {generated} to a table that has rows: "
                "existing rows would not satisfy the generation expression; add them when the table is empty)"
            )
        if merged != schema or _metadata_differs(merged, schema):
            if partitions_last and md.partition_columns:
                merged = _partitions_last(merged, schema, md.partition_columns)
            configuration = dict(md.configuration)
            merged = _with_column_mapping(merged, configuration)
            md = Metadata(md.id, schema_to_json(merged), md.partition_columns, configuration, md.name,
                          md.description, md.format, md.created_time)
            changed = True
    if conf_in and any(md.configuration.get(k) != v for k, v in conf_in.items()):
        configuration = with_materialized_names({**md.configuration, **conf_in})
        md = Metadata(md.id, md.schema_string, md.partition_columns, configuration, md.name, md.description,
                      md.format, md.created_time)
        changed = True
    feats = required_features(md.schema, md.configuration) | requested
    protocol = protocol_for(feats, snapshot.protocol)
    if min_versions is not None:
        protocol = with_min_versions(protocol, *min_versions)
    return md, protocol, changed


def _partitions_last(merged: StructType, old: StructType, partition_columns: Sequence[str]) -> StructType:
    """deltalake's column order after a schema merge on a partitioned table: the table's data columns, then its
    partition columns (in partitioning order), then the new columns (in the data's order)."""
    existing = {n.lower() for n in old.names}
    by_name = {f.name.lower(): f for f in merged.fields}
    parts = [by_name[p.lower()] for p in partition_columns if p.lower() in by_name]
    part_names = {f.name.lower() for f in parts}
    data = [f for f in merged.fields if f.name.lower() in existing and f.name.lower() not in part_names]
    new = [f for f in merged.fields if f.name.lower() not in existing]
    return StructType(tuple(data + parts + new))


def _with_column_mapping(schema: StructType, configuration: dict[str, str]) -> StructType:
    """Under column mapping, give new fields ids and physical names; records the new maxColumnId."""
    if configuration.get("delta.columnMapping.mode", "none") not in ("name", "id"):
        return schema
    start = int(configuration.get("delta.columnMapping.maxColumnId", "0"))
    schema, new_max = assign_column_mapping(schema, max(start, max_column_id(schema)))
    configuration["delta.columnMapping.maxColumnId"] = str(new_max)
    return schema


def _metadata_differs(a: StructType, b: StructType) -> bool:
    return schema_to_json(a) != schema_to_json(b)


def enforcer_for(metadata: Metadata, protocol: Protocol) -> Any:
    try:
        from .enforcement import Enforcer
    except ImportError:  # pragma: no cover - during development
        return None
    enforcer = Enforcer(metadata, protocol)
    return enforcer if enforcer.needed else None


def _with_identity_hwm(md: Metadata, updates: dict[str, int]) -> Metadata:
    schema = md.schema
    fields = []
    for f in schema.fields:
        if f.name in updates:
            meta = dict(f.metadata)
            meta["delta.identity.highWaterMark"] = updates[f.name]
            f = StructField(f.name, f.type, f.nullable, meta)
        fields.append(f)
    return Metadata(md.id, schema_to_json(StructType(tuple(fields))), md.partition_columns, md.configuration,
                    md.name, md.description, md.format, md.created_time)


def _parse_predicate(text: str) -> Any:
    from ...kernel.expressions.sql import parse_sql

    return parse_sql(text)


def _check_replace_where(batch: pa.RecordBatch, expr: Any, text: str) -> None:
    from ...sqleval import evaluate

    ok = evaluate(expr, batch)
    bad = pc.invert(pc.fill_null(ok, False))
    if pc.any(bad).as_py():
        row = batch.filter(bad).slice(0, 1).to_pylist()[0]
        raise ConstraintViolationError(
            f"replaceWhere: written data does not satisfy the predicate {text!r}; e.g. row {row}"
        )


def create_table(
    table_uri: str,
    schema: pa.Schema | StructType,
    *,
    mode: str = "error",
    partition_by: list[str] | str | None = None,
    name: str | None = None,
    description: str | None = None,
    configuration: dict[str, str | None] | None = None,
    storage_options: dict[str, str] | None = None,
    commit_properties: CommitProperties | None = None,
    cluster_by: list[str] | None = None,
    post_commithook_properties: PostCommitHookProperties | None = None,
) -> None:
    """Create an empty table (deltalake's `DeltaTable.create`); `cluster_by`: a clustered table
    (`operations/clustering.py`: the `clustering` feature and the `delta.clustering` domain)."""
    domains: Any = None
    if cluster_by is not None:
        from functools import partial

        from ..maintenance.optimize.clustering import CLUSTERING_FEATURE, creation_domain

        configuration = {**(configuration or {}), f"delta.feature.{CLUSTERING_FEATURE}": "supported"}
        domains = partial(creation_domain, columns=list(cluster_by))
    delta_schema = schema if isinstance(schema, StructType) else None
    arrow = to_arrow_schema(schema) if isinstance(schema, StructType) else schema
    empty = arrow.empty_table()
    write_deltalake(
        table_uri, empty, partition_by=partition_by, mode=mode, name=name, description=description,
        configuration=configuration, storage_options=storage_options, commit_properties=commit_properties,
        post_commithook_properties=post_commithook_properties,
        schema_mode="overwrite" if mode == "overwrite" else None,
        _operation="CREATE TABLE" if mode != "overwrite" else "CREATE OR REPLACE TABLE",
        _domain_metadata=domains, _delta_schema=delta_schema,
    )


__all__ = ["create_table", "required_features", "to_reader", "write_deltalake"]
