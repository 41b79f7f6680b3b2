"""Resolve file paths from the log to storage keys, refusing anything outside the table.

Paths in add/remove/cdc actions are URIs: relative ones are percent-encoded and resolved against the
table root; absolute ones are accepted only when they point inside the table root. A `..` segment that
escapes the root is refused (PROTOCOL.md "Add File and Remove File": paths are relative to the root).
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse

from ..errors import InvalidPathError


def _normalize_root(root_uri: str) -> str:
    root = root_uri.rstrip("/")
    if root.startswith("file:"):
        root = urllib.parse.unquote(urllib.parse.urlparse(root).path)
    return root


def _absolute_to_comparable(path: str) -> str:
    """`file:/x`, `file:///x` and `/x` name the same local file; URLs keep scheme and bucket."""
    if path.startswith("file:"):
        return urllib.parse.unquote(urllib.parse.urlparse(path).path)
    if path.startswith("/"):
        return path
    parsed = urllib.parse.urlparse(path)
    return f"{parsed.scheme}://{parsed.netloc}{urllib.parse.unquote(parsed.path)}"


_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


def is_absolute(path: str) -> bool:
    """An absolute path or a URI with a scheme (`file:`, `s3://`, ...)."""
    return path.startswith("/") or bool(_SCHEME_RE.match(path))


def resolve_key(root_uri: str, path: str) -> str:
    """Storage key (relative to the table root) for a path from the log."""
    if not path:
        raise InvalidPathError("empty file path in the Delta log")
    if is_absolute(path):
        absolute = _absolute_to_comparable(path)
        root = _normalize_root(root_uri)
        if not (absolute.startswith(root + "/")):
            raise InvalidPathError(
                f"file {path!r} is outside the table root {root_uri!r}; refusing to read it"
            )
        key = absolute[len(root) + 1 :]
    else:
        key = urllib.parse.unquote(path)
    normalized = posixpath.normpath(key)
    if normalized.startswith("../") or normalized == ".." or normalized.startswith("/") or ("/../" in f"/{key}/" \
            and normalized.startswith("..")):
        raise InvalidPathError(f"file {path!r} escapes the table root {root_uri!r}; refusing to read it")
    if any(seg == ".." for seg in key.split("/")):
        raise InvalidPathError(f"file {path!r} contains '..'; refusing to read it")
    return normalized


def to_uri(root_uri: str, path: str) -> str:
    """Absolute URI of a file in the log, as deltalake's `file_uris()` reports it."""
    key = resolve_key(root_uri, path)
    return f"{root_uri.rstrip('/')}/{key}"
