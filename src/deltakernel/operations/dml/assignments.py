"""UPDATE's SET targets: which table column each key of the SET list names, one rule set for every engine.

The embedded UPDATE (`update.plan_assignments`: deltalake's `updates` / `new_values`) and Spark's
(`spark/dml/plan.plan_assignments`: delta-spark's `set`) resolve their keys here, one key at a time so each
caller checks a key's value right after the key (errors come in the order of the SET list):
- one pair of enclosing quotes is stripped (the caller says which: deltalake accepts `"fooBar"` and backticks,
  Spark backticks only), then the name is matched case-insensitively against the top-level columns;
- a dotted key into a struct column is refused (only whole top-level columns are set), an unknown column, a
  column set twice (also under another spelling) raise SchemaError; an IDENTITY column ConstraintViolationError.
Checking the *types* of keys and values stays with each API (deltalake raises SchemaError for a key that is not a
string, delta-spark TypeError), as does turning the values into expressions.
"""

from __future__ import annotations

from ...errors import ConstraintViolationError, SchemaError
from ...kernel.schema.types import StructField, StructType
from ..write.enforcement import IDENTITY_START, IDENTITY_STEP


class SetTargets:
    """Resolves the keys of one SET list against `schema`, remembering the columns already assigned."""

    def __init__(self, schema: StructType, *, quotes: str = '`"', nested_hint: str = "") -> None:
        self.schema = schema
        self.quotes = quotes
        self.nested_hint = nested_hint  # how to set a struct's field instead, appended to the nested-field error
        self.by_lower = {f.name.lower(): f for f in schema.fields}
        self.assigned: set[str] = set()

    def unquoted(self, key: str) -> str:
        """`key` without one pair of enclosing quotes of `quotes`."""
        return key[1:-1] if len(key) > 1 and key[0] == key[-1] and key[0] in self.quotes else key

    def resolve(self, key: str) -> StructField:
        """The table column `key` names (checked and recorded as assigned)."""
        name = self.unquoted(key)
        field = self.by_lower.get(name.lower())
        if field is None:
            if "." in name and name.split(".", 1)[0].lower() in self.by_lower:
                raise SchemaError(f"cannot update nested field {key!r}: UPDATE sets top-level columns (assign the "
                                  f"whole struct{self.nested_hint})")
            raise SchemaError(f"cannot update column {key!r}: no such column (columns: {list(self.schema.names)})")
        if field.name in self.assigned:
            raise SchemaError(f"column {field.name!r} is assigned more than once")
        if IDENTITY_START in field.metadata or IDENTITY_STEP in field.metadata:
            raise ConstraintViolationError(f"column {field.name!r} is an IDENTITY column: UPDATE cannot change it")
        self.assigned.add(field.name)
        return field


__all__ = ["SetTargets"]
