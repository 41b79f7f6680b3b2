"""`TableAlterer`'s table- and column-metadata methods and its commit plumbing (deltalake's commit options).

Every method takes deltalake 1.6.6's commit options: `commit_properties` / `post_commithook_properties` by
keyword (positionally after the method's own parameters: DeprecationWarning, as deltalake), plus our
keyword-only `custom_metadata` (commitInfo fields, merged over `commit_properties.custom_metadata`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from ...errors import DeltaError, SchemaError
from ...kernel.log.actions import Metadata
from ...kernel.schema.types import DataType, StructField, StructType, schema_to_json
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction
from ..commit_options import (
    CommitProperties,
    PostCommitHookProperties,
    check_commit_properties,
    commit_with,
    positional_commit_args,
)

#: deltalake's (delta-rs's) limits on `metaData.name` / `metaData.description`, in characters
MAX_NAME_LENGTH = 255
MAX_DESCRIPTION_LENGTH = 4000


@dataclass(frozen=True)
class CommitOptions:
    """One alter call's commit options, validated before anything is read or written."""

    commit_properties: CommitProperties | None = None
    post_commithook_properties: PostCommitHookProperties | None = None


def commit_options(
    method: str,
    args: tuple[Any, ...],
    commit_properties: Any,
    post_commithook_properties: Any,
    custom_metadata: dict[str, Any] | None,
) -> CommitOptions:
    """deltalake's positional-argument rule, then `custom_metadata` merged in and the result validated."""
    cp, post = positional_commit_args(method, args, commit_properties, post_commithook_properties)
    if custom_metadata:
        base = cp if cp is not None else CommitProperties()
        merged = {**(getattr(base, "custom_metadata", None) or {}), **custom_metadata}
        cp = CommitProperties(
            merged, getattr(base, "max_commit_retries", None), list(getattr(base, "app_transactions", None) or [])
        )
    check_commit_properties(cp)
    return CommitOptions(cp, post)


class AlterBase:
    """Commit plumbing and the metadata-only alterations of `TableAlterer`."""

    def __init__(self, table: Any) -> None:
        self._table = table

    def _txn(self, operation: str, parameters: dict[str, Any]) -> Transaction:
        """A transaction reading the snapshot the change was computed from (each method re-reads the latest
        version first): a change committed since then fails the commit (MetadataChangedError), never lost."""
        snap: Snapshot = self._table.snapshot
        return Transaction(snap.storage, snap, operation=operation, operation_parameters=parameters)

    def _commit(self, txn: Transaction, opts: CommitOptions | None = None, max_retries: int | None = None) -> None:
        """Commit with the call's options (custom commitInfo, retries, app transactions, post-commit hook)."""
        opts = opts or CommitOptions()
        cp = opts.commit_properties
        if max_retries is not None:
            cp = replace(cp or CommitProperties(), max_commit_retries=max_retries)
        commit_with(txn, cp, opts.post_commithook_properties)
        self._table.update_incremental()

    @property
    def _metadata(self) -> Metadata:
        md: Metadata = self._table.snapshot.metadata
        return md

    # ------------------------------------------------------------------ table and column metadata
    def set_table_name(
        self,
        name: str,
        *args: Any,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: PostCommitHookProperties | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Set `metaData.name` (deltalake's operation "UPDATE TABLE METADATA"); 1 to 255 characters."""
        opts = commit_options("set_table_name", args, commit_properties, post_commithook_properties, custom_metadata)
        self._update_table_metadata({"name": name}, opts)

    def set_table_description(
        self,
        description: str,
        *args: Any,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: PostCommitHookProperties | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Set `metaData.description` (deltalake's operation "UPDATE TABLE METADATA"); at most 4000 characters."""
        opts = commit_options(
            "set_table_description", args, commit_properties, post_commithook_properties, custom_metadata
        )
        self._update_table_metadata({"description": description}, opts)

    def _update_table_metadata(self, change: dict[str, str], opts: CommitOptions) -> None:
        for value in change.values():
            if not isinstance(value, str):  # deltalake: TypeError from its argument conversion
                raise TypeError(f"{type(value).__name__!r} object is not an instance of 'str'")
        name, desc = change.get("name"), change.get("description")
        if name is not None and not 0 < len(name) <= MAX_NAME_LENGTH:
            raise DeltaError(
                f"Table metadata is invalid: name: Table name cannot be empty and cannot exceed "
                f"{MAX_NAME_LENGTH} characters"
            )
        if desc is not None and len(desc) > MAX_DESCRIPTION_LENGTH:
            raise DeltaError(
                f"Table metadata is invalid: description: Table description cannot exceed "
                f"{MAX_DESCRIPTION_LENGTH} characters"
            )
        update = {"name": name, "description": desc}
        self._table.update_incremental()
        txn = self._txn("UPDATE TABLE METADATA", {"metadataUpdate": json.dumps(update, separators=(",", ":"))})
        txn.update_metadata(replace(self._metadata, **change))  # type: ignore[arg-type]
        self._commit(txn, opts)

    def set_column_metadata(
        self,
        column: str,
        metadata: dict[str, str],
        *args: Any,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: PostCommitHookProperties | None = None,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Insert or overwrite metadata keys of one (possibly nested, dotted) column."""
        opts = commit_options(
            "set_column_metadata", args, commit_properties, post_commithook_properties, custom_metadata
        )
        self._table.update_incremental()
        md = self._metadata
        if not md.schema.has(column.split(".")[0]):
            raise SchemaError(f"No field with the provided name in the schema: {column!r}")
        path = resolve_path(md.schema, tuple(column.split(".")), "set_column_metadata")
        reserved = sorted(k for k in metadata if k.startswith("delta.columnMapping.") or k == "delta.identity.start")
        if reserved:
            raise DeltaError(f"set_column_metadata cannot change protocol-owned keys {reserved}")
        schema = update_field(
            md.schema, path, lambda f: StructField(f.name, f.type, f.nullable, {**f.metadata, **metadata})
        )
        fields = json.dumps([f.to_json() for f in schema.fields], separators=(",", ":"))
        txn = self._txn("UPDATE FIELD METADATA", {"fields": fields})
        txn.update_metadata(replace(md, schema_string=schema_to_json(schema)))
        self._commit(txn, opts)

    def drop_column_not_null(
        self,
        column_name: str,
        commit_properties: CommitProperties | None = None,
        post_commithook_properties: PostCommitHookProperties | None = None,
        *,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        """Make a NOT NULL column nullable (ALTER COLUMN ... DROP NOT NULL; deltalake's "CHANGE COLUMN")."""
        opts = commit_options(
            "drop_column_not_null", (), commit_properties, post_commithook_properties, custom_metadata
        )
        self._table.update_incremental()
        md = self._metadata
        if not md.schema.has(column_name.split(".")[0]):
            raise SchemaError(f"No column with the name {column_name!r} in the schema")
        path = resolve_path(md.schema, tuple(column_name.split(".")), "drop_column_not_null")
        changed: list[StructField] = []

        def relax(f: StructField) -> StructField:
            if f.nullable:
                raise DeltaError(f"Column {column_name!r} is already nullable")
            changed.append(StructField(f.name, f.type, True, f.metadata))
            return changed[-1]

        schema = update_field(md.schema, path, relax)
        txn = self._txn("CHANGE COLUMN", {"column": json.dumps(changed[0].to_json(), separators=(",", ":"))})
        txn.update_metadata(replace(md, schema_string=schema_to_json(schema)))
        self._commit(txn, opts)


def resolve_path(schema: StructType, path: tuple[str, ...], what: str) -> tuple[str, ...]:
    """`path` with each part's stored spelling (case-insensitive lookup); SchemaError if absent."""
    struct: DataType = schema
    out: list[str] = []
    for part in path:
        if not isinstance(struct, StructType) or not struct.has(part):
            raise SchemaError(f"{what}: column {'.'.join(path)!r} does not exist")
        f = struct.field(part)
        out.append(f.name)
        struct = f.type
    return tuple(out)


def update_field(struct: StructType, path: tuple[str, ...], fn: Any) -> StructType:
    """`struct` with the field at `path` (resolved names) replaced by `fn(field)`."""
    fields = []
    for g in struct.fields:
        if g.name == path[0]:
            if len(path) == 1:
                g = fn(g)
            else:
                assert isinstance(g.type, StructType)
                g = StructField(g.name, update_field(g.type, path[1:], fn), g.nullable, g.metadata)
        fields.append(g)
    return StructType(tuple(fields))
