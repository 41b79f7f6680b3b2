"""Expired-log cleanup (PROTOCOL.md "Metadata Cleanup"): delete what no retained version needs."""

from __future__ import annotations

import json
import re
import time

import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...storage.base import ObjectMeta, Storage
from ..log.retention import DAY_MS, DEFAULT_LOG_RETENTION, interval_conf
from ..log.segment import LOG_DIR, STAGED_COMMITS_DIR, classify_log_files, version_of
from ..log.time_travel import commit_timestamps
from ..protocol.features import is_catalog_managed
from ..snapshot import Snapshot

_COMPACTED_RE = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")
_CHECKPOINT_ANY_RE = re.compile(r"^(\d{20})\.checkpoint\.")
_VERSIONED_RE = re.compile(r"^(\d{20})\.(json|crc)$")
_STAGED_RE = re.compile(r"^(\d{20})\.[^.]+\.json$")


def _referenced_sidecars(storage: Storage, checkpoints: list[ObjectMeta]) -> set[str] | None:
    """Sidecar file names referenced by these checkpoints; None when one cannot be read (then keep all)."""
    names: set[str] = set()
    for meta in checkpoints:
        try:
            if meta.key.endswith(".json"):
                for line in storage.read(meta.key).decode("utf-8").splitlines():
                    if '"sidecar"' in line:
                        sc = json.loads(line).get("sidecar")
                        if isinstance(sc, dict) and sc.get("path"):
                            names.add(str(sc["path"]).rsplit("/", 1)[-1])
                continue
            pf = pq.ParquetFile(storage.open_input_file(meta.key))
            if "sidecar" not in pf.schema_arrow.names:
                continue
            col = pf.read(columns=["sidecar"]).column("sidecar")
            paths = pc.struct_field(col, [0]).drop_null().to_pylist()
            names.update(str(p).rsplit("/", 1)[-1] for p in paths)
        except Exception:  # an unreadable checkpoint must not lead to deleting its sidecars
            return None
    return names


def cleanup_expired_logs(snapshot: Snapshot, *, retention_ms: int | None = None,
                         now_ms: int | None = None) -> list[str]:
    """Delete log files older than `delta.logRetentionDuration` that no retained version needs.

    Versions from the newest commit at or before the cutoff onwards stay reconstructable: the newest
    complete checkpoint at or below that commit is kept, with its commit file and every later commit.
    Returns the deleted keys.
    """
    from ..catalog_client import require_maintenance_permitted

    require_maintenance_permitted(snapshot, "METADATA CLEANUP")  # catalog-managed: only with its consent
    storage = snapshot.storage
    conf = snapshot.configuration
    if retention_ms is None:
        retention_ms = interval_conf(conf, "delta.logRetentionDuration", DEFAULT_LOG_RETENTION)
    assert retention_ms is not None
    now = int(time.time() * 1000) if now_ms is None else now_ms
    cutoff = now - retention_ms

    metas = list(storage.list_from(f"{LOG_DIR}/"))
    listing = classify_log_files(metas)
    stamps = commit_timestamps(storage, snapshot.ict_enablement_version)
    expired = [v for v, ts in stamps.items() if ts <= cutoff and v <= snapshot.version]
    if not expired:
        return []
    cutoff_commit = max(expired)
    cps = [v for v in listing.checkpoints if v <= cutoff_commit]
    if not cps:
        return []
    keep_from = max(cps)

    doomed: list[str] = []
    by_name: dict[str, ObjectMeta] = {}
    for m in metas:
        name = m.key.rsplit("/", 1)[-1]
        by_name[name] = m
        mm = _VERSIONED_RE.match(name) or _CHECKPOINT_ANY_RE.match(name)
        if mm and int(mm.group(1)) < keep_from:
            doomed.append(m.key)
        elif (cm := _COMPACTED_RE.match(name)) and int(cm.group(1)) <= keep_from:
            doomed.append(m.key)
    doomed_names = {k.rsplit("/", 1)[-1] for k in doomed}
    for name, m in by_name.items():  # Hadoop-style checksum companions (".<name>.crc") of deleted files
        if name.startswith(".") and name.endswith(".crc") and name[1:-4] in doomed_names:
            doomed.append(m.key)
    if is_catalog_managed(snapshot.protocol):
        # PROTOCOL.md "Metadata Cleanup" step 3: staged commits up to the kept checkpoint go too - except any the
        # catalog still serves readers (it was not told they are published)
        served = {m.key for m in snapshot.log_tail.commits} if snapshot.log_tail is not None else set()
        doomed += [m.key for m in storage.list_from(f"{STAGED_COMMITS_DIR}/")
                   if _STAGED_RE.match(m.key.rsplit("/", 1)[-1]) and version_of(m.key) <= keep_from
                   and m.key not in served]
    doomed.sort()
    for key in doomed:
        storage.delete(key)

    deleted = list(doomed)
    sidecar_files = [m for m in storage.list_from(f"{LOG_DIR}/_sidecars/") if not m.key.endswith(".crc")]
    if sidecar_files:
        gone = set(doomed)
        remaining = [m for m in metas if m.key not in gone and _CHECKPOINT_ANY_RE.match(m.key.rsplit("/", 1)[-1])]
        referenced = _referenced_sidecars(storage, remaining)
        if referenced is not None:
            protect_after = min(cutoff, now - DAY_MS)  # young sidecars may belong to an in-progress checkpoint
            for m in sidecar_files:
                name = m.key.rsplit("/", 1)[-1]
                if name not in referenced and m.last_modified_ms < protect_after:
                    storage.delete(m.key)
                    deleted.append(m.key)
                    crc = f"{LOG_DIR}/_sidecars/.{name}.crc"
                    if storage.exists(crc):
                        storage.delete(crc)
                        deleted.append(crc)
    return deleted


__all__ = ["cleanup_expired_logs"]
