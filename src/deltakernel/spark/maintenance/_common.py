"""What the Spark maintenance commands share: session confs, commit options, executor-side state.

Executors rebuild what they need from plain values (URIs, storage options, the protocol and metadata) rather
than from pickled driver objects: a Snapshot holds the whole file table and object-store clients do not pickle.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from ...errors import DeltaError
from ...kernel.log.replay import ReplayResult
from ...kernel.log.segment import LogSegment, commit_key
from ...kernel.snapshot import Snapshot
from ...operations.properties import CommitProperties
from ...storage import Storage, storage_for_uri

ENGINE_INFO = "deltakernel-spark/0.1.0"
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


def conf(spark: Any, key: str, default: str | None = None) -> str | None:
    """A session conf value as a string (None when unset and no default)."""
    try:
        value = spark.conf.get(key, None)
    except Exception:
        value = None
    return str(value) if value is not None else default


def conf_flag(spark: Any, key: str, default: bool) -> bool:
    raw = conf(spark, key)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise DeltaError(f"{key} must be true or false, got {raw!r}")
    return text == "true"


def commit_properties(spark: Any) -> CommitProperties:
    """`spark.databricks.delta.commitInfo.userMetadata`, recorded on every commit as delta-spark does."""
    meta = conf(spark, USER_METADATA_CONF)
    return CommitProperties(custom_metadata={"userMetadata": meta} if meta else None)


def spark_timestamp(spark: Any, text: str) -> Any:
    """A timestamp string as Spark reads it (`yyyy-MM-dd`, `yyyy-MM-dd HH:mm:ss`, ISO-8601; the session time
    zone when none is given) -> an aware UTC datetime. Spark itself parses it: one tiny local query."""
    import datetime as dt

    from pyspark.sql import functions as F

    if not isinstance(text, str):
        raise DeltaError(f"timestamp needs to be a string but got {type(text)}")
    lit = F.lit(text)
    ts = lit.try_cast("timestamp") if hasattr(lit, "try_cast") else lit.cast("timestamp")  # ANSI mode: NULL
    row = spark.range(1).select(F.unix_micros(ts).alias("us")).first()
    if row is None or row["us"] is None:
        raise DeltaError(f"the provided timestamp ({text}) cannot be converted to a valid timestamp")
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(row["us"]))


def commit_info(storage: Storage, version: int) -> dict[str, Any]:
    """The commitInfo action of one commit (its operationMetrics are what delta-spark's DataFrames report)."""
    for line in storage.read(commit_key(version)).splitlines():
        if b'"commitInfo"' in line:
            info = json.loads(line).get("commitInfo")
            if isinstance(info, dict):
                return info
    return {}


def long_metric(info: dict[str, Any], key: str) -> int:
    value = (info.get("operationMetrics") or {}).get(key)
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


# ----------------------------------------------------------------------------- executor side
_LOCK = threading.Lock()
_STORAGES: dict[tuple[str, tuple[tuple[str, str], ...]], Storage] = {}


def executor_storage(uri: str, options: dict[str, str] | None) -> Storage:
    """One storage per (URI, options) per Python worker process."""
    key = (uri, tuple(sorted((options or {}).items())))
    with _LOCK:
        found = _STORAGES.get(key)
        if found is None:
            found = _STORAGES[key] = storage_for_uri(uri, options)
        return found


@dataclasses.dataclass(frozen=True)
class SnapshotState:
    """A snapshot without its file table, for executors: what the kernel's reader and writers need to read
    and write one table's files (protocol, metadata, version), shipped as plain picklable values."""

    uri: str
    storage_options: dict[str, str] | None
    version: int
    result: ReplayResult

    @classmethod
    def of(cls, snapshot: Snapshot, uri: str, storage_options: dict[str, str] | None) -> SnapshotState:
        full = snapshot._result
        light = dataclasses.replace(full, files=full.files.slice(0, 0), tombstones=full.tombstones.slice(0, 0),
                                    txns={}, commit_infos={})
        return cls(uri, storage_options, snapshot.version, light)

    def snapshot(self) -> Snapshot:
        storage = executor_storage(self.uri, self.storage_options)
        return Snapshot(storage, LogSegment(storage, self.version, None), self.result)


__all__ = ["ENGINE_INFO", "SnapshotState", "commit_info", "commit_properties", "conf", "conf_flag",
           "executor_storage", "long_metric", "spark_timestamp"]
