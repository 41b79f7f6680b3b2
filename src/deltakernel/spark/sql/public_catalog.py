"""Spark's session catalog through public SQL only: what `kinds/connect.py` (`ConnectCatalog`) asks with.

A Connect client has no py4j handle on the session catalog, so what classic sessions ask the JVM for is asked
with statements every Spark answers:
- an entry (provider, location, managed / external, a view's text): `SHOW TABLE EXTENDED [IN db] LIKE 'name'`
  (its `information` column is the V1 catalog entry; `DESCRIBE TABLE EXTENDED` does not show provider and
  location for a table whose provider is a Python data source, and its `AS JSON` form refuses such tables);
- registering a Delta table: the same `CREATE TABLE name (columns) USING delta [LOCATION]` classic sessions
  run, sent with the session's own (un-routed) `sql`; the column DDL is written here from the schema JSON;
- names are split with the Delta SQL tokenizer (backquotes, dots), as Spark's identifier parser does.
Every statement goes through the session's original `sql` (`patch_state.original`), never the router.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..catalog.entry import SESSION_CATALOG, CatalogEntry

_KEY = re.compile(r"^([A-Z][A-Za-z ]*?): ?(.*)$")
_KEYS = {"Catalog", "Database", "Namespace", "Table", "Owner", "Created Time", "Last Access", "Created By", "Type",
         "Provider", "Comment", "Collation", "Table Properties", "Statistics", "Location", "Serde Library",
         "InputFormat", "OutputFormat", "Storage Properties", "Partition Provider", "Partition Columns", "Schema",
         "View Text", "View Original Text", "View Schema Mode", "View Catalog and Namespace",
         "View Query Output Columns", "Bucket Columns", "Sort Columns", "Num Buckets", "Table Id"}


def original_sql(spark: Any, text: str, args: Any = None) -> Any:
    """`spark.sql(text, args)` as pyspark defines it (not routed through the Delta SQL router)."""
    from ..install.state import original

    return original(type(spark), "sql")(spark, text, args)


def quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def split_name(name: str) -> list[str]:
    """`a.b`.`c` as Spark splits a multipart identifier; ValueError when it is not one."""
    from .syntax import tokenize

    toks = tokenize(name)
    parts: list[str] = []
    expect_part = True
    for t in toks:
        if expect_part and t.kind in ("word", "quoted"):
            parts.append(t.text)
            expect_part = False
        elif not expect_part and t.kind == "op" and t.text == ".":
            expect_part = True
        else:
            raise ValueError(f"unexpected {t.text!r} at position {t.start}")
    if expect_part:
        raise ValueError("a name part is missing")
    return parts


def current_database(spark: Any) -> str:
    return str(spark.catalog.currentDatabase())


def _information(text: str) -> dict[str, str]:
    """The `information` column of SHOW TABLE EXTENDED as a dict (multi-line values kept whole)."""
    out: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        m = _KEY.match(line)
        if m is not None and m.group(1) in _KEYS:
            key = m.group(1)
            out[key] = m.group(2)
        elif key is not None:
            out[key] += "\n" + line
    return out


def entry_info(spark: Any, db: str | None, table: str, cache: Any = None) -> tuple[str, dict[str, str]] | None:
    """(database, entry fields) of a session-catalog table or permanent view `db.table` (`db` None: the current
    database, where a temporary view of that name shadows it: None then); None when there is no such entry.
    One round trip when the server sends the statement's rows with its response (and `db` is known to exist:
    `cache`, a `kinds.catalog_cache.CatalogCache`, keeps that answer)."""
    where = f" IN {quote(db)}" if db is not None else ""
    try:
        if db is not None and not _database_exists(spark, db, cache):
            return None  # asked first: a failing statement is logged by the Connect client
        rows = _rows(original_sql(spark, f"SHOW TABLE EXTENDED{where} LIKE {sql_string(table)}"))
    except Exception:  # no such database
        return None
    found = None
    for row in rows:
        if str(row[1]).lower() != table.lower():
            continue
        if bool(row[2]):
            if db is None:
                return None  # a temporary view of that name shadows the table
            continue
        found = (str(row[0]), _information(str(row[3])))
    return found


def _database_exists(spark: Any, db: str, cache: Any) -> bool:
    if cache is None:
        return bool(spark.catalog.databaseExists(db))
    return bool(cache.answer(("database", db), lambda: spark.catalog.databaseExists(db)))


def _rows(df: Any) -> list[tuple[Any, ...]]:
    """A SHOW statement's rows: from its response when the server sent them inline, else collected."""
    from ..kinds.connect_internals import inline_rows

    table = inline_rows(df)
    if table is None:
        return [tuple(r) for r in df.collect()]
    return list(zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True))


# ----------------------------------------------------------------------------- registration
def _type_ddl(t: Any) -> str:
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(t, StructType):
        return "STRUCT<" + ", ".join(f"{quote(f.name)}: {_type_ddl(f.dataType)}{_field_suffix(f)}"
                                     for f in t.fields) + ">"
    if isinstance(t, ArrayType):
        return f"ARRAY<{_type_ddl(t.elementType)}>"
    if isinstance(t, MapType):
        return f"MAP<{_type_ddl(t.keyType)}, {_type_ddl(t.valueType)}>"
    return str(t.simpleString())


def _field_suffix(f: Any) -> str:
    out = "" if f.nullable else " NOT NULL"
    comment = (f.metadata or {}).get("comment")
    if comment:
        out += f" COMMENT {sql_string(str(comment))}"
    return out


def columns_ddl(schema_json: str) -> str:
    """`name type [NOT NULL] [COMMENT '...'], ...` of a Spark schema JSON (what the JVM's `toDDL` gives)."""
    from pyspark.sql.types import StructType

    schema = StructType.fromJson(json.loads(schema_json))
    return ", ".join(f"{quote(f.name)} {_type_ddl(f.dataType)}{_field_suffix(f)}" for f in schema.fields)


def run_ddl(spark: Any, text: str) -> None:
    original_sql(spark, text).collect()




# ----------------------------------------------------------------------------- entries
def lookup_entry(spark: Any, parts: list[str] | tuple[str, ...], cache: Any = None) -> CatalogEntry | None:
    """`catalog.lookup` over Spark Connect: the CatalogEntry a name denotes, or None (`cache`: see `entry_info`)."""
    parts = list(parts)
    if len(parts) == 3:
        if parts[0].lower() != SESSION_CATALOG:
            return None
        parts = parts[1:]
    if len(parts) not in (1, 2) or (len(parts) == 2 and parts[0].lower() == "global_temp"):
        return None
    found = entry_info(spark, parts[0] if len(parts) == 2 else None, parts[-1], cache)
    if found is None:
        return None
    db, info = found
    kind = info.get("Type", "").strip().upper()
    database = info.get("Database", db).strip() or db
    view_db = info.get("View Catalog and Namespace", "").strip().split(".")[-1] or database
    columns, renames = _view_columns(info) if kind == "VIEW" else (None, False)
    return CatalogEntry(database, info.get("Table", parts[-1]).strip() or parts[-1],
                        info.get("Provider", "").strip(), info.get("Location", "").strip() or None,
                        kind == "MANAGED", kind or "TABLE", info.get("View Text") if kind == "VIEW" else None,
                        view_db if kind == "VIEW" else None, columns, renames)


def _view_columns(info: dict[str, str]) -> tuple[tuple[str, ...] | None, bool]:
    """A view's output names from its entry (the top level of its `Schema` tree) and whether they rename its
    query's output (`View Query Output Columns` differ: a column list); (None, False) when its schema follows its
    query (`View Schema Mode: EVOLUTION`) or cannot be read - the caller asks Spark then."""
    if info.get("View Schema Mode", "").strip().upper() == "EVOLUTION" or "Schema" not in info:
        return None, False
    names: list[str] = []
    for line in info["Schema"].splitlines()[1:]:
        if not line.startswith(" |-- "):
            continue  # a nested field
        head, sep, _ = line[5:].rpartition(" (nullable = ")
        name, colon, _ = head.rpartition(": ")
        if not sep or not colon:
            return None, False
        names.append(name)
    if not names:
        return None, False
    query = info.get("View Query Output Columns", "").strip()
    quoted = "[" + ", ".join("`" + n.replace("`", "``") + "`" for n in names) + "]"
    return tuple(names), bool(query) and query != quoted


def catalog_columns(spark: Any, name: str) -> list[Any]:
    """`spark.catalog.listColumns(name)` as Spark answers it (not the Delta log's answer patched in)."""
    from ..install.state import original

    return list(original(type(spark.catalog), "listColumns")(spark.catalog, name))


__all__ = ["catalog_columns", "columns_ddl", "current_database", "entry_info", "lookup_entry", "original_sql",
           "quote", "run_ddl", "split_name", "sql_string"]
