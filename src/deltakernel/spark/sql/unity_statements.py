"""Catalog-level statements on a Unity Catalog configured on the session: SHOW TABLES and DROP TABLE.

Why here and not in Spark: a session configured as delta-spark users configure Unity Catalog
(`spark.sql.catalog.<name>=io.unitycatalog.spark.UCSingleCatalog`, `.uri`, `.token`; spark/catalog/unity.py) has no
such class on its JVM, so Spark fails every statement it resolves through that catalog ("cannot find the plugin
class"). Table statements are routed by name (`tables.resolve` gives the `uc://` location), but SHOW TABLES and DROP
TABLE are about the catalog's listing, not a table's log: they are answered here from the catalog's REST API
(listTables of the UC API; deleteTable of the Delta REST API), with delta-spark + UC's result shapes:
- `SHOW TABLES {IN | FROM} <catalog>.<schema> [[LIKE] 'pattern']`: rows (namespace, tableName, isTemporary), the
  pattern as Spark's (`*` any characters, `|` alternatives, case-insensitive);
- `DROP TABLE [IF EXISTS] <catalog>.<schema>.<table> [PURGE]`: the table leaves the catalog (a managed table's
  files are the catalog's to delete, as Unity Catalog does for managed tables), an empty result; a missing table
  is a `TableNotFoundError` unless IF EXISTS.
Statements of other catalogs return None here and go on through the router unchanged.
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import TableNotFoundError
from .syntax import Token, tokenize

_LEADING = re.compile(r"\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(SHOW|DROP)\b", re.IGNORECASE | re.DOTALL)


def _name(toks: list[Token], i: int) -> tuple[list[str], int]:
    """A dotted name from token `i`: (its parts, the index after it)."""
    parts: list[str] = []
    while i < len(toks) and toks[i].kind in ("word", "quoted"):
        parts.append(toks[i].text)
        if i + 1 < len(toks) and toks[i + 1].kind == "op" and toks[i + 1].text == ".":
            i += 2
            continue
        i += 1
        break
    return parts, i


def _at_end(toks: list[Token], i: int) -> bool:
    return all(t.kind == "op" and t.text == ";" for t in toks[i:])


def like(pattern: str, name: str) -> bool:
    """Spark's SHOW TABLES pattern: `*` any characters, `|` alternatives, case-insensitive."""
    alternatives = [re.escape(p.strip()).replace(r"\*", ".*") for p in pattern.split("|")]
    return re.fullmatch("|".join(f"(?:{a})" for a in alternatives), name, re.IGNORECASE) is not None


def run_unity_statement(spark: Any, text: str) -> Any:
    """The result of SHOW TABLES / DROP TABLE on a configured Unity Catalog, None for any other statement."""
    if _LEADING.match(text) is None:
        return None
    try:
        toks = tokenize(text)
    except Exception:
        return None
    if len(toks) > 2 and toks[0].is_kw("SHOW") and toks[1].is_kw("TABLES") and toks[2].is_kw("IN", "FROM"):
        return _show_tables(spark, toks)
    if len(toks) > 2 and toks[0].is_kw("DROP") and toks[1].is_kw("TABLE"):
        return _drop_table(spark, toks)
    return None


def _show_tables(spark: Any, toks: list[Token]) -> Any:
    from ..catalog.unity import unity_client

    parts, i = _name(toks, 3)
    if len(parts) != 2:
        return None
    pattern = None
    if i < len(toks) and toks[i].is_kw("LIKE"):
        i += 1
    if i < len(toks) and toks[i].kind == "string":
        pattern, i = toks[i].text, i + 1
    if not _at_end(toks, i):
        return None
    client = unity_client(spark, parts[0])
    if client is None:
        return None
    names = sorted(t.name for t in client.list_tables(parts[0], parts[1]))
    rows = [(parts[1], n, False) for n in names if pattern is None or like(pattern, n)]
    return spark.createDataFrame(rows, "namespace string, tableName string, isTemporary boolean")


def _drop_table(spark: Any, toks: list[Token]) -> Any:
    from ..catalog.unity import unity_client

    i = 2
    if_exists = toks[i].is_kw("IF") and i + 1 < len(toks) and toks[i + 1].is_kw("EXISTS")
    if if_exists:
        i += 2
    parts, i = _name(toks, i)
    if i < len(toks) and toks[i].is_kw("PURGE"):
        i += 1
    if len(parts) != 3 or not _at_end(toks, i):
        return None
    client = unity_client(spark, parts[0])
    if client is None:
        return None
    if not client.table_exists(*parts):
        if not if_exists:
            raise TableNotFoundError(f"table {'.'.join(parts)} not found in Unity Catalog {parts[0]}")
    else:
        client.delete_table(*parts)
    return spark.createDataFrame([], "dummy string").select()


__all__ = ["like", "run_unity_statement"]
