"""MERGE (deltalake's `DeltaTable.merge` / `TableMerger`, delta-spark's MergeIntoCommand semantics).

`TableMerger` collects WHEN clauses; :func:`merge` plans them (`merge_plan`), runs the join and writes
(`merge_exec.MergeRun`, whose docstring describes the execution) and commits one transaction. Any error
leaves the table as it was: files written are deleted unless the commit may have landed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ....errors import InvalidFilterError
from ....kernel.snapshot import Snapshot
from ....kernel.transaction.transaction import Transaction as KernelTransaction
from ....storage import Storage
from ...commit_options import CommitProperties, PostCommitHookProperties
from ..commit import run_and_commit
from .execute import MergeRun
from .plan import (
    BY_SOURCE_DELETE,
    BY_SOURCE_UPDATE,
    MATCHED_DELETE,
    MATCHED_UPDATE,
    NOT_MATCHED_INSERT,
    Clause,
    MergeError,
    MergeMetrics,
    Names,
    check_schema_names,
    resolve_clauses,
)
from .source import MergeSource, as_merge_source


def merge(storage: Storage, snapshot: Snapshot, source: Any, predicate: str, clauses: list[Clause], *,
          source_alias: str | None = None, target_alias: str | None = None, merge_schema: bool = False,
          error_on_type_mismatch: bool = True, writer_properties: Any = None,
          commit_properties: CommitProperties | None = None,
          post_commithook_properties: PostCommitHookProperties | None = None) -> tuple[dict[str, int], int | None]:
    """Run a MERGE of `source` (a `MergeSource` or any Arrow input, read once as a stream); returns
    (metrics, committed version or None when nothing changed)."""
    source = as_merge_source(source)
    try:
        return _merge(storage, snapshot, source, predicate, clauses, source_alias=source_alias,
                      target_alias=target_alias, merge_schema=merge_schema,
                      error_on_type_mismatch=error_on_type_mismatch, writer_properties=writer_properties,
                      commit_properties=commit_properties, post_commithook_properties=post_commithook_properties)
    finally:
        source.close()


def _merge(storage: Storage, snapshot: Snapshot, source: MergeSource, predicate: str, clauses: list[Clause], *,
           source_alias: str | None, target_alias: str | None, merge_schema: bool, error_on_type_mismatch: bool,
           writer_properties: Any, commit_properties: CommitProperties | None,
           post_commithook_properties: PostCommitHookProperties | None) -> tuple[dict[str, int], int | None]:
    start = time.monotonic()
    if not isinstance(predicate, str) or not predicate.strip():
        raise InvalidFilterError(f"a MERGE predicate must be a non-empty SQL string, got {predicate!r}")
    if not clauses:
        raise MergeError("MERGE needs at least one WHEN clause (when_matched_update, when_not_matched_insert, ...)")
    check_schema_names(source.schema, "the MERGE source")
    txn = KernelTransaction(storage, snapshot, operation="MERGE",
                            operation_parameters=merge_parameters(predicate, clauses))
    if merge_schema:
        _evolve_schema(txn, source.schema, clauses, target_alias)
    schema = txn.metadata.schema
    names = Names([f.name for f in schema.fields], source.schema.names, target_alias or "target",
                  source_alias or "source")
    resolve_clauses(clauses, names, schema, source.schema)
    op = MergeRun(storage, snapshot, txn, source, predicate, clauses, names, error_on_type_mismatch,
                  writer_properties, merge_schema=merge_schema)
    return run_and_commit(op, txn, start, commit_properties, post_commithook_properties)


def merge_parameters(predicate: str, clauses: list[Clause]) -> dict[str, Any]:
    def describe(c: Clause) -> dict[str, Any]:
        action = {MATCHED_UPDATE: "update", MATCHED_DELETE: "delete", NOT_MATCHED_INSERT: "insert",
                  BY_SOURCE_UPDATE: "update", BY_SOURCE_DELETE: "delete"}[c.kind]
        out: dict[str, Any] = {"actionType": action + ("*" if c.all_columns else "")}
        if c.predicate_text is not None:
            out["predicate"] = c.predicate_text
        return out

    return {
        "predicate": predicate,
        "matchedPredicates": [describe(c) for c in clauses if c.kind in (MATCHED_UPDATE, MATCHED_DELETE)],
        "notMatchedPredicates": [describe(c) for c in clauses if c.kind == NOT_MATCHED_INSERT],
        "notMatchedBySourcePredicates": [describe(c) for c in clauses if c.kind in (BY_SOURCE_UPDATE,
                                                                                   BY_SOURCE_DELETE)],
    }


def _evolve_schema(txn: KernelTransaction, source: pa.Schema, clauses: list[Clause],
                   target_alias: str | None) -> None:
    """merge_schema=True: the target schema evolved by the source columns the clauses write (nested fields,
    type widening; `schema_evolution.py`)."""
    from .schema_evolution import evolve_schema

    evolve_schema(txn, source, clauses, target_alias)


class TableMerger:
    """deltalake's MERGE builder: WHEN clauses in the order given (first match wins), then `execute()`."""

    def __init__(self, run: Callable[[list[Clause]], dict[str, Any]]) -> None:
        self._run = run
        self._clauses: list[Clause] = []

    def _add(self, clause: Clause) -> TableMerger:
        self._clauses.append(clause)
        return self

    def when_matched_update(self, updates: dict[str, str], predicate: str | None = None) -> TableMerger:
        """Update matched target rows (`updates`: target column -> SQL expression) where `predicate` holds."""
        return self._add(Clause(MATCHED_UPDATE, predicate, dict(updates)))

    def when_matched_update_all(self, predicate: str | None = None,
                                except_cols: list[str] | None = None) -> TableMerger:
        """Update every target column from the source column of the same name (except `except_cols`)."""
        return self._add(Clause(MATCHED_UPDATE, predicate, None, True, tuple(except_cols or ())))

    def when_matched_delete(self, predicate: str | None = None) -> TableMerger:
        return self._add(Clause(MATCHED_DELETE, predicate))

    def when_not_matched_insert(self, updates: dict[str, str], predicate: str | None = None) -> TableMerger:
        """Insert unmatched source rows (`updates`: target column -> SQL over the source); others NULL."""
        return self._add(Clause(NOT_MATCHED_INSERT, predicate, dict(updates)))

    def when_not_matched_insert_all(self, predicate: str | None = None,
                                    except_cols: list[str] | None = None) -> TableMerger:
        return self._add(Clause(NOT_MATCHED_INSERT, predicate, None, True, tuple(except_cols or ())))

    def when_not_matched_by_source_update(self, updates: dict[str, str],
                                          predicate: str | None = None) -> TableMerger:
        """Update target rows no source row matched (`updates` may read target columns only)."""
        return self._add(Clause(BY_SOURCE_UPDATE, predicate, dict(updates)))

    def when_not_matched_by_source_delete(self, predicate: str | None = None) -> TableMerger:
        return self._add(Clause(BY_SOURCE_DELETE, predicate))

    def execute(self) -> dict[str, Any]:
        """Run the MERGE; deltalake's metrics dict. The table is unchanged on any error."""
        return self._run([Clause(c.kind, c.predicate_text, c.updates_text, c.all_columns, c.except_cols)
                          for c in self._clauses])


def deltalake_spelling(clauses: list[Clause], predicate: str, names: list[str]) -> tuple[list[Clause], str]:
    """deltalake's spelling in MERGE texts -> Spark's (the deltalake-style API only): `"col"` / `target."col"`
    naming a target or source column is an identifier (`quote_column_identifiers`), also as a SET key."""
    from dataclasses import replace

    from ....kernel.expressions.sql import quote_column_identifiers

    def sql(text: Any) -> Any:
        return quote_column_identifiers(text, names) if isinstance(text, str) else text

    def key(k: Any) -> Any:
        return k[1:-1] if isinstance(k, str) and len(k) > 1 and k[0] == k[-1] == '"' and k[1:-1] in names else k

    out = [replace(c, predicate_text=sql(c.predicate_text), updates_text=None if c.updates_text is None else
                   {key(k): sql(v) for k, v in c.updates_text.items()}) for c in clauses]
    return out, sql(predicate)


__all__ = ["MergeMetrics", "TableMerger", "deltalake_spelling", "merge"]
