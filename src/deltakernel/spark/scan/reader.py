"""`spark.read.format("delta").load(path)`: Spark's own Parquet scan over the Delta file index.

The driver loads the snapshot (kernel log replay); the DataFrame is a native Spark plan whose scan lists its
files through `scan/file_index.DeltaFileIndex`, which prunes them with the filters Spark pushes down - so
file skipping (partition values, min/max/nullCount statistics) applies to every query shape: DataFrame
chains, SQL over temporary views or catalog tables, joins, views (`scan/relation.py` builds the plan: column
mapping, deletion vectors, row tracking). Around it:
- object stores without a Hadoop filesystem for them in the JVM (no S3A jars) read through the Python data
  source (the kernel's obstore storage) instead, with one warning;
- tables the native plan cannot express (type widening) go through the Python data source;
- the change data feed is computed by the kernel and handed to Spark as Arrow.
"""

from __future__ import annotations

from typing import Any

from ...kernel import row_tracking as rt
from ...kernel.snapshot import Snapshot
from ..common.schema import Options, spark_compatible, storage_options, table_uri
from ..kinds.dataframe_subclass import PlainNew
from .filesystems import hadoop_can_read
from .read_snapshot import load_snapshot

ROW_TRACKING_OPTION = "readRowTracking"


# ----------------------------------------------------------------------------- entry point
def read(spark: Any, path: str | None = None, *, table: tuple[str, str] | None = None, **options: Any) -> Any:
    """`spark.read.format("delta").load(path)` semantics at native speed (see module docstring).

    Options (case-insensitive, delta-spark's names): versionAsOf, timestampAsOf, readChangeFeed with
    startingVersion / endingVersion / startingTimestamp / endingTimestamp; storage options pass through.
    `table` (database, name): the session-catalog table at `path` the plan belongs to.
    """
    opts = Options(options)
    path = path or opts.get("path")
    if not path:
        from ...errors import DeltaError

        raise DeltaError("a Delta table path is needed: load(path) or option('path', ...)")
    if opts.flag("readChangeFeed") or opts.flag("readChangeData"):
        return read_change_feed(spark, path, opts)
    snapshot = load_snapshot(path, opts)
    row_tracking = opts.flag(ROW_TRACKING_OPTION)
    if row_tracking:
        rt.check_readable(snapshot.protocol, snapshot.metadata.configuration,
                          [f.name for f in snapshot.schema.fields], snapshot.storage.root_uri)
    time_travel = opts.get("versionAsOf") is not None or opts.get("timestampAsOf") is not None
    return frame_for_snapshot(spark, snapshot, row_tracking=row_tracking, storage_opts=storage_options(opts),
                              time_travel=time_travel, table=table)


def read_change_feed(spark: Any, path: str, opts: Options) -> Any:
    """Change data feed: computed by the kernel on the driver, handed to Spark as Arrow."""
    from ...table import DeltaTable

    dtab = DeltaTable(table_uri(path), storage_options=storage_options(opts))
    start = opts.int("startingVersion")
    reader = dtab.load_cdf(
        starting_version=start if start is not None else 0,
        ending_version=opts.int("endingVersion"),
        starting_timestamp=opts.get("startingTimestamp"),
        ending_timestamp=opts.get("endingTimestamp"),
        allow_out_of_range=False,
    )
    table = reader.read_all()
    return spark.createDataFrame(spark_compatible(table))


# ----------------------------------------------------------------------------- the native plan
def native_supported(snapshot: Snapshot) -> bool:
    p = snapshot.protocol
    return not (p.has_feature("typeWidening") or p.has_feature("typeWidening-preview"))


def frame_for_snapshot(spark: Any, snapshot: Snapshot, row_tracking: bool = False,
                       storage_opts: dict[str, str] | None = None, time_travel: bool = False,
                       table: tuple[str, str] | None = None) -> Any:
    """A DataFrame over `snapshot`: a DeltaFrame over the Delta file index when Spark can read the files; on a
    Spark Connect session a ConnectDeltaFrame (the public-API plan, `scan/public_plan.py`)."""
    from ..kinds.session import is_connect

    jvm_fs = hadoop_can_read(spark, snapshot.storage)
    if is_connect(spark) and jvm_fs and native_supported(snapshot):
        from .connect_plan import delta_frame as connect_frame

        return connect_frame(spark, snapshot, row_tracking=row_tracking)
    if not native_supported(snapshot) or not jvm_fs:
        from ...errors import UnsupportedFeatureError
        from .datasource import python_source_frame

        if row_tracking:
            raise UnsupportedFeatureError("rowTracking", f"{ROW_TRACKING_OPTION} needs Spark's native Parquet plan, "
                                          f"which cannot read {snapshot.storage.root_uri} (type widening or no "
                                          "Hadoop filesystem for its scheme)")
        return python_source_frame(spark, snapshot.storage.root_uri,
                                   {"versionAsOf": str(snapshot.version), **(storage_opts or {})})
    from .relation import delta_frame

    df = delta_frame(spark, snapshot, row_tracking=row_tracking, time_travel=time_travel, table=table)
    return DeltaFrame(df._jdf, spark, snapshot)


def metadata_file_path(storage: Any, key: str) -> str:
    """What Spark reports as `_metadata.file_path` for a storage key (a java.net.URI string)."""
    from .paths import file_uri

    return file_uri(storage, key)


def _frame_base() -> type:
    try:
        from pyspark.sql.classic.dataframe import DataFrame
    except ImportError:  # pragma: no cover - pyspark 3
        from pyspark.sql import DataFrame  # type: ignore[assignment]
    return DataFrame  # type: ignore[no-any-return]


class _DeltaFrameType(type):
    """`isinstance(df, DeltaFrame)` holds for the Spark Connect kind too (`scan/public_plan.ConnectDeltaFrame`)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if type.__instancecheck__(cls, obj):
            return True
        from .connect_plan import ConnectDeltaFrame

        return cls.__name__ == "DeltaFrame" and isinstance(obj, ConnectDeltaFrame)


class DeltaFrame(PlainNew, _frame_base(), metaclass=_DeltaFrameType):  # type: ignore[misc]
    """The DataFrame `load()` returns: a plain Spark plan over the Delta file index, remembering its snapshot.

    Filters need nothing special (Spark pushes them to the index); `skipped_files` reports the skipping. On a
    Spark Connect session `load()` returns a `ConnectDeltaFrame`, which is also a `DeltaFrame` for
    `isinstance` (same `snapshot` and `skipped_files`)."""

    def __init__(self, jdf: Any, spark: Any, snapshot: Snapshot) -> None:
        super().__init__(jdf, spark)
        self._dk_snapshot = snapshot

    @property
    def snapshot(self) -> Snapshot:
        return self._dk_snapshot

    @property
    def skipped_files(self) -> int:
        """Files of this table the kernel skipped for this frame's query (lists the scans if not yet planned)."""
        from .report import scan_report

        return sum(r.files_total - r.files_kept for r in scan_report(self))


__all__ = ["DeltaFrame", "frame_for_snapshot", "metadata_file_path", "native_supported", "read", "read_change_feed"]
