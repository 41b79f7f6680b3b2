"""delta-spark's time-travel bounds: a timestamp before the earliest commit still in the log, or after the latest
commit, is an error (deltalake's API loads the earliest / latest commit instead).

Shared by `timestampAsOf` reads and `restoreToTimestamp`, which raise the same check with different error classes
and messages; the commit timestamps are listed once and the version is resolved from that same listing.
"""

from __future__ import annotations

from collections.abc import Callable

from ...kernel.log.time_travel import commit_timestamps, version_at_timestamp
from ...kernel.snapshot import Snapshot


def version_within_log(snapshot: Snapshot, target_ms: int, too_early: Callable[[int], Exception],
                       too_late: Callable[[int], Exception]) -> int:
    """The version at `target_ms` (commit times as of `snapshot`, the latest); `too_early(earliest_ms)` /
    `too_late(latest_ms)` are raised outside the log's range."""
    stamps = commit_timestamps(snapshot.storage, snapshot.ict_enablement_version)
    if not stamps:
        return snapshot.version
    earliest, latest = min(stamps.values()), stamps[max(stamps)]
    if target_ms < earliest:
        raise too_early(earliest)
    if target_ms > latest:
        raise too_late(latest)
    return version_at_timestamp(stamps, target_ms)
