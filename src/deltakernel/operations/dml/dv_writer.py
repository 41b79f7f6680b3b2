"""Writing deletion vectors (PROTOCOL.md "Deletion Vectors", "Deletion Vector Format").

A DML operation collects, per touched file, its new deleted set (existing DV union the rows it deletes),
and :class:`DeletionVectorWriter` puts them all into ONE version-1 DV file (`deletion_vector_<uuid>.bin`
at the table root, or under a random prefix directory when `delta.randomizeFilePrefixes` is on, as
delta-spark does); each file gets a storage-type `u` descriptor with its offset, size and cardinality.
:func:`dv_add_action` turns a file-table row and its new descriptor into the `add` that replaces it:
same path, dataChange, the original stats kept but marked `tightBounds: false` (they now describe
deleted rows too), baseRowId / defaultRowCommitVersion kept (the physical rows did not move).
"""

from __future__ import annotations

import json
import random
import string
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...kernel.deletion_vectors import DeletionVectorDescriptor, encode_dv_file, serialize_roaring_bitmap_array
from ...kernel.log.action_types import AddAction
from ...storage import Storage

_PREFIX_CHARS = string.ascii_letters + string.digits


def _random_prefix(configuration: Mapping[str, str]) -> str:
    if str(configuration.get("delta.randomizeFilePrefixes", "false")).strip().lower() != "true":
        return ""
    length = int(configuration.get("delta.randomPrefixLength", "2") or 2)
    return "".join(random.choice(_PREFIX_CHARS) for _ in range(length))


class DeletionVectorWriter:
    """Buffers serialized bitmaps (`add`) and writes them as one DV file (`write`); `abort` deletes it."""

    def __init__(self, storage: Storage, configuration: Mapping[str, str]) -> None:
        self.storage = storage
        self.prefix = _random_prefix(configuration)
        self.uuid = uuid.uuid4()
        self._bitmaps: list[bytes] = []
        self._cardinalities: list[int] = []
        self.key: str | None = None  # set once written

    def add(self, deleted: npt.NDArray[np.uint64]) -> int:
        """Queue one file's full deleted set; returns its index for :meth:`write`'s descriptors."""
        self._bitmaps.append(serialize_roaring_bitmap_array(deleted))
        self._cardinalities.append(int(deleted.size))
        return len(self._bitmaps) - 1

    def write(self) -> list[DeletionVectorDescriptor]:
        """Write the DV file and return each queued DV's descriptor.

        An unconditional put, as for data files: the name holds a fresh UUID, so no one else writes it, and
        the store's client may then resend the request after a lost response or a 5xx (a conditional create
        would meet its own first attempt and fail). The key is recorded before the put, so `abort` also
        deletes a file whose put failed after the server stored it (see docs/decisions.md)."""
        if not self._bitmaps:
            return []
        payload, offsets = encode_dv_file(self._bitmaps)
        name = f"deletion_vector_{self.uuid}.bin"
        key = f"{self.prefix}/{name}" if self.prefix else name
        self.key = key
        self.storage.put(key, payload)
        return [DeletionVectorDescriptor.for_uuid(self.uuid, off, len(data), card, prefix=self.prefix)
                for off, data, card in zip(offsets, self._bitmaps, self._cardinalities)]

    def commit_into(self, txn: Any, files: Sequence[Mapping[str, Any]], now: int) -> int:
        """Write the DV file and record, per queued file (`files`, in `add` order), a remove of the file row and
        an add of the same path with its new descriptor. Returns how many of them replaced an existing DV."""
        from .rewrite import remove_action

        for row, descriptor in zip(files, self.write(), strict=True):
            txn.remove_files([remove_action(row, now)])
            txn.add_files([dv_add_action(row, descriptor)])
        return sum(1 for row in files if row.get("deletion_vector"))

    def abort(self) -> None:
        """Delete the DV file written (only when the commit is known absent)."""
        if self.key is not None:
            try:
                self.storage.delete(self.key)
            except Exception:  # best effort: an orphan DV file is harmless
                pass
            self.key = None


def loose_stats(stats: str | None) -> str | None:
    """The stats of a file that gained deleted rows: same values, `tightBounds: false`."""
    if not stats:
        return stats
    try:
        doc = json.loads(stats)
    except ValueError:
        return stats
    if not isinstance(doc, dict):
        return stats
    doc["tightBounds"] = False
    return json.dumps(doc, separators=(",", ":"))


def dv_add_action(row: Mapping[str, Any], descriptor: DeletionVectorDescriptor) -> AddAction:
    """The `add` re-adding file-table `row` with its new deletion vector (row-tracking fields kept)."""
    out: AddAction = {
        "path": row["path"],
        "partitionValues": dict(row.get("partition_values") or {}),
        "size": row["size"],
        "modificationTime": row.get("modification_time") or 0,
        "dataChange": True,
    }
    stats = loose_stats(row.get("stats"))
    if stats is not None:
        out["stats"] = stats
    if row.get("tags"):
        out["tags"] = dict(row["tags"])
    out["deletionVector"] = descriptor.to_dict()
    if row.get("base_row_id") is not None:
        out["baseRowId"] = row["base_row_id"]
    if row.get("default_row_commit_version") is not None:
        out["defaultRowCommitVersion"] = row["default_row_commit_version"]
    return out



def deletion_vectors_writable(snapshot: Any) -> bool:
    """delta-spark's condition: the `deletionVectors` feature is supported and the property is on."""
    conf = snapshot.configuration
    return bool(snapshot.protocol.has_feature("deletionVectors")) and \
        str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true"

__all__ = ["deletion_vectors_writable", "DeletionVectorWriter", "dv_add_action", "loose_stats"]
