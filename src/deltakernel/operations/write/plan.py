"""Planning a write's table state: the metadata (schema, partitioning, properties) and protocol it commits.

No data is read or written here. A new table (or `schema_mode="overwrite"`) gets its schema from the data,
its protocol from the features the schema and properties need (PROTOCOL.md "Table Features"); an existing
table keeps its metadata unless `schema_mode="merge"` evolves the schema or new properties are set.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

import pyarrow as pa

from ...errors import DeltaError, SchemaError
from ...kernel.log.actions import Format, Metadata, Protocol
from ...kernel.protocol.select import minimal_protocol, with_min_versions
from ...kernel.row_tracking import with_materialized_names
from ...kernel.schema.arrow import from_arrow_schema
from ...kernel.schema.collations import COLLATIONS_KEY
from ...kernel.schema.evolution import (
    added_fields,
    assign_column_mapping,
    check_unique_names,
    fields_with_metadata,
    max_column_id,
    merge_schemas,
    schema_has_type,
)
from ...kernel.schema.geospatial import schema_has_geospatial
from ...kernel.schema.types import StructField, StructType, schema_to_json
from ...kernel.snapshot import Snapshot
from ..alter.table_properties import split_protocol_requests


# ----------------------------------------------------------------------------- input schema
def normalize_arrow_schema(schema: pa.Schema) -> pa.Schema:
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
            return pa.list_(pa.field("element", typ(t.value_type), t.value_field.nullable, t.value_field.metadata))
        if pa.types.is_list(t):  # element / value metadata kept: a variant's tag is there
            return pa.list_(pa.field("element", typ(t.value_type), t.value_field.nullable, t.value_field.metadata))
        if pa.types.is_struct(t):
            return pa.struct([pa.field(f.name, typ(f.type), f.nullable, f.metadata) for f in t])
        if pa.types.is_map(t):
            return pa.map_(typ(t.key_type), pa.field("value", typ(t.item_type), t.item_field.nullable,
                                                     t.item_field.metadata))
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
    if str(configuration.get("delta.enableVariantShredding", "")).lower() == "true":
        feats.add("variantShredding")  # as delta-spark: the property alone adds it (shredded files need it)
    if schema_has_type(schema, "timestamp_ntz"):
        feats.add("timestampNtz")
    if schema_has_type(schema, "variant"):
        feats.add("variantType")
    if schema_has_geospatial(schema):
        feats.add("geospatial")
    if fields_with_metadata(schema, COLLATIONS_KEY):
        feats.add("collations")  # the accepted name (delta-kernel-rs's default); protocol_for keeps a -preview

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
    preview = current is not None and current.has_feature("collations-preview") \
        and not current.has_feature("collations")
    if "collations" in features and (preview or "collations-preview" in features):
        features = set(features) - {"collations"}  # one collations feature: the one the table (or user) chose
    if "typeWidening" in features and current is not None and current.has_feature("typeWidening-preview") \
            and not current.has_feature("typeWidening"):
        # a table that enabled type widening during its preview keeps that feature (same spec, as delta-spark)
        features = (set(features) - {"typeWidening"}) | {"typeWidening-preview"}
    features = keep_preview_shredding(features, current)
    return minimal_protocol(features, current)


def keep_preview_shredding(features: set[str], current: Protocol | None) -> set[str]:
    """A table with `variantShredding-preview` keeps it when shredding is asked for again (same layout; delta-spark
    adds the stable feature only to tables that have neither)."""
    if "variantShredding" in features and current is not None and current.has_feature("variantShredding-preview") \
            and not current.has_feature("variantShredding"):
        return (set(features) - {"variantShredding"}) | {"variantShredding-preview"}
    return features


def schema_merge_options(configuration: dict[str, str]) -> dict[str, bool]:
    """`merge_schemas` options a table's properties imply (shared by writes and MERGE): type widening only
    with `delta.enableTypeWidening=true` (PROTOCOL.md: writers must reject widening otherwise), restricted to
    Iceberg V2's changes under IcebergCompatV1/V2."""
    def on(key: str) -> bool:
        return str(configuration.get(key, "false")).strip().lower() == "true"

    return {"allow_widening": on("delta.enableTypeWidening"),
            "iceberg_compat": on("delta.enableIcebergCompatV1") or on("delta.enableIcebergCompatV2")}


# ----------------------------------------------------------------------------- metadata
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
                raise SchemaError(f"Partition column {p!r} not found in schema {schema.names}")
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
            "Specified table partitioning does not match table partitioning: expected: "
            f"{list(md.partition_columns)}, got: {list(partition_by)} (partition_by {partition_by} does not match "
            f"the table's partition columns {list(md.partition_columns)})"
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


def with_identity_high_water_marks(md: Metadata, updates: dict[str, int]) -> Metadata:
    """The metadata with identity columns' `delta.identity.highWaterMark` moved to the values written."""
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


__all__ = ["keep_preview_shredding", "normalize_arrow_schema", "plan_metadata", "protocol_for", "required_features",
           "schema_merge_options", "with_identity_high_water_marks"]
