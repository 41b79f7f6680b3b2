"""What one write asks for: `write_deltalake`'s arguments (and the engines' extras), checked once.

Why a dataclass: deltalake's `write_deltalake` has twenty keyword arguments, and the engines (Spark's
writer and data source, the streaming sink, DataFusion's INSERT, table creation) need a few more that are
not deltalake's API (an operation name, a table's domain metadata, a typed Delta schema, files written by
the engine's own workers). They travel together as one value instead of underscore-prefixed keywords.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from ...errors import DeltaError
from ...kernel.log.actions import Metadata
from ...kernel.schema.types import StructType
from ..commit_options import CommitProperties, PostCommitHookProperties, check_commit_properties

MODES = ("error", "append", "overwrite", "ignore")
#: commitInfo's `mode` parameter for each mode (delta-spark's SaveMode names)
MODE_NAMES = {"error": "ErrorIfExists", "append": "Append", "overwrite": "Overwrite", "ignore": "Ignore"}


@dataclass
class WriteRequest:
    """The arguments of one write; :meth:`check` validates them (before anything is read or written)."""

    mode: str = "error"
    schema_mode: str | None = None
    partition_by: list[str] | None = None
    predicate: str | None = None
    partition_overwrite_mode: str = "static"
    configuration: dict[str, str | None] | None = None
    name: str | None = None
    description: str | None = None
    target_file_size: int | None = None
    writer_properties: Any = None
    storage_options: dict[str, str] | None = None
    commit_properties: CommitProperties = field(default_factory=CommitProperties)
    post_commithook_properties: PostCommitHookProperties | None = None
    max_rows_per_file: int | None = None
    engine_info: str | None = None
    progress: Callable[[int, int], None] | None = None
    #: shredding schema (Spark DDL, or column -> DDL) for variant columns of a table with shredding on
    variant_shredding_schema: str | dict[str, str] | None = None
    # ---- engine extras (not deltalake's API)
    #: commitInfo operation ("WRITE", "CREATE TABLE", "CREATE TABLE AS SELECT", ...)
    operation: str = "WRITE"
    #: `(metadata) -> {domain: configuration}` committed with the write (a clustered table's creation)
    domain_metadata: Callable[[Metadata], dict[str, str]] | None = None
    #: the Delta schema of the data when the caller has one: its field metadata stays typed as given
    delta_schema: StructType | None = None
    #: after `schema_mode="merge"` on a partitioned table, put the partition columns after the existing data
    #: columns (deltalake's order); False keeps the table's order and appends (delta-spark's)
    partitions_last: bool = True

    @classmethod
    def of(cls, **kwargs: Any) -> WriteRequest:
        """A request from keyword arguments (TypeError names an unknown one), checked."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown write argument(s) {unknown}")
        if kwargs.get("commit_properties") is None:
            kwargs.pop("commit_properties", None)
        request = cls(**kwargs)
        request.check()
        return request

    def check(self) -> None:
        """Argument errors as deltalake raises them, before any file is read or written."""
        if self.mode not in MODES:
            raise DeltaError(f"Invalid save mode provided: {self.mode}, only these are supported: "
                             f"['append', 'overwrite', 'error', 'ignore']; mode must be one of {MODES}, "
                             f"got {self.mode!r}")
        if self.schema_mode not in (None, "merge", "overwrite"):
            raise DeltaError(f"Invalid schema write mode provided: {self.schema_mode}, only these are supported: "
                             f"['overwrite', 'merge']; schema_mode must be None, 'merge' or 'overwrite', "
                             f"got {self.schema_mode!r}")
        if self.schema_mode == "overwrite" and self.mode != "overwrite":
            raise DeltaError("schema_mode='overwrite' needs mode='overwrite'")
        if self.partition_overwrite_mode not in ("static", "dynamic"):
            raise DeltaError("partition_overwrite_mode must be 'static' or 'dynamic'")
        if self.predicate is not None and self.mode != "overwrite":
            raise DeltaError("predicate (replaceWhere) needs mode='overwrite'")
        if isinstance(self.partition_by, str):
            self.partition_by = [self.partition_by]
        check_commit_properties(self.commit_properties)  # deltalake's ValueError before any file is written

    @property
    def new_configuration(self) -> dict[str, str]:
        """The table properties this write sets (None values dropped, as deltalake does)."""
        return {k: v for k, v in (self.configuration or {}).items() if v is not None}


__all__ = ["MODES", "MODE_NAMES", "WriteRequest"]
