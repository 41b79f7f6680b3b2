"""Spark Connect reads of Delta tables as a lazy leaf of the client's logical plan, planned when the plan is sent.

A Connect DataFrame is a tree of Python `LogicalPlan` objects (pyspark.sql.connect.plan) until an action, an
analysis (`schema`, `explain`, `inputFiles`) or a command (`createOrReplaceTempView`, writes) serializes it.
`load()` / `spark.table()` of a Delta table return a DataFrame whose plan is a `DeltaScan` leaf (snapshot, read
options) instead of a fixed file list. When a plan is serialized, one pushdown pass runs from its root
(`assign`): every Filter condition above each Delta leaf - and the single-side conjuncts of join conditions -
is carried down to the leaf through pass-through columns of `select` / `withColumn(s)` / renames / `drop`, through
aliases (`alias`, `SubqueryAlias`), into the sides of a join the join type allows and into every branch of a set
operation (by position, or by name for `unionByName`); it stops at anything that changes which rows reach it
(limits, samples, aggregates, de-duplication, windows, non-deterministic or unknown functions, `observe`,
nested SQL). The leaf then emits Spark's Parquet scan of exactly the files the kernel keeps for the conjuncts it
can read (`public_plan.public_frame`); a conjunct the kernel cannot read exactly is simply not used (Spark
still applies every condition: never a wrong answer). So every DataFrame shape skips files by construction.

Temporary views made from such DataFrames (`df.createOrReplaceTempView`) are remembered here (name -> DataFrame)
so the SQL router and `spark.table(view)` expand them with the statement's conditions; Spark's own copy of the
view reads the Delta leaves through the registered Python data source (no file named, filters pushed to it by
Spark), so creating it touches no data file. The eager analysis of a routed query (`analysis_scans`) reads its
Delta leaves the same way: Spark checks no data file at `spark.sql()`, and the action plans the files.

Connect client internals used (one place; pyspark 4.3.0 tested, attributes unchanged since 3.5/4.0):
`LogicalPlan` (`_child`, `_references`, `_plan_id`, `plan`, `to_proto`, `command` of its subclasses), `Filter.filter`,
`Project._columns`, `WithColumns._columnNames/_columns`, `WithColumnsRenamed._colsMap`, `Drop._columns`,
`Join.left/right/on/how`, `SetOperation.other/set_op/by_name`, `SubqueryAlias._alias`, and the expression classes
read by `connect_filters`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from ...kernel.snapshot import Snapshot
from ..kinds.dataframe_subclass import PlainNew
from .frame_keys import KEYING

TESTED_PYSPARK = ("4.3.0",)

_log = logging.getLogger(__name__)
_ACTIVE: contextvars.ContextVar[_Assignment | None] = contextvars.ContextVar("dk_connect_pushdown", default=None)
#: a plan serialized now is only analysed by Spark, never executed (`analysis_scans`)
_ANALYSIS: contextvars.ContextVar[bool] = contextvars.ContextVar("dk_connect_analysis", default=False)
_MAX_FRAMES = 8  # planned frames kept per leaf (one per distinct pushed predicate)


def _keep(memo: dict[Any, Any], key: Any, value: Any) -> None:
    """`memo[key] = value`, the oldest entry dropped first when `memo` holds `_MAX_FRAMES` (caller holds its lock)."""
    if len(memo) >= _MAX_FRAMES:
        memo.pop(next(iter(memo)))
    memo[key] = value


def plan_base() -> type:
    """The Connect client's `LogicalPlan` (`object` without the connect extra): the base of every plan node here."""
    try:
        from pyspark.sql.connect.plan import LogicalPlan
    except ImportError:  # pragma: no cover - pyspark without the connect extra: never instantiated
        return object
    return LogicalPlan  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- the leaf
class DeltaScan(plan_base()):  # type: ignore[misc]
    """A Delta table read: snapshot and options; the files are chosen when the plan is serialized."""

    def __init__(self, spark: Any, snapshot: Snapshot, row_tracking: bool = False, predicate: Any = None) -> None:
        super().__init__(None)
        self.spark = spark
        self.snapshot = snapshot
        self.row_tracking = row_tracking
        self.predicate = predicate  # given by the SQL router (the statement's conjuncts for this reference)
        self._frames: dict[str, tuple[Any, int]] = {}
        self._frames_lock = threading.Lock()

    # the files and the plan for one predicate -------------------------------------------------------------
    def combined(self, pushed: Any) -> Any:
        from ...kernel.expressions.predicate import And

        if pushed is None:
            return self.predicate
        return pushed if self.predicate is None else And(self.predicate, pushed)

    def planned(self, pushed: Any) -> tuple[Any, int]:
        """(Connect DataFrame over the kept files, files kept) for the pushed predicate (kept per leaf)."""
        from .public_plan import planned_files, public_frame

        predicate = self.combined(pushed)
        key = repr(predicate)
        with self._frames_lock:
            found = self._frames.get(key)
        if found is not None:
            return found
        files, _ = planned_files(self.snapshot, predicate)
        frame = public_frame(self.spark, self.snapshot, files=files, row_tracking=self.row_tracking)
        out = (frame, files.num_rows)
        with self._frames_lock:
            _keep(self._frames, key, out)
        return out

    def plan(self, session: Any) -> Any:
        versions = KEYING.get()
        if versions is not None:  # `frame_keys.plan_key` builds the plan's key
            return self._key_relation(versions)
        active = _ACTIVE.get()
        if active is not None and not self.row_tracking and (active.analysis or (active.view_mode and
                                                                                  self.predicate is None)):
            frame = _source_frame(self.spark, self.snapshot)  # names no data file (see `analysis_scans`)
        else:
            pushed = active.predicates.get(id(self)) if active is not None else None
            frame = self.planned(pushed)[0]
        rel = frame._plan.plan(session)
        rel.common.plan_id = self._plan_id  # columns bound to this DataFrame (`df["id"]`) resolve on the scan
        return rel

    def _key_relation(self, versions: bool) -> Any:
        """The leaf in a plan's key (`frame_keys.py`): table, schema, flags, and the version when asked."""
        from pyspark.sql.connect import proto

        rel = proto.Relation()
        rel.common.plan_id = self._plan_id
        source = rel.read.data_source
        source.format = "deltakernel-leaf"
        source.options["table"] = str(self.snapshot.storage.root_uri)
        source.options["schema"] = str(self.snapshot.metadata.schema_string)
        source.options["row_tracking"] = str(self.row_tracking)
        source.options["predicate"] = repr(self.predicate)
        if versions:
            source.options["version"] = str(self.snapshot.version)
        return rel

    def print(self, indent: int = 0) -> str:
        return f"{' ' * indent}<DeltaScan table='{self.snapshot.storage.root_uri}' version={self.snapshot.version}>\n"

    def _repr_html_(self) -> str:
        return f"<ul><li><b>DeltaScan</b><br/>{self.snapshot.storage.root_uri}@{self.snapshot.version}</li></ul>"


def _source_frame(spark: Any, snapshot: Snapshot) -> Any:
    from .datasource import python_source_frame

    return python_source_frame(spark, snapshot.storage.root_uri, {"versionAsOf": str(snapshot.version)}, snapshot)


def delta_frame(spark: Any, snapshot: Snapshot, row_tracking: bool = False, predicate: Any = None) -> Any:
    """What `load()` returns on a Connect session: a `ConnectDeltaFrame` over a `DeltaScan` leaf."""

    return ConnectDeltaFrame(DeltaScan(spark, snapshot, row_tracking, predicate), spark)


# ----------------------------------------------------------------------------- a routed SQL query
class RoutedQuery(plan_base()):  # type: ignore[misc]
    """The frame of a read-only query the Delta SQL router planned (`spark.sql(...)` over Delta relations, and so
    `spark.table(permanent view)`): the statement as it was planned (`_child`: Connect's `SQL` plan carrying its
    scans as references, or the eager command's result), and `replan(conditions)`: the same statement planned
    by the router with `conditions` (Spark SQL over its output names) filtering its output, or None.

    Why: the statement's scans were planned with the statement's own conditions; conditions chained after the
    frame (`.where(...)`, `.select(...).where(...)`) are Python objects above this node until it is sent. The
    pushdown pass (`assign`) carries them here as it carries them to a Delta leaf (`_path_conditions`), and the
    statement sent is then the replanned one, its scans planned with them too. Without conditions - or when
    replanning fails - the statement is sent as it was planned: never a wrong answer, at worst no skipping."""

    def __init__(self, inner: Any, replan: Any) -> None:
        super().__init__(inner)
        self.replan = replan
        self._replanned: dict[tuple[str, ...], Any] = {}
        self._replan_lock = threading.Lock()

    @property
    def _plan_id(self) -> int:  # the statement's own: columns bound to the frame (`df["id"]`) resolve on it
        return self._child._plan_id  # type: ignore[no-any-return]

    def replanned(self, conditions: tuple[str, ...]) -> Any:
        """The statement's plan with `conditions` on its output (kept per condition set), or None."""
        with self._replan_lock:
            if conditions in self._replanned:
                return self._replanned[conditions]
            try:
                plan = self.replan(conditions)
            except Exception as e:  # the statement cannot be planned again (a view dropped since...): as planned
                _log.debug("deltakernel: routed query not replanned with %s: %s", conditions, e)
                plan = None
            _keep(self._replanned, conditions, plan)
            return plan

    def plan(self, session: Any) -> Any:
        active = _ACTIVE.get()
        conditions = active.conditions.get(id(self)) if active is not None and KEYING.get() is None else None
        target = self.replanned(conditions) if conditions else None
        if target is None:
            return self._child.plan(session)
        rel = target.plan(session)
        rel.common.plan_id = self._plan_id
        return rel

    def print(self, indent: int = 0) -> str:
        return self._child.print(indent)  # type: ignore[no-any-return]

    def _repr_html_(self) -> str:
        return self._child._repr_html_()  # type: ignore[no-any-return]


def routed_frame(frame: Any, replan: Any) -> Any:
    """A Connect DataFrame of the routed query `frame` whose chained conditions choose files (`RoutedQuery`)."""
    from ..kinds.connect_internals import plan_frame

    out = plan_frame(RoutedQuery(frame._plan, replan), frame.sparkSession)
    info = frame.__dict__.get("_execution_info")
    if info is not None:
        out._execution_info = info
    return out


# ----------------------------------------------------------------------------- the pushdown pass
@dataclass
class _Assignment:
    predicates: dict[int, Any]  # id(leaf) -> pushed kernel predicate (None: nothing pushed)
    leaves: dict[int, DeltaScan]
    view_mode: bool = False
    conditions: dict[int, tuple[str, ...]] = field(default_factory=dict)  # id(RoutedQuery) -> its conditions
    analysis: bool = False  # the plan is only analysed: every leaf through the Python source (`analysis_scans`)


@dataclass(frozen=True)
class _Col:
    name: str | None  # output name (None: an unnamed expression)
    leaf: tuple[str, ...] | None  # the Delta column it passes through unchanged, else None
    quals: frozenset[str] = frozenset()


class _OpenCols(list):  # type: ignore[type-arg]
    """The columns of a routed SQL query (`RoutedQuery`), whose output names the client does not know: a one-part
    name found nowhere in the list is taken to be one of the query's own columns (the conditions on it are only
    analysed against the statement: `relations.replanner`)."""


def _like(cols: list[_Col], items: list[_Col]) -> list[_Col]:
    """`items` as a column list open like `cols`."""
    return _OpenCols(items) if isinstance(cols, _OpenCols) else items


@dataclass
class _State:
    cols: list[_Col]
    complete: bool = True  # `cols` is the node's whole output, in order
    by_plan: dict[int, list[_Col]] = field(default_factory=dict)  # plan id of a node below -> its columns


def _children(node: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    kind = type(node).__name__
    if kind in ("Join", "AsOfJoin", "LateralJoin"):
        out += [("left", getattr(node, "left", None)), ("right", getattr(node, "right", None))]
    elif kind == "SetOperation":
        out += [("left", node._child), ("right", getattr(node, "other", None))]
    else:
        child = getattr(node, "_child", None)
        if child is not None:
            out.append(("child", child))
    for ref in getattr(node, "_references", None) or []:
        out.append(("ref", ref))
    return [(slot, c) for slot, c in out if c is not None]


def assign(root: Any, view_mode: bool = False) -> _Assignment:
    """The pushed predicate of every Delta leaf under `root` (a leaf reached along several paths gets the OR
    of its paths' predicates, or nothing when one path pushes nothing)."""
    from ...kernel.expressions.predicate import Or

    found: dict[int, list[Any]] = {}
    leaves: dict[int, DeltaScan] = {}
    routed: dict[int, list[tuple[str, ...]]] = {}
    stack: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    seen_paths = 0
    while stack:
        node, path = stack.pop()
        if isinstance(node, DeltaScan):
            leaves[id(node)] = node
            found.setdefault(id(node), []).append(_path_predicate(node, path))
            continue
        if isinstance(node, RoutedQuery):  # its statement's own scans are below it (planned by the router)
            routed.setdefault(id(node), []).append(_path_conditions(node, path))
        seen_paths += 1
        if seen_paths > 100_000:  # a pathological plan: push nothing rather than spend the time
            return _Assignment({}, leaves, view_mode)
        for slot, child in _children(node):
            stack.append((child, (*path, (node, slot))))
    predicates: dict[int, Any] = {}
    for key, preds in found.items():
        if any(p is None for p in preds):
            predicates[key] = None
            continue
        unique = list(dict.fromkeys(preds))
        predicates[key] = unique[0] if len(unique) == 1 else Or(*unique)
    # a routed query reached along several paths: the conditions when every path has the same ones, else none
    conditions = {key: paths[0] for key, paths in routed.items() if paths[0] and len(set(paths)) == 1}
    return _Assignment(predicates, leaves, view_mode, conditions)


def _path_predicate(leaf: DeltaScan, path: tuple[Any, ...]) -> Any:
    """The conjuncts that filter `leaf`'s rows along one root-to-leaf path, as one kernel predicate or None."""
    from ...kernel.expressions.predicate import And

    names = [f.name for f in leaf.snapshot.schema.fields]
    cols = [_Col(n, (n,)) for n in names]
    schema = leaf.snapshot.schema
    preds = _walk(path, _State(cols, True, {leaf._plan_id: cols}),
                  lambda column, state: _translate(column, state, schema))
    if not preds:
        return None
    unique = list(dict.fromkeys(preds))
    return unique[0] if len(unique) == 1 else And(*unique)


def _path_conditions(node: RoutedQuery, path: tuple[Any, ...]) -> tuple[str, ...]:
    """The conjuncts that filter a routed query's rows along one root-to-node path, as Spark SQL over its output
    names (`connect_filters.conjunct_texts`); its output names are not known here (`_OpenCols`)."""
    from . import connect_filters as cf

    cols: list[_Col] = _OpenCols()
    texts = _walk(path, _State(cols, False, {node._plan_id: cols}),
                  lambda column, state: cf.conjunct_texts(column, lambda parts, plan_id: _resolve(state, parts,
                                                                                                  plan_id)))
    return tuple(dict.fromkeys(texts))


def _walk(path: tuple[Any, ...], state: _State, translate: Any) -> list[Any]:
    """Up one root-to-node path from the node (`state`: its columns): `translate(condition, state)` of every
    condition that filters the node's rows (Filters, the join conditions that drop them), until a node that may
    change which rows reach it."""
    from . import connect_filters as cf

    preds: list[Any] = []
    for node, slot in reversed(path):
        if slot == "ref":
            break
        kind = type(node).__name__
        if kind == "Filter":
            if not cf.deterministic(node.filter):
                break
            preds += translate(node.filter, state)
        elif kind == "ScanConditions":  # the router's conjuncts on a DataFrame view: files only (scan_conditions.py)
            for cond in node.conditions:
                if cf.deterministic(cond):
                    preds += translate(cond, state)
        elif kind == "Project":
            new = _project(node._columns, state)
            if new is None:
                break
            state = new
        elif kind == "WithColumns":
            new = _with_columns(node._columnNames, node._columns, state)
            if new is None:
                break
            state = new
        elif kind == "WithColumnsRenamed":
            renames = {k.lower(): v for k, v in (node._colsMap or {}).items()}
            state = _State([_Col(renames.get((c.name or "").lower(), c.name), c.leaf, c.quals) for c in state.cols],
                           state.complete, state.by_plan)
        elif kind == "Drop":
            state = _drop(node._columns, state)
        elif kind == "SubqueryAlias":
            alias = str(node._alias).lower()
            state = _State([_Col(c.name, c.leaf, frozenset({alias})) for c in state.cols], state.complete,
                           state.by_plan)
        elif kind in ("Sort", "Hint", "Repartition", "RepartitionByExpression"):
            pass
        elif kind == "Aggregate":  # GROUP BY: a condition on a grouping column filters whole groups
            new = _aggregate(node, state)
            if new is None:
                break
            state = new
        elif kind == "Join":
            above, inside, conjuncts = _join(node, slot, state)
            for c in conjuncts:
                preds += translate(c, inside)
            if above is None:
                break
            state = above
        elif kind == "SetOperation":
            new = _set_operation(node, slot, state)
            if new is None:
                break
            state = new
        else:  # anything else may change which rows reach the leaf: conditions above it do not apply
            break
        state.by_plan = {**state.by_plan, node._plan_id: state.cols}
    return [p for p in preds if p is not None]


def _translate(column: Any, state: _State, schema: Any) -> list[Any]:
    """Kernel predicates of the conjuncts of a Connect Column over `state`'s columns (those it can read)."""
    from . import connect_filters as cf

    return [p for p in cf.conjunct_predicates(column, lambda parts, plan_id: _resolve(state, parts, plan_id), schema)
            if p is not None]


def _resolve(state: _State, parts: tuple[str, ...], plan_id: int | None) -> tuple[str, ...] | None:
    """The Delta column path a (possibly qualified) name reads at this point of the plan, or None."""
    cols = state.by_plan.get(plan_id) if plan_id is not None else state.cols
    if cols is None or not parts:
        return None
    low = [p.lower() for p in parts]
    by_name = [c for c in cols if c.name is not None and c.name.lower() == low[0]]
    qualified = [c for c in cols if len(low) > 1 and low[0] in c.quals and (c.name or "").lower() == low[1]]
    if qualified and by_name:
        return None  # `a.b`: a qualifier and a struct column at once
    if not qualified and not by_name and isinstance(cols, _OpenCols):
        return (parts[0],) if len(parts) == 1 else None  # a routed query's own column (`_OpenCols`)
    if qualified:
        hit, rest = qualified, low[2:]
    else:
        hit, rest = by_name, low[1:]
    if len(hit) != 1 or hit[0].leaf is None:
        return None
    if rest and plan_id is None and not state.complete:
        return None
    return (*hit[0].leaf, *parts[len(parts) - len(rest):]) if rest else hit[0].leaf


_SIMPLE_NAME = re.compile(r"^\s*(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(?:\s*\.\s*(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*))?\s*$")


def _output(expr: Any, state: _State) -> list[_Col] | None:
    """Output columns of one select-list expression (several for a star), or None when it is not row-wise."""
    from pyspark.sql.connect import expressions as X

    from . import connect_filters as cf

    e = getattr(expr, "_expr", expr)
    if isinstance(e, X.UnresolvedStar) or (isinstance(e, X.ColumnReference) and
                                           e._unparsed_identifier.endswith("*")):
        target = getattr(e, "_unparsed_target", None) or (
            e._unparsed_identifier if isinstance(e, X.ColumnReference) else None)
        plan_id = getattr(e, "_plan_id", None)
        cols = state.by_plan.get(plan_id, []) if plan_id is not None else state.cols
        if target in (None, "*"):
            return _like(cols, list(cols))
        qual = target[:-2].strip("`").lower()
        return [c for c in cols if qual in c.quals]
    if isinstance(e, X.ColumnReference):
        parts = cf.identifier_parts(e._unparsed_identifier)
        if parts is None or e._is_metadata_column:
            return [_Col(None, None)]
        leaf = _resolve(state, parts, e._plan_id)
        src = [c for c in (state.by_plan.get(e._plan_id, []) if e._plan_id is not None else state.cols)
               if (c.name or "").lower() == parts[-1].lower()]
        quals = src[0].quals if len(src) == 1 and len(parts) <= 2 else frozenset()
        return [_Col(parts[-1], leaf if len(parts) <= 2 else None, quals)]
    if isinstance(e, X.ColumnAlias):
        if not cf.row_wise(e._child):
            return None
        inner = _output(e._child, state) if isinstance(e._child, X.ColumnReference) else None
        leaf = inner[0].leaf if inner and len(inner) == 1 else None
        return [_Col(e._alias[0] if len(e._alias) == 1 else None, leaf)]
    if isinstance(e, X.SQLExpression):
        m = _SIMPLE_NAME.match(e._expr)
        if m is None:
            return [_Col(None, None)] if cf.row_wise(e) else None
        parts = tuple(g.strip("`") for g in m.groups() if g)
        return [_Col(parts[-1], _resolve(state, parts, None))]
    return [_Col(None, None)] if cf.row_wise(e) else None


def _project(columns: list[Any], state: _State) -> _State | None:
    out: list[_Col] = []
    opened = False  # a star over a routed query's columns: the unknown names pass through
    for c in columns:
        cols = _output(c, state)
        if cols is None:
            return None
        opened = opened or isinstance(cols, _OpenCols)
        out += cols
    return _State(_OpenCols(out) if opened else out, state.complete, state.by_plan)


def _aggregate(node: Any, state: _State) -> _State | None:
    if getattr(node, "_group_type", None) != "groupby":
        return None
    keys = _project(list(node._grouping_cols), state)
    if keys is None:
        return None
    from pyspark.sql.connect import expressions as X

    aggs = []
    for c in node._aggregate_cols:
        e = getattr(c, "_expr", c)
        aggs.append(_Col(e._alias[0] if isinstance(e, X.ColumnAlias) and len(e._alias) == 1 else None, None))
    return _State(keys.cols + aggs, state.complete, state.by_plan)


def _with_columns(names: list[str], columns: list[Any], state: _State) -> _State | None:
    cols = _like(state.cols, list(state.cols))
    for name, column in zip(names, columns):
        new = _output(column, state)
        if new is None or len(new) != 1:
            return None
        col = _Col(name, new[0].leaf)
        idx = [i for i, c in enumerate(cols) if (c.name or "").lower() == name.lower()]
        if idx:
            cols[idx[0]] = col
        else:
            cols.append(col)
    return _State(cols, state.complete, state.by_plan)


def _drop(columns: list[Any], state: _State) -> _State:
    from . import connect_filters as cf

    drop: set[str] = set()
    for c in columns:
        if isinstance(c, str):
            drop.add(c.lower())
        else:
            e = getattr(c, "_expr", None)
            parts = cf.identifier_parts(getattr(e, "_unparsed_identifier", "")) if e is not None else None
            if parts:
                drop.add(parts[-1].lower())
    return _State([c for c in state.cols if (c.name or "").lower() not in drop], state.complete, state.by_plan)


# Connect's proto join types (spark/connect/relations.proto: JoinType)
_INNER, _FULL, _LEFT, _RIGHT, _ANTI, _SEMI, _CROSS = 1, 2, 3, 4, 5, 6, 7


def _join(node: Any, slot: str, state: _State) -> tuple[_State | None, _State, list[Any]]:
    """(our side's columns above the join, or None when conditions above it cannot filter our rows; the columns
    the join condition sees; the join-condition conjuncts that may drop our rows)."""
    how = int(node.how) if isinstance(node.how, int) else -1  # unknown: neither list below
    other = node.right if slot == "left" else node.left
    other_ids = _plan_ids(other)
    by_plan = {k: v for k, v in state.by_plan.items() if k not in other_ids}  # a self-join: ambiguous
    own = _State(list(state.cols), False, by_plan)  # closed: an unknown name may be the other side's
    on = node.on
    if on is None or isinstance(on, str):
        conds: list[Any] = []
    elif isinstance(on, list):
        conds = [c for c in on if not isinstance(c, str)]
    else:
        conds = [on]
    # our rows reach the output unchanged (a using key is ours there too): conditions above filter them
    above = {"left": (_INNER, _LEFT, _SEMI, _ANTI, _CROSS), "right": (_INNER, _RIGHT, _CROSS)}[slot]
    # our rows failing a conjunct of the join condition never match and are not kept unmatched
    condition = {"left": (_INNER, _SEMI, _RIGHT, _CROSS), "right": (_INNER, _SEMI, _LEFT, _ANTI, _CROSS)}[slot]
    return (own if how in above else None), own, (conds if how in condition else [])


def _set_operation(node: Any, slot: str, state: _State) -> _State | None:
    """Our branch's columns above a union / intersect / except (output names come from the left branch)."""
    if node.set_op not in ("union", "intersect", "except"):
        return None
    if node.set_op == "except" and slot == "right":
        return None
    if node.by_name:
        return _State([_Col(c.name, c.leaf) for c in state.cols], state.complete, {})
    if slot == "left":
        return _State([_Col(c.name, c.leaf) for c in state.cols], state.complete, {})
    left = output_names(node._child)
    if left is None or not state.complete or len(left) != len(state.cols):
        return None
    return _State([_Col(n, c.leaf) for n, c in zip(left, state.cols)], True, {})


def output_names(node: Any) -> list[str] | None:
    """A branch's output column names when the client can tell them (Delta leaves through select lists)."""
    chain: list[Any] = []
    while not isinstance(node, DeltaScan):
        kind = type(node).__name__
        if kind not in ("Filter", "Project", "WithColumns", "WithColumnsRenamed", "Drop", "SubqueryAlias", "Sort",
                        "Hint", "Repartition", "RepartitionByExpression", "Limit"):
            return None
        chain.append(node)
        node = node._child
        if node is None:
            return None
    cols = [_Col(f.name, (f.name,)) for f in node.snapshot.schema.fields]
    state = _State(cols, True, {node._plan_id: cols})
    for n in reversed(chain):
        kind = type(n).__name__
        if kind == "Project":
            new = _project(n._columns, state)
        elif kind == "WithColumns":
            new = _with_columns(n._columnNames, n._columns, state)
        elif kind == "WithColumnsRenamed":
            renames = {k.lower(): v for k, v in (n._colsMap or {}).items()}
            new = _State([_Col(renames.get((c.name or "").lower(), c.name), c.leaf) for c in state.cols])
        elif kind == "Drop":
            new = _drop(n._columns, state)
        else:
            new = state
        if new is None:
            return None
        new.by_plan = {**state.by_plan, n._plan_id: new.cols}
        state = new
    if any(c.name is None for c in state.cols):
        return None
    return [c.name for c in state.cols if c.name is not None]


def _plan_ids(node: Any) -> set[int]:
    out: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        out.add(n._plan_id)
        stack.extend(c for _, c in _children(n))
    return out


# ----------------------------------------------------------------------------- serialization hooks
def _wrap(method: Any, view_mode: bool = False) -> Any:
    @functools.wraps(method)
    def serialize(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE.get() is not None:  # nested: the outer pass covers this tree
            return method(self, *args, **kwargs)
        active = assign(self, view_mode or _view_command(self))
        active.analysis = _ANALYSIS.get()
        token = _ACTIVE.set(active)
        try:
            return method(self, *args, **kwargs)
        finally:
            _ACTIVE.reset(token)

    serialize._dk_original = method  # type: ignore[attr-defined]
    return serialize


@contextlib.contextmanager
def analysis_scans() -> Any:
    """Within it, a plan serialized is one Spark only analyses (Spark Connect's eager `sql_command` of a routed
    query, whose result the router does not use): every Delta leaf of it - filtered or not, but a row-tracking
    read's - is sent as a read through the registered Python data source with the snapshot's schema and version.

    Why: a Parquet scan names its files, and Spark checks each one exists while it analyses (one status call per
    file; PATH_NOT_FOUND for a file deleted from storage), so an unfiltered statement's analysis named every data
    file of its tables - also those the conditions chained after the frame rule out, or a 10,000-file table's
    all. The Python source with its schema given is analysed without a Python worker and without a file: the
    files are chosen when the query runs, by the plan the action sends (`DeltaScan.planned`, `RoutedQuery`)."""
    token = _ANALYSIS.set(True)
    try:
        yield
    finally:
        _ANALYSIS.reset(token)


def _view_command(node: Any) -> bool:
    """A user's temporary view command: its Delta leaves read through the Python source in Spark's copy."""
    return type(node).__name__ == "CreateView" and not getattr(node, "_dk_native", False)


def serialize_hook(original: Any) -> Any:
    """The registry's factory (`install.PATCHES`) for `LogicalPlan.to_proto` (relations) and the `command` of every
    command node (views, writes, SQL with references...): run the pushdown pass whenever a Connect plan is
    serialized."""
    return _wrap(original)


class _HookedProperty(property):
    """A property whose getter is wrapped (a plain `property` takes no `__wrapped__`)."""


def cache_hook(original: Any) -> Any:
    """The registry's factory for Connect's `DataFrame.persist` / `unpersist` / `storageLevel` (`cache()` is
    `persist()`): they send the plan with `LogicalPlan.plan`, not `to_proto`, so the pushdown pass runs around them
    too. The cached plan is then the one later actions send (the same kept files: Spark's cache matches it), and it
    names no file the conditions rule out. `storageLevel` is a property: its getter is wrapped."""
    if isinstance(original, property):
        wrapped = _HookedProperty(cache_hook(original.fget), original.fset, original.fdel, original.__doc__)
        wrapped.__wrapped__ = original  # the registry's check: a replacement names pyspark's original
        return wrapped

    @functools.wraps(original)
    def with_pushdown(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE.get() is not None:
            return original(self, *args, **kwargs)
        token = _ACTIVE.set(assign(self._plan))
        try:
            return original(self, *args, **kwargs)
        finally:
            _ACTIVE.reset(token)

    return with_pushdown


def command_classes() -> list[str]:
    """The Connect plan classes that define their own `command` (patched with `serialize_hook`)."""
    try:
        from pyspark.sql.connect import plan as P
    except ImportError:  # pragma: no cover - pyspark without grpc
        return []
    return sorted(name for name, obj in vars(P).items() if isinstance(obj, type) and issubclass(obj, P.LogicalPlan)
                  and obj is not P.LogicalPlan and "command" in vars(obj))


# ----------------------------------------------------------------------------- temporary views from DataFrames
def _views(spark: Any) -> dict[str, Any]:
    store = spark.__dict__.get("_dk_frame_views")
    if store is None:
        store = spark.__dict__.setdefault("_dk_frame_views", {})
    return store  # type: ignore[no-any-return]


def has_delta_leaf(plan: Any) -> bool:
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, DeltaScan):
            return True
        stack.extend(c for _, c in _children(node))
    return False


def frame_view(spark: Any, name: str) -> Any:
    """The DataFrame a temporary view `name` was made from through this client, when it reads Delta tables."""
    return _views(spark).get(name.lower())


def frame_view_table(spark: Any, name: str) -> Any:
    """`spark.table(name)` of such a view: its DataFrame under the view's name (a fresh plan id, `name.col`
    resolves), or None."""
    if "_dk_frame_views" not in spark.__dict__ or "." in name or "`" in name:
        return None
    df = frame_view(spark, name)
    if df is None:
        return None
    from pyspark.sql.connect.dataframe import DataFrame
    from pyspark.sql.connect.plan import SubqueryAlias

    return DataFrame(SubqueryAlias(df._plan, name), spark)


def forget_view(spark: Any, name: str) -> None:
    _views(spark).pop(name.lower(), None)
    _text_views(spark).pop(name.lower(), None)
    _sent_views(spark).pop(name.lower(), None)


def _sent_views(spark: Any) -> dict[str, Any]:
    """name -> the definition (`_definition`) of the temporary view this client last made Spark's copy of."""
    store = spark.__dict__.get("_dk_sent_views")
    if store is None:
        store = spark.__dict__.setdefault("_dk_sent_views", {})
    return store  # type: ignore[no-any-return]


def _definition(plan: Any, client: Any) -> tuple[Any, ...] | None:
    """What Spark's copy of a view over `plan` is made of, when that is the plan's whole definition: a bare Delta
    leaf (`load()`, `spark.table()`) is its table, version and row-tracking flag; a chain over Delta leaves its
    plan with the leaves' versions (`frame_keys.plan_key`); None for anything else."""
    if not isinstance(plan, DeltaScan):
        from .frame_keys import plan_key

        key = plan_key(plan, client, versions=True)
        return None if key is None else ("chain", key)
    if plan.predicate is not None:
        return None
    return (plan.snapshot.storage.root_uri, plan.snapshot.version, plan.row_tracking)


def _text_views(spark: Any) -> dict[str, Any]:
    store = spark.__dict__.get("_dk_text_views")
    if store is None:
        store = spark.__dict__.setdefault("_dk_text_views", {})
    return store  # type: ignore[no-any-return]


def record_text_view(spark: Any, name: str, view: Any) -> None:
    """The text of temporary view `name` made by `CREATE TEMPORARY VIEW ... AS` over Delta tables (the SQL
    router's `relations_connect.StoredView`): reads expand it with their conditions. Forgotten with the view."""
    _text_views(spark)[name.lower()] = view


def text_view(spark: Any, name: str) -> Any:
    """The recorded text of temporary view `name`, or None."""
    store = spark.__dict__.get("_dk_text_views")  # none recorded (a classic session): nothing set on the session
    return store.get(name.lower()) if store is not None else None


def native_temp_view(df: Any, name: str, native: bool = True) -> None:
    """`df.createOrReplaceTempView(name)` with the Delta leaves' Parquet scans (the router's own views; `native`
    False: unfiltered leaves read through the Python source, as a user's view - not recorded as one)."""
    from pyspark.sql.connect import plan as P

    node = P.CreateView(child=df._plan, name=name, is_global=False, replace=True)
    node._dk_native = native
    session = df.sparkSession
    session.client.execute_command(node.command(session=session.client), df._plan.observations)


def temp_view_hook(original: Any) -> Any:
    """The registry's factory for Connect's `createTempView` / `createOrReplaceTempView`: remember the frame of a
    view that reads Delta tables, so SQL over the view is planned with its conditions.

    `createOrReplaceTempView(v)` of a bare Delta leaf, or of a chain over Delta leaves (`frame_keys.plan_key`),
    whose definition, tables and versions are those of the copy of `v` this client last made sends nothing:
    Spark's copy would be the same (a view re-made before every query - a notebook cell, a service's request
    handler - costs no round trip while the table does not move on). The new
    DataFrame is recorded all the same (reads expand it with their conditions). The record goes with the view
    (`forget_view`: dropped, replaced by SQL or by another DataFrame)."""
    replace = getattr(original, "__name__", "") == "createOrReplaceTempView"

    @functools.wraps(original)
    def create(self: Any, name: str) -> None:
        spark = self.sparkSession
        low = name.lower()
        definition = _definition(self._plan, spark.client) if replace else None
        if definition is not None and _sent_views(spark).get(low) == definition and low in _views(spark):
            _views(spark)[low] = self
            return None
        original(self, name)
        if has_delta_leaf(self._plan):
            _views(spark)[low] = self
            if definition is not None:
                _sent_views(spark)[low] = definition
            else:
                _sent_views(spark).pop(low, None)
        else:
            forget_view(spark, name)

    return create


def drop_temp_view_hook(original: Any) -> Any:
    """The registry's factory for Connect's `Catalog.dropTempView`: forget the view's frame too."""

    @functools.wraps(original)
    def drop_temp_view(self: Any, viewName: str) -> Any:
        forget_view(self._sparkSession, viewName)
        return original(self, viewName)

    return drop_temp_view


def _connect_base() -> type:
    try:
        from pyspark.sql.connect.dataframe import DataFrame
    except ImportError:  # pragma: no cover - pyspark without grpc: never instantiated
        return object
    return DataFrame  # type: ignore[no-any-return]


class ConnectDeltaFrame(PlainNew, _connect_base()):  # type: ignore[misc]
    """What `load()` returns on a Spark Connect session: a plain Connect DataFrame whose plan is a lazy Delta
    leaf (`connect_plan.DeltaScan`); every DataFrame built on it is a plain Connect DataFrame, and the files are
    chosen with the conditions above the leaf when the plan is sent (`connect_plan.py`)."""

    @property
    def snapshot(self) -> Snapshot:
        return self._plan.snapshot  # type: ignore[no-any-return]

    @property
    def skipped_files(self) -> int:
        """Files of this table the kernel skips for this frame's plan."""
        leaf = self._plan
        kept = leaf.planned(assign(leaf).predicates.get(id(leaf)))[1]
        return leaf.snapshot.num_files - kept  # type: ignore[no-any-return]


__all__ = ["ConnectDeltaFrame", "DeltaScan", "RoutedQuery", "TESTED_PYSPARK", "analysis_scans", "assign", "delta_frame",
           "forget_view",
           "frame_view", "has_delta_leaf", "record_text_view", "text_view", "cache_hook",
           "command_classes", "drop_temp_view_hook", "frame_view_table", "native_temp_view", "output_names",
           "routed_frame", "serialize_hook", "temp_view_hook"]
