"""The storage interface every backend implements.

Keys are '/'-separated paths relative to the storage root (the table root), never absolute URLs.
Commits rely only on `put_if_absent`; nothing ever renames.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from deltakernel.errors import InvalidPathError

#: storage option (case-insensitive, value true/1/yes) letting absolute paths in the log point into another
#: store (another bucket/container or scheme) than the table's; off by default, see docs/decisions.md
ALLOW_FOREIGN_PATHS_OPTION = "DELTAKERNEL_ALLOW_FOREIGN_PATHS"


def join_lines(blobs: Sequence[bytes]) -> tuple[bytes, list[int]]:
    """All blobs in one buffer, each ending in a newline, and each blob's end offset (`Storage.read_joined`)."""
    parts: list[bytes] = []
    ends: list[int] = []
    pos = 0
    for blob in blobs:
        parts.append(blob)
        pos += len(blob)
        if blob and not blob.endswith(b"\n"):
            parts.append(b"\n")
            pos += 1
        ends.append(pos)
    return b"".join(parts), ends


def foreign_paths_allowed(storage_options: Mapping[str, Any] | None) -> bool:
    """Whether `storage_options` opt in to reading files in another store (ALLOW_FOREIGN_PATHS_OPTION)."""
    for k, v in (storage_options or {}).items():
        if k.strip().upper() == ALLOW_FOREIGN_PATHS_OPTION:
            return str(v).strip().lower() in ("true", "1", "yes")
    return False


#: opens the storage of a URI: `storage_for_uri`, installed by the `deltakernel.storage` package as it loads
#: (this module cannot import the backends, which subclass `Storage`); `Storage.locate` opens other stores with it
_uri_opener: Callable[[str, dict[str, str] | None], Storage] | None = None


def set_uri_opener(opener: Callable[[str, dict[str, str] | None], Storage]) -> None:
    """Install the URI -> backend dispatch that `Storage.locate` uses to open another store."""
    global _uri_opener
    _uri_opener = opener


def without_deltakernel_options(storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options minus deltakernel's own keys (object_store would reject them)."""
    return {k: v for k, v in (storage_options or {}).items() if k.strip().upper() != ALLOW_FOREIGN_PATHS_OPTION}


@dataclass(frozen=True)
class ObjectMeta:
    key: str  # relative to the storage root, '/'-separated
    size: int
    last_modified_ms: int  # milliseconds since the Unix epoch


class Storage(ABC):
    """A flat key space rooted at one URI (the table root)."""

    #: the root as a URL or absolute local path, without trailing slash
    root_uri: str
    #: reads are cheap syscalls (local disk): reading many small objects in a thread pool costs more in
    #: thread start-up than it saves; remote stores overlap their request latency instead
    sequential_reads: bool = False

    @abstractmethod
    def list_from(
        self, prefix: str, start_after: str | None = None, *, recursive: bool = False
    ) -> Iterator[ObjectMeta]:
        """Objects whose key starts with `prefix`, in lexicographic key order, keys > `start_after`."""

    def list_range(
        self, prefix: str, start_after: str | None = None, end_before: str | None = None
    ) -> list[ObjectMeta]:
        """`list_from(prefix, start_after)` cut at keys >= `end_before` (time travel lists only up to the
        version it needs); backends stop listing early instead of filtering afterwards."""
        out: list[ObjectMeta] = []
        for m in self.list_from(prefix, start_after):
            if end_before is not None and m.key >= end_before:
                break
            out.append(m)
        return out

    def walk(self, prefix: str = "", skip_dir: Callable[[str], bool] | None = None) -> Iterator[list[ObjectMeta]]:
        """Every object below the directory key `prefix` ('' = the root), recursively, in pages of no
        particular order, streamed (VACUUM lists whole tables: never the full listing at once).
        `skip_dir(dir_key)` True prunes that directory and everything below it. This default lists
        through `list_from`; backends stream."""
        base = f"{prefix.rstrip('/')}/" if prefix.strip("/") else ""
        cache: dict[str, bool] = {}
        page = [m for m in self.list_from(base, recursive=True) if not under_skipped_dir(m.key, base, skip_dir, cache)]
        if page:
            yield page

    def delete_many(self, keys: Sequence[str]) -> None:
        """Delete every key (missing ones are not an error). Remote stores overlap the requests."""
        if len(keys) <= 2 or self.sequential_reads:
            for k in keys:
                self.delete(k)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(16, len(keys))) as pool:
            for _ in pool.map(self.delete, keys):
                pass

    @abstractmethod
    def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """Whole object, or bytes [start, end). Raises ObjectNotFoundError."""

    def read_many(self, keys: list[str]) -> list[bytes]:
        """Whole objects, in order (many small commit files). Local disks read them in a tight loop;
        remote stores overlap the requests' latency in a thread pool."""
        if len(keys) <= 2 or self.sequential_reads:
            return [self.read(k) for k in keys]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(32, len(keys))) as pool:
            return list(pool.map(self.read, keys))

    def read_joined(self, keys: list[str], sizes: Sequence[int]) -> tuple[bytes | bytearray, list[int]]:
        """Newline-delimited objects (commit files) back to back in one buffer, a newline added after each that
        does not end in one; and the end offset of each object in it. `sizes` (from the listing) are a hint.
        Local disks read straight into one buffer (no per-object copies: fewer page faults on a big log)."""
        return join_lines(self.read_many(keys))

    @abstractmethod
    def head(self, key: str) -> ObjectMeta:
        """Metadata of one object. Raises ObjectNotFoundError."""

    @abstractmethod
    def put_if_absent(self, key: str, data: bytes) -> None:
        """Atomically create `key`; raises FileAlreadyExistsError if it exists."""

    def put_cache_if_absent(self, key: str, data: bytes) -> None:
        """`put_if_absent` for derived files a reader validates and can do without (`N.crc`): backends may skip
        durability work (a local fsync) that commits need. Raises FileAlreadyExistsError if it exists."""
        self.put_if_absent(key, data)

    def put(self, key: str, data: bytes) -> None:
        """Write `key` whole, replacing any object there: for objects under fresh names that are ours alone
        (deletion-vector files), never for commits. Unlike a conditional create it is idempotent, so a client
        may resend it after a lost response or a 5xx. Backends override; this default is the conditional
        create (correct, not retry-safe)."""
        self.put_if_absent(key, data)

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove `key`; missing keys are not an error."""

    @abstractmethod
    def exists(self, key: str) -> bool: ...

    @abstractmethod
    def open_input_file(self, key: str) -> Any:
        """A seekable binary file object (pyarrow NativeFile or file-like) for Parquet reading."""

    @abstractmethod
    def arrow_filesystem(self) -> tuple[Any, str]:
        """(pyarrow.fs.FileSystem, base path) usable to read keys as `base + '/' + key`."""

    @abstractmethod
    def child(self, key_prefix: str) -> Storage:
        """A Storage rooted at `root/key_prefix` (same credentials)."""

    def full_uri(self, key: str) -> str:
        return f"{self.root_uri}/{key}"

    # ------------------------------------------------------------------ files outside the root
    #: absolute paths in the log may point into another store (set from ALLOW_FOREIGN_PATHS_OPTION)
    allow_foreign_paths: bool = False
    #: the options this storage was opened with (reused to open another store when that is allowed)
    storage_options: dict[str, str]

    def arrow_path(self, key: str) -> str:
        """The path of `key` in `arrow_filesystem()`'s filesystem."""
        _, base = self.arrow_filesystem()
        return f"{base.rstrip('/')}/{key}"

    def store_root(self) -> Storage:
        """A storage rooted at the root of the same store (filesystem root, bucket), same client."""
        raise InvalidPathError(f"{type(self).__name__} cannot address files outside {self.root_uri}")

    def store_key(self, scheme: str, netloc: str, path: str) -> str | None:
        """Key in `store_root()` of the absolute location (scheme, netloc, decoded path), or None when
        that location is in another store. Scheme '' means a local path."""
        return None

    def locate(self, scheme: str, netloc: str, path: str) -> tuple[Storage, str]:
        """(storage, key) addressing an absolute location named in the log (shallow clones, Spark's
        canonical `file:/...` paths). Inside the table root that is `self`; elsewhere in the same store the
        store root; in another store a storage for it, only when `allow_foreign_paths` is set."""
        key = self.store_key(scheme, netloc, path)
        where = f"{scheme}://{netloc}{path}" if scheme and scheme != "file" else path
        if key is None:
            if not self.allow_foreign_paths:
                raise InvalidPathError(
                    f"file {where!r} is in another storage location than the table {self.root_uri!r}; refusing "
                    f"to read it (set storage option {ALLOW_FOREIGN_PATHS_OPTION}=true to allow it)"
                )
            other = self._foreign_store(scheme, netloc)
            key = other.store_key(scheme, netloc, path)
            if key is None:  # pragma: no cover - the foreign store was built for this very location
                raise InvalidPathError(f"cannot address {where!r}")
            return other, key
        if not key:
            raise InvalidPathError(f"file {where!r} names the root of its store")
        own = self.store_key(*_split_root(self))
        if own is None or not own:
            return self, key
        if key.startswith(own + "/"):
            return self, key[len(own) + 1 :]
        return self.store_root(), key

    def _foreign_store(self, scheme: str, netloc: str) -> Storage:
        cache: dict[tuple[str, str], Storage] = self.__dict__.setdefault("_foreign_stores", {})
        found = cache.get((scheme, netloc))
        if found is None:
            if _uri_opener is None:  # pragma: no cover - the package installs it before any backend exists
                raise InvalidPathError("no storage backend dispatch installed (import deltakernel.storage)")
            uri = f"{scheme}://{netloc}" if scheme and scheme != "file" else "/"
            found = _uri_opener(uri, getattr(self, "storage_options", None))
            cache[(scheme, netloc)] = found
        return found


def under_skipped_dir(
    key: str, base: str, skip_dir: Callable[[str], bool] | None, cache: dict[str, bool]
) -> bool:
    """Whether a directory of `key` below `base` is pruned by `skip_dir` (answers cached per directory)."""
    if skip_dir is None:
        return False
    parts = key[len(base):].split("/")[:-1]
    d = base.rstrip("/")
    for part in parts:
        d = f"{d}/{part}" if d else part
        hit = cache.get(d)
        if hit is None:
            hit = cache[d] = bool(skip_dir(d))
        if hit:
            return True
    return False


def _split_root(storage: Storage) -> tuple[str, str, str]:
    """(scheme, netloc, path) of a storage's root URI, for `store_key`."""
    root = storage.root_uri
    scheme, sep, rest = root.partition("://")
    if not sep:
        return "", "", root
    netloc, _, path = rest.partition("/")
    return scheme.lower(), netloc, "/" + path


def normalize_store_path(path: str) -> str:
    """An absolute, decoded path as a store key: '.'/'..' folded (never above the store root), no leading '/'."""
    if "\x00" in path:
        raise InvalidPathError(f"path {path!r} contains NUL")
    norm = posixpath.normpath("/" + path.lstrip("/"))
    return norm.lstrip("/")


def check_range(start: int | None, end: int | None) -> None:
    """Validate a byte range [start, end) the same way for every backend."""
    if start is not None and start < 0:
        raise ValueError(f"negative start offset {start}")
    if start is not None and end is not None and end < start:
        raise ValueError(f"range end {end} before start {start}")
