"""File skipping: which files may hold rows matching a predicate, for all files at once.

Every node is evaluated to a boolean array over files with this meaning: FALSE = provably no row of the
file makes the (possibly negated) node TRUE; TRUE or NULL = it may. AND/OR combine with Kleene logic
(one FALSE conjunct proves a conjunction empty), NOT is pushed down to the leaves (De Morgan), and the
final mask keeps every file that is not FALSE. An unknown leaf is NULL, so missing stats always keep.

Partition columns are exact per file: a subtree that reads only partition columns is evaluated with the
very pyarrow expression the row filter uses (`to_pyarrow`), so both agree on nulls and NaN.

Stats leaves are conservative because stats are lossy (PROTOCOL.md "Per-file Statistics"):
- timestamps are truncated to milliseconds: max comparisons use `value - 999us` (as delta-kernel-rs);
- string min/max may be truncated prefixes (Spark appends a tie-breaker char to max): a file is kept if
  its max, stripped of tie-breakers, is a prefix of the literal (the real max may extend it);
- NaN never shows in min/max reliably: a predicate a NaN row satisfies (`!=`, negated comparisons) is
  unknown on float columns; NaN bounds are already nulled by `stats.py`;
- nullCount is used only at 0 and numRecords, which hold for wide bounds (DVs) too, per the protocol;
- `!=` skips only for exact types (never strings/timestamps/floats) when min == max == value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..arrow_build import bool_to_arrow, scalar
from ..expressions.predicate import (
    FLIPPED,
    NEGATED,
    AlwaysFalse,
    AlwaysTrue,
    And,
    Column,
    Comparison,
    Expr,
    GeoIntersects,
    In,
    IsNull,
    Literal,
    Not,
    Or,
    arrow_expression,
    referenced_columns,
)
from ..geo.bbox import POINT_TYPE
from ..geo.bbox import intersects as bbox_intersects
from ..schema.collations import has_non_binary_collation
from ..stats.parse import FileStats, parse_stats, stats_from_struct

Path = tuple[str, ...]
_MAX_IN_EXPANSION = 32  # IN lists up to this size are checked value by value, longer ones by range
_TIE_BREAKERS = "\uffff\U0010ffff"
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError,
                 OverflowError)
_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}


def skipping_mask(
    expr: Expr | None,
    stats: FileStats | None,
    partition_values: dict[Path, pa.Array] | None,
    num_files: int,
) -> pa.BooleanArray:
    """True = the file may contain rows where `expr` is TRUE (keep it); never null."""
    if expr is None or num_files == 0:
        return bool_to_arrow(np.ones(num_files, dtype=np.bool_))
    ev = Evaluator(stats if stats is not None else FileStats.empty(num_files), partition_values or {}, num_files)
    try:
        result = ev.eval(expr, False)
    except Exception:
        return bool_to_arrow(np.ones(num_files, dtype=np.bool_))
    return pc.fill_null(result, scalar(True))


#: parsed-stats entries a `stats_cache` keeps (one per set of referenced columns)
STATS_CACHE_ENTRIES = 16


def file_skipping_mask(snapshot: Any, files: pa.Table, predicate: Expr,
                       stats_cache: dict[Any, Any] | None = None) -> pa.BooleanArray:
    """The scan's entry point: typed partition values + stats of the file table, then `skipping_mask`.

    `stats_cache`: a dict the caller keeps for *this same* `files` table (a pinned snapshot's): the parsed
    stats of each set of referenced columns are kept there (at most `STATS_CACHE_ENTRIES`), so repeated
    queries do not parse the stats JSON again."""
    from .partition_values import partition_columns_table

    n = files.num_rows
    schema, mode = snapshot.schema, snapshot.column_mapping_mode
    cols = referenced_columns(predicate)
    # a partition column with a non-binary collation is not pruned on: the caller's operator may compare by
    # that collation ('a' = 'A') where the exact evaluation below compares bytes (kernel/schema/collations.py)
    part_fields = [f for f in snapshot.partition_fields if any(c[0].lower() == f.name.lower() for c in cols)
                   and not has_non_binary_collation(f)]
    pv: dict[Path, pa.Array] = {}
    if part_fields and "partition_values" in files.column_names:
        paths = files.column("path") if "path" in files.column_names else None
        typed = partition_columns_table(files.column("partition_values"), part_fields, mode, paths=paths)
        pv = {(name,): arr for name, arr in typed.items()}
    data_cols = {c for c in cols if (c[0],) not in pv}
    stats: FileStats | None = None
    key = frozenset(data_cols)
    if data_cols and stats_cache is not None and key in stats_cache:
        stats = stats_cache[key]
    elif data_cols:
        if "stats" in files.column_names:
            stats = parse_stats(files.column("stats"), schema, mode, data_cols)
        if "stats_parsed" in files.column_names:
            parsed = stats_from_struct(files.column("stats_parsed"), schema, mode, data_cols)
            stats = parsed if stats is None else stats.coalesce(parsed)
        if stats_cache is not None:
            if len(stats_cache) >= STATS_CACHE_ENTRIES:
                try:  # the oldest entry; another thread may be evicting at the same time
                    stats_cache.pop(next(iter(stats_cache)), None)
                except (RuntimeError, StopIteration):
                    pass
            stats_cache[key] = stats
    return skipping_mask(predicate, stats, pv, n)


class Evaluator:
    def __init__(self, stats: FileStats, partitions: dict[Path, pa.Array], n: int) -> None:
        self.stats = stats
        self.partitions = {k: (v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v)
                           for k, v in partitions.items()}
        self.n = n

    # ------------------------------------------------------------------ constants
    def const(self, value: bool | None) -> pa.Array:
        if value is None:
            return pa.nulls(self.n, pa.bool_())
        return bool_to_arrow(np.full(self.n, value, dtype=np.bool_))

    def unknown(self) -> pa.Array:
        return self.const(None)

    # ------------------------------------------------------------------ tree
    def eval(self, e: Expr, neg: bool) -> pa.Array:
        cols = referenced_columns(e)
        if cols and all(c in self.partitions for c in cols):
            return self.exact(e, neg)
        if isinstance(e, AlwaysTrue):
            return self.const(neg is False)
        if isinstance(e, AlwaysFalse):
            return self.const(neg is True)
        if isinstance(e, Not):
            return self.eval(e.child, not neg)
        if isinstance(e, (And, Or)):
            conj = isinstance(e, And) != neg  # NOT(a AND b) = NOT a OR NOT b
            if not e.children:
                return self.const(conj)
            parts = [self.eval(c, neg) for c in e.children]
            out = parts[0]
            for p in parts[1:]:
                out = pc.and_kleene(out, p) if conj else pc.or_kleene(out, p)
            return out
        if isinstance(e, Comparison):
            return self.comparison(e, neg)
        if isinstance(e, IsNull):
            return self.is_null(e.column.path, e.negated != neg)
        if isinstance(e, In):
            return self.in_list(e, neg)
        if isinstance(e, GeoIntersects):
            return self.geo_intersects(e, neg)
        if isinstance(e, Literal):
            v = e.value
            return self.const(bool(v) != neg if isinstance(v, bool) else False)
        return self.unknown()

    def exact(self, e: Expr, neg: bool) -> pa.Array:
        """Partition-only subtree: evaluate the row filter itself on the per-file partition values."""
        names = {c: f"c{i}" for i, c in enumerate(sorted(referenced_columns(e)))}
        table = pa.table({names[c]: self.partitions[c] for c in names})
        renamed = _rename(e, names)
        types: dict[Path, pa.DataType] = {(names[c],): self.partitions[c].type for c in names}
        try:
            import pyarrow.dataset as ds  # only for partition subtrees: importing it imports pandas (0.1-0.9 s)

            pa_expr = arrow_expression(Not(renamed) if neg else renamed, types)
            out = ds.dataset(table).to_table(columns={"r": pa_expr}).column("r").combine_chunks()
        except _ARROW_ERRORS:
            return self.unknown()
        return pc.fill_null(out, scalar(False))  # NULL row predicate: the rows are not selected

    # ------------------------------------------------------------------ leaves
    def bounds(self, path: Path) -> tuple[pa.Array | None, pa.Array | None, pa.Array]:
        mn, mx = self.stats.min_values.get(path), self.stats.max_values.get(path)
        return mn, mx, self.not_all_null(path)

    def not_all_null(self, path: Path) -> pa.Array:
        """FALSE where every row of the file is null in the column (nullCount == numRecords)."""
        nc = self.stats.null_count.get(path)
        if nc is None:
            return self.unknown()
        return pc.not_equal(nc, self.stats.num_records)

    def comparison(self, e: Comparison, neg: bool) -> pa.Array:
        left, right, op = e.left, e.right, e.op
        if isinstance(left, Literal) and isinstance(right, Column):
            left, right, op = right, left, FLIPPED[op]
        if isinstance(left, Literal) and isinstance(right, Literal):
            try:
                r = _CMP[op](left.to_scalar(), right.to_scalar()).as_py()
            except _ARROW_ERRORS:
                return self.unknown()
            return self.const(False if r is None else r != neg)
        if not (isinstance(left, Column) and isinstance(right, Literal)):
            return self.unknown()  # column vs column: no skipping
        if right.value is None:
            return self.const(False)  # a comparison with NULL is never TRUE, nor is its negation
        path = left.path
        mn, mx, not_all_null = self.bounds(path)
        ref = mn if mn is not None else mx
        if ref is None:
            return self.and_(not_all_null, self.unknown())
        floating = pa.types.is_floating(ref.type) or _is_nan(right.value)
        if neg:
            if floating:  # NOT (x op v) is TRUE for NaN rows, which min/max do not describe
                return self.and_(not_all_null, self.unknown())
            op = NEGATED[op]
        if op == "!=":
            if floating or pa.types.is_string(ref.type) or pa.types.is_timestamp(ref.type) or mn is None \
                    or mx is None:
                return self.and_(not_all_null, self.unknown())
            v = _scalar(right, mn.type)
            all_equal = self.and_(_safe(pc.equal, mn, v, self.n), _safe(pc.equal, mx, v, self.n))
            return self.and_(not_all_null, pc.invert(all_equal))
        checks: list[pa.Array] = []
        if op in ("=", "<", "<=") and mn is not None:
            checks.append(_safe(_CMP["<=" if op != "<" else "<"], mn, _scalar(right, mn.type), self.n))
        if op in ("=", ">", ">=") and mx is not None:
            checks.append(self.max_check(mx, right, ">" if op == ">" else ">="))
        out = not_all_null
        for c in checks:
            out = self.and_(out, c)
        if not checks:
            out = self.and_(out, self.unknown())
        return out

    def max_check(self, mx: pa.Array, lit: Literal, op: str) -> pa.Array:
        """`max op value` allowing for truncated max stats (timestamps: ms; strings: prefixes)."""
        v = _scalar(lit, mx.type)
        if pa.types.is_timestamp(mx.type):
            try:
                v = _minus_truncation(v.cast(mx.type))
            except _ARROW_ERRORS:
                return self.unknown()
        out = _safe(_CMP[op], mx, v, self.n)
        if (pa.types.is_string(mx.type) or pa.types.is_large_string(mx.type)) and isinstance(lit.value, str):
            stripped = pc.utf8_rtrim(mx, characters=_TIE_BREAKERS)
            prefixes = pa.array([lit.value[:i] for i in range(len(lit.value) + 1)], pa.string())
            out = pc.or_kleene(out, pc.is_in(stripped, value_set=prefixes))
        return out

    def is_null(self, path: Path, negated: bool) -> pa.Array:
        nc = self.stats.null_count.get(path)
        if nc is None:
            return self.unknown()
        if negated:  # IS NOT NULL: skip when every row is null
            return pc.not_equal(nc, self.stats.num_records)
        return pc.not_equal(nc, scalar(0, nc.type))  # IS NULL: skip when no row is null

    def in_list(self, e: In, neg: bool) -> pa.Array:
        col = e.column
        neg = e.negated != neg
        nonnull = [v for v in e.values if v is not None]
        if not neg:  # x IN (...) is TRUE only for a non-null x equal to a non-null element
            if not nonnull:
                return self.const(False)
            if any(_is_nan(v) for v in nonnull):
                # IN matches NaN to NaN (unlike `=`), and min/max stats say nothing about NaN rows
                return self.and_(self.not_all_null(col.path), self.unknown())
            if len(nonnull) <= _MAX_IN_EXPANSION:
                out = self.const(False)
                for v in nonnull:
                    out = pc.or_kleene(out, self.comparison(Comparison("=", col, Literal(v, e.value_type)), False))
                return out
            try:
                lo, hi = min(nonnull), max(nonnull)
            except TypeError:
                return self.unknown()
            ge_lo = self.comparison(Comparison(">=", col, Literal(lo, e.value_type)), False)
            le_hi = self.comparison(Comparison("<=", col, Literal(hi, e.value_type)), False)
            return self.and_(ge_lo, le_hi)
        # NOT IN: never TRUE with a NULL element; else x != v for every v (a subset of the conjuncts is sound)
        if len(nonnull) != len(e.values):
            return self.const(False)
        out = self.const(True)
        for v in nonnull[:_MAX_IN_EXPANSION]:
            out = pc.and_kleene(out, self.comparison(Comparison("!=", col, Literal(v, e.value_type)), False))
        if not nonnull:  # x NOT IN () is TRUE for every non-null x
            out = self.not_all_null(col.path)
        return out

    def geo_intersects(self, e: GeoIntersects, neg: bool) -> pa.Array:
        """Bounding-box skipping: FALSE only where the file's bbox (stats) provably misses the query box.

        Only geometry stats are parsed as boxes (`stats/parse.py`: geography edges are geodesics, whose
        extent a vertex box does not bound, so geography never skips); either box may wrap the antimeridian.
        """
        path = e.column.path
        not_all_null = self.not_all_null(path)
        mn, mx = self.stats.min_values.get(path), self.stats.max_values.get(path)
        if neg or mn is None or mx is None or mn.type != POINT_TYPE or mx.type != POINT_TYPE:
            return self.and_(not_all_null, self.unknown())

        def coord(arr: pa.Array, name: str) -> np.ndarray:
            return np.asarray(pc.fill_null(arr.field(name), np.nan).to_numpy(zero_copy_only=False), np.float64)

        x0, y0, x1, y1 = coord(mn, "x"), coord(mn, "y"), coord(mx, "x"), coord(mx, "y")
        hit = bbox_intersects(x0, y0, x1, y1, e.box)
        known = ~(np.isnan(x0) | np.isnan(y0) | np.isnan(x1) | np.isnan(y1))
        keep = bool_to_arrow(hit | ~known)
        return self.and_(not_all_null, pc.if_else(bool_to_arrow(known), keep, self.unknown()))

    def and_(self, a: pa.Array, b: pa.Array) -> pa.Array:
        return pc.and_kleene(a, b)


# ----------------------------------------------------------------------------- helpers
def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and v != v


def _scalar(lit: Literal, hint: pa.DataType) -> pa.Scalar:
    return lit.to_scalar(hint)


def _safe(fn: Callable[[Any, Any], Any], arr: pa.Array, scalar: pa.Scalar, n: int) -> pa.Array:
    """A comparison kernel, or all-unknown when Arrow cannot compare the types."""
    try:
        return fn(arr, scalar)
    except _ARROW_ERRORS:
        return pa.nulls(n, pa.bool_())


def _minus_truncation(v: pa.Scalar) -> pa.Scalar:
    """`v - 999us` in v's unit, saturating: compares a ms-truncated max as if it were max + 999us."""
    per_us = {"s": 0, "ms": 0, "us": 1, "ns": 1000}[v.type.unit]
    raw = v.cast(pa.int64()).as_py()
    if raw is None or per_us == 0:
        return v
    return scalar(max(raw - 999 * per_us, -(2**63)), pa.int64()).cast(v.type)


def _rename(e: Expr, names: dict[Path, str]) -> Expr:
    """The expression over flat columns c0, c1, ... (the exact evaluation's table)."""
    if isinstance(e, Column):
        return Column((names[e.path],))
    if isinstance(e, Comparison):
        return Comparison(e.op, _rename(e.left, names), _rename(e.right, names))  # type: ignore[arg-type]
    if isinstance(e, In):
        return In(Column((names[e.column.path],)), e.values, e.negated, e.value_type)
    if isinstance(e, IsNull):
        return IsNull(Column((names[e.column.path],)), e.negated)
    if isinstance(e, Not):
        return Not(_rename(e.child, names))
    if isinstance(e, And):
        return And(*[_rename(c, names) for c in e.children])
    if isinstance(e, Or):
        return Or(*[_rename(c, names) for c in e.children])
    return e


__all__ = ["skipping_mask", "file_skipping_mask"]
