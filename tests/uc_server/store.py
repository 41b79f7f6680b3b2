"""The test catalog's state and rules, in SQLite: catalogs, schemas, tables, staging tables, ratified commits.

Why SQLite: the catalog's guarantees (one commit per version, etags, the unpublished-commit limit) are enforced
in one `BEGIN IMMEDIATE` transaction per request, so two writers racing through different server threads see
exactly one winner, as on a real catalog; and a file-backed database lets a test restart the server and find the
table as it was (a catalog that forgets ratified commits would lose data).

Rules follow api/delta.yaml (Delta REST API) and the preview commits API of Unity Catalog:
- a commit is ratified only as version latest+1 (409 CommitVersionConflictException otherwise); re-sending an
  already ratified (version, file-name) is an idempotent no-op;
- at most `max_unpublished` ratified commits above the latest backfilled version (429 ResourceExhausted);
- every successful update changes the etag; `assert-etag` / `assert-table-uuid` are checked first (409
  UpdateRequirementConflictException); `assert-table-uuid` is mandatory;
- managed tables are created from a staging table whose id and location they must carry, with the required
  protocol features and properties.
Errors are `ApiError(status, type, message)`; the HTTP layer renders them in each API's error format.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

#: properties the server derives; clients must not send them (delta.yaml, DeltaTableMetadata.properties)
DERIVED_PROPERTIES = ("delta.minReaderVersion", "delta.minWriterVersion", "delta.clusteringColumns",
                      "delta.rowTracking.rowIdHighWaterMark", "delta.lastUpdateVersion", "delta.lastCommitTimestamp")

DEFAULT_REQUIRED_READER = ("catalogManaged", "vacuumProtocolCheck")
DEFAULT_REQUIRED_WRITER = ("catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS catalogs (name TEXT PRIMARY KEY, comment TEXT, created_at INTEGER);
CREATE TABLE IF NOT EXISTS schemas (catalog TEXT, name TEXT, comment TEXT, created_at INTEGER,
    PRIMARY KEY (catalog, name));
CREATE TABLE IF NOT EXISTS tables (
    table_id TEXT PRIMARY KEY, catalog TEXT, schema TEXT, name TEXT, table_type TEXT, location TEXT,
    columns TEXT, partition_columns TEXT, properties TEXT, protocol TEXT, domain_metadata TEXT, comment TEXT,
    etag TEXT, created_time INTEGER, updated_time INTEGER, latest_version INTEGER, latest_backfilled INTEGER,
    last_commit_version INTEGER, last_commit_ts INTEGER, uniform TEXT,
    UNIQUE (catalog, schema, name));
CREATE TABLE IF NOT EXISTS staging_tables (table_id TEXT PRIMARY KEY, catalog TEXT, schema TEXT, name TEXT,
    location TEXT, created_time INTEGER, finalized INTEGER DEFAULT 0);
CREATE TABLE IF NOT EXISTS commits (table_id TEXT, version INTEGER, timestamp INTEGER, file_name TEXT,
    file_size INTEGER, file_mod_ts INTEGER, ratified_at INTEGER, PRIMARY KEY (table_id, version));
"""


class ApiError(Exception):
    def __init__(self, status: int, error_type: str, message: str) -> None:
        self.status, self.error_type, self.message = status, error_type, message
        super().__init__(f"{status} {error_type}: {message}")


def now_ms() -> int:
    return int(time.time() * 1000)


def bad_value(msg: str) -> ApiError:
    return ApiError(400, "InvalidParameterValueException", msg)


def _published(location: str, version: int) -> bool | None:
    """Whether `_delta_log/<version>.json` exists (None: not a local table, cannot tell)."""
    if not location.startswith("file:"):
        return None
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    root = url2pathname(urlparse(location).path)
    return os.path.exists(os.path.join(root, "_delta_log", f"{version:020d}.json"))


@dataclass
class Policy:
    """What the catalog asks of new managed tables, and its unpublished-commit limit."""

    max_unpublished: int = 10
    #: delta.yaml: re-sending an accepted add-commit (same version and file-name) is a 200 no-op; the managed
    #: tables spec 1.0 answers CommitVersionConflictException instead (clients must handle both)
    idempotent_replay: bool = True
    #: on file:// tables, refuse set-latest-backfilled-version for a version whose _delta_log/<v>.json is missing
    #: (the spec lets a server check this; a premature report would lose the catalog's only record)
    verify_published: bool = True
    required_reader_features: tuple[str, ...] = DEFAULT_REQUIRED_READER
    required_writer_features: tuple[str, ...] = DEFAULT_REQUIRED_WRITER
    required_properties: tuple[tuple[str, str | None], ...] = (("delta.enableInCommitTimestamps", "true"),)


class CatalogStore:
    """All state behind one lock and one SQLite connection (requests are short; serializing them is the simplest
    way to make each a transaction)."""

    def __init__(self, path: str, storage_root: str, policy: Policy | None = None) -> None:
        self.storage_root = storage_root.rstrip("/")
        self.policy = policy or Policy()
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        # WAL + synchronous=NORMAL: committed transactions survive a server restart (what tests check); only an
        # OS crash could lose the last ones, which no test simulates - and each request skips an fsync
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")

    # ------------------------------------------------------------------ catalogs / schemas (UC API)
    def create_catalog(self, name: str, comment: str | None = None) -> dict[str, Any]:
        with self.tx() as db:
            if db.execute("SELECT 1 FROM catalogs WHERE name=?", (name,)).fetchone():
                raise ApiError(409, "CATALOG_ALREADY_EXISTS", f"catalog {name} already exists")
            db.execute("INSERT INTO catalogs VALUES (?,?,?)", (name, comment, now_ms()))
        return {"name": name, "comment": comment}

    def create_schema(self, catalog: str, name: str, comment: str | None = None) -> dict[str, Any]:
        with self.tx() as db:
            self._catalog(db, catalog)
            if db.execute("SELECT 1 FROM schemas WHERE catalog=? AND name=?", (catalog, name)).fetchone():
                raise ApiError(409, "SCHEMA_ALREADY_EXISTS", f"schema {catalog}.{name} already exists")
            db.execute("INSERT INTO schemas VALUES (?,?,?,?)", (catalog, name, comment, now_ms()))
        return {"name": name, "catalog_name": catalog, "full_name": f"{catalog}.{name}"}

    def has_catalog(self, catalog: str) -> bool:
        with self._lock:
            return self._db.execute("SELECT 1 FROM catalogs WHERE name=?", (catalog,)).fetchone() is not None

    def _catalog(self, db: sqlite3.Connection, catalog: str) -> None:
        if not db.execute("SELECT 1 FROM catalogs WHERE name=?", (catalog,)).fetchone():
            raise ApiError(404, "NoSuchCatalogException", f"catalog {catalog} does not exist")

    def require_schema(self, db: sqlite3.Connection, catalog: str, schema: str) -> None:
        self._catalog(db, catalog)
        if not db.execute("SELECT 1 FROM schemas WHERE catalog=? AND name=?", (catalog, schema)).fetchone():
            raise ApiError(404, "NoSuchSchemaException", f"schema {catalog}.{schema} does not exist")

    def table_row(self, db: sqlite3.Connection, catalog: str, schema: str, name: str) -> sqlite3.Row:
        self.require_schema(db, catalog, schema)
        row = db.execute("SELECT * FROM tables WHERE catalog=? AND schema=? AND name=?",
                         (catalog, schema, name)).fetchone()
        if row is None:
            raise ApiError(404, "NoSuchTableException", f"table {catalog}.{schema}.{name} does not exist")
        return row

    def table_row_by_id(self, db: sqlite3.Connection, table_id: str) -> sqlite3.Row:
        row = db.execute("SELECT * FROM tables WHERE table_id=?", (table_id,)).fetchone()
        if row is None:
            raise ApiError(404, "TABLE_DOES_NOT_EXIST", f"table {table_id} does not exist")
        return row

    # ------------------------------------------------------------------ staging / create
    def create_staging_table(self, catalog: str, schema: str, name: str) -> dict[str, Any]:
        if not name:
            raise bad_value("name is required")
        with self.tx() as db:
            self.require_schema(db, catalog, schema)
            if db.execute("SELECT 1 FROM tables WHERE catalog=? AND schema=? AND name=?",
                          (catalog, schema, name)).fetchone():
                raise ApiError(409, "AlreadyExistsException", f"table {catalog}.{schema}.{name} already exists")
            table_id = str(uuid.uuid4())
            location = f"{self.storage_root}/{catalog}/{schema}/tables/{table_id}"
            db.execute("INSERT INTO staging_tables VALUES (?,?,?,?,?,?,0)",
                       (table_id, catalog, schema, name, location, now_ms()))
        p = self.policy
        required_props: dict[str, str | None] = dict(p.required_properties)
        required_props["io.unitycatalog.tableId"] = table_id
        return {
            "table-id": table_id, "table-type": "MANAGED", "location": location,
            "required-protocol": {"min-reader-version": 3, "min-writer-version": 7,
                                  "reader-features": list(p.required_reader_features),
                                  "writer-features": list(p.required_writer_features)},
            "suggested-protocol": {"reader-features": ["deletionVectors"],
                                   "writer-features": ["deletionVectors", "domainMetadata", "rowTracking"]},
            "required-properties": required_props,
            "suggested-properties": {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"},
        }

    def staging_location(self, table_id: str) -> str:
        with self._lock:
            row = self._db.execute("SELECT location FROM staging_tables WHERE table_id=? AND finalized=0",
                                   (table_id,)).fetchone()
        if row is None:
            raise ApiError(404, "NoSuchTableException", f"staging table {table_id} does not exist")
        return str(row["location"])

    def create_table(self, catalog: str, schema: str, body: dict[str, Any]) -> dict[str, Any]:
        for key in ("name", "location", "table-type", "columns", "protocol", "properties",
                    "last-commit-timestamp-ms"):
            if key not in body:
                raise bad_value(f"{key} is required")
        name, location, table_type = body["name"], str(body["location"]).rstrip("/"), body["table-type"]
        protocol, properties = body["protocol"], dict(body["properties"])
        if table_type not in ("MANAGED", "EXTERNAL"):
            raise bad_value(f"table-type {table_type!r}")
        bad = [k for k in properties if k in DERIVED_PROPERTIES or k.startswith("delta.feature.")]
        if bad:
            raise bad_value(f"server-derived properties may not be set: {bad}")
        with self.tx() as db:
            self.require_schema(db, catalog, schema)
            if db.execute("SELECT 1 FROM tables WHERE catalog=? AND schema=? AND name=?",
                          (catalog, schema, name)).fetchone():
                raise ApiError(409, "AlreadyExistsException", f"table {catalog}.{schema}.{name} already exists")
            if table_type == "MANAGED":
                staged = db.execute("SELECT * FROM staging_tables WHERE location=?", (location,)).fetchone()
                if staged is None:
                    raise ApiError(404, "NoSuchTableException", f"no staging table at {location} (create one with "
                                   "createStagingTable and pass back its location)")
                if staged["finalized"]:
                    raise bad_value(f"the staging table at {location} was already finalized")
                if (staged["catalog"], staged["schema"]) != (catalog, schema):
                    raise bad_value(f"the staging table at {location} belongs to {staged['catalog']}.{staged['schema']}")
                table_id = staged["table_id"]
                self._check_required(table_id, protocol, properties)
                db.execute("UPDATE staging_tables SET finalized=1 WHERE table_id=?", (table_id,))
            else:
                table_id = str(uuid.uuid4())
            now = now_ms()
            db.execute(
                "INSERT INTO tables VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (table_id, catalog, schema, name, table_type, location, json.dumps(body["columns"]),
                 json.dumps(list(body.get("partition-columns") or [])), json.dumps(properties),
                 json.dumps(protocol), json.dumps(body.get("domain-metadata") or {}), body.get("comment"),
                 uuid.uuid4().hex, now, now, 0, 0, 0, int(body["last-commit-timestamp-ms"]),
                 json.dumps(body["uniform"]) if body.get("uniform") else None))
            return self._load(db, self.table_row(db, catalog, schema, name))

    def _check_required(self, table_id: str, protocol: dict[str, Any], properties: dict[str, str]) -> None:
        p = self.policy
        if int(protocol.get("min-reader-version", 0)) < 3 or int(protocol.get("min-writer-version", 0)) < 7:
            raise bad_value("managed tables need table features (reader version 3, writer version 7)")
        missing = [f for f in p.required_reader_features if f not in (protocol.get("reader-features") or [])]
        missing += [f for f in p.required_writer_features if f not in (protocol.get("writer-features") or [])]
        if missing:
            raise bad_value(f"protocol lacks required features: {sorted(set(missing))}")
        required = dict(p.required_properties)
        required["io.unitycatalog.tableId"] = table_id
        for k, v in required.items():
            if k not in properties or (v is not None and properties[k] != v):
                raise bad_value(f"required property {k}={v!r} missing or different ({properties.get(k)!r})")

    # ------------------------------------------------------------------ load / update
    def _load(self, db: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
        protocol = json.loads(row["protocol"])
        props = dict(json.loads(row["properties"]))
        props["delta.minReaderVersion"] = str(protocol.get("min-reader-version", 1))
        props["delta.minWriterVersion"] = str(protocol.get("min-writer-version", 2))
        for f in set(protocol.get("reader-features") or []) | set(protocol.get("writer-features") or []):
            props[f"delta.feature.{f}"] = "supported"
        props["delta.lastUpdateVersion"] = str(row["last_commit_version"])
        props["delta.lastCommitTimestamp"] = str(row["last_commit_ts"])
        meta = {"etag": row["etag"], "table-type": row["table_type"], "table-uuid": row["table_id"],
                "location": row["location"], "created-time": row["created_time"],
                "updated-time": row["updated_time"], "columns": json.loads(row["columns"]),
                "partition-columns": json.loads(row["partition_columns"]), "properties": props,
                "last-commit-version": row["last_commit_version"],
                "last-commit-timestamp-ms": row["last_commit_ts"]}
        out: dict[str, Any] = {"metadata": meta}
        if row["table_type"] == "MANAGED":
            out["commits"] = [self.commit_json(c) for c in db.execute(
                "SELECT * FROM commits WHERE table_id=? AND version>? ORDER BY version DESC",
                (row["table_id"], row["latest_backfilled"]))]
            out["latest-table-version"] = row["latest_version"]
        if row["uniform"]:
            out["uniform"] = json.loads(row["uniform"])
        return out

    @staticmethod
    def commit_json(c: sqlite3.Row) -> dict[str, Any]:
        return {"version": c["version"], "timestamp": c["timestamp"], "file-name": c["file_name"],
                "file-size": c["file_size"], "file-modification-timestamp": c["file_mod_ts"]}

    def load_table(self, catalog: str, schema: str, name: str) -> dict[str, Any]:
        with self.tx() as db:
            return self._load(db, self.table_row(db, catalog, schema, name))

    def table_location(self, catalog: str, schema: str, name: str) -> str:
        with self.tx() as db:
            return str(self.table_row(db, catalog, schema, name)["location"])

    def update_table(self, catalog: str, schema: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        reqs, updates = body.get("requirements"), body.get("updates")
        if not isinstance(reqs, list) or not reqs or not isinstance(updates, list) or not updates:
            raise bad_value("requirements and updates must be non-empty lists")
        req_types = [r.get("type") for r in reqs]
        actions = [u.get("action") for u in updates]
        if len(set(req_types)) != len(req_types) or len(set(actions)) != len(actions):
            raise bad_value("at most one requirement / update of each type")
        if "assert-table-uuid" not in req_types:
            raise bad_value("an assert-table-uuid requirement is required")
        by_action = {u["action"]: u for u in updates}
        with self.tx() as db:
            row = self.table_row(db, catalog, schema, name)
            tid = row["table_id"]
            for r in reqs:
                if r.get("type") == "assert-table-uuid" and r.get("uuid") != tid:
                    raise ApiError(409, "UpdateRequirementConflictException",
                                   f"table uuid is {tid}, not {r.get('uuid')}")
            add = by_action.get("add-commit")
            if add is not None and self.policy.idempotent_replay and self.is_replay(db, tid, add.get("commit") or {}):
                return self._load(db, row)  # idempotent whole-request no-op: the client lost our first answer
            for r in reqs:
                if r.get("type") == "assert-etag" and r.get("etag") != row["etag"]:
                    raise ApiError(409, "UpdateRequirementConflictException",
                                   f"etag is {row['etag']}, not {r.get('etag')}")
                if r.get("type") not in ("assert-table-uuid", "assert-etag"):
                    raise ApiError(400, "BadRequestException", f"unknown requirement {r.get('type')!r}")
            latest, backfilled = int(row["latest_version"]), int(row["latest_backfilled"])
            sets: dict[str, Any] = {}
            new_commit = None
            if add is not None:
                if row["table_type"] != "MANAGED":
                    raise bad_value("add-commit is for managed (catalog-managed) tables only")
                new_commit = self.validate_commit(add.get("commit") or {}, hyphen=True)
                if new_commit["version"] != latest + 1:
                    raise ApiError(409, "CommitVersionConflictException",
                                   f"commit version {new_commit['version']} rejected: latest ratified version is "
                                   f"{latest}, the next commit must be {latest + 1}")
            lbv = by_action.get("set-latest-backfilled-version")
            if lbv is not None:
                v = lbv.get("latest-published-version")
                if not isinstance(v, int) or v < 0:
                    raise bad_value("latest-published-version must be a non-negative integer")
                if v > latest:
                    raise bad_value(f"latest-published-version {v} is above the latest ratified version {latest}")
                if self.policy.verify_published:
                    missing = [u for u in range(backfilled + 1, v + 1) if _published(row["location"], u) is False]
                    if missing:
                        raise bad_value(f"versions {missing} are not published to _delta_log: publish before reporting")
                backfilled = max(backfilled, v)
                sets["latest_backfilled"] = backfilled
            if new_commit is not None:
                pending = new_commit["version"] - 1 - backfilled
                if pending >= self.policy.max_unpublished:
                    raise ApiError(429, "ResourceExhaustedException",
                                   f"{pending} ratified commits are not backfilled (limit "
                                   f"{self.policy.max_unpublished}): publish them and set-latest-backfilled-version")
            metadata_changed = self._apply_metadata_updates(row, by_action, sets, new_commit)
            if new_commit is not None:
                db.execute("INSERT INTO commits VALUES (?,?,?,?,?,?,?)",
                           (tid, new_commit["version"], new_commit["timestamp"], new_commit["file-name"],
                            new_commit["file-size"], new_commit["file-modification-timestamp"], now_ms()))
                sets["latest_version"] = new_commit["version"]
            if add is not None and add.get("uniform"):
                sets["uniform"] = json.dumps(add["uniform"])
            if metadata_changed:  # data-only commits and backfill reports keep the etag (spec: "Load a Table")
                sets["etag"] = uuid.uuid4().hex
            sets["updated_time"] = now_ms()
            db.execute(f"UPDATE tables SET {', '.join(f'{k}=?' for k in sets)} WHERE table_id=?",
                       (*sets.values(), tid))
            return self._load(db, self.table_row(db, catalog, schema, name))

    def is_replay(self, db: sqlite3.Connection, tid: str, commit: dict[str, Any]) -> bool:
        v = commit.get("version")
        fname = commit.get("file-name", commit.get("file_name"))
        if not isinstance(v, int) or not fname:
            return False
        got = db.execute("SELECT file_name FROM commits WHERE table_id=? AND version=?", (tid, v)).fetchone()
        return got is not None and got["file_name"] == fname

    @staticmethod
    def validate_commit(c: dict[str, Any], *, hyphen: bool) -> dict[str, Any]:
        keys = ("version", "timestamp", "file-name", "file-size", "file-modification-timestamp")
        out = {}
        for k in keys:
            wire = k if hyphen else k.replace("-", "_")
            if wire not in c:
                raise bad_value(f"commit {wire} is required")
            out[k] = c[wire]
        if not isinstance(out["version"], int) or out["version"] < 1:
            raise bad_value("commit version must be a positive integer (version 0 is created by createTable)")
        for k in ("timestamp", "file-size", "file-modification-timestamp"):
            if not isinstance(out[k], int) or out[k] <= 0:
                raise bad_value(f"commit {k} must be a positive integer")
        if not isinstance(out["file-name"], str) or "/" in out["file-name"] or not out["file-name"].endswith(
                ".json"):
            raise bad_value("commit file-name must be the staged commit's file name (<version>.<uuid>.json)")
        if not out["file-name"].startswith(f"{out['version']:020d}."):
            raise bad_value("commit file-name must start with the zero-padded version")
        return out

    def _apply_metadata_updates(self, row: sqlite3.Row, by_action: dict[str, dict[str, Any]], sets: dict[str, Any],
                                new_commit: dict[str, Any] | None) -> bool:
        """Apply the metadata actions to `sets`; True when table metadata changed (a new etag)."""
        known = {"add-commit", "set-latest-backfilled-version", "set-properties", "remove-properties", "set-columns",
                 "set-table-comment", "set-protocol", "set-domain-metadata", "remove-domain-metadata",
                 "set-partition-columns", "update-metadata-snapshot-version"}
        unknown = set(by_action) - known
        if unknown:
            raise ApiError(400, "BadRequestException", f"unknown update actions {sorted(unknown)}")
        props = dict(json.loads(row["properties"]))
        changed = False
        if "set-properties" in by_action:
            ups = by_action["set-properties"].get("updates") or {}
            removals = (by_action.get("remove-properties") or {}).get("removals") or []
            if set(ups) & set(removals):
                raise bad_value("set-properties and remove-properties share keys")
            bad = [k for k in ups if k in DERIVED_PROPERTIES or k.startswith("delta.feature.")]
            if bad:
                raise bad_value(f"server-derived properties may not be set: {bad}")
            props.update({k: str(v) for k, v in ups.items()})
            changed = True
        if "remove-properties" in by_action:
            for k in by_action["remove-properties"].get("removals") or []:
                props.pop(k, None)
            changed = True
        if changed:
            sets["properties"] = json.dumps(props)
        if "set-columns" in by_action:
            sets["columns"] = json.dumps(by_action["set-columns"]["columns"])
            changed = True
        if "set-table-comment" in by_action:
            sets["comment"] = by_action["set-table-comment"]["comment"]
            changed = True
        if "set-protocol" in by_action:
            sets["protocol"] = json.dumps(by_action["set-protocol"]["protocol"])
            changed = True
        if "set-partition-columns" in by_action:
            sets["partition_columns"] = json.dumps(by_action["set-partition-columns"]["partition-columns"])
            changed = True
        dm = dict(json.loads(row["domain_metadata"]))
        if set((by_action.get("set-domain-metadata") or {}).get("updates") or {}) & set(
                (by_action.get("remove-domain-metadata") or {}).get("domains") or []):
            raise bad_value("set-domain-metadata and remove-domain-metadata share domains")
        if "set-domain-metadata" in by_action:
            dm.update(by_action["set-domain-metadata"].get("updates") or {})
            sets["domain_metadata"] = json.dumps(dm)
            changed = True
        if "remove-domain-metadata" in by_action:
            for d in by_action["remove-domain-metadata"].get("domains") or []:
                dm.pop(d, None)
            sets["domain_metadata"] = json.dumps(dm)
            changed = True
        if "update-metadata-snapshot-version" in by_action:
            if row["table_type"] != "EXTERNAL":
                raise bad_value("update-metadata-snapshot-version is for external tables only")
            u = by_action["update-metadata-snapshot-version"]
            sets["last_commit_version"] = int(u["last-commit-version"])
            sets["last_commit_ts"] = int(u["last-commit-timestamp-ms"])
            return True
        if changed:
            version = new_commit["version"] if new_commit else int(row["latest_version"])
            sets["last_commit_version"] = version
            sets["last_commit_ts"] = new_commit["timestamp"] if new_commit else now_ms()
        return changed

    def delete_table(self, catalog: str, schema: str, name: str) -> None:
        with self.tx() as db:
            row = self.table_row(db, catalog, schema, name)
            db.execute("DELETE FROM tables WHERE table_id=?", (row["table_id"],))
            db.execute("DELETE FROM commits WHERE table_id=?", (row["table_id"],))

    def rename_table(self, catalog: str, schema: str, name: str, new_name: str) -> None:
        if not new_name:
            raise bad_value("new-name is required")
        with self.tx() as db:
            row = self.table_row(db, catalog, schema, name)
            if db.execute("SELECT 1 FROM tables WHERE catalog=? AND schema=? AND name=?",
                          (catalog, schema, new_name)).fetchone():
                raise ApiError(409, "AlreadyExistsException", f"table {catalog}.{schema}.{new_name} already exists")
            db.execute("UPDATE tables SET name=?, etag=? WHERE table_id=?", (new_name, uuid.uuid4().hex,
                                                                               row["table_id"]))

    def check_metrics(self, catalog: str, schema: str, name: str, table_id: str | None) -> None:
        with self.tx() as db:
            if self.table_row(db, catalog, schema, name)["table_id"] != table_id:
                raise bad_value("table-id does not match the table in the path")

    # ------------------------------------------------------------------ inspection for tests
    def ratified(self, table_id: str) -> list[tuple[int, str]]:
        """Every (version, file name) ever ratified for a table, in version order."""
        with self._lock:
            return [(r["version"], r["file_name"]) for r in self._db.execute(
                "SELECT version, file_name FROM commits WHERE table_id=? ORDER BY version", (table_id,))]
