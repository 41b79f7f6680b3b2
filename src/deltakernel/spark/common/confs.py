"""Session confs read and written in bulk: one round trip for many keys where the session allows it.

Why: a Spark Connect session answers every `spark.conf.get` / `set` / `unset` with its own gRPC call. One Delta
append read four confs and set, then restored, five for its Parquet job: 19 calls, 0.1-0.7 s of a 100k-row
append (benchmarks/README.md, "Spark read overhead (issue 32)"), most of what a Connect append cost over a
classic one. Connect's config protocol takes many keys per request (what pyspark's own `RuntimeConf` does for
`_set_all`), so here a read of N keys is one call and a write at most two (set, unset). A classic session's
conf calls are local py4j calls: the same functions loop over the keys there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def _connect_conf(spark: Any) -> Any:
    """The Connect client's config endpoint behind `spark.conf`, or None (a classic session)."""
    conf = getattr(spark, "conf", None)
    client = getattr(conf, "_client", None)
    return client if client is not None and hasattr(client, "config") else None


def get_confs(spark: Any, keys: Iterable[str]) -> dict[str, str | None]:
    """The values explicitly set for `keys` (None: unset), as `spark.conf.get(key, None)` reads them."""
    keys = list(dict.fromkeys(keys))
    client = _connect_conf(spark)
    if client is not None and keys:
        from pyspark.sql.connect.proto import base_pb2 as pb

        op = pb.ConfigRequest.Operation(get_with_default=pb.ConfigRequest.GetWithDefault(
            pairs=[pb.KeyValue(key=k) for k in keys]))
        try:
            pairs = client.config(op).pairs
            return {k: (None if v is None else str(v)) for k, v in pairs}
        except Exception:
            pass  # fall back to one call per key
    out: dict[str, str | None] = {}
    for k in keys:
        try:
            v = spark.conf.get(k, None)
        except Exception:
            v = None
        out[k] = None if v is None else str(v)
    return out


def set_confs(spark: Any, values: Mapping[str, str | None]) -> None:
    """Set each key to its value; None unsets it."""
    to_set = {k: v for k, v in values.items() if v is not None}
    to_unset = [k for k, v in values.items() if v is None]
    client = _connect_conf(spark)
    if client is not None:
        from pyspark.sql.connect.proto import base_pb2 as pb

        if to_set:
            client.config(pb.ConfigRequest.Operation(set=pb.ConfigRequest.Set(
                pairs=[pb.KeyValue(key=k, value=v) for k, v in to_set.items()])))
        if to_unset:
            client.config(pb.ConfigRequest.Operation(unset=pb.ConfigRequest.Unset(keys=to_unset)))
        return
    for k, v in to_set.items():
        spark.conf.set(k, v)
    for k in to_unset:
        spark.conf.unset(k)


__all__ = ["get_confs", "set_confs"]
