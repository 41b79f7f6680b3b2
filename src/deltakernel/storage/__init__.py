"""Storage backends and the URI -> backend dispatch.

Everything above this package talks to `Storage` only; `storage_for_uri` is the single place that knows
which URI forms map to which backend.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Sequence
from urllib.parse import unquote, urlsplit

from deltakernel.errors import InvalidPathError, StorageError
from deltakernel.storage.base import (
    ALLOW_FOREIGN_PATHS_OPTION,
    ObjectMeta,
    Storage,
    foreign_paths_allowed,
    set_uri_opener,
)
from deltakernel.storage.local import LocalStorage
from deltakernel.storage.object_store import OBJECT_STORE_SCHEMES, ObjectStoreStorage, normalize_object_store_url

__all__ = [
    "ALLOW_FOREIGN_PATHS_OPTION",
    "OBJECT_STORE_SCHEMES",
    "LocalStorage",
    "ObjectMeta",
    "ObjectStoreStorage",
    "Storage",
    "normalize_table_uri",
    "option_pairs",
    "register_table_scheme",
    "storage_for_uri",
]

#: `(uri, storage_options, create) -> Storage` for URI schemes that name a table rather than a location (a
#: catalog's `uc://catalog.schema.table`): the opener resolves the name to the table's storage, with the catalog
#: attached as `storage.catalog` (kernel/catalog_client.py) so every snapshot load and commit goes through it.
TableSchemeOpener = Callable[[str, "dict[str, str] | None", bool], Storage]
_TABLE_SCHEMES: dict[str, TableSchemeOpener] = {}
#: schemes whose opener lives in an engine-layer package, imported on first use (a plugin seam like an entry
#: point: this package never imports the engines; the module registers itself with `register_table_scheme`)
_TABLE_SCHEME_MODULES = {"uc": "deltakernel.unity.tables"}


def register_table_scheme(scheme: str, opener: TableSchemeOpener) -> None:
    """Install the opener of a table-name URI scheme (see `_TABLE_SCHEMES`)."""
    _TABLE_SCHEMES[scheme.lower()] = opener


def _table_scheme_opener(scheme: str) -> TableSchemeOpener | None:
    if scheme not in _TABLE_SCHEMES and scheme in _TABLE_SCHEME_MODULES:
        importlib.import_module(_TABLE_SCHEME_MODULES[scheme])
    return _TABLE_SCHEMES.get(scheme)

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")


def _scheme(uri: str) -> str | None:
    m = _SCHEME_RE.match(uri)
    return m.group(1).lower() if m else None


def _file_url_to_path(uri: str) -> str:
    """file:///abs/path (percent-decoded); file://localhost/... is accepted, other hosts are not."""
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise InvalidPathError(f"file URL with a remote host is not supported: {uri!r}")
    path = unquote(parts.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):
        path = path[1:]  # file:///C:/x -> C:/x
    if not path:
        raise InvalidPathError(f"file URL without a path: {uri!r}")
    return os.path.abspath(path)


def _local_path(uri: str) -> str:
    if not uri:
        raise InvalidPathError("empty table path")
    return os.path.abspath(os.path.expanduser(uri))


def normalize_table_uri(uri: str) -> str:
    """The canonical form of a table location (what `storage_for_uri(uri).root_uri` will be).

    Local paths and file:// URLs become absolute paths without a trailing slash; object-store URLs keep
    their scheme (lowercased) and lose the trailing slash.
    """
    uri = os.fspath(uri)
    scheme = _scheme(uri)
    if scheme is None:
        return _local_path(uri)
    if scheme == "file":
        return _file_url_to_path(uri)
    if scheme in OBJECT_STORE_SCHEMES:
        return normalize_object_store_url(uri)
    raise StorageError(f"unsupported URI scheme {scheme!r} in {uri!r}")


def storage_for_uri(uri: str, storage_options: dict[str, str] | None = None, *, create: bool = False) -> Storage:
    """The backend for a table URI; `storage_options` are deltalake's keys (for local paths only
    ALLOW_FOREIGN_PATHS_OPTION matters; the rest is kept to open another store when that is allowed).
    A table-name URI (`uc://catalog.schema.table`) is resolved by its scheme's opener; `create` (writers only)
    lets it prepare a new table when the name does not exist yet (a missing table is TableNotFoundError else)."""
    uri = os.fspath(uri)
    scheme = _scheme(uri)
    opener = _table_scheme_opener(scheme) if scheme is not None else None
    if opener is not None:
        return opener(uri, storage_options, create)
    if scheme is None or scheme == "file":
        local = LocalStorage(_local_path(uri) if scheme is None else _file_url_to_path(uri))
        local.storage_options = dict(storage_options or {})
        local.allow_foreign_paths = foreign_paths_allowed(storage_options)
        return local
    if scheme in OBJECT_STORE_SCHEMES:
        return ObjectStoreStorage(uri, storage_options)
    raise StorageError(f"unsupported URI scheme {scheme!r} in {uri!r}")


set_uri_opener(storage_for_uri)


def option_pairs(pairs: Sequence[str] | None) -> dict[str, str] | None:
    """`KEY=VALUE` strings (the CLIs' `-o`) as storage options; None when there are none."""
    out: dict[str, str] = {}
    for kv in pairs or []:
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            raise StorageError(f"storage option {kv!r} is not KEY=VALUE (e.g. -o AWS_REGION=us-east-1)")
        out[key.strip()] = value
    return out or None
