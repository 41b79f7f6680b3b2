"""Directories of symbolic links to a pinned snapshot's live files: one DataFusion ListingTable per set of files.

Why: datafusion-python (55) builds a ListingTable over a directory (or one file), never over an explicit file
list, and a Delta table's directory also holds removed and uncommitted files. The listing path used to make one
`read_parquet` per live file under a `UNION ALL`: planning grew faster than linearly with the files (1,000 files:
8-9 s per query), and every file was split into `target_partitions` byte ranges on its own (a 4-file table ran 8
scan partitions instead of 2 balanced file groups). A directory holding one link per live file - and nothing
else - *is* the explicit file list: DataFusion lists it at each query (a readdir of links), groups the files into
`target_partitions` balanced groups, and opens the targets through the links (footers, row groups, pages).

A partitioned table's files can also be laid out as `<column>=<value>/` sub-directories of links (`subdirs`): one
ListingTable then scans every partition, DataFusion reading the values from the directory names
(`listing.py` decides when that text is exact).

The directories live under one temporary root per process (removed at exit by the process that made it, not by
a fork child), named by a digest of their targets, so registering the same snapshot again reuses them. They are
never removed while the process runs: a view registered in some SessionContext may still read through them, and
deltakernel cannot see when the last one is dropped (each costs one inode per file).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
import uuid

_roots: dict[int, str] = {}
_lock = threading.Lock()


def _root() -> str:
    pid = os.getpid()
    with _lock:
        root = _roots.get(pid)
        if root is None or not os.path.isdir(root):
            root = _roots[pid] = tempfile.mkdtemp(prefix="deltakernel-df-links-")
            atexit.register(_cleanup, pid, root)
        return root


def _cleanup(pid: int, root: str) -> None:
    if os.getpid() == pid:  # a fork child exiting normally must not remove its parent's links
        shutil.rmtree(root, ignore_errors=True)


def link_dir(targets: list[str], subdirs: list[str] | None = None) -> str:
    """A directory (with a trailing slash) holding exactly one link per path of `targets` (absolute local
    paths), named in their order - under `subdirs[i]` (a relative directory path, e.g. "p=1/q=a") when given;
    the same targets (and sub-directories) give the same directory."""
    key = "\0".join(targets) if subdirs is None else "\0".join(f"{d}\1{t}" for d, t in zip(subdirs, targets,
                                                                                       strict=True))
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    final = os.path.join(_root(), digest)
    if not os.path.isdir(final):
        tmp = f"{final}.{uuid.uuid4().hex}.tmp"
        os.mkdir(tmp)
        width = len(str(len(targets)))
        for i, target in enumerate(targets):
            parent = tmp if subdirs is None else os.path.join(tmp, subdirs[i])
            if subdirs is not None:
                os.makedirs(parent, exist_ok=True)
            os.symlink(target, os.path.join(parent, f"part-{i:0{width}d}.parquet"))
        try:
            os.rename(tmp, final)
        except OSError:  # made meanwhile by another thread: same content
            shutil.rmtree(tmp, ignore_errors=True)
            if not os.path.isdir(final):
                raise
    return final + os.sep


__all__ = ["link_dir"]
