"""Credential vendors for the test catalog: what `.../credentials` endpoints hand out for a location.

Why real STS credentials for S3: a vended credential is only proven useful if storage accepts it. The moto server
the S3 tests already run answers STS `GetSessionToken` with a temporary key id, secret and session token plus an
expiry, which is what Unity Catalog vends on AWS; deltakernel then reads and writes the table with them.
`StaticVendor` covers Azure / GCS shapes (and expiry control for refresh tests) without a cloud.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

Vendor = Callable[[str, str], list[dict[str, Any]]]


def _prefix(location: str) -> str:
    return location.rstrip("/") + "/"


def no_credentials(location: str, operation: str) -> list[dict[str, Any]]:
    """Local (`file://`) tables need none."""
    return []


class StaticVendor:
    """Vends `config` for any location, expiring `lifetime` seconds after each vend (`clock`: epoch seconds)."""

    def __init__(self, config: dict[str, str], lifetime: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.config, self.lifetime, self.clock = config, lifetime, clock
        self.calls: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, location: str, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            self.calls.append((location, operation))
            n = len(self.calls)
        cfg = {k: (f"{v}-{n}" if k.endswith(("token", "key-id")) else v) for k, v in self.config.items()}
        return [{"prefix": _prefix(location), "operation": operation, "config": cfg,
                 "expiration-time-ms": int((self.clock() + self.lifetime) * 1000)}]


class MotoStsVendor:
    """Temporary S3 credentials from moto's STS (`GetSessionToken`), scoped by prefix to the location."""

    def __init__(self, endpoint: str, duration_seconds: int = 900) -> None:
        import boto3

        self._sts = boto3.client("sts", endpoint_url=endpoint, aws_access_key_id="root", aws_secret_access_key="root",
                                 region_name="us-east-1")
        self.duration_seconds = duration_seconds
        self.calls: list[tuple[str, str]] = []

    def __call__(self, location: str, operation: str) -> list[dict[str, Any]]:
        self.calls.append((location, operation))
        if not location.startswith(("s3://", "s3a://")):
            return []
        creds = self._sts.get_session_token(DurationSeconds=self.duration_seconds)["Credentials"]
        return [{"prefix": _prefix(location), "operation": operation,
                 "config": {"s3.access-key-id": creds["AccessKeyId"], "s3.secret-access-key": creds["SecretAccessKey"],
                            "s3.session-token": creds["SessionToken"]},
                 "expiration-time-ms": int(creds["Expiration"].timestamp() * 1000)}]
