"""Collect per-file statistics while writing (PROTOCOL.md "Per-file Statistics"), in Spark Delta's exact shape.

Null counts, record counts and the NaN flag are always computed here (cheap, and Parquet footers have
no Delta-shaped null count for lists/maps). Min/max are computed here for one-shot use (`collect_stats`);
the file writer instead folds them from the footer of each file it wrote (`footer_min_max=True`,
`fold_parquet_footer`): the encoder computes them anyway, and a second pass over strings cost ~8 % of a
write. Footer bounds are exact (Arrow drops, never truncates, a chunk's min/max over 4 KiB; such a file
gets no bounds for that column).

What is written, following delta-spark's `StatisticsCollection`:
- `numRecords`; `minValues`/`maxValues` only for types with an order Spark skips on (byte..long, float,
  double, decimal, date, timestamp, timestamp_ntz, string; NOT boolean, binary, arrays, maps, variant);
  `nullCount` for every indexed leaf, lists/maps/variant included (a leaf under a null struct is null);
  `tightBounds: true` only when the protocol supports deletion vectors (what Spark does: without DVs the
  flag's absence already means tight).
- keys are physical names (column mapping), nested structs are nested objects, schema order; a struct with
  no stat-eligible leaf is omitted, like a top-level section with no column at all.
- columns: exactly `delta.dataSkippingStatsColumns` when set (comma-separated, dotted/backticked, case
  insensitive, a struct selects all its leaves), else the first `delta.dataSkippingNumIndexedCols` leaves
  (default 32, negative = all) of the schema without partition columns; lists/maps count as one leaf.
- strings: min is the first 32 characters (a prefix is still a lower bound); a truncated max gets Spark's
  tie-breaker U+FFFD, or U+10FFFF when the first dropped character is >= U+FFFD (see `truncate_max_string`),
  so it stays an upper bound in code-point (= UTF-8 byte) order for every reader, even ones unaware of
  tie-breakers. Spark counts UTF-16 units, we count code points (differs only outside the BMP).
- timestamps: `2021-01-01T00:00:00.123Z` (timestamp_ntz without `Z`), both bounds floored to milliseconds
  like Spark (readers widen max by 999us); dates `YYYY-MM-DD`; decimals as plain JSON numbers with the
  column's scale (`10.000`, as Spark's BigDecimal does).
- floats: NaN is ignored for min; a NaN anywhere drops the max (Spark orders NaN above everything and would
  write "NaN", which is not a JSON number); infinite bounds and values outside JSON/Python date ranges are
  omitted, which only widens the bounds.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import SchemaError
from ..geo.bbox import wkt_point
from ..geo.wkb import UnsupportedWkbError
from ..geo.wkb import bounds as wkb_bounds
from ..schema.column_mapping import physical_name
from ..schema.geospatial import parse_geo_type
from ..schema.types import DataType, DecimalType, PrimitiveType, StructField, StructType

Path = tuple[str, ...]
NUM_INDEXED_COLS_KEY = "delta.dataSkippingNumIndexedCols"
STATS_COLUMNS_KEY = "delta.dataSkippingStatsColumns"
DEFAULT_NUM_INDEXED_COLS = 32
DEFAULT_STRING_PREFIX_LENGTH = 32  # Spark's spark.databricks.delta.stats.skipping.strings.prefixLength
TIE_BREAKER = "\ufffd"
MAX_CHAR = "\U0010ffff"
_INTEGERS = {"byte", "short", "integer", "long"}
_FLOATS = {"float", "double"}
_ELIGIBLE = _INTEGERS | _FLOATS | {"date", "timestamp", "timestamp_ntz", "string"}
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


def skipping_eligible(dtype: DataType) -> bool:
    """Types Spark collects min/max for (`SkippingEligibleDataType`)."""
    return isinstance(dtype, DecimalType) or (isinstance(dtype, PrimitiveType) and dtype.name in _ELIGIBLE)


# ----------------------------------------------------------------------------- column selection
def parse_stats_columns(text: str) -> list[Path]:
    """`delta.dataSkippingStatsColumns` -> column paths: `a, b.c, `x.y`.z`, backticks escaped by doubling."""
    out: list[Path] = []
    parts: list[str] = []
    cur: list[str] = []
    quoted = had_quote = False
    i = 0

    def end_part() -> None:
        nonlocal had_quote
        name = "".join(cur)
        if not had_quote:
            name = name.strip()
        if not name and not had_quote:
            raise SchemaError(f"invalid {STATS_COLUMNS_KEY}: {text!r} (empty name)")
        parts.append(name)
        cur.clear()
        had_quote = False

    if not text.strip():
        return out
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "`":
                if i + 1 < len(text) and text[i + 1] == "`":
                    cur.append("`")
                    i += 1
                else:
                    quoted = False
            else:
                cur.append(ch)
        elif ch == "`":
            if "".join(cur).strip():
                raise SchemaError(f"invalid {STATS_COLUMNS_KEY}: {text!r} (misplaced backtick)")
            cur.clear()
            quoted = had_quote = True
        elif ch == ".":
            end_part()
        elif ch == ",":
            end_part()
            out.append(tuple(parts))
            parts = []
        elif had_quote and not ch.isspace():
            raise SchemaError(f"invalid {STATS_COLUMNS_KEY}: {text!r} (text after a quoted name)")
        else:
            cur.append(ch)
        i += 1
    if quoted:
        raise SchemaError(f"invalid {STATS_COLUMNS_KEY}: {text!r} (unclosed backtick)")
    end_part()
    out.append(tuple(parts))
    return out


def _filter_schema(schema: StructType, paths: list[Path]) -> StructType:
    """Spark's `filterSchema`: keep named columns (case-insensitive), recursing into structs, schema order."""
    by_head: dict[str, list[Path]] = {}
    for p in paths:
        by_head.setdefault(p[0].lower(), []).append(p[1:])
    fields: list[StructField] = []
    for f in schema.fields:
        tails = by_head.get(f.name.lower())
        if tails is None:
            continue
        if any(not t for t in tails):
            fields.append(f)
        elif isinstance(f.type, StructType):
            fields.append(StructField(f.name, _filter_schema(f.type, tails), f.nullable, f.metadata))
    return StructType(tuple(fields))


def _truncate_schema(schema: StructType, budget: int) -> tuple[StructType, int]:
    """Spark's `truncateSchema`: the first `budget` leaves (a list/map is one leaf)."""
    used = 0
    fields: list[StructField] = []
    for f in schema.fields:
        if used >= budget:
            break
        if isinstance(f.type, StructType):
            sub, n = _truncate_schema(f.type, budget - used)
            used += n
            fields.append(StructField(f.name, sub, f.nullable, f.metadata))
        else:
            used += 1
            fields.append(f)
    return StructType(tuple(fields)), used


def stats_schema(
    schema: StructType, configuration: Mapping[str, str] | None, partition_columns: Sequence[str] = ()
) -> StructType:
    """The logical sub-schema whose leaves get statistics under the table's configuration."""
    conf = configuration or {}
    parts = {p.lower() for p in partition_columns}
    data = StructType(tuple(f for f in schema.fields if f.name.lower() not in parts))
    names = conf.get(STATS_COLUMNS_KEY)
    if names is not None:
        return _filter_schema(data, parse_stats_columns(names))
    raw = conf.get(NUM_INDEXED_COLS_KEY)
    try:
        n = DEFAULT_NUM_INDEXED_COLS if raw is None else int(str(raw).strip())
    except ValueError as e:
        raise SchemaError(f"invalid {NUM_INDEXED_COLS_KEY}: {raw!r}") from e
    return data if n < 0 else _truncate_schema(data, n)[0]


# ----------------------------------------------------------------------------- value formatting
def truncate_min_string(value: str, prefix: int = DEFAULT_STRING_PREFIX_LENGTH) -> str:
    """A lower bound of at most `prefix` characters."""
    return value[:prefix]


def truncate_max_string(value: str, prefix: int = DEFAULT_STRING_PREFIX_LENGTH) -> str:
    """An upper bound of about `prefix` characters plus a tie-breaker (Spark's U+FFFD when it is safe).

    Spark cuts at `prefix` and appends U+FFFD after extending over chars >= U+FFFD. Characters outside the
    BMP sort above U+FFFD in code-point/UTF-8 order, so when the first dropped char is >= U+FFFD we use
    U+10FFFF instead (after extending over U+10FFFF chars): always a true bound, and short.
    """
    if len(value) <= prefix:
        return value
    if value[prefix] < TIE_BREAKER:
        return value[:prefix] + TIE_BREAKER
    end = prefix
    while end < len(value) and value[end] == MAX_CHAR:
        end += 1
    return value if end == len(value) else value[:end] + MAX_CHAR


def _format_timestamp(micros: int, utc: bool) -> str | None:
    ms = micros // 1000  # floor: the same millisecond Spark's formatter prints
    try:
        t = _EPOCH + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return None
    text = (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f".{t.microsecond // 1000:03d}")
    return text + "Z" if utc else text


def _format_date(days: int) -> str | None:
    try:
        d = _EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:
        return None
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


class _RawJson(str):
    """Text inserted into the JSON document verbatim (numbers json.dumps would change)."""


def _json_value(value: Any, kind: str, utc: bool) -> Any:
    """A collected bound as a JSON-ready value, or None to omit it."""
    if kind == "int":
        return _RawJson(str(int(value)))
    if kind in ("float", "double"):
        f = float(value)
        if math.isnan(f) or math.isinf(f):
            return None
        return _RawJson(str(np.float32(f)) if kind == "float" else repr(f))
    if kind == "decimal":
        d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(value)
        return _RawJson(format(d, "f")) if d.is_finite() else None
    if kind == "date":
        return _format_date(int(value))
    if kind == "timestamp":
        return _format_timestamp(int(value), utc)
    return str(value)


def _dump(obj: Any) -> str:
    if isinstance(obj, _RawJson):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_dump(v)}" for k, v in obj.items()) + "}"
    return json.dumps(obj, ensure_ascii=False)


# ----------------------------------------------------------------------------- collection
@dataclass
class LeafStats:
    """The statistics of one stats leaf while they are being folded (data batches or footer chunks)."""

    logical: Path
    physical: Path
    kind: str | None  # None: null count only; else int/float/double/decimal/date/timestamp/string
    utc: bool = True
    null_count: int | None = 0  # None: unknown (the key is then left out of nullCount)
    min: Any = None
    max: Any = None
    has_nan: bool = False
    unbounded: bool = False  # a row group with values but no footer min/max: no bounds for this file


def stat_kind(dtype: DataType) -> str | None:
    """Which bounds a leaf of this type gets: int/float/double/decimal/date/timestamp/string, or None."""
    if isinstance(dtype, DecimalType):
        return "decimal"
    geo = parse_geo_type(dtype)
    if geo is not None:  # a bounding box for geometry; none for geography (its edges are geodesics)
        return None if geo.is_geography else "geometry"
    if not skipping_eligible(dtype):
        return None
    name = dtype.name  # type: ignore[union-attr]
    if name in _INTEGERS:
        return "int"
    if name in ("timestamp", "timestamp_ntz"):
        return "timestamp"
    return str(name)


def stat_leaves(schema: StructType, mode: str, lp: Path = (), pp: Path = ()) -> Iterator[tuple[Path, Path, DataType]]:
    """(logical path, physical path, type) of every non-struct leaf, depth first in schema order."""
    for f in schema.fields:
        lpath, ppath = (*lp, f.name), (*pp, physical_name(f, mode))
        if isinstance(f.type, StructType):
            yield from stat_leaves(f.type, mode, lpath, ppath)
        else:
            yield lpath, ppath, f.type


def _child(arr: pa.Array | pa.ChunkedArray, name: str) -> pa.Array | pa.ChunkedArray | None:
    """A struct child with the parent's nulls applied (Spark: `s.x` is null where `s` is null)."""
    t = arr.type
    if not pa.types.is_struct(t):
        return None
    idx = t.get_field_index(name)
    if idx < 0:
        lowered = [i for i in range(t.num_fields) if t.field(i).name.lower() == name.lower()]
        if not lowered:
            return None
        idx = lowered[0]
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([c.flatten()[idx] for c in arr.chunks], type=t.field(idx).type)
    return arr.flatten()[idx]


def _leaf_column(data: pa.RecordBatch | pa.Table, path: Path,
                 cache: dict[Path, pa.Array | pa.ChunkedArray | None]) -> pa.Array | pa.ChunkedArray | None:
    """The column at `path` (exact name, else case-insensitive; parents' nulls applied), memoised in `cache`."""
    if path in cache:
        return cache[path]
    got: pa.Array | pa.ChunkedArray | None
    if len(path) == 1:
        names = data.schema.names
        idx = names.index(path[0]) if path[0] in names else next(
            (i for i, nm in enumerate(names) if nm.lower() == path[0].lower()), None)
        got = data.column(idx) if idx is not None else None
    else:
        parent = _leaf_column(data, path[:-1], cache)
        got = _child(parent, path[-1]) if parent is not None else None
    cache[path] = got
    return got


class StatsCollector:
    """Statistics of one data file, fed batch by batch (logical column names and the table's Arrow types).

    `tight_bounds`: write `"tightBounds":true` (Spark does when the protocol supports deletion vectors);
    None derives it from `delta.enableDeletionVectors` in `configuration`.
    """

    def __init__(
        self,
        logical_schema: StructType,
        mode: str = "none",
        configuration: Mapping[str, str] | None = None,
        *,
        partition_columns: Sequence[str] = (),
        tight_bounds: bool | None = None,
        string_prefix_length: int = DEFAULT_STRING_PREFIX_LENGTH,
        footer_min_max: bool = False,
    ) -> None:
        conf = configuration or {}
        # min/max from the Parquet footer the encoder writes anyway (`fold_parquet_footer`) instead of a
        # second pass over the data: string min/max alone cost ~8% of a write's CPU
        self._footer = footer_min_max
        self._schema = stats_schema(logical_schema, conf, partition_columns)
        self._mode = mode
        if tight_bounds is None:
            tight_bounds = str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true"
        self._tight = tight_bounds
        self._prefix = string_prefix_length
        self.num_records = 0
        self._leaves: list[LeafStats] = []
        for lpath, ppath, dtype in stat_leaves(self._schema, mode):
            kind = stat_kind(dtype)
            utc = not (isinstance(dtype, PrimitiveType) and dtype.name == "timestamp_ntz")
            self._leaves.append(LeafStats(lpath, ppath, kind, utc))

    @property
    def indexed_columns(self) -> list[Path]:
        """Logical paths of the leaves that get statistics."""
        return [leaf.logical for leaf in self._leaves]

    def update(self, data: pa.RecordBatch | pa.Table) -> None:
        """Fold one batch (or table) into the statistics; columns missing from it count as nulls."""
        n = data.num_rows
        if n == 0:
            return
        self.num_records += n
        # a plain loop with a local cache, not a recursive closure: a closure that calls itself is a
        # reference cycle (function -> cell -> function) holding `data` until the cycle collector runs,
        # which kept every written batch alive on long streams
        cache: dict[Path, pa.Array | pa.ChunkedArray | None] = {}
        for leaf in self._leaves:
            arr = _leaf_column(data, leaf.logical, cache)
            if arr is None:
                leaf.null_count = (leaf.null_count or 0) + n
                continue
            leaf.null_count = (leaf.null_count or 0) + (arr.null_count if not pa.types.is_null(arr.type) else len(arr))
            if leaf.kind is not None and arr.null_count < len(arr):
                if not self._footer:
                    self._fold_min_max(leaf, arr)
                elif leaf.kind in ("float", "double") and not leaf.has_nan and pc.any(pc.is_nan(arr)).as_py():
                    leaf.has_nan = True  # footers ignore NaN; Delta drops the max when there is one

    def fold_parquet_footer(self, metadata: pq.FileMetaData) -> None:
        """min/max of every leaf from the footer of the file these batches were written to.

        Used with `footer_min_max=True` when the physical names are unambiguous as dotted paths. Arrow drops
        a column chunk's min/max when a value exceeds its statistics size limit (strings over 4 KiB): a row
        group with non-null values and no min/max leaves that leaf without bounds in this file (no skipping
        on it), never with bounds that are too narrow. All-NaN float chunks have no min/max either; the NaN
        flag already drops the max, and NaN never contributes a min.
        """
        if not self._footer:
            return
        index: dict[str, int] = {}
        for i in range(metadata.num_columns):
            path = metadata.schema.column(i).path
            index[path] = -1 if path in index else i
        for leaf in self._leaves:
            if leaf.kind is None:
                continue
            col = index.get(".".join(leaf.physical), -1)
            if col < 0:
                leaf.unbounded = True
                continue
            for r in range(metadata.num_row_groups):
                rg = metadata.row_group(r)
                fold_footer_chunk(leaf, rg.column(col), rg.num_rows, count_nulls=False, nan_sorts_last=False)

    def _fold_min_max(self, leaf: LeafStats, arr: pa.Array | pa.ChunkedArray) -> None:
        kind = leaf.kind
        if kind == "geometry":
            try:
                x0, y0, x1, y1 = wkb_bounds(arr)
            except UnsupportedWkbError:
                leaf.unbounded = True
                return
            fold_box(leaf, (np.nanmin(x0, initial=np.inf), np.nanmin(y0, initial=np.inf),
                            np.nanmax(x1, initial=-np.inf), np.nanmax(y1, initial=-np.inf)))
            return
        if kind == "timestamp":
            arr = pc.cast(arr, pa.int64())
        elif kind == "date":
            arr = pc.cast(arr, pa.int32())
        elif pa.types.is_dictionary(arr.type):
            arr = pc.cast(arr, arr.type.value_type)
        mm = pc.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if kind in ("float", "double"):
            if not leaf.has_nan and pc.any(pc.is_nan(arr)).as_py():
                leaf.has_nan = True
            if lo is None or math.isnan(lo):  # only NaNs: no bound from this batch
                return
        if lo is None:
            return
        if leaf.min is None or lo < leaf.min:
            leaf.min = lo
        if leaf.max is None or hi > leaf.max:
            leaf.max = hi

    def to_dict(self) -> dict[str, Any]:
        """The stats document (min/max values are JSON-ready; see `to_json` for the exact text)."""
        return stats_document(self.num_records, self._leaves, tight_bounds=self._tight, prefix=self._prefix)

    def to_json(self) -> str:
        """The `stats` string of the add action (compact JSON, UTF-8 text, Spark's field order)."""
        return _dump(self.to_dict())


def fold_footer_chunk(leaf: LeafStats, chunk: pq.ColumnChunkMetaData, rows: int, *, count_nulls: bool,
                      nan_sorts_last: bool) -> None:
    """Fold one Parquet column chunk's statistics into `leaf` (min/max, and null counts when `count_nulls`).

    `nan_sorts_last`: the writer orders NaN above every value in its float statistics (parquet-mr), so a
    NaN max means "contains NaN" and a NaN min "only NaN". Otherwise (Arrow: NaN ignored, an all-NaN chunk
    has no min/max) the caller must already have set `has_nan` from the data or, not knowing, for every
    float leaf. A chunk with values but no usable min/max leaves the leaf `unbounded`: never a bound that
    is too narrow.
    """
    st = chunk.statistics
    nulls = st.null_count if st is not None and st.has_null_count else None
    if count_nulls:
        leaf.null_count = None if nulls is None or leaf.null_count is None else leaf.null_count + nulls
    if leaf.kind is None or (nulls is not None and nulls >= rows):
        return  # no bounds collected, or only nulls here
    if leaf.kind == "geometry":  # Parquet's GeospatialStatistics (pyarrow computes them for GEOMETRY columns)
        # (pyarrow < 21 has no geospatial statistics: the file then gets no box)
        geo = chunk.geo_statistics if getattr(chunk, "is_geo_stats_set", False) else None
        raw = (geo.xmin, geo.ymin, geo.xmax, geo.ymax) if geo is not None else (None,) * 4
        box = tuple(float("nan") if v is None else float(v) for v in raw)
        if not (box[0] <= box[2] and box[1] <= box[3]):  # NaN compares False too
            leaf.unbounded = True  # no box, or a wrapping one: no bounds rather than a guess
        else:
            fold_box(leaf, (box[0], box[1], box[2], box[3]))
        return
    floating = leaf.kind in ("float", "double")
    bounds = _footer_bounds(leaf.kind, chunk) if st is not None and st.has_min_max else None
    if bounds is None:
        if not (floating and leaf.has_nan and not nan_sorts_last):  # else: an all-NaN chunk (Arrow)
            leaf.unbounded = True
        return
    lo, hi = bounds
    if floating and (math.isnan(lo) or math.isnan(hi)):
        if not nan_sorts_last:
            leaf.unbounded = True  # NaN in the statistics of a writer whose NaN order is unknown
            return
        leaf.has_nan = leaf.has_nan or math.isnan(hi)
        if math.isnan(lo):
            return  # only NaN: no bound from this chunk
    if leaf.min is None or lo < leaf.min:
        leaf.min = lo
    if not (floating and math.isnan(hi)) and (leaf.max is None or hi > leaf.max):
        leaf.max = hi


def fold_box(leaf: LeafStats, box: tuple[float, float, float, float]) -> None:
    """Widen a geometry leaf's box ([xmin, ymin] in `min`, [xmax, ymax] in `max`); an empty box changes nothing."""
    x0, y0, x1, y1 = (float(v) for v in box)
    if not (x0 <= x1 and y0 <= y1):
        return  # only empty geometries: they meet no box, so they need no bounds
    if leaf.min is None:
        leaf.min, leaf.max = [x0, y0], [x1, y1]
        return
    leaf.min = [min(leaf.min[0], x0), min(leaf.min[1], y0)]
    leaf.max = [max(leaf.max[0], x1), max(leaf.max[1], y1)]


def _footer_bounds(kind: str, chunk: pq.ColumnChunkMetaData) -> tuple[Any, Any] | None:
    """(min, max) of a chunk in the collector's value domain, or None when the footer's are not usable."""
    st = chunk.statistics
    if kind == "timestamp":
        if chunk.physical_type != "INT64" or "microseconds" not in str(st.logical_type):
            return None
        return int(st.min_raw), int(st.max_raw)
    if kind == "date":
        return int(st.min_raw), int(st.max_raw)
    lo, hi = st.min, st.max
    if kind == "string":
        if isinstance(lo, bytes):
            lo, hi = lo.decode("utf-8"), hi.decode("utf-8")
        return (lo, hi) if isinstance(lo, str) and isinstance(hi, str) else None
    if kind in ("float", "double"):
        return float(lo), float(hi)
    return lo, hi


def stats_document(num_records: int, leaves: Sequence[LeafStats], *, tight_bounds: bool,
                   prefix: int = DEFAULT_STRING_PREFIX_LENGTH) -> dict[str, Any]:
    """Spark's stats document from folded leaves: strings truncated, values formatted, NaN drops the max,
    a leaf that is `unbounded` (or never saw a value) gets no bounds, an unknown null count no key."""
    doc: dict[str, Any] = {"numRecords": num_records}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    any_minmax = False
    for leaf in leaves:
        if leaf.null_count is not None:
            _put(nulls, leaf.physical, leaf.null_count)
        else:
            _ensure_parents(nulls, leaf.physical)
        if leaf.kind is None:
            continue
        any_minmax = True
        _ensure_parents(mins, leaf.physical)
        _ensure_parents(maxs, leaf.physical)
        if leaf.min is None or leaf.unbounded:
            continue
        lo, hi = leaf.min, leaf.max
        if leaf.kind == "geometry":  # bbox corners as WKT points (the geospatial RFC's "Per-file statistics")
            _put(mins, leaf.physical, wkt_point(lo[0], lo[1]))
            _put(maxs, leaf.physical, wkt_point(hi[0], hi[1]))
            continue
        if leaf.kind == "string":
            lo, hi = truncate_min_string(lo, prefix), truncate_max_string(hi, prefix)
        lo_j = _json_value(lo, leaf.kind, leaf.utc)
        hi_j = None if leaf.has_nan else _json_value(hi, leaf.kind, leaf.utc)
        if lo_j is not None:
            _put(mins, leaf.physical, lo_j)
        if hi_j is not None:
            _put(maxs, leaf.physical, hi_j)
    if any_minmax:
        doc["minValues"] = mins
        doc["maxValues"] = maxs
    if leaves:
        doc["nullCount"] = nulls
    if tight_bounds:
        doc["tightBounds"] = True
    return doc


def stats_json(doc: dict[str, Any]) -> str:
    """A stats document as the add action's `stats` text (compact, UTF-8, field order kept)."""
    return _dump(doc)


def _ensure_parents(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    node = doc
    for part in path[:-1]:
        node = node.setdefault(part, {})
    return node


def _put(doc: dict[str, Any], path: Path, value: Any) -> None:
    _ensure_parents(doc, path)[path[-1]] = value


def collect_stats(
    data: pa.Table | pa.RecordBatch,
    schema: StructType,
    mode: str = "none",
    configuration: Mapping[str, str] | None = None,
    *,
    partition_columns: Sequence[str] = (),
    tight_bounds: bool | None = None,
) -> str:
    """One-shot: the stats JSON of `data` (logical names)."""
    c = StatsCollector(schema, mode, configuration, partition_columns=partition_columns, tight_bounds=tight_bounds)
    c.update(data)
    return c.to_json()
