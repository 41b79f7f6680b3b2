"""`DeltaTable.alter`: metadata and protocol changes, one kernel Transaction per call.

Method names and keywords follow deltalake's `TableAlterer`; commitInfo operation names follow
Spark ("ADD CONSTRAINT", "SET TBLPROPERTIES", ...), so histories look the same whoever wrote them.
Only `add_constraint` reads data (every existing row must satisfy the new constraint), so only it
records `read_whole_table()`: a concurrent append then conflicts instead of sneaking in a violating
row. Renames and drops are metadata-only and therefore need column mapping (PROTOCOL.md "Column
Mapping"): data files keep their physical names, only the logical schema changes.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any
from typing import Protocol as TypingProtocol

from ...errors import ConstraintViolationError, DeltaError, SchemaError, UnsupportedFeatureError
from ...kernel.expressions.sql import parse_sql, quote_column_identifiers, referenced_columns
from ...kernel.log.action_types import AddAction
from ...kernel.log.actions import Protocol
from ...kernel.protocol.features import READER_WRITER_FEATURES, SUPPORTED_WRITER_FEATURES
from ...kernel.protocol.select import (
    features_in_effect,
    minimal_protocol,
    table_features_protocol,
    with_dependencies,
    with_min_versions,
)
from ...kernel.row_tracking import with_materialized_names
from ...kernel.scan.scan import Scan
from ...kernel.schema.column_mapping import ID_KEY, MODE_KEY, PHYSICAL_NAME_KEY
from ...kernel.schema.evolution import schema_has_type
from ...kernel.schema.types import ArrayType, DataType, MapType, StructField, StructType, parse_field, schema_to_json
from ...kernel.snapshot import Snapshot
from ...sqleval import evaluate
from ..commit_options import CommitProperties, PostCommitHookProperties
from ..write.enforcement import CONSTRAINT_PREFIX, GENERATION_EXPRESSION, check_constraints, sample_row
from ..write.plan import keep_preview_shredding
from .metadata import AlterBase, CommitOptions, commit_options, resolve_path
from .table_properties import PROPERTY_FEATURES, feature_name, validate_properties


class TableHandle(TypingProtocol):
    """What alter needs of a table (a `deltakernel.DeltaTable`; operations never import the engine layer)."""

    @property
    def snapshot(self) -> Snapshot: ...

    def update_incremental(self) -> None: ...

MAX_COLUMN_ID_KEY = "delta.columnMapping.maxColumnId"


class TableAlterer(AlterBase):
    """Schema, constraint, property and protocol changes of one DeltaTable."""

    def __init__(self, table: TableHandle) -> None:
        super().__init__(table)

    @property
    def _protocol(self) -> Protocol:
        protocol: Protocol = self._table.snapshot.protocol
        return protocol

    def _mode(self) -> str:
        mode = self._metadata.configuration.get(MODE_KEY, "none").strip().lower()
        return mode if mode in ("name", "id") else "none"

    # ------------------------------------------------------------------ constraints
    def add_constraint(self, constraints: dict[str, str],
                       *args: Any, commit_properties: CommitProperties | None = None,
                       post_commithook_properties: PostCommitHookProperties | None = None,
                       custom_metadata: dict[str, Any] | None = None) -> None:
        """Add CHECK constraints after verifying every existing row; nothing is committed on a violation."""
        opts = commit_options("add_constraint", args, commit_properties, post_commithook_properties, custom_metadata)
        if not constraints:
            raise DeltaError("No check constraint (Name and Expression) provided: "
                             "add_constraint needs at least one constraint")
        self._table.update_incremental()
        snap = self._table.snapshot
        conf = dict(snap.configuration)
        existing = {k.lower() for k in check_constraints(conf)}
        # deltalake's `"col"` identifiers are stored in Spark's form (`col`), so Spark reads the same constraint
        constraints = {name: quote_column_identifiers(text, snap.schema.names) if isinstance(text, str) else text
                       for name, text in constraints.items()}
        parsed = {}
        for name, text in constraints.items():
            if not name or not isinstance(text, str):
                raise DeltaError(f"invalid constraint {name!r}: {text!r}")
            if name.lower() in existing:
                raise DeltaError(f"constraint {name!r} already exists: {conf.get(CONSTRAINT_PREFIX + name)!r}")
            expr = parse_sql(text)
            for path in referenced_columns(expr):
                resolve_path(snap.schema, path, f"constraint {name!r}")
            parsed[name] = expr
        needed = sorted({snap.schema.field(p[0]).name for e in parsed.values() for p in referenced_columns(e)})
        scan = Scan(snap, columns=needed or snap.schema.names[:1])
        for batch in scan.to_batches():
            for name, expr in parsed.items():
                result = evaluate(expr, batch)
                count, row = sample_row(batch, result)
                if count:
                    raise ConstraintViolationError(  # deltalake's words first
                        f"Invalid data found: {count} rows failed validation check. "
                        f"cannot add CHECK constraint {name} ({constraints[name]}): {count} existing row(s) "
                        f"violate it, for example: {row}")
        params = ({"name": next(iter(constraints)), "expr": next(iter(constraints.values()))}
                  if len(constraints) == 1 else
                  {"constraints": json.dumps([{"name": n, "expr": e} for n, e in constraints.items()])})
        txn = self._txn("ADD CONSTRAINT", params)
        txn.read_whole_table()
        for name, text in constraints.items():
            conf[CONSTRAINT_PREFIX + name] = text
        txn.update_metadata(replace(snap.metadata, configuration=conf))
        if "checkConstraints" not in features_in_effect(snap.protocol):
            txn.update_protocol(minimal_protocol({"checkConstraints"}, snap.protocol))
        self._commit(txn, opts)

    def drop_constraint(self, name: str, raise_if_not_exists: bool = True,
                        *args: Any, commit_properties: CommitProperties | None = None,
                        post_commithook_properties: PostCommitHookProperties | None = None,
                        custom_metadata: dict[str, Any] | None = None) -> None:
        opts = commit_options("drop_constraint", args, commit_properties, post_commithook_properties,
                              custom_metadata)
        self._table.update_incremental()
        conf = dict(self._metadata.configuration)
        key = next((k for k in conf if k.lower() == (CONSTRAINT_PREFIX + name).lower()), None)
        if key is None:
            if raise_if_not_exists:
                raise DeltaError(f"Constraint with name {name!r} does not exist.")
            return
        expr = conf.pop(key)
        txn = self._txn("DROP CONSTRAINT", {"constraint": name, "expr": expr})
        txn.update_metadata(replace(self._metadata, configuration=conf))
        self._commit(txn, opts)

    # ------------------------------------------------------------------ columns
    def add_columns(self, fields: Any,
                    *args: Any, commit_properties: CommitProperties | None = None,
                    post_commithook_properties: PostCommitHookProperties | None = None,
                    custom_metadata: dict[str, Any] | None = None) -> None:
        """Add nullable columns (top-level, or new fields inside an existing struct given as a struct)."""
        opts = commit_options("add_columns", args, commit_properties, post_commithook_properties, custom_metadata)
        new = [_as_field(f) for f in (fields if isinstance(fields, (list, tuple)) else [fields])]
        if not new:
            raise DeltaError("add_columns needs at least one field")
        self._table.update_incremental()
        md = self._metadata
        mode = self._mode()
        conf = dict(md.configuration)
        counter = [int(conf.get(MAX_COLUMN_ID_KEY, "0"))]
        schema = md.schema
        for f in new:
            _check_addable(f)
            schema = _merge_field(schema, f, mode, counter)
        if mode != "none":
            conf[MAX_COLUMN_ID_KEY] = str(counter[0])
        txn = self._txn("ADD COLUMNS", {"columns": json.dumps([{"column": f.to_json()} for f in new])})
        txn.update_metadata(replace(md, schema_string=schema_to_json(schema), configuration=conf))
        if schema_has_type(schema, "timestamp_ntz") and "timestampNtz" not in features_in_effect(self._protocol):
            txn.update_protocol(minimal_protocol({"timestampNtz"}, self._protocol))
        self._commit(txn, opts)

    def rename_column(self, old: str, new: str,
                      *args: Any, commit_properties: CommitProperties | None = None,
                      post_commithook_properties: PostCommitHookProperties | None = None,
                      custom_metadata: dict[str, Any] | None = None) -> None:
        """Rename a (possibly nested, dotted) column; metadata-only, so column mapping is required."""
        opts = commit_options("rename_column", args, commit_properties, post_commithook_properties,
                              custom_metadata)
        self._table.update_incremental()
        md = self._metadata
        self._require_mapping("RENAME COLUMN")
        path = resolve_path(md.schema, tuple(old.split(".")), "rename")
        if not new or "." in new:
            raise DeltaError(f"invalid new column name {new!r} (give only the last name part)")
        self._check_unreferenced(path, "renamed")
        schema = _rename(md.schema, path, new)
        parts = list(md.partition_columns)
        if len(path) == 1:
            parts = [new if p.lower() == path[0].lower() else p for p in parts]
        txn = self._txn("RENAME COLUMN", {"oldColumnPath": old, "newColumnPath": ".".join((*path[:-1], new))})
        txn.update_metadata(replace(md, schema_string=schema_to_json(schema), partition_columns=tuple(parts)))
        self._commit(txn, opts)

    def drop_columns(self, names: str | list[str],
                     *args: Any, commit_properties: CommitProperties | None = None,
                     post_commithook_properties: PostCommitHookProperties | None = None,
                     custom_metadata: dict[str, Any] | None = None) -> None:
        """Drop (possibly nested, dotted) columns; metadata-only, so column mapping is required."""
        opts = commit_options("drop_columns", args, commit_properties, post_commithook_properties, custom_metadata)
        names = [names] if isinstance(names, str) else list(names)
        self._table.update_incremental()
        md = self._metadata
        self._require_mapping("DROP COLUMNS")
        schema = md.schema
        parts = {p.lower() for p in md.partition_columns}
        for name in names:
            path = resolve_path(schema, tuple(name.split(".")), "drop")
            if len(path) == 1 and path[0].lower() in parts:
                raise DeltaError(f"cannot drop partition column {path[0]!r}")
            self._check_unreferenced(path, "dropped")
            schema = _drop(schema, path)
        if not schema.fields:
            raise DeltaError("cannot drop every column of a table")
        txn = self._txn("DROP COLUMNS", {"columns": json.dumps(names)})
        txn.update_metadata(replace(md, schema_string=schema_to_json(schema)))
        self._commit(txn, opts)

    def _require_mapping(self, op: str) -> None:
        if self._mode() == "none":
            raise DeltaError(
                f"{op} needs column mapping: without it data files store columns under their names, so the "
                f"change would require rewriting every file. Enable it first with "
                f"set_table_properties({{'{MODE_KEY}': 'name'}})")

    def _check_unreferenced(self, path: tuple[str, ...], verb: str) -> None:
        md = self._metadata
        texts = [(f"CHECK constraint {n}", t) for n, t in check_constraints(md.configuration).items()]
        texts += [(f"generated column {f.name!r}", str(f.metadata[GENERATION_EXPRESSION]))
                  for f in md.schema.fields if GENERATION_EXPRESSION in f.metadata]
        target = tuple(p.lower() for p in path)
        for what, text in texts:
            for ref in referenced_columns(parse_sql(text)):
                low = tuple(p.lower() for p in ref)
                if low[:len(target)] == target or target[:len(low)] == low:
                    raise DeltaError(f"column {'.'.join(path)!r} cannot be {verb}: {what} ({text}) uses it")

    # ------------------------------------------------------------------ properties and protocol
    def set_table_properties(self, properties: dict[str, str], raise_if_not_exists: bool = True,
                             *args: Any, commit_properties: CommitProperties | None = None,
                             post_commithook_properties: PostCommitHookProperties | None = None,
                             custom_metadata: dict[str, Any] | None = None) -> None:
        """Set table properties, upgrading the protocol for the features they turn on."""
        opts = commit_options("set_table_properties", args, commit_properties, post_commithook_properties,
                              custom_metadata)
        self._table.update_incremental()
        snap = self._table.snapshot
        md, proto = snap.metadata, snap.protocol
        props = {str(k): str(v) for k, v in properties.items()}
        stored, explicit, min_versions = validate_properties(props, md.configuration, raise_if_not_exists)
        conf = {**md.configuration, **stored}
        needed = set(explicit)
        for key, value in stored.items():
            feat = PROPERTY_FEATURES.get(key)
            if feat is not None and feat[1](value):
                needed.add(feat[0])
        needed = keep_preview_shredding(needed, proto)
        have = features_in_effect(proto)
        if explicit and not explicit <= have:
            new_proto: Protocol | None = table_features_protocol(needed | have, proto)
        elif not needed <= have:
            new_proto = minimal_protocol(needed, proto)
        else:
            new_proto = None
        if min_versions is not None:
            base = new_proto or proto
            raised = with_min_versions(base, *min_versions)
            new_proto = raised if raised != proto else new_proto
        schema = md.schema
        old_mode = md.configuration.get(MODE_KEY, "none").lower()
        new_mode = conf.get(MODE_KEY, "none").lower()
        if new_mode != old_mode:
            if old_mode != "none" or (new_mode == "id" and snap.version > 0 and snap.num_files > 0):
                raise DeltaError(f"changing {MODE_KEY} from {old_mode!r} to {new_mode!r} is not supported "
                                 "(only 'none' -> 'name' on an existing table)")
            counter = [int(conf.get(MAX_COLUMN_ID_KEY, "0"))]
            schema = _assign_mapping(schema, counter, keep_names=True)
            conf[MAX_COLUMN_ID_KEY] = str(counter[0])
        max_retries = None
        ict = "delta.enableInCommitTimestamps"
        if conf.get(ict, "false").lower() == "true" and md.configuration.get(ict, "false").lower() != "true":
            import time

            ts = int(time.time() * 1000)
            conf["delta.inCommitTimestampEnablementVersion"] = str(snap.version + 1)
            conf["delta.inCommitTimestampEnablementTimestamp"] = str(ts)
            max_retries = 0  # the enablement version must be the version this commit lands at
        backfill: list[AddAction] = []
        rt = "delta.enableRowTracking"
        if conf.get(rt, "false").lower() == "true" and md.configuration.get(rt, "false").lower() != "true":
            conf = with_materialized_names(conf)
            backfill = _row_id_backfill(snap)
        txn = self._txn("SET TBLPROPERTIES", {"properties": json.dumps(props)})
        if max_retries is not None:
            txn.in_commit_timestamp = int(conf["delta.inCommitTimestampEnablementTimestamp"])
        txn.add_files(backfill)  # the transaction gives them baseRowId / defaultRowCommitVersion
        txn.update_metadata(replace(md, configuration=conf, schema_string=schema_to_json(schema)))
        if new_proto is not None and new_proto != proto:
            txn.update_protocol(new_proto)
        self._commit(txn, opts, max_retries)

    def add_feature(self, feature: Any, allow_protocol_versions_increase: bool = False,
                    *args: Any, commit_properties: CommitProperties | None = None,
                    post_commithook_properties: PostCommitHookProperties | None = None,
                    custom_metadata: dict[str, Any] | None = None) -> None:
        """Add table features to the protocol (writer 7 feature lists), as deltalake's `add_feature`."""
        opts = commit_options("add_feature", args, commit_properties, post_commithook_properties, custom_metadata)
        items = feature if isinstance(feature, (list, tuple, set)) else [feature]
        names = {feature_name(f) for f in items}
        for n in names:
            if n not in SUPPORTED_WRITER_FEATURES:  # e.g. icebergCompatV1: its per-write rules are not kept here
                raise UnsupportedFeatureError(n, f"table feature {n!r} is not supported by deltakernel")
        self._table.update_incremental()
        proto = self._protocol
        # as deltalake: a feature a legacy protocol implies (appendOnly at writer 2) is still added as a listed
        # feature, which needs writer 7; on a table-features protocol listing it there is nothing to commit
        # (deltalake commits an "ADD FEATURE" that changes nothing: docs/decisions.md)
        if proto.min_writer_version >= 7 and with_dependencies(names) <= features_in_effect(proto):
            return
        new = table_features_protocol(names, proto)
        if (new.min_reader_version > proto.min_reader_version or new.min_writer_version > proto.min_writer_version) \
                and not allow_protocol_versions_increase:
            need = "reader 3 and writer 7" if new.min_reader_version >= 3 and any(
                n in READER_WRITER_FEATURES for n in names) else "writer 7"
            raise DeltaError(
                "Table feature enables writer feature, but min_writer is not v7. Set "
                "allow_protocol_versions_increase or increase version explicitly through set_tbl_properties: "
                f"adding {sorted(names)} needs protocol {need} (table is at reader "
                f"{proto.min_reader_version}, writer {proto.min_writer_version}); pass "
                "allow_protocol_versions_increase=True to upgrade")
        # deltalake's operation name and parameters (Spark's ALTER TABLE ... SET TBLPROPERTIES says
        # "SET TBLPROPERTIES"; its `addFeatureSupport` API "ADD FEATURE" too)
        txn = self._txn("ADD FEATURE", {"name": json.dumps(sorted(names), separators=(",", ":"))})
        txn.update_protocol(new)
        self._commit(txn, opts)

    def drop_feature(self, feature: Any, allow_protocol_versions_increase: bool = False, *,
                     truncate_history: bool = False, commit_properties: CommitProperties | None = None,
                     post_commithook_properties: PostCommitHookProperties | None = None,
                     custom_metadata: dict[str, Any] | None = None) -> None:
        """Remove table features from the protocol (delta-spark's DROP FEATURE [TRUNCATE HISTORY]); see
        `operations/drop_feature.py` for which features can go and the history-truncation rule."""
        from .drop_feature import drop_feature

        opts = commit_options("drop_feature", (), commit_properties, post_commithook_properties, custom_metadata)
        self._table.update_incremental()
        try:
            drop_feature(self._table.snapshot.storage, self._table.snapshot, feature,
                         allow_protocol_versions_increase=allow_protocol_versions_increase,
                         truncate_history=truncate_history, custom_metadata=_custom(opts),
                         post_commithook_properties=opts.post_commithook_properties)
        finally:
            self._table.update_incremental()

    def cluster_by(self, columns: list[str] | None, *, commit_properties: CommitProperties | None = None,
                   post_commithook_properties: PostCommitHookProperties | None = None,
                   custom_metadata: dict[str, Any] | None = None) -> None:
        """Change the clustering columns: delta-spark's `ALTER TABLE ... CLUSTER BY (cols)`, or with None / []
        `CLUSTER BY NONE` (deltalake has no equivalent). Commits "CLUSTER BY"; OPTIMIZE then clusters by the new
        columns. See `operations/clustering.alter_clustering`."""
        from ..maintenance.optimize.clustering import alter_clustering

        opts = commit_options("cluster_by", (), commit_properties, post_commithook_properties, custom_metadata)
        self._table.update_incremental()
        try:
            alter_clustering(self._table.snapshot.storage, self._table.snapshot, columns, _custom(opts),
                             opts.post_commithook_properties)
        finally:
            self._table.update_incremental()


# ----------------------------------------------------------------------------- schema helpers
def _custom(opts: CommitOptions) -> dict[str, Any] | None:
    """The commitInfo fields of `opts` (drop_feature / cluster_by commit on their own)."""
    cp = opts.commit_properties
    return dict(cp.custom_metadata) if cp is not None and cp.custom_metadata else None


def _as_field(f: Any) -> StructField:
    if isinstance(f, StructField):
        return f
    kernel = getattr(f, "_kernel", None)  # deltakernel.schema.Field (engine layer; not imported here)
    if isinstance(kernel, StructField):
        return kernel
    to_json = getattr(f, "to_json", None)
    if callable(to_json):  # deltalake.schema.Field
        raw = to_json()
        return parse_field(json.loads(raw) if isinstance(raw, str) else raw)
    raise DeltaError(f"add_columns needs StructField values, got {type(f).__name__}")


def _check_addable(f: StructField) -> None:
    if not f.nullable:
        raise DeltaError(f"cannot add non-nullable column {f.name!r}: existing rows would hold NULL")
    if GENERATION_EXPRESSION in f.metadata or "delta.identity.start" in f.metadata:
        raise DeltaError(f"New columns cannot be a generated column: cannot add generated or identity column "
                         f"{f.name!r} to an existing table")  # deltalake's sentence first: its users match on it
    if isinstance(f.type, StructType):
        for sub in f.type.fields:
            _check_addable(sub)


def _new_mapping(f: StructField, mode: str, counter: list[int]) -> StructField:
    if mode == "none":
        return f
    counter[0] += 1
    meta = {**f.metadata, ID_KEY: counter[0], PHYSICAL_NAME_KEY: f"col-{uuid.uuid4()}"}
    return StructField(f.name, _map_type(f.type, lambda g: _new_mapping(g, mode, counter)), f.nullable, meta)


def _map_type(t: DataType, fn: Any) -> DataType:
    """Apply `fn` to every struct field directly inside `t` (through arrays and maps)."""
    if isinstance(t, StructType):
        return StructType(tuple(fn(f) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_map_type(t.element_type, fn), t.contains_null)
    if isinstance(t, MapType):
        return MapType(_map_type(t.key_type, fn), _map_type(t.value_type, fn), t.value_contains_null)
    return t


def _assign_mapping(schema: StructType, counter: list[int], keep_names: bool) -> StructType:
    """Ids for every field and physical name = logical name (enabling mapping on an existing table)."""
    def assign(f: StructField) -> StructField:
        meta = dict(f.metadata)
        if ID_KEY not in meta:
            counter[0] += 1
            meta[ID_KEY] = counter[0]
        meta.setdefault(PHYSICAL_NAME_KEY, f.name if keep_names else f"col-{uuid.uuid4()}")
        return StructField(f.name, _map_type(f.type, assign), f.nullable, meta)

    return StructType(tuple(assign(f) for f in schema.fields))


def _merge_field(struct: StructType, f: StructField, mode: str, counter: list[int]) -> StructType:
    if not struct.has(f.name):
        return StructType((*struct.fields, _new_mapping(f, mode, counter)))
    cur = struct.field(f.name)
    if not (isinstance(cur.type, StructType) and isinstance(f.type, StructType)):
        raise SchemaError(f"column {f.name!r} already exists")
    merged = cur.type
    added = False
    for sub in f.type.fields:
        if merged.has(sub.name):
            existing = merged.field(sub.name)
            if isinstance(existing.type, StructType) and isinstance(sub.type, StructType):
                merged = _merge_field(merged, sub, mode, counter)
                added = True
                continue
            if existing.type != sub.type:
                raise SchemaError(f"field {f.name}.{sub.name} already exists with type {existing.type.to_json()}")
            continue
        merged = StructType((*merged.fields, _new_mapping(sub, mode, counter)))
        added = True
    if not added:
        raise SchemaError(f"column {f.name!r} already exists and no new nested field was given")
    new = StructField(cur.name, merged, cur.nullable, cur.metadata)
    return StructType(tuple(new if g is cur else g for g in struct.fields))


def _rename(struct: StructType, path: tuple[str, ...], new: str) -> StructType:
    head = path[0]
    if len(path) == 1 and any(g.name.lower() == new.lower() and g.name != head for g in struct.fields):
        raise SchemaError(f"column {new!r} already exists")
    fields = []
    for g in struct.fields:
        if g.name == head:
            if len(path) == 1:
                g = StructField(new, g.type, g.nullable, g.metadata)
            else:
                assert isinstance(g.type, StructType)
                g = StructField(g.name, _rename(g.type, path[1:], new), g.nullable, g.metadata)
        fields.append(g)
    return StructType(tuple(fields))


def _drop(struct: StructType, path: tuple[str, ...]) -> StructType:
    fields = []
    for g in struct.fields:
        if g.name == path[0]:
            if len(path) == 1:
                continue
            assert isinstance(g.type, StructType)
            inner = _drop(g.type, path[1:])
            if not inner.fields:
                raise DeltaError(f"cannot drop the last field of struct {g.name!r}; drop the struct instead")
            g = StructField(g.name, inner, g.nullable, g.metadata)
        fields.append(g)
    return StructType(tuple(fields))


__all__ = ["TableAlterer", "feature_name"]


def _row_id_backfill(snap: Any) -> list[AddAction]:
    """Enabling row tracking on a table with data: every live file without a baseRowId is re-added
    (dataChange=false) so that the commit assigns it one (PROTOCOL.md "Row Tracking": all files of a table
    with `delta.enableRowTracking=true` have base row ids). One action per existing file, once."""
    files = snap.files
    if files.num_rows == 0:
        return []
    import pyarrow.compute as pc

    missing = files.filter(pc.is_null(files.column("base_row_id")))
    out: list[AddAction] = []
    for r in missing.select(["path", "size", "modification_time", "partition_values", "stats",
                             "deletion_vector", "tags"]).to_pylist():
        add: AddAction = {"path": r["path"], "partitionValues": dict(r["partition_values"] or {}),
                               "size": r["size"], "modificationTime": r["modification_time"], "dataChange": False,
                               "stats": r["stats"]}
        if r["deletion_vector"]:
            add["deletionVector"] = {k: v for k, v in r["deletion_vector"].items() if v is not None}
        if r["tags"]:
            add["tags"] = dict(r["tags"])
        out.append(add)
    return out
