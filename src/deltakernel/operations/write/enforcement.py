"""Enforcing a table's write-time rules on data about to be written, one Arrow batch at a time.

What runs, in order (PROTOCOL.md "Default Columns", "Identity Columns", "Generated Columns",
"Column Invariants", "CHECK Constraints"):

1. absent columns with a `CURRENT_DEFAULT` get the default (only with `allowColumnDefaults`);
2. absent identity columns get fresh values from `delta.identity.start/step/highWaterMark`; the new
   high-water marks are kept for the commit (`identity_updates()`);
3. absent generated columns are computed from `delta.generationExpression`; present ones are verified
   with null-safe equality (`col <=> CAST(expr AS type)`, as Spark does);
4. any other absent column becomes all-null;
5. NOT NULL (top-level and nested struct fields whose parents are non-null), `delta.invariants`, and
   `delta.constraints.*` CHECKs are verified.

NULL semantics (delta-spark's `CheckDeltaInvariant` and deltalake both do this): a CHECK constraint or
invariant passes only when the expression is TRUE; NULL counts as a violation, unlike the SQL
standard's CHECK. Each rule only applies when the protocol enables its feature, as in Spark: metadata
of a feature the protocol lacks is ignored. Every violation raises ConstraintViolationError naming the
rule, its expression and one offending row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import ConstraintViolationError, DeltaError, SchemaError
from ...kernel.arrow_build import broadcast, scalar
from ...kernel.expressions.sql import SqlExpr, parse_sql
from ...kernel.log.actions import Metadata, Protocol
from ...kernel.protocol.select import features_in_effect
from ...kernel.schema.arrow import to_arrow_type
from ...kernel.schema.types import StructField, StructType
from ...sqleval import evaluate

Batch = Union[pa.RecordBatch, pa.Table]

CONSTRAINT_PREFIX = "delta.constraints."
GENERATION_EXPRESSION = "delta.generationExpression"
INVARIANTS = "delta.invariants"
CURRENT_DEFAULT = "CURRENT_DEFAULT"
IDENTITY_START = "delta.identity.start"
IDENTITY_STEP = "delta.identity.step"
IDENTITY_HWM = "delta.identity.highWaterMark"
IDENTITY_EXPLICIT = "delta.identity.allowExplicitInsert"


def check_constraints(configuration: dict[str, str]) -> dict[str, str]:
    """`{name: expression}` of the CHECK constraints in a table configuration."""
    return {k[len(CONSTRAINT_PREFIX):]: v for k, v in configuration.items() if k.startswith(CONSTRAINT_PREFIX)}


def invariant_expression(field: StructField) -> str | None:
    """The SQL of a column invariant (`{"expression": {"expression": "x > 3"}}`, stored as JSON text)."""
    raw = field.metadata.get(INVARIANTS)
    if raw is None:
        return None
    try:
        obj = json.loads(raw) if isinstance(raw, str) else raw
        text = obj["expression"]["expression"]
    except (ValueError, TypeError, KeyError) as e:
        raise DeltaError(f"malformed {INVARIANTS} on column {field.name!r}: {raw!r}") from e
    return str(text)


def sample_row(batch: Batch, mask: pa.Array) -> tuple[int, dict[str, Any]]:
    """(number of rows where `mask` is not TRUE, the first such row as a dict)."""
    bad = pc.invert(pc.fill_null(mask, False))
    count = int(pc.sum(bad).as_py() or 0)
    if count == 0:
        return 0, {}
    idx = int(pc.index(bad, True).as_py())
    return count, batch.slice(idx, 1).to_pylist()[0]


@dataclass
class IdentitySpec:
    """An identity column's definition (start, step, high-water mark, BY DEFAULT) as field metadata holds it."""

    start: int
    step: int
    hwm: int | None
    allow_explicit: bool


def identity_spec(field: StructField) -> IdentitySpec | None:
    """`field`'s identity definition, None when it is not an identity column; DeltaError when malformed.
    Shared by the embedded Enforcer and the Spark engine's distributed generator."""
    md = field.metadata
    if IDENTITY_START not in md and IDENTITY_STEP not in md:
        return None
    try:
        step = int(md.get(IDENTITY_STEP, 1))
        start = int(md.get(IDENTITY_START, 1))
        hwm = int(md[IDENTITY_HWM]) if md.get(IDENTITY_HWM) is not None else None
    except (TypeError, ValueError) as e:
        raise DeltaError(f"malformed identity metadata on column {field.name!r}: {md}") from e
    if step == 0:
        raise DeltaError(f"identity column {field.name!r} has step 0")
    explicit = str(md.get(IDENTITY_EXPLICIT, False)).lower() == "true"
    return IdentitySpec(start, step, hwm, explicit)


class Enforcer:
    """Prepares batches for writing into one table version (metadata + protocol)."""

    def __init__(self, metadata: Metadata, protocol: Protocol) -> None:
        self.metadata = metadata
        self.protocol = protocol
        self.schema: StructType = metadata.schema
        feats = features_in_effect(protocol)
        self._defaults_on = "allowColumnDefaults" in feats
        self._generated_on = "generatedColumns" in feats
        self._identity_on = "identityColumns" in feats
        self._invariants_on = "invariants" in feats
        self._checks_on = "checkConstraints" in feats
        self._parsed: dict[str, SqlExpr] = {}
        self._identities: dict[str, IdentitySpec] = {}
        self._hwm: dict[str, int] = {}
        self._pending: dict[str, int] = {}
        for f in self.schema.fields:
            ident = identity_spec(f) if self._identity_on else None
            if ident is not None:
                self._identities[f.name] = ident
        self.checks = check_constraints(metadata.configuration) if self._checks_on else {}
        # computed once: the schema walk builds closures, which per batch would be garbage for the cycle collector
        self._invariant_list = _invariants(self.schema) if self._invariants_on else []

    @property
    def needed(self) -> bool:
        """False when this table has nothing to fill or check (the write path then skips the enforcer)."""
        if self._identities or self.checks:
            return True
        if self._invariant_list:
            return True

        def walk(struct: StructType) -> bool:
            for f in struct.fields:
                if not f.nullable:
                    return True
                if (self._generated_on and GENERATION_EXPRESSION in f.metadata) or \
                        (self._defaults_on and CURRENT_DEFAULT in f.metadata):
                    return True
                if isinstance(f.type, StructType) and walk(f.type):
                    return True
            return False

        return walk(self.schema)

    def _expr(self, text: str) -> SqlExpr:
        e = self._parsed.get(text)
        if e is None:
            e = self._parsed[text] = parse_sql(text)
        return e

    # ------------------------------------------------------------------ public
    def identity_updates(self) -> dict[str, int]:
        """New `delta.identity.highWaterMark` per identity column that generated values so far."""
        return dict(self._hwm)

    def updated_metadata(self) -> Metadata:
        """The metadata with identity high-water marks advanced (for the commit's metaData action)."""
        if not self._hwm:
            return self.metadata
        fields = []
        for f in self.schema.fields:
            if f.name in self._hwm:
                f = StructField(f.name, f.type, f.nullable, {**f.metadata, IDENTITY_HWM: self._hwm[f.name]})
            fields.append(f)
        from dataclasses import replace

        from ...kernel.schema.types import schema_to_json

        return replace(self.metadata, schema_string=schema_to_json(StructType(tuple(fields))))

    def prepare(self, batch: Batch) -> Batch:
        """The batch completed (defaults, identity, generated, nulls) and verified; raises on violations."""
        is_table = isinstance(batch, pa.Table)
        table = batch if is_table else pa.Table.from_batches([batch])
        present = {n.lower() for n in table.schema.names}
        n = table.num_rows
        self._pending = {}
        for f in self.schema.fields:
            if f.name.lower() in present:
                self._check_explicit_identity(f, table)
                continue
            arr = self._fill(f, table, n)
            table = table.append_column(pa.field(f.name, arr.type, nullable=f.nullable), arr)
        table = self._reorder(table)
        self._verify(table)
        self._hwm.update(self._pending)  # only batches that passed advance the high-water marks
        if is_table:
            return table
        return table.combine_chunks().to_batches()[0] if n else pa.RecordBatch.from_pylist([], schema=table.schema)

    # ------------------------------------------------------------------ filling
    def _fill(self, f: StructField, table: pa.Table, n: int) -> pa.Array:
        target = to_arrow_type(f.type)
        if f.name in self._identities:
            return self._generate_identity(f.name, n)
        gen = f.metadata.get(GENERATION_EXPRESSION) if self._generated_on else None
        if gen is not None:
            return self._cast(evaluate(self._expr(str(gen)), table), target, f, str(gen))
        default = f.metadata.get(CURRENT_DEFAULT) if self._defaults_on else None
        if default is not None:
            return self._cast(evaluate(self._expr(str(default)), table), target, f, str(default))
        return pa.nulls(n, target)

    def _cast(self, arr: pa.Array, target: pa.DataType, f: StructField, text: str) -> pa.Array:
        if arr.type == target:
            return arr
        from ...sqleval import Evaluator

        try:
            out = Evaluator(pa.table({})).sql_cast(arr, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
            raise ConstraintViolationError(
                f"column {f.name!r}: the value of {text!r} ({arr.type}) cannot be stored as {target}: {e}") from e
        return out if isinstance(out, pa.Array) else broadcast(out, len(arr))

    def _generate_identity(self, name: str, n: int) -> pa.Array:
        ident = self._identities[name]
        last = self._pending.get(name, self._hwm.get(name, ident.hwm))
        first = ident.start if last is None else last + ident.step
        values = pa.array(range(first, first + ident.step * n, ident.step), pa.int64()) if n else \
            pa.array([], pa.int64())
        if n:
            self._pending[name] = first + ident.step * (n - 1)
        return values

    def _check_explicit_identity(self, f: StructField, table: pa.Table) -> None:
        ident = self._identities.get(f.name)
        if ident is not None and not ident.allow_explicit:
            raise ConstraintViolationError(
                f"column {f.name!r} is GENERATED ALWAYS AS IDENTITY: values cannot be provided for it "
                f"(set {IDENTITY_EXPLICIT} to allow explicit values)")

    def _reorder(self, table: pa.Table) -> pa.Table:
        """Table columns in schema order, then any extra input columns (schema evolution is the caller's)."""
        lookup = {name.lower(): name for name in table.schema.names}
        ordered = [lookup[f.name.lower()] for f in self.schema.fields]
        extras = [c for c in table.schema.names if c not in ordered]
        return table.select(ordered + extras)

    # ------------------------------------------------------------------ verification
    def _verify(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        lookup = {name.lower(): name for name in table.schema.names}
        for f in self.schema.fields:
            col = table.column(lookup[f.name.lower()])
            self._check_not_null(table, f, col, (f.name,), None)
        if self._generated_on:
            for f in self.schema.fields:
                gen = f.metadata.get(GENERATION_EXPRESSION)
                if gen is None:
                    continue
                self._check_generated(table, f, str(gen))
        if self._invariant_list:
            for path, text in self._invariant_list:
                result = evaluate(self._expr(text), table)
                self._require(table, result, f"invariant on column {'.'.join(path)!r}", text)
        for name, text in sorted(self.checks.items()):
            result = evaluate(self._expr(text), table)
            self._require(table, result, f"CHECK constraint {name}", text)

    def _require(self, table: pa.Table, result: pa.Array, what: str, text: str) -> None:
        if not pa.types.is_boolean(result.type) and result.type != pa.null():
            raise ConstraintViolationError(f"{what} ({text}) is not a boolean expression (it is {result.type})")
        count, row = sample_row(table, result)
        if count:
            raise ConstraintViolationError(  # deltalake's "Invalid data found: ...", then delta-spark's sentence
                f"Invalid data found: {count} rows failed validation check. "
                f"{what} ({text}) violated by {count} row(s), for example: {row}")

    def _check_generated(self, table: pa.Table, f: StructField, text: str) -> None:
        expected = self._cast(evaluate(self._expr(text), table), to_arrow_type(f.type), f, text)
        actual = table.column(table.schema.names.index(_name_in(table, f.name))).combine_chunks()
        if actual.type != expected.type:
            actual = self._cast(actual, expected.type, f, f.name)
        same = pc.if_else(pc.and_(pc.is_null(actual), pc.is_null(expected)), True,
                          pc.fill_null(pc.equal(actual, expected), False))
        count, row = sample_row(table, same)
        if count:
            raise ConstraintViolationError(
                f"generated column {f.name!r} (GENERATED ALWAYS AS ({text})) does not match its expression in "
                f"{count} row(s), for example: {row}")

    def _check_not_null(self, table: pa.Table, f: StructField, col: Any, path: tuple[str, ...],
                        parent_valid: Any) -> None:
        if f.nullable and not isinstance(f.type, StructType):
            return  # nothing to check below a nullable leaf; avoid touching the data
        if not f.nullable and parent_valid is None and not isinstance(f.type, StructType) and col.null_count == 0:
            return
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if not f.nullable:
            nulls = pc.is_null(col)
            if parent_valid is not None:
                nulls = pc.and_(nulls, parent_valid)
            if pc.any(nulls).as_py():
                ok = pc.invert(nulls)
                count, row = sample_row(table, ok)
                raise ConstraintViolationError(  # deltalake's "Invalid data found:", then delta-spark's sentence
                    f"Invalid data found: NOT NULL constraint violated for column {'.'.join(path)!r} ({count} "
                    f"row(s)), for example: {row}")
        if isinstance(f.type, StructType) and pa.types.is_struct(col.type):
            valid = pc.is_valid(col) if parent_valid is None else pc.and_(parent_valid, pc.is_valid(col))
            names = [col.type.field(i).name for i in range(col.type.num_fields)]
            for sub in f.type.fields:
                match = [i for i, nm in enumerate(names) if nm.lower() == sub.name.lower()]
                if not match:
                    if not sub.nullable:
                        raise ConstraintViolationError(
                            f"NOT NULL constraint violated: field {'.'.join((*path, sub.name))!r} is missing")
                    continue
                child = pc.struct_field(col, [match[0]])
                self._check_not_null(table, sub, child, (*path, sub.name), valid)


def _name_in(table: pa.Table, name: str) -> str:
    for n in table.schema.names:
        if n.lower() == name.lower():
            return str(n)
    raise DeltaError(f"column {name!r} missing")


def _invariants(schema: StructType) -> list[tuple[tuple[str, ...], str]]:
    out: list[tuple[tuple[str, ...], str]] = []

    def walk(struct: StructType, prefix: tuple[str, ...]) -> None:
        for f in struct.fields:
            text = invariant_expression(f)
            if text is not None:
                out.append(((*prefix, f.name), text))
            if isinstance(f.type, StructType):
                walk(f.type, (*prefix, f.name))

    walk(schema, ())
    return out



_CAST_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError)


def _renamed(src: pa.DataType, target: pa.DataType) -> pa.DataType:
    """`src` with its struct fields (nested too) spelled as `target`'s where they match case-insensitively
    (Delta names are case-insensitive; Arrow's struct cast matches names exactly)."""
    if pa.types.is_struct(src) and pa.types.is_struct(target):
        by_lower: dict[str, list[pa.Field]] = {}
        for t in target:
            by_lower.setdefault(t.name.lower(), []).append(t)
        fields = []
        for f in src:
            match = by_lower.get(f.name.lower(), [])
            if len(match) == 1:
                t = match[0]
                fields.append(pa.field(t.name, _renamed(f.type, t.type), f.nullable, f.metadata))
            else:
                fields.append(f)
        return pa.struct(fields)
    if (pa.types.is_list(src) or pa.types.is_large_list(src)) and \
            (pa.types.is_list(target) or pa.types.is_large_list(target)):
        value = src.value_field.with_type(_renamed(src.value_type, target.value_type))
        return pa.list_(value) if pa.types.is_list(src) else pa.large_list(value)
    if pa.types.is_map(src) and pa.types.is_map(target):
        return pa.map_(src.key_field.with_type(_renamed(src.key_type, target.key_type)),
                       src.item_field.with_type(_renamed(src.item_type, target.item_type)), src.keys_sorted)
    return src


def _with_target_field_names(arr: pa.Array, target: pa.DataType) -> pa.Array:
    renamed = _renamed(arr.type, target)
    return arr if renamed == arr.type else arr.view(renamed)


def cast_for_column(arr: pa.Array | pa.ChunkedArray, target: pa.DataType, column: str, *, strict: bool,
                    what: str) -> pa.Array:
    """New values (an UPDATE's SET, a MERGE's assignment) as column `column`'s type, with Spark's casts.

    `strict` (deltalake's `error_on_type_mismatch`): a value that is not NULL but cannot be stored (it casts to
    NULL, or does not fit) raises SchemaError naming the column and the value; otherwise such values become
    NULL, one by one."""
    from ...sqleval import Evaluator

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    arr = _with_target_field_names(arr, target)
    if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target) and arr.type.unit != target.unit:
        # nanoseconds (pandas, polars) -> Delta's microseconds: truncated, as deltalake's writes and MERGE do
        arr = arr.cast(pa.timestamp(target.unit, arr.type.tz), safe=False)
    if arr.type == target:
        return arr
    ev = Evaluator(pa.table({}))
    try:
        out = ev.sql_cast(arr, target)
    except _CAST_ERRORS as e:
        numeric = pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_decimal(arr.type)
        if strict or not (pa.types.is_integer(target) and numeric):
            raise SchemaError(f"{what}: cannot store the values of column {column!r} ({arr.type}) as {target}: {e}") \
                from e
        import numpy as np

        info = np.iinfo(target.to_pandas_dtype())  # lenient: values that do not fit become NULL
        fits = pc.and_(pc.greater_equal(arr, scalar(int(info.min)).cast(arr.type, safe=False)),
                       pc.less_equal(arr, scalar(int(info.max)).cast(arr.type, safe=False)))
        out = ev.sql_cast(pc.if_else(fits, arr, scalar(None, arr.type)), target)
    if isinstance(out, pa.Scalar):
        out = broadcast(out, len(arr))
    if isinstance(out, pa.ChunkedArray):
        out = out.combine_chunks()
    if strict and out.null_count > arr.null_count:
        bad = arr.filter(pc.and_(pc.is_valid(arr), pc.is_null(out)))[0].as_py()
        raise SchemaError(f"{what}: cannot store the value {bad!r} in column {column!r} as {target} "
                          "(pass error_on_type_mismatch=False to store NULL instead)")
    return out


__all__ = ["CONSTRAINT_PREFIX", "ConstraintViolationError", "Enforcer", "cast_for_column", "check_constraints",
           "invariant_expression", "sample_row"]
