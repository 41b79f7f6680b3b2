"""`deltakernel` command line: inspect a Delta table (info, history, files, schema, head, count), and `sql`.

Failures print one `error: <kind>: <message>` line on stderr and exit 1 (set DELTAKERNEL_TRACEBACK=1 for
the traceback): a command line tool's user wants the reason, not our stack.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from .kernel.log.time_travel import format_timestamp_ms

TIMESTAMP_KEYS = ("timestamp", "inCommitTimestamp")  # commitInfo fields in epoch ms, shown as ISO-8601


def _open(args: argparse.Namespace) -> Any:
    from .storage import option_pairs
    from .table import DeltaTable

    table = DeltaTable(args.table, storage_options=option_pairs(args.storage_option))
    if args.version is not None:
        table.load_as_version(int(args.version) if args.version.lstrip("-").isdigit() else args.version)
    return table


class _Progress:
    """A one-line progress bar on `stream` (a terminal only) for long scans: files read / total.

    `close()` ends the line when the bar was drawn but not completed (e.g. `head` stops reading early), so
    what is printed next starts on a line of its own.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.open_line = False

    def __call__(self, done: int, total: int) -> None:
        if not self.stream.isatty():
            return
        width = 30
        filled = int(width * done / max(total, 1))
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        self.open_line = done != total
        if not self.open_line:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False


def cmd_info(args: argparse.Namespace) -> None:
    t = _open(args)
    md, proto = t.metadata(), t.protocol()
    info = {
        "uri": t.table_uri,
        "version": t.version(),
        "id": md.id,
        "name": md.name,
        "description": md.description,
        "partition_columns": list(md.partition_columns),
        "num_files": t.snapshot.num_files,
        "min_reader_version": proto.min_reader_version,
        "min_writer_version": proto.min_writer_version,
        "reader_features": sorted(proto.reader_features) if proto.reader_features is not None else None,
        "writer_features": sorted(proto.writer_features) if proto.writer_features is not None else None,
        "configuration": md.configuration,
    }
    print(json.dumps(info, indent=2))


def cmd_history(args: argparse.Namespace) -> None:
    t = _open(args)
    for entry in t.history(limit=args.limit):
        shown = {k: format_timestamp_ms(v) if k in TIMESTAMP_KEYS and isinstance(v, int) else v
                 for k, v in entry.items()}
        print(json.dumps(shown, default=str))


def cmd_files(args: argparse.Namespace) -> None:
    t = _open(args)
    for uri in t.file_uris():
        print(uri)


def cmd_schema(args: argparse.Namespace) -> None:
    t = _open(args)
    if args.json:
        print(json.dumps(t.schema().to_json(), indent=2))
    else:
        from .kernel.schema.arrow import to_arrow_schema

        print(to_arrow_schema(t.schema(), include_metadata=False))


def cmd_head(args: argparse.Namespace) -> None:
    import pyarrow as pa

    t = _open(args)
    batches = []
    rows = 0
    progress = _Progress(sys.stderr)
    try:
        for batch in t.scan(columns=args.columns, progress=progress).to_batches():
            batches.append(batch)
            rows += batch.num_rows
            if rows >= args.n:
                break
    finally:
        progress.close()  # the bar's line ends before the rows are printed
    table = pa.Table.from_batches(batches, schema=t.scan(columns=args.columns).arrow_schema).slice(0, args.n)
    try:
        print(table.to_pandas().to_string())
    except ImportError:
        print(table.to_string(preview_cols=20))


def cmd_count(args: argparse.Namespace) -> None:
    print(_open(args).count())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="deltakernel", description="Inspect Delta Lake tables.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Any, help_: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_)
        sp.add_argument("table", help="table URI (local path, file://, s3://, gs://, az://)")
        sp.add_argument("--version", "-v", help="version number or ISO-8601 timestamp (time travel)")
        sp.add_argument("--storage-option", "-o", action="append", metavar="KEY=VALUE",
                        help="storage option, e.g. AWS_ENDPOINT_URL=http://127.0.0.1:9000")
        sp.set_defaults(fn=fn)
        return sp

    add("info", cmd_info, "version, protocol, metadata")
    add("history", cmd_history, "commit history, newest first").add_argument("--limit", type=int)
    add("files", cmd_files, "URIs of the live data files")
    add("schema", cmd_schema, "the table schema").add_argument("--json", action="store_true")
    h = add("head", cmd_head, "first rows")
    h.add_argument("-n", type=int, default=10)
    h.add_argument("--columns", "-c", nargs="*")
    add("count", cmd_count, "number of rows")
    try:  # `sql` needs the optional datafusion extra
        from .datafusion.cli import add_parser as add_sql_parser
    except ImportError:
        pass
    else:
        add_sql_parser(sub)
    return p


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("deltakernel")
    except Exception:  # not installed (source tree on sys.path): the package's own constant
        from . import __version__

        return __version__


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.fn(args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # DeltaError, and whatever a library below raised (pyarrow, DataFusion, OS)
        if os.environ.get("DELTAKERNEL_TRACEBACK"):
            raise
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
