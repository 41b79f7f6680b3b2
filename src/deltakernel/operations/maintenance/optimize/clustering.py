"""Clustered tables (PROTOCOL.md "Clustered Table", writer feature `clustering`; delta-spark's liquid clustering).

What the protocol asks and where it happens:
- the table has the `clustering` and `domainMetadata` writer features and no partition columns;
- the clustering columns are stored in the `delta.clustering` domain as `{"clusteringColumns": [[...], ...]}`,
  each column a list of *physical* path parts (delta-spark's and delta-kernel-rs's shape);
- clustering columns must have statistics: they must be among the columns stats are collected for;
- files written by a clustering run carry `clusteringProvider` (delta-spark's name, `liquid`, so Spark treats
  them as its own clustered files; it may recluster them as it sees fit). We also tag them with the columns
  they were clustered by (`deltakernel.clusteredBy`), so the next OPTIMIZE only clusters new files.
Creating a clustered table: `DeltaTable.create(..., cluster_by=[...])` (`creation_domain`). Clustering itself
is OPTIMIZE on such a table (`optimize/execute.py`: a Z-order by the clustering columns).
Changing the columns: `DeltaTable.alter.cluster_by(columns)` (`alter_clustering`), delta-spark's
`ALTER TABLE ... CLUSTER BY (cols)` / `CLUSTER BY NONE`: a "CLUSTER BY" commit that rewrites the domain (and
makes an unpartitioned, unclustered table clustered); no data is rewritten, the next OPTIMIZE reclusters the
files clustered by other columns (their `deltakernel.clusteredBy` tag no longer matches).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ....errors import DeltaError, SchemaError
from ....kernel.protocol.select import minimal_protocol
from ....kernel.schema.arrow import to_arrow_type
from ....kernel.schema.column_mapping import physical_name
from ....kernel.schema.types import StructType
from ....kernel.stats.collect import stats_schema
from ....kernel.transaction.transaction import Transaction
from .zorder import check_zorder_type

CLUSTERING_DOMAIN = "delta.clustering"
CLUSTERING_FEATURE = "clustering"
CLUSTERING_PROVIDER = "liquid"
CLUSTERED_BY_TAG = "deltakernel.clusteredBy"
#: delta-spark's limit on clustering columns
MAX_CLUSTERING_COLUMNS = 4


def is_clustered(snapshot: Any) -> bool:
    """The table has the `clustering` writer feature (protocol: then it is a clustered table)."""
    return bool(snapshot.protocol.has_feature(CLUSTERING_FEATURE))


def clustering_physical_paths(snapshot: Any) -> list[list[str]]:
    """The `delta.clustering` domain's columns as physical path parts ([] when none or removed)."""
    domain = snapshot.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return []
    try:
        doc = json.loads(domain.configuration or "{}")
    except ValueError as e:
        raise DeltaError(f"the {CLUSTERING_DOMAIN} domain metadata is not valid JSON: {e}") from e
    out: list[list[str]] = []
    for col in doc.get("clusteringColumns") or []:
        out.append([str(p) for p in col] if isinstance(col, list) else str(col).split("."))
    return out


def clustering_columns(snapshot: Any) -> list[str]:
    """The clustering columns by logical name (top-level columns; physical names mapped back)."""
    mode = snapshot.column_mapping_mode
    by_physical = {physical_name(f, mode): f.name for f in snapshot.schema.fields}
    out = []
    for path in clustering_physical_paths(snapshot):
        if len(path) != 1 or path[0] not in by_physical:
            raise DeltaError(f"clustering column {'.'.join(path)!r} is not a top-level column of the table")
        out.append(by_physical[path[0]])
    return out


def validate_clustering_columns(schema: StructType, columns: Sequence[str], partition_columns: Sequence[str],
                                configuration: Mapping[str, str]) -> list[str]:
    """The clustering columns by their schema names; raises SchemaError / DeltaError as delta-spark does."""
    cols = list(columns)
    if not cols:
        raise DeltaError("cluster_by needs at least one column")
    if partition_columns:
        raise DeltaError("a table cannot be both partitioned and clustered (partition_by and cluster_by)")
    if len(cols) > MAX_CLUSTERING_COLUMNS:
        raise DeltaError(f"at most {MAX_CLUSTERING_COLUMNS} clustering columns are allowed, got {len(cols)}")
    names: list[str] = []
    for c in cols:
        if "." in c and not schema.has(c):
            raise DeltaError(f"clustering column {c!r}: only top-level columns can be clustering columns")
        if not schema.has(c):
            raise SchemaError(f"clustering column {c!r} is not in the schema {schema.names}")
        f = schema.field(c)
        check_zorder_type(f.name, to_arrow_type(f.type))
        names.append(f.name)
    lowered = [n.lower() for n in names]
    if len(set(lowered)) != len(lowered):
        raise DeltaError(f"duplicate clustering columns: {cols}")
    with_stats = {fld.name.lower() for fld in stats_schema(schema, dict(configuration), ()).fields}
    missing = [n for n in names if n.lower() not in with_stats]
    if missing:
        raise DeltaError(
            f"clustering column(s) {missing} get no statistics (delta.dataSkippingNumIndexedCols / "
            "delta.dataSkippingStatsColumns); clustering columns need statistics"
        )
    return names


def domain_configuration(schema: StructType, columns: Sequence[str], mode: str) -> str:
    """The `delta.clustering` domain configuration: physical path parts of each column."""
    paths = [[physical_name(schema.field(c), mode)] for c in columns]
    return json.dumps({"clusteringColumns": paths}, separators=(",", ":"))


def creation_domain(metadata: Any, columns: Sequence[str]) -> dict[str, str]:
    """Domain metadata a new clustered table commits (called once the table's metadata is planned)."""
    schema = metadata.schema
    names = validate_clustering_columns(schema, columns, list(metadata.partition_columns),
                                        metadata.configuration)
    mode = metadata.configuration.get("delta.columnMapping.mode", "none")
    return {CLUSTERING_DOMAIN: domain_configuration(schema, names, mode)}


def alter_clustering(storage: Any, snapshot: Any, columns: Sequence[str] | None,
                     custom_metadata: dict[str, Any] | None = None,
                     post_commithook_properties: Any = None) -> int | None:
    """ALTER TABLE ... CLUSTER BY (`columns`) or, with None / [], CLUSTER BY NONE (delta-spark's
    `AlterTableClusterByDeltaCommand`); returns the committed version, None when nothing is to be done.

    - CLUSTER BY NONE on a table that is not clustered does nothing (delta-spark skips it too); on a clustered
      table it commits `{"clusteringColumns": []}`: the table stays clustered, OPTIMIZE then only compacts.
    - CLUSTER BY (cols) checks the columns as at creation (top-level, orderable, with statistics, at most 4,
      table not partitioned); a table without the `clustering` feature gets it (and `domainMetadata`) in the
      same commit.
    - Operation "CLUSTER BY" with delta-spark's parameters `oldClusteringColumns` / `newClusteringColumns`
      (logical names joined by commas). A concurrent change of the domain conflicts (ConcurrentTransactionError).
    """
    cols = list(columns or [])
    clustered = is_clustered(snapshot)
    if not cols and not clustered:
        return None
    md = snapshot.metadata
    names = validate_clustering_columns(md.schema, cols, list(md.partition_columns), md.configuration) if cols \
        else []
    old = clustering_columns(snapshot) if clustered else []
    txn = Transaction(storage, snapshot, operation="CLUSTER BY", operation_parameters={
        "oldClusteringColumns": ",".join(old), "newClusteringColumns": ",".join(names)})
    if custom_metadata:
        txn.extra_commit_info.update(custom_metadata)
    if not clustered:
        txn.update_protocol(minimal_protocol({CLUSTERING_FEATURE}, snapshot.protocol))
    mode = md.configuration.get("delta.columnMapping.mode", "none")
    txn.set_domain_metadata(CLUSTERING_DOMAIN, domain_configuration(md.schema, names, mode))
    return txn.commit(post_commit=getattr(post_commithook_properties, "create_checkpoint", True),
                      cleanup_expired_logs=getattr(post_commithook_properties, "cleanup_expired_logs", None)).version


def clustered_tag(physical_paths: Sequence[Sequence[str]]) -> str:
    return json.dumps([list(p) for p in physical_paths], separators=(",", ":"))


def already_clustered(row: Mapping[str, Any], tag: str) -> bool:
    """A live file clustered by the current columns (and without deletion vector) needs no reclustering."""
    tags = row.get("tags") or {}
    if isinstance(tags, list):  # Arrow map -> list of (key, value)
        tags = dict(tags)
    return tags.get(CLUSTERED_BY_TAG) == tag and not row.get("deletion_vector")


__all__ = ["CLUSTERED_BY_TAG", "CLUSTERING_DOMAIN", "CLUSTERING_FEATURE", "CLUSTERING_PROVIDER",
           "MAX_CLUSTERING_COLUMNS", "alter_clustering", "already_clustered", "clustered_tag", "clustering_columns",
           "clustering_physical_paths", "creation_domain", "domain_configuration", "is_clustered",
           "validate_clustering_columns"]
