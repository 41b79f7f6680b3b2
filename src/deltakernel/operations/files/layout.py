"""Where written rows go: Spark's partition paths, the physical file schema, and splitting batches by partition.

Files follow Spark's layout: Hive-style partition directories with `ExternalCatalogUtils.escapePathName`
escaping (physical column names under column mapping), `__HIVE_DEFAULT_PARTITION__` for null, and the log
`path` is that key URI-encoded again the way `java.net.URI` does (`%` -> `%25`, space -> `%20`, non-ASCII
letters kept). Parquet columns use physical names and carry `PARQUET:field_id` under column mapping; every
column is written optional, as Spark does (a variant's own `metadata` / `value` children stay required).
"""

from __future__ import annotations

import random
import re
import string
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...errors import SchemaError
from ...kernel.scan.partition_values import serialize_partition_value
from ...kernel.schema.arrow import VARIANT_ARROW_TYPE, VARIANT_EXTENSION, to_arrow_schema
from ...kernel.schema.column_mapping import PARQUET_FIELD_ID, physical_name, to_physical_arrow_schema
from ...kernel.schema.geospatial import wkb_parquet_type
from ...kernel.schema.types import StructField, StructType

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


# ----------------------------------------------------------------------------- paths
_SPARK_ESCAPED = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(0x20))
_URI_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-!.~'()*,;:$&+=/@")


def escape_path_name(text: str) -> str:
    """Spark's `ExternalCatalogUtils.escapePathName`: special characters as `%XX` (uppercase hex)."""
    if not any(ch in _SPARK_ESCAPED for ch in text):
        return text
    return "".join(f"%{ord(ch):02X}" if ch in _SPARK_ESCAPED else ch for ch in text)


_ESCAPED = re.compile(r"%([0-9A-Fa-f]{2})")


def unescape_path_name(text: str) -> str:
    """Spark's `unescapePathName`, the inverse of `escape_path_name` (one `%XX` per escaped character)."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text)


_PREFIX_CHARS = string.ascii_letters + string.digits


def random_prefix_length(mode: str, configuration: Mapping[str, str]) -> int | None:
    """Length of the random directory put before file names, or None for Hive-style partition directories.

    Spark's layout under column mapping (`physical=value/` paths would be mistaken for columns by
    path-inferring readers) or when `delta.randomizeFilePrefixes` asks for it.
    """
    if mode in ("name", "id") or str(configuration.get("delta.randomizeFilePrefixes", "false")).lower() == "true":
        return int(configuration.get("delta.randomPrefixLength", "2") or 2)
    return None


def random_prefix(length: int) -> str:
    return "".join(random.choices(_PREFIX_CHARS, k=length)) + "/"


def uri_encode_path(key: str) -> str:
    """A storage key as `java.net.URI` quotes a path: ASCII outside the allowed set and non-ASCII controls /
    spaces as UTF-8 `%XX`; other non-ASCII characters stay (what Spark writes into the log)."""
    out: list[str] = []
    for ch in key:
        if ch in _URI_SAFE or (ord(ch) > 0x7F and unicodedata.category(ch) not in ("Cc", "Zs", "Zl", "Zp")):
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


def partition_dir(columns: list[tuple[str, str | None]]) -> str:
    """`col=value/...` for (physical name, serialized value) pairs; null -> __HIVE_DEFAULT_PARTITION__."""
    return "".join(
        f"{escape_path_name(name)}={escape_path_name(value) if value else HIVE_DEFAULT_PARTITION}/"
        for name, value in columns
    )


# ----------------------------------------------------------------------------- schema helpers
def _writable_type(t: pa.DataType) -> pa.DataType:
    """Drop Delta's JSON metadata from nested fields, keep field ids; all fields optional (Spark)."""
    if pa.types.is_struct(t):
        return pa.struct([_writable_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(_writable_field(t.value_field))
    if pa.types.is_large_list(t):
        return pa.large_list(_writable_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_writable_field(t.key_field, nullable=False), _writable_field(t.item_field))
    return t


def _writable_field(f: pa.Field, nullable: bool = True) -> pa.Field:
    keep = {k: v for k, v in (f.metadata or {}).items() if k == PARQUET_FIELD_ID or k.startswith(b"ARROW:extension")}
    if keep.get(b"ARROW:extension:name") == VARIANT_EXTENSION and pa.types.is_struct(f.type):
        # a variant is an optional group with *required* metadata/value (delta-spark, the Parquet variant
        # spec): optional children make deltalake refuse a file with a null variant row
        return pa.field(f.name, VARIANT_ARROW_TYPE, nullable=nullable, metadata=keep)
    return pa.field(f.name, _writable_type(f.type), nullable=nullable, metadata=keep or None)


@dataclass
class Layout:
    """How input columns map to the file: logical data schema, physical Arrow schema, partition columns."""

    data_schema: StructType
    logical_arrow: pa.Schema
    physical_arrow: pa.Schema
    partition_fields: list[StructField]
    partition_physical: list[str]


def make_layout(schema: StructType, partition_columns: list[str], mode: str) -> Layout:
    parts = [schema.field(c) for c in partition_columns]
    part_names = {f.name for f in parts}
    data = StructType(tuple(f for f in schema.fields if f.name not in part_names))
    physical = to_physical_arrow_schema(data, mode)
    return Layout(
        data,
        to_arrow_schema(data, include_metadata=False),
        pa.schema([_geo_field(_writable_field(f)) for f in physical]),
        parts,
        [physical_name(f, mode) for f in parts],
    )


def _geo_field(f: pa.Field) -> pa.Field:
    """A top-level geometry/geography column is written through the `geoarrow.wkb` extension type, so pyarrow
    gives it Parquet's GEOMETRY / GEOGRAPHY logical type and geospatial footer statistics (nested ones stay
    plain WKB binary: a struct of extension types cannot be a zero-copy view of the data)."""
    ext = wkb_parquet_type(f)
    return f if ext is None else pa.field(f.name, ext, nullable=f.nullable, metadata=f.metadata)


def column_of(batch: pa.RecordBatch, name: str) -> pa.Array:
    idx = batch.schema.get_field_index(name)
    if idx < 0:
        matches = [i for i, n in enumerate(batch.schema.names) if n.lower() == name.lower()]
        if not matches:
            raise SchemaError(f"input data has no column {name!r} (columns: {batch.schema.names})")
        idx = matches[0]
    return batch.column(idx)


def conform(batch: pa.RecordBatch, layout: Layout) -> pa.RecordBatch:
    """The data columns, in schema order, with the table's logical Arrow types."""
    arrays = []
    for f in layout.logical_arrow:
        arr = column_of(batch, f.name)
        if arr.type != f.type:
            arr = arr.cast(f.type)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=layout.logical_arrow)


def to_physical(batch: pa.RecordBatch, layout: Layout) -> pa.RecordBatch:
    """Same buffers under physical names/field ids (`view` is zero-copy: only names and metadata differ)."""
    arrays = []
    for arr, f in zip(batch.columns, layout.physical_arrow):
        if isinstance(f.type, pa.ExtensionType) and not isinstance(arr.type, pa.ExtensionType):
            arr = pa.ExtensionArray.from_storage(f.type, arr.cast(f.type.storage_type))
        elif arr.type != f.type:
            try:
                arr = arr.view(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                arr = arr.cast(f.type)
        if _has_variant(f):
            arr = _fill_variant_children(arr, f)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=layout.physical_arrow)


def _is_variant_field(f: pa.Field) -> bool:
    return bool(f.metadata) and f.metadata.get(b"ARROW:extension:name") == VARIANT_EXTENSION


def _has_variant(f: pa.Field) -> bool:
    t = f.type
    if _is_variant_field(f):
        return True
    if pa.types.is_struct(t):
        return any(_has_variant(t.field(i)) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_variant(t.value_field)
    if pa.types.is_map(t):
        return _has_variant(t.item_field)
    return False


def _fill_variant_children(arr: pa.Array, f: pa.Field) -> pa.Array:
    """Empty bytes in a variant's required `metadata` / `value` slots under null rows (pyarrow's writer checks
    a required child's null count even where the parent is null; no reader sees those slots)."""
    if isinstance(arr, pa.ChunkedArray):
        return pa.chunked_array([_fill_variant_children(c, f) for c in arr.chunks], type=arr.type)
    t = f.type
    if _is_variant_field(f):
        children = [arr.field(i) for i in range(t.num_fields)]
        if not any(c.null_count for c in children):
            return arr
        children = [pc.fill_null(c, b"") if c.null_count else c for c in children]
        return pa.StructArray.from_arrays(children, fields=list(t), mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_struct(t):
        kids = [_fill_variant_children(arr.field(i), t.field(i)) for i in range(t.num_fields)]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        values = _fill_variant_children(arr.values, t.value_field)
        return cls.from_arrays(arr.offsets, values, type=t, mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_map(t):
        items = _fill_variant_children(arr.items, t.item_field)
        return pa.MapArray.from_arrays(arr.offsets, arr.keys, items, type=t,
                                       mask=arr.is_null() if arr.null_count else None)
    return arr


# ----------------------------------------------------------------------------- partition splitting
def split_by_partition(batch: pa.RecordBatch, layout: Layout) -> list[tuple[tuple[str | None, ...], pa.RecordBatch]]:
    """(serialized partition values, rows) groups of a batch: one dictionary encode per column, one sort."""
    if not layout.partition_fields:
        return [((), batch)]
    n = batch.num_rows
    codes = np.zeros(n, dtype=np.int64)
    dictionaries: list[pa.Array] = []
    indices: list[np.ndarray[Any, Any]] = []
    stride = 1
    for f in layout.partition_fields:
        arr = column_of(batch, f.name)
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        enc = pc.dictionary_encode(arr, null_encoding="encode")
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        dictionaries.append(enc.dictionary)
        indices.append(idx)
        if len(enc.dictionary) > 1:
            codes += idx * stride
            stride *= len(enc.dictionary)
            if stride > 2**31:  # keep the combined code far from int64 overflow: renumber densely
                uniq, inverse = np.unique(codes, return_inverse=True)
                codes, stride = inverse.astype(np.int64), len(uniq)
    if stride == 1:
        groups = [(0, n)]
        ordered = batch
    else:
        # numpy's stable sort is a radix sort (O(n)) for 8/16-bit keys: the common few-partitions case
        small = np.uint8 if stride <= 1 << 8 else np.uint16 if stride <= 1 << 16 else None
        order = np.argsort(codes.astype(small) if small is not None else codes, kind="stable")
        sorted_codes = codes[order]
        bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [n]))
        groups = list(zip(starts.tolist(), ends.tolist()))
        # partition columns are not stored in data files: do not copy them through the permutation
        pnames = {f.name.lower() for f in layout.partition_fields}
        data = batch.select([i for i, name in enumerate(batch.schema.names) if name.lower() not in pnames])
        ordered = data.take(pa.array(order))
        indices = [idx[order] for idx in indices]
    out = []
    for start, end in groups:
        key = tuple(
            serialize_partition_value(d[int(idx[start])].as_py(), f.type)
            for d, idx, f in zip(dictionaries, indices, layout.partition_fields)
        )
        out.append((key, ordered.slice(start, end - start)))
    return out


def parquet_column_paths(schema: pa.Schema) -> list[str]:
    """Dotted Parquet leaf paths of `schema` as pyarrow's writer names them (`use_dictionary` lists)."""
    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_batches([], schema=schema), buf)  # Schema.empty_table() imports pandas
    return [col.path for col in pq.ParquetFile(pa.BufferReader(buf.getvalue())).schema]


def has_dotted_name(schema: pa.Schema) -> bool:
    def walk(t: pa.DataType) -> bool:
        if pa.types.is_struct(t):
            return any("." in t.field(i).name or walk(t.field(i).type) for i in range(t.num_fields))
        if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
            return walk(t.value_type)
        if pa.types.is_map(t):
            return walk(t.key_type) or walk(t.item_type)
        return False

    return any("." in f.name or walk(f.type) for f in schema)


def split_conformed(batch: pa.RecordBatch, layout: Layout) -> list[tuple[tuple[str | None, ...], pa.RecordBatch]]:
    return [(values, conform(part, layout)) for values, part in split_by_partition(batch, layout)]
