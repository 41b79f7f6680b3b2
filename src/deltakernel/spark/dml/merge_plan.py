"""Planning a Spark MERGE on the driver: the clauses, the joined frame and the action of every row of it.

Every expression is Spark's, resolved by Spark's analyzer on the frames it belongs to:
- the target side `T` is the candidate files' rows (`frame.target_frame`: file id, physical row index, the
  DeltaTable's alias) plus internal copies of its columns (`__dk_t<i>`) and the NOT MATCHED BY SOURCE
  clauses' conditions and values, evaluated on the target alone (they may not read the source);
- the source side `S` is the user's DataFrame (its alias kept) plus internal copies of its columns
  (`__dk_s<j>`, for `*` clauses) and the NOT MATCHED clauses' conditions and values, evaluated on the source
  alone;
- MATCHED clauses are evaluated on the joined frame (both aliases in scope), as delta-spark does.
`T` and `S` carry a marker column each; after the join (inner, or left outer when target rows without a
match matter; source-only rows come from an anti-join on the source row id `__dk_sid`, see `merge.py`), the
markers tell a matched pair from a target-only and a source-only row, and one `CASE WHEN` gives each row the
index of the first clause of its kind whose condition holds (-1: none; NULL conditions do not hold). New
values are one `CASE` on that index per column, cast to the column's type.

The join condition is analyzed once on an empty target: its `target.col = source.col` conjuncts are the keys
whose source ranges prune target files (a one-row aggregate job on the source), its target-only conjuncts
prune too (through the kernel's SQL translation). A condition without an equality still runs (Spark picks
a nested-loop join), it only prunes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...errors import DeltaError, InvalidFilterError
from ...kernel.expressions import predicate as ex
from ...kernel.log.actions import Metadata
from ...kernel.schema.types import PrimitiveType
from ...operations.dml.merge.plan import (
    BY_SOURCE_DELETE,
    BY_SOURCE_UPDATE,
    MATCHED_DELETE,
    MATCHED_UPDATE,
    NOT_MATCHED_INSERT,
    Clause,
    MergeError,
    Names,
    unprefix,
)
from ..common.schema import to_spark_schema
from .facts import Analysis
from .frame import FID, ROW, Target, quote, target_frame
from .plan import analysis_error, facts_of, resolved
from .touched import to_arrow

T_MARK = "__dk_tm"
S_MARK = "__dk_sm"
ACTION = "__dk_clause"
SID = "__dk_sid"
PARTITION_IN_LIMIT = 1000  # as the embedded MERGE: distinct source values of a partition key -> IN list
_log = logging.getLogger(__name__)


# Spark types whose `simpleString()` Spark's type parser reads back as the very same type whatever the session's
# confs (not `string`: a session's default collation; not `timestamp`: `spark.sql.timestampType`)
_TYPE_NAMES = frozenset({"boolean", "tinyint", "smallint", "int", "bigint", "float", "double", "binary", "date",
                         "timestamp_ntz"})


def cast_to(col: Any, data_type: Any) -> Any:
    """`col.cast(data_type)`, by the type's name when Spark parses that name back to the same type (plain
    atomic types, decimals). Why: a classic `Column.cast(DataType)` looks the active session up and has the JVM
    parse the type's JSON (~10 py4j round trips); by name it is one call, the same cast."""
    name = data_type.simpleString()
    if name in _TYPE_NAMES or (name.startswith("decimal(") and type(data_type).__name__ == "DecimalType"):
        return col.cast(name)
    return col.cast(data_type)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


@dataclass
class SparkClause:
    """One WHEN clause as given to the builder: condition and values are SQL strings or Columns."""

    kind: str
    condition: Any = None
    assignments: dict[str, Any] | None = None  # target column -> str | Column; None for delete and `*`
    all_columns: bool = False

    @property
    def is_delete(self) -> bool:
        return self.kind in (MATCHED_DELETE, BY_SOURCE_DELETE)

    def kernel_clause(self, spark: Any) -> Clause:
        """The embedded engine's Clause (texts only): schema evolution and operationParameters use it."""
        updates = None if self.assignments is None else {k: text_of(v, spark) for k, v in self.assignments.items()}
        return Clause(self.kind, None if self.condition is None else text_of(self.condition, spark), updates,
                      self.all_columns)


def text_of(value: Any, spark: Any) -> str:
    """A string as given; a Column as Spark prints it (history only, never parsed back)."""
    if isinstance(value, str):
        return value
    return facts_of(spark).printed(value)


def as_column(value: Any, what: str) -> Any:
    from pyspark.sql import Column
    from pyspark.sql import functions as F

    if isinstance(value, Column):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise InvalidFilterError(f"{what} must be a non-empty SQL string or a Column")
        return F.expr(value)
    raise TypeError(f"{what} must be a Spark SQL Column or a string (expression in SQL syntax), "
                    f"found {type(value).__name__}")


# ----------------------------------------------------------------------------- the plan
class MergePlan:
    """The clauses resolved against the commit's schema, and the frames built from them."""

    def __init__(self, target: Target, source: Any, condition: Any, clauses: list[SparkClause],
                 metadata: Metadata) -> None:
        self.target = target
        self.spark = target.spark
        self.source = source
        self.given_condition = condition
        self.condition = as_column(condition, "the MERGE condition")
        self.clauses = clauses
        self.metadata = metadata
        self.schema = metadata.schema  # the commit's (evolved) schema
        self.spark_schema = to_spark_schema(self.schema)
        self.t_names = [f.name for f in target.snapshot.schema.fields]  # columns the target frame has
        self.t_index = {n: i for i, n in enumerate(self.t_names)}
        self.s_names = list(source.columns)
        s_lower = {n.lower(): j for j, n in enumerate(self.s_names)}
        self.kinds = [c.kind for c in clauses]
        self.matched = [i for i, c in enumerate(clauses) if c.kind in (MATCHED_UPDATE, MATCHED_DELETE)]
        self.inserts = [i for i, c in enumerate(clauses) if c.kind == NOT_MATCHED_INSERT]
        self.by_source = [i for i, c in enumerate(clauses) if c.kind in (BY_SOURCE_UPDATE, BY_SOURCE_DELETE)]
        self.updates = [i for i, c in enumerate(clauses) if c.kind in (MATCHED_UPDATE, BY_SOURCE_UPDATE)]
        self.deletes = [i for i, c in enumerate(clauses) if c.is_delete]
        names = Names(self.t_names + [f.name for f in self.schema.fields if f.name not in self.t_index],
                      self.s_names, target.alias or "target", "__dk_no_source_alias__")
        # per clause: target column -> Column (matched: on the joined frame) or internal column name
        self.values: list[dict[str, Any]] = []
        self.side_values: dict[int, list[tuple[str, Any]]] = {}
        self.assigned: list[tuple[str, ...]] = []
        for i, c in enumerate(clauses):
            vals: dict[str, Any] = {}
            if c.all_columns:
                for f in self.schema.fields:
                    j = s_lower.get(f.name.lower())
                    if j is not None:
                        vals[f.name] = f"__dk_s{j}"
            elif c.assignments is not None:
                for key, value in c.assignments.items():
                    if not isinstance(key, str):
                        raise TypeError(f"keys of a MERGE assignment must be column names (str), found {key!r}")
                    name = names.target_column(key)
                    if name in vals:
                        raise MergeError(f"MERGE assigns column {name!r} twice")
                    vals[name] = as_column(value, f"the value of {key!r}")
            self.assigned.append(tuple(vals))
            if c.kind in (NOT_MATCHED_INSERT, BY_SOURCE_UPDATE):  # evaluated on their own side, before the join
                for k, name in enumerate(list(vals)):
                    if not isinstance(vals[name], str):  # `*` values are the source copies already
                        self.side_values.setdefault(i, []).append((f"__dk_v{i}_{k}", vals[name]))
                        vals[name] = f"__dk_v{i}_{k}"
            self.values.append(vals)
        self.analysis = Analysis()
        self._persisted: list[Any] = []
        self._shared: list[Any] = []
        self._values_cache: dict[tuple[int, ...] | None, list[Any]] = {}
        self._source_side: tuple[Any, Any] | None = None
        self._action_column: Any = None  # `_action()`, built once (a Column is a plan, reusable in every join)
        self.collected_source: pa.Table | None = None  # `source_stats(collect)`'s rows

    # ------------------------------------------------------------------ the two sides
    def _extras(self, clause_ids: list[int]) -> list[Any]:
        """Conditions and values of one-sided clauses, evaluated on their own side."""
        out = []
        for i in clause_ids:
            out.append(self._side_condition(i))
            out += [v.alias(n) for n, v in self.side_values.get(i, [])]
        return out

    def insert_conditions(self) -> list[Any]:
        """The NOT MATCHED clauses' conditions as `__dk_c<i>` (True when none), evaluated on the source alone."""
        return [self._side_condition(i) for i in self.inserts]

    def _side_condition(self, i: int) -> Any:
        from pyspark.sql import functions as F

        c = self.clauses[i]
        cond = F.lit(True) if c.condition is None else as_column(c.condition, "a MERGE clause condition")
        return cond.alias(f"__dk_c{i}")

    def source_side(self, matched_sids: Any = None, check: bool = True) -> Any:
        """The source rows with the marker, the internal copies of its columns and the NOT MATCHED clauses'
        columns (`check`: analyzed now, see `joined`)."""
        from pyspark.sql import functions as F

        if matched_sids is None and self._source_side is not None and self._source_side[0] is self.source:
            return self._source_side[1]  # analyzed once per source frame
        cols = [F.col(quote(n)).alias(f"__dk_s{j}") for j, n in enumerate(self.s_names)]
        base = self.source if matched_sids is None else self.source.join(matched_sids, SID, "left_anti")
        try:
            side = base.select("*", *cols, F.lit(True).alias(S_MARK), *self._extras(self.inserts))
            side = resolved(side) if check else side
            if matched_sids is None:
                self._source_side = (self.source, side)
            return side
        except analysis_error() as e:
            raise InvalidFilterError(f"invalid MERGE source or NOT MATCHED clause (it may read source columns "
                                     f"only): {_first_line(e)}") from e

    def target_side(self, files: pa.Table | None, fids: Any, hidden: tuple[str, str] | None,
                    copies: bool = True, check: bool = True) -> Any:
        """The target rows with the marker, the one-sided clauses' columns and (`copies`) the internal copies
        of the target's columns that old values (`old`) read."""
        from pyspark.sql import functions as F

        base = target_frame(self.target, files, fids, hidden=hidden) if files is not None else None
        if base is None:  # no candidate file: an empty frame of the same shape
            from .plan import empty_frame

            extra = [F.lit(None).cast("int").alias(FID), F.lit(None).cast("long").alias(ROW)]
            extra += [F.lit(None).cast("long").alias(n) for n in (hidden or ())]
            base = empty_frame(self.spark, self.target.snapshot).select("*", *extra)
            if self.target.alias:
                base = base.alias(self.target.alias)
        cols = [F.col(quote(n)).alias(f"__dk_t{i}") for i, n in enumerate(self.t_names)] if copies else []
        try:
            side = base.select("*", *cols, F.lit(True).alias(T_MARK), *self._extras(self.by_source))
            return resolved(side) if check else side
        except analysis_error() as e:
            raise InvalidFilterError(f"invalid NOT MATCHED BY SOURCE clause (it may read target columns only): "
                                     f"{_first_line(e)}") from e

    # ------------------------------------------------------------------ the join
    def materialize(self) -> None:
        """Read the source once (delta-spark's materialized MERGE source) with a row id `__dk_sid`: every job
        sees the same rows, and a source row is told matched or not by its id."""
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        self.source = self.source.withColumn(SID, F.monotonically_increasing_id()).persist(
            StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(self.source)

    def persist(self, df: Any) -> Any:
        from pyspark import StorageLevel

        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(df)
        return df

    def keep_shared(self, shared: Any) -> None:
        """A task value (`Shared`) the MERGE's jobs read: destroyed with the persisted frames."""
        self._shared.append(shared)

    def release(self) -> None:
        for df in self._persisted:
            try:
                df.unpersist()
            except Exception:  # the session is gone: nothing to free
                pass
        self._persisted = []
        for shared in self._shared:
            shared.destroy()
        self._shared = []

    def joined(self, files: pa.Table | None, fids: Any = None, *, hidden: tuple[str, str] | None = None,
               keep_target: bool = False, matched_sids: Any = None, copies: bool = True, check: bool = True) -> Any:
        """The target rows of `files` (file ids `fids`, all when None) joined with the source (left outer
        with `keep_target`, else inner: Spark broadcasts a small source), `ACTION` added. With `matched_sids`
        (a frame of `__dk_sid`): the source rows NOT among them instead, as source-only rows (no target scan).
        `check=False`: not analyzed now - for the join `prepare()` analyzed already on an empty target of the
        same columns (a Spark Connect analysis is a request, and the server plans the target's scan again)."""
        if matched_sids is not None:
            return self._join(self.target_side(None, None, hidden), self.source_side(matched_sids), "right")
        return self._join(self.target_side(files, fids, hidden, copies, check), self.source_side(check=check),
                          "left" if keep_target else "inner", check)

    def _join(self, t_side: Any, s_side: Any, how: str, check: bool = True) -> Any:
        try:
            j = t_side.join(s_side, self.condition, how).select("*", self._action().alias(ACTION))
            return resolved(j) if check else j
        except analysis_error() as e:
            raise InvalidFilterError(f"invalid MERGE condition or WHEN MATCHED clause: {_first_line(e)}") from e

    def prepare(self) -> None:
        """Check every expression with Spark's analyzer and analyze the condition (no job runs)."""
        empty = self._join(self.target_side(None, None, None), self.source_side(), "full")
        self.check_values(empty)
        types = {f.name: f.dataType.simpleString() for f in to_spark_schema(self.target.snapshot.schema).fields}
        self.analysis = facts_of(self.spark).merge_analysis(empty, self.given_condition, self.t_names,
                                                            self.target.alias, self.source, types)

    def _chain(self, ids: list[int], matched: bool) -> Any:
        """The index of the first clause of `ids` whose condition holds, else -1 (one-sided clauses read
        their condition from the column their side computed)."""
        from pyspark.sql import functions as F

        out = None
        for i in ids:
            c = self.clauses[i]
            if matched:
                cond = F.lit(True) if c.condition is None else as_column(c.condition, "a MERGE clause condition")
            else:
                cond = F.col(f"__dk_c{i}")
            out = F.when(cond, F.lit(i)) if out is None else out.when(cond, F.lit(i))
        return F.lit(-1) if out is None else out.otherwise(F.lit(-1))

    def _action(self) -> Any:
        from pyspark.sql import functions as F

        if self._action_column is None:  # built once: each Column function is py4j round trips on classic
            t, s = F.col(T_MARK).isNotNull(), F.col(S_MARK).isNotNull()
            self._action_column = F.when(t & s, self._chain(self.matched, True)) \
                .when(s, self._chain(self.inserts, False)) \
                .when(t, self._chain(self.by_source, False)).otherwise(F.lit(-1)).cast("int")
        return self._action_column

    def source_rows(self, pairs: Any, values: list[Any], pair_clauses: Any = None) -> Any:
        """The rows a MERGE writes when every written value comes from the source row (`values`, see
        `source_update_values`): the source left-joined with the matched pairs' `(source id, clause)` - a
        source row in no pair takes its NOT MATCHED clause, one in k pairs is written once per target row it
        updates. One pass over the materialized source, no target scan. With `pairs` None, `pair_clauses`
        (an `array<int>` Column over the source: the clauses of the row's pairs, `pair_clauses.py`; None: no
        pair at all) gives each source row its pairs' clauses instead of the join."""
        from pyspark.sql import functions as F

        pair_clause = "__dk_pair_clause"
        if pairs is not None:
            matched = pairs.select(F.col(SID), F.col("a").alias(pair_clause))
            joined = self.source_side().join(matched, SID, "left")
        else:
            clause = F.explode_outer(pair_clauses) if pair_clauses is not None else F.lit(None).cast("int")
            joined = self.source_side().select("*", clause.alias(pair_clause))
        act = F.when(F.col(pair_clause).isNull(), self._chain(self.inserts, False)) \
            .otherwise(F.col(pair_clause)).cast("int")
        return joined.select("*", act.alias(ACTION)).where(F.col(ACTION).isin(self.updates + self.inserts)) \
            .select(*values)

    # ------------------------------------------------------------------ values
    def old(self, name: str) -> Any:
        from pyspark.sql import functions as F

        i = self.t_index.get(name)
        return F.col(f"__dk_t{i}") if i is not None else F.lit(None)

    def _value(self, i: int, name: str) -> Any:
        from pyspark.sql import functions as F

        v = self.values[i].get(name)
        if v is None:
            return F.lit(None) if self.kinds[i] == NOT_MATCHED_INSERT else self.old(name)
        return F.col(v) if isinstance(v, str) else v

    def new_values(self, writers: list[int] | None = None) -> list[Any]:
        """Each column of the commit's schema: its value after the row's clause (old value when none).
        With `writers`, only rows of those clauses are valued (others get NULL, no old value is read)."""
        key = None if writers is None else tuple(writers)
        if key not in self._values_cache:  # Columns are plans, not data: build each list once (py4j calls)
            self._values_cache[key] = self._new_values(writers)
        return list(self._values_cache[key])

    def _new_values(self, writers: list[int] | None) -> list[Any]:
        from pyspark.sql import functions as F

        act = F.col(ACTION)
        cols = []
        only = writers is not None
        if writers is None:
            writers = [i for i in range(len(self.clauses)) if not self.clauses[i].is_delete]
        for f in self.schema.fields:
            expr = None
            for i in writers:
                branch = self._value(i, f.name)
                expr = F.when(act == i, branch) if expr is None else expr.when(act == i, branch)
            fallback = F.lit(None) if only else self.old(f.name)
            expr = fallback if expr is None else expr.otherwise(fallback)
            cols.append(cast_to(expr, self.spark_schema[f.name].dataType).alias(f.name))
        return cols

    def source_update_values(self) -> list[Any] | None:
        """The new values of matched-update and inserted rows computed from the source row alone (on
        `source_side()` with `ACTION`; for `source_rows`), or None when an update reads the target row (a
        column it does not assign, a target column in a value) or a NOT MATCHED BY SOURCE clause updates:
        Spark's analyzer decides, on a frame without the target's columns."""
        from pyspark.sql import functions as F

        if self.by_source or not self.updates:
            return None
        values = self.new_values(self.updates + self.inserts)
        n = len(self.schema.fields)
        if all(self.clauses[i].all_columns and len(self.values[i]) == n for i in self.updates):
            return values  # `UPDATE SET *` of every column: source copies by construction, nothing to analyze
        try:
            resolved(self.source_side().select("*", F.lit(0).alias(ACTION)).select(*values))
        except analysis_error():
            return None
        return values

    def hidden_values(self, hidden: tuple[str, str]) -> list[Any]:
        """Row id kept (NULL for inserted rows), row commit version NULL (= this commit) for updated rows."""
        from pyspark.sql import functions as F

        id_col, version_col = hidden
        version = F.col(quote(version_col))
        if self.updates:
            version = F.when(F.col(ACTION).isin(self.updates), F.lit(None).cast("long")).otherwise(version)
        return [F.col(quote(id_col)).cast("long").alias(id_col), version.cast("long").alias(version_col)]

    def check_values(self, joined: Any) -> None:
        try:
            resolved(joined.select(*self.new_values()))
        except analysis_error() as e:
            raise InvalidFilterError(f"invalid MERGE assignment: {_first_line(e)}") from e

    # ------------------------------------------------------------------ pruning
    def source_stats(self, collect: list[Any] | None = None) -> tuple[int, dict[str, Any]]:
        """(source rows, per key: min / max / distinct values cast to the target's type, and the number of
        rows with every key non-NULL) from one job on the source - the job that materializes it
        (`observed_stats`), else an aggregate; no key bounds with NOT MATCHED BY SOURCE clauses (every target
        file is a candidate). With `collect` (Columns over the source), that job also returns them for every
        source row, kept as `collected_source` (None when the stats came from an aggregate)."""
        from pyspark.sql import functions as F

        aggs = [F.count(F.lit(1)).alias("n")]
        keys = [] if self.by_source else self._prunable_keys()
        valid = None
        parts = {p.lower() for p in self.target.snapshot.partition_columns}
        for k, (t, s) in enumerate(keys):
            c = cast_to(F.col(quote(s)), self.spark_schema[t].dataType)
            aggs += [F.min(c).alias(f"lo{k}"), F.max(c).alias(f"hi{k}")]
            if t.lower() in parts:
                aggs.append(F.slice(F.array_sort(F.collect_set(c)), 1, PARTITION_IN_LIMIT + 1).alias(f"in{k}"))
            valid = c.isNotNull() if valid is None else valid & c.isNotNull()
        if valid is not None:
            aggs.append(F.count(F.when(valid, F.lit(1))).alias("valid"))
        self.collected_source = None
        row = self._observed_stats(aggs, collect) if self._observable(keys) else None
        if row is None:
            self.collected_source = None
            row = to_arrow(self.source.agg(*aggs)).to_pylist()[0]
        row["keys"] = keys
        return int(row["n"]), row

    def _observable(self, keys: list[tuple[str, str]]) -> bool:
        """Whether the observed metrics give the stats as the aggregate's Arrow result does: Python values of
        the same types (a `timestamp` comes back as the driver's local time there, as a UTC instant here)."""
        schema = self.target.snapshot.schema
        return all(getattr(schema.field(t).type, "name", None) != "timestamp" for t, _ in keys)

    def _observed_stats(self, aggs: list[Any], collect: list[Any] | None = None) -> dict[str, Any] | None:
        """The stats as observed metrics (`DataFrame.observe`) of the job that materializes the source: a
        query without an exchange reads the persisted source (AQE leaves it alone, so the cache is built in
        this query's own tasks, not in a cache stage of its own) and returns no row; the metrics are Spark's
        own aggregates over exactly the rows cached, so a non-deterministic source is pruned by the rows it
        is merged with. One job instead of three (cache stage, the aggregate's two stages). None when Spark
        refuses the aggregates as metrics or none came back: the caller runs the aggregate. With `collect`,
        the probe returns those columns of every row instead (`collected_source`)."""
        from pyspark.sql import functions as F

        def probe(observed: Any) -> Any:  # SID >= 0 (monotonically_increasing_id): no row, every row observed
            return observed.where(F.col(SID) < 0).select(SID)

        try:
            if collect:
                row, self.collected_source = facts_of(self.spark).observed_collect(
                    self.source, aggs, lambda observed: observed.select(*collect))
            else:
                row = facts_of(self.spark).observed_metrics(self.source, aggs, probe)
        except analysis_error() as e:
            _log.debug("deltakernel MERGE: source stats as observed metrics refused (%s): an aggregate job", e)
            return None
        return row if row is not None and "n" in row else None

    def _prunable_keys(self) -> list[tuple[str, str]]:
        out = []
        for t, s in self.analysis.keys:
            if not self.target.snapshot.schema.has(t):
                continue
            dtype = self.target.snapshot.schema.field(t).type
            if isinstance(dtype, PrimitiveType) and dtype.name not in ("binary", "boolean"):
                out.append((t, s))
        return out

    def pruning(self, stats: dict[str, Any]) -> ex.Expr | None:
        """The kernel predicate every matched target row satisfies (None: every file is a candidate), as the
        embedded MERGE builds it: source key ranges (IN lists for partition keys) + target-only conjuncts."""
        from ...kernel.expressions.sql import to_predicate

        if self.by_source:
            return None
        snapshot = self.target.snapshot
        parts: list[ex.Expr] = []
        keys = stats.get("keys") or []
        if keys and not stats.get("valid"):
            return ex.AlwaysFalse()
        for k, (t, _s) in enumerate(keys):
            dtype = snapshot.schema.field(t).type
            try:
                values = stats.get(f"in{k}")
                if values is not None and len(values) <= PARTITION_IN_LIMIT:
                    parts.append(ex.In(ex.Column((t,)), tuple(ex.coerce_literal(v, dtype, t).value for v in values)))
                    continue
                lo, hi = stats[f"lo{k}"], stats[f"hi{k}"]
                parts.append(ex.Comparison(">=", ex.Column((t,)), ex.coerce_literal(lo, dtype, t)))
                parts.append(ex.Comparison("<=", ex.Column((t,)), ex.coerce_literal(hi, dtype, t)))
            except (DeltaError, TypeError, ValueError):
                continue
        for text in self.analysis.target_only:
            p = self._target_predicate(text)
            if p is not None:
                parts.append(p)
        for parsed in self.analysis.target_predicates:
            try:
                parts.append(to_predicate(parsed, snapshot.schema))
            except Exception:  # functions the kernel does not know: this conjunct does not prune
                continue
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else ex.And(*parts)

    def _target_predicate(self, text: str) -> ex.Expr | None:
        from ...kernel.expressions.sql import parse_sql, to_predicate
        from .plan import fold_casts

        try:
            names = Names(self.t_names, [], self.target.alias or "target", "__dk_no_source_alias__")
            parsed = names.qualify(fold_casts(parse_sql(text)), text, allow_source=False)
            return to_predicate(unprefix(parsed), self.target.snapshot.schema)
        except Exception:  # Spark functions the kernel does not know: this conjunct does not prune
            return None


__all__ = ["ACTION", "Analysis", "MergePlan", "SID", "S_MARK", "SparkClause", "T_MARK", "text_of"]
