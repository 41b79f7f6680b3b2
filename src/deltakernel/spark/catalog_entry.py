"""A session-catalog entry as deltakernel sees it, whichever way it was looked up.

`catalog.py` reads entries through py4j (classic sessions), `sql/public_catalog.py` through public SQL (Spark
Connect); both build a `CatalogEntry` and name the session catalog `SESSION_CATALOG`. A leaf below both.
"""

from __future__ import annotations

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
    view_text: str | None = None  # a permanent view's stored text (Spark Connect lookups only)
    view_database: str | None = None  # the database its names resolve in (Spark Connect lookups only)


__all__ = ["SESSION_CATALOG", "CatalogEntry"]
