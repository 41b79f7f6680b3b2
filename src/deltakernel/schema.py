"""deltalake's public schema classes (`deltalake.schema`) as thin wrappers over the kernel's type model.

Why wrappers and not the kernel classes themselves: the kernel's `to_json()` returns JSON *values* (dicts,
strings) that the protocol code nests and serializes, and its `StructType.fields` is an immutable tuple of
frozen dataclasses; deltalake's `to_json()` returns a JSON *string*, `fields` a list, and the types carry
Arrow conversions. Each public object holds one immutable kernel type (`_kernel`), so converting either way
is free and nothing below the engine layer ever sees these classes. Public objects compare equal to the
kernel object they wrap, so `dt.schema().field("a").type == kernel PrimitiveType("long")` keeps working.

`to_arrow()` returns pyarrow objects (deltalake returns arro3 ones; both speak the Arrow PyCapsule
interface, so `pa.schema(x)`, `pa.field(x)`, `pa.table(...).cast(pa.schema(x))` behave the same).
Arrow field metadata is written as deltalake writes it: string values raw, other values JSON-encoded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Union, cast

import pyarrow as pa

from .errors import SchemaError
from .kernel.schema import types as k
from .kernel.schema.arrow import VARIANT_ARROW_TYPE, from_arrow_schema, from_arrow_type, to_arrow_type

if TYPE_CHECKING:
    from typing_extensions import Self

DataType = Union["PrimitiveType", "ArrayType", "MapType", "StructType", "VariantType"]
_KernelType = Union[k.PrimitiveType, k.DecimalType, k.ArrayType, k.MapType, k.StructType]

_EXT_NAME = b"ARROW:extension:name"
_VARIANT_TAG = {_EXT_NAME: b"arrow.parquet.variant", b"ARROW:extension:metadata": b""}
_PRIMITIVES = k.PRIMITIVE_NAMES - {"variant"}


# ----------------------------------------------------------------------------- conversions
def _to_kernel(t: Any) -> _KernelType:
    """Public type, kernel type or primitive name -> kernel type."""
    if isinstance(t, _Base):
        return cast(_KernelType, t._kernel)
    if isinstance(t, str):
        return cast(_KernelType, PrimitiveType(t)._kernel)
    if isinstance(t, (k.PrimitiveType, k.DecimalType, k.ArrayType, k.MapType, k.StructType)):
        return t
    raise InvalidDataTypeError(f"Invalid data type: not a Delta data type: {t!r}")


class InvalidDataTypeError(TypeError, ValueError):
    """Not a Delta data type: deltalake raises ValueError ("Invalid data type"), earlier deltakernel TypeError."""


def wrap_type(t: _KernelType) -> DataType:
    """Kernel type -> public type."""
    if isinstance(t, k.PrimitiveType) and t.name == "variant":
        return VariantType()
    if isinstance(t, (k.PrimitiveType, k.DecimalType)):
        return PrimitiveType._of(t)
    if isinstance(t, k.ArrayType):
        return ArrayType._of(t)
    if isinstance(t, k.MapType):
        return MapType._of(t)
    if isinstance(t, k.StructType):
        return StructType._of(t)
    raise TypeError(f"not a Delta data type: {t!r}")


def _arrow_data_type(obj: Any) -> pa.DataType:
    """An Arrow data type from pyarrow objects or anything exporting `__arrow_c_schema__`."""
    if isinstance(obj, pa.DataType):
        return obj
    if isinstance(obj, pa.Field):
        return obj.type
    if hasattr(obj, "__arrow_c_schema__"):
        return pa.DataType._import_from_c_capsule(obj.__arrow_c_schema__())
    raise TypeError(f"expected an Arrow data type, got {type(obj).__name__}")


def _arrow_field(obj: Any) -> pa.Field:
    if isinstance(obj, pa.Field):
        return obj
    if hasattr(obj, "__arrow_c_schema__"):
        return pa.Field._import_from_c_capsule(obj.__arrow_c_schema__())
    raise TypeError(f"expected an Arrow field, got {type(obj).__name__}")


def _from_arrow(obj: Any) -> _KernelType:
    try:
        return from_arrow_type(_arrow_data_type(obj))
    except SchemaError as e:
        raise TypeError(str(e)) from e


def _encode_metadata(metadata: dict[str, Any]) -> dict[bytes, bytes] | None:
    """deltalake's Arrow metadata: strings raw, other JSON values JSON-encoded."""
    out = {key.encode(): (v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))).encode()
           for key, v in metadata.items()}
    return out or None


def _large(t: pa.DataType) -> pa.DataType:
    """Variable-size types as their 64-bit-offset variants (deltalake's `as_large_types`)."""
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_binary(t):
        return pa.large_binary()
    if pa.types.is_list(t):
        return pa.large_list(_large_field(t.value_field))
    if pa.types.is_map(t):
        return pa.map_(_large_field(t.key_field), _large_field(t.item_field))
    if pa.types.is_struct(t):
        return pa.struct([_large_field(t.field(i)) for i in range(t.num_fields)])
    return t


def _large_field(f: pa.Field) -> pa.Field:
    return f.with_type(_large(f.type))


def _field_to_arrow(f: k.StructField) -> pa.Field:
    meta = _encode_metadata(f.metadata) or {}
    if isinstance(f.type, k.PrimitiveType) and f.type.name == "variant":
        meta.update(_VARIANT_TAG)
    if isinstance(f.type, k.StructType):  # nested fields keep their metadata too
        arrow_type: pa.DataType = pa.struct([_field_to_arrow(g) for g in f.type.fields])
    else:
        arrow_type = to_arrow_type(f.type)
    return pa.field(f.name, arrow_type, nullable=f.nullable, metadata=meta or None)


def _type_repr(t: _KernelType) -> str:
    return repr(wrap_type(t))


# ----------------------------------------------------------------------------- types
class _Base:
    """Shared behaviour: equality through the kernel type, JSON, Arrow export."""

    __slots__ = ("_kernel",)
    _kernel: Any

    @classmethod
    def _of(cls, kernel: Any) -> Self:
        """Wrap a kernel type (or field) without converting it."""
        obj = cls.__new__(cls)
        obj._kernel = kernel
        return obj

    def to_json(self) -> str:
        return json.dumps(self._kernel.to_json(), separators=(",", ":"))

    def to_arrow(self) -> Any:
        return to_arrow_type(self._kernel)

    def __arrow_c_schema__(self) -> object:
        return self.to_arrow().__arrow_c_schema__()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Base):  # JSON values: metadata key order does not matter
            return type(self) is type(other) and bool(self._kernel.to_json() == other._kernel.to_json())
        if isinstance(other, (k.PrimitiveType, k.DecimalType, k.ArrayType, k.MapType, k.StructType, k.StructField)):
            return bool(self._kernel == other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(json.dumps(self._kernel.to_json(), sort_keys=True))


class PrimitiveType(_Base):
    """A primitive type: `PrimitiveType("integer")`, `PrimitiveType("decimal(10,2)")`."""

    __slots__ = ()

    def __init__(self, data_type: str) -> None:
        parsed = k.parse_type(data_type.strip()) if isinstance(data_type, str) else None
        if isinstance(parsed, k.DecimalType):
            if not (1 <= parsed.precision <= 38 and 0 <= parsed.scale <= parsed.precision):
                raise ValueError(f"invalid type string: {data_type}")
        elif not (isinstance(parsed, k.PrimitiveType) and parsed.name in _PRIMITIVES):
            raise ValueError(f"invalid type string: {data_type}")
        self._kernel = parsed

    @property
    def type(self) -> str:
        t = self._kernel
        return t.name if isinstance(t, k.PrimitiveType) else f"decimal({t.precision},{t.scale})"

    @staticmethod
    def from_json(json: str) -> PrimitiveType:
        return PrimitiveType(_loads(json))

    @staticmethod
    def from_arrow(type: Any) -> PrimitiveType:
        t = _from_arrow(type)
        if not isinstance(t, (k.PrimitiveType, k.DecimalType)) or (isinstance(t, k.PrimitiveType)
                                                                  and t.name == "variant"):
            raise TypeError("Type is not primitive")
        return PrimitiveType._of(t)

    def __repr__(self) -> str:
        return f'PrimitiveType("{self.type}")'


class VariantType(_Base):
    """The Delta VARIANT type (unshredded: `struct<metadata: binary, value: binary>` in Arrow)."""

    __slots__ = ()

    def __init__(self) -> None:
        self._kernel = k.PrimitiveType("variant")

    @property
    def type(self) -> str:
        return "variant"

    @staticmethod
    def from_json(json: str) -> VariantType:
        if _loads(json) != "variant":
            raise ValueError(f"not a variant type: {json}")
        return VariantType()

    @staticmethod
    def from_arrow(type: Any) -> VariantType:
        t = type.type if isinstance(type, pa.Field) else type
        if (isinstance(type, pa.Field) and (type.metadata or {}).get(_EXT_NAME) == _VARIANT_TAG[_EXT_NAME]) \
                or _arrow_data_type(t) == VARIANT_ARROW_TYPE:
            return VariantType()
        raise TypeError("Type is not variant")

    def __repr__(self) -> str:
        return "VariantType()"


class ArrayType(_Base):
    """An array: `ArrayType("integer", contains_null=False)`."""

    __slots__ = ()

    def __init__(self, element_type: DataType | str, contains_null: bool = True) -> None:
        self._kernel = k.ArrayType(_to_kernel(element_type), bool(contains_null))

    type = property(lambda self: "array")

    @property
    def element_type(self) -> DataType:
        return wrap_type(self._kernel.element_type)

    @property
    def contains_null(self) -> bool:
        return bool(self._kernel.contains_null)

    @staticmethod
    def from_json(json: str) -> ArrayType:
        t = k.parse_type(_loads(json))
        if not isinstance(t, k.ArrayType):
            raise ValueError(f"not an array type: {json}")
        return ArrayType._of(t)

    @staticmethod
    def from_arrow(type: Any) -> ArrayType:
        t = _from_arrow(type)
        if not isinstance(t, k.ArrayType):
            raise TypeError("Type is not an array")
        return ArrayType._of(t)

    def __repr__(self) -> str:
        return f"ArrayType({_type_repr(self._kernel.element_type)}, contains_null={self.contains_null})"


class MapType(_Base):
    """A map: `MapType("integer", "string", value_contains_null=True)`."""

    __slots__ = ()

    def __init__(self, key_type: DataType | str, value_type: DataType | str,
                 value_contains_null: bool = True) -> None:
        self._kernel = k.MapType(_to_kernel(key_type), _to_kernel(value_type), bool(value_contains_null))

    type = property(lambda self: "map")

    @property
    def key_type(self) -> DataType:
        return wrap_type(self._kernel.key_type)

    @property
    def value_type(self) -> DataType:
        return wrap_type(self._kernel.value_type)

    @property
    def value_contains_null(self) -> bool:
        return bool(self._kernel.value_contains_null)

    @staticmethod
    def from_json(json: str) -> MapType:
        t = k.parse_type(_loads(json))
        if not isinstance(t, k.MapType):
            raise ValueError(f"not a map type: {json}")
        return MapType._of(t)

    @staticmethod
    def from_arrow(type: Any) -> MapType:
        t = _from_arrow(type)
        if not isinstance(t, k.MapType):
            raise TypeError("Type is not a map")
        return MapType._of(t)

    def __repr__(self) -> str:
        return (f"MapType({_type_repr(self._kernel.key_type)}, {_type_repr(self._kernel.value_type)}, "
                f"value_contains_null={self.value_contains_null})")


class Field(_Base):
    """A named, typed column: `Field("id", "long", nullable=False, metadata={"comment": "key"})`."""

    __slots__ = ()

    def __init__(self, name: str, type: DataType | str, nullable: bool = True,
                 metadata: dict[str, Any] | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{name.__class__.__name__!r} object is not an instance of 'str'")
        self._kernel = k.StructField(name, _to_kernel(type), bool(nullable), dict(metadata or {}))

    @property
    def name(self) -> str:
        return str(self._kernel.name)

    @property
    def type(self) -> DataType:
        return wrap_type(self._kernel.type)

    @property
    def nullable(self) -> bool:
        return bool(self._kernel.nullable)

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self._kernel.metadata)

    def to_arrow(self) -> pa.Field:
        return _field_to_arrow(self._kernel)

    @staticmethod
    def from_json(json: str) -> Field:
        return Field._of(k.parse_field(_loads(json)))

    @staticmethod
    def from_arrow(field: Any) -> Field:
        try:
            return Field._of(from_arrow_schema(pa.schema([_arrow_field(field)])).fields[0])
        except SchemaError as e:
            raise TypeError(str(e)) from e

    def __repr__(self) -> str:
        meta = f", metadata={self.metadata}" if self._kernel.metadata else ""
        return f"Field({self.name}, {_type_repr(self._kernel.type)}, nullable={self.nullable}{meta})"


class StructType(_Base):
    """A struct: `StructType([Field("x", "integer"), Field("y", "string")])`."""

    __slots__ = ()

    def __init__(self, fields: list[Field] | tuple[Field, ...]) -> None:
        self._kernel = k.StructType(tuple(_field_kernel(f) for f in fields))

    type = property(lambda self: "struct")

    @property
    def fields(self) -> list[Field]:
        return [Field._of(f) for f in self._kernel.fields]

    @staticmethod
    def from_json(json: str) -> StructType:
        t = k.parse_type(_loads(json))
        if not isinstance(t, k.StructType):
            raise ValueError(f"not a struct type: {json}")
        return StructType._of(t)

    @staticmethod
    def from_arrow(type: Any) -> StructType:
        t = _from_arrow(type)
        if not isinstance(t, k.StructType):
            raise TypeError("Type is not a struct")
        return StructType._of(t)

    def to_arrow(self) -> Any:
        return pa.struct([_field_to_arrow(f) for f in self._kernel.fields])

    # deltakernel conveniences (the kernel StructType's reading API)
    @property
    def names(self) -> list[str]:
        return list(self._kernel.names)

    def field(self, name: str) -> Field:
        """The field named `name` (case-insensitive, as Delta column names)."""
        return Field._of(self._kernel.field(name))

    def has(self, name: str) -> bool:
        return bool(self._kernel.has(name))

    def json(self) -> str:
        return self.to_json()

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self._kernel.fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}([{', '.join(repr(f) for f in self.fields)}])"

    def __str__(self) -> str:
        return repr(self)


class Schema(StructType):
    """A table schema: a StructType whose `to_arrow()` is an Arrow *schema*."""

    __slots__ = ()

    @property
    def invariants(self) -> list[tuple[str, str]]:
        """(column path, SQL) of every legacy `delta.invariants` column invariant."""
        out: list[tuple[str, str]] = []
        _collect_invariants(self._kernel, (), out)
        return out

    def to_arrow(self, as_large_types: bool = False) -> pa.Schema:
        schema = pa.schema([_field_to_arrow(f) for f in self._kernel.fields])
        return pa.schema([_large_field(f) for f in schema]) if as_large_types else schema

    def to_pyarrow(self, as_large_types: bool = False) -> pa.Schema:
        return self.to_arrow(as_large_types)

    @staticmethod
    def from_json(json: str) -> Schema:
        return Schema._of(k.parse_schema_string(json))

    @staticmethod
    def from_arrow(type: Any) -> Schema:
        try:
            return Schema._of(from_arrow_schema(pa.schema(type)))
        except SchemaError as e:
            raise TypeError(str(e)) from e

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StructType):  # deltalake: a Schema equals a StructType with the same fields
            return bool(self._kernel.to_json() == other._kernel.to_json())
        return super().__eq__(other)

    __hash__ = _Base.__hash__


def _field_kernel(f: Any) -> k.StructField:
    if isinstance(f, Field):
        return f._kernel  # type: ignore[no-any-return]
    if isinstance(f, k.StructField):
        return f
    raise TypeError(f"StructType fields must be Field objects, got {type(f).__name__}")


def _collect_invariants(t: k.StructType, prefix: tuple[str, ...], out: list[tuple[str, str]]) -> None:
    for f in t.fields:
        path = (*prefix, f.name)
        raw = f.metadata.get("delta.invariants")
        if raw is not None:
            try:
                doc = json.loads(raw) if isinstance(raw, str) else raw
                out.append((".".join(path), str(doc["expression"]["expression"])))
            except (ValueError, KeyError, TypeError):
                raise SchemaError(f"malformed delta.invariants on {'.'.join(path)!r}: {raw!r}") from None
        if isinstance(f.type, k.StructType):
            _collect_invariants(f.type, path, out)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError(f"invalid JSON: {e}") from e


def to_kernel_schema(schema: Any) -> k.StructType | None:
    """The kernel StructType of a public `Schema` / `StructType` (None for anything else)."""
    if isinstance(schema, StructType):
        return schema._kernel  # type: ignore[no-any-return]
    return None


__all__ = ["ArrayType", "DataType", "Field", "MapType", "PrimitiveType", "Schema", "StructType", "VariantType"]
