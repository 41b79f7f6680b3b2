"""`DeltaStorageHandler`: deltalake's pyarrow `FileSystemHandler` over a table's storage.

`pyarrow.fs.PyFileSystem(DeltaStorageHandler(table_uri, options))` is a filesystem whose paths are relative
to the table root (`part-0.parquet`, `_delta_log/00000000000000000000.json`), on any store deltakernel
opens (local, s3://, gs://, az://, memory://, with deltalake's `storage_options`). It delegates to the
storage layer's own Arrow filesystem (`Storage.arrow_filesystem()`: pyarrow's local filesystem, or the
obstore-backed handler for object stores), so reads and writes use exactly the table's client.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from .storage import Storage, storage_for_uri


class DeltaStorageHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """A pyarrow FileSystemHandler rooted at a Delta table (deltalake's `deltalake.fs.DeltaStorageHandler`)."""

    def __init__(self, table_uri: str, options: dict[str, str] | None = None,
                 known_sizes: dict[str, int] | None = None) -> None:
        self._init(storage_for_uri(str(table_uri), options), known_sizes)

    def _init(self, storage: Storage, known_sizes: dict[str, int] | None) -> None:
        self._storage = storage
        self._fs, base = storage.arrow_filesystem()
        self._base = base.rstrip("/")
        self._known_sizes = dict(known_sizes or {})  # accepted for deltalake compatibility

    @classmethod
    def from_table(cls, table: Any, options: dict[str, str] | None = None,
                   known_sizes: dict[str, int] | None = None) -> DeltaStorageHandler:
        """A handler on the storage of a `deltakernel.DeltaTable` (or anything with a `table_uri`)."""
        self = cls.__new__(cls)
        snapshot = getattr(table, "snapshot", None)
        storage = getattr(snapshot, "storage", None)
        self._init(storage if isinstance(storage, Storage) else storage_for_uri(str(table.table_uri), options),
                   known_sizes)
        return self

    # ------------------------------------------------------------------ paths
    def _full(self, path: str) -> str:
        rel = path.lstrip("/")
        if not self._base:
            return rel
        return f"{self._base}/{rel}" if rel else self._base

    def _rel(self, full: str) -> str:
        if self._base and (full == self._base or full.startswith(self._base + "/")):
            return full[len(self._base):].lstrip("/")
        return full.lstrip("/") if not self._base else full

    def _info(self, info: pafs.FileInfo) -> pafs.FileInfo:
        return pafs.FileInfo(self._rel(info.path), info.type, mtime=info.mtime,
                             size=info.size if info.type == pafs.FileType.File else None)

    # ------------------------------------------------------------------ FileSystemHandler
    def get_type_name(self) -> str:
        return "deltakernel-table"

    def normalize_path(self, path: str) -> str:
        return path

    def equals(self, other: Any) -> bool:
        return isinstance(other, DeltaStorageHandler) and other._storage.root_uri == self._storage.root_uri

    def __eq__(self, other: object) -> bool:
        return self.equals(other)

    def __hash__(self) -> int:
        return hash(self._storage.root_uri)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [self._info(i) for i in self._fs.get_file_info([self._full(p) for p in paths])]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        inner = pafs.FileSelector(self._full(selector.base_dir), allow_not_found=selector.allow_not_found,
                                  recursive=selector.recursive)
        return [self._info(i) for i in self._fs.get_file_info(inner)]

    def create_dir(self, path: str, recursive: bool = True) -> None:
        self._fs.create_dir(self._full(path), recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._fs.delete_dir(self._full(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False, accept_root_dir: bool = False) -> None:
        if not path.strip("/") and not accept_root_dir:
            raise ValueError("delete_dir_contents of the table root needs accept_root_dir=True")
        self._fs.delete_dir_contents(self._full(path), missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        self._fs.delete_dir_contents(self._full(""), missing_dir_ok=True)

    def delete_file(self, path: str) -> None:
        self._fs.delete_file(self._full(path))

    def move(self, src: str, dest: str) -> None:
        self._fs.move(self._full(src), self._full(dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._fs.copy_file(self._full(src), self._full(dest))

    def open_input_stream(self, path: str) -> Any:
        return self._fs.open_input_stream(self._full(path))

    def open_input_file(self, path: str) -> Any:
        return self._fs.open_input_file(self._full(path))

    def open_output_stream(self, path: str, metadata: dict[str, str] | None = None) -> Any:
        full = self._full(path)
        if isinstance(self._fs, pafs.LocalFileSystem):  # object stores have no directories to create
            parent = full.rsplit("/", 1)[0]
            if parent and parent != full:
                self._fs.create_dir(parent, recursive=True)
        return self._fs.open_output_stream(full, metadata=metadata)

    def open_append_stream(self, path: str, metadata: dict[str, str] | None = None) -> Any:
        raise NotImplementedError("append streams are not supported on Delta table storage")


__all__ = ["DeltaStorageHandler"]
