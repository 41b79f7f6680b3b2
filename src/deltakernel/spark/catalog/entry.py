"""A session-catalog entry as deltakernel sees it, whichever way it was looked up.

`kinds/classic.py` reads entries through py4j (classic sessions), `sql/public_catalog.py` through public SQL
(Spark Connect); both build a `CatalogEntry` and name the session catalog `SESSION_CATALOG`. A leaf below both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

SESSION_CATALOG = "spark_catalog"


@dataclass(frozen=True)
class CatalogEntry:
    """A session-catalog table or permanent view: its name, provider, location and kind."""

    db: str
    table: str
    provider: str
    location: str | None
    managed: bool
    kind: str = "TABLE"  # MANAGED / EXTERNAL / VIEW (Spark's table type)
    view_text: str | None = None  # a permanent view's stored text
    view_database: str | None = None  # the database its names resolve in
    view_columns: tuple[str, ...] | None = None  # a view's output names, when the lookup saw them
    view_renames: bool = False  # they rename its query's output (a column list)


def session_table(parts: list[str] | tuple[str, ...],
                  unqualified: Callable[[str], tuple[str, str] | None]) -> tuple[str, str] | None:
    """(database, table) in the session catalog for a name, None for names of other catalogs and global temporary
    views; a one-part name is resolved by `unqualified` (the current database, unless a temp view shadows it)."""
    parts = list(parts)
    if len(parts) == 3:
        if parts[0].lower() != SESSION_CATALOG:
            return None
        parts = parts[1:]
    if len(parts) == 1:
        return unqualified(parts[0])
    if len(parts) == 2 and parts[0].lower() != "global_temp":
        return parts[0], parts[1]
    return None


__all__ = ["SESSION_CATALOG", "CatalogEntry", "session_table"]
