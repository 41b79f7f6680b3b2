"""obstore plumbing shared by `ObjectStoreStorage`: error mapping, file objects pyarrow accepts, and a
pyarrow `FileSystemHandler` over an obstore store (kept apart so object_store.py stays small).

obstore is used through its extension module as `forksafe.module` hands it out (a fresh instance in a fork
child whose parent ran obstore): `obs.put(store, ...)` etc. are obstore's functions, `obs.exceptions` its errors.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs

from deltakernel.storage import forksafe

_OBSTORE = "obstore._obstore"


def obstore_module() -> Any:
    """obstore's extension module usable in this process (raises ImportError without obstore)."""
    return forksafe.module(_OBSTORE)


def is_not_found(exc: BaseException) -> bool:
    """Whether `exc` says the object is missing (obstore's NotFoundError of any loaded instance, or the OS one)."""
    found = tuple(m.exceptions.NotFoundError for m in forksafe.instances(_OBSTORE))
    return isinstance(exc, (*found, FileNotFoundError))


def obstore_errors() -> tuple[type[BaseException], ...]:
    """obstore's errors, of every instance loaded (each has its own classes), plus the OS errors it raises."""
    return (*(m.exceptions.BaseError for m in forksafe.instances(_OBSTORE)), FileNotFoundError, OSError)


class SeekableReader:
    """obstore's ReadableFile plus the `closed` attribute pyarrow's PythonFile insists on."""

    def __init__(self, inner: Any, name: str) -> None:
        self._inner = inner
        self.name = name
        self.closed = False

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return bytes(self._inner.read())
        return bytes(self._inner.read(size))

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._inner.seek(offset, whence))

    def tell(self) -> int:
        return int(self._inner.tell())

    def size(self) -> int:
        return int(self._inner.size)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()


class _Writer:
    """obstore's WritableFile with `closed` as an attribute (it is a method there, which pyarrow reads
    as truthy)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.closed = False

    def write(self, data: Any) -> int:
        if not isinstance(data, (bytes, bytearray, memoryview)):  # e.g. pa.Buffer: obstore takes bytes-likes only
            data = memoryview(data).cast("B")
        return int(self._inner.write(data))

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._inner.close()


def _file_info(path: str, meta: Any) -> Any:
    return pafs.FileInfo(path, pafs.FileType.File, size=int(meta["size"]), mtime=meta["last_modified"])


class ObstoreFSHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """pyarrow `FileSystemHandler` over an obstore store (directories are implicit, as in S3). `source` is the
    storage's shared client (`object_store._Client`), asked on every call: in a fork child it hands out a store
    made there. Two handlers are equal when they share the client (same bucket, same credentials)."""

    def __init__(self, source: Any, label: str) -> None:
        self.source = source
        self.label = label

    @property
    def store(self) -> Any:
        return self.source.get()[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObstoreFSHandler) and other.source is self.source

    def __hash__(self) -> int:
        return id(self.source)

    def get_type_name(self) -> str:
        return "deltakernel-obstore"

    def normalize_path(self, path: str) -> str:
        return path.strip("/")

    def _errors(self, exc: BaseException, path: str) -> Exception:
        if is_not_found(exc):
            return FileNotFoundError(f"{self.label}: {path} not found")
        return OSError(f"{self.label}: {path}: {exc}")

    def _is_dir(self, path: str) -> bool:
        obstore, store = self.source.get()
        if not path:
            return True
        result = obstore.list_with_delimiter(store, path)
        return bool(result["objects"]) or bool(result["common_prefixes"])

    def get_file_info(self, paths: list[str]) -> list[Any]:
        obstore, store = self.source.get()
        infos = []
        for raw in paths:
            path = self.normalize_path(raw)
            if path:
                try:
                    infos.append(_file_info(raw, obstore.head(store, path)))
                    continue
                except obstore_errors() as exc:
                    if not is_not_found(exc):
                        raise self._errors(exc, raw) from exc
            kind = pafs.FileType.Directory if self._is_dir(path) else pafs.FileType.NotFound
            infos.append(pafs.FileInfo(raw, kind))
        return infos

    def get_file_info_selector(self, selector: Any) -> list[Any]:
        obstore, store = self.source.get()
        base = self.normalize_path(selector.base_dir)
        if not self._is_dir(base):
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(f"{self.label}: directory {selector.base_dir} not found")
        lead = "/" if selector.base_dir.startswith("/") else ""
        infos: list[Any] = []
        if selector.recursive:
            dirs: set[str] = set()
            for chunk in obstore.list(store, base or None, chunk_size=1000):
                for meta in chunk:
                    infos.append(_file_info(lead + meta["path"], meta))
                    parent = meta["path"].rpartition("/")[0]
                    while parent and parent != base and parent not in dirs:
                        dirs.add(parent)
                        parent = parent.rpartition("/")[0]
            infos.extend(pafs.FileInfo(lead + d, pafs.FileType.Directory) for d in sorted(dirs))
        else:
            result = obstore.list_with_delimiter(store, base or None)
            infos.extend(_file_info(lead + m["path"], m) for m in result["objects"])
            infos.extend(
                pafs.FileInfo(lead + p.rstrip("/"), pafs.FileType.Directory)
                for p in result["common_prefixes"]
            )
        return infos

    def create_dir(self, path: str, recursive: bool) -> None:
        """Directories are implicit in object stores."""

    def delete_dir(self, path: str) -> None:
        self.delete_dir_contents(path, missing_dir_ok=True)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        obstore, store = self.source.get()
        base = self.normalize_path(path)
        if not base:
            raise OSError("refusing to delete the contents of the bucket root")
        paths = [m["path"] for chunk in obstore.list(store, base, chunk_size=1000) for m in chunk]
        if not paths and not missing_dir_ok:
            raise FileNotFoundError(f"{self.label}: directory {path} not found")
        if paths:
            obstore.delete(store, paths)

    def delete_root_dir_contents(self) -> None:
        raise OSError("refusing to delete the contents of the bucket root")

    def delete_file(self, path: str) -> None:
        obstore, store = self.source.get()
        try:
            obstore.delete(store, self.normalize_path(path))
        except obstore_errors() as exc:
            raise self._errors(exc, path) from exc

    def move(self, src: str, dest: str) -> None:
        obstore, store = self.source.get()
        try:
            obstore.rename(store, self.normalize_path(src), self.normalize_path(dest))
        except obstore_errors() as exc:
            raise self._errors(exc, src) from exc

    def copy_file(self, src: str, dest: str) -> None:
        obstore, store = self.source.get()
        try:
            obstore.copy(store, self.normalize_path(src), self.normalize_path(dest))
        except obstore_errors() as exc:
            raise self._errors(exc, src) from exc

    def open_input_stream(self, path: str) -> Any:
        return self.open_input_file(path)

    def open_input_file(self, path: str) -> Any:
        import pyarrow as pa

        obstore, store = self.source.get()
        try:
            inner = obstore.open_reader(store, self.normalize_path(path))
        except obstore_errors() as exc:
            raise self._errors(exc, path) from exc
        return pa.PythonFile(SeekableReader(inner, path), mode="r")

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        """A multipart-upload writer; the object appears when the stream is closed."""
        import pyarrow as pa

        obstore, store = self.source.get()
        return pa.PythonFile(_Writer(obstore.open_writer(store, self.normalize_path(path))), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        raise NotImplementedError("object stores do not support appending")
