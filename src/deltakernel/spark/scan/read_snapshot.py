"""The snapshot a read's options name: the latest, `versionAsOf` or `timestampAsOf` (delta-spark's errors for a
timestamp outside the log's commits).

Shared by the native read (`reader.py`) and the Python data source (`datasource.py`), which the native read
falls back to: it lives below both.
"""

from __future__ import annotations

from typing import Any

from ...errors import DeltaError, VersionNotFoundError
from ...kernel.log.time_travel import format_timestamp_ms, parse_timestamp
from ...kernel.snapshot import Snapshot
from ..common.error_classes import TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION, TIMESTAMP_GREATER_THAN_COMMIT, classed
from ..common.schema import Options, storage_options, table_uri
from ..common.time_bounds import version_within_log


def load_snapshot(path: str, opts: Options) -> Snapshot:
    """The snapshot named by versionAsOf / timestampAsOf (latest without them)."""
    from ...table import DeltaTable

    version, ts = opts.get("versionAsOf"), opts.get("timestampAsOf")
    if version is not None and ts is not None:
        raise DeltaError("cannot specify both versionAsOf and timestampAsOf")
    dtab = DeltaTable(table_uri(path), version=int(version) if version is not None else None,
                      storage_options=storage_options(opts))
    if ts is not None:
        _load_at_timestamp(dtab, str(ts))
    return dtab.snapshot


def _load_at_timestamp(dtab: Any, ts: str) -> None:
    """delta-spark's `timestampAsOf`: outside the log's commit times is an error with its class."""

    def too_early(earliest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION,
            f"The provided timestamp ({ts}) is before the earliest version available to this table "
            f"({format_timestamp_ms(earliest)}). Please use a timestamp after ({format_timestamp_ms(earliest)})."))

    def too_late(latest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_GREATER_THAN_COMMIT,
            f"The provided timestamp ({ts}) is after the latest version available to this table "
            f"({format_timestamp_ms(latest)}). Please use a timestamp before or at ({format_timestamp_ms(latest)})."))

    dtab.load_as_version(version_within_log(dtab.snapshot, parse_timestamp(ts), too_early, too_late))


__all__ = ["load_snapshot"]
