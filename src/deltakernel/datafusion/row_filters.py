"""Per query, per table: the Parquet row filter only where a join's dynamic filter reaches the scan.

Why: DataFusion (55) evaluates a scan's predicate inside the Parquet reader (late materialization,
`parquet.pushdown_filters`) for *all* of it or *none* of it, decided by one option of the ListingTable, which
deltakernel makes when the table is registered - before any query is known. The two kinds of predicate
want opposite answers (docs/decisions.md, "Embedded TPC-H vs DuckDB" and "... per scan"): a scan whose only
predicate is the query's own (TPC-H Q6: 2 % of rows spread over every page) decodes 1.4-3x less CPU without the
row filter (decode the filter columns fully, then one vectorized filter), while a scan pruned by the dynamic
filter of a join's build side (Q17 / Q18: 99.9 % of lineitem removed before the other columns are decoded)
takes 2x as long without it.

What deltakernel can do: it sees the statement when the query goes through its entry points (`dkdf.sql`,
`deltakernel.QueryBuilder.execute`; a plain `ctx.sql` keeps the registered views, row filter on). It plans the
statement once, reads the scans of the physical plan (`DataSourceExec`: which table's link directories, a static
predicate, a `DynamicFilter`), and for each Delta table on the listing path whose scans have a static predicate
and none of which receives a dynamic filter, plans the statement again with that table's references pointed at
its twin view without the row filter (`listing.without_row_filter`: same snapshot, same files, same schema -
only where the predicate is evaluated differs, so the rows are the same). The twin is registered under a hidden
name for the planning only (a planned DataFrame holds its providers) and the statement's table references are
rewritten in the text (sqlglot positions; the original name stays as the alias, so qualified columns and the
result's column names are unchanged - checked: a different result schema keeps the first plan).

Decided per table, not per reference: a table's references cannot be told apart in the physical plan. Bounded:
one extra planning of the statement (EXPLAIN-level: listing the link directories, cached footers) and a
second one only when a table changes; anything unexpected (a parse or planning error, a name that is not
plainly one registered table, a common table expression of the same name) keeps the first plan.
"""

from __future__ import annotations

import itertools
import re
import threading
from dataclasses import dataclass
from typing import Any

from .listing import scanned_dirs, without_row_filter
from .session_tables import DEFAULT_CATALOG, DEFAULT_SCHEMA, registered_tables

#: "dynamic": a table loses the row filter when its scans have a static predicate and no join-dynamic filter;
#: "selective": ... and no join-dynamic filter from a reduced build side (`ScanInfo.selective`);
#: "off": never changes a plan (the registered views, row filter everywhere)
POLICY = "dynamic"

_QUERY_START = re.compile(r"\s*(?:(?:--[^\n]*\n|/\*.*?\*/)\s*)*(?:select|with|\()", re.IGNORECASE | re.DOTALL)
_LINK_DIR = re.compile(r"deltakernel-df-links-[^/\s]+/([0-9a-f]{32})/")
_PREDICATE = re.compile(r", predicate=(.*?)(?:, pruning_predicate=|, dynamic_rg_pruning=|$)")
_DYNAMIC = re.compile(r"DynamicFilter \[[^\]]*\]")
_hidden = itertools.count()
_hidden_lock = threading.Lock()


@dataclass(frozen=True)
class ScanInfo:
    """One `DataSourceExec` of a physical plan: the link directories it reads and what its predicate holds."""

    dirs: frozenset[str]
    static: bool  # a predicate of the query's own (not only join-dynamic filters)
    dynamic: bool  # at least one join-dynamic filter
    #: a dynamic filter that can be selective: the scan is on the probe side of a hash join whose build side is
    #: reduced by a predicate, a limit or a HAVING (an unreduced build side - a whole dimension table - holds
    #: every key of a foreign-key join: its filter removes nothing and costs a hash lookup per row)
    selective: bool


def _reduces(text: str) -> bool:
    """Whether an operator (its one-line display) keeps fewer rows than its input for a reason of the query's."""
    if text.startswith(("FilterExec", "GlobalLimitExec", "LocalLimitExec")):
        return True
    if text.startswith("SortExec") and "fetch=" in text:
        return True
    return text.startswith("DataSourceExec") and _static(_predicate(text))


def _predicate(text: str) -> str:
    m = _PREDICATE.search(text)
    return m.group(1) if m else ""


def _static(predicate: str) -> bool:
    return bool(_DYNAMIC.sub("", predicate).replace("AND", "").strip())


def scans(plan: Any) -> list[ScanInfo]:
    """The Parquet scans of a datafusion-python `ExecutionPlan` (walked through `children()`)."""
    out: list[ScanInfo] = []
    todo: list[tuple[Any, bool]] = [(plan, False)]  # (node, on the probe side of a join with a reduced build)
    while todo:
        node, probe_of_reduced = todo.pop()
        text = node.display()
        children = node.children()
        if text.startswith("HashJoinExec") and len(children) == 2:
            todo.append((children[0], probe_of_reduced))
            todo.append((children[1], probe_of_reduced or _subtree_reduces(children[0])))
            continue
        todo.extend((child, probe_of_reduced) for child in children)
        if not text.startswith("DataSourceExec") or "file_type=parquet" not in text:
            continue
        predicate = _predicate(text)
        dynamic = "DynamicFilter [" in predicate
        out.append(ScanInfo(frozenset(_LINK_DIR.findall(text)), _static(predicate), dynamic,
                            dynamic and probe_of_reduced))
    return out


def _subtree_reduces(node: Any) -> bool:
    todo = [node]
    while todo:
        n = todo.pop()
        if _reduces(n.display()):
            return True
        todo.extend(n.children())
    return False


def tables_without_row_filter(ctx: Any, plan: Any) -> dict[tuple[str, str, str], Any]:
    """The Delta tables of `ctx` (registry key -> dataset) whose scans in `plan` should read without the row
    filter under `POLICY`: listing path, some scan with a static predicate or a dynamic filter, none with a
    dynamic filter that counts ("dynamic": any; "selective": `ScanInfo.selective`)."""
    if POLICY not in ("dynamic", "selective"):
        return {}
    by_dir: dict[str, tuple[str, str, str]] = {}
    datasets = {}
    for key, ds in registered_tables(ctx).items():
        if getattr(ds, "scan_path", None) == "listing":
            datasets[key] = ds
            for d in scanned_dirs(ds):
                by_dir[d] = key
    filtered: set[tuple[str, str, str]] = set()
    keep: set[tuple[str, str, str]] = set()
    for scan in scans(plan):
        for key in {by_dir[d] for d in scan.dirs if d in by_dir}:
            if scan.static or scan.dynamic:
                filtered.add(key)
            if scan.selective if POLICY == "selective" else scan.dynamic:
                keep.add(key)
    return {key: datasets[key] for key in filtered - keep}


def is_query(statement: str) -> bool:
    """Whether `statement` is a query (SELECT / WITH / parenthesized) - `ctx.sql` runs anything else (DDL, SET)
    eagerly, so only queries may be planned twice."""
    return _QUERY_START.match(statement) is not None


def query(ctx: Any, statement: str, *args: Any, **kwargs: Any) -> Any:
    """`ctx.sql(statement, ...)` for a query, with the tables `tables_without_row_filter` picks read through
    their twin views without the Parquet row filter (same rows). Anything else: exactly `ctx.sql(...)`."""
    df = ctx.sql(statement, *args, **kwargs)
    if POLICY == "off" or not is_query(statement) \
            or not any(getattr(ds, "scan_path", None) == "listing" for ds in registered_tables(ctx).values()):
        return df
    try:
        off = tables_without_row_filter(ctx, df.execution_plan())
    except Exception:  # a statement DataFusion cannot plan physically: its execution reports the error
        return df
    if not off:
        return df
    twins = {key: without_row_filter(ds) for key, ds in off.items()}
    twins = {key: frame for key, frame in twins.items() if frame is not None}
    hidden = {key: _hidden_name() for key in twins}
    rewritten = _rewrite(statement, hidden, [key[2] for key in registered_tables(ctx)])
    if rewritten is None:
        return df
    registered: list[str] = []
    try:
        for key, name in hidden.items():
            ctx.register_view(name, twins[key])
            registered.append(name)
        other = ctx.sql(rewritten, *args, **kwargs)  # resolves (holds) the twin views: deregistering is safe
        if other.schema() != df.schema():
            return df
        return other
    except Exception:
        return df
    finally:
        for name in registered:
            ctx.deregister_table(name)


def _hidden_name() -> str:
    with _hidden_lock:
        return f"__deltakernel_no_row_filter_{next(_hidden)}"


def _rewrite(statement: str, hidden: dict[tuple[str, str, str], str], registered: list[str]) -> str | None:
    """`statement` with every reference to a table of `hidden` (a bare name resolving to the key in DataFusion's
    default catalog and schema) replaced by `<hidden name> AS <the name as written>` (an existing alias is
    kept). None when any of them is referenced otherwise (qualified, shadowed by a CTE, ambiguous) or the text
    does not parse."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(statement, read="postgres")
    except Exception:
        return None
    if tree is None:
        return None
    names = {key[2]: key for key in hidden}
    if any(sum(r.lower() == n.lower() for r in registered) > 1 for n in names):
        return None  # names differing in case only: which one an unquoted name means depends on the session
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    if any(name.lower() in ctes for name in names):
        return None
    edits: list[tuple[int, int, str]] = []
    for table in tree.find_all(exp.Table):
        ident = table.this
        if not isinstance(ident, exp.Identifier):
            continue
        quoted = bool(ident.args.get("quoted"))
        matches = [n for n in names if (ident.name == n if quoted else n in (ident.name, ident.name.lower()))]
        if not matches:
            continue
        key = names[matches[0]]
        if len(matches) > 1 or table.args.get("db") or table.args.get("catalog") \
                or key[:2] != (DEFAULT_CATALOG, DEFAULT_SCHEMA):
            return None
        start, end = ident.meta.get("start"), ident.meta.get("end")
        if start is None or end is None:
            return None
        written = statement[start:end + 1]
        edits.append((start, end + 1, hidden[key] if table.alias else f"{hidden[key]} AS {written}"))
    if not edits:
        return None
    out = statement
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return out


__all__ = ["POLICY", "ScanInfo", "is_query", "query", "scans", "tables_without_row_filter"]
