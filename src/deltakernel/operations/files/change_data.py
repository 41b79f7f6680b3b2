"""Writing `_change_data` files (PROTOCOL.md "Change Data Files", "Add CDC File").

Once a commit has `cdc` actions, change data readers use only those files for that version and ignore its
`add`/`remove` actions, so a writer that emits any must emit *every* change of the commit: rows deleted,
rows inserted, update pre/post images. Like delta-spark, the files live under `_change_data/`, are
partitioned like the table (partition values in the `cdc` action, not in the file) and hold the table's
data columns (physical names under column mapping) plus `_change_type`.

:class:`ChangeDataWriter` takes logical rows with a change type, buffers up to a memory budget and writes
them through the ordinary file writer; DELETE / UPDATE / MERGE use it the same way replaceWhere does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from ...kernel.arrow_build import scalar
from ...kernel.log.action_types import AddAction, CdcAction
from ...kernel.schema.arrow import to_arrow_schema
from ...kernel.schema.types import PrimitiveType, StructField, StructType
from ...storage import Storage

CDF_PROPERTY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"
CHANGE_DATA_DIR = "_change_data"
CHANGE_TYPES = ("insert", "delete", "update_preimage", "update_postimage")
#: change rows held before they are written out (bounds the writer's memory)
DEFAULT_BUFFER_BYTES = 64 * 1024 * 1024


def cdf_enabled(configuration: Mapping[str, str]) -> bool:
    return str(configuration.get(CDF_PROPERTY, "false")).strip().lower() == "true"


def cdc_action(add: Mapping[str, Any]) -> CdcAction:
    """The `cdc` action for a file the file writer produced (no stats; dataChange is always false)."""
    return {"path": add["path"], "partitionValues": dict(add.get("partitionValues") or {}),
            "size": int(add["size"]), "dataChange": False}


def conform_to(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """`data` with exactly `schema`'s columns: missing ones (older schema) as nulls, types cast."""
    cols = []
    names = set(data.schema.names)
    for f in schema:
        if f.name in names:
            col = data.column(f.name)
            cols.append(col.cast(f.type) if col.type != f.type else col)
        else:
            cols.append(pa.nulls(data.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


class ChangeDataWriter:
    """Collects change rows (`add(rows, change_type)`) and writes them as `_change_data` files.

    `actions()` flushes and returns the `cdc` actions; `abort()` deletes every file written. Nothing is
    committed here: the caller adds the actions to its transaction.
    """

    def __init__(
        self,
        storage: Storage,
        schema: StructType,
        partition_columns: list[str],
        column_mapping_mode: str,
        configuration: Mapping[str, str],
        writer_properties: Any = None,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
    ) -> None:
        self.storage = storage
        self.table_schema = schema
        self.schema = StructType((*schema.fields, StructField(CHANGE_TYPE, PrimitiveType("string"))))
        self.arrow_schema = to_arrow_schema(self.schema, include_metadata=False)
        self.partition_columns = list(partition_columns)
        self.mode = column_mapping_mode
        self.configuration = dict(configuration)
        self.writer_properties = writer_properties
        self.buffer_bytes = buffer_bytes
        self.buffer: list[pa.Table] = []
        self.buffered = 0
        self.rows = {t: 0 for t in CHANGE_TYPES}
        self.written: list[AddAction] = []

    @classmethod
    def for_commit(cls, storage: Storage, metadata: Any, column_mapping_mode: str, configuration: Mapping[str, str],
                   writer_properties: Any = None) -> ChangeDataWriter | None:
        """A writer for a commit with `metadata` (the transaction's), or None when its change data feed is off."""
        if not cdf_enabled(metadata.configuration):
            return None
        return cls(storage, metadata.schema, list(metadata.partition_columns), column_mapping_mode, configuration,
                   writer_properties)

    def commit_into(self, txn: Any) -> int:
        """Flush and add the `cdc` actions to `txn`; returns how many change files it references."""
        actions = self.actions()
        txn.add_cdc_files(actions)
        return len(actions)

    @property
    def num_rows(self) -> int:
        return sum(self.rows.values())

    def add(self, rows: pa.Table, change_type: str) -> None:
        """Rows in the table's logical columns (extra columns are dropped, missing ones become null)."""
        if change_type not in CHANGE_TYPES:
            raise ValueError(f"unknown change type {change_type!r}")
        if rows.num_rows == 0:
            return
        data = rows.append_column(CHANGE_TYPE, pa.repeat(scalar(change_type), rows.num_rows)) \
            if CHANGE_TYPE not in rows.schema.names else rows
        data = conform_to(data, self.arrow_schema)
        self.buffer.append(data)
        self.buffered += data.nbytes
        self.rows[change_type] += rows.num_rows
        if self.buffered >= self.buffer_bytes:
            self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        from .parquet_writer import write_data_files

        batches = [b for t in self.buffer for b in t.to_batches()]
        self.buffer, self.buffered = [], 0
        adds = write_data_files(
            self.storage, iter(batches), schema=self.schema, partition_columns=self.partition_columns,
            column_mapping_mode=self.mode, configuration=self.configuration,
            writer_properties=self.writer_properties, data_change=False, path_prefix=CHANGE_DATA_DIR,
        )
        self.written += adds

    def actions(self) -> list[CdcAction]:
        self.flush()
        return [cdc_action(a) for a in self.written]

    def abort(self) -> None:
        self.buffer, self.buffered = [], 0
        from .dml_output import delete_quietly

        delete_quietly(self.storage, [a["path"] for a in self.written])
        self.written = []


__all__ = ["CDF_PROPERTY", "CHANGE_DATA_DIR", "CHANGE_TYPE", "ChangeDataWriter", "cdc_action", "cdf_enabled",
           "conform_to"]
