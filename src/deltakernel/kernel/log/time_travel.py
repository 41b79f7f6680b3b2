"""Commit timestamps, history and timestamp -> version resolution (PROTOCOL.md "In-Commit Timestamps").

A commit's timestamp is its in-commit timestamp when that feature was enabled at the commit's version,
otherwise the commit file's modification time. File times are made monotonic (each at least the
previous + 1 ms) as Delta does, so "latest commit at or before T" is well defined.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ...errors import InvalidTimestampError, VersionNotFoundError
from ...storage.base import Storage
from ..isotime import parse_datetime
from .replay import commit_infos_for
from .segment import LogTail, list_commits


def parse_timestamp(value: dt.datetime | str | int | float) -> int:
    """Milliseconds since the epoch; naive datetimes and ISO strings without offset are UTC."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = parse_datetime(text)
        except ValueError as e:
            raise InvalidTimestampError(f"Failed to parse datetime string: not an ISO-8601 timestamp: {value!r}") from e
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc).timestamp() * 1000)
    raise TypeError(f"cannot interpret {value!r} as a timestamp")


def format_timestamp_ms(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (`2026-11-23T10:00:00.123Z`), for messages."""
    try:
        t = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=int(ms))
    except OverflowError:
        return f"{ms} ms since the epoch"
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f".{t.microsecond // 1000:03d}Z")


def commit_timestamps(
    storage: Storage, ict_enablement_version: int | None = None, infos: dict[int, dict[str, Any]] | None = None,
    log_tail: LogTail | None = None,
) -> dict[int, int]:
    """version -> commit timestamp (ms) for every commit still in the log (with a catalog's `log_tail`: its
    ratified commits too, nothing past its latest version)."""
    commits = list_commits(storage, log_tail)
    if not commits:
        return {}
    if ict_enablement_version is not None and infos is None:
        metas = [m for v, m in sorted(commits.items()) if v >= ict_enablement_version]
        infos = commit_infos_for(storage, metas)
    out: dict[int, int] = {}
    prev: int | None = None
    for v in sorted(commits):
        ts: int | None = None
        if ict_enablement_version is not None and v >= ict_enablement_version and infos is not None:
            info = infos.get(v) or {}
            if info.get("inCommitTimestamp") is not None:
                ts = int(info["inCommitTimestamp"])
        if ts is None:
            ts = commits[v].last_modified_ms
            if prev is not None and ts <= prev:
                ts = prev + 1
        out[v] = ts
        prev = ts
    return out


def version_at_timestamp(timestamps: dict[int, int], target_ms: int, clamp_to_earliest: bool = False) -> int:
    """Latest version whose commit timestamp is at or before `target_ms`. Before the earliest commit still in
    the log: VersionNotFoundError (delta-spark), or with `clamp_to_earliest` that earliest version (deltalake)."""
    candidates = [v for v, ts in timestamps.items() if ts <= target_ms]
    if not candidates and clamp_to_earliest and timestamps:
        return min(timestamps)
    if not candidates:
        earliest = min(timestamps.values()) if timestamps else None
        raise VersionNotFoundError(
            f"no commit at or before {format_timestamp_ms(target_ms)}"
            + (f"; the earliest commit is at {format_timestamp_ms(earliest)}" if earliest is not None else "")
        )
    return max(candidates)
