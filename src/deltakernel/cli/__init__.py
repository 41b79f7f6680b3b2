"""`deltakernel` command line: read a table (info, inspect, detail, history, files, schema, head, count), maintain it
(optimize, vacuum, restore, delete: dry run by default where destructive), and `sql`.

Output is for people (aligned `key  value` lines, tables) unless `--json` asks for JSON for scripts; long
operations draw a progress bar (tqdm) on a terminal.

Failures print one `error: <kind>: <message>` line on stderr and exit 1 (set DELTAKERNEL_TRACEBACK=1 for
the traceback): a command line tool's user wants the reason, not our stack.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import maintenance, read_commands


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="deltakernel", description="Read, change and maintain Delta Lake tables.")
    p.add_argument("--version", action="version", version=f"%(prog)s {_package_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    read_commands.register(sub)
    maintenance.register(sub)
    try:  # `sql` needs the optional datafusion extra
        from ..datafusion.cli import add_parser as add_sql_parser
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
        from .. import __version__

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
