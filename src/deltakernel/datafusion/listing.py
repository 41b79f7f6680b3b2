"""A pinned snapshot as a DataFusion *view* over its live Parquet files: DataFusion scans them itself.

Why: the `DeltaDataset` provider (`dataset.py`) is a pyarrow Dataset, so DataFusion hands every query's
scan to Python: fragments become partitions, batches cross the GIL, the provider has no statistics for the
join planner, and a file DataFusion could read natively is still planned through a Python round trip.
TPC-H at SF1 spent ~90 % of its time there (docs/decisions.md, "Embedded TPC-H: the listing path").

datafusion-python (55) cannot build a ListingTable over an explicit file list, and a Python TableProvider
does not exist; what it can do is `read_parquet(directory, schema=...)` (a ListingTable: its reader with
projection, filter pushdown, row-group / page-index pruning, the files grouped into `target_partitions`
balanced scan partitions, statistics from the footers) and a view over any DataFrame. The directory is one of
links to the snapshot's live files (`links.py`); each scan renames physical columns to logical ones (column
mapping "name"). Partition values: for a partitioned table whose values have an exact text form (integers and
plain strings under plain column names, `_hive_text`) the links are laid out as `<column>=<value>/` directories and one
scan reads the values from the names (DataFusion prunes partitions when it lists them, at plan time); other
partition-value groups get one scan each with the values as typed literals, and the table is the `UNION ALL`
of the scans - DataFusion's optimizer pushes a query's filters into every branch, folds `<literal> = <value>`
and drops the branches ruled out. (Before: one `read_parquet` per file under the union - its planning grew
faster than linearly with the files, and each file was split into byte ranges on its own; then one branch per
partition-value group - 25 groups cost 30-50 ms of planning per reference, 0.6 s for TPC-H Q22.)

Only tables DataFusion reads exactly as the kernel would use it (`plan()` returns None otherwise and the
caller registers the `DeltaDataset`, decided per table):
- local files (DataFusion opens them through the links), no deletion vector on any live file, no row tracking
  columns, column mapping "none" or "name" without nested types (nested physical names cannot be renamed by
  a projection; "id" matches by field id, which DataFusion does not);
- every file's columns present under their physical name with the logical type (or a string / binary
  flavour, or a lossless integer / float widening), or absent (a column added later: DataFusion fills
  nulls, as the protocol says); checked from the footers once per snapshot;
- at most `MAX_FILES` files and `MAX_GROUPS` partition-value groups (a union of 1,000 branches took 8-9 s to
  plan per query; 100 took ~0.05 s).
Files with a deletion vector are left to the dataset provider (`DeltaDataset.restricted_to`: the kernel applies
the DVs), unioned with the scans of the others; a table whose every file has one keeps the dataset provider.
What it does not do: skip files by the Delta statistics of the log (a view receives no predicate). DataFusion
prunes whole files, row groups and pages by the footers' statistics instead (footers cached in the session's
runtime after the first query); partition values prune at plan time as above.
"""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ..kernel.scan.partition_values import partition_columns_table
from ..kernel.schema.column_mapping import physical_name
from . import links, native

if TYPE_CHECKING:
    from datafusion.catalog import Table

#: more live files than this: the DeltaDataset provider (its skipping by the log's statistics pays most there, and
#: the first registration reads every footer to check its schema)
MAX_FILES = 4096
#: more partition-value groups than this: the DeltaDataset provider. Each group is one branch of a UNION ALL, and
#: DataFusion's planning of a union grows faster than linearly (100 branches ~0.05 s, 1,000 branches 8-9 s per query)
MAX_GROUPS = 128
_FOOTER_WORKERS = 8

#: Parquet options of the per-file tables (a ListingTable keeps the options of the context that made it):
#: filters evaluated inside the reader (late materialization: other columns decoded only for matching rows),
#: cheapest predicate first, as deltalake's provider does
BUILDER_OPTIONS = {
    "datafusion.execution.parquet.pushdown_filters": "true",
    "datafusion.execution.parquet.reorder_filters": "true",
}
#: what the twin of a view without the Parquet row filter changes (`without_row_filter`, `row_filters.py`)
NO_ROW_FILTER = {"datafusion.execution.parquet.pushdown_filters": "false"}
_builder: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}
_builder_lock = threading.Lock()


def _builder_context(row_filter: bool = True) -> Any:
    """A process-wide SessionContext that only creates the per-file ListingTables (queries run in the
    caller's context, with its configuration), with `BUILDER_OPTIONS` (and `NO_ROW_FILTER` when not
    `row_filter`). One per DataFusion instance and option set (a fork child reloads it)."""
    import datafusion

    options = {**BUILDER_OPTIONS, **({} if row_filter else NO_ROW_FILTER)}
    key = (id(datafusion.SessionContext), tuple(sorted(options.items())))
    with _builder_lock:
        ctx = _builder.get(key)
        if ctx is None:
            config = datafusion.SessionConfig()
            for k, v in options.items():
                config = config.set(k, v)
            ctx = _builder[key] = datafusion.SessionContext(config)
        return ctx


def _flavour(t: pa.DataType) -> pa.DataType:
    """string / large_string / string_view (and binary alike) are one Delta type: DataFusion casts between them."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    return t


def _compatible(file_type: pa.DataType, logical: pa.DataType) -> bool:
    """Whether DataFusion's cast from `file_type` to `logical` gives exactly the kernel's values."""
    a, b = _flavour(file_type), _flavour(logical)
    if a == b:
        return True
    if pa.types.is_signed_integer(a) and pa.types.is_signed_integer(b):
        return bool(a.bit_width <= b.bit_width)
    return bool(pa.types.is_float32(a) and pa.types.is_float64(b))


def _nested(t: pa.DataType) -> bool:
    return bool(pa.types.is_nested(t))


def plan(dataset: Any, row_filter: bool = True) -> Any | None:
    """The view's DataFrame for `dataset` (a `DeltaDataset`), or None when the table must use the dataset
    provider (see the module docstring). Reads the footers of files not checked yet (once per dataset).
    `row_filter=False`: its scans evaluate no predicate inside the Parquet reader (`row_filters.py`)."""
    from ..errors import ForkedProcessError
    from .forking import ensure_usable

    snap = dataset.snapshot
    mode = snap.column_mapping_mode
    if not dataset.native_reader or dataset.row_tracking or mode not in ("none", "name"):
        return None
    if not native.available(dataset._fs):
        return None
    all_files = snap.files
    if all_files.num_rows == 0 or all_files.num_rows > MAX_FILES:
        return None
    with_dv = all_files.column("deletion_vector").is_valid()
    files = all_files.filter(pc.invert(with_dv))  # the files DataFusion reads; the rest: the dataset provider
    n = files.num_rows
    if n == 0:
        return None
    dv_part = None if n == all_files.num_rows else dataset.restricted_to(all_files.filter(with_dv))
    data_fields = dataset._data_fields
    if mode == "name" and any(_nested(f.type) for f in data_fields):
        return None
    paths = files.column("path").to_pylist()
    if not all(dataset.own_store(p) for p in paths):
        return None
    local = [os.path.abspath(dataset.local_path(p)) for p in paths]  # link targets: any characters
    groups = _groups(dataset, files)
    if len(groups) > MAX_GROUPS:
        return None
    logical_by_name = {f.name: f for f in snap.schema.fields}
    physical = {f.name: (physical_name(logical_by_name[f.name], mode) if mode != "none" else f.name)
                for f in data_fields}
    if not _files_ok(dataset, paths, files.column("size").to_pylist(), physical):
        return None
    try:
        ensure_usable()
    except ForkedProcessError:
        return None
    return _on_helper_thread(lambda: _frame(dataset, local, physical, groups, dv_part, row_filter))


def _on_helper_thread(build: Any) -> Any | None:
    """`build()` on a fresh thread: `read_parquet` blocks on DataFusion's runtime, which panics on a runtime
    thread - and table factories, table functions and catalogs are called from one. None on error or timeout
    (the caller falls back to the dataset provider)."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["frame"] = build()
        except BaseException as exc:  # reported as "no listing path": the dataset provider reads the table
            result["error"] = exc

    t = threading.Thread(target=run, name="deltakernel-df-listing", daemon=True)
    t.start()
    t.join(native.PLAN_TIMEOUT_S)
    return None if t.is_alive() else result.get("frame")


def _files_ok(dataset: Any, paths: list[str], sizes: list[int | None], physical: dict[str, str]) -> bool:
    """Every file's footer schema fits (see `_compatible`); cached per path on the dataset."""
    cache: dict[str, bool] = dataset.__dict__.setdefault("_listing_ok", {})
    want = {physical[f.name]: f.type for f in dataset._data_fields}

    def check(i: int) -> bool:
        path = paths[i]
        ok = cache.get(path)
        if ok is None:
            schema = dataset.make_parquet_fragment(path, sizes[i], _TRUE).physical_schema
            ok = True
            for name, t in want.items():
                idx = schema.get_field_index(name)
                if idx == -1:
                    # absent (a later column: nulls) unless present under another case (the kernel matches it)
                    if any(n.lower() == name.lower() for n in schema.names):
                        ok = False
                        break
                    continue
                if idx < 0 or not _compatible(schema.field(idx).type, t):
                    ok = False
                    break
            cache[path] = ok
        return ok

    todo = [i for i, p in enumerate(paths) if p not in cache]
    if len(todo) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(_FOOTER_WORKERS, len(todo))) as pool:
            if not all(pool.map(check, todo)):
                return False
    return all(check(i) for i in range(len(paths)))


def _frame(dataset: Any, local: list[str], physical: dict[str, str],
           groups: list[tuple[dict[str, Any], list[int]]], dv_part: Any | None, row_filter: bool = True) -> Any:
    """The view: the `UNION ALL` of DataFusion scans of the files (each renaming physical to logical columns)
    and of `dv_part` (the dataset provider over the files with deletion vectors, which only the kernel's
    reader applies). An unpartitioned table is one scan. A partitioned table is one scan of a hive layout of
    links (`<column>=<value>/`, DataFusion reading the values from the names) for the groups whose values
    have an exact text form (`_hive_text`), plus one scan per other group with its values as typed literals."""
    from datafusion import col, lit

    out_schema: pa.Schema = dataset.schema  # DataFusion sees the dataset's schema (view types or not)
    data_schema = pa.schema([pa.field(physical[f.name], out_schema.field(f.name).type, f.nullable)
                             for f in dataset._data_fields])
    builder = _builder_context(row_filter)
    part_names = [f.name for f in dataset.snapshot.partition_fields]
    hive: list[tuple[str, list[int]]] = []
    literal: list[tuple[dict[str, Any], list[int]]] = []
    for values, members in groups:
        texts = [_hive_text(name, values[name], out_schema.field(name).type) for name in part_names]
        if part_names and all(t is not None for t in texts):
            hive.append(("/".join(f"{n}={t}" for n, t in zip(part_names, texts, strict=True)), members))
        else:
            literal.append((values, members))
    if len(hive) < 2:  # one group: its literal branch is as cheap, and exact for any value
        literal = [(values, members) for values, members in groups]
        hive = []
    scans: list[Any] = []
    if hive:
        targets = [local[i] for _, members in hive for i in members]
        subdirs = [d for d, members in hive for _ in members]
        one = builder.read_parquet(_scanned(dataset, links.link_dir(targets, subdirs)), schema=data_schema,
                                   file_extension=".parquet",
                                   table_partition_cols=[(n, out_schema.field(n).type) for n in part_names])
        scans.append(one.select(*[col(native.quote(f.name if f.name in part_names else physical[f.name]))
                                  .alias(f.name) for f in out_schema]))
    for values, members in literal:
        one = builder.read_parquet(_scanned(dataset, links.link_dir([local[i] for i in members])),
                                   schema=data_schema, file_extension=".parquet")
        exprs = []
        for f in out_schema:
            if f.name in values:
                exprs.append(lit(pa.scalar(values[f.name], f.type)).alias(f.name))
            else:
                exprs.append(col(native.quote(physical[f.name])).alias(f.name))
        scans.append(one.select(*exprs))
    if dv_part is not None:
        scans.append(builder.read_table(dv_part))
    df = scans[0]
    for other in scans[1:]:
        df = df.union(other)
    return df


#: partition columns and values DataFusion reads back exactly from a `<name>=<value>` directory name: plain
#: identifiers, integers, and strings of letters, digits, `_` and `-` (no escaping, no NULL marker, no `.`/`..`)
_HIVE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HIVE_STRING = re.compile(r"[A-Za-z0-9_-]+")


def _hive_text(name: str, value: Any, t: pa.DataType) -> str | None:
    """The directory-name text of partition value `value` (typed as the view's column type `t`), or None
    when DataFusion's parsing of it (a cast from the text to `t`) might not give the value exactly."""
    if value is None or not _HIVE_NAME.fullmatch(name):
        return None
    if pa.types.is_integer(t) and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)) \
            and isinstance(value, str) and _HIVE_STRING.fullmatch(value) and "HIVE_DEFAULT_PARTITION" not in value:
        return value
    return None


def _groups(dataset: Any, files: pa.Table) -> list[tuple[dict[str, Any], list[int]]]:
    """Indices of `files` grouped by their partition values (typed as the view's columns), in first-seen order."""
    snap = dataset.snapshot
    part_fields = snap.partition_fields
    n = files.num_rows
    if not part_fields:
        return [({}, list(range(n)))]
    out_schema: pa.Schema = dataset.schema
    cols = partition_columns_table(files.column("partition_values"), part_fields, snap.column_mapping_mode)
    typed = {f.name: cols[f.name].cast(out_schema.field(f.name).type).to_pylist() for f in part_fields}
    names = [f.name for f in part_fields]
    by_key: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n):
        by_key.setdefault(tuple(typed[name][i] for name in names), []).append(i)
    return [(dict(zip(names, key, strict=True)), members) for key, members in by_key.items()]


_TRUE = pc.scalar(True)



def _scanned(dataset: Any, directory: str) -> str:
    """Record `directory` (a link directory the view scans) on `dataset`: `scanned_dirs` tells which table
    a scan of a physical plan reads (`row_filters.py`)."""
    dataset.__dict__.setdefault("_scanned_dirs", set()).add(os.path.basename(directory.rstrip(os.sep)))
    return directory


def scanned_dirs(dataset: Any) -> frozenset[str]:
    """Names of the link directories (under `links`' root) the listing view of `dataset` scans."""
    return frozenset(dataset.__dict__.get("_scanned_dirs", ()))


def provider_for(dataset: Any) -> Any:
    """What to register for `dataset` in a SessionContext: the listing view's DataFrame when `plan()`
    accepts the table (and `dataset.provider` is "auto"), else the dataset itself. Sets
    `dataset.scan_path` to "listing" or "dataset" (which path the queries take)."""
    frame = plan(dataset) if dataset.provider == "auto" else None
    dataset.scan_path = "dataset" if frame is None else "listing"
    return dataset if frame is None else frame


def without_row_filter(dataset: Any) -> Any | None:
    """The listing view of `dataset` whose scans use their predicates (static and join-dynamic) only to prune
    files, row groups and pages, and filter after decoding (`row_filters.py` says when that is cheaper);
    made once per dataset. None when `dataset` is not on the listing path."""
    if dataset.scan_path != "listing":
        return None
    with _builder_lock:
        cached = dataset.__dict__.get("_without_row_filter")
    if cached is None:
        cached = plan(dataset, row_filter=False)
        if cached is None:
            return None
        with _builder_lock:
            cached = dataset.__dict__.setdefault("_without_row_filter", cached)
    return cached


def register_in(ctx: Any, name: str, dataset: Any) -> None:
    """Register `dataset` under `name` in `ctx` through the path `provider_for` picks."""
    provider = provider_for(dataset)
    if provider is dataset:
        ctx.register_dataset(name, dataset)
    else:
        ctx.register_view(name, provider)


def as_table(dataset: Any) -> Table:
    """`dataset` as a `datafusion.catalog.Table` (catalogs, table functions, table factories)."""
    from datafusion.catalog import Table

    provider = provider_for(dataset)
    return Table(provider if provider is dataset else provider.into_view())


def same_columns(a: pa.Schema, b: pa.Schema) -> bool:
    """Same column names and types (a view's literal partition columns may differ in nullability)."""
    return [(f.name, f.type) for f in a] == [(f.name, f.type) for f in b]


__all__ = ["BUILDER_OPTIONS", "MAX_FILES", "MAX_GROUPS", "NO_ROW_FILTER", "as_table", "plan", "provider_for",
           "register_in", "same_columns", "scanned_dirs", "without_row_filter"]
