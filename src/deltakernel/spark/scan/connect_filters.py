"""Spark Connect Columns as Spark SQL text, and filter conditions as kernel predicates (client-side skipping).

A Connect `Column` is an unresolved expression tree built on the client (`pyspark.sql.connect.expressions`);
`expression_sql` prints it as Spark SQL (what a classic session reads from the analyzed plan: DML conditions,
SET values, history's operationParameters). `condition_predicate` turns that text (or a string condition) into a
kernel predicate through the kernel's SQL front end, which accepts only exact forms (comparisons, AND/OR/NOT,
IN, IS [NOT] NULL, ranges, casts of literals): anything else (UDFs, functions of columns - partition columns
included: `upper(part) = 'P1'`, `substr(part, 2) = '1'`, `part LIKE '%1'`) gives None - no skipping by it, never a
wrong answer (Spark still applies the whole condition). A string column compared with a number (`part = 1`) gives
None too: Spark compares those as numbers ('01' = 1), the kernel would compare strings.
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import math
import re
from typing import Any

from ...kernel.schema.types import StructType

_log = logging.getLogger(__name__)

_INFIX = {"==": "=", "=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "!=": "<>", "<>": "<>",
          "<=>": "<=>", "and": "AND", "or": "OR", "+": "+", "-": "-", "*": "*", "/": "/", "%": "%", "&": "&",
          "|": "|", "^": "^", "rlike": "RLIKE", "like": "LIKE", "ilike": "ILIKE"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def condition_predicate(condition: Any, schema: StructType) -> Any:
    """The kernel predicate of `condition` (SQL text or a Connect Column) over `schema`, or None."""
    from ...kernel.expressions import sql

    text = condition if isinstance(condition, str) else column_sql(condition)
    if not text:
        return None
    try:
        return skipping_predicate(sql.parse_sql(text), schema)
    except Exception:  # unknown columns (the frame was joined / renamed), syntax the kernel does not parse
        return None


def conjunct_predicates(column: Any, resolve: Any, schema: StructType) -> list[Any]:
    """Kernel predicates of the conjuncts of a Connect Column whose every column reference `resolve(parts,
    plan_id)` maps to a column path of `schema` (a conjunct with any other reference, or no exact kernel form,
    is left out: Spark still applies it)."""
    from ...kernel.expressions import sql

    refs: list[tuple[tuple[str, ...], int | None]] = []
    expr = getattr(column, "_expr", None)
    if expr is None:
        return []
    try:
        text = _sql(expr, True, refs)
        tree = sql.parse_sql(text)
    except _NoSql:
        return []
    except Exception as e:  # syntax the kernel does not read, an expression class of another pyspark
        _log.debug("deltakernel: no predicate for %r: %s", expr, e)
        return []
    out = []
    for conjunct in sql.conjuncts(tree):
        try:
            mapped = _map_columns(conjunct, refs, resolve)
            pred = skipping_predicate(mapped, schema) if mapped is not None else None
        except Exception:  # an unknown column (resolved elsewhere in the plan)
            pred = None
        if pred is not None:
            out.append(pred)
    return out


def conjunct_texts(column: Any, resolve: Any) -> list[str]:
    """Spark SQL text of the conjuncts of a Connect Column whose every column reference `resolve(parts, plan_id)`
    maps to a one-part name, each reference written as that name: the condition moved onto the relation that
    name belongs to (`connect_plan.RoutedQuery`: a SQL statement's output). A conjunct with anything else - a
    reference not resolved, a struct field, a subquery, a parameter, an aggregate or window function - is left
    out (Spark still applies the whole condition where the user put it)."""
    import sqlglot
    from sqlglot import exp

    from ...operations.sql_statement import has_subquery, sql_text

    refs: list[tuple[tuple[str, ...], int | None]] = []
    expr = getattr(column, "_expr", None)
    if expr is None:
        return []
    try:
        tree = sqlglot.parse_one(_sql(expr, True, refs), read="spark")
    except _NoSql:
        return []
    except Exception as e:  # text sqlglot does not read, an expression class of another pyspark
        _log.debug("deltakernel: no SQL conjuncts for %r: %s", expr, e)
        return []
    conjuncts = list(tree.flatten()) if isinstance(tree, exp.And) else [tree]
    out: list[str] = []
    for c in conjuncts:
        while isinstance(c, exp.Paren):
            c = c.this
        if isinstance(c, exp.And):  # a parenthesized AND: its parts
            conjuncts.extend(c.flatten())
            continue
        if has_subquery(c) or c.find(exp.Placeholder, exp.Parameter, exp.AggFunc, exp.Window, exp.Star,
                                                    exp.Lambda) is not None:
            continue
        mapped = c.copy()
        ok = True
        for col in list(mapped.find_all(exp.Column)):
            parts = tuple(p.name for p in col.parts)
            if len(parts) == 1 and parts[0].startswith(_REF):
                ref_parts, plan_id = refs[int(parts[0][len(_REF):])]
                target = resolve(ref_parts, plan_id)
            else:
                target = resolve(parts, None)
            if target is None or len(target) != 1:
                ok = False
                break
            col.replace(exp.column(exp.to_identifier(target[0], quoted=True)))
        if ok and mapped.find(exp.Column) is not None:
            text = sql_text(mapped)
            if text not in out:
                out.append(text)
    return out


def skipping_predicate(conjunct: Any, schema: StructType) -> Any:
    """A kernel predicate every row satisfying `conjunct` (kernel SQL AST) satisfies: the exact one, or for
    `col LIKE 'prefix...'` the range `[prefix, next prefix)` (what the classic file index skips with)."""
    from ...kernel.expressions import sql

    if _string_against_other(conjunct, schema):
        return None
    pred = sql.to_predicate(conjunct, schema)
    if pred is not None or not isinstance(conjunct, sql.Like) or conjunct.negated:
        return pred
    pattern = conjunct.pattern
    if not isinstance(conjunct.operand, sql.Col) or not isinstance(pattern, sql.Lit) or \
            not isinstance(pattern.value, str):
        return None
    from ...kernel.expressions import predicate as ex
    from .catalyst import like_prefix, next_prefix, string_type

    prefix = like_prefix(pattern.value, "\\")
    path = conjunct.operand.path
    field = next((f for f in schema.fields if len(path) == 1 and f.name.lower() == path[0].lower()), None)
    if not prefix or field is None or getattr(field.type, "name", None) != "string":
        return None
    column = ex.Column((field.name,))
    lower = ex.Comparison(">=", column, ex.Literal(prefix, string_type()))
    upper = next_prefix(prefix)
    return lower if upper is None else ex.And(lower, ex.Comparison("<", column, ex.Literal(upper, string_type())))


def _string_against_other(node: Any, schema: StructType) -> bool:
    """Does a comparison (=, <, IN, BETWEEN...) set a string column against anything but a string literal or a
    column? Spark then compares as the other side's type (`part = 1` casts `part`: '01' matches), the kernel's
    skipping would compare strings: unsound, so such a conjunct gives no predicate (partition columns included)."""
    from ...kernel.expressions.sql import ast as A

    stack = [node]
    while stack:
        n = stack.pop()
        operands: list[Any] = []
        if isinstance(n, A.Binary) and n.op in A.COMPARISONS:
            operands = [n.left, n.right]
        elif isinstance(n, A.InList):
            operands = [n.operand, *n.values]
        elif isinstance(n, A.Between):
            operands = [n.operand, n.low, n.high]
        if any(isinstance(o, A.Col) and _is_string(o.path, schema) for o in operands) and not all(
                isinstance(o, A.Col) or (isinstance(o, A.Lit) and (o.value is None or isinstance(o.value, str)))
                for o in operands):
            return True
        for value in vars(n).values() if hasattr(n, "__dataclass_fields__") else ():
            if isinstance(value, tuple):
                stack.extend(v for v in value if hasattr(v, "__dataclass_fields__"))
            elif hasattr(value, "__dataclass_fields__"):
                stack.append(value)
    return False


def _is_string(path: tuple[str, ...], schema: Any) -> bool:
    """Is the column at `path` (case-insensitive, through structs) a string column of `schema`?"""
    typ: Any = schema
    for part in path:
        fields = getattr(typ, "fields", None)
        field = next((f for f in fields or [] if f.name.lower() == part.lower()), None)
        if field is None:
            return False
        typ = field.type
    return getattr(typ, "name", None) == "string"


def _map_columns(node: Any, refs: list[tuple[tuple[str, ...], int | None]], resolve: Any) -> Any:
    """`node` (kernel SQL AST) with each column path replaced by the Delta column it reads, or None."""
    import dataclasses

    from ...kernel.expressions import sql

    if isinstance(node, sql.Col):
        path = node.path
        if path and path[0].startswith(_REF):
            parts, plan_id = refs[int(path[0][len(_REF):])]
            target = resolve(parts, plan_id)
            return None if target is None else sql.Col((*target, *path[1:]))
        target = resolve(path, None)
        return None if target is None else sql.Col(tuple(target))
    if isinstance(node, tuple):
        items = [_map_columns(x, refs, resolve) for x in node]
        return None if any(i is None and x is not None for i, x in zip(items, node)) else tuple(items)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, (tuple, sql.Col)) or (dataclasses.is_dataclass(value) and
                                                       not isinstance(value, type)):
                mapped = _map_columns(value, refs, resolve)
                if mapped is None:
                    return None
                changes[f.name] = mapped
        return dataclasses.replace(node, **changes)
    return node


_REF = "__dk_ref_"
_NONDETERMINISTIC = {"rand", "randn", "random", "uuid", "shuffle", "monotonically_increasing_id",
                     "spark_partition_id", "input_file_name", "input_file_block_start", "input_file_block_length",
                     "current_timestamp", "now", "localtimestamp", "randstr", "uniform", "try_reflect", "reflect",
                     "java_method"}
_NONDETERMINISTIC_RE = re.compile(r"\b(" + "|".join(sorted(_NONDETERMINISTIC)) + r")\s*\(", re.I)
# functions a select list may hold without changing which rows reach a scan below it (no aggregates, windows,
# generators that add rows are fine too but unknown names - a UDAF registered by name - are not)
_SCALAR = set(_INFIX) | {
    "not", "!", "negative", "positive", "isnull", "isnotnull", "in", "when", "coalesce", "nvl", "nvl2", "ifnull",
    "nullif", "if", "isnan", "nanvl", "abs", "round", "bround", "floor", "ceil", "ceiling", "sqrt", "cbrt", "exp",
    "expm1", "log", "ln", "log10", "log2", "log1p", "pow", "power", "pmod", "mod", "greatest", "least", "signum",
    "sign", "sin", "cos", "tan", "degrees", "radians", "upper", "lower", "ucase", "lcase", "initcap", "length",
    "char_length", "character_length", "octet_length", "bit_length", "trim", "ltrim", "rtrim", "btrim", "lpad",
    "rpad", "concat", "concat_ws", "substring", "substr", "left", "right", "replace", "translate", "instr",
    "locate", "position", "split", "split_part", "regexp_replace", "regexp_extract", "regexp_like", "repeat",
    "reverse", "startswith", "endswith", "contains", "format_string", "printf", "ascii", "chr", "base64",
    "unbase64", "hex", "unhex", "md5", "sha1", "sha2", "sha", "crc32", "hash", "xxhash64", "year", "month", "day",
    "dayofmonth", "dayofweek", "dayofyear", "weekofyear", "quarter", "hour", "minute", "second", "date_add",
    "date_sub", "datediff", "add_months", "months_between", "to_date", "to_timestamp", "date_format",
    "date_trunc", "trunc", "last_day", "next_day", "unix_timestamp", "from_unixtime", "make_date",
    "to_utc_timestamp", "from_utc_timestamp", "struct", "named_struct", "array", "map", "create_map",
    "element_at", "size", "array_contains", "get_field", "getfield", "try_element_at", "cast", "try_cast",
    "bitwise_not", "~", "shiftleft", "shiftright", "typeof", "equal_null", "between"}


def identifier_parts(text: str) -> tuple[str, ...] | None:
    """Connect's unparsed identifier (`a`, `a.b`, `` `a b`.c ``) as parts; None for anything odd."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == "`":
            j = i + 1
            buf = []
            while j < n:
                if text[j] == "`":
                    if j + 1 < n and text[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            if j >= n:
                return None
            parts.append("".join(buf))
            i = j + 1
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            part = text[i:j]
            if not part or "`" in part:
                return None
            parts.append(part)
            i = j
        if i < n:
            if text[i] != ".":
                return None
            i += 1
            if i == n:
                return None
    return tuple(parts) or None


def _expr_children(e: Any) -> list[Any]:
    from pyspark.sql.connect import expressions as X

    if isinstance(e, X.ColumnAlias):
        return [e._child]
    if isinstance(e, X.CastExpression):
        return [e._expr]
    if isinstance(e, X.UnresolvedFunction):
        return list(e._args)
    if isinstance(e, X.CaseWhen):
        return [x for pair in e._branches for x in pair] + ([e._else_value] if e._else_value is not None else [])
    return list(getattr(e, "children", None) or [])


def _every_node(expr: Any, sql_ok: Any, node_ok: Any) -> bool:
    """Whether every node of a Connect expression passes: SQL text by `sql_ok(text)`, other nodes by
    `node_ok(node)` (True / False, or None: accepted only when it is a plain column, literal, alias, cast, CASE,
    field access or star)."""
    from pyspark.sql.connect import expressions as X

    plain = (X.ColumnReference, X.LiteralExpression, X.ColumnAlias, X.CastExpression, X.CaseWhen,
             X.UnresolvedExtractValue, X.UnresolvedStar)
    stack = [getattr(expr, "_expr", expr)]
    while stack:
        e = stack.pop()
        if isinstance(e, X.SQLExpression):
            if not sql_ok(e._expr):
                return False
            continue
        verdict = node_ok(e)
        if not (isinstance(e, plain) if verdict is None else verdict):
            return False
        stack.extend(_expr_children(e))
    return True


def deterministic(column: Any) -> bool:
    """Does a filter condition give the same answer for a row wherever it runs (no rand(), no
    non-deterministic UDF, no expression this module does not know)?"""
    from pyspark.sql.connect import expressions as X

    def node_ok(e: Any) -> bool | None:
        if isinstance(e, X.UnresolvedFunction):
            return e._name.lower() not in _NONDETERMINISTIC
        if isinstance(e, X.CommonInlineUserDefinedFunction):
            return bool(e._deterministic)
        return None

    return _every_node(column, lambda text: not _NONDETERMINISTIC_RE.search(text), node_ok)


def row_wise(expr: Any) -> bool:
    """Is a select-list expression computed from its row alone (known scalar functions: a filter on the
    columns it passes through may then run below it)?"""
    from pyspark.sql.connect import expressions as X

    def node_ok(e: Any) -> bool | None:
        if isinstance(e, X.UnresolvedFunction):
            return e._name.lower() in _SCALAR and not e._is_distinct
        return None

    return _every_node(expr, _sql_row_wise, node_ok)


def _sql_row_wise(text: str) -> bool:
    try:
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(text, read="spark")
    except Exception:
        return False
    for node in tree.walk():
        if isinstance(node, (exp.AggFunc, exp.Window, exp.Anonymous, exp.Subquery, exp.Select)):
            return False
        if isinstance(node, exp.Func) and (node.sql_name().lower() in _NONDETERMINISTIC or
                                           type(node).__name__ in ("Rand", "Randn", "Uuid")):
            return False
    return True


def column_sql(col: Any) -> str | None:
    """Spark SQL text of a Connect Column filtering the frame it was made from (`df["c"]` allowed)."""
    return expression_sql(col, bound_columns=True)


def expression_sql(col: Any, *, bound_columns: bool = False) -> str | None:
    """Spark SQL text of a Connect Column, or None (UDFs, lambdas, window functions, metadata columns...).
    Function calls print as `name(args)`: Connect sends them to Spark by that same name, so the text means what
    the Column means (skipping then keeps only what the kernel's predicate model reads exactly). A column bound
    to one frame (`df["c"]`) has no SQL name unless `bound_columns` (the Column filters that frame itself)."""
    expr = getattr(col, "_expr", None)
    if expr is None:
        return None
    try:
        return _sql(expr, bound_columns)
    except _NoSql:
        return None
    except Exception as e:  # an expression class of another pyspark version
        _log.debug("deltakernel: no SQL text for %r: %s", expr, e)
        return None


class _NoSql(Exception):
    pass


def _sql(e: Any, bound: bool, refs: list[Any] | None = None) -> str:
    """`refs` given: column references print as placeholders `__dk_ref_<i>` (refs[i] = (parts, plan id))."""
    from pyspark.sql.connect import expressions as X

    if isinstance(e, X.ColumnAlias):
        return _sql(e._child, bound, refs)
    if isinstance(e, X.ColumnReference):
        if e._is_metadata_column or (e._plan_id is not None and not bound):
            raise _NoSql
        if refs is not None:
            parts = identifier_parts(e._unparsed_identifier)
            if parts is None or parts[-1] == "*":
                raise _NoSql
            refs.append((parts, e._plan_id))
            return f"`{_REF}{len(refs) - 1}`"
        return _identifier(e._unparsed_identifier)
    if isinstance(e, X.LiteralExpression):
        return _literal(e._value, e._dataType)
    if isinstance(e, X.SQLExpression):
        return f"({e._expr})"
    if isinstance(e, X.CastExpression):
        t = e._data_type if isinstance(e._data_type, str) else e._data_type.simpleString()
        return f"{'TRY_CAST' if e._eval_mode == 'try' else 'CAST'}({_sql(e._expr, bound, refs)} AS {t})"
    if isinstance(e, X.CaseWhen):
        parts = [f"WHEN {_sql(c, bound, refs)} THEN {_sql(v, bound, refs)}" for c, v in e._branches]
        tail = f" ELSE {_sql(e._else_value, bound, refs)}" if e._else_value is not None else ""
        return f"(CASE {' '.join(parts)}{tail} END)"
    if isinstance(e, X.UnresolvedFunction) and not e._is_distinct:
        return _function(e._name, e._args, bound, refs)
    raise _NoSql


def _function(name: str, args: list[Any], bound: bool, refs: list[Any] | None = None) -> str:
    low = name.lower()
    a = [_sql(x, bound, refs) for x in args]
    if low in _INFIX and len(a) == 2:
        return f"({a[0]} {_INFIX[low]} {a[1]})"
    if low in ("not", "!") and len(a) == 1:
        return f"(NOT {a[0]})"
    if low == "negative" and len(a) == 1:
        return f"(- {a[0]})"
    if low == "isnull" and len(a) == 1:
        return f"({a[0]} IS NULL)"
    if low == "isnotnull" and len(a) == 1:
        return f"({a[0]} IS NOT NULL)"
    if low == "startswith" and len(args) == 2 and _is_string_literal(args[1]) and \
            not set(args[1]._value) & set("%_\\'"):  # a plain prefix: the same as LIKE 'prefix%'
        return f"({a[0]} LIKE '{args[1]._value}%')"
    if low == "in" and len(a) >= 2:
        return f"({a[0]} IN ({', '.join(a[1:])}))"
    if low == "when":  # CaseWhen sends itself as `when(c1, v1, ..., else)`
        pairs = [f"WHEN {a[i]} THEN {a[i + 1]}" for i in range(0, len(a) - 1, 2)]
        tail = f" ELSE {a[-1]}" if len(a) % 2 else ""
        return f"(CASE {' '.join(pairs)}{tail} END)"
    if _NAME.match(name):
        return f"{name}({', '.join(a)})"
    raise _NoSql


def _is_string_literal(e: Any) -> bool:
    from pyspark.sql.connect import expressions as X

    return isinstance(e, X.LiteralExpression) and isinstance(e._value, str)


def _identifier(name: str) -> str:
    """Connect's unparsed identifier: `a`, `a.b`, `` `a b` ``; keep its quoting, reject anything odd."""
    if name == "*" or name.endswith(".*"):
        raise _NoSql
    return name


def _literal(value: Any, data_type: Any) -> str:
    if value is None:
        return "NULL"
    t = type(data_type).__name__
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if t in ("ByteType", "ShortType", "IntegerType", "LongType") and isinstance(value, int):
        return str(value) + ("L" if t == "LongType" and not -(2**31) <= value < 2**31 else "")
    if t in ("FloatType", "DoubleType") and isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _NoSql
        return f"CAST({value!r} AS {'DOUBLE' if t == 'DoubleType' else 'FLOAT'})"
    if t == "DecimalType" and isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS DECIMAL({data_type.precision},{data_type.scale}))"
    if t == "StringType" and isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if t == "DateType" and isinstance(value, int):  # Connect keeps dates as days since the epoch
        return f"DATE '{(dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat()}'"
    if t in ("TimestampType", "TimestampNTZType") and isinstance(value, int):  # microseconds since the epoch
        instant = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=value)
        text = instant.strftime("%Y-%m-%d %H:%M:%S.%f")
        return f"TIMESTAMP '{text}Z'" if t == "TimestampType" else f"TIMESTAMP_NTZ '{text}'"
    raise _NoSql


__all__ = ["column_sql", "condition_predicate", "conjunct_predicates", "conjunct_texts", "deterministic",
           "expression_sql", "identifier_parts", "row_wise"]
