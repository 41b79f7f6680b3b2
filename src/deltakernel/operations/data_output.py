"""New data files of a DML commit (DELETE / UPDATE / MERGE copy-on-write and their updated or inserted rows).

One place for what every rewrite needs:
- row tracking: rows carry `_row_id` / `_row_commit_version`; they are written into the table's hidden
  materialized columns (`materialize`), and the stats of the new files leave those columns out;
- parallel encoding (MERGE copy-on-write): pyarrow's Parquet writer encodes one file on one core. The rows
  a large touched file keeps (`submit_file`, >= `PARALLEL_MIN_ROWS`) can become a file of their own, encoded
  on a 2-thread pool while the main stream (`write`) takes updated rows, inserts and small remainders (so
  small files are still coalesced). At most `in_flight` such files are pending, so memory stays bounded.
  MERGE uses it (its main stream is busy with updates and inserts); DELETE / UPDATE / replaceWhere stream
  everything through `write`: on 2 cores per-file files were no faster there and ~120 MB larger;
- cleanup: `abort()` waits for the pool and deletes every file written (only called when the commit is
  known absent).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from ..kernel import row_tracking as rt
from ..kernel.paths import resolve_key
from ..kernel.schema.types import PrimitiveType, StructField, StructType
from ..kernel.snapshot import Snapshot
from ..storage import Storage
from .writer_properties import WriterProperties

PARALLEL_MIN_ROWS = 65536  # kept rows of one file worth a file (and an encoding thread) of their own
#: row-group rows of DML output when the caller sets no writer properties: pyarrow takes a row group as one
#: Arrow table, so each lane of the writer holds up to ~3 of them; 256k rows keeps a rewrite's memory near
#: deltalake's (which encodes incrementally) at no cost in time (DuckDB writes 122,880-row groups)
DML_ROW_GROUP_ROWS = 262_144


def delete_quietly(storage: Storage, paths: Iterable[str]) -> None:
    """Best-effort delete of files an operation wrote and never committed (log-relative or absolute paths):
    an orphan left behind is harmless, the original error matters more."""
    for p in paths:
        try:
            storage.delete(resolve_key(storage.root_uri, p))
        except Exception:
            pass


class DataFileOutput:
    """Writes a DML's new data files; `adds` lists every file written so far (also after an error)."""

    def __init__(self, snapshot: Snapshot, storage: Storage, schema: StructType, partition_columns: Iterable[str],
                 configuration: Mapping[str, str], writer_properties: Any = None, in_flight: int = 2) -> None:
        self.storage = storage
        self.schema = schema
        self.partition_columns = list(partition_columns)
        self.mode = snapshot.column_mapping_mode
        self.configuration = dict(configuration)
        self.writer_properties = writer_properties if writer_properties is not None \
            else WriterProperties(max_row_group_size=DML_ROW_GROUP_ROWS)
        self.hidden = rt.columns_to_write(snapshot.protocol, snapshot.configuration, self.configuration,
                                          storage.root_uri)
        self.row_tracking = self.hidden is not None
        self.adds: list[dict[str, Any]] = []
        self._in_flight = max(1, in_flight)
        self._pool: ThreadPoolExecutor | None = None
        self._futures: deque[Future[None]] = deque()

    # ------------------------------------------------------------------ rows
    def materialize(self, rows: pa.Table) -> pa.Table:
        """Logical rows with `_row_id` / `_row_commit_version` -> the hidden materialized columns."""
        if self.hidden is None:
            return rows
        n = rows.num_rows
        names = rows.schema.names
        ids = rows.column(rt.ROW_ID) if rt.ROW_ID in names else pa.nulls(n, pa.int64())
        versions = rows.column(rt.ROW_COMMIT_VERSION) if rt.ROW_COMMIT_VERSION in names else pa.nulls(n, pa.int64())
        out = rows.drop_columns([c for c in (rt.ROW_ID, rt.ROW_COMMIT_VERSION) if c in names])
        return out.append_column(self.hidden[0], ids).append_column(self.hidden[1], versions)

    def write_schema(self) -> StructType:
        """The table schema plus the hidden materialized row-tracking columns when rows carry them."""
        if self.hidden is None:
            return self.schema
        long = PrimitiveType("long")
        return StructType((*self.schema.fields, StructField(self.hidden[0], long), StructField(self.hidden[1], long)))

    # ------------------------------------------------------------------ writing
    def write(self, batches: Iterator[pa.RecordBatch]) -> list[dict[str, Any]]:
        """Write a stream of (materialized) batches as new files; returns their adds."""
        from .file_writer import write_data_files
        adds = write_data_files(self.storage, batches, schema=self.write_schema(),
                                partition_columns=self.partition_columns, column_mapping_mode=self.mode,
                                configuration=self.configuration, writer_properties=self.writer_properties)
        if self.hidden is not None:
            adds = [without_stats_of(a, self.hidden) for a in adds]
        self.adds.extend(adds)
        return adds

    def worth_a_file(self, rows: int) -> bool:
        return rows >= PARALLEL_MIN_ROWS

    def submit_file(self, batches: Callable[[], Iterator[pa.RecordBatch]]) -> None:
        """Write `batches()` (computed on the pool too) as file(s) of their own, in parallel with `write`."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self._in_flight, thread_name_prefix="deltakernel-rewrite")
        while len(self._futures) >= self._in_flight:
            self._futures.popleft().result()
        self._futures.append(self._pool.submit(self._write_part, batches))

    def _write_part(self, batches: Callable[[], Iterator[pa.RecordBatch]]) -> None:
        self.write(batches())

    def finish(self) -> list[dict[str, Any]]:
        """Wait for the parallel files; every add written."""
        while self._futures:
            self._futures.popleft().result()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        return list(self.adds)

    def abort(self) -> None:
        """Wait for writes in progress (their errors ignored: the original one matters), delete every file."""
        for f in self._futures:
            try:
                f.result()
            except BaseException:
                pass
        self._futures.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        delete_quietly(self.storage, [a["path"] for a in self.adds])
        self.adds = []


def without_stats_of(add: dict[str, Any], columns: tuple[str, ...]) -> dict[str, Any]:
    """Statistics describe table columns only: drop those of the hidden materialized columns."""
    raw = add.get("stats")
    if not raw:
        return add
    doc = json.loads(raw)
    for key in ("minValues", "maxValues", "nullCount"):
        section = doc.get(key)
        if isinstance(section, dict):
            for c in columns:
                section.pop(c, None)
    return {**add, "stats": json.dumps(doc, separators=(",", ":"))}


__all__ = ["DML_ROW_GROUP_ROWS", "PARALLEL_MIN_ROWS", "DataFileOutput", "delete_quietly", "without_stats_of"]
