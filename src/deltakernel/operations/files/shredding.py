"""Shredded variant writes: when a table allows them, and how the file writer applies them per file.

Why a separate module: the Parquet writer only needs "this file's schema" and "these columns shredded"; the
rules live here. PROTOCOL.md "Variant Shredding": a writer may shred only when the table's protocol has the
`variantShredding` (or `-preview`) feature *and* `delta.enableVariantShredding=true`; with the property false
variants must be written unshredded. Shredding is never required, so every other writer path stays unshredded.

Which columns: top-level variant columns. Spark also shreds variants nested in structs; variants in structs,
arrays and maps are written unshredded here (always valid, read by everyone).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...errors import DeltaError
from ...kernel.log.actions import Protocol
from ...kernel.schema.arrow import VARIANT_EXTENSION
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


class VariantShredder:
    """Per-file shredding of a layout's top-level variant columns."""

    def __init__(self, columns: list[int], names: list[str], forced: Shape | dict[str, Shape] | None) -> None:
        self.columns = columns  # indexes in the layout's (logical and physical) data schema
        self.names = names  # logical names, for a per-column forced schema
        self.forced = forced

    @classmethod
    def for_layout(cls, layout: Layout, forced: Any = None) -> VariantShredder | None:
        cols = [i for i, f in enumerate(layout.physical_arrow) if _is_variant(f)]
        if not cols:
            return None
        if isinstance(forced, (str, Mapping)):
            forced = parse_shapes(forced)
        return cls(cols, [layout.logical_arrow.field(i).name for i in cols], forced)

    def plan(self, table: pa.Table, layout: Layout) -> tuple[dict[int, Shape], pa.Schema | None]:
        """The shapes of a new file (from its first rows unless forced) and its Parquet schema (None: no column
        is shredded, the layout's schema stays)."""
        if isinstance(self.forced, Shape):
            shapes = [self.forced] * len(self.columns)
        elif isinstance(self.forced, dict):
            shapes = [self.forced.get(n.lower(), Shape("variant")) for n in self.names]
        else:
            shapes = infer_shapes([table.column(i).combine_chunks() for i in self.columns])
        chosen = {i: s for i, s in zip(self.columns, shapes) if s.kind != "variant"}
        if not chosen:
            return {}, None
        fields = list(layout.physical_arrow)
        for i, s in chosen.items():
            f = fields[i]
            fields[i] = pa.field(f.name, file_type(s), nullable=f.nullable, metadata=f.metadata)
        return chosen, pa.schema(fields, metadata=layout.physical_arrow.metadata)

    def apply(self, physical: pa.Table, shapes: dict[int, Shape], schema: pa.Schema) -> pa.Table:
        cols = list(physical.columns)
        for i, s in shapes.items():
            cols[i] = pa.chunked_array([shred(c, s) for c in cols[i].chunks], type=schema.field(i).type)
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
