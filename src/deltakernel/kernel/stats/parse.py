"""Per-file statistics (PROTOCOL.md "Per-file Statistics"), parsed column-wise for all files at once.

Why vectorized: a table can have millions of `add` actions; the stats JSON of all files is joined with
newlines and parsed by `pyarrow.json` against an explicit schema derived from the table schema, keyed by
*physical* column names (column mapping: stats are written under physical names). Values JSON cannot
type exactly (timestamps, dates) are read as strings and converted with pyarrow.compute. When Arrow's
strict reader rejects the batch (a float stat written as "NaN", an int written as 1.0, ...), a per-file
Python parse takes over, so one odd writer never disables skipping for the whole table.

Conventions of the result (what `skipping.py` relies on):
- min/max arrays have the column's Arrow type; a null entry means "no usable bound".
- NaN min/max are turned into nulls: writers disagree on whether NaN takes part in min/max (Spark treats
  NaN as the largest value, Parquet footers ignore it), so a NaN bound carries no safe information.
- Timestamps are as written: Spark truncates them to milliseconds, so a max may be up to 999us lower than
  the real max. `skipping.py` widens max comparisons for that; the values here are not adjusted.
- String min/max are as written (maybe truncated prefixes); `skipping.py` treats max conservatively.
- `tight_bounds` is True where stats exist without the flag (the protocol's default), null without stats.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from ..arrow_build import arrow_to_np, bool_to_arrow, np_to_arrow, scalar, str_scalar
from ..geo.bbox import POINT_TYPE, wkt_points
from ..isotime import parse_datetime
from ..schema.arrow import to_arrow_type
from ..schema.collations import has_non_binary_collation
from ..schema.column_mapping import physical_name
from ..schema.geospatial import parse_geo_type
from ..schema.types import DataType, DecimalType, PrimitiveType, StructType

Path = tuple[str, ...]
_MINMAX_TYPES = {
    "string", "long", "integer", "short", "byte", "float", "double", "boolean", "date", "timestamp", "timestamp_ntz",
}
_NULLCOUNT_ONLY = {"binary", "variant"}  # variant: nullCount of the column itself (PROTOCOL.md)


@dataclass
class FileStats:
    """Typed stats of N files; every array has length N (null = unknown for that file)."""

    num_records: pa.Array
    tight_bounds: pa.Array
    min_values: dict[Path, pa.Array] = field(default_factory=dict)
    max_values: dict[Path, pa.Array] = field(default_factory=dict)
    null_count: dict[Path, pa.Array] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.num_records)

    @classmethod
    def empty(cls, num_files: int) -> FileStats:
        """No stats at all (every predicate keeps every file)."""
        return cls(pa.nulls(num_files, pa.int64()), pa.nulls(num_files, pa.bool_()))

    def coalesce(self, other: FileStats) -> FileStats:
        """Per file, this object's values where present, else `other`'s (JSON stats + checkpoint stats_parsed)."""

        def merge(a: dict[Path, pa.Array], b: dict[Path, pa.Array]) -> dict[Path, pa.Array]:
            out = dict(b)
            for k, v in a.items():
                out[k] = pc.coalesce(v, b[k]) if k in b and b[k].type == v.type else v
            return out

        return FileStats(
            pc.coalesce(self.num_records, other.num_records),
            pc.coalesce(self.tight_bounds, other.tight_bounds),
            merge(self.min_values, other.min_values),
            merge(self.max_values, other.max_values),
            merge(self.null_count, other.null_count),
        )


@dataclass(frozen=True)
class StatsLeaf:
    """A column stats are kept for: its logical and physical path, Delta and Arrow type, whether it has min/max."""

    logical: Path
    physical: Path
    dtype: DataType
    arrow: pa.DataType
    minmax: bool


def stats_leaf_columns(schema: StructType, mode: str, columns: set[Path] | None) -> list[StatsLeaf]:
    """Primitive leaves reachable through structs (stats mirror the schema; arrays/maps have none)."""
    out: list[StatsLeaf] = []

    def wanted(lp: Path) -> bool:
        if columns is None:
            return True
        return any(lp[: len(c)] == c for c in columns)  # a requested struct selects all its leaves

    def walk(struct: StructType, lp: Path, pp: Path) -> None:
        for f in struct.fields:
            lpath, ppath = (*lp, f.name), (*pp, physical_name(f, mode))
            if isinstance(f.type, StructType):
                walk(f.type, lpath, ppath)
                continue
            name = f.type.name if isinstance(f.type, PrimitiveType) else None
            geo = parse_geo_type(f.type)
            if geo is not None:  # bbox corners as WKT points; geography's are never used (kernel/geo/bbox.py)
                if wanted(lpath):
                    out.append(StatsLeaf(lpath, ppath, f.type, POINT_TYPE if not geo.is_geography else pa.binary(),
                                         not geo.is_geography))
                continue
            if not isinstance(f.type, DecimalType) and name not in _MINMAX_TYPES | _NULLCOUNT_ONLY:
                continue
            if not wanted(lpath):
                continue
            # a non-binary collation: binary bounds could rule out a collation-equal value ('a' = 'A')
            minmax = (isinstance(f.type, DecimalType) or name in _MINMAX_TYPES) and not has_non_binary_collation(f)
            out.append(StatsLeaf(lpath, ppath, f.type, to_arrow_type(f.type), minmax))

    walk(schema, (), ())
    return out


def _json_type(leaf: StatsLeaf) -> pa.DataType:
    """How a min/max value is read from JSON (strings where JSON has no matching type)."""
    if isinstance(leaf.dtype, DecimalType):
        return leaf.arrow
    name = leaf.dtype.name  # type: ignore[union-attr]
    if name in ("long", "integer", "short", "byte"):
        return pa.int64()
    if name in ("float", "double"):
        return pa.float64()
    if name == "boolean":
        return pa.bool_()
    return pa.string()


def _nested(leaves: list[StatsLeaf], leaf_type: Callable[[StatsLeaf], pa.DataType]) -> pa.DataType:
    tree: dict[str, Any] = {}
    for leaf in leaves:
        node = tree
        for part in leaf.physical[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):  # a physical name clash between a leaf and a struct
                break
        else:
            node.setdefault(leaf.physical[-1], leaf_type(leaf))

    def build(node: dict[str, Any]) -> pa.DataType:
        return pa.struct([pa.field(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


def _stats_schema(leaves: list[StatsLeaf]) -> pa.Schema:
    mm = [lf for lf in leaves if lf.minmax]
    fields = [pa.field("numRecords", pa.int64()), pa.field("tightBounds", pa.bool_())]
    if mm:
        fields.append(pa.field("minValues", _nested(mm, _json_type)))
        fields.append(pa.field("maxValues", _nested(mm, _json_type)))
    if leaves:
        fields.append(pa.field("nullCount", _nested(leaves, lambda _: pa.int64())))
    return pa.schema(fields)


# ----------------------------------------------------------------------------- value conversion
def _nullify_nan(arr: pa.Array) -> pa.Array:
    if pa.types.is_floating(arr.type) and len(arr):
        nan = pc.is_nan(arr)
        if pc.any(nan).as_py():
            return pc.if_else(nan, scalar(None, arr.type), arr)
    return arr


def _py_timestamp(v: Any, utc: bool) -> Any:
    if not isinstance(v, str):
        return None
    text = v.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        ts = parse_datetime(text)
    except ValueError:
        return None
    if utc:
        return ts.replace(tzinfo=dt.timezone.utc) if ts.tzinfo is None else ts.astimezone(dt.timezone.utc)
    return ts if ts.tzinfo is None else None  # an offset on a timestamp_ntz stat: ambiguous, unknown


def _py_value(v: Any, leaf: StatsLeaf) -> Any:
    """One JSON value as a Python value of the leaf's type, or None when it is not one (never guess)."""
    if v is None or isinstance(v, (dict, list)):
        return None
    if leaf.arrow == POINT_TYPE:
        return v if isinstance(v, str) else None
    dtype = leaf.dtype
    if isinstance(dtype, DecimalType):
        if isinstance(v, bool):
            return None
        try:
            d = decimal.Decimal(str(v))
        except decimal.InvalidOperation:
            return None
        if not d.is_finite() or d != d.quantize(decimal.Decimal(1).scaleb(-dtype.scale)):
            return None  # a bound that does not fit the column's scale would be rounded: unusable
        return d.quantize(decimal.Decimal(1).scaleb(-dtype.scale))
    name = dtype.name  # type: ignore[union-attr]
    if name in ("long", "integer", "short", "byte"):
        if isinstance(v, bool):
            return None
        if isinstance(v, decimal.Decimal) and v == v.to_integral_value():
            return int(v)
        return v if isinstance(v, int) else None
    if name in ("float", "double"):
        if isinstance(v, bool):
            return None
        if isinstance(v, (int, decimal.Decimal)):
            return float(v)
        if isinstance(v, float):
            return None if v != v else v
        if isinstance(v, str) and v.strip() in ("Infinity", "+Infinity", "-Infinity", "inf", "-inf"):
            return float(v.strip().replace("Infinity", "inf"))
        return None  # "NaN" and anything else: no bound
    if name == "boolean":
        return v if isinstance(v, bool) else None
    if name == "string":
        return v if isinstance(v, str) else None
    if name == "date":
        try:
            return dt.date.fromisoformat(v.strip()[:10]) if isinstance(v, str) else None
        except ValueError:
            return None
    if name in ("timestamp", "timestamp_ntz"):
        return _py_timestamp(v, name == "timestamp")
    return None


def _to_arrow(values: list[Any], leaf: StatsLeaf) -> pa.Array:
    if leaf.arrow == POINT_TYPE:
        return wkt_points(pa.array(values, pa.string()))
    try:
        return pa.array(values, type=leaf.arrow)
    except (pa.ArrowInvalid, OverflowError, TypeError):  # out of the column's range: no bound
        fixed = []
        for v in values:
            try:
                scalar(v, type=leaf.arrow)
                fixed.append(v)
            except (pa.ArrowInvalid, OverflowError, TypeError):
                fixed.append(None)
        return pa.array(fixed, type=leaf.arrow)


def _convert(raw: pa.Array, leaf: StatsLeaf) -> pa.Array:
    """A min/max column as read from JSON (see `_json_type`) -> the column's Arrow type."""
    if leaf.arrow == POINT_TYPE:  # geometry bbox corners: WKT points
        return wkt_points(raw)
    if raw.type == leaf.arrow:
        return _nullify_nan(raw)
    if raw.null_count == len(raw):
        return pa.nulls(len(raw), leaf.arrow)
    try:
        # string -> timestamp/date: Arrow parses ISO 8601 with "Z"/offsets for UTC timestamps and
        # rejects offsets on timestamp_ntz (then the per-value path makes those entries unknown)
        return _nullify_nan(pc.cast(raw, leaf.arrow))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return _to_arrow([_py_value(v, leaf) for v in raw.to_pylist()], leaf)


# ----------------------------------------------------------------------------- parsing
def _struct_path(arr: pa.Array, path: Path) -> pa.Array | None:
    """A nested field (parent nulls propagate), or None when the struct lacks it."""
    cur = arr
    for part in path:
        if not pa.types.is_struct(cur.type) or cur.type.get_field_index(part) < 0:
            return None
        cur = pc.struct_field(cur, [cur.type.get_field_index(part)])
    return cur


def _from_parsed(table: pa.StructArray, leaves: list[StatsLeaf], n: int, defaulted: pa.Array | None) -> FileStats:
    def top(name: str) -> pa.Array | None:
        return _struct_path(table, (name,))

    num = top("numRecords")
    num = pc.cast(num, pa.int64()) if num is not None else pa.nulls(n, pa.int64())
    tight = top("tightBounds")
    tight = pc.cast(tight, pa.bool_()) if tight is not None else pa.nulls(n, pa.bool_())
    has_stats = pc.is_valid(table) if defaulted is None else defaulted
    tight = pc.if_else(pc.and_(has_stats, pc.is_null(tight)), scalar(True), tight)  # absent flag means tight
    stats = FileStats(num, tight)
    for leaf in leaves:
        nc = _struct_path(table, ("nullCount", *leaf.physical))
        if nc is not None and pa.types.is_integer(nc.type):
            stats.null_count[leaf.logical] = pc.cast(nc, pa.int64())
        if not leaf.minmax:
            continue
        for key, target in (("minValues", stats.min_values), ("maxValues", stats.max_values)):
            raw = _struct_path(table, (key, *leaf.physical))
            if raw is None or pa.types.is_struct(raw.type):
                continue
            try:
                target[leaf.logical] = _convert(raw, leaf)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                pass  # an unusable checkpoint column type: no bound
    return stats


def _read_json_fast(lines: pa.Array, schema: pa.Schema) -> pa.StructArray:
    lines = pc.replace_substring(pc.replace_substring(lines, "\n", " "), "\r", " ")  # only whitespace in JSON
    longest = pc.max(pc.binary_length(lines)).as_py() or 0
    joined = pc.binary_join(pa.ListArray.from_arrays(np_to_arrow([0, len(lines)], pa.int32()), lines),
                            str_scalar("\n"))[0]
    table = pajson.read_json(
        pa.BufferReader(joined.as_buffer()),
        read_options=pajson.ReadOptions(use_threads=True, block_size=max(1 << 20, 2 * longest + 64)),
        parse_options=pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                          newlines_in_values=False),
    )
    if table.num_rows != len(lines):
        raise pa.ArrowInvalid("row count mismatch")
    return table.to_struct_array().combine_chunks() if table.num_rows else pa.array([], pa.struct(schema))


def _read_json_slow(lines: list[str], leaves: list[StatsLeaf]) -> FileStats:
    n = len(lines)
    docs: list[dict[str, Any] | None] = []
    for line in lines:
        try:
            doc = json.loads(line, parse_float=decimal.Decimal)
            docs.append(doc if isinstance(doc, dict) else None)
        except ValueError:
            docs.append(None)

    def get(doc: dict[str, Any] | None, path: tuple[str, ...]) -> Any:
        cur: Any = doc
        for part in path:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(part)
        return cur

    def as_int(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None

    num = pa.array([as_int(get(d, ("numRecords",))) for d in docs], pa.int64())
    tight = pa.array([None if d is None else (t if isinstance(t := d.get("tightBounds", True), bool) else True)
                      for d in docs], pa.bool_())
    stats = FileStats(num, tight)
    for leaf in leaves:
        stats.null_count[leaf.logical] = pa.array(
            [as_int(get(d, ("nullCount", *leaf.physical))) for d in docs], pa.int64())
        if leaf.minmax:
            for key, target in (("minValues", stats.min_values), ("maxValues", stats.max_values)):
                target[leaf.logical] = _to_arrow(
                    [_py_value(get(d, (key, *leaf.physical)), leaf) for d in docs], leaf)
    assert len(stats) == n
    return stats


def _take_all(stats: FileStats, indices: pa.Array) -> FileStats:
    return FileStats(
        stats.num_records.take(indices),
        stats.tight_bounds.take(indices),
        {k: v.take(indices) for k, v in stats.min_values.items()},
        {k: v.take(indices) for k, v in stats.max_values.items()},
        {k: v.take(indices) for k, v in stats.null_count.items()},
    )


def parse_stats(
    stats_json: pa.Array | pa.ChunkedArray, schema: StructType, mode: str = "none", columns: set[Path] | None = None
) -> FileStats:
    """Parse the `add.stats` JSON of N files (null/empty -> all-null stats for that file).

    `columns` (logical paths) limits the work to the columns a predicate references.
    """
    if isinstance(stats_json, pa.ChunkedArray):
        stats_json = stats_json.combine_chunks() if stats_json.num_chunks else pa.array([], pa.string())
    if pa.types.is_large_string(stats_json.type) or pa.types.is_string_view(stats_json.type):
        stats_json = stats_json.cast(pa.string())
    n = len(stats_json)
    leaves = stats_leaf_columns(schema, mode, columns)
    # JSON whitespace is ASCII: the ASCII kernels avoid building utf8proc's tables on first use (~3 ms cold);
    # a line of other Unicode whitespace fails to parse and gets null stats all the same
    valid = pc.fill_null(pc.and_(pc.is_valid(stats_json), pc.greater(pc.binary_length(pc.ascii_trim_whitespace(
        stats_json)), scalar(0, pa.int32()))), scalar(False)) if n else bool_to_arrow([])
    mask = arrow_to_np(valid)
    lines = stats_json.filter(valid)
    if len(lines) == 0:
        base = FileStats.empty(n)
        for leaf in leaves:
            base.null_count[leaf.logical] = pa.nulls(n, pa.int64())
        return base
    try:
        parsed = _read_json_fast(lines, _stats_schema(leaves))
        compact = _from_parsed(parsed, leaves, len(lines), bool_to_arrow(np.ones(len(lines), dtype=bool)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, UnicodeError):
        compact = _read_json_slow(lines.to_pylist(), leaves)
    positions = np.cumsum(mask) - 1
    indices = np_to_arrow(positions, pa.int64(), mask=~mask)
    return _take_all(compact, indices)


def stats_from_struct(stats_parsed: pa.StructArray | pa.ChunkedArray, schema: StructType,
                      mode: str = "none", columns: set[Path] | None = None) -> FileStats:
    """Stats from a checkpoint's typed `stats_parsed` column (same conventions as `parse_stats`)."""
    if isinstance(stats_parsed, pa.ChunkedArray):
        stats_parsed = stats_parsed.combine_chunks() if stats_parsed.num_chunks else \
            pa.array([], stats_parsed.type)
    return _from_parsed(stats_parsed, stats_leaf_columns(schema, mode, columns), len(stats_parsed), None)
