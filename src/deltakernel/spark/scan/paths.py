"""Data file paths as Spark names them: one `java.net.URI` string per file of the log.

The same string is the Hadoop `Path` of the file in the scan's file listing and what Spark reports as
`_metadata.file_path` for its rows, so deletion-vector filters, row-tracking joins and DML file ids all key
on it. Most log paths are plain relative names (`part-0000-<uuid>.snappy.parquet`, `p=1/part-...`) that
percent-decoding and re-encoding leave unchanged: those are the table root's URI plus the path, computed
for the whole column at once. The rest (escapes, absolute paths of shallow clones, `.` segments) go
through `kernel.paths.resolve_file` one by one.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...kernel.paths import resolve_file
from ...operations.files.layout import uri_encode_path
from ...storage.local import LocalStorage

# Characters `uri_encode_path` leaves alone and `unquote` does not change (no '%', no ':' - a scheme)
_PLAIN = r"^[A-Za-z0-9_\-!.~'()*,;$&+=@/]+$"
# ... minus what `posixpath.normpath` would change or the kernel refuses
_NOT_NORMAL = r"(^/|//|/$|(^|/)\.\.?(/|$))"


def file_uri(storage: Any, key: str) -> str:
    """The URI Spark uses for a storage key (`_metadata.file_path`)."""
    if isinstance(storage, LocalStorage):
        return "file:" + uri_encode_path(storage.full_uri(key))
    root = storage.root_uri.rstrip("/")
    if root.startswith("s3://"):
        root = "s3a://" + root[len("s3://"):]
    scheme, _, rest = root.partition("://")
    bucket, _, prefix = rest.partition("/")
    return f"{scheme}://{bucket}/" + uri_encode_path(f"{prefix}/{key}" if prefix else key)


def file_uris(storage: Any, paths: pa.Array | pa.ChunkedArray) -> pa.Array:
    """`file_uri` of every log path in `paths` (relative or absolute), vectorized for plain relative paths."""
    if isinstance(paths, pa.ChunkedArray):
        paths = paths.combine_chunks()
    if len(paths) == 0:
        return pa.array([], pa.string())
    plain = pc.and_(pc.match_substring_regex(paths, _PLAIN),
                    pc.invert(pc.match_substring_regex(paths, _NOT_NORMAL)))
    plain = pc.fill_null(plain, False)
    prefix = file_uri(storage, "x")[:-1]  # the root's URI with its trailing '/'
    out = pc.binary_join_element_wise(pa.scalar(prefix), paths, "")
    if pc.all(plain).as_py():
        return out
    slow = pc.invert(plain)
    slow_paths = paths.filter(slow).to_pylist()
    fixed = pa.array([file_uri(*resolve_file(storage, p)) for p in slow_paths], pa.string())
    return pc.replace_with_mask(out, slow, fixed)  # replacements fill the True positions in order


__all__ = ["file_uri", "file_uris"]
