"""Where the catalog is and who we are: a Unity Catalog URL and bearer token from storage options or the environment.

Why these names: users of deltalake already set `DATABRICKS_HOST` / `DATABRICKS_TOKEN` (delta-rs reads any
`DATABRICKS_*` / `UNITY_*` variable through its key table: `databricks_host`, `unity_workspace_url`,
`databricks_token`, `unity_access_token`, ...), and OSS Unity Catalog users think in `UNITY_CATALOG_URL` /
`UNITY_CATALOG_TOKEN`. All of them are accepted, case-insensitively, storage options first, then the environment.
The URL may be a bare workspace host (`https://adb-1.azuredatabricks.net`, `localhost:8080`) or already end in
`/api/2.1/unity-catalog`; the REST base is derived either way. Plain `http://` is refused for non-loopback hosts
(the bearer token would travel in clear) unless `unity_allow_http_url=true`, as delta-rs does. https trusts the
system's CAs (or `SSL_CERT_FILE`), plus `unity_catalog_ca_file` when given (a private CA).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from deltakernel.unity.errors import UCConfigurationError

API_PATH = "/api/2.1/unity-catalog"

#: accepted keys, most specific first (storage options and lowercased environment names alike)
URL_KEYS = ("unity_catalog_url", "databricks_host", "unity_workspace_url", "databricks_workspace_url",
            "workspace_url")
TOKEN_KEYS = ("unity_catalog_token", "databricks_token", "unity_access_token", "databricks_access_token",
              "access_token")
ALLOW_HTTP_KEYS = ("unity_allow_http_url", "unity_catalog_allow_http")
CA_FILE_KEY = "unity_catalog_ca_file"
TIMEOUT_KEY = "unity_catalog_timeout"
CONNECT_TIMEOUT_KEY = "unity_catalog_connect_timeout"

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 10.0

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


@dataclass(frozen=True)
class UCConfig:
    """`base_url` ends in `/api/2.1/unity-catalog` (no trailing slash); `timeout` bounds each socket read,
    `connect_timeout` the connection set-up: no request can hang."""

    base_url: str
    token: str | None
    timeout: float = DEFAULT_TIMEOUT
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    #: PEM bundle of CAs to trust for https (default: the system's, or SSL_CERT_FILE / SSL_CERT_DIR)
    ca_file: str | None = None

    def __repr__(self) -> str:  # never print the token
        return f"UCConfig(base_url={self.base_url!r}, token={'***' if self.token else None})"


def _truthy(v: str) -> bool:
    return v.strip().lower() in {"1", "true", "yes", "on"}


def _lookup(keys: tuple[str, ...], options: Mapping[str, str], env: Mapping[str, str]) -> str | None:
    lowered = {str(k).strip().lower(): str(v) for k, v in options.items()}
    for k in keys:
        if lowered.get(k):
            return lowered[k]
    env_lowered = {k.lower(): v for k, v in env.items()}
    for k in keys:
        if env_lowered.get(k):
            return env_lowered[k]
    return None


def normalize_base_url(url: str, *, allow_http: bool = False) -> str:
    """The REST base for a host or full URL (see module docstring)."""
    raw = url.strip()
    if "://" not in raw:
        raw = "https://" + raw
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UCConfigurationError(f"Unity Catalog URL {url!r}: expected http(s)://host[:port][/path]")
    if parts.scheme == "http" and not allow_http and (parts.hostname or "") not in _LOOPBACK:
        raise UCConfigurationError(
            f"Unity Catalog URL {url!r} is plain http to a remote host (the token would travel in clear); "
            "use https, or set unity_allow_http_url=true")
    path = parts.path.rstrip("/")
    if not path.endswith(API_PATH):
        path = path + API_PATH
    return f"{parts.scheme}://{parts.netloc}{path}"


def _seconds(key: str, value: str | None, default: float) -> float:
    if value is None:
        return default
    try:
        out = float(value.strip().rstrip("s"))
    except ValueError as exc:
        raise UCConfigurationError(f"{key}={value!r}: expected seconds") from exc
    if out <= 0:
        raise UCConfigurationError(f"{key}={value!r}: must be positive (requests always have a timeout)")
    return out


def resolve_config(storage_options: Mapping[str, str] | None = None,
                   env: Mapping[str, str] | None = None) -> UCConfig:
    """The catalog configuration from `storage_options` (first) and `env` (default: `os.environ`)."""
    options = storage_options or {}
    environ = os.environ if env is None else env
    url = _lookup(URL_KEYS, options, environ)
    if not url:
        raise UCConfigurationError(
            "no Unity Catalog URL: set DATABRICKS_HOST or UNITY_CATALOG_URL (storage option or environment)")
    allow_http = _truthy(_lookup(ALLOW_HTTP_KEYS, options, environ) or "")
    return UCConfig(
        base_url=normalize_base_url(url, allow_http=allow_http),
        token=_lookup(TOKEN_KEYS, options, environ),
        timeout=_seconds(TIMEOUT_KEY, _lookup((TIMEOUT_KEY,), options, environ), DEFAULT_TIMEOUT),
        connect_timeout=_seconds(CONNECT_TIMEOUT_KEY, _lookup((CONNECT_TIMEOUT_KEY,), options, environ),
                                 DEFAULT_CONNECT_TIMEOUT),
        ca_file=_lookup((CA_FILE_KEY,), options, environ),
    )


def is_uc_option(key: str) -> bool:
    """True for the keys this module reads (so callers can keep them out of the object store's options)."""
    k = key.strip().lower()
    return (k in URL_KEYS or k in TOKEN_KEYS or k in ALLOW_HTTP_KEYS
            or k in (TIMEOUT_KEY, CONNECT_TIMEOUT_KEY, CA_FILE_KEY))
