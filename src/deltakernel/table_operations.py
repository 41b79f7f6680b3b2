"""`DeltaTable`'s table-changing methods, with deltalake's names, keywords and metrics: DML (delete, update,
merge), maintenance (vacuum, restore, repair, optimize, log checkpoints and compaction), alter, clone and
`create_write_transaction`.

Each method checks deltalake's argument forms, delegates to `deltakernel.operations` (imported on first use:
the operations are the heavy modules) and moves the table to the version it committed. Mixed into
`table.DeltaTable`, which holds the storage and the loaded snapshot and answers the read API.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import DeltaError
from .kernel.snapshot import Snapshot
from .operations.commit_options import check_commit_properties, commit_args
from .storage import Storage

if TYPE_CHECKING:  # the classes the public methods return; imported where they are built (heavy modules)
    from .operations.alter.alterer import TableAlterer
    from .operations.dml.merge.api import TableMerger
    from .operations.maintenance.optimize.execute import TableOptimizer

FilterLike = Any  # list[tuple] | list[list[tuple]] | pyarrow.compute.Expression | kernel expression


class TableOperations:
    """The table-changing half of `DeltaTable` (see the module docstring)."""

    _storage: Storage
    _snapshot: Snapshot

    # provided by DeltaTable (the read half)
    @property
    def snapshot(self) -> Snapshot:
        raise NotImplementedError

    def update_incremental(self) -> None:
        raise NotImplementedError

    def _partition_filter(self, partition_filters: FilterLike | None) -> Any:
        raise NotImplementedError  # deltalake partition filters -> a kernel predicate

    @property
    def alter(self) -> TableAlterer:
        """Schema, constraint, property and protocol changes (deltalake's `TableAlterer` API)."""
        from .operations.alter.alterer import TableAlterer

        return TableAlterer(self)

    @property
    def optimize(self) -> TableOptimizer:
        """Compaction and Z-order (deltalake's `TableOptimizer`: `compact()`, `z_order(columns)`)."""
        from .operations.maintenance.optimize.execute import TableOptimizer

        return TableOptimizer(self)

    def delete(
        self,
        predicate: str | None = None,
        writer_properties: Any = None,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Delete the rows matching the Spark SQL `predicate` (all rows when None); deltalake's metrics.

        Writes deletion vectors when the table allows them, else rewrites the touched files. The table
        is left at the new version (unchanged when nothing matched).
        """
        from .operations.dml.delete import delete

        commit_properties, post_commithook_properties = commit_args("delete", args, commit_properties,
                                                                     post_commithook_properties)
        written, predicate = predicate, self._spark_sql(predicate)
        metrics, version = delete(self._storage, self._snapshot, predicate, writer_properties=writer_properties,
                                  commit_properties=commit_properties,
                                  post_commithook_properties=post_commithook_properties, deltalake_parameters=True,
                                  recorded_predicate=written)
        if version is not None:
            self._snapshot = Snapshot.load(self._storage, version)
        return metrics

    def update(
        self,
        updates: dict[str, str] | None = None,
        new_values: dict[str, Any] | None = None,
        predicate: str | None = None,
        writer_properties: Any = None,
        error_on_type_mismatch: bool = True,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Set columns on the rows matching the Spark SQL `predicate` (all rows when None); deltalake's metrics.

        `updates` maps columns to SQL expressions over the old row, `new_values` to Python values
        (exactly one of them). Deletion vectors mark the old rows where the table allows them, else the
        touched files are rewritten. The table is left at the new version (unchanged when nothing matched).
        """
        from .operations.dml.update import update

        commit_properties, post_commithook_properties = commit_args("update", args, commit_properties,
                                                                     post_commithook_properties)
        written, predicate = predicate, self._spark_sql(predicate)
        if updates is not None:
            updates = {k: (self._spark_sql(v) or "") if isinstance(v, str) else v for k, v in updates.items()}
        metrics, version = update(self._storage, self._snapshot, updates, new_values, predicate,
                                  writer_properties=writer_properties, error_on_type_mismatch=error_on_type_mismatch,
                                  commit_properties=commit_properties,
                                  post_commithook_properties=post_commithook_properties,
                                  recorded_predicate=written if isinstance(written, str) else None)
        if version is not None:
            self._snapshot = Snapshot.load(self._storage, version)
        return metrics

    def merge(
        self,
        source: Any,
        predicate: str,
        source_alias: str | None = None,
        target_alias: str | None = None,
        merge_schema: bool = False,
        error_on_type_mismatch: bool = True,
        writer_properties: Any = None,
        streamed_exec: bool = True,
        max_spill_size: int | None = None,
        max_temp_directory_size: int | None = None,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> TableMerger:
        """MERGE `source` (any Arrow stream: pyarrow, pandas, polars, DataFusion, ...) into this table on the
        Spark SQL `predicate`; returns a `TableMerger` (add WHEN clauses, then `execute()`).

        `streamed_exec`, `max_spill_size` and `max_temp_directory_size` (DataFusion's memory pool and spill
        limits in deltalake) are accepted for deltalake compatibility: the target is always streamed file by
        file and the source read once as a stream when `execute()` runs (join keys kept in memory, rows
        spilled to a local memory-mapped Arrow file past 256 MiB, `DELTAKERNEL_MERGE_SOURCE_MEMORY`).
        Deletion vectors when the table allows them, else the touched files are rewritten.
        """
        from .operations.dml.merge.api import TableMerger, deltalake_spelling, merge
        from .operations.dml.merge.source import as_merge_source

        commit_properties, post_commithook_properties = commit_args("merge", args, commit_properties,
                                                                     post_commithook_properties)
        data = as_merge_source(source)

        def run(clauses: list[Any]) -> dict[str, Any]:
            clauses, text = deltalake_spelling(clauses, predicate, [*self._snapshot.schema.names, *data.schema.names])
            metrics, version = merge(
                self._storage, self._snapshot, data, text, clauses, source_alias=source_alias,
                target_alias=target_alias, merge_schema=merge_schema, error_on_type_mismatch=error_on_type_mismatch,
                writer_properties=writer_properties, commit_properties=commit_properties,
                post_commithook_properties=post_commithook_properties)
            if version is not None:
                self._snapshot = Snapshot.load(self._storage, version)
            return metrics

        return TableMerger(run)

    def vacuum(
        self,
        retention_hours: float | None = None,
        dry_run: bool = True,
        enforce_retention_duration: bool = True,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
        full: bool = False,
        keep_versions: list[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        min_unreferenced_age_hours: float | None = None,
    ) -> list[str]:
        """Delete files no longer referenced by any retained version; returns their paths relative to the
        table root (those that would be deleted on a dry run). See `operations/maintenance/vacuum.py` for lite / full.

        `min_unreferenced_age_hours` (ours; deltalake has none): full mode deletes a file that no log entry
        names (possibly a concurrent writer's uncommitted data) only once it is older than this, whatever
        the retention; default: the table property `deltakernel.vacuum.minUnreferencedFileAge`, else 1 hour."""
        from .operations.maintenance.vacuum import vacuum

        if args:  # deltalake's legacy positional order: post-commit hook, commit properties, full, keep_versions
            if len(args) > 4:
                raise TypeError("vacuum() got unexpected positional arguments")
            commit_properties, post_commithook_properties = commit_args(
                "vacuum", args[:2], commit_properties, post_commithook_properties,
                ("post_commithook_properties", "commit_properties"))
            if len(args) >= 3:
                if full:
                    raise TypeError("vacuum() got multiple values for 'full'")
                full = args[2]
            if len(args) == 4:
                if keep_versions is not None:
                    raise TypeError("vacuum() got multiple values for 'keep_versions'")
                keep_versions = args[3]
        check_commit_properties(commit_properties)
        files, self._snapshot = vacuum(
            self._storage, self._snapshot, retention_hours=retention_hours, dry_run=dry_run,
            enforce_retention_duration=enforce_retention_duration, commit_properties=commit_properties,
            post_commithook_properties=post_commithook_properties, full=full, keep_versions=keep_versions,
            progress=progress, min_unreferenced_age_hours=min_unreferenced_age_hours)
        return files

    def restore(
        self,
        target: int | dt.datetime | str,
        *,
        ignore_missing_files: bool = False,
        protocol_downgrade_allowed: bool = False,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """Make an earlier version (int, datetime or ISO-8601 string) the current state in one new commit;
        returns deltalake's metrics (`numRemovedFile`, `numRestoredFile`). The table is left at the new version."""
        from .operations.maintenance.restore import restore

        check_commit_properties(commit_properties)
        metrics, version = restore(self._storage, self._snapshot, target, ignore_missing_files=ignore_missing_files,
                                   protocol_downgrade_allowed=protocol_downgrade_allowed,
                                   commit_properties=commit_properties,
                                   post_commithook_properties=post_commithook_properties, clamp_to_earliest=True)
        # the RESTORE commit applied to the snapshot it was made on (no third full replay of the log)
        self._snapshot = self._snapshot.advance(version)
        return metrics

    def create_write_transaction(
        self,
        actions: list[Any],
        mode: str,
        schema: Any,
        partition_by: list[str] | str | None = None,
        partition_filters: FilterLike | None = None,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> None:
        """Commit data files written outside deltakernel (deltalake's `AddAction`s) in one WRITE commit:
        `mode="append"`, or `"overwrite"` removing the live files of `partition_filters` (all when None) first.
        `schema` is accepted as deltalake's (which does not apply it either). The table moves to the new version."""
        from .operations.write.external_files import write_transaction

        commit_properties, post_commithook_properties = commit_args(
            "create_write_transaction", args, commit_properties, post_commithook_properties)
        parts = [partition_by] if isinstance(partition_by, str) else partition_by
        version = write_transaction(self._storage, self._snapshot, list(actions), mode, parts,
                                    self._partition_filter(partition_filters), commit_properties,
                                    post_commithook_properties)
        self._snapshot = Snapshot.load(self._storage, version)

    def repair(
        self,
        dry_run: bool = False,
        *args: Any,
        commit_properties: Any = None,
        post_commithook_properties: Any = None,
    ) -> dict[str, Any]:
        """FSCK: remove the live files missing from storage; deltalake's metrics
        (`{"dry_run": ..., "files_removed": [paths relative to the root]}`). No commit when none is missing."""
        from .operations.maintenance.repair import repair

        commit_properties, post_commithook_properties = commit_args("repair", args, commit_properties,
                                                                     post_commithook_properties)
        metrics, version = repair(self._storage, self._snapshot, dry_run=dry_run, commit_properties=commit_properties,
                                  post_commithook_properties=post_commithook_properties)
        if version is not None:
            self._snapshot = Snapshot.load(self._storage, version)
        return metrics

    def _spark_sql(self, text: str | None) -> str | None:
        """deltalake's SQL spelling -> Spark's: `"col"` naming a column is an identifier (decisions.md)."""
        if not isinstance(text, str):
            return text
        from .kernel.expressions.sql import quote_column_identifiers

        return quote_column_identifiers(text, self._snapshot.schema.names)

    def clone(
        self,
        target: str,
        shallow: bool = True,
        version: int | None = None,
        timestamp: str | dt.datetime | None = None,
        replace: bool = False,
        properties: dict[str, str | None] | None = None,
        storage_options: dict[str, str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Any:
        """Clone this table (its loaded version, or `version` / `timestamp`) into `target`, as delta-spark's
        `clone` / `cloneAtVersion` / `cloneAtTimestamp`; returns the target. Shallow: the target references
        this table's files by absolute path (keep them: VACUUM here breaks the clone); deep: files are copied.
        `replace=True` replaces a table already at `target`; `properties` override the configuration. The
        CLONE commit's metrics (sourceTableSize, numCopiedFiles, ...) are in the target's history."""
        from .operations.create.clone import clone_table

        if version is not None and timestamp is not None:
            raise DeltaError("pass version or timestamp, not both")
        source = self._snapshot
        if version is not None or timestamp is not None:
            source = Snapshot.load_at(self._storage, version if version is not None else timestamp,
                                      reference=self._snapshot)
        _, _ = clone_table(self._storage, source, target, shallow=shallow, replace=replace, properties=properties,
                           storage_options=storage_options, progress=progress)
        table_class: Any = type(self)  # DeltaTable
        return table_class(target, storage_options=storage_options)

    def compact_logs(self, start_version: int | None = None, end_version: int | None = None) -> str | None:
        """Write `_delta_log/<start>.<end>.compacted.json` (PROTOCOL.md "Log Compaction Files"): the reconciled
        actions of commits start..end (default: after the last checkpoint up to the loaded version). Returns
        the file's key, or None when the range holds fewer than two commits."""
        from .kernel.log.compaction import compact_logs

        return compact_logs(self._storage, self._snapshot, start_version, end_version)

    # ------------------------------------------------------------------ log maintenance
    def create_checkpoint(self) -> None:
        """Checkpoint the loaded version, so readers replay less of the log (deltalake's name)."""
        from .kernel.checkpoints.write import write_checkpoint

        write_checkpoint(self._snapshot)

    def cleanup_metadata(self) -> None:
        """Delete log files older than `delta.logRetentionDuration` that no retained version needs."""
        from .kernel.checkpoints.cleanup import cleanup_expired_logs

        cleanup_expired_logs(self._snapshot)


__all__ = ["TableOperations"]
