"""Streaming source offsets and options, as delta-spark's Delta source names them.

An offset is delta-spark's `DeltaSourceOffset` JSON: `{"sourceVersion": 1, "reservoirId": <table id>,
"reservoirVersion": v, "index": i, "isStartingVersion": b}` and means "everything up to and including file
`i` of version `v` was delivered" (`index` -1: nothing of `v` yet). With `isStartingVersion` true, `v` is
the version of the initial snapshot and `i` counts its files in a fixed order; otherwise `i` counts the
data-changing add actions of commit `v` in log order.

A new query's first offset is *unresolved* (`reservoirVersion` -1) when where the stream begins depends on
the table at that moment (the initial snapshot, `startingVersion=latest`): Spark asks for the initial
offset again when it replays the first batch after a crash, so the choice is written into the first
batch's end offset (`startVersion`, `startIsSnapshot`) instead of being taken again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ...errors import DeltaError

SOURCE_VERSION = 1
BASE_INDEX = -1
UNRESOLVED = -1
DEFAULT_MAX_FILES = 1000

_BYTES = re.compile(r"^\s*(\d+)\s*([kmgtp]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


class StreamingSourceError(DeltaError):
    """The Delta streaming source cannot go on (a non-additive commit, a schema change, a lost commit)."""


@dataclass(frozen=True)
class SourceOffset:
    reservoir_id: str
    version: int
    index: int
    initial: bool
    #: only on the end offset of a query's first batch: where the stream began (see the module docstring)
    start: tuple[int, bool] | None = None

    @property
    def unresolved(self) -> bool:
        return self.version == UNRESOLVED

    def key(self) -> tuple[int, int]:
        return (self.version, self.index)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sourceVersion": SOURCE_VERSION, "reservoirId": self.reservoir_id,
                               "reservoirVersion": self.version, "index": self.index,
                               "isStartingVersion": self.initial}
        if self.start is not None:
            out["startVersion"], out["startIsSnapshot"] = self.start
        return out

    @classmethod
    def from_json(cls, raw: dict[str, Any], table_id: str) -> SourceOffset:
        try:
            version = int(raw["reservoirVersion"])
            index = int(raw["index"])
            initial = bool(raw["isStartingVersion"])
            rid = str(raw["reservoirId"])
            source_version = int(raw.get("sourceVersion", SOURCE_VERSION))
        except (KeyError, TypeError, ValueError) as e:
            raise StreamingSourceError(f"invalid Delta source offset {raw!r}: {e}") from e
        if source_version > 3:
            raise StreamingSourceError(f"Delta source offset format {source_version} is newer than this reader's")
        if index == -100:  # delta-spark's in-memory base index, never written, accepted anyway
            index = BASE_INDEX
        if rid != table_id:
            raise StreamingSourceError(
                f"the streaming query's checkpoint was written for the Delta table with id {rid}, but the table at "
                f"this path has id {table_id}: the table was replaced. Use a new checkpointLocation."
            )
        start = None
        if "startVersion" in raw:
            start = (int(raw["startVersion"]), bool(raw.get("startIsSnapshot", False)))
        return cls(rid, version, index, initial, start)

    def without_start(self) -> SourceOffset:
        return SourceOffset(self.reservoir_id, self.version, self.index, self.initial)


def parse_bytes(text: str) -> int:
    """delta-spark's byte strings: `1048576`, `10k`, `512m`, `1g`, `1gb`, `2GiB`."""
    m = _BYTES.match(str(text))
    if not m:
        raise DeltaError(f"invalid maxBytesPerTrigger {text!r}: use a number of bytes such as 10g, 512m or 1048576")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(frozen=True)
class SourceOptions:
    """The Delta source's reader options (delta-spark's names; Spark lower-cases the keys)."""

    starting_version: int | None = None
    starting_latest: bool = False
    starting_timestamp: str | None = None
    max_files: int | None = None
    max_bytes: int | None = None
    ignore_deletes: bool = False
    ignore_changes: bool = False
    skip_change_commits: bool = False
    read_change_feed: bool = False

    @classmethod
    def parse(cls, opts: Any) -> SourceOptions:
        """From an `Options` mapping (case-insensitive)."""
        sv, st = opts.get("startingVersion"), opts.get("startingTimestamp")
        if sv is not None and st is not None:
            raise DeltaError("set either startingVersion or startingTimestamp, not both")
        version: int | None = None
        latest = False
        if sv is not None:
            text = str(sv).strip().lower()
            if text == "latest":
                latest = True
            else:
                try:
                    version = int(text)
                except ValueError:
                    raise DeltaError(f"invalid startingVersion {sv!r}: use a version number or 'latest'") from None
                if version < 0:
                    raise DeltaError(f"invalid startingVersion {sv!r}: versions start at 0")
        max_files = opts.int("maxFilesPerTrigger")
        if max_files is not None and max_files <= 0:
            raise DeltaError(f"maxFilesPerTrigger must be a positive number, got {max_files}")
        raw_bytes = opts.get("maxBytesPerTrigger")
        max_bytes = parse_bytes(raw_bytes) if raw_bytes is not None else None
        if max_bytes is not None and max_bytes <= 0:
            raise DeltaError(f"maxBytesPerTrigger must be positive, got {raw_bytes!r}")
        skip = opts.flag("skipChangeCommits")
        changes = opts.flag("ignoreChanges")
        if skip and changes:
            raise DeltaError("skipChangeCommits and ignoreChanges cannot both be set; skipChangeCommits replaces "
                             "ignoreChanges")
        return cls(version, latest, str(st) if st is not None else None, max_files, max_bytes,
                   opts.flag("ignoreDeletes") or changes, changes, skip, opts.flag("readChangeFeed"))


@dataclass
class Budget:
    """How much one micro-batch may still take (delta-spark's admission: a file is taken while both budgets
    are positive, so the bytes cap is soft and every batch takes at least one file)."""

    files: int | None
    bytes: int | None

    def exhausted(self) -> bool:
        return (self.files is not None and self.files <= 0) or (self.bytes is not None and self.bytes <= 0)

    def take(self, n_files: int, n_bytes: int) -> None:
        if self.files is not None:
            self.files -= n_files
        if self.bytes is not None:
            self.bytes -= n_bytes


__all__ = ["BASE_INDEX", "DEFAULT_MAX_FILES", "Budget", "SourceOffset", "SourceOptions", "StreamingSourceError",
           "UNRESOLVED", "parse_bytes"]
