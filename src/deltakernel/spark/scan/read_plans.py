"""How a Delta read becomes a Spark plan, per session kind: the seam's scan-building protocol.

`ReadPlans` has two implementations, chosen by the session's kind (`kinds.kind_of`, once per session):
- classic: Spark's Parquet scan over the Delta file index (`relation.py`, `file_index.py`): Spark's optimizer pushes
  every filter of the query to the index, which keeps the files they can match when the query is planned; Spark
  resolves catalog names itself from the relation cache (`catalog/table_frames.py`);
- Connect: a lazy leaf of the client's plan (`connect_plan.py`), planned with the conditions above it when the
  plan is sent, and Spark's Parquet scan of exactly the kept files (`public_plan.py`); the SQL router rewrites
  catalog names (no relation cache reachable from a client).
Readers (`reader.py`), DML scans (`dml/frame.py`), `scan_report` and the catalog's plan cache ask this protocol and
never the kind.
"""

from __future__ import annotations

from typing import Any, Protocol

import pyarrow as pa

from ...kernel.snapshot import Snapshot
from .file_columns import PATH_COL

ROW_COL = "__dk_row"  # `_metadata.row_index`: the physical row position a deletion vector stores


class ReadPlans(Protocol):
    """A session kind's way of turning snapshots into Spark plans."""

    #: whether Spark resolves a Delta catalog table's name by itself (a plan in the relation cache)
    caches_catalog_plans: bool

    def table_frame(self, spark: Any, snapshot: Snapshot, row_tracking: bool, time_travel: bool,
                    table: tuple[str, str] | None) -> Any:
        """The DataFrame `load()` returns: the whole snapshot, files kept by the query's conditions."""

    def files_frame(self, spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table,
                    data_names: dict[str, str]) -> Any:
        """One Parquet scan of exactly `files` (rows of deletion vectors kept) with `read_schema`'s columns plus
        `_metadata.file_path` as `PATH_COL` and `_metadata.row_index` as `ROW_COL` (DML scans)."""

    def report(self, df: Any, list_files: bool) -> list[Any]:
        """`scan_report(df)`: one `ScanReport` per Delta scan of the query."""


class ClassicReadPlans:
    """Through the Delta file index (py4j)."""

    caches_catalog_plans = True

    def table_frame(self, spark: Any, snapshot: Snapshot, row_tracking: bool, time_travel: bool,
                    table: tuple[str, str] | None) -> Any:
        from .frames import DeltaFrame
        from .relation import delta_frame

        df = delta_frame(spark, snapshot, row_tracking=row_tracking, time_travel=time_travel, table=table)
        return DeltaFrame(df._jdf, spark, snapshot)

    def files_frame(self, spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table,
                    data_names: dict[str, str]) -> Any:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StructType as SparkStruct

        from .layout import quote
        from .relation import relation_frame

        df, _index = relation_frame(spark, snapshot, read_schema, SparkStruct([]), data_names, files)
        return df.select(*[F.col(quote(n)) for n in read_schema.fieldNames()],
                         F.col("_metadata.file_path").alias(PATH_COL), F.col("_metadata.row_index").alias(ROW_COL))

    def report(self, df: Any, list_files: bool) -> list[Any]:
        from .report import classic_scan_report

        return classic_scan_report(df, list_files)


class ConnectReadPlans:
    """Through the client's plan (public DataFrame API only)."""

    caches_catalog_plans = False

    def table_frame(self, spark: Any, snapshot: Snapshot, row_tracking: bool, time_travel: bool,
                    table: tuple[str, str] | None) -> Any:
        from .connect_plan import delta_frame

        return delta_frame(spark, snapshot, row_tracking=row_tracking)

    def files_frame(self, spark: Any, snapshot: Snapshot, read_schema: Any, files: pa.Table,
                    data_names: dict[str, str]) -> Any:
        from .public_plan import scan_frame

        dv = files.schema.get_field_index("deletion_vector")  # the DML job drops deleted rows itself
        bare = files.set_column(dv, files.schema.field(dv), pa.nulls(files.num_rows, files.schema.field(dv).type))
        return scan_frame(spark, snapshot, read_schema, bare)

    def report(self, df: Any, list_files: bool) -> list[Any]:
        from .report import connect_scan_report

        return connect_scan_report(df)


PLANS: dict[str, ReadPlans] = {"classic": ClassicReadPlans(), "connect": ConnectReadPlans()}


def scan_report(df: Any, *, list_files: bool = True) -> list[Any]:
    """One `ScanReport` per Delta scan of the query: files kept by skipping, of how many (`report.py`), as the
    session's kind can tell."""
    return read_plans(df.sparkSession).report(df, list_files)


def read_plans(spark: Any) -> ReadPlans:
    """The session's read plans, by its kind."""
    from ..kinds import kind_of

    return PLANS[kind_of(spark).name]


__all__ = ["PLANS", "ROW_COL", "ClassicReadPlans", "ConnectReadPlans", "ReadPlans", "read_plans", "scan_report"]
