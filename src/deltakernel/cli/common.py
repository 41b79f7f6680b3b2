"""What every `deltakernel` subcommand shares: opening the table, the progress bar, output for people or `--json`."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..kernel.log.time_travel import format_timestamp_ms

TIMESTAMP_KEYS = ("timestamp", "inCommitTimestamp", "createdAt", "lastModified")  # epoch ms, shown as ISO-8601


def add_table_arguments(sp: argparse.ArgumentParser, time_travel: bool = True) -> None:
    sp.add_argument("table", help="table URI (local path, file://, s3://, gs://, az://) or a Unity Catalog table "
                    "name uc://catalog.schema.table (DATABRICKS_HOST / DATABRICKS_TOKEN or UNITY_CATALOG_URL / "
                    "UNITY_CATALOG_TOKEN in the environment or as -o options)")
    if time_travel:
        sp.add_argument("--version", "-v", help="version number or ISO-8601 timestamp (time travel)")
    sp.add_argument("--storage-option", "-o", action="append", metavar="KEY=VALUE",
                    help="storage option, e.g. AWS_ENDPOINT_URL=http://127.0.0.1:9000")


def add_json_flag(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--json", action="store_true", help="machine-readable JSON output (for scripts)")


def add_dry_run_flags(sp: argparse.ArgumentParser) -> None:
    """Destructive commands only show what they would do unless `--no-dry-run` is given."""
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--dry-run", dest="dry_run", action="store_true", default=True,
                       help="only show what would change (the default)")
    group.add_argument("--no-dry-run", dest="dry_run", action="store_false", help="make the change")


def open_table(args: argparse.Namespace) -> Any:
    from ..storage import option_pairs
    from ..table import DeltaTable

    table = DeltaTable(args.table, storage_options=option_pairs(args.storage_option))
    version = getattr(args, "version", None)
    if version is not None:
        table.load_as_version(int(version) if version.lstrip("-").isdigit() else version, strict=True)
    return table


class Progress:
    """A progress bar (tqdm) on stderr, drawn only on a terminal; a `progress(done, total)` callback.

    `close()` ends the bar's line when it was left incomplete (e.g. `head` stops reading early), so what is
    printed next starts on a line of its own.
    """

    def __init__(self, unit: str = "files", stream: Any = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.unit = unit
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.stream.isatty():
            return
        if self.bar is None:
            from tqdm import tqdm

            columns, lines = _size(self.stream)
            self.bar = tqdm(total=total, file=self.stream, ascii=".#", leave=True, ncols=columns, nrows=lines,
                            bar_format="{elapsed} [{bar:30}] {n_fmt}/{total_fmt} " + self.unit)
        if total != self.bar.total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _size(stream: Any) -> tuple[int, int]:
    """The terminal's columns and lines; 80x24 where it reports none (a fresh pty says 0x0, and tqdm then draws
    nothing: it treats line 0 as below the screen's last line)."""
    import os

    try:
        size = os.get_terminal_size(stream.fileno())
        return size.columns or 80, size.lines or 24
    except (OSError, AttributeError, ValueError):
        return 80, 24


def jsonable(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return value


def with_iso_timestamps(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: format_timestamp_ms(v) if k in TIMESTAMP_KEYS and isinstance(v, int) else v for k, v in entry.items()}


def _short(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(jsonable(value), default=str, separators=(", ", ": "))
    return "" if value is None else str(value)


def print_record(record: Mapping[str, Any], as_json: bool) -> None:
    """One object: indented JSON, or aligned `key  value` lines for people."""
    if as_json:
        print(json.dumps(jsonable(record), indent=2, default=str))
        return
    width = max((len(str(k)) for k in record), default=0)
    for k, v in record.items():
        print(f"{str(k).ljust(width)}  {_short(v)}")


def print_rows(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], as_json: bool,
               render: Callable[[str, Any], str] | None = None) -> None:
    """Many objects: one JSON document (an array, as `detail --json` prints one object), or a plain aligned
    table of `columns` for people."""
    if as_json:
        print(json.dumps([jsonable(row) for row in rows], indent=2, default=str))
        return
    show = render or (lambda _k, v: _short(v))
    cells = [[show(c, row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())


def accepts(fn: Callable[..., Any], name: str) -> bool:
    """Whether `fn` takes keyword `name` (e.g. `progress`), so the CLI passes it only where supported."""
    import inspect

    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
