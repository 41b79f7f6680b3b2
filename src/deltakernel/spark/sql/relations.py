"""Queries that read Delta tables: each Delta relation becomes a temporary view over the native read plan.

Spark cannot resolve `delta`.`/path`, a catalog table whose provider is the Python "delta" source (Spark 4
gives such a source no path), `t VERSION AS OF n` / `TIMESTAMP AS OF ...` on them, or `table_changes(...)`.
The router finds those references in Spark's parsed plan (UnresolvedRelation, RelationTimeTravel,
UnresolvedTableValuedFunction nodes, with their text spans), registers one temporary view per distinct
(table, version / timestamp / change range) over `reader.read` — the native Parquet plan with kernel file
skipping, or the change data feed — and runs the statement with each reference's text replaced by the
view's name, so everything else (joins, subqueries, CTEs, parameters, EXPLAIN, CACHE, temp views over the
query) is Spark's own. The views are re-pointed at the latest snapshot by every statement that names the
table; an unaliased catalog table keeps its name as the alias (`SELECT t.c FROM t` still resolves).

Limits: a permanent view cannot reference the temporary views, so `CREATE VIEW v AS SELECT ... FROM <Delta>`
is refused (a temporary view works); references inside SQL functions or in text Spark never parses (e.g.
strings built at run time) are not seen.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ...errors import UnsupportedFeatureError
from ..catalog import DeltaRef, require, resolve, split_name
from . import plans as P
from .commands import evaluate_timestamp
from .grammar import DeltaSqlError

_CHANGES = ("table_changes", "table_changes_by_path")


@dataclass
class _Use:
    start: int
    stop: int
    ref: DeltaRef
    options: dict[str, str]
    alias: str | None  # added after the view name when the statement gave none


def _literal(node: Any, run_sql: Any) -> Any:
    """A constant argument's value (Spark evaluates anything but a plain literal)."""
    if P.name(node) == "Literal":
        v = node.value()
        return None if v is None else (v if isinstance(v, (int, float)) else str(v))
    row = run_sql(f"SELECT {node.sql()} AS v").first()
    return row[0] if row is not None else None


def _changes_use(spark: Any, node: Any, run_sql: Any) -> tuple[DeltaRef, dict[str, str]]:
    fn = [str(p) for p in P.seq(node.name())][-1].lower()
    args = [_literal(a, run_sql) for a in P.seq(node.functionArgs())]
    if len(args) not in (2, 3) or args[0] is None:
        raise DeltaSqlError(f"{fn}(table, start [, end]) takes 2 or 3 arguments")
    if fn == "table_changes_by_path":
        ref = DeltaRef(str(args[0]), str(args[0]))
    else:
        name = str(args[0])
        ref = require(spark, split_name(spark, name), name)
    opts = {"readChangeFeed": "true"}
    for bound, value in (("starting", args[1]), ("ending", args[2] if len(args) > 2 else None)):
        if value is None:
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
            opts[f"{bound}Version"] = str(int(value))
        else:
            opts[f"{bound}Timestamp"] = str(value)
    return ref, opts


def find_uses(spark: Any, plan: Any, run_sql: Any) -> list[_Use]:
    """The Delta references of a parsed statement, with the text span each one replaces."""
    ctes: set[str] = set()  # WITH names shadow tables; a WITH node is walked before the queries using it
    uses: list[_Use] = []
    covered: list[tuple[int, int]] = []
    for node, parent in P.walk(plan):
        n = P.name(node)
        if n == "UnresolvedWith":
            ctes.update(str(c.alias()).lower() for c in P.seq(node.innerChildren()) if P.name(c) == "SubqueryAlias")
            continue
        if n not in ("RelationTimeTravel", "UnresolvedRelation", "UnresolvedTableValuedFunction"):
            continue
        aliased = parent is not None and P.name(parent) == "SubqueryAlias"
        if n == "RelationTimeTravel":
            parts = P.identifier_parts(node.relation())
            if parts is None or (len(parts) == 1 and parts[0].lower() in ctes):
                continue
            ref = resolve(spark, parts)
            s = P.relation_span(node)
            if ref is None or s is None:
                continue
            version = P.opt(node.version())
            opts: dict[str, str]
            if version is not None:
                opts = {"versionAsOf": str(version)}
            else:
                ts = P.opt(node.timestamp())
                opts = {"timestampAsOf": evaluate_timestamp(run_sql, str(ts.sql()))}
            uses.append(_Use(s[0], s[1], ref, opts, None if aliased else _default_alias(ref)))
            covered.append(s)
        elif n == "UnresolvedRelation":
            parts = P.identifier_parts(node) or []
            if len(parts) == 1 and parts[0].lower() in ctes:
                continue
            ref = resolve(spark, parts)
            s = P.span(node) if ref is not None else None
            if ref is None or s is None or any(a <= s[0] and s[1] <= b for a, b in covered):
                continue
            uses.append(_Use(s[0], s[1], ref, {}, None if aliased else _default_alias(ref)))
        elif n == "UnresolvedTableValuedFunction":
            fn = [str(p) for p in P.seq(node.name())]
            s = P.span(node)
            if len(fn) == 1 and fn[0].lower() in _CHANGES and s is not None:
                ref, opts = _changes_use(spark, node, run_sql)
                uses.append(_Use(s[0], s[1], ref, opts, None))
    return uses


def _default_alias(ref: DeltaRef) -> str | None:
    return ref.table if ref.is_catalog else None


def view_name(ref: DeltaRef, options: dict[str, str]) -> str:
    key = repr((ref.location, sorted(options.items())))
    return "__delta_" + hashlib.sha1(key.encode()).hexdigest()[:16]


def rewrite(spark: Any, text: str, plan: Any, run_sql: Any) -> str | None:
    """`text` with every Delta reference replaced by a temporary view over it (registered here); None when
    the statement reads no Delta table."""
    uses = find_uses(spark, plan, run_sql)
    if not uses:
        return None
    if P.name(plan) in ("CreateView", "AlterViewAs"):
        raise UnsupportedFeatureError("views over Delta tables", "a permanent view cannot read Delta tables through "
                                      "deltakernel (Spark cannot resolve them by itself); use CREATE TEMPORARY "
                                      "VIEW, or read the table in each query")
    from ..reader import read

    frames: dict[str, Any] = {}
    for use in uses:
        name = view_name(use.ref, use.options)
        if name not in frames:
            frames[name] = read(spark, use.ref.location, **use.options)
            frames[name].createOrReplaceTempView(name)
    out = text
    for use in sorted(uses, key=lambda u: u.start, reverse=True):
        name = view_name(use.ref, use.options)
        replacement = name if use.alias is None else f"{name} AS {P.quote(use.alias)}"
        out = out[:use.start] + replacement + out[use.stop + 1:]
    return out


__all__ = ["find_uses", "rewrite", "view_name"]
