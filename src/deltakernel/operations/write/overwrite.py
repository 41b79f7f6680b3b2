"""What an overwrite removes: everything, the partitions written (dynamic), or what a replaceWhere
predicate matches — rewriting files that match only in part, without the matched rows.

A replaceWhere on data columns is a delete of the matched rows plus an insert, as in delta-spark
(`WriteIntoDelta` runs a DELETE): with change data feed on and rows deleted, the commit carries `cdc` files
with every change — the deleted rows (of partly and fully matched files) as `delete`, all written rows as
`insert` — so rows carried over unchanged never show up as changes. Carried-over rows keep their row ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.log.action_types import AddAction
from ...kernel.schema.column_mapping import physical_name
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...storage import Storage
from ..dml.rewrite import FILE_COLUMNS as _FILE_COLUMNS
from ..dml.rewrite import FileChange, Rewriter, read_written, remove_action, row_tracking_configuration
from ..files.change_data import ChangeDataWriter


def plan_overwrite(
    txn: KernelTransaction,
    snapshot: Snapshot,
    adds: list[AddAction],
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
    from ...kernel.expressions.sql import referenced_columns, to_predicate
    from ...kernel.scan.scan import Scan

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
    _rewrite_matching(txn, snapshot, adds, rows, sql_pred, storage, writer_properties, now)


def _rewrite_matching(txn: KernelTransaction, snapshot: Snapshot, adds: list[AddAction],
                      rows: list[dict[str, Any]], sql_pred: Any, storage: Storage, writer_properties: Any,
                      now: int) -> None:
    """Data predicate: fully matched files are removed, partly matched ones rewritten without the matches."""
    from ...sqleval import evaluate

    configuration = row_tracking_configuration(txn)
    md = txn.metadata
    cdc = ChangeDataWriter.for_commit(storage, md, snapshot.column_mapping_mode, configuration, writer_properties)
    rewriter = Rewriter(snapshot, storage, configuration=configuration, now=now,
                        writer_properties=writer_properties, change_data=cdc)

    def changes() -> Iterator[FileChange]:
        for r in rows:
            data = rewriter.read(r)
            match = pc.fill_null(evaluate(sql_pred, data), False) if data.num_rows else pa.array([], pa.bool_())
            yield FileChange(r, data, match)

    try:
        result = rewriter.rewrite(changes())
        txn.remove_files(result.removes)
        txn.add_files(result.adds)
        txn.operation_metrics.update({"numDeletedRows": result.removed_rows, "numCopiedRows": result.copied_rows})
        if rewriter.row_tracking:
            txn.set_commit_tag("delta.rowTracking.preserved", "true")
        if cdc is not None and result.removed_rows:
            # once a commit has cdc files readers ignore its add/remove actions: record every inserted row too
            for table in read_written(storage, adds, md.schema, list(md.partition_columns),
                                      snapshot.column_mapping_mode, snapshot.version):
                cdc.add(table, "insert")
            cdc.commit_into(txn)
    except BaseException:
        rewriter.abort()
        if cdc is not None:
            cdc.abort()
        raise


def _partition_set_predicate(snapshot: Snapshot, written: set[tuple[tuple[str, Any], ...]]) -> Any:
    """A kernel predicate matching exactly the written partitions (for conflict detection)."""
    from ...kernel.expressions.predicate import And, Column, Comparison, IsNull, Literal, Or
    from ...kernel.scan.partition_values import parse_partition_value

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
        from ...kernel.expressions.predicate import AlwaysFalse

        return AlwaysFalse()
    return Or(*ors) if len(ors) > 1 else ors[0]
