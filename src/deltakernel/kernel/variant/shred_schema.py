"""Which parts of a variant column a file shreds: Spark's shredding-schema inference, and the Arrow file type.

Why Spark's rules: a table written with `delta.enableVariantShredding=true` should be laid out as delta-spark
(Spark 4.3's `InferVariantShreddingSchema`) lays it out, so engines tuned for those files see the same shapes.
The rules, restated (no code copied):

* the schema is inferred per file from its first rows (Spark buffers up to 4096 rows; so do we);
* every non-null variant contributes its type tree: integers count as decimal(digits, 0) (so they merge with
  decimals) and become `long` at the end; decimals merge to the widest integer range and scale and are stored as
  decimal(18, s) or decimal(38, s); any other pair of different scalar types, or an object next to an array,
  gives up on that path (it stays in the `value` binary); variant null merges with anything; UUIDs, times and
  nanosecond timestamps are not shredded;
* an object field is shredded when at least a tenth of the non-null rows hold it (fields in array elements count
  occurrences instead of rows), the most frequent first, alphabetical in the file;
* at most 300 shredded fields per file (each field costs one, each typed scalar one more, shared by all variant
  columns of the file) and a depth of 50;
* empty objects, all-null paths and mixed paths are left to `value`.

Per-row work: inference walks the sampled variants one at a time (their binary layout varies row to row), but
only the first `SAMPLE_ROWS` rows of a file - bounded whatever the file size. The shredding itself is
column-wise (`shred.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Union

import numpy as np
import pyarrow as pa

from . import binary as vb
from .unshred import MetadataIndex, binary_piece, validity

SAMPLE_ROWS = 4096  # Spark's ParquetOutputWriterWithVariantShredding buffer (rows)
MAX_FIELDS = 300  # spark.sql.variant.shredding.maxSchemaWidth default
MAX_DEPTH = 50  # spark.sql.variant.shredding.maxSchemaDepth default
MAX_STRUCT = 1000
MAX_PRECISION = 38
MAX_LONG_DIGITS = 18

# inferred types: ("null",), ("variant",), ("long",), ("decimal", p, s), ("struct",) marker, ("array", elem),
# ("scalar", name) for the others
Inferred = tuple[Any, ...]
NULL: Inferred = ("null",)
VARIANT: Inferred = ("variant",)
LONG: Inferred = ("long",)
STRUCT: Inferred = ("struct",)

_SCALARS = {vb.TRUE: "boolean", vb.FALSE: "boolean", vb.DOUBLE: "double", vb.FLOAT: "float", vb.DATE: "date",
            vb.TIMESTAMP: "timestamp", vb.TIMESTAMP_NTZ: "timestamp_ntz", vb.BINARY: "binary", vb.STRING: "string"}
_ARROW = {"boolean": pa.bool_(), "double": pa.float64(), "float": pa.float32(), "date": pa.date32(),
          "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"), "binary": pa.binary(),
          "string": pa.string()}


@dataclass
class Shape:
    """A finished shredding schema node: `variant` (value binary only), `scalar` (typed Arrow column),
    `object` (typed fields) or `array` (typed elements)."""

    kind: str
    arrow: pa.DataType | None = None
    fields: list[tuple[str, Shape]] = field(default_factory=list)
    element: Union[Shape, None] = None


def _decimal_type(p: int, s: int) -> Inferred:
    return ("decimal", max(p, s), s)


def _merge_decimal(a: Inferred, b: Inferred) -> Inferred:
    scale = max(a[2], b[2])
    rng = max(a[1] - a[2], b[1] - b[2])
    return VARIANT if rng + scale > MAX_PRECISION else ("decimal", rng + scale, scale)


def _merge_decimal_long(d: Inferred) -> Inferred:
    if d[2] == 0 and d[1] <= MAX_LONG_DIGITS:
        return LONG
    return _merge_decimal(d, ("decimal", 19, 0))


def merge(a: Inferred, b: Inferred) -> Inferred:
    if a == NULL:
        return b
    if b == NULL:
        return a
    if a[0] == "decimal" and b[0] == "decimal":
        return _merge_decimal(a, b)
    if a[0] == "decimal" and b == LONG:
        return _merge_decimal_long(a)
    if a == LONG and b[0] == "decimal":
        return _merge_decimal_long(b)
    if a == STRUCT and b == STRUCT:
        return STRUCT
    if a[0] == "array" and b[0] == "array":
        return ("array", merge(a[1], b[1]))
    return a if a == b else VARIANT


def _primitive(keys: list[str], v: bytes, pos: int, depth: int) -> Inferred:
    """The type of one value, objects and arrays as markers (their contents are walked separately)."""
    if depth >= MAX_DEPTH:
        return VARIANT
    h = v[pos]
    basic, rest = h & 0x03, h >> 2
    if basic == vb.SHORT_STRING:
        return ("scalar", "string")
    if basic == vb.OBJECT:
        return STRUCT
    if basic == vb.ARRAY:
        return ("array", NULL)
    if rest == vb.NULL:
        return NULL
    if rest in (vb.INT8, vb.INT16, vb.INT32, vb.INT64):
        x = abs(int(vb.decode_primitive(rest, v, pos + 1)))
        digits = len(str(x))
        return ("decimal", digits, 0) if digits <= MAX_LONG_DIGITS else LONG
    if rest in (vb.DECIMAL4, vb.DECIMAL8, vb.DECIMAL16):
        d: Decimal = vb.decode_primitive(rest, v, pos + 1)
        scale = v[pos + 1]
        unscaled = abs(int(d.scaleb(scale)))
        return _decimal_type(len(str(unscaled)), scale)
    name = _SCALARS.get(rest)
    return ("scalar", name) if name is not None else VARIANT  # uuid, time, nanosecond timestamps


@dataclass
class _Node:
    type: Inferred = NULL
    rows: int = 0
    last_row: int = -1
    in_arrays: int = 0
    children: dict[str, _Node] = field(default_factory=dict)
    element: Union[_Node, None] = None


def _collect(keys: list[str], v: bytes, pos: int, node: _Node, row: int, depth: int, in_array: bool) -> None:
    if depth >= MAX_DEPTH:
        return
    basic = v[pos] & 0x03
    if basic == vb.OBJECT:
        for f in vb.object_fields(v, pos):
            child = node.children.setdefault(keys[f.key_id], _Node())
            if in_array:
                child.in_arrays += 1
            elif child.last_row != row:
                child.rows += 1
                child.last_row = row
            child.type = merge(child.type, _primitive(keys, v, f.start, depth))
            _collect(keys, v, f.start, child, row, depth + 1, in_array)
    elif basic == vb.ARRAY:
        if node.element is None:
            node.element = _Node()
        elem = node.element
        if elem.last_row != row:
            elem.rows += 1
            elem.last_row = row
        for start, _ in vb.array_elements(v, pos):
            if v[start] & 0x03 not in (vb.OBJECT, vb.ARRAY):
                elem.type = merge(elem.type, _primitive(keys, v, start, depth))
            _collect(keys, v, start, elem, row, depth + 1, True)


def _build(node: _Node, min_card: int, in_array: bool, is_array: bool) -> Any:
    """The simple schema of a node: an Inferred, or ("fields", [(name, type, count)])."""
    if is_array:
        elem = node.element
        if elem is not None and elem.rows >= min_card:
            inner = _build(elem, min_card, True, elem.element is not None)
            return ("array", _merge_built(elem.type, inner))
        return node.type
    if node.type == VARIANT:
        return VARIANT

    def card(n: _Node) -> int:
        return n.in_arrays if in_array else n.rows

    kept = [(k, c) for k, c in node.children.items() if card(c) >= min_card]
    kept.sort(key=lambda kc: (-card(kc[1]), kc[0]))
    kept = sorted(kept[:min(MAX_STRUCT, MAX_FIELDS)], key=lambda kc: kc[0])
    if not kept:
        return VARIANT if node.type[0] in ("struct", "array", "null") else node.type
    out = []
    for name, child in kept:
        if child.type == STRUCT:
            t = _build(child, min_card, in_array, False)
        elif child.type[0] == "array":
            t = _build(child, min_card, True, child.element is not None)
        else:
            t = child.type
        out.append((name, t))
    return ("fields", out)


def _merge_built(a: Any, b: Any) -> Any:
    """`merge` where one side may be a built object (`fields`): a marker or null gives way to it."""
    if a[0] == "fields" or b[0] == "fields":
        if a == NULL or a == STRUCT:
            return b
        if b == NULL or b == STRUCT:
            return a
        return VARIANT
    return merge(a, b)


class _Budget:
    def __init__(self, n: int) -> None:
        self.left = n


def _finalize(t: Any, budget: _Budget) -> Shape:
    budget.left -= 1
    if budget.left <= 0:
        return Shape("variant")
    kind = t[0]
    if kind == "fields":
        kept = []
        for name, sub in t[1]:
            if budget.left > 0:
                kept.append((name, _finalize(sub, budget)))
        return Shape("object", fields=kept) if kept else Shape("variant")
    if kind == "array":
        return Shape("array", element=_finalize(t[1], budget))
    if t == LONG or (kind == "decimal" and t[1] <= MAX_LONG_DIGITS and t[2] == 0):
        budget.left -= 1
        return Shape("scalar", pa.int64())
    if kind == "decimal":
        budget.left -= 1
        return Shape("scalar", pa.decimal128(MAX_LONG_DIGITS if t[1] <= MAX_LONG_DIGITS else MAX_PRECISION, t[2]))
    if kind == "scalar":
        budget.left -= 1
        return Shape("scalar", _ARROW[t[1]])
    return Shape("variant")  # variant, null, bare struct / array markers


def infer_shapes(columns: list[pa.Array], max_fields: int = MAX_FIELDS) -> list[Shape]:
    """The shredding schema of each variant column (`struct<metadata, value>`) of one file, from its rows."""
    budget = _Budget(max_fields)
    out = []
    for col in columns:
        col = col.slice(0, SAMPLE_ROWS)
        valid = validity(col)
        meta = MetadataIndex(col.field("metadata"))
        keys = {}
        value = binary_piece(col.field("value"))
        root = _Node()
        count = 0
        buf = value.buf.tobytes()
        for row in np.flatnonzero(valid & (value.lens > 0)):
            d = int(meta.rows[row])
            if d not in keys:
                keys[d] = meta.keys(d)
            start = int(value.starts[row])
            count += 1
            root.type = merge(root.type, _primitive(keys[d], buf, start, 0))
            _collect(keys[d], buf, start, root, int(row), 0, False)
        min_card = (count + 9) // 10
        simple = _build(root, min_card, False, root.element is not None)
        out.append(_finalize(simple, budget))
    return out


# ----------------------------------------------------------------------------- a given schema
_DDL_SCALARS = {"boolean": pa.bool_(), "tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(),
                "short": pa.int16(), "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(),
                "long": pa.int64(), "float": pa.float32(), "real": pa.float32(), "double": pa.float64(),
                "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ltz":
                pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"), "string": pa.string(),
                "binary": pa.binary()}
_TOKEN = re.compile(r"\s*(`[^`]*`|[A-Za-z_][A-Za-z0-9_]*|\d+|[<>(),:])")


class ShapeSyntaxError(vb.MalformedVariantError):
    """A shredding schema given as text does not parse (Spark's DDL type syntax)."""


def parse_shape(text: str) -> Shape:
    """A shredding schema in Spark's DDL (what `spark.sql.variant.forceShreddingSchemaForTest` takes): a field
    list `a long, b struct<c string>` (an object) or one type (`array<double>`, `decimal(18, 2)`, `variant`)."""
    toks = [m.group(1) for m in _TOKEN.finditer(text)]
    if "".join(toks) != re.sub(r"\s+", "", text):
        raise ShapeSyntaxError(f"cannot parse shredding schema {text!r}")
    pos = [0]

    def peek() -> str | None:
        return toks[pos[0]] if pos[0] < len(toks) else None

    def take(expected: str | None = None) -> str:
        tok = peek()
        if tok is None or (expected is not None and tok.lower() != expected):
            raise ShapeSyntaxError(f"cannot parse shredding schema {text!r} near token {pos[0]}")
        pos[0] += 1
        return tok

    def fields(end: str | None) -> Shape:
        out = []
        while True:
            name = take().strip("`")
            if peek() == ":":
                take()
            out.append((name, typ()))
            if peek() != ",":
                break
            take()
        if end is not None:
            take(end)
        return Shape("object", fields=sorted(out, key=lambda f: f[0]))

    def typ() -> Shape:
        word = take().lower()
        if word == "struct":
            take("<")
            return fields(">")
        if word == "array":
            take("<")
            elem = typ()
            take(">")
            return Shape("array", element=elem)
        if word in ("decimal", "dec", "numeric"):
            p, sc = 10, 0
            if peek() == "(":
                take()
                p = int(take())
                if peek() == ",":
                    take()
                    sc = int(take())
                take(")")
            return Shape("scalar", pa.decimal128(p, sc))
        if word == "variant":
            return Shape("variant")
        if word in _DDL_SCALARS:
            return Shape("scalar", _DDL_SCALARS[word])
        raise ShapeSyntaxError(f"shredding schema {text!r}: type {word!r} cannot be shredded")

    if len(toks) > 1 and toks[1] not in ("<", "(") and toks[0].lower() not in ("struct", "array"):
        shape = fields(None)
    else:
        shape = typ()
    if pos[0] != len(toks):
        raise ShapeSyntaxError(f"cannot parse shredding schema {text!r}: unexpected {toks[pos[0]]!r}")
    return shape


# ----------------------------------------------------------------------------- the file's Arrow type
def _group(shape: Shape) -> pa.DataType:
    """`struct<value, typed_value>` of a shredded field or array element."""
    fields = [pa.field("value", pa.binary())]
    typed = typed_type(shape)
    if typed is not None:
        fields.append(pa.field("typed_value", typed))
    return pa.struct(fields)


def typed_type(shape: Shape) -> pa.DataType | None:
    """The Arrow type of a shape's `typed_value` (None: the shape has no typed column)."""
    if shape.kind == "scalar":
        return shape.arrow
    if shape.kind == "object":
        return pa.struct([pa.field(n, _group(s), nullable=False) for n, s in shape.fields])
    if shape.kind == "array":
        assert shape.element is not None
        return pa.list_(pa.field("element", _group(shape.element), nullable=False))
    return None


def file_type(shape: Shape) -> pa.DataType:
    """A top-level shredded variant: `struct<metadata (required), value, typed_value>` (Parquet
    VariantShredding.md; what Spark writes)."""
    fields = [pa.field("metadata", pa.binary(), nullable=False), pa.field("value", pa.binary())]
    typed = typed_type(shape)
    if typed is not None:
        fields.append(pa.field("typed_value", typed))
    return pa.struct(fields)


__all__ = ["MAX_FIELDS", "SAMPLE_ROWS", "Shape", "ShapeSyntaxError", "file_type", "infer_shapes", "parse_shape",
           "typed_type"]
