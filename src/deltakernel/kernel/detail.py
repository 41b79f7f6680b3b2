"""DESCRIBE DETAIL: one summary of a snapshot, shared by the CLI (`deltakernel detail`) and Spark's
`DeltaTable.detail()`, with delta-spark's field names so both show the same thing."""

from __future__ import annotations

import json
from typing import Any

import pyarrow.compute as pc

from ..errors import DeltaError
from .log.segment import commit_key
from .snapshot import Snapshot

CLUSTERING_DOMAIN = "delta.clustering"


def clustering_columns(snapshot: Snapshot) -> list[str]:
    """Clustering columns from the `delta.clustering` domain (protocol "Clustered Table"), dotted paths."""
    domain = snapshot.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return []
    try:
        doc = json.loads(domain.configuration or "{}")
    except ValueError:
        return []
    return [".".join(str(p) for p in col) if isinstance(col, list) else str(col)
            for col in doc.get("clusteringColumns") or []]


def last_modified_ms(snapshot: Snapshot) -> int | None:
    """The snapshot's commit time: its in-commit timestamp when present, else the commit file's mtime."""
    info = snapshot.commit_infos.get(snapshot.version) or {}
    if info.get("inCommitTimestamp") is not None:
        return int(info["inCommitTimestamp"])
    for meta in reversed(snapshot.segment.commits):
        if meta.key.endswith(f"{snapshot.version:020d}.json"):
            return meta.last_modified_ms
    try:  # the snapshot is a checkpoint with no commit after it in the segment
        return snapshot.storage.head(commit_key(snapshot.version)).last_modified_ms
    except (DeltaError, OSError):
        return None


def table_detail(snapshot: Snapshot) -> dict[str, Any]:
    """delta-spark's DESCRIBE DETAIL row (timestamps in epoch milliseconds) plus deletion-vector statistics."""
    md, proto = snapshot.metadata, snapshot.protocol
    files = snapshot.files
    dv = files.column("deletion_vector")
    with_dv = dv.is_valid()
    n_dv = int(pc.sum(with_dv.cast("int64")).as_py() or 0)
    deleted = int(pc.sum(pc.struct_field(dv, "cardinality")).as_py() or 0) if n_dv else 0
    features = sorted(set(proto.reader_features or ()) | set(proto.writer_features or ()))
    return {
        "format": "delta",
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "location": snapshot.storage.root_uri,
        "createdAt": md.created_time,
        "lastModified": last_modified_ms(snapshot),
        "partitionColumns": list(md.partition_columns),
        "clusteringColumns": clustering_columns(snapshot),
        "numFiles": files.num_rows,
        "sizeInBytes": int(pc.sum(files.column("size")).as_py() or 0),
        "properties": dict(md.configuration),
        "minReaderVersion": proto.min_reader_version,
        "minWriterVersion": proto.min_writer_version,
        "tableFeatures": features,
        "statistics": {"numDeletionVectors": n_dv, "numRowsDeletedByDeletionVectors": deleted},
        "version": snapshot.version,
    }


__all__ = ["CLUSTERING_DOMAIN", "clustering_columns", "last_modified_ms", "table_detail"]
