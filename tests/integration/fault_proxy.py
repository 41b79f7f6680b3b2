"""A fault-injecting HTTP proxy on 127.0.0.1 in front of the S3-compatible server (moto).

Per matching request it can
- ``drop_after_store``: forward the request (the server stores the object), then close the connection
  without answering — the client sees a reset / empty reply;
- ``500_after_store``: forward the request, then answer 500 InternalError;
- ``503_no_store``: answer 503 SlowDown without forwarding (nothing is stored).
Faults are queued (``add_faults``) for the next matching requests, or drawn at random (``random_faults``)
with a seeded generator. Every request is logged so tests can assert a fault really fired.
Only loopback addresses are used; the proxy stops with the test.
"""

from __future__ import annotations

import http.client
import random
import re
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

FAULTS = ("drop_after_store", "500_after_store", "503_no_store")
COMMIT_PUT = re.compile(r"/_delta_log/\d{20}\.json$")

_ERROR_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>injected fault</Message>'
    "<RequestId>fault-proxy</RequestId></Error>"
)


def is_commit_put(method: str, path: str) -> bool:
    return method == "PUT" and bool(COMMIT_PUT.search(path.split("?", 1)[0]))


@dataclass
class Logged:
    method: str
    path: str
    fault: str | None
    status: int | None


@dataclass
class FaultPlan:
    match: Callable[[str, str], bool] = is_commit_put
    queued: list[str] = field(default_factory=list)
    probability: float = 0.0
    kinds: tuple[str, ...] = FAULTS
    rng: random.Random = field(default_factory=lambda: random.Random(0))


class FaultProxy:
    """`with FaultProxy(upstream) as proxy:` then point storage_options at `proxy.endpoint`."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        assert parts.hostname in ("127.0.0.1", "localhost"), "the proxy only forwards to loopback"
        self.upstream = (parts.hostname, parts.port or 80)
        self.plan = FaultPlan()
        self.log: list[Logged] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._next_fault(self.command, self.path)
                if fault == "503_no_store":
                    proxy._record(self.command, self.path, fault, 503)
                    self._reply(503, _ERROR_XML.format(code="SlowDown").encode(), {"Content-Type": "application/xml"})
                    return
                status, headers, data = proxy._forward(self.command, self.path, dict(self.headers.items()), body)
                if fault == "drop_after_store":
                    proxy._record(self.command, self.path, fault, None)
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault == "500_after_store":
                    proxy._record(self.command, self.path, fault, 500)
                    self._reply(500, _ERROR_XML.format(code="InternalError").encode(),
                                {"Content-Type": "application/xml"})
                    return
                proxy._record(self.command, self.path, None, status)
                self._reply(status, data, headers, head=self.command == "HEAD")

            def _reply(self, status: int, data: bytes, headers: dict[str, str], head: bool = False) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                        self.send_header(k, v)
                if head and "content-length" in {k.lower() for k in headers}:
                    self.send_header("Content-Length", next(v for k, v in headers.items()
                                                            if k.lower() == "content-length"))
                else:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------------ control
    def add_faults(self, *kinds: str) -> None:
        with self._lock:
            self.plan.queued.extend(kinds)

    def random_faults(self, probability: float, seed: int, kinds: tuple[str, ...] = FAULTS) -> None:
        with self._lock:
            self.plan.probability, self.plan.kinds, self.plan.rng = probability, kinds, random.Random(seed)

    def clear(self) -> None:
        with self._lock:
            self.plan.queued.clear()
            self.plan.probability = 0.0
            self.log.clear()

    def fired(self) -> list[Logged]:
        with self._lock:
            return [entry for entry in self.log if entry.fault is not None]

    # ------------------------------------------------------------------ internals
    def _next_fault(self, method: str, path: str) -> str | None:
        with self._lock:
            if not self.plan.match(method, path):
                return None
            if self.plan.queued:
                return self.plan.queued.pop(0)
            if self.plan.probability and self.plan.rng.random() < self.plan.probability:
                return self.plan.rng.choice(self.plan.kinds)
            return None

    def _record(self, method: str, path: str, fault: str | None, status: int | None) -> None:
        with self._lock:
            self.log.append(Logged(method, path, fault, status))

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes
                 ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            conn.request(method, path, body=body if body or method in ("PUT", "POST") else None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, dict(resp.getheaders()), data
        finally:
            conn.close()

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    with FaultProxy(upstream) as proxy:
        yield proxy
