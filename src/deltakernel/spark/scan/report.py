"""What each Delta scan of a query reads: files kept by skipping, of how many (explain, tests, benchmarks).

`scan_report(df)` walks the DataFrame's physical plan (through adaptive execution and query stages) to every
Spark file scan whose index is a `DeltaFileIndex`. A scan not yet planned is listed now (Spark's
`selectedPartitions`, the same listing execution uses, computed once per scan), so an `explain()` before any
action shows the files kept in the scan's `Location`. After an action, `files_read` is Spark's own
"number of files read" metric of the scan.

Over Spark Connect there is no JVM plan to walk: the report reads the physical plan's text (each Parquet scan's
`InMemoryFileIndex(N paths)[<first file>...]`) and matches the first file to the Delta tables this process
planned (`connect_scan_report`; `public_plan.py` notes each table it plans); `files_read` is None there.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ...kernel.snapshot import Snapshot
from .file_index import DeltaFileIndex, find
from .paths import file_uri


@dataclass(frozen=True)
class ScanReport:
    table: str  # root URI of the table
    version: int
    files_total: int  # files of the snapshot the scan could read
    files_kept: int  # files left after partition pruning and statistics skipping
    files_read: int | None  # Spark's numFiles metric (None before the query ran)


def _plan_nodes(jvm: Any, plan: Any) -> list[Any]:
    """Every physical node once, descending into adaptive plans, query stages and subqueries."""
    out: list[Any] = []
    stack = [plan]
    seen: set[int] = set()
    identity = jvm.java.lang.System.identityHashCode
    while stack:
        node = stack.pop()
        key = int(identity(node))
        if key in seen:
            continue
        seen.add(key)
        out.append(node)
        kind = str(node.getClass().getSimpleName())
        nested = ["children", "subqueries"]
        single = {"AdaptiveSparkPlanExec": "executedPlan", "ReusedExchangeExec": "child"}.get(kind)
        if single is None and kind.endswith("QueryStageExec"):
            single = "plan"
        if single is not None:
            try:
                stack.append(getattr(node, single)())
            except Exception:
                pass
        for getter in nested:
            try:
                seq = getattr(node, getter)()
                stack.extend(seq.apply(i) for i in range(int(seq.size())))
            except Exception:
                pass
    return out


def delta_scans(df: Any) -> list[tuple[Any, DeltaFileIndex]]:
    """(Spark scan node, our index) for every Delta scan in `df`'s physical plan."""
    plan = df._jdf.queryExecution().executedPlan()
    out = []
    for node in _plan_nodes(df.sparkSession._jvm, plan):
        if str(node.getClass().getSimpleName()) != "FileSourceScanExec":
            continue
        index = find(node.relation().location())
        if index is not None:
            out.append((node, index))
    return out


def classic_scan_report(df: Any, list_files: bool) -> list[ScanReport]:
    """`scan_report` on a classic session: the executed (or planned) physical plan's Delta scans."""
    reports = []
    for node, index in delta_scans(df):
        kept = int(node.selectedPartitions().totalNumberOfFiles()) if list_files else -1
        read: int | None
        try:
            metric = node.metrics().get("numFiles")
            read = int(metric.get().value()) if metric.isDefined() else None
        except Exception:
            read = None
        reports.append(ScanReport(index.snapshot.storage.root_uri, index.snapshot.version, index.files.num_rows,
                                  kept, read))
    return reports


#: file URI prefix of a table root -> (root URI, version, files), most recently planned last; bounded (a session
#: that runs for days plans many tables)
_PLANNED: OrderedDict[str, tuple[str, int, int]] = OrderedDict()
_PLANNED_MAX = 256
_planned_lock = threading.Lock()
_SCAN_RE = re.compile(r"FileScan parquet .*?Location: InMemoryFileIndex\((\d+) paths?\)\[([^,\]\n]*)")
#: Spark abbreviates a scan's metadata strings (its Location: the first file's path) to this conf's length
#: (default 100) - a table root longer than that would not be recognized in the plan text
_METADATA_LENGTH = "spark.sql.maxMetadataStringLength"


def note_scan(storage: Any, snapshot: Snapshot) -> None:
    """Remember which table a scan's files belong to (for `connect_scan_report`)."""
    with _planned_lock:
        key = file_uri(storage, "x")[:-1]
        _PLANNED[key] = (storage.root_uri, snapshot.version, snapshot.num_files)
        _PLANNED.move_to_end(key)
        while len(_PLANNED) > _PLANNED_MAX:
            _PLANNED.popitem(last=False)


def _physical_plan_text(df: Any) -> str:
    """The query's physical plan as text, with file paths unabbreviated."""
    from ..common.confs import get_confs, set_confs

    spark = df.sparkSession
    before = get_confs(spark, [_METADATA_LENGTH])[_METADATA_LENGTH]
    set_confs(spark, {_METADATA_LENGTH: "8192"})
    try:
        return str(df._explain_string(extended=False))
    finally:
        set_confs(spark, {_METADATA_LENGTH: before})


def connect_scan_report(df: Any) -> list[ScanReport]:
    """`scan_report` over Spark Connect: one entry per Parquet scan of a Delta table planned here, from the
    physical plan's text (files kept = the scan's path count; tables whose files were all skipped have no scan)."""
    text = _physical_plan_text(df)
    with _planned_lock:
        planned = dict(_PLANNED)
    out = []
    for count, first in _SCAN_RE.findall(text):
        roots = [r for r in planned if first.startswith(r)]
        if not roots:
            continue
        root, version, total = planned[max(roots, key=len)]
        out.append(ScanReport(root, version, total, int(count), None))
    return out


__all__ = ["ScanReport", "classic_scan_report", "connect_scan_report", "delta_scans", "note_scan"]
