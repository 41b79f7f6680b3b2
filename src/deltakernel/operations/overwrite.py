"""What an overwrite removes: everything, the partitions written (dynamic), or what a replaceWhere
predicate matches — rewriting files that match only in part, without the matched rows."""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..kernel.schema.column_mapping import physical_name
from ..kernel.snapshot import Snapshot
from ..kernel.transaction import Transaction as KernelTransaction
from ..storage import Storage

_FILE_COLUMNS = ["path", "size", "partition_values", "deletion_vector", "base_row_id",
                 "default_row_commit_version", "tags", "stats"]


def remove_action(row: dict[str, Any], now: int, data_change: bool = True) -> dict[str, Any]:
    pv = row.get("partition_values") or {}
    out: dict[str, Any] = {
        "path": row["path"],
        "deletionTimestamp": now,
        "dataChange": data_change,
        "extendedFileMetadata": True,
        "partitionValues": dict(pv),
        "size": row["size"],
    }
    if row.get("deletion_vector"):
        out["deletionVector"] = {k: v for k, v in row["deletion_vector"].items() if v is not None}
    if row.get("base_row_id") is not None:
        out["baseRowId"] = row["base_row_id"]
    if row.get("default_row_commit_version") is not None:
        out["defaultRowCommitVersion"] = row["default_row_commit_version"]
    if row.get("tags"):
        out["tags"] = dict(row["tags"])
    if row.get("stats"):
        out["stats"] = row["stats"]
    return out


def plan_overwrite(
    txn: KernelTransaction,
    snapshot: Snapshot,
    adds: list[dict[str, Any]],
    predicate: str | None,
    sql_pred: Any,
    partition_overwrite_mode: str,
    storage: Storage,
    writer_properties: Any,
) -> None:
    """Which live files the overwrite removes (and, for data predicates, which it rewrites)."""
    now = int(time.time() * 1000)
    files = snapshot.files
    if predicate is None and partition_overwrite_mode == "dynamic" and snapshot.partition_columns:
        written = {tuple(sorted((a.get("partitionValues") or {}).items())) for a in adds}
        rows = files.select(_FILE_COLUMNS).to_pylist()
        victims = [r for r in rows if tuple(sorted((r["partition_values"] or {}).items())) in written]
        txn.read_files([r["path"] for r in victims])
        txn.read_predicate(_partition_set_predicate(snapshot, written))
        txn.remove_files([remove_action(r, now) for r in victims])
        txn.operation_parameters["partitionOverwriteMode"] = "dynamic"
        return
    if predicate is None:
        txn.read_whole_table()
        rows = files.select(_FILE_COLUMNS).to_pylist()
        txn.remove_files([remove_action(r, now) for r in rows])
        return
    from ..kernel.scan import Scan
    from ..kernel.sql import evaluate, referenced_columns, to_predicate

    kpred = to_predicate(sql_pred, snapshot.schema)
    scan = Scan(snapshot, predicate=kpred) if kpred is not None else Scan(snapshot)
    candidates = scan.plan()
    if kpred is not None:
        txn.read_predicate(kpred)
    else:
        txn.read_whole_table()
    cols = {c[0].lower() if isinstance(c, tuple) else str(c).lower() for c in referenced_columns(sql_pred)}
    parts = {p.lower() for p in snapshot.partition_columns}
    rows = candidates.select(_FILE_COLUMNS).to_pylist()
    txn.read_files([r["path"] for r in rows])
    if cols <= parts and kpred is not None:
        txn.remove_files([remove_action(r, now) for r in rows])
        return
    # data predicate: files fully matched are removed, partly matched ones rewritten without the matches
    from .file_writer import write_data_files

    reader = Scan(snapshot)
    keep_batches: list[pa.RecordBatch] = []
    for r in rows:
        data = reader.read_file({"path": r["path"], "partition_values": r["partition_values"],
                                 "deletion_vector": r["deletion_vector"], "size": r["size"]})
        if data.num_rows == 0:
            txn.remove_files([remove_action(r, now)])
            continue
        match = pc.fill_null(evaluate(sql_pred, data), False)
        n_match = pc.sum(match.cast(pa.int64())).as_py() or 0
        if n_match == 0:
            continue
        txn.remove_files([remove_action(r, now)])
        if n_match < data.num_rows:
            keep_batches += data.filter(pc.invert(match)).to_batches()
    if keep_batches:
        rewritten = write_data_files(
            storage, iter(keep_batches), schema=snapshot.schema,
            partition_columns=list(snapshot.partition_columns),
            column_mapping_mode=snapshot.column_mapping_mode, configuration=snapshot.configuration,
            writer_properties=writer_properties,
        )
        txn.add_files(rewritten)


def _partition_set_predicate(snapshot: Snapshot, written: set[tuple[tuple[str, Any], ...]]) -> Any:
    """A kernel predicate matching exactly the written partitions (for conflict detection)."""
    from ..kernel.expressions import And, Column, Comparison, IsNull, Literal, Or
    from ..kernel.partition_values import parse_partition_value

    by_phys = {physical_name(f, snapshot.column_mapping_mode): f for f in snapshot.partition_fields}
    ors = []
    for combo in written:
        conj = []
        for phys, raw in combo:
            f = by_phys.get(phys)
            if f is None:
                continue
            v = parse_partition_value(raw, f.type)
            conj.append(IsNull(Column((f.name,))) if v is None else Comparison("=", Column((f.name,)), Literal(v)))
        if conj:
            ors.append(And(*conj) if len(conj) > 1 else conj[0])
    if not ors:
        from ..kernel.expressions import AlwaysFalse

        return AlwaysFalse()
    return Or(*ors) if len(ors) > 1 else ors[0]
