"""Decode a `pyarrow.compute.Expression` into the kernel predicate AST, exactly or not at all.

pyarrow has no public API to walk an expression; see the note below for how its tree is recovered.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...schema.types import DataType, PrimitiveType, StructType
from .model import AlwaysFalse, AlwaysTrue, And, Column, Comparison, Expr, In, IsNull, Literal, Not, Operand, Or


# ----------------------------------------------------------------------------- from_pyarrow decoding
# pyarrow pickles an Expression as an Arrow IPC file: one row of literal/option columns, plus schema
# metadata that spells the tree in prefix order ("call", "field_ref", "nested_field_ref", "literal",
# "options", "end"). `Schema.metadata` is a dict and loses repeated keys, so the ordered pairs are read
# through the Arrow C data interface (its metadata encoding is part of that stable ABI). The format is
# Arrow-internal, so every decode is verified: the tree is rebuilt into a pyarrow Expression and must
# compare equal to the input, otherwise the result is None.
class _CArrowSchema(ctypes.Structure):
    _fields_ = [
        ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
        ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64), ("children", ctypes.c_void_p),
        ("dictionary", ctypes.c_void_p), ("release", ctypes.c_void_p), ("private_data", ctypes.c_void_p),
    ]


def _ordered_metadata(schema: pa.Schema) -> list[tuple[str, str]]:
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    capsule = schema.__arrow_c_schema__()  # released by the capsule's destructor
    c_schema = _CArrowSchema.from_address(get_pointer(capsule, b"arrow_schema"))
    out: list[tuple[str, str]] = []
    if not c_schema.metadata:
        return out
    off = int(c_schema.metadata)
    count = ctypes.c_int32.from_address(off).value
    off += 4
    for _ in range(count):
        pair = []
        for _part in range(2):
            n = ctypes.c_int32.from_address(off).value
            off += 4
            pair.append(ctypes.string_at(off, n).decode("utf-8"))
            off += n
        out.append((pair[0], pair[1]))
    return out


class _Unsupported(Exception):
    """A form from_pyarrow does not translate (-> None)."""


_Raw = tuple[Any, ...]  # ("call", name, [args], options|None) | ("field", path) | ("literal", pa.Scalar)


def _parse_raw(pairs: list[tuple[str, str]], row: list[pa.Scalar]) -> _Raw:
    pos = 0

    def node() -> _Raw:
        nonlocal pos
        key, value = pairs[pos]
        pos += 1
        if key == "literal":
            return ("literal", row[int(value)])
        if key == "field_ref":
            return ("field", (value,))
        if key == "nested_field_ref":
            names = []
            for _ in range(int(value)):
                k, v = pairs[pos]
                if k != "field_ref":
                    raise _Unsupported(k)
                names.append(v)
                pos += 1
            return ("field", tuple(names))
        if key == "call":
            args: list[_Raw] = []
            options = None
            while True:
                k, v = pairs[pos]
                if k == "end":
                    pos += 1
                    break
                if k == "options":
                    options = row[int(v)]
                    pos += 1
                    continue
                args.append(node())
            return ("call", value, args, options)
        raise _Unsupported(key)

    tree = node()
    if pos != len(pairs):
        raise _Unsupported("trailing metadata")
    return tree


def _options(raw_options: pa.Scalar | None) -> tuple[pc.FunctionOptions | None, dict[str, Any]]:
    if raw_options is None:
        return None, {}
    d = {k: v for k, v in raw_options.items()}
    kind = d.pop("_type_name").as_py()
    if kind == b"SetLookupOptions":
        nmb = d["null_matching_behavior"].as_py()
        if nmb not in (0, 1):  # MATCH / SKIP are the only ones pyarrow's Python API can build
            raise _Unsupported("null_matching_behavior")
        value_set = d["value_set"].values
        return pc.SetLookupOptions(value_set, skip_nulls=nmb == 1), {"value_set": value_set, "skip_nulls": nmb == 1}
    if kind == b"NullOptions":
        nan_is_null = bool(d["nan_is_null"].as_py())
        return pc.NullOptions(nan_is_null=nan_is_null), {"nan_is_null": nan_is_null}
    raise _Unsupported(str(kind))


def _rebuild(raw: _Raw) -> pc.Expression:
    if raw[0] == "literal":
        return pc.scalar(raw[1])
    if raw[0] == "field":
        return pc.field(*raw[1])
    opts, _ = _options(raw[3])
    return pc.Expression._call(raw[1], [_rebuild(a) for a in raw[2]], opts)


_CMP_CALLS = {"equal": "=", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">", "greater_equal": ">="}


def _column(path: tuple[str, ...], schema: StructType | None) -> tuple[Column, DataType | None]:
    if schema is None:
        return Column(path), None
    struct: DataType = schema
    names = []
    for part in path:
        if not isinstance(struct, StructType) or not struct.has(part):
            raise _Unsupported(f"unknown column {path}")
        f = struct.field(part)
        if f.name != part:  # pyarrow field refs are case-sensitive; do not guess
            raise _Unsupported(f"column case mismatch {path}")
        names.append(f.name)
        struct = f.type
    return Column(tuple(names)), struct


def _operand_from_raw(raw: _Raw, schema: StructType | None) -> Operand:
    if raw[0] == "field":
        return _column(raw[1], schema)[0]
    if raw[0] == "literal":
        s: pa.Scalar = raw[1]
        return Literal(s.as_py(), s.type)
    raise _Unsupported("nested call in a comparison")


def _translate(raw: _Raw, schema: StructType | None) -> Expr:
    if raw[0] == "literal":
        v = raw[1].as_py()
        if isinstance(v, bool):
            return AlwaysTrue() if v else AlwaysFalse()
        raise _Unsupported("non-boolean literal predicate")
    if raw[0] == "field":  # a boolean column used as a predicate
        col, dtype = _column(raw[1], schema)
        if dtype is not None and dtype != PrimitiveType("boolean"):
            raise _Unsupported("non-boolean column predicate")
        return Comparison("=", col, Literal(True, pa.bool_()))
    _, name, args, raw_options = raw
    if name in _CMP_CALLS and len(args) == 2:
        return Comparison(_CMP_CALLS[name], _operand_from_raw(args[0], schema), _operand_from_raw(args[1], schema))
    if name in ("and_kleene", "or_kleene") and args:
        kids = [_translate(a, schema) for a in args]
        return And(*kids) if name == "and_kleene" else Or(*kids)
    if name == "invert" and len(args) == 1:
        return Not(_translate(args[0], schema))
    if name in ("is_null", "is_valid") and len(args) == 1 and args[0][0] == "field":
        _, opts = _options(raw_options)
        if opts.get("nan_is_null"):
            raise _Unsupported("nan_is_null")
        return IsNull(_column(args[0][1], schema)[0], negated=name == "is_valid")
    if name == "is_in" and len(args) == 1 and args[0][0] == "field" and raw_options is not None:
        col = _column(args[0][1], schema)[0]
        _, opts = _options(raw_options)
        value_set: pa.Array = opts["value_set"]
        values = value_set.to_pylist()
        nonnull = tuple(v for v in values if v is not None)
        has_null = len(nonnull) != len(values)
        vtype = value_set.type
        hit: Expr = In(col, nonnull, value_type=vtype) if nonnull else AlwaysFalse()
        if opts["skip_nulls"] or not has_null:  # null input -> FALSE (never NULL): two-valued
            return And(IsNull(col, negated=True), hit)
        return Or(IsNull(col), hit)  # MATCH with a null in the set: null input -> TRUE
    raise _Unsupported(name)


def decode_pyarrow(expr: pc.Expression, schema: StructType | None) -> Expr | None:
    reduced = expr.__reduce__()
    buf = reduced[1][0]
    table = pa.ipc.open_file(pa.BufferReader(buf)).read_all()
    row = [table.column(i)[0] for i in range(table.num_columns)] if table.num_rows else []
    raw = _parse_raw(_ordered_metadata(table.schema), row)
    if not _rebuild(raw).equals(expr):
        return None
    return _translate(raw, schema)


def from_pyarrow(expr: pc.Expression, schema: StructType | None = None) -> Expr | None:
    """Best-effort exact translation of a pyarrow expression; None when any part is not understood."""
    try:
        return decode_pyarrow(expr, schema)
    except Exception:
        return None
