"""Unity Catalog tables by name on a Spark session: `spark.table("unity.default.t")`, SQL, DML, writes.

Why a session configuration in delta-spark's spirit: delta-spark users point Spark at Unity Catalog with
`spark.sql.catalog.<name>=io.unitycatalog.spark.UCSingleCatalog`, `spark.sql.catalog.<name>.uri` and
`spark.sql.catalog.<name>.token`. deltakernel reads the same keys (the class may be that one or `deltakernel.unity`;
only `.uri` is required): a three-part name whose first part is such a catalog is the table `uc://<name>.<schema>.
<table>` of that server, reached like a path table (`tables.resolve` gives a `DeltaRef` without an entry), so
every read, write, DML and maintenance path that takes a location opens it through `deltakernel.unity` - snapshots
through the catalog's log tail, commits ratified by the catalog. The URL and token are registered for the process
(`unity.tables.configure_catalog`), so they never travel in a location string.
"""

from __future__ import annotations

from typing import Any

CATALOG_CLASSES = ("io.unitycatalog.spark.UCSingleCatalog", "deltakernel.unity")


def _conf(spark: Any, key: str) -> str | None:
    try:
        value = spark.conf.get(key, None)
    except Exception:
        return None
    return str(value) if value else None


def unity_location(spark: Any, parts: list[str] | tuple[str, ...]) -> str | None:
    """The location (`uc://catalog.schema.table`) of the Unity Catalog table a three-part name denotes, None when
    its first part is no configured Unity Catalog (see the module docstring)."""
    if len(parts) != 3 or parts[0].lower() == "spark_catalog":
        return None
    name = parts[0]
    base = f"spark.sql.catalog.{name}"
    uri = _conf(spark, f"{base}.uri")
    if uri is None or (_conf(spark, base) or CATALOG_CLASSES[0]) not in CATALOG_CLASSES:
        return None
    from ...unity.tables import configure_catalog, configured_options

    options = {"unity_catalog_url": uri}
    token = _conf(spark, f"{base}.token")
    if token and "redacted" not in token.lower():
        # Spark Connect redacts conf values whose key says "token" (spark.redaction.regex): then the token
        # comes from the environment (UNITY_CATALOG_TOKEN / DATABRICKS_TOKEN) or `configure_catalog`
        options["unity_catalog_token"] = token
    configure_catalog(name, {**(configured_options(name) or {}), **options})
    quoted = ".".join(f"`{p}`" if "." in p else p for p in parts)
    return f"uc://{quoted}"


def unity_client(spark: Any, catalog: str) -> Any:
    """A `UnityCatalogClient` of the Unity Catalog configured on the session as `catalog`, None when `catalog` is
    no such catalog (catalog-level statements: SHOW TABLES, DROP TABLE; spark/sql/unity_statements.py)."""
    if unity_location(spark, [catalog, "_", "_"]) is None:  # registers the catalog's options as a side effect
        return None
    from ...unity.client import UnityCatalogClient
    from ...unity.tables import configured_options

    return UnityCatalogClient.from_options(configured_options(catalog))


__all__ = ["CATALOG_CLASSES", "unity_client", "unity_location"]
