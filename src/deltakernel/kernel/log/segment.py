"""Which log files make up a snapshot: the newest complete checkpoint at or below the target version
plus the contiguous commits after it (PROTOCOL.md "Delta Log Entries", "Checkpoints", "Last Checkpoint
File").

Listing uses `_last_checkpoint` as a hint only: a missing, unparsable or checksum-failing hint, or one
pointing at a checkpoint that is not complete, falls back to a full listing. Gaps are errors.

Catalog-managed tables (PROTOCOL.md "Reading Catalog-managed Tables"): the catalog hands readers a `LogTail`,
its ratified commits (staged in `_delta_log/_staged_commits/<v>.<uuid>.json`, maybe not yet published) and
the latest ratified version. The listing is overlaid with it: for a version in the tail the catalog's commit
wins over a published file, and nothing past the latest ratified version is used, even if published.
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ...errors import CorruptLogError, LogTruncatedError, ObjectNotFoundError, TableNotFoundError, VersionNotFoundError
from ...storage.base import ObjectMeta, Storage

LOG_DIR = "_delta_log"
LAST_CHECKPOINT_KEY = f"{LOG_DIR}/_last_checkpoint"
STAGED_COMMITS_DIR = f"{LOG_DIR}/_staged_commits"

_COMMIT_RE = re.compile(r"^(\d{20})\.json$")
_CLASSIC_RE = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTIPART_RE = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_RE = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_CRC_RE = re.compile(r"^(\d{20})\.crc$")


def commit_key(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.json"


def staged_commit_key(version: int, unique: str) -> str:
    """`_delta_log/_staged_commits/<version>.<uuid>.json` (PROTOCOL.md "Staged commit")."""
    return f"{STAGED_COMMITS_DIR}/{version:020d}.{unique}.json"


@dataclass(frozen=True)
class LogTail:
    """What a table's catalog tells readers: its ratified commits still to be read from the catalog (ascending,
    contiguous; keys relative to the table root, staged or already published) and the latest ratified version.

    `max_catalog_version` None means "no cap": only `published_only()` builds that, for a reader that chose to
    read a catalog-managed table by path without its catalog (it sees published commits only).
    """

    commits: tuple[ObjectMeta, ...] = ()
    max_catalog_version: int | None = None

    def __post_init__(self) -> None:
        versions = [version_of(m.key) for m in self.commits]
        if versions and versions != list(range(versions[0], versions[0] + len(versions))):
            raise CorruptLogError(f"a catalog's log tail must be contiguous and ascending, got versions {versions}")
        if versions and (self.max_catalog_version is None or versions[-1] > self.max_catalog_version):
            raise CorruptLogError(f"a catalog's log tail holds version {versions[-1]} past its latest ratified "
                                  f"version {self.max_catalog_version}")

    @classmethod
    def published_only(cls) -> LogTail:
        """No catalog: read the published `_delta_log/<v>.json` commits only (may be behind the catalog)."""
        return cls((), None)

    @classmethod
    def of(cls, commits: Iterable[tuple[int, str, int, int]], max_catalog_version: int) -> LogTail:
        """From (version, path, size, mtime ms) as a catalog returns them; `path` is a file name in
        `_staged_commits/`, a key relative to the table root, or an absolute path / URI under it (kept as given
        otherwise: the storage decides)."""
        metas = []
        for version, path, size, mtime in sorted(commits):
            key = str(path)
            if "/" not in key:
                key = f"{STAGED_COMMITS_DIR}/{key}"
            elif f"/{LOG_DIR}/" in key and not key.startswith(f"{LOG_DIR}/"):
                key = key[key.index(f"/{LOG_DIR}/") + 1:]
            if version_of(key) != int(version):
                raise CorruptLogError(f"catalog commit {path!r} is not a file of version {version}")
            metas.append(ObjectMeta(key, int(size), int(mtime)))
        return cls(tuple(metas), int(max_catalog_version))

    @property
    def versions(self) -> list[int]:
        return [version_of(m.key) for m in self.commits]

    def overlay(self, listing: LogListing) -> LogListing:
        """`listing` with the catalog's commits in place of published ones and nothing past its latest version."""
        cap = self.max_catalog_version
        if cap is None:
            return listing
        out = LogListing(
            commits={v: m for v, m in listing.commits.items() if v <= cap},
            checkpoints={v: c for v, c in listing.checkpoints.items() if v <= cap},
            crcs={v: m for v, m in listing.crcs.items() if v <= cap},
        )
        for m in self.commits:
            out.commits[version_of(m.key)] = m
        return out


@dataclass(frozen=True)
class Checkpoint:
    """A complete checkpoint: one file (classic / V2) or every part of a multi-part checkpoint."""

    version: int
    kind: str  # "classic" | "multipart" | "v2"
    files: tuple[ObjectMeta, ...]


@dataclass
class LogSegment:
    storage: Storage
    version: int
    checkpoint: Checkpoint | None
    commits: list[ObjectMeta] = field(default_factory=list)  # ascending, checkpoint.version < v <= version
    #: the version checksum file (`N.crc`) of `version`, when the listing saw one
    checksum: ObjectMeta | None = None

    @property
    def commit_versions(self) -> list[int]:
        return [version_of(m.key) for m in self.commits]


def version_of(key: str) -> int:
    return int(key.rsplit("/", 1)[-1][:20])


# ----------------------------------------------------------------------------- _last_checkpoint
def _url_encode(s: str) -> str:
    return urllib.parse.quote(s, safe="-._~")


def _canonical_pairs(value: Any, path: list[str], out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _canonical_pairs(v, [*path, '"' + _url_encode(k) + '"'], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _canonical_pairs(v, [*path, str(i)], out)
    else:
        if value is None:
            rendered = "null"
        elif value is True:
            rendered = "true"
        elif value is False:
            rendered = "false"
        elif isinstance(value, str):
            rendered = '"' + _url_encode(value) + '"'
        else:
            rendered = json.dumps(value)
        out.append(("+".join(path), rendered))


def last_checkpoint_checksum(obj: dict[str, Any]) -> str:
    """MD5 of the canonical form (PROTOCOL.md "JSON checksum"); the top-level `checksum` is excluded."""
    pairs: list[tuple[str, str]] = []
    _canonical_pairs({k: v for k, v in obj.items() if k != "checksum"}, [], pairs)
    pairs.sort(key=lambda p: p[0].encode("utf-8"))
    canonical = ",".join(f"{p}={v}" for p, v in pairs)
    return hashlib.md5(canonical.encode("utf-8")).hexdigest()


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d: dict[str, Any] = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"duplicate key {k!r}")
        d[k] = v
    return d


def read_last_checkpoint(storage: Storage) -> dict[str, Any] | None:
    """The `_last_checkpoint` hint, or None when missing, unparsable or failing its checksum."""
    try:
        raw = storage.read(LAST_CHECKPOINT_KEY)
    except ObjectNotFoundError:
        return None
    try:
        obj = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
        if not isinstance(obj, dict) or not isinstance(obj.get("version"), int):
            return None
    except ValueError:
        return None
    checksum = obj.get("checksum")
    if checksum is not None and checksum != last_checkpoint_checksum(obj):
        return None
    return obj


# ----------------------------------------------------------------------------- listing
@dataclass
class LogListing:
    """The files of a `_delta_log` listing by version: commits, complete checkpoints, checksums."""

    commits: dict[int, ObjectMeta] = field(default_factory=dict)
    checkpoints: dict[int, list[Checkpoint]] = field(default_factory=dict)
    crcs: dict[int, ObjectMeta] = field(default_factory=dict)


def classify_log_files(metas: Iterable[ObjectMeta]) -> LogListing:
    """Sort listed log files into commits, checkpoints (multi-part ones only when complete) and checksums."""
    out = LogListing()
    multipart: dict[tuple[int, int], dict[int, ObjectMeta]] = {}
    for m in metas:
        name = m.key.rsplit("/", 1)[-1]
        if mm := _COMMIT_RE.match(name):
            out.commits[int(mm.group(1))] = m
        elif mm := _CLASSIC_RE.match(name):
            out.checkpoints.setdefault(int(mm.group(1)), []).append(Checkpoint(int(mm.group(1)), "classic", (m,)))
        elif mm := _V2_RE.match(name):
            out.checkpoints.setdefault(int(mm.group(1)), []).append(Checkpoint(int(mm.group(1)), "v2", (m,)))
        elif mm := _MULTIPART_RE.match(name):
            v, part, nparts = int(mm.group(1)), int(mm.group(2)), int(mm.group(3))
            multipart.setdefault((v, nparts), {})[part] = m
        elif mm := _CRC_RE.match(name):
            out.crcs[int(mm.group(1))] = m
    for (v, nparts), parts in multipart.items():
        if nparts >= 1 and all(p in parts for p in range(1, nparts + 1)):  # only complete sets count
            files = tuple(parts[p] for p in range(1, nparts + 1))
            out.checkpoints.setdefault(v, []).append(Checkpoint(v, "multipart", files))
    return out


def _best_checkpoint(candidates: list[Checkpoint]) -> Checkpoint:
    # Prefer V2 (carries sidecars and checkpointMetadata), then classic, then multi-part.
    order = {"v2": 0, "classic": 1, "multipart": 2}
    return sorted(candidates, key=lambda c: (order[c.kind], -len(c.files)))[0]


def list_log(storage: Storage, start_version: int | None, end_version: int | None = None) -> LogListing:
    """Log files of versions >= `start_version` and <= `end_version` (both optional)."""
    start_after = None if not start_version else f"{LOG_DIR}/{start_version - 1:020d}.~"
    if end_version is None:
        return classify_log_files(storage.list_from(f"{LOG_DIR}/", start_after=start_after))
    end_before = f"{LOG_DIR}/{end_version + 1:020d}"
    return classify_log_files(storage.list_range(f"{LOG_DIR}/", start_after=start_after, end_before=end_before))


def commits_from(storage: Storage, version: int) -> dict[int, ObjectMeta]:
    """The commit files of versions >= `version` (one listing): is a snapshot at `version` still the latest,
    and is its commit still the same file (a table dropped and created again at the same place is not)?
    A storage opened through a catalog's table name (`storage.catalog`) answers with the catalog's log tail
    overlaid: ratified commits not yet published count, nothing past the catalog's latest version does."""
    listing = list_log(storage, version)
    catalog = getattr(storage, "catalog", None)
    if catalog is None:
        return listing.commits
    return {v: m for v, m in catalog.get_log_tail().overlay(listing).commits.items() if v >= version}


def list_commits(storage: Storage, log_tail: LogTail | None = None) -> dict[int, ObjectMeta]:
    """Every commit file in the log, by version (history and timestamp lookups use it); with a catalog's
    `log_tail`, its ratified commits overlaid and nothing past its latest version."""
    listing = list_log(storage, None)
    return (log_tail.overlay(listing) if log_tail is not None else listing).commits


def build_log_segment(storage: Storage, version: int | None = None, log_tail: LogTail | None = None) -> LogSegment:
    """The segment for `version` (latest when None).

    Time travel lists only up to `version` (a `_last_checkpoint` past it is ignored); when the target
    version is not in that listing, the full listing decides between "not found" and a gap. With a catalog's
    `log_tail` the latest version is the catalog's, and every listing is overlaid with the tail.
    """
    cap = log_tail.max_catalog_version if log_tail is not None else None
    if cap is not None:
        if version is not None and version > cap:
            raise VersionNotFoundError(
                f"version {version} not found in {storage.root_uri} (the catalog's latest version is {cap})")
        version = cap if version is None else version

    def listed(start: int | None, end: int | None) -> LogListing:
        listing = list_log(storage, start, end)
        return log_tail.overlay(listing) if log_tail is not None else listing

    hint = read_last_checkpoint(storage)
    if hint is not None and (version is None or hint["version"] <= version):
        listing = listed(int(hint["version"]), version)
        segment = _segment_from(storage, listing, version, require_checkpoint_at=int(hint["version"]))
        if segment is not None:
            return segment
    if version is not None and version >= 0:
        listing = listed(None, version)
        if version in listing.commits or version in listing.checkpoints:
            segment = _segment_from(storage, listing, version, require_checkpoint_at=None)
            assert segment is not None
            return segment
    listing = listed(None, None)
    segment = _segment_from(storage, listing, version, require_checkpoint_at=None)
    assert segment is not None
    return segment


def _segment_from(
    storage: Storage, listing: LogListing, version: int | None, require_checkpoint_at: int | None
) -> LogSegment | None:
    if require_checkpoint_at is not None and require_checkpoint_at not in listing.checkpoints:
        return None  # stale or wrong hint: list everything
    if not listing.commits and not listing.checkpoints:
        if require_checkpoint_at is not None:
            return None
        raise TableNotFoundError(f"no Delta table at {storage.root_uri}: {LOG_DIR}/ has no commits or checkpoints")
    latest = max([*listing.commits, *listing.checkpoints])
    target = latest if version is None else version
    if version is not None and (version < 0 or version > latest):
        raise VersionNotFoundError(f"version {version} not found in {storage.root_uri} (latest is {latest})")
    cp_versions = [v for v in listing.checkpoints if v <= target]
    checkpoint = _best_checkpoint(listing.checkpoints[max(cp_versions)]) if cp_versions else None
    first = checkpoint.version + 1 if checkpoint else 0
    expected = list(range(first, target + 1))
    missing = [v for v in expected if v not in listing.commits]
    if missing:
        if checkpoint is None and require_checkpoint_at is None and listing.commits and min(listing.commits) > 0 \
                and all(v in listing.commits for v in range(min(listing.commits), target + 1)):
            raise LogTruncatedError(
                f"version {target} of {storage.root_uri} cannot be reconstructed: commits before "
                f"{min(listing.commits)} were cleaned up and no checkpoint covers them"
            )
        raise CorruptLogError(
            f"gap in the Delta log of {storage.root_uri}: commit file(s) missing for version(s) "
            f"{missing[:10]} (needed to reach version {target})"
        )
    return LogSegment(storage, target, checkpoint, [listing.commits[v] for v in expected],
                      checksum=listing.crcs.get(target))
