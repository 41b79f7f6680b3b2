"""The storage interface every backend implements.

Keys are '/'-separated paths relative to the storage root (the table root), never absolute URLs.
Commits rely only on `put_if_absent`; nothing ever renames.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


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

    @abstractmethod
    def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """Whole object, or bytes [start, end). Raises ObjectNotFoundError."""

    @abstractmethod
    def head(self, key: str) -> ObjectMeta:
        """Metadata of one object. Raises ObjectNotFoundError."""

    @abstractmethod
    def put_if_absent(self, key: str, data: bytes) -> None:
        """Atomically create `key`; raises FileAlreadyExistsError if it exists."""

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


def check_range(start: int | None, end: int | None) -> None:
    """Validate a byte range [start, end) the same way for every backend."""
    if start is not None and start < 0:
        raise ValueError(f"negative start offset {start}")
    if start is not None and end is not None and end < start:
        raise ValueError(f"range end {end} before start {start}")
