"""Conform data read from a Parquet file to the table's logical schema.

Files are written with physical names (column mapping), may predate columns added later (schema evolution),
may hold narrower types (type widening, PROTOCOL.md "Type Widening") or other physical encodings
(INT96 / ms / ns timestamps, large or view strings, dictionaries). Readers must return exactly the logical
schema, so each column is matched, cast and renamed here, column-at-a-time with Arrow kernels.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import SchemaError
from ..variant.unshred import is_shredded, unshred
from .arrow import to_arrow_schema
from .column_mapping import PARQUET_FIELD_ID, field_id, physical_name
from .types import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType

_US_PER_DAY = 86_400_000_000


# ----------------------------------------------------------------------------- field matching
def _arrow_field_id(f: pa.Field) -> int | None:
    raw = (f.metadata or {}).get(PARQUET_FIELD_ID)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def _match_fields(file_fields: list[pa.Field], logical: StructType, mode: str) -> list[int | None]:
    """For each logical field, the index of the file field holding it (None when absent)."""
    by_name: dict[str, int] = {}
    by_lower: dict[str, int] = {}
    by_id: dict[int, int] = {}
    for i, f in enumerate(file_fields):
        by_name.setdefault(f.name, i)
        by_lower.setdefault(f.name.lower(), i)
        fid = _arrow_field_id(f)
        if fid is not None:
            by_id.setdefault(fid, i)
    out: list[int | None] = []
    for lf in logical.fields:
        idx: int | None = None
        if mode == "id":
            fid = field_id(lf)
            if fid is not None:
                idx = by_id.get(fid)
            if idx is None and by_id and fid is not None:
                # the file has ids, just not this one: the column was added later / dropped
                out.append(None)
                continue
        if idx is None:
            name = physical_name(lf, mode)
            idx = by_name.get(name)
            if idx is None:
                idx = by_lower.get(name.lower())
        out.append(idx)
    return out


# ----------------------------------------------------------------------------- array conforming
def _wrap(fn: Callable[[], pa.Array], src: pa.DataType, dst: pa.DataType) -> pa.Array:
    try:
        return fn()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"cannot convert file column of type {src} to {dst}: {e}") from e


def _conform_array(arr: pa.Array, dtype: DataType, target: pa.DataType, mode: str) -> pa.Array:
    """One (non-chunked) array to the Arrow type of `dtype` (`target`), recursively."""
    src = arr.type
    if isinstance(src, pa.ExtensionType):
        arr = arr.storage
        src = arr.type
    if pa.types.is_dictionary(src):
        arr = _wrap(lambda: arr.dictionary_decode(), src, target)
        src = arr.type
    if pa.types.is_null(src):
        return pa.nulls(len(arr), target)
    if isinstance(dtype, StructType):
        return _conform_struct(arr, dtype, target, mode)
    if isinstance(dtype, ArrayType):
        return _conform_list(arr, dtype, target, mode)
    if isinstance(dtype, MapType):
        return _conform_map(arr, dtype, target, mode)
    if isinstance(dtype, PrimitiveType) and dtype.name == "variant":
        # variant: the unshredded (metadata, value) pair, fields in any order; shredded files are unshredded
        if is_shredded(arr.type):
            arr = unshred(arr)
        return _conform_struct(arr, _VARIANT_STRUCT, target, "none")
    if src.equals(target):
        return arr
    if pa.types.is_timestamp(target):
        return _conform_timestamp(arr, target)
    return _wrap(lambda: arr.cast(target), src, target)


_VARIANT_STRUCT = StructType(
    (
        StructField("metadata", PrimitiveType("binary"), nullable=False),
        StructField("value", PrimitiveType("binary"), nullable=False),
    )
)


def _conform_timestamp(arr: pa.Array, target: pa.TimestampType) -> pa.Array:
    """Any timestamp unit/zone (or date) to microseconds; instants are kept, zone only relabelled."""
    src = arr.type
    if pa.types.is_date(src):
        days = arr.cast(pa.date32()).view(pa.int32()).cast(pa.int64())
        return pc.multiply(days, pa.scalar(_US_PER_DAY, pa.int64())).view(target)
    if pa.types.is_timestamp(src):
        if src.unit != "us":
            # ns -> us truncates sub-microsecond digits; s/ms -> us cannot overflow for Delta's year range
            arr = _wrap(lambda: arr.cast(pa.timestamp("us", tz=src.tz), safe=False), src, target)
        return arr.view(target)
    if pa.types.is_integer(src):
        # a raw int64 column holding microseconds (e.g. files written without a logical type)
        return _wrap(lambda: arr.cast(pa.int64()), src, target).view(target)
    return _wrap(lambda: arr.cast(target), src, target)


def _validity_mask(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _conform_struct(arr: pa.Array, logical: StructType, target: pa.DataType, mode: str) -> pa.Array:
    if not pa.types.is_struct(arr.type):
        raise SchemaError(f"file column of type {arr.type} cannot be read as struct {target}")
    src_fields = [arr.type.field(i) for i in range(arr.type.num_fields)]
    matches = _match_fields(src_fields, logical, mode)
    children = []
    for i, (lf, idx) in enumerate(zip(logical.fields, matches)):
        child_target = target.field(i).type
        if idx is None:
            children.append(pa.nulls(len(arr), child_target))
        else:
            children.append(_conform_array(arr.field(idx), lf.type, child_target, mode))
    fields = [target.field(i) for i in range(target.num_fields)]
    if not fields:
        return pa.nulls(len(arr), target) if arr.null_count == len(arr) else _empty_struct(arr, target)
    return pa.StructArray.from_arrays(children, fields=fields, mask=_validity_mask(arr))


def _empty_struct(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """A struct with no fields: keep only the validity."""
    return pa.StructArray.from_buffers(
        target, len(arr), [arr.buffers()[0]], null_count=arr.null_count, offset=arr.offset
    )


def _list_parts(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(int32 offsets, values) of any list-like array; offsets may start above 0 for slices."""
    src = arr.type
    if pa.types.is_fixed_size_list(src) or pa.types.is_list_view(src) or pa.types.is_large_list_view(src):
        arr = _wrap(lambda: arr.cast(pa.large_list(src.value_field)), src, src)
        src = arr.type
    return _rebase(arr.offsets, arr.values, src)


def _rebase(offsets: pa.Array, values: pa.Array, src: pa.DataType) -> tuple[pa.Array, pa.Array]:
    """Zero-based int32 offsets and just the referenced values (slices keep the parent's offsets)."""
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start != 0 or offsets.offset != 0:
        offsets = pc.subtract(offsets, pa.scalar(start, offsets.type))
    values = values.slice(start, end - start)
    if offsets.type != pa.int32():
        offsets = _wrap(lambda: offsets.cast(pa.int32()), src, pa.int32())
    return offsets, values


def _conform_list(arr: pa.Array, dtype: ArrayType, target: pa.DataType, mode: str) -> pa.Array:
    src = arr.type
    if not (
        pa.types.is_list(src)
        or pa.types.is_large_list(src)
        or pa.types.is_fixed_size_list(src)
        or pa.types.is_list_view(src)
        or pa.types.is_large_list_view(src)
    ):
        raise SchemaError(f"file column of type {src} cannot be read as {target}")
    offsets, values = _list_parts(arr)
    values = _conform_array(values, dtype.element_type, target.value_type, mode)
    return pa.ListArray.from_arrays(offsets, values, type=target, mask=_validity_mask(arr))


def _conform_map(arr: pa.Array, dtype: MapType, target: pa.DataType, mode: str) -> pa.Array:
    src = arr.type
    if pa.types.is_map(src):
        offsets, entries = _rebase(arr.offsets, arr.values, src)
        keys, items = entries.field(0), entries.field(1)
    elif pa.types.is_list(src) or pa.types.is_large_list(src):
        # a 2-level legacy map read as list<struct<key, value>>
        offsets, entries = _list_parts(arr)
        if not pa.types.is_struct(entries.type) or entries.type.num_fields != 2:
            raise SchemaError(f"file column of type {src} cannot be read as {target}")
        keys, items = entries.field(0), entries.field(1)
    else:
        raise SchemaError(f"file column of type {src} cannot be read as {target}")
    keys = _conform_array(keys, dtype.key_type, target.key_type, mode)
    items = _conform_array(items, dtype.value_type, target.item_type, mode)
    return _wrap(
        lambda: pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=_validity_mask(arr)),
        src,
        target,
    )


def _conform_column(
    col: pa.ChunkedArray | pa.Array, dtype: DataType, target: pa.DataType, mode: str
) -> pa.ChunkedArray | pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_conform_array(c, dtype, target, mode) for c in col.chunks], type=target)
    return _conform_array(col, dtype, target, mode)


# ----------------------------------------------------------------------------- public API
def _conform_columns(
    schema: pa.Schema,
    columns: list[pa.ChunkedArray] | list[pa.Array],
    num_rows: int,
    logical: StructType,
    mode: str,
    chunked: bool,
    source: str | None = None,
) -> tuple[list[pa.ChunkedArray] | list[pa.Array], pa.Schema]:
    out_schema = to_arrow_schema(logical, include_metadata=False)
    matches = _match_fields(list(schema), logical, mode)
    out: list[pa.Array] = []
    for i, (lf, idx) in enumerate(zip(logical.fields, matches)):
        target = out_schema.field(i).type
        if idx is None:
            nulls = pa.nulls(num_rows, target)
            out.append(pa.chunked_array([nulls], type=target) if chunked else nulls)
            continue
        try:
            out.append(_conform_column(columns[idx], lf.type, target, mode))
        except SchemaError as e:
            where = f"data file {source}: " if source else ""
            raise SchemaError(f"{where}column {lf.name!r} (file column {schema.field(idx).name!r}): {e}") from e
    return out, out_schema


def conform_table(file_table: pa.Table, logical: StructType, mode: str, *, source: str | None = None) -> pa.Table:
    """The file's table with exactly the logical schema's columns, names and Arrow types (no metadata).

    Missing columns/nested fields become nulls, extra file columns are dropped, narrower types are widened.
    `source` (the data file's path or URI) is named in the SchemaError of a column that cannot be converted.
    """
    columns, schema = _conform_columns(
        file_table.schema, file_table.columns, file_table.num_rows, logical, mode, chunked=True, source=source
    )
    return pa.Table.from_arrays(columns, schema=schema)


def conform_batch(batch: pa.RecordBatch, logical: StructType, mode: str, *,
                  source: str | None = None) -> pa.RecordBatch:
    """`conform_table` for one RecordBatch (the streaming scan path)."""
    columns, schema = _conform_columns(
        batch.schema, batch.columns, batch.num_rows, logical, mode, chunked=False, source=source
    )
    return pa.RecordBatch.from_arrays(columns, schema=schema)
