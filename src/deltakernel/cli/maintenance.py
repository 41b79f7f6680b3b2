"""Commands that change a table: optimize, vacuum, restore, delete.

Destructive ones (vacuum, restore, delete) show what they would do unless `--no-dry-run` is given; every one
prints its metrics for people, or as JSON with `--json`, and draws a progress bar on a terminal where the
operation reports progress.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from ..errors import VacuumRetentionError
from .common import Progress, accepts, add_dry_run_flags, add_json_flag, add_table_arguments, open_table, print_record

_FILTER = re.compile(r"^\s*([^=!<>\s]+)\s*(=|!=|<=|>=|<|>|in|not in)\s*(.*?)\s*$")


def partition_filters(texts: list[str] | None) -> list[tuple[str, str, Any]] | None:
    """`day=2026-11-02`, `n>=3`, `day in a,b` -> deltalake's partition filter tuples."""
    if not texts:
        return None
    from ..errors import InvalidFilterError

    out: list[tuple[str, str, Any]] = []
    for text in texts:
        m = _FILTER.match(text)
        if m is None:
            raise InvalidFilterError(f"partition filter {text!r}: expected COLUMN OP VALUE, e.g. day=2026-11-02")
        col, op, value = m.groups()
        out.append((col, op, [v.strip() for v in value.split(",")] if op in ("in", "not in") else value))
    return out


def _with_progress(fn: Any, kwargs: dict[str, Any], unit: str) -> Any:
    progress = Progress(unit)
    if accepts(fn, "progress"):
        kwargs["progress"] = progress
    try:
        return fn(**kwargs)
    finally:
        progress.close()


def cmd_optimize(args: argparse.Namespace) -> None:
    t = open_table(args)
    kwargs: dict[str, Any] = {"partition_filters": partition_filters(args.partition_filter),
                              "target_size": args.target_size}
    if args.min_commit_interval is not None:
        kwargs["min_commit_interval"] = args.min_commit_interval
    if args.z_order:
        kwargs["columns"] = args.z_order
        metrics = _with_progress(t.optimize.z_order, kwargs, "files")
    else:
        metrics = _with_progress(t.optimize.compact, kwargs, "files")
    print_record({"version": t.version(), **metrics}, args.json)


def cmd_vacuum(args: argparse.Namespace) -> None:
    t = open_table(args)
    kwargs: dict[str, Any] = {"retention_hours": args.retention_hours, "dry_run": args.dry_run,
                              "enforce_retention_duration": not args.no_enforce_retention, "full": args.full,
                              "min_unreferenced_age_hours": args.min_unreferenced_age_hours}
    try:
        files = _with_progress(t.vacuum, kwargs, "deleted")
    except VacuumRetentionError as e:
        raise _retention_error(t, args.retention_hours, e) from e
    record = {"dry_run": args.dry_run, "num_files": len(files), "files": list(files)}
    if not args.json:
        shown = list(files[:20])
        record = {"dry_run": args.dry_run,
                  ("files that would be deleted" if args.dry_run else "files deleted"): len(files)}
        print_record(record, False)
        for f in shown:
            print(f"  {f}")
        if len(files) > len(shown):
            print(f"  ... and {len(files) - len(shown)} more (--json lists all)")
        if args.dry_run and files:
            print("dry run: nothing deleted; run again with --no-dry-run to delete these files")
        return
    print_record(record, True)


def _retention_error(t: Any, hours: float | None, error: VacuumRetentionError) -> Exception:
    """The API's retention error names its keyword argument; people at a shell need the CLI's flags."""
    from ..operations.maintenance.vacuum import HOUR_MS, RETENTION_PROPERTY, retention_ms

    if hours is None:
        return error
    if hours < 0:
        return VacuumRetentionError(f"--retention-hours must be >= 0, got {hours:g}")
    table_ms = retention_ms(t.snapshot, None, False)[1]
    if hours * HOUR_MS >= table_ms:
        return error
    return VacuumRetentionError(
        f"--retention-hours {hours:g} is shorter than the table's {RETENTION_PROPERTY} ({table_ms / HOUR_MS:g} "
        "hours): files still needed by time travel or by concurrent readers and writers could be deleted. "
        f"Pass --no-enforce-retention to override, or lower {RETENTION_PROPERTY}."
    )


def _restore_plan(t: Any, target: int | str) -> dict[str, Any]:
    """What a restore would change: files of the target version missing now, and files live now but not then."""
    import pyarrow.compute as pc

    from ..table import DeltaTable

    then = DeltaTable(t.table_uri, storage_options=getattr(t, "_storage_options", None))
    then.load_as_version(target)  # as restore() itself resolves it
    now_paths, then_paths = t.snapshot.files.column("path"), then.snapshot.files.column("path")
    return {"current_version": t.version(), "restore_to_version": then.version(),
            "files_to_restore": int(pc.sum(pc.invert(pc.is_in(then_paths, now_paths))).as_py() or 0),
            "files_to_remove": int(pc.sum(pc.invert(pc.is_in(now_paths, then_paths))).as_py() or 0)}


def cmd_restore(args: argparse.Namespace) -> None:
    t = open_table(args)
    target: int | str = int(args.target) if args.target.lstrip("-").isdigit() else args.target
    if args.dry_run:
        record = {"dry_run": True, **_restore_plan(t, target)}
        print_record(record, args.json)
        if not args.json:
            print("dry run: nothing committed; run again with --no-dry-run to restore")
        return
    metrics = t.restore(target, ignore_missing_files=args.ignore_missing_files)
    print_record({"dry_run": False, "version": t.version(), **metrics}, args.json)


def _matching_rows(t: Any, predicate: str | None) -> dict[str, int]:
    """Rows and files a DELETE would touch, found exactly as DELETE finds them (nothing written)."""
    from ..operations.dml.touched_rows import candidate_files, find_touched_rows, plan_predicate

    class _NoReadSet:
        def read_whole_table(self) -> None: ...

        def read_predicate(self, _predicate: Any) -> None: ...

    snapshot = t.snapshot
    pred = plan_predicate(predicate, snapshot)
    files = candidate_files(snapshot, pred, _NoReadSet()).to_pylist()
    rows = touched = 0
    for tf in find_touched_rows(snapshot, pred, files):
        rows += int(tf.matched.size)
        touched += 1
    return {"rows_to_delete": rows, "files_touched": touched}


def cmd_delete(args: argparse.Namespace) -> None:
    t = open_table(args)
    if args.dry_run:
        record = {"dry_run": True, "version": t.version(), **_matching_rows(t, args.predicate)}
        print_record(record, args.json)
        if not args.json:
            print("dry run: nothing deleted; run again with --no-dry-run to delete these rows")
        return
    metrics = t.delete(args.predicate)
    print_record({"dry_run": False, "version": t.version(), **metrics}, args.json)


def register(sub: Any) -> None:
    sp = sub.add_parser("optimize", help="compact small files (or Z-order them with --z-order)")
    add_table_arguments(sp, time_travel=False)
    sp.add_argument("--z-order", "-z", nargs="+", metavar="COLUMN", help="Z-order by these columns")
    sp.add_argument("--target-size", type=int, metavar="BYTES", help="target file size (default: the table's)")
    sp.add_argument("--partition-filter", "-p", action="append", metavar="FILTER",
                    help="only these partitions, e.g. day=2026-11-02 (repeatable)")
    sp.add_argument("--min-commit-interval", type=int, metavar="SECONDS", help="commit every N seconds")
    add_json_flag(sp)
    sp.set_defaults(fn=cmd_optimize)

    sp = sub.add_parser("vacuum", help="delete files no longer referenced (dry run unless --no-dry-run)")
    add_table_arguments(sp, time_travel=False)
    sp.add_argument("--retention-hours", type=int, help="default: the table's delta.deletedFileRetentionDuration")
    sp.add_argument("--full", action="store_true", help="list storage for orphans too (not only the log)")
    sp.add_argument("--no-enforce-retention", action="store_true",
                    help="allow a retention shorter than the table's (unsafe with concurrent writers)")
    sp.add_argument("--min-unreferenced-age-hours", type=float, metavar="HOURS",
                    help="with --full: delete files no log entry names (maybe a writer's uncommitted data) only "
                         "once this old (default: the table's deltakernel.vacuum.minUnreferencedFileAge, else 1)")
    add_dry_run_flags(sp)
    add_json_flag(sp)
    sp.set_defaults(fn=cmd_vacuum)

    sp = sub.add_parser("restore", help="restore the table to an earlier version (dry run unless --no-dry-run)")
    add_table_arguments(sp, time_travel=False)
    sp.add_argument("target", help="version number or ISO-8601 timestamp")
    sp.add_argument("--ignore-missing-files", action="store_true")
    add_dry_run_flags(sp)
    add_json_flag(sp)
    sp.set_defaults(fn=cmd_restore)

    sp = sub.add_parser("delete", help="delete rows matching a SQL predicate (dry run unless --no-dry-run)")
    add_table_arguments(sp, time_travel=False)
    sp.add_argument("predicate", nargs="?", help="Spark SQL predicate; every row when omitted")
    add_dry_run_flags(sp)
    add_json_flag(sp)
    sp.set_defaults(fn=cmd_delete)


__all__ = ["partition_filters", "register"]
