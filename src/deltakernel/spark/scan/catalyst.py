"""Spark's pushed-down filters (Catalyst expressions) as kernel predicates for file skipping.

`FileIndex.listFiles` receives the filters Spark's optimizer pushed to the scan, whatever the query's shape
(SQL, views, joins, DataFrame chains): analyzed Catalyst trees whose attributes are the scan's own columns.
All the trees of one scan are read in two py4j calls (`translate_all`: the filters become the children of one
`CreateArray` node - a container, never analysed nor evaluated - whose `toJSON` holds every tree: classes, child
positions, attribute names and types, literal text); only values JSON renders lossily (timestamps, binary,
`InSet`'s set; dates where the JVM's default time zone is not a fixed offset) are fetched from the node. A query
plans every scan through this, so each round trip saved is saved per scan and query (a round trip from a callback
is 0.3-3 ms on a loaded driver).

Translation gives `(predicate, exact)`:
- a predicate every matching row satisfies (never an approximation that could drop a matching file), or None
  when nothing useful is known. `LIKE 'ab%'` / `startswith` become the range `['ab', 'ac')`;
- `exact` when the predicate keeps exactly the rows Spark's filter keeps (SQL NULL semantics included).
  Spark does not re-apply partition filters after a file index lists files, so a partition filter is used
  alone only when exact; the caller evaluates inexact ones in the JVM.
Spark's semantics differ from Arrow's for float NaN (NaN = NaN, NaN is the largest value): on float and
double columns only `<`, `<=`, `=` / IN with non-NaN values are used, and never as exact.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...kernel.expressions import predicate as ex
from ...kernel.schema.types import DataType, DecimalType, PrimitiveType
from .jvm_refs import jclass, static

_PKG = "org.apache.spark.sql.catalyst.expressions."
_CMP = {"EqualTo": "=", "LessThan": "<", "LessThanOrEqual": "<=", "GreaterThan": ">", "GreaterThanOrEqual": ">="}
_EPOCH = dt.date(1970, 1, 1)
_UTC_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_INTEGRAL = ("byte", "short", "integer", "long")
_WIDER = {"byte": 0, "short": 1, "integer": 2, "long": 3}

# (attribute name, nested field names) -> (logical column path, Delta type), or None for other columns
Resolver = Callable[[str, tuple[str, ...]], "tuple[tuple[str, ...], DataType] | None"]


@dataclass
class Node:
    """One Catalyst node of a pushed filter; `path` locates it from the root for py4j fetches."""

    cls: str
    fields: dict[str, Any]
    children: list[Node] = field(default_factory=list)
    path: tuple[int, ...] = ()


def parse_json(text: str) -> Node:
    """The tree of `Expression.toJSON()` (a pre-order list; `num-children` children follow each node)."""
    flat = json.loads(text)
    pos = 0

    def build(path: tuple[int, ...]) -> Node:
        nonlocal pos
        raw = flat[pos]
        pos += 1
        node = Node(str(raw.get("class", "")).rsplit(".", 1)[-1], raw, [], path)
        for i in range(int(raw.get("num-children", 0))):
            node.children.append(build((*path, i)))
        return node

    return build(())


class _Translator:
    def __init__(self, root_obj: Any, resolve: Resolver, dates_from_text: bool = False) -> None:
        self.root_obj = root_obj
        self.resolve = resolve
        self.dates_from_text = dates_from_text  # a date literal's JSON text is its exact day (`_date_text`)

    # ------------------------------------------------------------------ py4j fetches
    def _obj(self, node: Node) -> Any:
        obj = self.root_obj
        for i in node.path:
            obj = obj.children().apply(i)
        return obj

    def literal(self, node: Node) -> tuple[bool, Any, str]:
        """(is a usable literal, Python value, Spark type name)."""
        if node.cls != "Literal":
            return False, None, ""
        dtype = node.fields.get("dataType")
        value = node.fields.get("value")
        if not isinstance(dtype, str):
            return False, None, ""
        if value is None:
            return True, None, dtype
        try:
            if dtype in _INTEGRAL:
                return True, int(value), dtype
            if dtype in ("double", "float"):
                f = float(value)
                return (f == f and f not in (float("inf"), float("-inf"))), f, dtype
            if dtype == "string":
                return True, str(value), dtype
            if dtype == "boolean":
                return True, str(value).lower() == "true", dtype
            if dtype.startswith("decimal"):
                return True, decimal.Decimal(str(value)), dtype
            if dtype == "date" and self.dates_from_text:
                day = _date_text(value)
                if day is not None:
                    return True, day, dtype
            if dtype in ("date", "timestamp", "timestamp_ntz", "binary"):
                return True, _internal(self._obj(node).value(), dtype), dtype
        except Exception:
            return False, None, ""
        return False, None, ""

    def column(self, node: Node) -> tuple[tuple[str, ...], DataType] | None:
        """The logical column a node reads: an attribute, nested struct fields, or a widening cast of one."""
        names: list[str] = []
        while node.cls == "GetStructField":
            name = node.fields.get("name")
            if not isinstance(name, str) or not node.children:
                return None
            names.insert(0, name)
            node = node.children[0]
        if node.cls == "Cast" and node.children and not names:
            inner = self.column(node.children[0])
            if inner is None or not _widening(inner[1], node.fields.get("dataType")):
                return None
            return inner
        if node.cls != "AttributeReference":
            return None
        name = node.fields.get("name")
        if not isinstance(name, str):
            return None
        return self.resolve(name, tuple(names))

    # ------------------------------------------------------------------ tree
    def translate(self, node: Node) -> tuple[ex.Expr | None, bool]:
        c = node.cls
        if c == "And":
            (a, ea), (b, eb) = (self.translate(n) for n in node.children)
            if a is None or b is None:
                return (a if b is None else b), False
            return ex.And(a, b), ea and eb
        if c == "Or":
            (a, ea), (b, eb) = (self.translate(n) for n in node.children)
            if a is None or b is None:
                return None, False
            return ex.Or(a, b), ea and eb
        if c == "Not":
            inner, exact = self.translate(node.children[0])
            return (ex.Not(inner), True) if inner is not None and exact else (None, False)
        if c in _CMP or c == "EqualNullSafe":
            return self.comparison(node)
        if c in ("IsNull", "IsNotNull"):
            col = self.column(node.children[0])
            if col is None:
                return None, False
            return ex.IsNull(ex.Column(col[0]), negated=(c == "IsNotNull")), True
        if c == "In":
            return self.in_list(node)
        if c == "InSet":
            return self.in_set(node)
        if c in ("StartsWith", "Like"):
            return self.prefix(node)
        if c == "Literal" and node.fields.get("dataType") == "boolean":
            ok, value, _ = self.literal(node)
            if ok and value is not None:
                return (ex.AlwaysTrue() if value else ex.AlwaysFalse()), True
            return None, False
        col = self.column(node)
        if col is not None and _type_name(col[1]) == "boolean":
            return ex.Comparison("=", ex.Column(col[0]), ex.Literal(True, _bool_type())), True
        return None, False

    def comparison(self, node: Node) -> tuple[ex.Expr | None, bool]:
        left, right = node.children
        op = _CMP.get(node.cls, "<=>")
        col, lit_node = self.column(left), right
        if col is None:
            col, lit_node = self.column(right), left
            op = ex.FLIPPED.get(op, op)
        if col is None:
            return None, False
        ok, value, _ = self.literal(lit_node)
        if not ok:
            return None, False
        path, dtype = col
        if op == "<=>":
            if value is None:
                return ex.IsNull(ex.Column(path)), True
            op, exact = "=", False  # <=> never yields NULL: not the same under NOT
        else:
            if value is None:
                return None, False  # NULL for every row: Spark keeps nothing; leave it to Spark
            exact = True
        if _type_name(dtype) in ("float", "double"):
            if op in (">", ">="):
                return None, False  # NaN rows satisfy these in Spark and show in no statistic
            exact = False
        try:
            lit = ex.coerce_literal(value, dtype, ".".join(path))
        except Exception:
            return None, False
        return ex.Comparison(op, ex.Column(path), lit), exact

    def in_list(self, node: Node) -> tuple[ex.Expr | None, bool]:
        col = self.column(node.children[0])
        if col is None:
            return None, False
        values = []
        for child in node.children[1:]:
            ok, value, _ = self.literal(child)
            if not ok:
                return None, False
            values.append(value)
        return self._in(col, values)

    def in_set(self, node: Node) -> tuple[ex.Expr | None, bool]:
        col = self.column(node.children[0])
        if col is None:
            return None, False
        name = _type_name(col[1])
        sep = "\u0001"
        try:
            obj = self._obj(node)
            n = int(obj.hset().size())
            text = str(obj.hset().mkString(sep)) if n else ""
            has_null = bool(obj.hasNull())
        except Exception:
            return None, False
        raw = text.split(sep) if n else []
        if len(raw) != n:
            return None, False  # a value holds the separator
        try:
            values = [_from_text(v, name) for v in raw]
        except Exception:
            return None, False
        return self._in(col, values + ([None] if has_null else []))

    def _in(self, col: tuple[tuple[str, ...], DataType], values: list[Any]) -> tuple[ex.Expr | None, bool]:
        path, dtype = col
        name = _type_name(dtype)
        if name in ("float", "double") and any(v is not None and v != v for v in values):
            return None, False
        try:
            coerced = [None if v is None else ex.coerce_literal(v, dtype, ".".join(path)) for v in values]
        except Exception:
            return None, False
        lits = [c for c in coerced if c is not None]
        vtype = lits[0].arrow_type if lits and all(x.arrow_type == lits[0].arrow_type for x in lits) else None
        pred = ex.In(ex.Column(path), tuple(None if c is None else c.value for c in coerced), value_type=vtype)
        return pred, name not in ("float", "double")

    def prefix(self, node: Node) -> tuple[ex.Expr | None, bool]:
        left, right = node.children
        col = self.column(left)
        ok, value, _ = self.literal(right)
        if col is None or not ok or not isinstance(value, str) or _type_name(col[1]) != "string":
            return None, False
        if node.cls == "Like":
            escape = node.fields.get("escapeChar")
            value = like_prefix(value, str(escape) if isinstance(escape, str) and escape else "\\")
            if value is None:
                return None, False
        if not value:
            return None, False
        path = col[0]
        lower = ex.Comparison(">=", ex.Column(path), ex.Literal(value, string_type()))
        upper = next_prefix(value)
        if upper is None:
            return lower, False
        return ex.And(lower, ex.Comparison("<", ex.Column(path), ex.Literal(upper, string_type()))), False


def translate(expr: Any, resolve: Resolver) -> tuple[ex.Expr | None, bool]:
    """(kernel predicate or None, exact) for one pushed Catalyst filter (a py4j JavaObject)."""
    try:
        root = parse_json(str(expr.toJSON()))
    except Exception:
        return None, False
    try:
        return _Translator(expr, resolve).translate(root)
    except Exception:
        return None, False


@dataclass
class Filters:
    """The pushed filters of one scan, translated (`translate_all`): `(predicate or None, exact)` per filter, in
    the Seq's order; `expression(i)` is the i-th filter's JVM object (fetched only when asked: two round trips)."""

    translated: list[tuple[ex.Expr | None, bool]]
    expression: Callable[[int], Any]


def translate_all(jvm: Any, filters: Any, resolve: Resolver) -> Filters:
    """Every Catalyst filter of a Scala `Seq[Expression]`, read in two py4j calls (the module docstring); when the
    batch cannot be read (a tree `toJSON` refuses), one filter at a time as `translate`."""
    try:
        array = jclass(jvm, _PKG + "CreateArray")(filters)
        root = parse_json(str(array.toJSON()))
    except Exception:
        exprs = [filters.apply(i) for i in range(int(filters.size()))]
        return Filters([translate(e, resolve) for e in exprs], exprs.__getitem__)
    translator = _Translator(array, resolve, dates_from_text=_fixed_default_zone(jvm))
    out: list[tuple[ex.Expr | None, bool]] = []
    for child in root.children:
        try:
            out.append(translator.translate(child))
        except Exception:
            out.append((None, False))
    return Filters(out, lambda i: array.children().apply(i))


_ZONES: dict[int, bool] = {}  # gateway client -> is the JVM's default time zone a fixed offset


def _fixed_default_zone(jvm: Any) -> bool:
    """Is the driver JVM's default time zone a fixed offset (asked once per gateway)? Spark versions that render a
    date literal's JSON through `java.sql.Date` print it in that zone: with a fixed offset the text is the day."""
    key = id(getattr(jvm, "_gateway_client", jvm))
    found = _ZONES.get(key)
    if found is None:
        try:
            found = bool(static(jvm, "java.time.ZoneId", "systemDefault")().getRules().isFixedOffset())
        except Exception:
            found = False
        _ZONES[key] = found
    return found


_DATE_TEXT = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def _date_text(value: Any) -> dt.date | None:
    """A date literal's JSON text as the date, for years 1600-9999 only: there every Spark version's rendering
    (proleptic `LocalDate`, or `java.sql.Date` in a fixed-offset zone - the Julian calendar ends in 1582) is the
    literal's exact day; None otherwise (the value is then fetched from the node)."""
    m = _DATE_TEXT.match(value) if isinstance(value, str) else None
    if m is None or int(m.group(1)) < 1600:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


# ----------------------------------------------------------------------------- helpers
def _type_name(dtype: DataType) -> str:
    if isinstance(dtype, DecimalType):
        return "decimal"
    return dtype.name if isinstance(dtype, PrimitiveType) else ""


def _bool_type() -> Any:
    import pyarrow as pa

    return pa.bool_()


def string_type() -> Any:
    import pyarrow as pa

    return pa.string()


def _widening(source: DataType, target: Any) -> bool:
    """A cast that keeps every value and its order (so a bound on the cast is a bound on the column)."""
    s = _type_name(source)
    if not isinstance(target, str):
        return False
    if s in _WIDER and target in _WIDER:
        return _WIDER[target] >= _WIDER[s]
    return (s in ("byte", "short", "integer") and target == "double") or (s == "float" and target == "double")


def _internal(value: Any, dtype: str) -> Any:
    """A literal's internal Spark value (days, microseconds, bytes) as a Python value."""
    if value is None:
        return None
    if dtype == "date":
        return _EPOCH + dt.timedelta(days=int(value))
    if dtype == "timestamp":
        return _UTC_EPOCH + dt.timedelta(microseconds=int(value))
    if dtype == "timestamp_ntz":
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value))
    if dtype == "binary":
        return bytes(value)
    raise ValueError(dtype)


def _from_text(text: str, dtype: str) -> Any:
    """An `InSet` element's `toString` (internal values: days, microseconds) as a Python value."""
    if dtype in _INTEGRAL:
        return int(text)
    if dtype in ("float", "double"):
        return float(text)
    if dtype == "string":
        return text
    if dtype == "boolean":
        return text == "true"
    if dtype == "decimal":
        return decimal.Decimal(text)
    if dtype in ("date", "timestamp", "timestamp_ntz"):
        return _internal(int(text), dtype)
    raise ValueError(f"no IN-set values of type {dtype}")


def like_prefix(pattern: str, escape: str) -> str | None:
    """The literal text before the first wildcard of a LIKE pattern (None for a malformed escape)."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == escape:
            if i + 1 >= len(pattern):
                return None
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            break
        out.append(ch)
        i += 1
    return "".join(out)


def next_prefix(prefix: str) -> str | None:
    """The smallest string above every string starting with `prefix` (code point order), if any."""
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        nxt = last + 1
        if 0xD800 <= nxt <= 0xDFFF:
            nxt = 0xE000
        if nxt <= 0x10FFFF:
            chars[-1] = chr(nxt)
            return "".join(chars)
        chars.pop()
    return None


__all__ = ["Filters", "Node", "Resolver", "parse_json", "translate", "translate_all"]
