"""`deltakernel sql "<query>" --table name=uri[@version] ...`: SQL over Delta tables in DataFusion.

Queries may also use `delta_scan('uri', version)` and `delta_changes('uri', start, end)` (the change feed).
Delta DML in Spark SQL syntax (`INSERT INTO|OVERWRITE`, `DELETE FROM`, `UPDATE`, `MERGE INTO`) on the
`--table` / `--catalog` / `STORED AS DELTA` tables runs through `dml.py` and prints its metrics row like a
query result; the following statements of the same script see the new version.

Kept here (not in `deltakernel.cli`) so the base CLI imports nothing from datafusion until `sql` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import pyarrow as pa

from ..errors import DeltaError
from . import row_filters


def split_statements(text: str) -> list[str]:
    """Split on `;` outside quotes and `--` comments (a script may hold DDL then a query)."""
    out, cur, quote, i = [], [], "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
            cur.append(ch)
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j
            continue
        elif ch == ";":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _cell(value: Any, width: int) -> str:
    text = "NULL" if value is None else str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def format_table(table: pa.Table, max_rows: int = 100, max_width: int = 40) -> str:
    """A psql-like box of the first `max_rows` rows (no pandas needed)."""
    names = table.column_names
    shown = table.slice(0, max_rows).to_pylist()
    rows = [[_cell(r[n], max_width) for n in names] for r in shown]
    widths = [max([len(n)] + [len(r[i]) for r in rows]) for i, n in enumerate(names)]
    numeric = [pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
               for t in table.schema.types]

    def line(cells: list[str], align: bool = True) -> str:
        parts = [c.rjust(w) if align and num else c.ljust(w) for c, w, num in zip(cells, widths, numeric)]
        return "| " + " | ".join(parts) + " |"

    sep = "+-" + "-+-".join("-" * w for w in widths) + "-+"
    out = [sep, line(names, align=False), sep, *(line(r) for r in rows), sep]
    more = table.num_rows - len(shown)
    out.append(f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}"
               + (f", {more} not shown" if more > 0 else "") + ")")
    return "\n".join(out)


def _parse_table_arg(spec: str) -> tuple[str, str, int | str | None]:
    if "=" not in spec:
        raise DeltaError(f"--table wants name=uri[@version], got {spec!r}")
    name, uri = spec.split("=", 1)
    version: int | str | None = None
    if "@" in uri and not uri.rsplit("@", 1)[1].count("/"):
        uri, v = uri.rsplit("@", 1)
        version = int(v) if v.lstrip("-").isdigit() else v
    return name.strip(), uri, version


class SqlError(DeltaError):
    """A statement DataFusion could not parse, plan or run (the CLI prints it as `error: ...`)."""


def _execute(ctx: Any, statement: str) -> pa.Table:
    """Run one statement; DataFusion's own exceptions (plain ValueError/Exception) become `SqlError`."""
    try:
        return row_filters.query(ctx, statement).to_arrow_table()  # ctx.sql; row filters per table
    except DeltaError:
        raise
    except Exception as e:
        from .sql_tables import udtf_error

        original = udtf_error(e)
        if original is not None:  # delta_scan / delta_changes raised it: keep its type and message
            raise original from e
        first_line = statement.strip().splitlines()[0] if statement.strip() else ""
        where = first_line if len(first_line) <= 60 else first_line[:59] + "…"
        raise SqlError(f"{e} (in: {where})") from e


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_list_view(t) or pa.types.is_large_list_view(t) or pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, _plain_type(t.value_type), t.value_field.nullable))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, _plain_type(t.value_type), t.value_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _plain_type(f.type), f.nullable) for f in t])
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, _plain_type(t.value_type))
    return t


def without_views(table: pa.Table) -> pa.Table:
    """The table with string_view/binary_view (DataFusion's default string type) cast to string/binary:
    pyarrow's CSV writer does not support view types."""
    target = pa.schema([pa.field(f.name, _plain_type(f.type), f.nullable) for f in table.schema])
    return table if target.equals(table.schema) else table.cast(target)


def run(args: argparse.Namespace) -> None:
    """The `sql` subcommand (wired in `deltakernel.cli`)."""
    from ..storage import option_pairs
    from . import register, register_catalog, session_context
    from .dml import execute_dml

    options = option_pairs(args.storage_option)
    ctx = session_context(storage_options=options)
    for spec in args.table or []:
        name, uri, version = _parse_table_arg(spec)
        register(ctx, name, uri, version=version, storage_options=options)
    for spec in args.catalog or []:
        name, sep, uri = spec.partition("=")
        if not sep or not name.strip():
            raise DeltaError(f"--catalog wants NAME=DIR, got {spec!r}")
        register_catalog(ctx, name.strip(), uri, options)
    for statement in split_statements(args.query):
        start = time.perf_counter()
        dml_result = execute_dml(ctx, statement)  # None: not Delta DML
        result = dml_result if dml_result is not None else _execute(ctx, statement)
        elapsed = time.perf_counter() - start
        if result.num_columns == 0:
            continue
        if args.format == "csv":
            import pyarrow.csv as pacsv

            pacsv.write_csv(without_views(result), sys.stdout.buffer)
            sys.stdout.flush()
        elif args.format == "json":
            import json

            for row in result.to_pylist():
                print(json.dumps(row, default=str))
        else:
            print(format_table(result, max_rows=args.max_rows))
            if args.timing:
                print(f"time: {elapsed:.3f}s")


def add_parser(sub: Any) -> None:
    """Add the `sql` subparser to the main CLI's subparsers."""
    sp = sub.add_parser("sql", help="run SQL over Delta tables with DataFusion")
    sp.add_argument("query", help="SQL; several statements separated by ';' (DDL allowed: "
                                  "CREATE EXTERNAL TABLE t STORED AS DELTA LOCATION '...'; Delta DML in Spark "
                                  "SQL: INSERT INTO|OVERWRITE, DELETE FROM, UPDATE, MERGE INTO). Table functions: "
                                  "delta_scan('uri' [, version|'timestamp']) reads a table, "
                                  "delta_changes('uri' [, start [, end]]) its change data feed "
                                  "(start/end: versions or ISO-8601 timestamps)")
    sp.add_argument("--table", "-t", action="append", metavar="NAME=URI[@VERSION]",
                    help="register a Delta table (repeatable); @VERSION is a number or ISO-8601 timestamp")
    sp.add_argument("--catalog", action="append", metavar="NAME=DIR",
                    help="expose a directory of Delta tables as catalog NAME (NAME.public.<table>)")
    sp.add_argument("--storage-option", "-o", action="append", metavar="KEY=VALUE", help="storage option")
    sp.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sp.add_argument("--max-rows", type=int, default=100, help="rows shown in table format")
    sp.add_argument("--timing", action="store_true", help="print the query time")
    sp.set_defaults(fn=run)


__all__ = ["SqlError", "add_parser", "format_table", "run", "split_statements", "without_views"]
