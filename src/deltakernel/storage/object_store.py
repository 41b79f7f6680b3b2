"""Cloud object-store storage (S3, GCS, Azure, in-memory) on PyPI `obstore`.

`obstore` is imported lazily so `deltakernel.storage` imports even where it is missing. The store is built
at bucket/container level and the table prefix is applied here, so `child()` can share one client (same
credentials, same connection pool) and `memory://` tables share one process-wide in-memory store.
Commits rely on `put(mode="create")`, i.e. S3 `If-None-Match: *` / GCS and Azure preconditions.

Fork children: obstore's tokio runtime does not survive `fork()`, so every call goes through the obstore instance
usable in this process (`forksafe.module`) and a storage made in the parent rebuilds its client on first use in
the child (`_client`); a cache of storages (keyed by URI, made before a fork) thus hands out child-made clients.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import pyarrow.fs as pafs

from deltakernel.errors import FileAlreadyExistsError, InvalidPathError, ObjectNotFoundError, StorageError
from deltakernel.storage import forksafe
from deltakernel.storage.base import (
    ObjectMeta,
    Storage,
    check_range,
    foreign_paths_allowed,
    normalize_store_path,
    under_skipped_dir,
    without_deltakernel_options,
)
from deltakernel.storage.obstore_fs import (
    ObstoreFSHandler,
    SeekableReader,
    is_not_found,
    obstore_errors,
    obstore_module,
)

S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
GCS_SCHEMES = frozenset({"gs"})
AZURE_SCHEMES = frozenset({"az", "abfs", "abfss", "adl", "azure"})
MEMORY_SCHEMES = frozenset({"memory"})
OBJECT_STORE_SCHEMES = S3_SCHEMES | GCS_SCHEMES | AZURE_SCHEMES | MEMORY_SCHEMES

#: object_store HTTP-client options (deltalake passes them mixed in with the store keys)
_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "http1_only", "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout",
    "http2_keep_alive_while_idle", "http2_max_frame_size", "pool_idle_timeout", "pool_max_idle_per_host",
    "proxy_url", "proxy_ca_certificate", "proxy_excludes", "randomize_addresses", "timeout", "user_agent",
})  # fmt: skip

#: delta-rs keys for its rename/locking machinery or its own tuning; meaningless with conditional put
_IGNORED_KEYS = frozenset({
    "aws_s3_allow_unsafe_rename", "allow_unsafe_rename", "mount_allow_unsafe_rename",
    "aws_s3_locking_provider", "delta_dynamo_table_name", "aws_endpoint_url_dynamodb",
    "aws_region_dynamodb", "aws_access_key_id_dynamodb", "aws_secret_access_key_dynamodb",
    "aws_session_token_dynamodb", "aws_s3_pool_idle_timeout_seconds", "aws_sts_pool_idle_timeout_seconds",
    "aws_s3_get_internal_server_error_retries", "aws_force_credential_load", "aws_ec2_metadata_disabled",
    "aws_ec2_metadata_timeout", "dynamodb_lock_max_elapsed_request_time", "aws_allow_unsafe_rename",
})  # fmt: skip

#: delta-rs spellings object_store does not know under that name
_S3_ALIASES = {"aws_s3_assume_role_arn": "aws_role_arn", "aws_s3_role_session_name": "aws_role_session_name"}

_OTHER_CLOUD_PREFIXES = {
    "s3": ("azure_", "google_"),
    "gcs": ("aws_", "azure_"),
    "azure": ("aws_", "google_"),
}

_memory: tuple[Any, Any] | None = None  # (obstore instance, its MemoryStore)
_memory_lock = threading.Lock()


def _reset_lock_in_child() -> None:
    global _memory_lock
    _memory_lock = threading.Lock()  # another thread may have held it at fork time


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_lock_in_child)


def _shared_memory_store(obs: Any) -> Any:
    """One MemoryStore per process, so separately opened `memory://` tables see each other's writes. A fork child
    whose obstore is a fresh instance starts with a copy of the parent's objects (as a forked process's memory is)."""
    global _memory
    with _memory_lock:
        if _memory is not None and _memory[0] is obs:
            return _memory[1]
        store = obs._store.MemoryStore()
        if _memory is not None:  # made by an instance this process cannot run: copy its objects over
            old_obs, old = _memory
            for chunk in old_obs.list(old, None, chunk_size=1000):  # in memory: no runtime worker is needed
                for meta in chunk:
                    data = bytes(old_obs.get(old, meta["path"]).bytes())
                    obs.put(store, meta["path"], data, use_multipart=False)
            forksafe.keep(old)
        _memory = (obs, store)
        return store


def _backend(scheme: str) -> str:
    if scheme in S3_SCHEMES:
        return "s3"
    if scheme in GCS_SCHEMES:
        return "gcs"
    if scheme in AZURE_SCHEMES:
        return "azure"
    if scheme in MEMORY_SCHEMES:
        return "memory"
    raise StorageError(f"unsupported object store scheme {scheme!r}")


def _parse_seconds(key: str, value: str) -> timedelta:
    v = value.strip().lower()
    scale = 1.0
    if v.endswith("ms"):
        v, scale = v[:-2], 0.001
    elif v.endswith("s"):
        v = v[:-1]
    elif v.endswith("m"):
        v, scale = v[:-1], 60.0
    try:
        return timedelta(seconds=float(v) * scale)
    except ValueError as exc:
        raise StorageError(f"storage option {key}={value!r}: expected a duration like '30s'") from exc


def split_storage_options(
    backend: str, storage_options: dict[str, str] | None
) -> tuple[dict[str, str], dict[str, str], dict[str, Any]]:
    """deltalake-style options -> (store config, client options, retry config) for obstore.

    Keys are case-insensitive; object_store itself understands the `aws_*`, `google_*`, `azure_*` and
    bare spellings, so those pass through lowercased. Client keys may carry a cloud prefix
    (`AWS_ALLOW_HTTP`); delta-rs locking keys are accepted and ignored; other clouds' keys are dropped.
    """
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    retry: dict[str, Any] = {}
    skip_prefixes = _OTHER_CLOUD_PREFIXES.get(backend, ())
    for raw_key, raw_value in (storage_options or {}).items():
        key = raw_key.strip().lower()
        value = str(raw_value)
        if key in _IGNORED_KEYS or key.startswith(skip_prefixes):
            continue
        bare = key
        for p in ("aws_", "google_", "azure_"):
            if key.startswith(p):
                bare = key[len(p) :]
                break
        if bare in _CLIENT_KEYS:
            client[bare] = value
        elif key == "max_retries":
            try:
                retry["max_retries"] = int(value)
            except ValueError as exc:
                raise StorageError(f"storage option {raw_key}={value!r}: expected an integer") from exc
        elif key == "retry_timeout":
            retry["retry_timeout"] = _parse_seconds(raw_key, value)
        elif backend == "memory":
            continue
        else:
            config[_S3_ALIASES.get(key, key) if backend == "s3" else key] = value
    return config, client, retry


def parse_object_store_url(url: str) -> tuple[str, str, str]:
    """(lowercased scheme, bucket/container netloc, percent-decoded prefix without slashes)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    backend = _backend(scheme)
    if backend == "memory":
        # memory://name/path and memory:///path both address the one shared store
        netloc = ""
        prefix = unquote(parts.netloc + parts.path).strip("/")
    else:
        netloc = parts.netloc
        if not netloc:
            raise InvalidPathError(f"object store URL {url!r} has no bucket/container")
        prefix = unquote(parts.path).strip("/")
    if any(seg in ("..", ".") for seg in prefix.split("/")):
        raise InvalidPathError(f"object store URL {url!r} contains '.' or '..' segments")
    return scheme, netloc, "/".join(seg for seg in prefix.split("/") if seg)


def _root_uri(scheme: str, netloc: str, prefix: str) -> str:
    if scheme in MEMORY_SCHEMES:
        return f"memory:///{prefix}" if prefix else "memory://"
    return f"{scheme}://{netloc}/{prefix}" if prefix else f"{scheme}://{netloc}"


def normalize_object_store_url(url: str) -> str:
    """The canonical root URI: lowercase scheme, no trailing slash, decoded path."""
    return _root_uri(*parse_object_store_url(url))


class _Client:
    """The obstore store of one bucket/container, shared by an `ObjectStoreStorage` and its `child()` /
    `store_root()` storages (same credentials, same connection pool). `get()` hands out (obstore instance, store)
    for this process: a store made by another obstore instance - in the parent of a fork child, or before
    pickling - is replaced, once for all the storages sharing it, by one made here with the same configuration."""

    def __init__(self, backend: str, scheme: str, netloc: str, storage_options: dict[str, str], label: str) -> None:
        self.backend, self.scheme, self.netloc = backend, scheme, netloc
        self.storage_options = storage_options
        self.label = label
        try:
            obs = obstore_module()
        except ImportError as exc:
            raise StorageError(f"{scheme}:// tables need the 'obstore' package: {exc}") from exc
        self._handle: tuple[Any, Any] = (obs, self._build(obs))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the store (a native object of one process): rebuilt on first use after unpickling."""
        return {**self.__dict__, "_handle": (None, None)}

    def reconfigure(self, storage_options: dict[str, str]) -> None:
        """New options (a catalog's refreshed temporary credentials) for every storage sharing this store
        (operations in flight finish on the old store, which they still reference)."""
        obs = obstore_module()
        self.storage_options = storage_options
        self._handle = (obs, self._build(obs))

    def get(self) -> tuple[Any, Any]:
        obs = obstore_module()
        handle = self._handle
        if handle[0] is not obs:  # two threads may both rebuild: one store wins, both work
            if handle[1] is not None:
                forksafe.keep(handle[1])  # never finalized here: made by another obstore instance
            handle = self._handle = (obs, self._build(obs))
        return handle

    def _build(self, obs: Any) -> Any:
        if self.backend == "memory":
            return _shared_memory_store(obs)
        config, client, retry = split_storage_options(self.backend, without_deltakernel_options(self.storage_options))
        scheme = "s3" if self.backend == "s3" else self.scheme  # s3a/s3n are Hadoop's names for the same store
        try:
            return obs._store.from_url(
                f"{scheme}://{self.netloc}",
                config=config or None,
                client_options=client or None,
                retry_config=retry or None,
            )
        except obs.exceptions.BaseError as exc:
            raise StorageError(f"cannot configure object store for {self.label}: {exc}") from exc


class ObjectStoreStorage(Storage):
    """A table root inside an object store bucket/container, addressed by '/'-separated keys."""

    def __init__(
        self,
        url: str,
        storage_options: dict[str, str] | None = None,
        *,
        client: _Client | None = None,
    ) -> None:
        """`client`: the store of another storage of the same bucket, shared (used by `child`, `store_root`)."""
        scheme, netloc, prefix = parse_object_store_url(url)
        self.scheme = scheme
        self.backend = _backend(scheme)
        self.storage_options: dict[str, str] = dict(storage_options or {})
        self.allow_foreign_paths = foreign_paths_allowed(self.storage_options)
        self.netloc = netloc
        self.prefix = prefix
        self.root_uri = _root_uri(scheme, netloc, prefix)
        self._shared = client if client is not None else \
            _Client(self.backend, scheme, netloc, self.storage_options, self.root_uri)

    def __repr__(self) -> str:
        return f"ObjectStoreStorage({self.root_uri!r})"

    def refresh_options(self, storage_options: dict[str, str]) -> None:
        """Replace the options (fresh vended credentials from a catalog) of this storage and its shared store."""
        self.storage_options = dict(storage_options)
        self._shared.reconfigure(self.storage_options)

    def _client(self) -> tuple[Any, Any]:
        """(obstore instance, store) usable in this process (see `_Client`)."""
        return self._shared.get()

    @property
    def _store(self) -> Any:
        return self._shared.get()[1]

    # ------------------------------------------------------------------ paths
    def _path(self, key: str) -> str:
        """The store path of `key`; refuses '..' that would climb above the table root."""
        segments: list[str] = []
        for seg in key.split("/"):
            if seg in ("", "."):
                continue
            if seg == "..":
                if not segments:
                    raise InvalidPathError(f"key {key!r} escapes the storage root {self.root_uri}")
                segments.pop()
                continue
            segments.append(seg)
        rel = "/".join(segments)
        if self.prefix:
            return f"{self.prefix}/{rel}" if rel else self.prefix
        return rel

    def _key(self, path: str) -> str:
        if self.prefix:
            return path[len(self.prefix) + 1 :]
        return path

    def _wrap(self, exc: BaseException, what: str, key: str) -> Exception:
        uri = self.full_uri(key)
        if is_not_found(exc):
            return ObjectNotFoundError(f"object not found: {uri}")
        return StorageError(f"{what} {uri} failed: {exc}")

    # ------------------------------------------------------------------ listing
    def list_from(
        self, prefix: str, start_after: str | None = None, *, recursive: bool = False
    ) -> Iterator[ObjectMeta]:
        """Objects under key prefix `prefix`, sorted, keys > `start_after`.

        object_store lists whole path segments, so the directory part of `prefix` is listed (with
        `start_after` as the server-side offset) and names are filtered here. Without `recursive`,
        objects in deeper "subdirectories" are skipped.
        """
        return iter(self._list(prefix, start_after, recursive, None))

    def list_range(
        self, prefix: str, start_after: str | None = None, end_before: str | None = None
    ) -> list[ObjectMeta]:
        """Stops requesting pages once a whole page lies at or past `end_before`."""
        return self._list(prefix, start_after, False, end_before)

    def _list(
        self, prefix: str, start_after: str | None, recursive: bool, end_before: str | None
    ) -> list[ObjectMeta]:
        obs, store = self._client()
        dir_part, _, name_prefix = prefix.rpartition("/")
        list_prefix = self._path(dir_part) if dir_part else self.prefix
        key_base = f"{dir_part}/" if dir_part else ""
        # a server-side offset only when start_after is a clean key (normalizing could move it forward)
        clean = start_after and all(seg not in ("", ".", "..") for seg in start_after.split("/"))
        offset = self._path(start_after) if clean and start_after else None
        found: list[ObjectMeta] = []
        try:
            stream = obs.list(store, list_prefix or None, offset=offset, chunk_size=1000)
            for chunk in stream:
                past_end = end_before is not None
                for meta in chunk:
                    key = self._key(meta["path"])
                    if end_before is not None:
                        if key >= end_before:
                            continue
                        past_end = False
                    if not key.startswith(key_base):
                        continue
                    rest = key[len(key_base) :]
                    if not rest.startswith(name_prefix) or (not recursive and "/" in rest):
                        continue
                    if start_after is not None and key <= start_after:
                        continue
                    mtime = int(meta["last_modified"].timestamp() * 1000)
                    found.append(ObjectMeta(key, int(meta["size"]), mtime))
                if past_end and len(chunk):
                    break  # every key of this page is past the end (pages come in key order)
        except obstore_errors() as exc:
            if is_not_found(exc):
                return []
            raise StorageError(f"listing {self.full_uri(prefix)} failed: {exc}") from exc
        found.sort(key=lambda m: m.key)
        return found

    def walk(self, prefix: str = "", skip_dir: Callable[[str], bool] | None = None) -> Iterator[list[ObjectMeta]]:
        """One flat listing under `prefix`, streamed page by page (1,000 keys); object stores have no
        directories to prune, so `skip_dir` filters the keys of each page instead."""
        obs, store = self._client()
        base = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        list_prefix = self._path(base) if base else self.prefix
        cache: dict[str, bool] = {}
        try:
            for chunk in obs.list(store, list_prefix or None, chunk_size=1000):
                page = []
                for meta in chunk:
                    key = self._key(meta["path"])
                    if key.startswith(base) and not under_skipped_dir(key, base, skip_dir, cache):
                        page.append(ObjectMeta(key, int(meta["size"]), int(meta["last_modified"].timestamp() * 1000)))
                if page:
                    yield page
        except obstore_errors() as exc:
            if is_not_found(exc):
                return
            raise StorageError(f"listing {self.full_uri(prefix)} failed: {exc}") from exc

    # ------------------------------------------------------------------ reads
    def read(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        obs, store = self._client()
        path = self._path(key)
        check_range(start, end)
        try:
            if end is not None:
                if end == (start or 0):
                    self.head(key)  # an empty range still must fail for a missing object
                    return b""
                return bytes(obs.get_range(store, path, start=start or 0, end=end))
            if start:
                return bytes(obs.get(store, path, options={"range": {"offset": start}}).bytes())
            return bytes(obs.get(store, path).bytes())
        except obstore_errors() as exc:
            # S3 answers 416 for a range starting at/after EOF; match local files (empty read)
            if self._is_range_error(exc, start, end) and (start or 0) >= self.head(key).size:
                return b""
            raise self._wrap(exc, "read of", key) from exc

    @staticmethod
    def _is_range_error(exc: BaseException, start: int | None, end: int | None) -> bool:
        if (start is None and end is None) or is_not_found(exc):
            return False
        msg = str(exc)
        return "416" in msg or "range" in msg.lower()

    def head(self, key: str) -> ObjectMeta:
        obs, store = self._client()
        try:
            meta = obs.head(store, self._path(key))
        except obstore_errors() as exc:
            raise self._wrap(exc, "head of", key) from exc
        mtime = int(meta["last_modified"].timestamp() * 1000)
        return ObjectMeta(self._key(meta["path"]), int(meta["size"]), mtime)

    def exists(self, key: str) -> bool:
        try:
            self.head(key)
        except ObjectNotFoundError:
            return False
        return True

    def open_input_file(self, key: str) -> Any:
        """A pyarrow PythonFile over obstore's buffered range reader (one HEAD, then ranged GETs)."""
        import pyarrow as pa

        obs, store = self._client()
        path = self._path(key)
        try:
            inner = obs.open_reader(store, path)
        except obstore_errors() as exc:
            raise self._wrap(exc, "open of", key) from exc
        return pa.PythonFile(SeekableReader(inner, self.full_uri(key)), mode="r")

    # ------------------------------------------------------------------ writes
    def put_if_absent(self, key: str, data: bytes) -> None:
        """Conditional create (`If-None-Match: *` on S3); a lost race raises FileAlreadyExistsError.

        Caveat: an S3-compatible server that silently ignores `If-None-Match` overwrites instead;
        that cannot be detected from the response.
        """
        obs, store = self._client()
        errors = obs.exceptions
        path = self._path(key)
        if not key.strip("/"):
            raise InvalidPathError("cannot put an object at the storage root")
        try:
            obs.put(store, path, data, mode="create")
        except (errors.AlreadyExistsError, errors.PreconditionError) as exc:
            raise FileAlreadyExistsError(f"object already exists: {self.full_uri(key)}") from exc
        except obstore_errors() as exc:
            msg = str(exc)
            if isinstance(exc, errors.NotSupportedError) or "501" in msg or "NotImplemented" in msg:
                raise StorageError(
                    f"conditional put of {self.full_uri(key)} is not supported by this object store: "
                    f"{msg}. Delta commits need atomic create-if-absent (S3 `If-None-Match: *`); use a "
                    "server that supports it or configure AWS_CONDITIONAL_PUT for your store."
                ) from exc
            raise self._wrap(exc, "put of", key) from exc

    def put(self, key: str, data: bytes) -> None:
        """Unconditional write (objects under fresh names: deletion-vector files), not for commits. object_store
        resends it after a lost response or a 5xx (it is idempotent), within the store's retry settings."""
        if not key.strip("/"):
            raise InvalidPathError("cannot put an object at the storage root")
        obs, store = self._client()
        try:
            obs.put(store, self._path(key), data)
        except obstore_errors() as exc:
            raise self._wrap(exc, "put of", key) from exc

    def delete(self, key: str) -> None:
        if not key.strip("/"):
            raise InvalidPathError("cannot delete the storage root")
        obs, store = self._client()
        try:
            obs.delete(store, self._path(key))
        except obstore_errors() as exc:
            if is_not_found(exc):
                return
            raise self._wrap(exc, "delete of", key) from exc

    def delete_many(self, keys: Sequence[str]) -> None:
        """Bulk deletes (S3 DeleteObjects, 1,000 keys a request), a few requests in flight at once."""
        if any(not k.strip("/") for k in keys):
            raise InvalidPathError("cannot delete the storage root")
        obs, store = self._client()
        batches = [[self._path(k) for k in keys[i : i + 1000]] for i in range(0, len(keys), 1000)]

        def run(paths: list[str]) -> None:
            try:
                obs.delete(store, paths)
            except obstore_errors() as exc:
                if not is_not_found(exc):
                    raise StorageError(f"bulk delete under {self.root_uri} failed: {exc}") from exc

        if len(batches) <= 1:
            for b in batches:
                run(b)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(batches))) as pool:
            for _ in pool.map(run, batches):
                pass

    # ------------------------------------------------------------------ arrow / children
    def arrow_filesystem(self) -> tuple[Any, str]:
        """A pyarrow PyFileSystem over the same obstore client; paths are `<prefix>/<key>`.

        Chosen over pyarrow's native S3/GCS/Azure filesystems because it reuses exactly this store's
        configuration (every scheme incl. memory://, every credential option obstore supports) instead
        of translating options a second time. Paths are bucket-relative; a leading '/' is ignored, so a
        table at the bucket root has base "" and `base + '/' + key` still works.
        """
        return pafs.PyFileSystem(ObstoreFSHandler(self._shared, self.root_uri)), self.prefix

    def child(self, key_prefix: str) -> ObjectStoreStorage:
        rel = self._path(key_prefix)
        if self.backend == "memory":
            url = f"memory:///{quote(rel)}"
        else:
            url = f"{self.scheme}://{self.netloc}/{quote(rel)}"
        return ObjectStoreStorage(url, self.storage_options, client=self._shared)

    # ------------------------------------------------------------------ files outside the root
    def store_root(self) -> ObjectStoreStorage:
        """The bucket/container root, sharing this storage's client."""
        found = self.__dict__.get("_store_root")
        if found is None:
            url = _root_uri(self.scheme, self.netloc, "")
            found = self.__dict__["_store_root"] = ObjectStoreStorage(url, self.storage_options, client=self._shared)
        return found

    def store_key(self, scheme: str, netloc: str, path: str) -> str | None:
        """Same store = same backend (s3/s3a/s3n are one) and same bucket/container."""
        try:
            backend = _backend(scheme.lower())
        except StorageError:
            return None
        if backend != self.backend or (backend != "memory" and netloc != self.netloc):
            return None
        return normalize_store_path(path)
