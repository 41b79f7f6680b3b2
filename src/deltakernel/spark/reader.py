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

import logging
from typing import Any

import pyarrow as pa

from ..kernel import row_tracking as rt
from ..kernel.snapshot import Snapshot
from ..storage.local import LocalStorage
from ._schema import Options, spark_path, table_uri

ROW_TRACKING_OPTION = "readRowTracking"
_log = logging.getLogger(__name__)


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
        from ..errors import DeltaError

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


def load_snapshot(path: str, opts: Options) -> Snapshot:
    """The snapshot named by versionAsOf / timestampAsOf (latest without them)."""
    from ..errors import DeltaError
    from ..table import DeltaTable

    version, ts = opts.get("versionAsOf"), opts.get("timestampAsOf")
    if version is not None and ts is not None:
        raise DeltaError("cannot specify both versionAsOf and timestampAsOf")
    dtab = DeltaTable(table_uri(path), version=int(version) if version is not None else None,
                      storage_options=storage_options(opts))
    if ts is not None:
        _load_at_timestamp(dtab, str(ts))
    return dtab.snapshot


def _load_at_timestamp(dtab: Any, ts: str) -> None:
    """delta-spark's `timestampAsOf`: outside the log's commit times is an error with its class."""
    from ..errors import VersionNotFoundError
    from ..kernel.log.time_travel import format_timestamp_ms, parse_timestamp
    from .error_classes import TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION, TIMESTAMP_GREATER_THAN_COMMIT, classed
    from .time_bounds import version_within_log

    def too_early(earliest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION,
            f"The provided timestamp ({ts}) is before the earliest version available to this table "
            f"({format_timestamp_ms(earliest)}). Please use a timestamp after ({format_timestamp_ms(earliest)})."))

    def too_late(latest: int) -> Exception:
        return VersionNotFoundError(classed(
            TIMESTAMP_GREATER_THAN_COMMIT,
            f"The provided timestamp ({ts}) is after the latest version available to this table "
            f"({format_timestamp_ms(latest)}). Please use a timestamp before or at ({format_timestamp_ms(latest)})."))

    dtab.load_as_version(version_within_log(dtab.snapshot, parse_timestamp(ts), too_early, too_late))


def storage_options(opts: Options) -> dict[str, str] | None:
    """Object-store credentials passed as options with deltalake's upper-case names (AWS_*, AZURE_*...)."""
    picked = {k.upper(): v for k, v in opts.items() if k.upper().startswith(("AWS_", "AZURE_", "GOOGLE_"))}
    return picked or None


def read_change_feed(spark: Any, path: str, opts: Options) -> Any:
    """Change data feed: computed by the kernel on the driver, handed to Spark as Arrow."""
    from ..table import DeltaTable

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
    return spark.createDataFrame(_spark_compatible(table))


def _spark_compatible(table: pa.Table) -> pa.Table:
    """Arrow -> Spark conversion wants plain string/binary (no views or large types)."""
    fields = []
    for f in table.schema:
        t = f.type
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            t = pa.string()
        elif pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
            t = pa.binary()
        fields.append(pa.field(f.name, t, True))
    return table.cast(pa.schema(fields)) if [f.type for f in fields] != table.schema.types else table


# ----------------------------------------------------------------------------- the native plan
def native_supported(snapshot: Snapshot) -> bool:
    p = snapshot.protocol
    return not (p.has_feature("typeWidening") or p.has_feature("typeWidening-preview"))


def frame_for_snapshot(spark: Any, snapshot: Snapshot, row_tracking: bool = False,
                       storage_opts: dict[str, str] | None = None, time_travel: bool = False,
                       table: tuple[str, str] | None = None) -> Any:
    """A DataFrame over `snapshot`: a DeltaFrame over the Delta file index when Spark can read the files; on a
    Spark Connect session a ConnectDeltaFrame (the public-API plan, `scan/public_plan.py`)."""
    from .session import is_connect

    jvm_fs = hadoop_can_read(spark, snapshot.storage)
    if is_connect(spark) and jvm_fs and native_supported(snapshot):
        from .scan.public_plan import ConnectDeltaFrame

        return ConnectDeltaFrame.build(spark, snapshot, row_tracking=row_tracking)
    if not native_supported(snapshot) or not jvm_fs:
        from ..errors import UnsupportedFeatureError
        from .datasource import python_source_frame

        if row_tracking:
            raise UnsupportedFeatureError("rowTracking", f"{ROW_TRACKING_OPTION} needs Spark's native Parquet plan, "
                                          f"which cannot read {snapshot.storage.root_uri} (type widening or no "
                                          "Hadoop filesystem for its scheme)")
        return python_source_frame(spark, snapshot.storage.root_uri,
                                   {"versionAsOf": str(snapshot.version), **(storage_opts or {})})
    from .scan.relation import delta_frame

    df = delta_frame(spark, snapshot, row_tracking=row_tracking, time_travel=time_travel, table=table)
    return DeltaFrame(df._jdf, spark, snapshot)


_WARNED: set[str] = set()


def hadoop_can_read(spark: Any, storage: Any) -> bool:
    """Whether Spark's JVM has a Hadoop filesystem for the table's scheme (S3A jars for s3://, ...).

    Without one, the table is still read and written through the kernel's own storage (Python data source,
    mapInArrow); a warning says so once per scheme."""
    if isinstance(storage, LocalStorage):
        return True
    scheme = spark_path(storage, "").split("://", 1)[0]
    from .session import is_connect

    try:
        if is_connect(spark):
            return _connect_can_read(spark, storage, scheme)
        jvm = spark._jvm
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass(scheme, spark._jsc.hadoopConfiguration())
        return True
    except Exception:
        if scheme not in _WARNED:
            _WARNED.add(scheme)
            _log.warning("deltakernel: Spark has no Hadoop filesystem for %s:// (e.g. the S3A jars for s3); "
                         "Delta tables there are read and written through deltakernel's own storage "
                         "(Python data source / mapInArrow), not Spark's native Parquet path", scheme)
        return False


_CONNECT_SCHEMES: dict[tuple[str, str], bool] = {}


def _connect_can_read(spark: Any, storage: Any, scheme: str) -> bool:
    """Over Spark Connect the server's JVM cannot be asked directly: analyse a text read of the table's log
    directory once per (server session, scheme); only a missing filesystem class means no (raised as such)."""
    key = (str(getattr(spark, "session_id", "")), scheme)
    if key not in _CONNECT_SCHEMES:
        try:
            spark.read.format("text").load(spark_path(storage, "_delta_log")).schema  # noqa: B018 (an RPC)
            _CONNECT_SCHEMES[key] = True
        except Exception as e:
            text = str(e)
            _CONNECT_SCHEMES[key] = not ("No FileSystem for scheme" in text or "UnsupportedFileSystemException" in
                                         text or ("ClassNotFoundException" in text and "FileSystem" in text))
    if not _CONNECT_SCHEMES[key]:
        raise RuntimeError(f"no Hadoop filesystem for {scheme}")
    return True


def metadata_file_path(storage: Any, key: str) -> str:
    """What Spark reports as `_metadata.file_path` for a storage key (a java.net.URI string)."""
    from .scan.paths import file_uri

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
        from .scan.public_plan import ConnectDeltaFrame

        return cls.__name__ == "DeltaFrame" and isinstance(obj, ConnectDeltaFrame)


class DeltaFrame(_frame_base(), metaclass=_DeltaFrameType):  # type: ignore[misc]
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
        from .scan.report import scan_report

        return sum(r.files_total - r.files_kept for r in scan_report(self))


__all__ = ["DeltaFrame", "frame_for_snapshot", "hadoop_can_read", "load_snapshot", "metadata_file_path",
           "native_supported", "read", "read_change_feed"]
