"""One HTTP exchange with the catalog, with a timeout on every step and a typed outcome.

Why the standard library's `http.client` (and not requests / httpx / the `unitycatalog-client` package, see
docs/decisions.md): a commit client must know whether a request *left* this process. `http.client` lets the
connection be made first (under `connect_timeout`) and the request sent after, so "could not connect" (nothing
sent: safe to retry, `UCConnectionError`) is told apart from "sent, no answer" (`UCCommitStateUnknownError` for a
state-changing request). A fresh connection per request: a kept-alive connection the server closed while idle fails
only once the request is written, which would turn a harmless reconnect into an "outcome unknown" commit.

Reads (and anything not `mutating`) are retried on connection errors, 5xx and 429 rate limits with a short
exponential backoff; state-changing requests are retried only when nothing was sent.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from deltakernel.unity.config import UCConfig
from deltakernel.unity.errors import (
    UCCommitStateUnknownError,
    UCConnectionError,
    UCRateLimitedError,
    UCServerError,
    UnityCatalogError,
    error_for_status,
)

USER_AGENT = "deltakernel-unity"
MAX_BACKOFF_SECONDS = 10.0


def path_segment(value: str) -> str:
    """A name as one URL path segment (names may hold spaces, dots are kept)."""
    return quote(value, safe="")


class Transport:
    """Sends requests to `config.base_url`. `sleep` is injectable so tests of the retry loop need not wait."""

    def __init__(self, config: UCConfig, *, max_retries: int = 2, backoff: float = 0.2,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.max_retries = max_retries
        self.backoff = backoff
        self._sleep = sleep
        parts = urlsplit(config.base_url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or ""
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._ssl = ssl.create_default_context(cafile=config.ca_file) if self._https else None

    # ------------------------------------------------------------------ one attempt
    def _connect(self) -> http.client.HTTPConnection:
        """A connected connection, or UCConnectionError (nothing was sent)."""
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=self.config.connect_timeout,
                                               context=self._ssl)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.config.connect_timeout)
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise UCConnectionError(f"cannot reach Unity Catalog at {self.config.base_url}: {exc}") from exc
        assert conn.sock is not None
        conn.sock.settimeout(self.config.timeout)
        return conn

    def _once(self, method: str, url: str, payload: bytes | None, headers: dict[str, str],
              operation: str) -> tuple[int, Any, Mapping[str, str]]:
        conn = self._connect()
        try:
            try:
                conn.request(method, url, body=payload, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                # sent (at least partly) and no complete answer: the server may have acted on it
                kind = "timed out" if isinstance(exc, (socket.timeout, TimeoutError)) else "lost"
                raise _Lost(f"Unity Catalog {operation}: response {kind} ({exc})") from exc
        finally:
            conn.close()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"message": raw[:500].decode("utf-8", "replace")}
        return resp.status, body, {k.lower(): v for k, v in resp.getheaders()}

    # ------------------------------------------------------------------ the public call
    def request(self, method: str, path: str, *, operation: str, query: Mapping[str, Any] | None = None,
                body: Any = None, mutating: bool = False, commit: bool = False,
                extra_headers: Mapping[str, str] | None = None) -> Any:
        """The decoded JSON answer (None when empty) of a 2xx response; a typed `UnityCatalogError` otherwise.

        `path` is relative to the API base (`/delta/v1/...`); `mutating`: the request may change catalog state
        (5xx / lost answer -> `UCCommitStateUnknownError`, no retry once sent); `commit`: it ratifies a commit
        (409 -> `UCCommitConflictError`, 429 -> `UCTooManyUnpublishedCommitsError`)."""
        url = self._prefix + path
        if query:
            url += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        payload = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        if extra_headers:
            headers.update(extra_headers)
        attempt = 0
        while True:
            try:
                status, data, resp_headers = self._once(method, url, payload, headers, operation)
            except UCConnectionError:
                if attempt >= self.max_retries:
                    raise
                self._pause(attempt, None)
                attempt += 1
                continue
            except _Lost as exc:
                if mutating:
                    raise UCCommitStateUnknownError(str(exc), operation=operation) from exc
                if attempt >= self.max_retries:
                    raise UCServerError(str(exc), operation=operation) from exc
                self._pause(attempt, None)
                attempt += 1
                continue
            if 200 <= status < 300:
                return data
            err = error_for_status(status, data, operation=operation, mutating=mutating, commit=commit,
                                   retry_after=_retry_after(resp_headers))
            retryable = isinstance(err, UCRateLimitedError) or (type(err) is UCServerError and not mutating)
            if not retryable or attempt >= self.max_retries:
                raise err
            self._pause(attempt, getattr(err, "retry_after", None))
            attempt += 1

    def _pause(self, attempt: int, retry_after: float | None) -> None:
        """Back off before a retry: the server's Retry-After, else exponential; capped, so nothing waits long."""
        wait = retry_after if retry_after is not None else self.backoff * (2 ** attempt)
        self._sleep(min(wait, MAX_BACKOFF_SECONDS))


class _Lost(UnityCatalogError):
    """Internal: the request was sent and no complete answer came back."""


def _retry_after(headers: Mapping[str, str]) -> float | None:
    v = headers.get("retry-after")
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None
