"""The geospatial Delta types `geometry(<crs>)` / `geography(<crs>, <algorithm>)` (the `geospatial` feature).

Why a module of its own: the types are parameterized primitives. The Delta model keeps them as a
`PrimitiveType` whose name is the exact schema text (so the schema JSON round-trips byte for byte); this
module is the one place that parses that text, and the one place that maps it to GeoArrow's `geoarrow.wkb`
extension metadata (`{"crs": ..., "edges": ...}`), which is how the types cross into Arrow (binary WKB with
the extension tag as field metadata) and, through `WkbType`, into Parquet's GEOMETRY / GEOGRAPHY logical
types (pyarrow writes those for an Arrow extension type named `geoarrow.wkb`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...errors import SchemaError
from .types import ArrayType, DataType, MapType, PrimitiveType, StructType

GEOARROW_WKB = b"geoarrow.wkb"
DEFAULT_CRS = "OGC:CRS84"
#: edge interpolation algorithms (Delta's names; GeoArrow's `edges` values are the same words)
ALGORITHMS = frozenset({"spherical", "vincenty", "thomas", "andoyer", "karney"})
_GEO_RE = re.compile(r"^(geometry|geography)\s*\((.*)\)$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class GeoType:
    """A parsed geospatial type: kind (`geometry` / `geography`), CRS, and (geography) edge algorithm."""

    kind: str
    crs: str
    algorithm: str | None = None

    @property
    def is_geography(self) -> bool:
        return self.kind == "geography"

    def type_name(self) -> str:
        """The schema text (`geometry(OGC:CRS84)`, `geography(OGC:CRS84, spherical)`)."""
        if self.kind == "geometry":
            return f"geometry({self.crs})"
        return f"geography({self.crs}, {self.algorithm or 'spherical'})"

    def geoarrow_metadata(self) -> bytes:
        """GeoArrow's extension metadata: the CRS, and `edges` for geography."""
        meta: dict[str, Any] = {"crs": self.crs}
        if self.is_geography:
            meta["edges"] = self.algorithm or "spherical"
        return json.dumps(meta, separators=(",", ":")).encode()


def parse_geo_type(dtype: DataType | str) -> GeoType | None:
    """The `GeoType` of a Delta type (or type name), None for every other type; SchemaError when malformed."""
    name = dtype if isinstance(dtype, str) else (dtype.name if isinstance(dtype, PrimitiveType) else None)
    if name is None:
        return None
    m = _GEO_RE.match(name.strip())
    if m is None:
        return None
    kind, args = m.group(1).lower(), [a.strip() for a in m.group(2).split(",")] if m.group(2).strip() else []
    if kind == "geometry":
        if len(args) > 1:
            raise SchemaError(f"malformed geospatial type {name!r}: geometry takes one CRS")
        return GeoType("geometry", args[0] if args else DEFAULT_CRS)
    if len(args) > 2:
        raise SchemaError(f"malformed geospatial type {name!r}: geography takes a CRS and an algorithm")
    crs = args[0] if args else DEFAULT_CRS
    # an algorithm this list does not know still reads (WKB is WKB); it only means no bbox skipping, which
    # geography never does anyway
    algorithm = args[1].lower() if len(args) > 1 else "spherical"
    return GeoType("geography", crs, algorithm)


def is_geospatial(dtype: DataType) -> bool:
    return parse_geo_type(dtype) is not None


def schema_has_geospatial(dtype: DataType) -> bool:
    """Whether any field (nested too) is geometry or geography (the table then needs `geospatial`)."""
    if isinstance(dtype, PrimitiveType):
        return is_geospatial(dtype)
    if isinstance(dtype, StructType):
        return any(schema_has_geospatial(f.type) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return schema_has_geospatial(dtype.element_type)
    if isinstance(dtype, MapType):
        return schema_has_geospatial(dtype.key_type) or schema_has_geospatial(dtype.value_type)
    return False


def geoarrow_tag(dtype: DataType) -> dict[bytes, bytes] | None:
    """The Arrow field metadata marking a WKB binary column as `geoarrow.wkb` (None for other types)."""
    geo = parse_geo_type(dtype)
    if geo is None:
        return None
    return {b"ARROW:extension:name": GEOARROW_WKB, b"ARROW:extension:metadata": geo.geoarrow_metadata()}


def from_geoarrow_metadata(metadata: bytes | str | None) -> PrimitiveType:
    """The Delta type for a `geoarrow.wkb` column: geography when GeoArrow names planar-incompatible edges."""
    try:
        meta = json.loads(metadata or b"{}") if metadata else {}
    except ValueError:
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    crs = meta.get("crs") or DEFAULT_CRS
    if isinstance(crs, dict):  # PROJJSON object: Delta names CRSs by text only
        ident = crs.get("id") or {}
        crs = f"{ident.get('authority')}:{ident.get('code')}" if ident.get("authority") else DEFAULT_CRS
    edges = str(meta.get("edges") or "planar").lower()
    if edges == "planar":
        return PrimitiveType(GeoType("geometry", str(crs)).type_name())
    if edges not in ALGORITHMS:
        raise SchemaError(f"GeoArrow edges {edges!r} have no Delta geography algorithm")
    return PrimitiveType(GeoType("geography", str(crs), edges).type_name())


class WkbType(pa.ExtensionType):  # type: ignore[misc]
    """`geoarrow.wkb` over binary, used only to hand pyarrow's Parquet writer a column it writes with the
    GEOMETRY / GEOGRAPHY logical type. Never registered: registering would clash with geoarrow-pyarrow's own
    type, and reading needs no registration (the stored Arrow schema brings the tag back as field metadata)."""

    def __init__(self, metadata: bytes) -> None:
        self._metadata = metadata
        super().__init__(pa.binary(), GEOARROW_WKB.decode())

    def __arrow_ext_serialize__(self) -> bytes:
        return self._metadata

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> WkbType:
        return cls(serialized)


def wkb_parquet_type(field: pa.Field) -> pa.DataType | None:
    """The extension type to write a top-level field with, when it is a tagged WKB binary column."""
    meta = field.metadata or {}
    if meta.get(b"ARROW:extension:name") != GEOARROW_WKB or not pa.types.is_binary(field.type):
        return None
    return WkbType(meta.get(b"ARROW:extension:metadata", b"{}"))
