"""Planning a MERGE: names, clauses and the join (no data is read or written here).

Expressions are Spark SQL over two relations, the target and the source, referenced as
`<alias>.<column>` (aliases default to `target` / `source`) or unqualified when the name exists on one
side only (on both it is ambiguous, as in Spark). Every column reference is rewritten once into an
internal name (`__t__<column>` / `__s__<column>`), so one pyarrow table with both sides' columns side by
side is all the SQL evaluator needs: clause predicates and assignments are vectorized over matched pairs.

The join condition is split into equi-join keys (`target.a = source.b` conjuncts, the hash-join keys)
and a residual evaluated on the joined pairs. Without an equality there is nothing to hash on, so such
a MERGE is refused with a typed error (documented in docs/decisions.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ....errors import DeltaError, InvalidFilterError, SchemaError
from ....kernel.expressions.sql import Binary, Col, SqlExpr, conjuncts, parse_sql, referenced_columns
from ....kernel.schema.types import StructType

T_PREFIX = "__t__"
S_PREFIX = "__s__"

MATCHED_UPDATE = "matched_update"
MATCHED_DELETE = "matched_delete"
NOT_MATCHED_INSERT = "not_matched_insert"
BY_SOURCE_UPDATE = "not_matched_by_source_update"
BY_SOURCE_DELETE = "not_matched_by_source_delete"


class MergeError(DeltaError):
    """A MERGE that cannot run as written (bad clause, no equi-join key, ...)."""


class MergeDuplicateMatchError(MergeError):
    """Several source rows matched the same target row for an update or delete (delta-spark's
    DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE)."""


#: delta-spark's error class for `MergeDuplicateMatchError` (named in the Spark engine's message)
DUPLICATE_MATCH_ERROR_CLASS = "DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE"


def duplicate_match_message(rows: int | None = None, file: str | None = None, position: int | None = None, *,
                            error_class: bool = False) -> str:
    """`MergeDuplicateMatchError`'s text: delta-spark's sentence (users match on "multiple source rows matched"
    and "the same target row"), then where, then deltalake's phrase (its own tests match "duplicate relevant
    WHEN MATCHED"), then the fix; `error_class` prefixes delta-spark's class name."""
    where = ""
    if rows is not None and file is not None:
        where = f" ({rows} target row(s) of file {file!r}" + (f", e.g. physical row {position}" if position is not
                                                              None else "") + ")"
    text = ("Cannot perform Merge as multiple source rows matched and attempted to modify the same target row in "
            f"the Delta table in possibly conflicting ways{where}: several source rows matching one target row satisfy "
            "a WHEN MATCHED clause (deltalake: MERGE matched a target row with multiple source rows that satisfy "
            "duplicate relevant WHEN MATCHED clauses). Deduplicate the source, or make the WHEN MATCHED conditions "
            "select at most one source row per target row.")
    return f"[{DUPLICATE_MATCH_ERROR_CLASS}] {text}" if error_class else text


@dataclass
class Clause:
    """One WHEN clause; `updates` maps target column names to (qualified) expressions."""

    kind: str
    predicate_text: str | None = None
    updates_text: dict[str, str] | None = None
    all_columns: bool = False
    except_cols: tuple[str, ...] = ()
    # filled by MergePlan.resolve
    predicate: SqlExpr | None = None
    updates: dict[str, SqlExpr] = field(default_factory=dict)

    @property
    def is_delete(self) -> bool:
        return self.kind in (MATCHED_DELETE, BY_SOURCE_DELETE)


def _field_map(names: Sequence[str]) -> dict[str, str]:
    return {n.lower(): n for n in names}


class Names:
    """Column resolution over the two sides (case-insensitive, as Spark)."""

    def __init__(self, target: Sequence[str], source: Sequence[str], target_alias: str, source_alias: str) -> None:
        self.target = _field_map(target)
        self.source = _field_map(source)
        self.t_alias = target_alias.lower()
        self.s_alias = source_alias.lower()

    def qualify(self, e: SqlExpr, text: str, *, allow_target: bool = True, allow_source: bool = True) -> SqlExpr:
        """`e` with every column rewritten to its internal name; unknown / ambiguous / disallowed raise."""

        def col(path: tuple[str, ...]) -> Col:
            head = path[0].lower()
            if len(path) > 1 and head == self.t_alias and path[1].lower() in self.target:
                side, name, rest = "target", self.target[path[1].lower()], path[2:]
            elif len(path) > 1 and head == self.s_alias and path[1].lower() in self.source:
                side, name, rest = "source", self.source[path[1].lower()], path[2:]
            elif len(path) > 1 and head in (self.t_alias, self.s_alias):
                raise InvalidFilterError(f"column {'.'.join(path)!r} in {text!r} does not exist (target columns: "
                                         f"{sorted(self.target.values())}, source columns: "
                                         f"{sorted(self.source.values())})")
            elif head in self.target and head in self.source:
                raise InvalidFilterError(f"column {path[0]!r} in {text!r} is ambiguous: qualify it as "
                                         f"{self.t_alias}.{path[0]} or {self.s_alias}.{path[0]}")
            elif head in self.target:
                side, name, rest = "target", self.target[head], path[1:]
            elif head in self.source:
                side, name, rest = "source", self.source[head], path[1:]
            else:
                raise InvalidFilterError(f"column {'.'.join(path)!r} in {text!r} does not exist (target columns: "
                                         f"{sorted(self.target.values())}, source columns: "
                                         f"{sorted(self.source.values())})")
            if side == "target" and not allow_target:
                raise InvalidFilterError(f"{text!r} cannot reference target column {name!r} (a NOT MATCHED "
                                         "clause sees only the source row)")
            if side == "source" and not allow_source:
                raise InvalidFilterError(f"{text!r} cannot reference source column {name!r} (a NOT MATCHED BY "
                                         "SOURCE clause sees only the target row)")
            return Col(((T_PREFIX if side == "target" else S_PREFIX) + name, *rest))

        return _map_columns(e, col)

    def target_column(self, key: str) -> str:
        """An assignment key (`x`, `` `x` ``, `target.x`) as a top-level target column name."""
        node = parse_sql(key) if key.strip() else None
        if not isinstance(node, Col):
            raise InvalidFilterError(f"assignment target {key!r} is not a column name")
        path = node.path
        if len(path) == 2 and path[0].lower() == self.t_alias:
            path = path[1:]
        if len(path) != 1:
            raise MergeError(f"assignment target {key!r}: only top-level target columns can be assigned")
        name = self.target.get(path[0].lower())
        if name is None:
            raise InvalidFilterError(f"assignment target {key!r} is not a column of the target table "
                                     f"(columns: {sorted(self.target.values())})")
        return name


def _map_columns(e: SqlExpr, fn: Callable[[tuple[str, ...]], SqlExpr]) -> SqlExpr:
    """Rebuild an expression tree with `fn(path)` replacing every column reference."""
    out: SqlExpr = _map_tree(e, fn)
    return out


def _map_tree(e: Any, fn: Callable[[tuple[str, ...]], SqlExpr]) -> Any:
    """`_map_columns` over any node of the tree (expressions, tuples of them, plain field values)."""
    if isinstance(e, Col):
        return fn(e.path)
    if isinstance(e, tuple):
        return tuple(_map_tree(x, fn) for x in e)
    if dataclasses.is_dataclass(e) and not isinstance(e, type):
        changes = {f.name: _map_tree(getattr(e, f.name), fn) for f in dataclasses.fields(e)}
        return dataclasses.replace(e, **changes)
    return e


def _and(parts: list[SqlExpr]) -> SqlExpr | None:
    out: SqlExpr | None = None
    for p in parts:
        out = p if out is None else Binary("AND", out, p)
    return out


def side_columns(e: SqlExpr | None, prefix: str) -> set[str]:
    """Top-level column names of one side an expression reads (internal prefix stripped)."""
    if e is None:
        return set()
    return {p[0][len(prefix):] for p in referenced_columns(e) if p[0].startswith(prefix)}


@dataclass
class JoinPlan:
    keys: list[tuple[str, str]]  # (target column, source column)
    residual: SqlExpr | None
    target_only: list[SqlExpr]  # conjuncts that read only target columns (file pruning)


def plan_join(predicate: SqlExpr, text: str) -> JoinPlan:
    keys: list[tuple[str, str]] = []
    rest: list[SqlExpr] = []
    target_only: list[SqlExpr] = []
    for c in conjuncts(predicate):
        if isinstance(c, Binary) and c.op == "=" and isinstance(c.left, Col) and isinstance(c.right, Col) \
                and len(c.left.path) == 1 and len(c.right.path) == 1:
            a, b = c.left.path[0], c.right.path[0]
            if a.startswith(T_PREFIX) and b.startswith(S_PREFIX):
                keys.append((a[len(T_PREFIX):], b[len(S_PREFIX):]))
                continue
            if b.startswith(T_PREFIX) and a.startswith(S_PREFIX):
                keys.append((b[len(T_PREFIX):], a[len(S_PREFIX):]))
                continue
        rest.append(c)
        if not side_columns(c, S_PREFIX) and side_columns(c, T_PREFIX):
            target_only.append(c)
    if not keys:
        raise MergeError(f"MERGE predicate {text!r} has no equality between a target and a source column; "
                         "deltakernel joins on such equalities (e.g. target.id = source.id)")
    return JoinPlan(keys, _and(rest), target_only)


def unprefix(e: SqlExpr) -> SqlExpr:
    """A target-only expression with plain column names (for the kernel predicate / file pruning)."""
    return _map_columns(e, lambda p: Col((p[0][len(T_PREFIX):] if p[0].startswith(T_PREFIX) else p[0], *p[1:])))


def resolve_clauses(clauses: list[Clause], names: Names, target_schema: StructType,
                    source_schema: pa.Schema) -> None:
    """Parse and qualify every clause (predicates and assignments); `*_all` clauses expand by name."""
    for c in clauses:
        matched = c.kind in (MATCHED_UPDATE, MATCHED_DELETE)
        allow_t = c.kind != NOT_MATCHED_INSERT
        allow_s = c.kind not in (BY_SOURCE_UPDATE, BY_SOURCE_DELETE)
        if c.predicate_text is not None:
            if not isinstance(c.predicate_text, str) or not c.predicate_text.strip():
                raise InvalidFilterError(f"a MERGE clause predicate must be a non-empty SQL string, "
                                         f"got {c.predicate_text!r}")
            c.predicate = names.qualify(parse_sql(c.predicate_text), c.predicate_text,
                                        allow_target=allow_t or matched, allow_source=allow_s)
        if c.is_delete:
            continue
        if c.all_columns:
            excluded = {x.lower() for x in c.except_cols}
            updates: dict[str, SqlExpr] = {}
            for f in target_schema.fields:
                src = names.source.get(f.name.lower())
                if src is not None and f.name.lower() not in excluded:
                    updates[f.name] = Col((S_PREFIX + src,))
            c.updates = updates
            continue
        if not isinstance(c.updates_text, Mapping):
            raise MergeError(f"{c.kind}: updates must be a dict of column -> SQL expression, got "
                             f"{type(c.updates_text).__name__}")
        out: dict[str, SqlExpr] = {}
        for key, value in c.updates_text.items():
            name = names.target_column(str(key))
            if name in out:
                raise MergeError(f"{c.kind}: column {name!r} is assigned twice")
            text = value if isinstance(value, str) else str(value)
            out[name] = names.qualify(parse_sql(text), text, allow_target=allow_t, allow_source=allow_s)
        c.updates = out


@dataclass
class MergeMetrics:
    num_source_rows: int = 0
    num_target_rows_inserted: int = 0
    num_target_rows_updated: int = 0
    num_target_rows_deleted: int = 0
    num_target_rows_copied: int = 0
    num_target_files_scanned: int = 0
    num_target_files_skipped_during_scan: int = 0
    num_target_files_added: int = 0
    num_target_files_removed: int = 0
    num_deletion_vectors_added: int = 0
    num_deletion_vectors_removed: int = 0
    num_added_change_files: int = 0
    num_added_bytes: int = 0
    num_removed_bytes: int = 0
    execution_time_ms: int = 0
    scan_time_ms: int = 0
    rewrite_time_ms: int = 0

    @property
    def num_output_rows(self) -> int:
        return self.num_target_rows_inserted + self.num_target_rows_updated + self.num_target_rows_copied

    def as_dict(self) -> dict[str, int]:
        """deltalake's keys, in its order, plus the deletion-vector / change-file counts."""
        return {
            "num_source_rows": self.num_source_rows,
            "num_target_rows_inserted": self.num_target_rows_inserted,
            "num_target_rows_updated": self.num_target_rows_updated,
            "num_target_rows_deleted": self.num_target_rows_deleted,
            "num_target_rows_copied": self.num_target_rows_copied,
            "num_output_rows": self.num_output_rows,
            "num_target_files_scanned": self.num_target_files_scanned,
            "num_target_files_skipped_during_scan": self.num_target_files_skipped_during_scan,
            "num_target_files_added": self.num_target_files_added,
            "num_target_files_removed": self.num_target_files_removed,
            "execution_time_ms": self.execution_time_ms,
            "scan_time_ms": self.scan_time_ms,
            "rewrite_time_ms": self.rewrite_time_ms,
            "num_deletion_vectors_added": self.num_deletion_vectors_added,
            "num_deletion_vectors_removed": self.num_deletion_vectors_removed,
            "num_added_change_files": self.num_added_change_files,
        }

    def commit_metrics(self) -> dict[str, int]:
        """delta-spark's MERGE `operationMetrics` names."""
        return {
            "numSourceRows": self.num_source_rows, "numTargetRowsInserted": self.num_target_rows_inserted,
            "numTargetRowsUpdated": self.num_target_rows_updated,
            "numTargetRowsDeleted": self.num_target_rows_deleted,
            "numTargetRowsCopied": self.num_target_rows_copied, "numOutputRows": self.num_output_rows,
            "numTargetFilesAdded": self.num_target_files_added,
            "numTargetFilesRemoved": self.num_target_files_removed,
            "numTargetDeletionVectorsAdded": self.num_deletion_vectors_added,
            "numTargetDeletionVectorsRemoved": self.num_deletion_vectors_removed,
            "numTargetChangeFilesAdded": self.num_added_change_files,
            "numTargetBytesAdded": self.num_added_bytes, "numTargetBytesRemoved": self.num_removed_bytes,
            "executionTimeMs": self.execution_time_ms, "scanTimeMs": self.scan_time_ms,
            "rewriteTimeMs": self.rewrite_time_ms,
        }


def check_schema_names(schema: pa.Schema, what: str) -> None:
    seen: dict[str, str] = {}
    for n in schema.names:
        if n.lower() in seen:
            raise SchemaError(f"{what} has duplicate column names {seen[n.lower()]!r} and {n!r}")
        seen[n.lower()] = n


__all__ = ["BY_SOURCE_DELETE", "BY_SOURCE_UPDATE", "Clause", "DUPLICATE_MATCH_ERROR_CLASS", "JoinPlan",
           "MATCHED_DELETE", "MATCHED_UPDATE", "MergeDuplicateMatchError", "MergeError", "MergeMetrics",
           "NOT_MATCHED_INSERT", "Names", "S_PREFIX", "T_PREFIX", "check_schema_names", "duplicate_match_message",
           "plan_join", "resolve_clauses", "side_columns", "unprefix"]
