"""What Spark's analysis of a Connect DataFrame over Delta tables depends on, as a key (issue 31: view shapes).

Why: a temporary view made from a DataFrame chain (`spark.table(t).withColumn(...).createOrReplaceTempView(v)`)
is, on a Connect session, a client-side plan the SQL router expands into each statement reading `v`. Such a
statement got no statement key (`sql/statement_keys.py`: "its output is not known without asking"), so it was
analysed eagerly (two round trips); and making the view again before each query (a notebook cell, a request
handler) sent Spark's copy again each time, where a view over a bare `load()` sends nothing. Both need to know
when two chains are the same for Spark: that is their logical plan, which the Connect client holds as Python
objects and serializes to a proto - so the key is that proto, with
- each Delta leaf (`connect_plan.DeltaScan`) replaced by what the analysis of a plan over it sees: the table,
  its schema, the row-tracking flag, a router predicate, and for Spark's copy of a view its version
  (`versions`) - never the file list planned for it;
- plan ids renumbered in the order met (a fresh DataFrame built by the same code gets new ids; columns bound with
  `df["c"]` refer to them), and call-site origins left out (they only shape error messages).
Only plans the key can vouch for get one: node kinds in `_NODES` (their proto is all their meaning), leaves that
are Delta tables, local data or ranges (never a named table or view whose definition may change elsewhere), no
subquery references, and every function a built-in sqlglot knows (a UDF registered by name can be registered
again with another signature; an inline Python UDF carries its definition in the proto and is fine). Anything
else: None (the caller analyses as before).
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from typing import Any

#: set while `plan_key` builds a plan's key (to whether versions count): a Delta leaf (`connect_plan.DeltaScan`)
#: then emits what analysis sees of it (`_key_relation`), not its files
KEYING: contextvars.ContextVar[bool | None] = contextvars.ContextVar("dk_connect_keying", default=None)

#: Connect plan node kinds whose proto is their whole meaning for analysis
_NODES = frozenset({"Filter", "Project", "WithColumns", "WithColumnsRenamed", "Drop", "SubqueryAlias", "Sort",
                    "Limit", "Offset", "Tail", "Deduplicate", "Aggregate", "Join", "SetOperation", "Hint",
                    "Repartition", "RepartitionByExpression", "Sample", "ToDF", "Unpivot"})
_LEAVES = frozenset({"LocalRelation", "Range"})
_OPERATOR = re.compile(r"^[^A-Za-z_]+$|^(and|or|not|in|isnull|isnotnull|like|ilike|rlike|between)$", re.I)
_MAX_NODES = 200


def plan_key(plan: Any, client: Any, versions: bool = False) -> bytes | None:
    """The key of a Connect logical plan over Delta leaves (module docstring), or None when it cannot vouch
    (`client`: the session's Connect client, which pyspark's plan builders take)."""
    stack, nodes, leaves = [plan], 0, 0
    while stack:
        node = stack.pop()
        nodes += 1
        if nodes > _MAX_NODES:
            return None
        if hasattr(node, "_key_relation"):  # a Delta leaf
            leaves += 1
            continue
        kind = type(node).__name__
        if getattr(node, "_references", None) or kind not in _NODES | _LEAVES:
            return None
        if kind in _NODES:
            children = [getattr(node, "_child", None)]
            if kind == "Join":
                children = [getattr(node, "left", None), getattr(node, "right", None)]
            elif kind == "SetOperation":
                children.append(getattr(node, "other", None))
            if any(c is None for c in children):
                return None
            stack.extend(children)
    if not leaves:
        return None
    try:
        with _keying(versions):
            rel = plan.plan(client)
    except Exception:  # a node this pyspark builds otherwise: no key
        return None
    if not _normalize(rel, {}):
        return None
    return bytes(rel.SerializeToString(deterministic=True))


@contextlib.contextmanager
def _keying(versions: bool) -> Iterator[None]:
    token = KEYING.set(versions)
    try:
        yield
    finally:
        KEYING.reset(token)


def _normalize(msg: Any, ids: dict[int, int]) -> bool:
    """Renumber plan ids, drop origins; False when a function or SQL text the key cannot vouch for is met."""
    from google.protobuf.message import Message

    for fd, value in list(msg.ListFields()):
        name = fd.name
        if name == "origin":
            msg.ClearField(name)
        elif name == "plan_id" and isinstance(value, int):
            setattr(msg, name, ids.setdefault(value, len(ids) + 1))
        elif name in ("unresolved_function", "call_function") and not _known(value.function_name):
            return False
        elif name == "expression_string" and not _known_text(value.expression):
            return False
        elif isinstance(value, Message):
            if not _normalize(value, ids):
                return False
        elif fd.message_type is not None:  # repeated messages, or a map (its values may be messages)
            items = list(value.values()) if fd.message_type.GetOptions().map_entry else list(value)
            if not all(_normalize(v, ids) for v in items if isinstance(v, Message)):
                return False
    return True


def _known(function: str) -> bool:
    """A Spark built-in (or an operator pyspark names as a function): sqlglot's Spark dialect knows it."""
    if _OPERATOR.match(function):
        return True
    from sqlglot.dialects.spark import Spark

    return function.upper() in Spark.Parser.FUNCTIONS


def _known_text(text: str) -> bool:
    """A SQL expression string (`where("id = 5")`, `selectExpr`) sqlglot reads, calling no unknown function."""
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except Exception:
        return False
    return tree.find(exp.Anonymous, exp.Table, exp.Query) is None


__all__ = ["KEYING", "plan_key"]
