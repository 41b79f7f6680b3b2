"""The older Unity Catalog API of the test catalog: tables by full name (all.yaml) and `/delta/preview/commits`.

Kept apart from store.py (the Delta REST API's rules) because it is a second wire format over the same state: ids
and locations instead of names, underscored fields, `error_code` errors; a commit still ratifies only latest+1,
re-sending an accepted commit is a no-op (or a conflict, with `Policy(idempotent_replay=False)`), and the
unpublished-commit limit answers 429 RESOURCE_EXHAUSTED, as UC's server does.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from typing import Any

from .store import ApiError, CatalogStore, now_ms


def create_staging_table_legacy(store: CatalogStore, body: dict[str, Any]) -> dict[str, Any]:
    """POST /staging-tables (all.yaml): an id and a location for a managed table about to be created."""
    for key in ("name", "catalog_name", "schema_name"):
        if not body.get(key):
            raise ApiError(400, "INVALID_ARGUMENT", f"{key} is required")
    try:
        made = store.create_staging_table(body["catalog_name"], body["schema_name"], body["name"])
    except ApiError as exc:
        raise ApiError(exc.status, "TABLE_ALREADY_EXISTS" if exc.status == 409 else "INVALID_ARGUMENT",
                       exc.message) from None
    return {"id": made["table-id"], "name": body["name"], "catalog_name": body["catalog_name"],
            "schema_name": body["schema_name"], "staging_location": made["location"]}


def create_table_legacy(store: CatalogStore, body: dict[str, Any]) -> dict[str, Any]:
    """POST /tables (all.yaml): register a table by location (how pre-Delta-REST servers create them)."""
    for key in ("name", "catalog_name", "schema_name", "table_type", "storage_location"):
        if not body.get(key):
            raise ApiError(400, "INVALID_ARGUMENT", f"{key} is required")
    catalog, schema, name = body["catalog_name"], body["schema_name"], body["name"]
    props = dict(body.get("properties") or {})
    with store.tx() as db:
        store.require_schema(db, catalog, schema)
        if db.execute("SELECT 1 FROM tables WHERE catalog=? AND schema=? AND name=?",
                      (catalog, schema, name)).fetchone():
            raise ApiError(409, "TABLE_ALREADY_EXISTS", f"table {catalog}.{schema}.{name} already exists")
        table_id, now = str(uuid.uuid4()), now_ms()
        staged = db.execute("SELECT table_id FROM staging_tables WHERE location=? AND finalized=0",
                            (str(body["storage_location"]).rstrip("/"),)).fetchone()
        if staged is not None:  # a managed table created at its staging location keeps the staging id
            table_id = staged["table_id"]
            db.execute("UPDATE staging_tables SET finalized=1 WHERE table_id=?", (table_id,))
        columns = {"type": "struct", "fields": body.get("columns") or []}
        protocol = {"min-reader-version": 3, "min-writer-version": 7,
                    "reader-features": list(store.policy.required_reader_features),
                    "writer-features": list(store.policy.required_writer_features)}
        db.execute("INSERT INTO tables VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   (table_id, catalog, schema, name, body["table_type"],
                    str(body["storage_location"]).rstrip("/"), json.dumps(columns), "[]", json.dumps(props),
                    json.dumps(protocol), "{}", body.get("comment"), uuid.uuid4().hex, now, now, 0, 0, 0, now,
                    None))
        return _legacy_info(store.table_row(db, catalog, schema, name))


def _legacy_info(row: sqlite3.Row) -> dict[str, Any]:
    return {"name": row["name"], "catalog_name": row["catalog"], "schema_name": row["schema"],
            "full_name": f"{row['catalog']}.{row['schema']}.{row['name']}", "table_type": row["table_type"],
            "data_source_format": "DELTA", "storage_location": row["location"], "table_id": row["table_id"],
            "properties": json.loads(row["properties"]), "created_at": row["created_time"],
            "updated_at": row["updated_time"]}


def list_tables_legacy(store: CatalogStore, query: dict[str, str]) -> dict[str, Any]:
    """GET /tables (listTables): the tables of catalog_name.schema_name by name, `max_results` a page, the next
    page's token the offset (opaque to clients)."""
    catalog, schema = query.get("catalog_name"), query.get("schema_name")
    if not catalog or not schema:
        raise ApiError(400, "INVALID_ARGUMENT", "catalog_name and schema_name are required")
    size = int(query.get("max_results") or 100)
    start = int(query.get("page_token") or 0)
    with store.tx() as db:
        store.require_schema(db, catalog, schema)
        rows = db.execute("SELECT * FROM tables WHERE catalog=? AND schema=? ORDER BY name LIMIT ? OFFSET ?",
                          (catalog, schema, size + 1, start)).fetchall()
    more = len(rows) > size
    return {"tables": [_legacy_info(r) for r in rows[:size]], "next_page_token": str(start + size) if more else None}


def get_table_legacy(store: CatalogStore, full_name: str) -> dict[str, Any]:
    parts = full_name.split(".")
    if len(parts) != 3:
        raise ApiError(400, "INVALID_ARGUMENT", f"{full_name!r} is not catalog.schema.table")
    with store.tx() as db:
        try:
            return _legacy_info(store.table_row(db, *parts))
        except ApiError as exc:
            raise ApiError(404, "TABLE_DOES_NOT_EXIST", exc.message) from None


def _preview_table(store: CatalogStore, db: sqlite3.Connection, body: dict[str, Any]) -> sqlite3.Row:
    if not body.get("table_id") or not body.get("table_uri"):
        raise ApiError(400, "INVALID_ARGUMENT", "table_id and table_uri are required")
    row = store.table_row_by_id(db, body["table_id"])
    if str(body["table_uri"]).rstrip("/") != row["location"]:
        raise ApiError(400, "INVALID_ARGUMENT",
                       f"table_uri {body['table_uri']} is not the table's location {row['location']}")
    return row


def get_commits(store: CatalogStore, body: dict[str, Any]) -> dict[str, Any]:
    start = body.get("start_version")
    if not isinstance(start, int) or start < 0:
        raise ApiError(400, "INVALID_ARGUMENT", "start_version must be a non-negative integer")
    end = body.get("end_version")
    with store.tx() as db:
        row = _preview_table(store, db, body)
        commits = db.execute(
            "SELECT * FROM commits WHERE table_id=? AND version>=? AND version<=? AND version>? "
            "ORDER BY version", (row["table_id"], start, end if isinstance(end, int) else 2**62,
                                 row["latest_backfilled"])).fetchall()
        any_commit = db.execute("SELECT MAX(version) AS v FROM commits WHERE table_id=?",
                                (row["table_id"],)).fetchone()["v"]
    return {"commits": [{k.replace("-", "_"): v for k, v in store.commit_json(c).items()} for c in commits],
            "latest_table_version": -1 if any_commit is None else int(any_commit)}


def commit(store: CatalogStore, body: dict[str, Any]) -> dict[str, Any]:
    info, lbv = body.get("commit_info"), body.get("latest_backfilled_version")
    if info is None and lbv is None:
        raise ApiError(400, "INVALID_ARGUMENT", "commit_info or latest_backfilled_version is required")
    with store.tx() as db:
        row = _preview_table(store, db, body)
        if row["table_type"] != "MANAGED":
            raise ApiError(400, "INVALID_ARGUMENT", "only managed tables take commits")
        tid = row["table_id"]
        latest, backfilled = int(row["latest_version"]), int(row["latest_backfilled"])
        if info is not None and store.policy.idempotent_replay and store.is_replay(db, tid, info):
            return {}
        sets: dict[str, Any] = {}
        commit = None
        if info is not None:
            try:
                commit = store.validate_commit(info, hyphen=False)
            except ApiError as exc:
                raise ApiError(400, "INVALID_ARGUMENT", exc.message) from None
            if commit["version"] != latest + 1:
                raise ApiError(409, "ALREADY_EXISTS",
                               f"commit version {commit['version']} rejected: expected {latest + 1}")
        if lbv is not None:
            if not isinstance(lbv, int) or lbv < 0 or lbv > (commit["version"] if commit else latest):
                raise ApiError(400, "INVALID_ARGUMENT", f"latest_backfilled_version {lbv} out of range")
            backfilled = max(backfilled, lbv)
            sets["latest_backfilled"] = backfilled
        if commit is not None:
            if commit["version"] - 1 - backfilled >= store.policy.max_unpublished:
                raise ApiError(429, "RESOURCE_EXHAUSTED",
                               f"max number of unbackfilled commits ({store.policy.max_unpublished}) reached")
        if commit is not None:
            db.execute("INSERT INTO commits VALUES (?,?,?,?,?,?,?)",
                       (tid, commit["version"], commit["timestamp"], commit["file-name"], commit["file-size"],
                        commit["file-modification-timestamp"], now_ms()))
            sets["latest_version"] = commit["version"]
        meta = body.get("metadata")
        if isinstance(meta, dict) and commit is not None:  # a metadata-changing commit: mirror it
            if "description" in meta:
                sets["comment"] = meta["description"]
            props = (meta.get("properties") or {}).get("properties")
            if isinstance(props, dict):
                sets["properties"] = json.dumps({k: str(v) for k, v in props.items()})
            cols = (meta.get("schema") or {}).get("columns")
            if isinstance(cols, list):
                sets["columns"] = json.dumps({"type": "struct", "fields": cols})
            sets["last_commit_version"] = commit["version"]
            sets["last_commit_ts"] = commit["timestamp"]
        if not sets:
            return {}
        db.execute(f"UPDATE tables SET {', '.join(f'{k}=?' for k in sets)} WHERE table_id=?",
                   (*sets.values(), tid))
    return {}
