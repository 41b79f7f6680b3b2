"""Collated strings (PROTOCOL.md "Collations Table Feature"): where a column's collation is, and whether it
is the default UTF-8 binary one.

Why it matters to a reader: the top-level `minValues`/`maxValues` of a string column are UTF-8 binary
bounds, and "readers must only do file skipping based on column statistics for a collation if the filter
operator ... treat[s] the column as having that same collation". An engine filtering a `UTF8_LCASE` column
(Spark does) compares 'a' = 'A', which binary bounds [A, A] would wrongly rule out. deltakernel's skipping
cannot know which collation the caller's operator uses, so a column with a non-binary collation gets no
min/max skipping at all (`stats/parse.py`); null counts stay usable (they do not depend on collation).
`statsWithCollation` is not read: matching its versioned identifiers to an operator's collation is the
engine's business, and skipping nothing is always sound.
"""

from __future__ import annotations

import json
from typing import Any

from .types import StructField

COLLATIONS_KEY = "__COLLATIONS"
_BINARY_NAMES = frozenset({"utf8_binary"})


def collations_of(field: StructField) -> dict[str, str]:
    """The field's `__COLLATIONS` map (path under this field -> collation identifier), {} when none."""
    raw: Any = field.metadata.get(COLLATIONS_KEY)
    if isinstance(raw, str):  # metadata that came through Arrow as text
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def is_binary_collation(identifier: str) -> bool:
    """`UTF8_BINARY`, `spark.UTF8_BINARY` (with or without a version): strings compared by their bytes."""
    parts = identifier.split(".")
    name = parts[1] if len(parts) > 1 else parts[0]
    return name.lower() in _BINARY_NAMES


def has_non_binary_collation(field: StructField) -> bool:
    """Whether this string field itself (not a nested array/map element) has a non-binary collation."""
    coll = collations_of(field).get(field.name)
    return coll is not None and not is_binary_collation(coll)
