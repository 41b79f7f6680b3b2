"""Commands that only read a table: info, inspect, detail, history, files, schema, head, count."""

from __future__ import annotations

import argparse
from typing import Any

from .common import (
    Progress,
    add_json_flag,
    add_table_arguments,
    open_table,
    print_record,
    print_rows,
    with_iso_timestamps,
)

HISTORY_COLUMNS = ["version", "timestamp", "operation", "operationParameters", "operationMetrics"]


def cmd_info(args: argparse.Namespace) -> None:
    t = open_table(args)
    md, proto = t.metadata(), t.protocol()
    print_record({
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
    }, args.json)


def cmd_inspect(args: argparse.Namespace) -> None:
    """`info` plus how the table is managed: for a catalog-managed table opened by name (`uc://c.s.t`), the
    catalog's table, its latest ratified version and the ratified commits not yet published to `_delta_log/`
    (read through the catalog's log tail, as every reader of such a table must)."""
    from ..kernel.log.segment import commit_key
    from ..kernel.protocol.features import is_catalog_managed

    t = open_table(args)
    snap = t.snapshot
    md, proto = t.metadata(), t.protocol()
    tail = snap.log_tail
    catalog = snap.catalog
    unpublished = [v for v in (tail.versions if tail is not None else []) if not snap.storage.exists(commit_key(v))]
    print_record({
        "uri": args.table,
        "location": t.table_uri,
        "version": t.version(),
        "id": md.id,
        "managed_by": ("catalog" if is_catalog_managed(snap.protocol) else "filesystem"),
        "catalog_table": getattr(catalog, "full_name", None),
        "catalog_table_id": md.configuration.get("io.unitycatalog.tableId"),
        "catalog_latest_version": tail.max_catalog_version if tail is not None else None,
        "unpublished_versions": unpublished,
        "num_files": snap.num_files,
        "reader_features": sorted(proto.reader_features) if proto.reader_features is not None else None,
        "writer_features": sorted(proto.writer_features) if proto.writer_features is not None else None,
        "configuration": md.configuration,
    }, args.json)


def cmd_detail(args: argparse.Namespace) -> None:
    """delta-spark's DESCRIBE DETAIL."""
    from ..kernel.detail import table_detail

    print_record(with_iso_timestamps(table_detail(open_table(args).snapshot)), args.json)


def cmd_history(args: argparse.Namespace) -> None:
    t = open_table(args)
    entries = [with_iso_timestamps(e) for e in t.history(limit=args.limit)]
    print_rows(entries, HISTORY_COLUMNS, args.json)


def cmd_files(args: argparse.Namespace) -> None:
    t = open_table(args)
    for uri in t.file_uris():
        print(uri)


def cmd_schema(args: argparse.Namespace) -> None:
    import json

    t = open_table(args)
    if args.json:
        print(json.dumps(t.snapshot.schema.to_json(), indent=2))
    else:
        from ..kernel.schema.arrow import to_arrow_schema

        print(to_arrow_schema(t.snapshot.schema, include_metadata=False))


def cmd_head(args: argparse.Namespace) -> None:
    import pyarrow as pa

    t = open_table(args)
    batches = []
    rows = 0
    progress = Progress("files")
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
    print(open_table(args).count())


def register(sub: Any) -> None:
    def add(name: str, fn: Any, help_: str, json_flag: bool = False) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_)
        add_table_arguments(sp)
        if json_flag:
            add_json_flag(sp)
        sp.set_defaults(fn=fn)
        return sp

    add("info", cmd_info, "version, protocol, metadata", json_flag=True)
    add("inspect", cmd_inspect, "info plus how the table is managed: its catalog, unpublished commits",
        json_flag=True)
    add("detail", cmd_detail, "DESCRIBE DETAIL: size, files, features, properties", json_flag=True)
    add("history", cmd_history, "commit history, newest first", json_flag=True).add_argument("--limit", type=int)
    add("files", cmd_files, "URIs of the live data files")
    sp = add("schema", cmd_schema, "the table schema")
    add_json_flag(sp)
    h = add("head", cmd_head, "first rows")
    h.add_argument("-n", type=int, default=10)
    h.add_argument("--columns", "-c", nargs="*")
    add("count", cmd_count, "number of rows")


__all__ = ["register", "cmd_head", "cmd_inspect"]

