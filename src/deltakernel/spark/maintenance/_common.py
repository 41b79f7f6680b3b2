"""What the Spark maintenance commands share: session confs, commit options, executor-side state.

Executors rebuild what they need from plain values (URIs, storage options, the protocol and metadata) rather
than from pickled driver objects: a Snapshot holds the whole file table and object-store clients do not pickle.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ...errors import DeltaError, InvalidArgumentValueError
from ...kernel.log.replay import ReplayResult
from ...kernel.log.segment import LogSegment, commit_key, version_of
from ...kernel.snapshot import Snapshot
from ...operations.commit_options import CommitProperties
from ...storage import Storage, storage_for_uri
from ..common import error_classes as ec

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
        raise InvalidArgumentValueError(f"timestamp needs to be a string but got '{type(text)}'.")
    lit = F.lit(text)
    ts = lit.try_cast("timestamp") if hasattr(lit, "try_cast") else lit.cast("timestamp")  # ANSI mode: NULL
    row = spark.range(1).select(F.unix_micros(ts).alias("us")).first()
    if row is None or row["us"] is None:
        quoted = "'" + text.replace("'", "\\'") + "'"  # delta-spark prints the literal's SQL
        raise InvalidArgumentValueError(ec.classed(ec.TIMESTAMP_INVALID, f"The provided timestamp ({quoted}) cannot "
                                                   "be converted to a valid timestamp."))
    return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(row["us"]))


def commit_info(storage: Storage, version: int) -> dict[str, Any]:
    """The commitInfo action of one commit (its operationMetrics are what delta-spark's DataFrames report)."""
    key = commit_key(version)
    catalog = getattr(storage, "catalog", None)
    if catalog is not None:  # catalog-managed (uc://): the ratified commit may not be published yet
        key = next((m.key for m in catalog.get_log_tail().commits if version_of(m.key) == version), key)
    for line in storage.read(key).splitlines():
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


# ----------------------------------------------------------------------------- jobs over driver-side items
def map_partitions(spark: Any, items: Sequence[Any], task: Callable[[Iterator[Any]], Iterable[Any]],
                   slices: int) -> list[Any]:
    """`sparkContext.parallelize(items, slices).mapPartitions(task).collect()` with the public DataFrame API
    (both session kinds; Spark Connect has no `sparkContext`).

    The items are cut into `slices` contiguous chunks, as `parallelize` cuts them; `spark.range(slices)` with
    `slices` partitions (one chunk index each, no shuffle) is joined with the pickled chunks (a broadcast:
    each executor receives them once, the partitioning of the range is kept), and one `mapInArrow` task per
    partition runs `task` over its chunk's items. What `task` yields comes back pickled: keep it small."""
    import pickle

    import pyarrow as pa
    from pyspark.sql import functions as F

    if not items:
        return []
    n = max(1, min(len(items), int(slices)))
    bounds = [len(items) * k // n for k in range(n + 1)]
    chunks = [pickle.dumps(list(items[bounds[k]:bounds[k + 1]])) for k in range(n)]
    table = pa.table({"__dk_chunk": pa.array(range(n), pa.int64()), "__dk_items": pa.array(chunks, pa.binary())})
    ids = spark.range(0, n, 1, n)
    frame = ids.join(F.broadcast(spark.createDataFrame(table)), F.col("id") == F.col("__dk_chunk")) \
        .select("__dk_items")

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pickle as p

        import pyarrow as pa2

        for batch in batches:
            for blob in batch.column(0).to_pylist():
                out = [p.dumps(r) for r in task(iter(p.loads(blob)))]
                yield pa2.record_batch([pa2.array(out, pa2.binary())], names=["r"])

    return [pickle.loads(r) for r in frame.mapInArrow(run, "r binary").toArrow().column("r").to_pylist()]


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
        if getattr(snapshot.storage, "catalog", None) is not None:
            # a catalog's table name (uc://c.s.t): executors only touch data files, so they get the location
            # and the options (vended credentials) it was opened with, never a catalog call of their own
            uri = snapshot.storage.root_uri
            storage_options = dict(getattr(snapshot.storage, "storage_options", None) or {})
        full = snapshot.replay_result
        light = dataclasses.replace(full, files=full.files.slice(0, 0), tombstones=full.tombstones.slice(0, 0),
                                    txns={}, commit_infos={})
        return cls(uri, storage_options, snapshot.version, light)

    def snapshot(self) -> Snapshot:
        storage = executor_storage(self.uri, self.storage_options)
        return Snapshot(storage, LogSegment(storage, self.version, None), self.result)


__all__ = ["ENGINE_INFO", "SnapshotState", "commit_info", "commit_properties", "conf", "conf_flag",
           "executor_storage", "long_metric", "map_partitions", "spark_timestamp"]
