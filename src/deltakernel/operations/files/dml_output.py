"""New data files of a DML commit (DELETE / UPDATE / MERGE copy-on-write and their updated or inserted rows).

One place for what every rewrite needs:
- row tracking: rows carry `_row_id` / `_row_commit_version`; they are written into the table's hidden
  materialized columns (`materialize`), and the stats of the new files leave those columns out;
- one stream: every operation hands its rows to `write` in pieces (the file writer encodes two files side by
  side); row groups default to `DML_ROW_GROUP_ROWS` so a rewrite's memory stays near deltalake's. (Writing each
  touched file's kept rows as a file of its own on a pool was tried: no faster on 2 cores, ~120 MB larger.)
- cleanup: `abort()` deletes every file written (only called when the commit is known absent).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from ...kernel import row_tracking as rt
from ...kernel.log.action_types import AddAction
from ...kernel.paths import resolve_key
from ...kernel.schema.types import PrimitiveType, StructField, StructType
from ...kernel.snapshot import Snapshot
from ...storage import Storage
from .shredding import shredding_enabled
from .writer_options import WriterProperties

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
                 configuration: Mapping[str, str], writer_properties: Any = None) -> None:
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
        #: rewritten files are shredded like appended ones where the table allows it (files/shredding.py)
        self.shred_variants = shredding_enabled(self.configuration, snapshot.protocol)
        self.adds: list[AddAction] = []

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
    def write(self, batches: Iterator[pa.RecordBatch]) -> list[AddAction]:
        """Write a stream of (materialized) batches as new files; returns their adds."""
        from .parquet_writer import write_data_files
        written = write_data_files(self.storage, batches, schema=self.write_schema(),
                                   partition_columns=self.partition_columns, column_mapping_mode=self.mode,
                                   configuration=self.configuration, writer_properties=self.writer_properties,
                                   variant_shredding=self.shred_variants)
        adds = written
        if self.hidden is not None:
            adds = [without_stats_of(a, self.hidden) for a in adds]
        self.adds.extend(adds)
        return adds

    def finish(self) -> list[AddAction]:
        """Every add written."""
        return list(self.adds)

    def abort(self) -> None:
        """Delete every file written."""
        delete_quietly(self.storage, [a["path"] for a in self.adds])
        self.adds = []


def without_stats_of(add: AddAction, columns: tuple[str, ...]) -> AddAction:
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


__all__ = ["DML_ROW_GROUP_ROWS", "DataFileOutput", "delete_quietly", "without_stats_of"]
