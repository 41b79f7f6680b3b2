"""An immutable predicate AST, its builders, and its translation to pyarrow.

Why our own AST: pyarrow expressions cannot be inspected through a public API, and data skipping
(`skipping.py`) has to walk the predicate leaf by leaf to rewrite it over min/max/nullCount stats.
The AST has SQL (Kleene) semantics: a comparison with a null operand is null, a row is kept only
where the predicate is TRUE, and `x IN (1, NULL)` is TRUE or NULL, never FALSE. `to_pyarrow`
produces an expression with exactly those semantics, so the row filter and skipping agree.

Builders:
- `from_dnf` takes deltalake's tuple filters (strings are parsed against the column's Delta type;
  an empty string or None means NULL, as in deltalake's partition filters).
- `from_pyarrow` decodes a `pyarrow.compute.Expression` and returns None whenever a form is not
  understood: None means "no skipping", never an error and never an approximate translation.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Union

import pyarrow as pa
import pyarrow.compute as pc

from ....errors import InvalidFilterError
from ...arrow_build import scalar
from ...isotime import parse_datetime
from ...schema.arrow import to_arrow_type
from ...schema.types import DataType, DecimalType, PrimitiveType, StructType

COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")
# op with its operands swapped: `lit < col` == `col > lit`
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
# NOT (a op b) == a NEGATED[op] b for non-null, non-NaN operands
NEGATED = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_PC_OPS = {
    "=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal,
}


# ----------------------------------------------------------------------------- nodes
@dataclass(frozen=True)
class Column:
    """A column by logical path (top-level name, then nested struct field names)."""

    path: tuple[str, ...]

    def __post_init__(self) -> None:
        if isinstance(self.path, str):  # convenience: Column("a")
            object.__setattr__(self, "path", (self.path,))
        else:
            object.__setattr__(self, "path", tuple(self.path))


@dataclass(frozen=True)
class Literal:
    """A constant. `arrow_type` pins the Arrow type (None: inferred, or the column's type when known)."""

    value: Any
    arrow_type: pa.DataType | None = field(default=None, compare=False, hash=False)

    def to_scalar(self, hint: pa.DataType | None = None) -> pa.Scalar:
        """The Arrow scalar; `hint` (the column's type) is used only when it keeps the value exact."""
        if self.arrow_type is not None:
            return scalar(self.value, type=self.arrow_type)
        if hint is not None:
            try:
                s = scalar(self.value, type=hint)
                if self.value is None or _same_value(s.as_py(), self.value):
                    return s
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                    OverflowError):
                pass
        return scalar(self.value)


Operand = Union[Column, Literal]


@dataclass(frozen=True)
class Comparison:
    op: str
    left: Operand
    right: Operand

    def __post_init__(self) -> None:
        if self.op == "==":
            object.__setattr__(self, "op", "=")
        if self.op not in COMPARISON_OPS:
            raise InvalidFilterError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True)
class In:
    """`column [NOT] IN (values)` with SQL semantics; a None value is a SQL NULL in the list."""

    column: Column
    values: tuple[Any, ...]
    negated: bool = False
    value_type: pa.DataType | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        vals = tuple(v.value if isinstance(v, Literal) else v for v in self.values)
        object.__setattr__(self, "values", vals)


@dataclass(frozen=True)
class IsNull:
    column: Column
    negated: bool = False


@dataclass(frozen=True)
class Not:
    child: Expr


class _Junction:
    """Shared body of And/Or: an n-ary node built as `And(a, b, c)`."""

    __slots__ = ("children",)
    children: tuple[Expr, ...]

    def __init__(self, *children: Expr) -> None:
        if len(children) == 1 and isinstance(children[0], (list, tuple)):
            children = tuple(children[0])
        object.__setattr__(self, "children", tuple(children))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.children == other.children

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.children))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.children))})"


class And(_Junction):
    """Conjunction; `And()` is TRUE."""


class Or(_Junction):
    """Disjunction; `Or()` is FALSE."""


@dataclass(frozen=True)
class AlwaysTrue:
    pass


@dataclass(frozen=True)
class AlwaysFalse:
    pass


@dataclass(frozen=True)
class GeoIntersects:
    """The WKB value's bounding box meets `box` = (xmin, ymin, xmax, ymax); xmin > xmax wraps across the
    antimeridian. Built by `deltakernel.geo.intersects`; skipping uses bbox stats (kernel/geo/bbox.py)."""

    column: Column
    box: tuple[float, float, float, float]


Expr = Union[Comparison, In, IsNull, Not, And, Or, AlwaysTrue, AlwaysFalse, Column, Literal, GeoIntersects]
EXPR_TYPES = (Comparison, In, IsNull, Not, And, Or, AlwaysTrue, AlwaysFalse, Column, GeoIntersects)


def _same_value(a: Any, b: Any) -> bool:
    """Whether converting `b` to an Arrow scalar (read back as `a`) kept its value exactly."""
    try:
        if isinstance(b, float) and b != b:
            return isinstance(a, float) and a != a
        if isinstance(a, dt.datetime) and isinstance(b, dt.datetime):
            if b.tzinfo is None and a.tzinfo is not None:  # naive literal on a UTC column means UTC
                a = a.astimezone(dt.timezone.utc).replace(tzinfo=None)
            return bool(a == b)
        if isinstance(a, bool) != isinstance(b, bool):
            return False
        return bool(a == b)
    except Exception:
        return False


# ----------------------------------------------------------------------------- helpers
def referenced_columns(expr: Expr) -> set[tuple[str, ...]]:
    """Every column path the expression reads (the scan needs them to evaluate the row filter)."""
    out: set[tuple[str, ...]] = set()
    for node in _walk(expr):
        if isinstance(node, Column):
            out.add(node.path)
    return out


def _walk(expr: Expr) -> Iterator[Any]:
    yield expr
    if isinstance(expr, Comparison):
        yield expr.left
        yield expr.right
    elif isinstance(expr, (In, IsNull, GeoIntersects)):
        yield expr.column
    elif isinstance(expr, Not):
        yield from _walk(expr.child)
    elif isinstance(expr, _Junction):
        for c in expr.children:
            yield from _walk(c)


def split_conjuncts(expr: Expr) -> list[Expr]:
    """Top-level AND terms (nested ANDs flattened); skipping and pruning treat them independently."""
    if isinstance(expr, And):
        out: list[Expr] = []
        for c in expr.children:
            out.extend(split_conjuncts(c))
        return out
    if isinstance(expr, AlwaysTrue):
        return []
    return [expr]


def conjunction(exprs: Iterable[Expr]) -> Expr:
    """AND of the given terms, simplified for 0/1 terms."""
    items = [e for e in exprs if not isinstance(e, AlwaysTrue)]
    if not items:
        return AlwaysTrue()
    return items[0] if len(items) == 1 else And(*items)


def _resolve(schema: StructType, name: str) -> tuple[tuple[str, ...], DataType]:
    """Column path + Delta type of a filter column; a dotted name is nested only if no top-level match."""
    if schema.has(name):
        f = schema.field(name)
        return (f.name,), f.type
    if "." in name:
        parts = name.split(".")
        struct: DataType = schema
        path: list[str] = []
        for part in parts:
            if not isinstance(struct, StructType) or not struct.has(part):
                break
            f = struct.field(part)
            path.append(f.name)
            struct = f.type
        else:
            return tuple(path), struct
    raise InvalidFilterError(f'Filters include columns that are not in table schema: ["{name}"] '
                             f"(filter column {name!r} is not in the table schema; columns: {schema.names})")


# ----------------------------------------------------------------------------- value coercion
_INT_RANGES = {"byte": 8, "short": 16, "integer": 32, "long": 64}


def _parse_datetime(s: str) -> dt.datetime:
    text = s.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    return parse_datetime(text)


def _encode_value(value: Any) -> str:
    """deltalake's `encode_partition_value`: how a typed value is compared against a string column."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("unicode_escape", "backslashreplace")
    if isinstance(value, (int, float, decimal.Decimal)):
        return str(value)
    raise InvalidFilterError(f"cannot use {value!r} as a filter value for a string column")


def coerce_literal(value: Any, dtype: DataType, column: str = "?") -> Literal:
    """A filter value as a Literal typed for the column (deltalake rules: strings are parsed).

    Raises InvalidFilterError when the value cannot represent a value of that type.
    """
    if value is None:
        return Literal(None, _arrow_or_none(dtype))
    if hasattr(value, "item") and not isinstance(value, (str, bytes)) and type(value).__module__ == "numpy":
        value = value.item()
    try:
        return _coerce(value, dtype)
    except InvalidFilterError:
        raise
    except (ValueError, TypeError, ArithmeticError, decimal.InvalidOperation) as e:
        raise InvalidFilterError(f"cannot use {value!r} as a value of column {column!r} ({_type_str(dtype)}): {e}") \
            from e


def _type_str(dtype: DataType) -> str:
    return dtype.to_json() if not isinstance(dtype, StructType) else "struct"


def _arrow_or_none(dtype: DataType) -> pa.DataType | None:
    try:
        return to_arrow_type(dtype)
    except Exception:
        return None


def _coerce(value: Any, dtype: DataType) -> Literal:
    if isinstance(dtype, DecimalType):
        if isinstance(value, bool):
            raise ValueError("boolean for a decimal column")
        if isinstance(value, float):
            value = repr(value)
        d = decimal.Decimal(value.strip() if isinstance(value, str) else value)
        if not d.is_finite():
            raise ValueError("not a finite decimal")
        exponent = int(d.as_tuple().exponent)
        scale = max(dtype.scale, -exponent)  # a finer literal keeps its digits: no rounding of bounds
        int_digits = max(0, len(d.as_tuple().digits) + exponent)
        precision = max(dtype.precision - dtype.scale, int_digits) + scale
        if precision > 38:
            raise ValueError("decimal literal needs more than 38 digits")
        return Literal(d, pa.decimal128(precision, scale))
    if not isinstance(dtype, PrimitiveType):
        raise InvalidFilterError(f"cannot compare a {_type_str(dtype)} column with a literal")
    name = dtype.name
    if name == "string":
        return Literal(value if isinstance(value, str) else _encode_value(value), pa.string())
    if name in _INT_RANGES:
        if isinstance(value, bool):
            raise ValueError("boolean for an integer column")
        if isinstance(value, str):
            value = int(value.strip())
        if isinstance(value, float):
            if value.is_integer():
                value = int(value)
            else:  # a fractional bound on an integer column: compare as double (pyarrow does the same)
                return Literal(value, pa.float64())
        if isinstance(value, decimal.Decimal):
            if value != value.to_integral_value():
                raise ValueError("fractional decimal for an integer column")
            value = int(value)
        if not isinstance(value, int):
            raise TypeError(f"expected an integer, got {type(value).__name__}")
        bits = _INT_RANGES[name]
        if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            return Literal(value, to_arrow_type(dtype))
        if -(2**63) <= value < 2**63:  # out of the column's range: still a meaningful bound
            return Literal(value, pa.int64())
        raise ValueError("integer out of range")
    if name in ("float", "double"):
        if isinstance(value, bool):
            raise ValueError("boolean for a floating point column")
        if isinstance(value, str):
            value = float(value.strip())
        if not isinstance(value, (int, float, decimal.Decimal)):
            raise TypeError(f"expected a number, got {type(value).__name__}")
        # deltalake parses the value as the column's type, so a `float` column compares with float32(v)
        return Literal(float(value), pa.float64() if name == "double" else pa.float32())
    if name == "boolean":
        if isinstance(value, str):
            low = value.strip().lower()
            if low not in ("true", "false"):
                raise ValueError("expected 'true' or 'false'")
            value = low == "true"
        if not isinstance(value, bool):
            raise TypeError(f"expected a boolean, got {type(value).__name__}")
        return Literal(value, pa.bool_())
    if name == "date":
        if isinstance(value, str):
            text = value.strip()
            try:
                value = dt.date.fromisoformat(text)
            except ValueError:
                ts = _parse_datetime(text)
                if ts.time() != dt.time(0) or ts.tzinfo is not None:
                    raise ValueError("a date filter value must not carry a time of day") from None
                value = ts.date()
        if isinstance(value, dt.datetime):
            if value.time() != dt.time(0):
                raise ValueError("a date filter value must not carry a time of day")
            value = value.date()
        if not isinstance(value, dt.date):
            raise TypeError(f"expected a date, got {type(value).__name__}")
        return Literal(value, pa.date32())
    if name in ("timestamp", "timestamp_ntz"):
        if isinstance(value, str):
            value = _parse_datetime(value)
        elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = dt.datetime(value.year, value.month, value.day)
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a timestamp, got {type(value).__name__}")
        if name == "timestamp":
            # naive values are UTC (deltalake / the protocol's recommended partition serialization)
            value = value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None \
                else value.astimezone(dt.timezone.utc)
        elif value.tzinfo is not None:
            raise ValueError("a timestamp_ntz filter value must not carry a time zone")
        return Literal(value, to_arrow_type(dtype))
    if name == "binary":
        if isinstance(value, str):
            try:
                value = value.encode("latin-1")
            except UnicodeEncodeError:
                value = value.encode("utf-8")
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"expected bytes, got {type(value).__name__}")
        return Literal(bytes(value), pa.binary())
    raise InvalidFilterError(f"filters on {name} columns are not supported")


# ----------------------------------------------------------------------------- from_dnf
def from_dnf(
    filters: Any, schema: StructType, *, empty_string_is_null: bool = True, not_in_keeps_nulls: bool = False
) -> Expr:
    """deltalake tuple filters -> Expr.

    `[("a", op, v), ...]` is an AND; `[[...], [...]]` an OR of ANDs. Ops: = == != < <= > >= in, not in.
    String values are parsed against the column's Delta type. Following deltalake's partition
    filters, `""` (or None) means NULL: `= ""` is IS NULL, `!= ""` IS NOT NULL, and inside
    `in`/`not in` lists it is a SQL NULL element. Pass `empty_string_is_null=False` for pyarrow's
    `filters_to_expression` semantics, where `""` is the empty string; with `not_in_keeps_nulls`
    `not in` also keeps null rows, as pyarrow's `~isin` does (deltalake's row filters).
    """
    if filters is None:
        return AlwaysTrue()
    if isinstance(filters, tuple) and len(filters) == 3 and isinstance(filters[0], str):
        filters = [filters]
    if not isinstance(filters, (list, tuple)):
        raise InvalidFilterError(f"filters must be a list of tuples or a list of lists, got {type(filters).__name__}")
    if not filters:
        return AlwaysTrue()
    if all(isinstance(c, list) for c in filters):
        groups = list(filters)
    elif all(isinstance(c, tuple) for c in filters):
        groups = [list(filters)]
    else:
        raise InvalidFilterError("filters must be a list of (column, op, value) tuples, or a list of such lists")
    disjuncts: list[Expr] = []
    for group in groups:
        if not group:
            raise InvalidFilterError("empty conjunction in filters")
        disjuncts.append(conjunction(_one_filter(t, schema, empty_string_is_null, not_in_keeps_nulls)
                                     for t in group))
    return disjuncts[0] if len(disjuncts) == 1 else Or(*disjuncts)


def _is_null_value(v: Any, empty_string_is_null: bool) -> bool:
    return v is None or (empty_string_is_null and isinstance(v, str) and v == "")


def _one_filter(t: Any, schema: StructType, empty_string_is_null: bool, not_in_keeps_nulls: bool = False) -> Expr:
    if not isinstance(t, tuple) or len(t) != 3 or not isinstance(t[0], str) or not isinstance(t[1], str):
        raise InvalidFilterError(f"a filter must be a (column, op, value) tuple, got {t!r}")
    name, op, value = t
    path, dtype = _resolve(schema, name)
    col = Column(path)
    op = op.strip().lower()
    if op in ("in", "not in"):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple, set, frozenset)):
            raise InvalidFilterError(f"{op!r} needs a list, set or tuple of values, got {value!r}")
        lits = [Literal(None) if _is_null_value(v, empty_string_is_null) else coerce_literal(v, dtype, name)
                for v in value]
        vtype = next((lit.arrow_type for lit in lits if lit.value is not None), None)
        if any(lit.arrow_type not in (None, vtype) for lit in lits if lit.value is not None):
            vtype = None  # mixed literal types (e.g. int + fractional): let Arrow find the common type
        expr: Expr = In(col, tuple(lit.value for lit in lits), negated=(op == "not in"), value_type=vtype)
        if op == "not in" and not_in_keeps_nulls and not any(lit.value is None for lit in lits):
            expr = Or(expr, IsNull(col))
        return expr
    if op == "==":
        op = "="
    if op not in COMPARISON_OPS:
        raise InvalidFilterError(f'"{t[1]}" is not a valid operator in predicates. '
                                 f"(unsupported filter operator {t[1]!r} in {t!r})")
    if _is_null_value(value, empty_string_is_null):
        if op == "=":
            return IsNull(col)
        if op == "!=":
            return IsNull(col, negated=True)
        return Comparison(op, col, Literal(None, _arrow_or_none(dtype)))  # SQL: never true
    return Comparison(op, col, coerce_literal(value, dtype, name))


# ----------------------------------------------------------------------------- to_pyarrow
def _column_types(schema: StructType | None) -> dict[tuple[str, ...], pa.DataType]:
    out: dict[tuple[str, ...], pa.DataType] = {}
    if schema is None:
        return out

    def walk(struct: StructType, prefix: tuple[str, ...]) -> None:
        for f in struct.fields:
            p = (*prefix, f.name)
            t = _arrow_or_none(f.type)
            if t is not None:
                out[p] = t
            if isinstance(f.type, StructType):
                walk(f.type, p)

    walk(schema, ())
    return out


def to_pyarrow(expr: Expr, schema: StructType | None = None) -> pc.Expression:
    """The expression as a pyarrow filter with the same SQL semantics (columns by logical name)."""
    return arrow_expression(expr, _column_types(schema))


def _operand(o: Operand, hint: pa.DataType | None) -> pc.Expression:
    if isinstance(o, Column):
        return pc.field(*o.path)
    return pc.scalar(o.to_scalar(hint))


def arrow_expression(e: Expr, types: dict[tuple[str, ...], pa.DataType]) -> pc.Expression:
    """`to_pyarrow` with the column types already resolved (skipping builds them once for many files)."""
    if isinstance(e, AlwaysTrue):
        return pc.scalar(True)
    if isinstance(e, AlwaysFalse):
        return pc.scalar(False)
    if isinstance(e, Column):
        return pc.field(*e.path)
    if isinstance(e, Literal):
        return pc.scalar(e.to_scalar())
    if isinstance(e, Comparison):
        lh = types.get(e.right.path) if isinstance(e.right, Column) else None
        rh = types.get(e.left.path) if isinstance(e.left, Column) else None
        return _PC_OPS[e.op](_operand(e.left, lh), _operand(e.right, rh))
    if isinstance(e, IsNull):
        f = pc.field(*e.column.path)
        return f.is_valid() if e.negated else f.is_null()
    if isinstance(e, In):
        f = pc.field(*e.column.path)
        nonnull = [v for v in e.values if v is not None]
        vtype = e.value_type or types.get(e.column.path)
        try:
            vs = pa.array(nonnull, type=vtype) if vtype is not None else pa.array(nonnull)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            vs = pa.array(nonnull)
        null = pc.scalar(pa.scalar(None, pa.bool_()))
        if not nonnull:  # x IN () is FALSE for non-null x; with a NULL element, NULL
            base = pc.if_else(f.is_valid(), pc.scalar(False), null) if len(e.values) == 0 else \
                pc.if_else(f.is_valid(), null, null)
        else:
            hit = pc.is_in(f, value_set=vs, skip_nulls=True)
            if len(nonnull) != len(e.values):  # NULL in the list: no match is NULL, not FALSE
                base = pc.if_else(hit, pc.scalar(True), null)
            else:
                base = pc.if_else(f.is_valid(), hit, null)
        return ~base if e.negated else base
    if isinstance(e, GeoIntersects):
        from ...geo.bbox import row_filter

        return row_filter(pc.field(*e.column.path), e.box)
    if isinstance(e, Not):
        return ~arrow_expression(e.child, types)
    if isinstance(e, And):
        if not e.children:
            return pc.scalar(True)
        out = arrow_expression(e.children[0], types)
        for c in e.children[1:]:
            out = out & arrow_expression(c, types)
        return out
    if isinstance(e, Or):
        if not e.children:
            return pc.scalar(False)
        out = arrow_expression(e.children[0], types)
        for c in e.children[1:]:
            out = out | arrow_expression(c, types)
        return out
    raise InvalidFilterError(f"not a predicate: {e!r}")
