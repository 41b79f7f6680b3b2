"""What the Python data source's batch and streaming sides hand between the driver and Spark's Python workers.

- `LiteSnapshot`: what `Scan.read_file` needs on an executor, rebuilt there from a few strings (the file table
  is not shipped);
- `DeltaCommitMessage`: one write task's add actions and row count, back to the driver that commits them.

A leaf below `datasource.py` and `streaming/`, which both use them.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import WriterCommitMessage

from ...kernel.schema.types import parse_schema_string


class LiteSnapshot:
    """What `Scan.read_file` needs on an executor, without shipping the file table."""

    def __init__(self, uri: str, storage_options: dict[str, str] | None, schema_json: str, mode: str,
                 partition_columns: list[str], version: int) -> None:
        from ...storage import storage_for_uri

        self.storage = storage_for_uri(uri, storage_options)
        self.schema = parse_schema_string(schema_json)
        self.column_mapping_mode = mode
        self.partition_columns = partition_columns
        self.version = version


class DeltaCommitMessage(WriterCommitMessage):
    """A write task's add actions and the rows it wrote."""

    def __init__(self, adds: list[dict[str, Any]], rows: int) -> None:
        self.adds = adds
        self.rows = rows


__all__ = ["DeltaCommitMessage", "LiteSnapshot"]
