"""Vended temporary credentials -> deltakernel storage options, refreshed before they expire.

Why storage options: deltakernel's object stores are configured by deltalake-style string options (see
`deltakernel.storage.object_store.split_storage_options`), so a vended credential becomes
`aws_access_key_id` / `aws_secret_access_key` / `aws_session_token` (S3), `azure_storage_sas_token` (Azure) or
`google_bearer_token` (GCS), merged over the user's own options (endpoint, region, allow_http stay theirs).
Of several credentials the one with the longest matching prefix wins, as delta.yaml asks.

Why a refresher: vended credentials live about an hour, a table handle can live longer. `VendedCredentials`
caches one vend and re-vends once `now >= expiry - skew` (default skew 60 s; never more often than
`min_interval`, so an already-expired or very short token cannot turn every storage call into a catalog call).
`obstore_credential_provider()` gives the same cache in the callable form obstore stores accept
(`credential_provider=`), for a store that refreshes by itself mid-operation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from deltakernel.unity.errors import UnityCatalogError
from deltakernel.unity.models import StorageCredential

#: vended config key -> deltakernel / object_store storage option
_KEY_MAP = {
    "s3.access-key-id": "aws_access_key_id",
    "s3.secret-access-key": "aws_secret_access_key",
    "s3.session-token": "aws_session_token",
    "azure.sas-token": "azure_storage_sas_token",
    "gcs.oauth-token": "google_bearer_token",
}

DEFAULT_SKEW_SECONDS = 60.0
DEFAULT_MIN_INTERVAL_SECONDS = 5.0


def _norm(uri: str) -> str:
    return uri.rstrip("/") + "/"


def select_credential(credentials: Sequence[StorageCredential], location: str) -> StorageCredential | None:
    """The credential whose prefix is the longest one covering `location` (None: none covers it)."""
    loc = _norm(location)
    best: StorageCredential | None = None
    for c in credentials:
        if loc.startswith(_norm(c.prefix)) and (best is None or len(c.prefix) > len(best.prefix)):
            best = c
    return best


def to_storage_options(credential: StorageCredential | None,
                       base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (the user's options) with the credential's keys laid over it. Keys of the same cloud in `base` that
    would fight the vended ones (a static key id next to a vended one) are replaced, not mixed."""
    out = {k: v for k, v in (base or {}).items()}
    if credential is None:
        return out
    vended = {_KEY_MAP[k]: v for k, v in credential.config.items() if k in _KEY_MAP and v}
    unknown = sorted(k for k in credential.config if k not in _KEY_MAP)
    if not vended and unknown:
        raise UnityCatalogError(f"vended credential for {credential.prefix!r} has no known key: {unknown}")
    if any(k.startswith("aws_") for k in vended):
        for k in [k for k in out if k.lower() in ("aws_access_key_id", "aws_secret_access_key",
                                                   "aws_session_token", "aws_profile")]:
            del out[k]
    if "azure_storage_sas_token" in vended:
        for k in [k for k in out if k.lower() in ("azure_storage_account_key", "azure_storage_access_key",
                                                   "azure_storage_sas_key", "azure_storage_sas_token")]:
            del out[k]
    if "google_bearer_token" in vended:
        for k in [k for k in out if k.lower() in ("google_service_account", "google_service_account_key",
                                                   "google_application_credentials", "google_bearer_token")]:
            del out[k]
    out.update(vended)
    return out


class VendedCredentials:
    """A cached vend for one location. `vend()` asks the catalog (a table's, a staging table's or a path's
    credentials endpoint) and returns its credentials; `clock` returns seconds since the epoch (injectable)."""

    def __init__(self, vend: Callable[[], Sequence[StorageCredential]], location: str,
                 base_options: Mapping[str, str] | None = None, *, skew: float = DEFAULT_SKEW_SECONDS,
                 min_interval: float = DEFAULT_MIN_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.time) -> None:
        self._vend = vend
        self.location = location
        self.base_options = dict(base_options or {})
        self.skew = skew
        self.min_interval = min_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._credential: StorageCredential | None = None
        self._refresh_at = float("-inf")
        self.vends = 0  # how many times the catalog was asked (observability, tests)

    def _current(self) -> StorageCredential | None:
        with self._lock:  # held across the vend: concurrent callers wait for one refresh
            now = self._clock()
            if now < self._refresh_at:
                return self._credential
            cred = select_credential(list(self._vend()), self.location)
            self.vends += 1
            self._credential = cred
            if cred is None or cred.expiration_time_ms <= 0:
                self._refresh_at = float("inf")  # nothing vended for this location / no expiry: static
            else:
                self._refresh_at = max(cred.expiration_time_ms / 1000.0 - self.skew, now + self.min_interval)
            return cred

    def credential(self) -> StorageCredential | None:
        """The current credential for the location, re-vended if it is due."""
        return self._current()

    def storage_options(self) -> dict[str, str]:
        """The user's options with the current credential over them (re-vended if due)."""
        return to_storage_options(self._current(), self.base_options)

    @property
    def expires_at(self) -> float | None:
        """Expiry of the cached credential in epoch seconds (None: none cached or no expiry)."""
        c = self._credential
        return None if c is None or c.expiration_time_ms <= 0 else c.expiration_time_ms / 1000.0

    def obstore_credential_provider(self) -> Callable[[], dict[str, Any]]:
        """A callable for obstore's `credential_provider=`: S3 `{access_key_id, secret_access_key, token,
        expires_at}`, Azure `{sas_token, expires_at}` or GCS `{token, expires_at}` from the cache."""

        def provide() -> dict[str, Any]:
            cred = self._current()
            if cred is None:
                raise UnityCatalogError(f"Unity Catalog vended no credential for {self.location}")
            cfg = cred.config
            expires = (datetime.fromtimestamp(cred.expiration_time_ms / 1000.0, tz=timezone.utc)
                       if cred.expiration_time_ms > 0 else None)
            if "s3.access-key-id" in cfg:
                return {"access_key_id": cfg["s3.access-key-id"], "secret_access_key": cfg["s3.secret-access-key"],
                        "token": cfg.get("s3.session-token"), "expires_at": expires}
            if "azure.sas-token" in cfg:
                return {"sas_token": cfg["azure.sas-token"], "expires_at": expires}
            if "gcs.oauth-token" in cfg:
                return {"token": cfg["gcs.oauth-token"], "expires_at": expires}
            raise UnityCatalogError(f"vended credential for {cred.prefix!r} has no known key: {sorted(cfg)}")

        return provide
