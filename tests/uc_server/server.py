"""A Unity-Catalog-compatible HTTP server for tests, on 127.0.0.1 and a free port.

Why the standard library's `ThreadingHTTPServer`: no dependency to install or pin, one thread per request (so two
writers really race into the store's transaction), and direct access to the socket, which fault injection needs
to drop a connection without an answer. The routes follow api/delta.yaml (`/delta/v1/...`) and the older UC API
(`/catalogs`, `/schemas`, `/tables`, `/delta/preview/commits`) under `/api/2.1/unity-catalog`, each answering
errors in its API's format. The rules live in `store.py` (and `older_api.py`); this module does routing,
bearer tokens and faults.

Faults (`inject`): per operation id (`updateTable`, `commit`, `loadTable`, ...), `times` requests in a row:
- `delay`: wait `delay` seconds, then handle normally (a client timeout shorter than that sees a lost answer
  while the server still applies the change);
- `error_before` / `drop_before`: answer `status` / close the connection without touching the state;
- `error_after` / `drop_after`: apply the request, then answer `status` (a 500 after ratify) or close the
  connection without an answer (the response lost after ratify).
`delta_api=False` makes the server an older one: every `/delta/v1` path answers 404.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import older_api
from .store import ApiError, CatalogStore, Policy
from .vending import Vendor, no_credentials

API = "/api/2.1/unity-catalog"
_SEG = r"([^/]+)"
_T = rf"/delta/v1/catalogs/{_SEG}/schemas/{_SEG}/tables/{_SEG}"

#: (method, path regex below API, operation id)
ROUTES: list[tuple[str, re.Pattern[str], str]] = [(m, re.compile(p + "$"), op) for m, p, op in [
    ("GET", r"/delta/v1/config", "getConfig"),
    ("POST", rf"/delta/v1/catalogs/{_SEG}/schemas/{_SEG}/staging-tables", "createStagingTable"),
    ("POST", rf"/delta/v1/catalogs/{_SEG}/schemas/{_SEG}/tables", "createTable"),
    ("GET", _T, "loadTable"),
    ("POST", _T, "updateTable"),
    ("DELETE", _T, "deleteTable"),
    ("HEAD", _T, "tableExists"),
    ("GET", _T + "/credentials", "getTableCredentials"),
    ("POST", _T + "/metrics", "reportMetrics"),
    ("POST", _T + "/rename", "renameTable"),
    ("GET", rf"/delta/v1/staging-tables/{_SEG}/credentials", "getStagingTableCredentials"),
    ("GET", r"/delta/v1/temporary-path-credentials", "getTemporaryPathCredentials"),
    ("POST", r"/catalogs", "createCatalog"),
    ("POST", r"/schemas", "createSchema"),
    ("POST", r"/staging-tables", "createStagingTableLegacy"),
    ("POST", r"/tables", "createTableLegacy"),
    ("GET", r"/tables", "listTables"),
    ("GET", rf"/tables/{_SEG}", "getTable"),
    ("GET", r"/delta/preview/commits", "getCommits"),
    ("POST", r"/delta/preview/commits", "commit"),
]]

#: what getConfig advertises (delta.yaml's example list, protocol 1.0)
ENDPOINTS = [
    "POST /v1/catalogs/{catalog}/schemas/{schema}/staging-tables",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "DELETE /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "HEAD /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/rename",
    "GET /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/credentials",
    "POST /v1/catalogs/{catalog}/schemas/{schema}/tables/{table}/metrics",
    "GET /v1/staging-tables/{table_id}/credentials",
    "GET /v1/temporary-path-credentials",
]

FAULT_KINDS = ("delay", "error_before", "error_after", "drop_before", "drop_after")


@dataclass
class Fault:
    operation: str
    kind: str
    times: int = 1
    status: int = 500
    error_type: str = "InternalServerErrorException"
    delay: float = 0.0
    when: Callable[[dict[str, Any]], bool] | None = None  # only requests whose JSON body matches


@dataclass
class Logged:
    operation: str
    method: str
    path: str
    status: int | str  # "dropped" when the connection was closed without an answer
    body: Any = None


@dataclass
class _State:
    store: CatalogStore
    tokens: set[str]
    vendor: Vendor
    delta_api: bool
    faults: list[Fault] = field(default_factory=list)
    log: list[Logged] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # unexpected exceptions while handling (the fixture checks)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Drop(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    # ------------------------------------------------------------------ plumbing
    def _send(self, status: int, body: Any) -> None:
        payload = b"" if body is None or status == 204 else json.dumps(body).encode()
        self.send_response(status)
        if payload:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        self.end_headers()
        if payload and self.command != "HEAD":
            self.wfile.write(payload)
        self.close_connection = True

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    @staticmethod
    def _error_body(rel: str, status: int, error_type: str, message: str) -> dict[str, Any]:
        if rel.startswith("/delta/v1/"):
            return {"error": {"message": message, "type": error_type, "code": status}}
        return {"error_code": error_type, "message": message, "details": []}

    def _dispatch(self, method: str) -> None:
        st = self.server.state
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        rel = parts.path[len(API):] if parts.path.startswith(API) else None
        op, args = "unknown", ()
        if rel is not None:
            for m, rx, name in ROUTES:
                mt = rx.match(rel)
                if mt and m == method:
                    op, args = name, tuple(unquote(g) for g in mt.groups())
                    break
        entry = Logged(op, method, self.path, 0)
        with st.lock:
            st.log.append(entry)
        if rel is None or op == "unknown" or (not st.delta_api and rel.startswith("/delta/v1/")):
            entry.status = 404
            self._send(404, {"error_code": "NOT_FOUND", "message": f"no route {method} {parts.path}"})
            return
        auth = self.headers.get("Authorization", "")
        if st.tokens and not (auth.startswith("Bearer ") and auth[len("Bearer "):] in st.tokens):
            entry.status = 401
            etype = "NotAuthorizedException" if rel.startswith("/delta/v1/") else "UNAUTHENTICATED"
            self._send(401, self._error_body(rel, 401, etype, "missing or invalid bearer token"))
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            entry.status = 400
            self._send(400, self._error_body(rel, 400, "BadRequestException", "body is not JSON"))
            return
        entry.body = body
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        fault = self._take_fault(op, body)
        if fault is not None and fault.kind == "delay":
            st.stopping.wait(fault.delay)
            if st.stopping.is_set():  # the server is going away: leave the (closed) store alone
                entry.status = "dropped"
                self._drop()
                return
        if fault is not None and fault.kind == "drop_before":
            entry.status = "dropped"
            self._drop()
            return
        if fault is not None and fault.kind == "error_before":
            entry.status = fault.status
            self._send(fault.status, self._error_body(rel, fault.status, fault.error_type, "injected fault"))
            return
        try:
            status, out = self._handle(op, args, query, body)
        except ApiError as exc:
            entry.status = exc.status
            self._send(exc.status, self._error_body(rel, exc.status, exc.error_type, exc.message))
            return
        except Exception as exc:  # a malformed request the rules did not foresee, or a server bug: never silent
            with st.lock:
                st.errors.append(f"{op}: {type(exc).__name__}: {exc}")
            entry.status = 500
            self._send(500, self._error_body(rel, 500, "InternalServerErrorException", f"{type(exc).__name__}: "
                                             f"{exc}"))
            return
        if fault is not None and fault.kind == "drop_after":
            entry.status = "dropped"
            self._drop()
            return
        if fault is not None and fault.kind == "error_after":
            entry.status = fault.status
            self._send(fault.status, self._error_body(rel, fault.status, fault.error_type, "injected fault"))
            return
        entry.status = status
        self._send(status, out)

    def _take_fault(self, op: str, body: dict[str, Any]) -> Fault | None:
        st = self.server.state
        with st.lock:
            for f in st.faults:
                if f.operation == op and f.times > 0 and (f.when is None or f.when(body)):
                    f.times -= 1
                    return f
        return None

    # ------------------------------------------------------------------ operations
    def _handle(self, op: str, args: tuple[str, ...], query: dict[str, str],
                body: dict[str, Any]) -> tuple[int, Any]:
        st = self.server.state
        store = st.store
        if op == "getConfig":
            if not query.get("catalog") or not query.get("protocol-versions"):
                raise ApiError(400, "InvalidParameterValueException", "catalog and protocol-versions are required")
            majors = [v.strip().split(".")[0] for v in query["protocol-versions"].split(",")]
            if "1" not in majors:
                raise ApiError(400, "InvalidParameterValueException",
                               "no mutually supported protocol version (the server supports 1.0)")
            if not store.has_catalog(query["catalog"]):
                raise ApiError(404, "NoSuchCatalogException", f"catalog {query['catalog']} does not exist")
            return 200, {"endpoints": ENDPOINTS, "protocol-version": "1.0"}
        if op == "createStagingTable":
            resp = store.create_staging_table(args[0], args[1], body.get("name", ""))
            resp["storage-credentials"] = st.vendor(resp["location"], "READ_WRITE")
            return 200, resp
        if op == "createTable":
            return 200, store.create_table(args[0], args[1], body)
        if op == "loadTable":
            return 200, store.load_table(*args)
        if op == "updateTable":
            return 200, store.update_table(*args, body)
        if op == "deleteTable":
            store.delete_table(*args)
            return 204, None
        if op == "tableExists":
            store.load_table(*args)
            return 204, None
        if op == "renameTable":
            store.rename_table(*args, body.get("new-name", ""))
            return 204, None
        if op == "reportMetrics":
            store.check_metrics(*args, body.get("table-id"))
            return 204, None
        if op == "getTableCredentials":
            operation = query.get("operation")
            if operation not in ("READ", "READ_WRITE"):
                raise ApiError(400, "BadRequestException", "operation must be READ or READ_WRITE")
            return 200, {"storage-credentials": st.vendor(store.table_location(*args), operation)}
        if op == "getStagingTableCredentials":
            return 200, {"storage-credentials": st.vendor(store.staging_location(args[0]), "READ_WRITE")}
        if op == "getTemporaryPathCredentials":
            if not query.get("location") or query.get("operation") not in ("READ", "READ_WRITE"):
                raise ApiError(400, "BadRequestException", "location and operation (READ / READ_WRITE) required")
            return 200, {"storage-credentials": st.vendor(query["location"], query["operation"])}
        if op == "createCatalog":
            return 200, store.create_catalog(body.get("name", ""), body.get("comment"))
        if op == "createSchema":
            return 200, store.create_schema(body.get("catalog_name", ""), body.get("name", ""), body.get("comment"))
        if op == "createTableLegacy":
            return 200, older_api.create_table_legacy(store, body)
        if op == "createStagingTableLegacy":
            return 200, older_api.create_staging_table_legacy(store, body)
        if op == "listTables":
            return 200, older_api.list_tables_legacy(store, query)
        if op == "getTable":
            return 200, older_api.get_table_legacy(store, args[0])
        if op == "getCommits":
            return 200, older_api.get_commits(store, body)
        if op == "commit":
            return 200, older_api.commit(store, body)
        raise ApiError(404, "NotFoundException", op)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, state: _State) -> None:
        self.state = state
        super().__init__(("127.0.0.1", 0), _Handler)


class UCTestServer:
    """The server and its SQLite store. `tokens`: accepted bearer tokens (empty: no auth)."""

    def __init__(self, db_path: str, storage_root: str, *, tokens: tuple[str, ...] = ("uc-test-token",),
                 policy: Policy | None = None, vendor: Vendor = no_credentials, delta_api: bool = True,
                 tls: tuple[str, str] | None = None) -> None:
        """`tls`: (certificate PEM, key PEM) to serve https instead of http."""
        self.db_path, self.storage_root = db_path, storage_root
        self.store = CatalogStore(db_path, storage_root, policy)
        self.state = _State(self.store, set(tokens), vendor, delta_api)
        self._tls = tls
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> UCTestServer:
        self._httpd = _Server(self.state)
        if self._tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*self._tls)
            self._httpd.socket = ctx.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="uc-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.state.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.store.close()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The host URL (the client appends /api/2.1/unity-catalog)."""
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[Logged]:
        return self.state.log

    @property
    def errors(self) -> list[str]:
        """Unexpected exceptions raised while handling requests (answered as 500s)."""
        return self.state.errors

    def inject(self, operation: str, kind: str, **kw: Any) -> Fault:
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault kind {kind!r}: one of {FAULT_KINDS}")
        fault = Fault(operation, kind, **kw)
        with self.state.lock:
            self.state.faults.append(fault)
        return fault

    def set_vendor(self, vendor: Vendor) -> None:
        self.state.vendor = vendor

    def create_catalog(self, name: str) -> None:
        self.store.create_catalog(name)

    def create_schema(self, catalog: str, name: str) -> None:
        self.store.create_schema(catalog, name)
