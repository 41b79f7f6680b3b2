"""The Delta schema data model and its JSON form (PROTOCOL.md "Schema Serialization Format").

Kept free of Arrow so the protocol model stays the single source of truth; Arrow conversion lives in
`arrow.py`, which imports this model and installs itself (`set_arrow_conversion`) for `StructType.to_arrow`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Union

from ...errors import SchemaError

PRIMITIVE_NAMES = frozenset(
    {
        "string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary",
        "date", "timestamp", "timestamp_ntz", "variant", "void",
    }
)
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")

#: Delta schema -> Arrow schema (`arrow.to_arrow_schema`): set by `arrow` as it loads (the `schema` package imports
#: it), since the conversion imports this model and the model cannot import it back
_to_arrow_schema: Callable[..., Any] | None = None


def set_arrow_conversion(to_arrow_schema: Callable[..., Any]) -> None:
    """Install the Delta -> Arrow schema conversion that `StructType.to_arrow` uses."""
    global _to_arrow_schema
    _to_arrow_schema = to_arrow_schema


@dataclass(frozen=True)
class PrimitiveType:
    name: str

    def to_json(self) -> Any:
        return self.name


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    def to_json(self) -> Any:
        return f"decimal({self.precision},{self.scale})"


@dataclass(frozen=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    def to_json(self) -> Any:
        return {"type": "array", "elementType": self.element_type.to_json(), "containsNull": self.contains_null}


@dataclass(frozen=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def to_json(self) -> Any:
        return {
            "type": "map",
            "keyType": self.key_type.to_json(),
            "valueType": self.value_type.to_json(),
            "valueContainsNull": self.value_contains_null,
        }


@dataclass(frozen=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def to_json(self) -> Any:
        return {"name": self.name, "type": self.type.to_json(), "nullable": self.nullable, "metadata": self.metadata}


@dataclass(frozen=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def to_json(self) -> Any:
        return {"type": "struct", "fields": [f.to_json() for f in self.fields]}

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> StructField:
        for f in self.fields:
            if f.name == name:
                return f
        lower = name.lower()  # Delta column names are case-insensitive
        for f in self.fields:
            if f.name.lower() == lower:
                return f
        raise SchemaError(f"no column {name!r} in schema (columns: {self.names})")

    def has(self, name: str) -> bool:
        lower = name.lower()
        return any(f.name == name or f.name.lower() == lower for f in self.fields)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def to_arrow(self) -> Any:
        """The Arrow schema (deltalake's `Schema.to_arrow()`), without field metadata."""
        if _to_arrow_schema is None:  # pragma: no cover - `deltakernel.kernel.schema` imports `arrow` first
            raise SchemaError("the Arrow conversion is not loaded (import deltakernel.kernel.schema)")
        return _to_arrow_schema(self, include_metadata=False)

    def to_pyarrow(self) -> Any:
        return self.to_arrow()

    def json(self) -> str:
        return schema_to_json(self)

    def __str__(self) -> str:
        return "\n".join(f"{f.name}: {_type_str(f.type)}{'' if f.nullable else ' not null'}" for f in self.fields)


DataType = Union[PrimitiveType, DecimalType, ArrayType, MapType, StructType]


def parse_type(obj: Any) -> DataType:
    """Parse one type from its JSON value (a string for primitives, an object for nested)."""
    if isinstance(obj, str):
        if obj in PRIMITIVE_NAMES:
            return PrimitiveType(obj)
        m = _DECIMAL_RE.match(obj)
        if m:
            return DecimalType(int(m.group(1)), int(m.group(2)))
        if obj == "decimal":  # Spark's shorthand
            return DecimalType(10, 0)
        # geometry(...), geography(...), interval types, ... : keep the name, readers decide
        return PrimitiveType(obj)
    if isinstance(obj, dict):
        kind = obj.get("type")
        if kind == "struct":
            return StructType(tuple(parse_field(f) for f in obj.get("fields", [])))
        if kind == "array":
            return ArrayType(parse_type(obj["elementType"]), bool(obj.get("containsNull", True)))
        if kind == "map":
            return MapType(
                parse_type(obj["keyType"]), parse_type(obj["valueType"]), bool(obj.get("valueContainsNull", True))
            )
    raise SchemaError(f"unknown Delta type: {obj!r}")


def parse_field(obj: Any) -> StructField:
    """One field from its JSON value (ALTER's column-metadata and the public `Field.from_json` parse fields alone)."""
    try:
        return StructField(
            name=obj["name"],
            type=parse_type(obj["type"]),
            nullable=bool(obj.get("nullable", True)),
            metadata=dict(obj.get("metadata") or {}),
        )
    except (KeyError, TypeError) as e:
        raise SchemaError(f"malformed struct field {obj!r}: {e}") from e


def parse_schema_string(schema_string: str) -> StructType:
    """Parse `metaData.schemaString`."""
    try:
        obj = json.loads(schema_string)
    except (ValueError, TypeError) as e:
        raise SchemaError(f"schemaString is not valid JSON: {e}") from e
    t = parse_type(obj)
    if not isinstance(t, StructType):
        raise SchemaError("schemaString must describe a struct")
    return t


def schema_to_json(schema: StructType) -> str:
    return json.dumps(schema.to_json(), separators=(",", ":"))


def _type_str(t: DataType) -> str:
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, ArrayType):
        return f"array<{_type_str(t.element_type)}>"
    if isinstance(t, MapType):
        return f"map<{_type_str(t.key_type)}, {_type_str(t.value_type)}>"
    return "struct<" + ", ".join(f"{f.name}: {_type_str(f.type)}" for f in t.fields) + ">"
