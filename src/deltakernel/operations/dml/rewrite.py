"""Rewriting part of a file: the shared machinery of replaceWhere on data columns (and DELETE/UPDATE/MERGE).

Input: the live files being rewritten, each with its live rows and a boolean mask of the rows that leave
the file (deleted, or changed and written elsewhere by the caller). Output: a `remove` for every touched
file, `add`s for new files holding the rows that stay, and — with a :class:`ChangeDataWriter` — the rows
that left as change data. Untouched files (mask all false) are left alone.

Row tracking: rows that stay keep their stable row id and row commit version by writing them into the
table's *materialized* columns (hidden physical columns named in the table configuration); the new files
get fresh `baseRowId`s from the transaction as usual, and rows without materialized values (new inserts)
take those fresh ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import DeltaError
from ...kernel import row_tracking as rt
from ...kernel.arrow_build import scalar
from ...kernel.log.action_types import AddAction, RemoveAction
from ...kernel.scan.scan import Scan
from ...kernel.schema.types import StructType
from ...kernel.snapshot import Snapshot, SnapshotView
from ...storage import Storage
from ..files.change_data import ChangeDataWriter
from ..files.dml_output import DataFileOutput

PIECE_ROWS = 65_536  # physical rows per piece when a rewrite streams a file (see FileChange)
RELEASE_ROWS = 3 * PIECE_ROWS  # DELETE / UPDATE rewrites return the pool's free memory this often (live_pieces)

FILE_COLUMNS = ["path", "size", "partition_values", "deletion_vector", "base_row_id",
                "default_row_commit_version", "tags", "stats"]


_FALSE = scalar(False)  # Arrow scalars: Python literals in compute calls make pyarrow import pandas


def remove_action(row: Mapping[str, Any], now: int, data_change: bool = True) -> RemoveAction:
    """The `remove` for a file-table row (keeps baseRowId / defaultRowCommitVersion, as the protocol asks)."""
    pv = row.get("partition_values") or {}
    out: RemoveAction = {
        "path": row["path"],
        "deletionTimestamp": now,
        "dataChange": data_change,
        "extendedFileMetadata": True,
        "partitionValues": dict(pv),
        "size": row["size"],
    }
    if row.get("deletion_vector"):
        out["deletionVector"] = {k: v for k, v in row["deletion_vector"].items() if v is not None}
    if row.get("base_row_id") is not None:
        out["baseRowId"] = row["base_row_id"]
    if row.get("default_row_commit_version") is not None:
        out["defaultRowCommitVersion"] = row["default_row_commit_version"]
    if row.get("tags"):
        out["tags"] = dict(row["tags"])
    if row.get("stats"):
        out["stats"] = row["stats"]
    return out


@dataclass
class FileChange:
    """One live file: its file-table row, its live rows and the rows that leave.

    `data` is the file's live rows (from :meth:`Rewriter.read`), or a callable streaming them in pieces
    (:meth:`Rewriter.read_pieces`) so a rewrite holds a few batches of a file instead of all of it; `removed`
    is a boolean mask over all the file's live rows (True = the row leaves this file; null counts as False).
    """

    file: Mapping[str, Any]
    data: pa.Table | Callable[[], Iterable[pa.Table]]
    removed: pa.Array | pa.ChunkedArray


def live_pieces(path: str, pieces: Iterable[pa.Table], live: int,
                release_rows: int = 0) -> Iterator[tuple[int, pa.Table]]:
    """`(offset, piece)` over a file's live rows read in pieces; raises when the pieces do not add up to the
    `live` rows the log promised (the file changed underneath the operation: nothing may be written from it).

    `release_rows`: after about that many rows, hand the Arrow pool's free memory back to the OS. A rewrite
    allocates and frees a piece's buffers over and over; mimalloc (pyarrow's default pool) keeps what was
    freed for a while, so a copy-on-write DELETE peaked at ~4x the pool's live bytes. A release costs ~5 ms;
    every ~200k rows: DELETE's peak RSS -20 %, time +0.1 s on 5M rows (docs/benchmark-history.md, session 19)."""
    offset = since = 0
    for piece in pieces:
        yield offset, piece
        offset += piece.num_rows
        since += piece.num_rows
        if release_rows and since >= release_rows:
            pa.default_memory_pool().release_unused()
            since = 0
    if offset != live:
        raise DeltaError(f"data file {path} changed while it was rewritten: {offset} live rows read, {live} expected")


@dataclass
class RewriteResult:
    adds: list[AddAction] = field(default_factory=list)
    removes: list[RemoveAction] = field(default_factory=list)
    removed_rows: int = 0
    copied_rows: int = 0

    @property
    def touched(self) -> bool:
        return bool(self.removes)


class Rewriter:
    """Reads live rows for a rewrite and writes the rows that stay (row ids kept).

    `configuration`: the configuration the commit will have (materialized column names filled in, see
    :func:`deltakernel.kernel.row_tracking.with_materialized_names`).
    """

    def __init__(self, snapshot: Snapshot, storage: Storage, *, configuration: Mapping[str, str],
                 now: int, writer_properties: Any = None, change_data: ChangeDataWriter | None = None,
                 removed_change_type: str = "delete") -> None:
        self.snapshot = snapshot
        self.storage = storage
        self.configuration = dict(configuration)
        self.now = now
        self.writer_properties = writer_properties
        self.change_data = change_data
        self.removed_change_type = removed_change_type
        self.output = DataFileOutput(snapshot, storage, snapshot.schema, snapshot.partition_columns,
                                     self.configuration, writer_properties)
        self.hidden = self.output.hidden
        self.row_tracking = self.hidden is not None
        self._scan = Scan(snapshot, row_tracking=self.row_tracking)
        self.result = RewriteResult()

    def read(self, file_row: Mapping[str, Any]) -> pa.Table:
        """A file's live rows (DV applied); with row tracking also `_row_id` / `_row_commit_version`."""
        return self._scan.read_file(dict(file_row))

    def read_pieces(self, file_row: Mapping[str, Any]) -> Iterator[pa.Table]:
        """:meth:`read` in pieces of about `PIECE_ROWS` physical rows."""
        return self._scan.read_file_pieces(dict(file_row), PIECE_ROWS)

    def _logical(self, data: pa.Table) -> pa.Table:
        drop = [n for n in (rt.ROW_ID, rt.ROW_COMMIT_VERSION) if n in data.schema.names] if self.row_tracking else []
        return data.drop_columns(drop) if drop else data

    def rewrite(self, changes: Iterable[FileChange]) -> RewriteResult:
        """Write the rows that stay in the touched files (one stream: the writer already encodes on a pool
        while the next file is read, and per-file parallel files measured no faster here but ~120 MB larger);
        remember removes (and change data)."""
        result = self.result
        output = self.output

        def kept() -> Iterator[pa.RecordBatch]:
            for change in changes:
                mask = pc.fill_null(change.removed, _FALSE)
                live = len(mask)
                if live == 0:  # nothing live left: the file goes, no row changes
                    result.removes.append(remove_action(change.file, self.now))
                    continue
                n_removed = int(pc.sum(mask.cast(pa.int64())).as_py() or 0)
                if n_removed == 0:
                    continue
                result.removes.append(remove_action(change.file, self.now))
                result.removed_rows += n_removed
                if n_removed == live and self.change_data is None:
                    continue  # every row leaves and none is recorded: nothing to read
                pieces = [change.data] if isinstance(change.data, pa.Table) else change.data()
                for offset, piece in live_pieces(change.file["path"], pieces, live, RELEASE_ROWS):
                    part = mask.slice(offset, piece.num_rows)
                    if self.change_data is not None:
                        self.change_data.add(self._logical(piece.filter(part)), self.removed_change_type)
                    if n_removed < live:
                        keep = piece.filter(pc.invert(part))
                        result.copied_rows += keep.num_rows
                        yield from output.materialize(keep).to_batches()

        output.write(kept())
        result.adds = output.finish()
        return result

    def abort(self) -> None:
        """Delete the files this rewrite wrote (never committed)."""
        self.output.abort()
        self.result.adds = []


def read_written(storage: Storage, adds: Iterable[Mapping[str, Any]], schema: StructType,
                 partition_columns: list[str], mode: str, version: int) -> Iterator[pa.Table]:
    """Rows of files this transaction wrote, one file at a time (e.g. to record them as inserted change data)."""
    view = SnapshotView(storage, version, schema, partition_columns, mode)
    scan = Scan(view)  # type: ignore[arg-type]
    for a in adds:
        yield scan.read_file({"path": a["path"], "partition_values": a.get("partitionValues") or {},
                              "deletion_vector": a.get("deletionVector"), "size": a.get("size")})


__all__ = ["FILE_COLUMNS", "PIECE_ROWS", "RELEASE_ROWS", "FileChange", "RewriteResult", "Rewriter", "live_pieces",
           "read_written", "remove_action", "row_tracking_configuration"]


def row_tracking_configuration(txn: Any) -> dict[str, str]:
    """The commit's configuration with materialized row-tracking column names, set when missing (tables whose
    row tracking was enabled without them), so rows a rewrite carries over keep their ids."""
    from ...kernel.log.actions import Metadata

    md = txn.metadata
    conf = rt.with_materialized_names(md.configuration)
    if conf != md.configuration:
        txn.update_metadata(Metadata(md.id, md.schema_string, md.partition_columns, conf, md.name,
                                     md.description, md.format, md.created_time))
    return conf
