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
from .filesystems import hadoop_can_read
from .frames import DeltaFrame
from .read_snapshot import latest_snapshot

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
    snapshot = latest_snapshot(spark, path, opts)
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
    if not native_supported(snapshot) or not hadoop_can_read(spark, snapshot.storage):
        from ...errors import UnsupportedFeatureError
        from .datasource import python_source_frame

        if row_tracking:
            raise UnsupportedFeatureError("rowTracking", f"{ROW_TRACKING_OPTION} needs Spark's native Parquet plan, "
                                          f"which cannot read {snapshot.storage.root_uri} (type widening or no "
                                          "Hadoop filesystem for its scheme)")
        from ...unity.tables import worker_options

        path, opts = snapshot.storage.root_uri, dict(storage_opts or {})
        by_name = worker_options(snapshot.storage)  # a Unity Catalog table: the workers open it through the catalog
        if by_name is not None:
            path, opts = by_name[0], {**by_name[1], **opts}
        return python_source_frame(spark, path, {"versionAsOf": str(snapshot.version), **opts},
                                   None if "readChangeFeed" in opts else snapshot)
    from .read_plans import read_plans

    return read_plans(spark).table_frame(spark, snapshot, row_tracking, time_travel, table)


def metadata_file_path(storage: Any, key: str) -> str:
    """What Spark reports as `_metadata.file_path` for a storage key (a java.net.URI string)."""
    from .paths import file_uri

    return file_uri(storage, key)


__all__ = ["DeltaFrame", "frame_for_snapshot", "metadata_file_path", "native_supported", "read", "read_change_feed"]
