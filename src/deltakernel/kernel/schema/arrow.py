"""Delta type model <-> Arrow conversion (PROTOCOL.md "Schema Serialization Format", "Primitive Types").

Delta column metadata values are JSON values; Arrow field metadata is bytes->bytes. As deltalake does, a
string value is stored as its text and any other value JSON-encoded; on the way back every value is the
text as given, except under the keys the protocol types (`TYPED_METADATA_KEYS`: column-mapping ids,
identity start / step / high-water mark / allowExplicitInsert, type-change history), which are JSON-decoded.
So `{"flag": "true", "ratio": "1.5"}` stays strings in the `schemaString`. Variant columns become their
unshredded Parquet layout `struct<metadata: binary, value: binary>` and are tagged with the canonical Arrow
extension name so a round trip recovers `variant` instead of a plain struct.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ...errors import SchemaError
from .geospatial import GEOARROW_WKB, from_geoarrow_metadata, geoarrow_tag, is_geospatial
from .types import (
    ArrayType,
    DataType,
    DecimalType,
    MapType,
    PrimitiveType,
    StructField,
    StructType,
    set_arrow_conversion,
)

LIST_ELEMENT_NAME = "element"
MAP_KEY_NAME = "key"
MAP_VALUE_NAME = "value"
MAX_DECIMAL_PRECISION = 38

_EXT_NAME = b"ARROW:extension:name"
_EXT_META = b"ARROW:extension:metadata"
VARIANT_EXTENSION = b"arrow.parquet.variant"
# Keys Arrow/Parquet own; they never become Delta column metadata.
_FOREIGN_PREFIXES = (b"ARROW:", b"PARQUET:")

VARIANT_ARROW_TYPE = pa.struct(
    [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary(), nullable=False)]
)

_PRIMITIVE_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "variant": VARIANT_ARROW_TYPE,
    "void": pa.null(),
}


def is_variant(dtype: DataType) -> bool:
    """True for the Delta `variant` type (callers need it: it is a struct in Arrow but opaque in Delta)."""
    return isinstance(dtype, PrimitiveType) and dtype.name == "variant"


# ----------------------------------------------------------------------------- Delta -> Arrow
def to_arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type readers produce for a Delta type; unknown types (geometry, ...) raise SchemaError."""
    if isinstance(dtype, PrimitiveType):
        try:
            return _PRIMITIVE_TO_ARROW[dtype.name]
        except KeyError:
            if is_geospatial(dtype):  # geometry(...) / geography(...): WKB, tagged `geoarrow.wkb` on the field
                return pa.binary()
            raise SchemaError(f"Delta type {dtype.name!r} has no Arrow mapping (unsupported type)") from None
    if isinstance(dtype, DecimalType):
        if not (1 <= dtype.precision <= MAX_DECIMAL_PRECISION) or not (0 <= dtype.scale <= dtype.precision):
            raise SchemaError(
                f"invalid Delta decimal({dtype.precision},{dtype.scale}); precision must be 1..38"
            )
        return pa.decimal128(dtype.precision, dtype.scale)
    if isinstance(dtype, ArrayType):
        return pa.list_(_child_field(LIST_ELEMENT_NAME, dtype.element_type, dtype.contains_null))
    if isinstance(dtype, MapType):
        return pa.map_(
            _child_field(MAP_KEY_NAME, dtype.key_type, False),
            _child_field(MAP_VALUE_NAME, dtype.value_type, dtype.value_contains_null),
        )
    if isinstance(dtype, StructType):
        return pa.struct([to_arrow_field(f) for f in dtype.fields])
    raise SchemaError(f"not a Delta type: {dtype!r}")


def _child_field(name: str, dtype: DataType, nullable: bool) -> pa.Field:
    """List element / map key-value fields; only variant needs metadata (its extension tag)."""
    return pa.field(name, to_arrow_type(dtype), nullable=nullable, metadata=_variant_tag(dtype))


def _variant_tag(dtype: DataType) -> dict[bytes, bytes] | None:
    """The extension tag a field of this type carries: variant's, or GeoArrow's for geospatial types."""
    return {_EXT_NAME: VARIANT_EXTENSION, _EXT_META: b""} if is_variant(dtype) else geoarrow_tag(dtype)


def encode_field_metadata(metadata: dict[str, Any]) -> dict[bytes, bytes]:
    """Delta metadata -> Arrow metadata: strings as they are, other JSON values JSON-encoded (deltalake's)."""
    return {k.encode(): (v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))).encode()
            for k, v in metadata.items()}


#: Delta column-metadata keys whose values the protocol types as JSON numbers, booleans, objects or arrays
#: (PROTOCOL.md "Column Mapping", "Identity Columns", "Type Change Metadata", IcebergCompat's field ids).
#: Arrow metadata under any other key is a string (comments, expressions, `delta.invariants`' JSON text,
#: user keys whose text merely looks like JSON: "true", "1.5", "-3").
TYPED_METADATA_KEYS = frozenset({
    "delta.columnMapping.id", "delta.columnMapping.nested.ids", "parquet.field.id", "parquet.field.nested.ids",
    "delta.identity.start", "delta.identity.step", "delta.identity.highWaterMark",
    "delta.identity.allowExplicitInsert", "delta.typeChanges",
    "__COLLATIONS",
})


def decode_field_metadata(metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    """Arrow metadata -> Delta metadata: text stays text, except under `TYPED_METADATA_KEYS`, whose JSON
    values are decoded (text that is not JSON is kept, for the writer's checks to name)."""
    out: dict[str, Any] = {}
    for k, v in (metadata or {}).items():
        if k.startswith(_FOREIGN_PREFIXES):
            continue
        key = k.decode("utf-8", errors="replace")
        value: Any = v.decode("utf-8", errors="replace")
        if key in TYPED_METADATA_KEYS:
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out


def to_arrow_field(f: StructField, include_metadata: bool = True) -> pa.Field:
    """One Delta field as an Arrow field, keeping nullability and (optionally) its metadata."""
    meta: dict[bytes, bytes] = encode_field_metadata(f.metadata) if include_metadata else {}
    tag = _variant_tag(f.type)
    if tag:
        meta.update(tag)
    if include_metadata:
        arrow_type = to_arrow_type(f.type)
    else:
        arrow_type = _strip_metadata(to_arrow_type(f.type))
    return pa.field(f.name, arrow_type, nullable=f.nullable, metadata=meta or None)


def _strip_metadata(t: pa.DataType) -> pa.DataType:
    """Drop Delta metadata from nested struct fields (variant tags are kept: they carry type info)."""
    if pa.types.is_struct(t):
        return pa.struct([_strip_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_list(t):
        return pa.list_(_strip_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_strip_field(t.key_field), _strip_field(t.item_field))
    return t


def _strip_field(f: pa.Field) -> pa.Field:
    keep = {k: v for k, v in (f.metadata or {}).items() if k.startswith(b"ARROW:extension:")}
    return pa.field(f.name, _strip_metadata(f.type), nullable=f.nullable, metadata=keep or None)


def to_arrow_schema(schema: StructType, include_metadata: bool = True) -> pa.Schema:
    """The Arrow schema of a Delta table schema (field metadata as `encode_field_metadata` writes it, unless
    disabled)."""
    return pa.schema([to_arrow_field(f, include_metadata) for f in schema.fields])


set_arrow_conversion(to_arrow_schema)


# ----------------------------------------------------------------------------- Arrow -> Delta
_ARROW_INT_TO_DELTA = {
    pa.int8(): "byte",
    pa.int16(): "short",
    pa.int32(): "integer",
    pa.int64(): "long",
    # unsigned: the next wider signed type; uint64 has none and maps to long (values >= 2**63 overflow)
    pa.uint8(): "short",
    pa.uint16(): "integer",
    pa.uint32(): "long",
    pa.uint64(): "long",
}


def _is_variant_field(f: pa.Field) -> bool:
    return bool(f.metadata) and f.metadata.get(_EXT_NAME) == VARIANT_EXTENSION


def from_arrow_type(t: pa.DataType) -> DataType:
    """The Delta type for an Arrow type; SchemaError when Delta has no equivalent."""
    if isinstance(t, pa.ExtensionType):
        if getattr(t, "extension_name", None) == VARIANT_EXTENSION.decode():
            return PrimitiveType("variant")
        if getattr(t, "extension_name", None) == GEOARROW_WKB.decode():
            return from_geoarrow_metadata(t.__arrow_ext_serialize__())
        return from_arrow_type(t.storage_type)
    if pa.types.is_dictionary(t):
        return from_arrow_type(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return PrimitiveType("string")
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return PrimitiveType("binary")
    if t in _ARROW_INT_TO_DELTA:
        return PrimitiveType(_ARROW_INT_TO_DELTA[t])
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return PrimitiveType("float")
    if pa.types.is_float64(t):
        return PrimitiveType("double")
    if pa.types.is_boolean(t):
        return PrimitiveType("boolean")
    if pa.types.is_date(t):
        return PrimitiveType("date")
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise SchemaError(f"decimal precision {t.precision} exceeds Delta's maximum of 38")
        return DecimalType(t.precision, t.scale)
    if pa.types.is_null(t):
        return PrimitiveType("void")
    if pa.types.is_map(t):
        return MapType(_from_child(t.key_field), _from_child(t.item_field), t.item_field.nullable)
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        return ArrayType(_from_child(t.value_field), t.value_field.nullable)
    if pa.types.is_struct(t):
        return StructType(tuple(from_arrow_field(t.field(i)) for i in range(t.num_fields)))
    raise SchemaError(f"Arrow type {t} has no Delta equivalent")


def _from_child(f: pa.Field) -> DataType:
    if f.metadata and f.metadata.get(_EXT_NAME) == GEOARROW_WKB:
        return from_geoarrow_metadata(f.metadata.get(_EXT_META))
    return PrimitiveType("variant") if _is_variant_field(f) else from_arrow_type(f.type)


def from_arrow_field(f: pa.Field) -> StructField:
    """One Arrow field as a Delta field; metadata as `decode_field_metadata` reads it (Arrow/Parquet keys dropped)."""
    return StructField(
        f.name, _from_child(f), nullable=f.nullable, metadata=decode_field_metadata(f.metadata)
    )


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """A Delta schema for an Arrow schema (used by writers and `DeltaTable.create`)."""
    return StructType(tuple(from_arrow_field(f) for f in schema))
