"""Shredded variant writes: when a table allows them, and how the file writer applies them per file.

Why a separate module: the Parquet writer only needs "this file's schema" and "these columns shredded"; the
rules live here. PROTOCOL.md "Variant Shredding": a writer may shred only when the table's protocol has the
`variantShredding` (or `-preview`) feature *and* `delta.enableVariantShredding=true`; with the property false
variants must be written unshredded. Shredding is never required, so every other writer path stays unshredded.

Which columns: variants at the top level and inside structs, as Spark 4.3 chooses; variants in arrays and maps
are written unshredded (as Spark writes them; always valid, read by everyone).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...errors import DeltaError
from ...kernel.log.actions import Protocol
from ...kernel.schema.arrow import VARIANT_EXTENSION, from_arrow_schema
from ...kernel.variant.shred import shred
from ...kernel.variant.shred_schema import Shape, file_type, infer_shapes, parse_shape
from .layout import Layout, parquet_column_paths

PROPERTY = "delta.enableVariantShredding"
FEATURES = ("variantShredding", "variantShredding-preview")


def property_on(configuration: Mapping[str, Any]) -> bool:
    return str(configuration.get(PROPERTY, "false")).strip().lower() == "true"


def shredding_enabled(configuration: Mapping[str, Any], protocol: Protocol | None) -> bool:
    """May files of this table be written shredded (the property on and the feature in the protocol)?"""
    return protocol is not None and property_on(configuration) and any(protocol.has_feature(f) for f in FEATURES)


def parse_shapes(spec: str | Mapping[str, str] | None) -> Shape | dict[str, Shape] | None:
    """A forced shredding schema: one Spark DDL for every variant column, or column name -> DDL."""
    if spec is None:
        return None
    if isinstance(spec, str):
        return parse_shape(spec)
    return {str(k).lower(): parse_shape(v) for k, v in spec.items()}


def check_forced(spec: Any, configuration: Mapping[str, Any], protocol: Protocol | None) -> None:
    """A write that asks for a shredding schema on a table that does not allow shredding fails (delta-spark's
    DELTA_SHREDDING_TABLE_PROPERTY_DISABLED) rather than silently writing unshredded files."""
    if spec is not None and not shredding_enabled(configuration, protocol):
        raise DeltaError("DELTA_SHREDDING_TABLE_PROPERTY_DISABLED: a variant shredding schema was given, but the "
                         f"table does not allow shredded writes: set {PROPERTY}=true first")


def _is_variant(f: pa.Field) -> bool:
    return bool(f.metadata) and f.metadata.get(b"ARROW:extension:name") == VARIANT_EXTENSION \
        and pa.types.is_struct(f.type)


Path = tuple[int, ...]  # field indexes from a top-level column down to a variant (through structs only)


def _variant_paths(fields: list[pa.Field], prefix: Path = ()) -> list[Path]:
    out: list[Path] = []
    for i, f in enumerate(fields):
        if _is_variant(f):
            out.append((*prefix, i))
        elif pa.types.is_struct(f.type):
            out += _variant_paths(list(f.type), (*prefix, i))
    return out


def _name(schema: pa.Schema, path: Path) -> str:
    f = schema.field(path[0])
    names = [f.name]
    for j in path[1:]:
        f = f.type.field(j)
        names.append(f.name)
    return ".".join(names)


def _with_type(f: pa.Field, path: Path, t: pa.DataType) -> pa.Field:
    if not path:
        return pa.field(f.name, t, nullable=f.nullable, metadata=f.metadata)
    kids = list(f.type)
    kids[path[0]] = _with_type(kids[path[0]], path[1:], t)
    return pa.field(f.name, pa.struct(kids), nullable=f.nullable, metadata=f.metadata)


def _value_at(arr: pa.Array, path: Path) -> pa.Array:
    """The variant at `path` below a struct column, null where any parent struct is null."""
    for j in path:
        arr = arr.flatten()[j]
    return arr


def _rebuild(arr: pa.Array, t: pa.DataType, shapes: dict[Path, Shape]) -> pa.Array:
    if () in shapes:
        return shred(arr, shapes[()])
    kids = [arr.field(j) for j in range(arr.type.num_fields)]
    for j in {p[0] for p in shapes}:
        kids[j] = _rebuild(kids[j], t.field(j).type, {p[1:]: s for p, s in shapes.items() if p[0] == j})
    return pa.StructArray.from_arrays(kids, fields=list(t), mask=arr.is_null() if arr.null_count else None)


SPARK_ROW_METADATA = b"org.apache.spark.sql.parquet.row.metadata"


def _plain(node: Any) -> Any:
    """A Delta schema JSON node without field metadata (column mapping ids, comments: not Spark's concern)."""
    if isinstance(node, dict):
        return {k: ({} if k == "metadata" else _plain(v)) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def spark_row_metadata(layout: Layout) -> dict[bytes, bytes]:
    """The footer key Spark writes with its row schema: `spark.read.parquet` of a shredded file then sees the
    columns as VARIANT (Spark 4.3 reads the shredded layout under that type), as for a file Spark wrote. The
    physical names are the file's; types Spark may not parse (geospatial) leave the key out."""
    text = json.dumps(_plain(from_arrow_schema(layout.physical_arrow).to_json()), separators=(",", ":"))
    if '"geometry' in text or '"geography' in text:
        return {}
    return {SPARK_ROW_METADATA: text.encode()}


class VariantShredder:
    """Per-file shredding of a layout's variant columns: top level and inside structs (Spark's reach; variants
    in arrays and maps stay unshredded, as Spark leaves them)."""

    def __init__(self, paths: list[Path], names: list[str], forced: Shape | dict[str, Shape] | None) -> None:
        self.paths = paths  # index paths in the layout's (logical and physical) data schema
        self.names = names  # dotted logical names, for a per-column forced schema
        self.forced = forced

    @classmethod
    def for_layout(cls, layout: Layout, forced: Any = None) -> VariantShredder | None:
        paths = _variant_paths(list(layout.physical_arrow))
        if not paths:
            return None
        if isinstance(forced, (str, Mapping)):
            forced = parse_shapes(forced)
        return cls(paths, [_name(layout.logical_arrow, p) for p in paths], forced)

    def plan(self, table: pa.Table, layout: Layout) -> tuple[dict[Path, Shape], pa.Schema | None]:
        """The shapes of a new file (from its first rows unless forced) and its Parquet schema (None: no column
        is shredded, the layout's schema stays)."""
        if isinstance(self.forced, Shape):
            shapes = [self.forced] * len(self.paths)
        elif isinstance(self.forced, dict):
            shapes = [self.forced.get(n.lower(), Shape("variant")) for n in self.names]
        else:
            shapes = infer_shapes([_value_at(table.column(p[0]).combine_chunks(), p[1:]) for p in self.paths])
        chosen = {p: s for p, s in zip(self.paths, shapes) if s.kind != "variant"}
        if not chosen:
            return {}, None
        fields = list(layout.physical_arrow)
        for p, s in chosen.items():
            fields[p[0]] = _with_type(fields[p[0]], p[1:], file_type(s))
        return chosen, pa.schema(fields, metadata={**(layout.physical_arrow.metadata or {}),
                                                   **spark_row_metadata(layout)})

    def apply(self, physical: pa.Table, shapes: dict[Path, Shape], schema: pa.Schema) -> pa.Table:
        cols = list(physical.columns)
        for i in {p[0] for p in shapes}:
            sub = {p[1:]: s for p, s in shapes.items() if p[0] == i}
            t = schema.field(i).type
            cols[i] = pa.chunked_array([_rebuild(c, t, sub) for c in cols[i].chunks], type=t)
        return pa.Table.from_arrays(cols, schema=schema)

    @staticmethod
    def file_options(options: dict[str, Any], schema: pa.Schema) -> dict[str, Any]:
        """Per-column option lists name Parquet leaf paths; a shredded file has more leaves. Each new leaf takes
        the setting its top-level column has."""
        out = dict(options)
        for key in ("use_dictionary", "write_statistics"):
            chosen = options.get(key)
            if isinstance(chosen, list):
                tops = {p.split(".", 1)[0] for p in chosen}
                out[key] = [p for p in parquet_column_paths(schema) if p.split(".", 1)[0] in tops]
        return out


__all__ = ["FEATURES", "PROPERTY", "VariantShredder", "check_forced", "parse_shapes", "property_on",
           "shredding_enabled"]
