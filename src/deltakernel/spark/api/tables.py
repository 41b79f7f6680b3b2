"""`DeltaTable` for PySpark with delta-spark's names (`from deltakernel.spark import DeltaTable`).

Reads go through the native plan (`reader.py`), metadata through the kernel, commits through the kernel
Transaction. DML (delete/update/merge) and maintenance (optimize/vacuum/restore) are the next issue: they
belong here as methods that build a kernel Transaction exactly like `upgradeTableProtocol` below.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ...errors import DeltaError
from ...kernel.log.actions import Protocol
from ...kernel.snapshot import Snapshot
from ...kernel.transaction.transaction import Transaction as KernelTransaction
from ...table import DeltaTable as KernelTable
from ..common.schema import from_spark_schema, table_uri
from .builder import DeltaTableBuilder, IdentityGenerator

ENGINE_INFO = "deltakernel-spark/0.1.0"


class DeltaTable:
    """A Delta table addressed by path, bound to a SparkSession."""

    def __init__(self, spark: Any, path: str, alias: str | None = None) -> None:
        self._spark = spark
        self._path = path
        self._uri = table_uri(path)
        self._alias = alias
        if not KernelTable.is_deltatable(self._uri):
            from ..common.error_classes import MISSING_DELTA_TABLE, classed

            raise DeltaError(classed(MISSING_DELTA_TABLE, f"{path!r} is not a Delta table."))

    # ------------------------------------------------------------------ construction
    @classmethod
    def forPath(cls, sparkSession: Any, path: str, hadoopConf: dict[str, str] | None = None) -> DeltaTable:
        return cls(sparkSession, path)

    @classmethod
    def forName(cls, sparkSession: Any, tableOrViewName: str) -> DeltaTable:
        """A Delta catalog table (Spark's session catalog, provider delta) or `delta`.`/path` (see catalog.py)."""
        from ..catalog.tables import require, split_name

        ref = require(sparkSession, split_name(sparkSession, tableOrViewName), tableOrViewName)
        return cls(sparkSession, ref.location)

    @staticmethod
    def isDeltaTable(sparkSession: Any, identifier: str) -> bool:
        return KernelTable.is_deltatable(table_uri(identifier))

    @classmethod
    def create(cls, sparkSession: Any = None) -> DeltaTableBuilder[DeltaTable]:
        return DeltaTableBuilder(sparkSession, "error", DeltaTable)

    @classmethod
    def createIfNotExists(cls, sparkSession: Any = None) -> DeltaTableBuilder[DeltaTable]:
        return DeltaTableBuilder(sparkSession, "ignore", DeltaTable)

    @classmethod
    def createOrReplace(cls, sparkSession: Any = None) -> DeltaTableBuilder[DeltaTable]:
        return DeltaTableBuilder(sparkSession, "overwrite", DeltaTable)

    @classmethod
    def replace(cls, sparkSession: Any = None) -> DeltaTableBuilder[DeltaTable]:
        return DeltaTableBuilder(sparkSession, "replace", DeltaTable)

    # ------------------------------------------------------------------ reads
    def _snapshot(self) -> Snapshot:
        return KernelTable(self._uri).snapshot

    def toDF(self) -> Any:
        from ..scan.reader import frame_for_snapshot

        df = frame_for_snapshot(self._spark, self._snapshot())
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> Any:
        """Commits newest first, as a Spark DataFrame with delta-spark's columns in its order and types
        (`DeltaHistory`: `job` and `notebook` structs are null when a commit has none).

        `timestamp` is the commit's timestamp as time travel sees it (delta-spark's `getHistory`: the commit
        file's modification time made monotonic, or the in-commit timestamp), not commitInfo's own clock reading
        taken before the write: a user copies it into `TIMESTAMP AS OF` and must get that very version."""
        kt = KernelTable(self._uri)
        stamps = kt._timestamps()
        rows = [history_row({**info, "timestamp": stamps.get(int(info["version"]), info.get("timestamp"))})
                for info in kt.history(limit)]
        return self._spark.createDataFrame(pa.Table.from_pylist(rows, schema=HISTORY_SCHEMA))

    def detail(self) -> Any:
        """One row describing the table (delta-spark's DESCRIBE DETAIL columns)."""
        from ...kernel.detail import table_detail

        row = table_detail(self._snapshot())
        row["createdAt"], row["lastModified"] = _ts(row["createdAt"]), _ts(row["lastModified"])
        schema = pa.schema([
            ("format", pa.string()), ("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
            ("location", pa.string()), ("createdAt", pa.timestamp("us", tz="UTC")),
            ("lastModified", pa.timestamp("us", tz="UTC")), ("partitionColumns", pa.list_(pa.string())),
            ("clusteringColumns", pa.list_(pa.string())), ("numFiles", pa.int64()), ("sizeInBytes", pa.int64()),
            ("properties", pa.map_(pa.string(), pa.string())), ("minReaderVersion", pa.int32()),
            ("minWriterVersion", pa.int32()), ("tableFeatures", pa.list_(pa.string())),
        ])
        return self._spark.createDataFrame(pa.Table.from_pylist([row], schema=schema))

    # ------------------------------------------------------------------ protocol
    def _commit_protocol(self, new: Protocol, operation: str, params: dict[str, Any]) -> None:
        snap = self._snapshot()
        if new == snap.protocol:
            return
        txn = KernelTransaction(snap.storage, snap, operation=operation, operation_parameters=params,
                                engine_info=ENGINE_INFO)
        txn.update_protocol(new)
        txn.commit()

    def upgradeTableProtocol(self, readerVersion: int, writerVersion: int) -> None:
        """Raise the protocol to at least these versions; a lower version is ignored (delta-spark's DeltaTable
        API ignores downgrades: no commit, no error)."""
        from ...kernel.protocol.select import with_min_versions

        for name, value in (("readerVersion", readerVersion), ("writerVersion", writerVersion)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"The {name} needs to be an integer but got '{type(value)}'.")
        new = with_min_versions(self._snapshot().protocol, readerVersion, writerVersion)
        self._commit_protocol(new, "UPGRADE PROTOCOL",
                              {"newProtocol": json.dumps(new.to_json(), separators=(",", ":"))})

    def addFeatureSupport(self, featureName: str) -> None:
        """Add a table feature to the protocol (delta-spark: `delta.feature.<name> = supported`)."""
        from ...kernel.protocol.features import SUPPORTED_WRITER_FEATURES
        from ...kernel.protocol.select import table_features_protocol
        from ..common.error_classes import UNSUPPORTED_FEATURES_IN_CONFIG, classed

        if not isinstance(featureName, str):
            raise ValueError(f"featureName needs to be a string but got '{type(featureName)}'.")
        known = {f.lower(): f for f in SUPPORTED_WRITER_FEATURES}
        if featureName.lower() not in known:
            raise DeltaError(classed(UNSUPPORTED_FEATURES_IN_CONFIG, "Table features configured in the following "
                                     "Spark configs or Delta table properties are not recognized by this version "
                                     f"of Delta Lake: delta.feature.{featureName}."))
        name = known[featureName.lower()]
        cur = self._snapshot().protocol
        self._commit_protocol(table_features_protocol({name}, cur), "ADD FEATURE", {"feature": name})

    # ------------------------------------------------------------------ DML (spark/dml: distributed jobs)
    def delete(self, condition: Any = None) -> None:
        """Delete the rows matching `condition` (SQL string or Column; all rows when None), as delta-spark."""
        from ..dml.delete import delete

        delete(self._spark, self._path, condition, alias=self._alias)

    def update(self, condition: Any = None, set: Any = None) -> None:
        """Set `set` (column -> SQL string or Column) on the rows matching `condition`, as delta-spark."""
        from ..dml.update import update

        update(self._spark, self._path, condition, set, alias=self._alias)

    def merge(self, source: Any, condition: Any) -> Any:
        """delta-spark's `DeltaMergeBuilder` for `source` (a DataFrame) on `condition` (SQL string or Column)."""
        from ..dml.merge import DeltaMergeBuilder

        return DeltaMergeBuilder(self._spark, self._path, self._alias, source, condition)

    # ------------------------------------------------------------------ maintenance (spark/maintenance)
    def vacuum(self, retentionHours: float | None = None) -> Any:
        """Delete files no retained version needs (a full VACUUM); an empty DataFrame, as delta-spark."""
        from ..maintenance import vacuum

        return vacuum(self._spark, self._uri, None, retentionHours)

    def optimize(self) -> Any:
        """`DeltaOptimizeBuilder`: `.where(partitionFilter)`, `.executeCompaction()`, `.executeZOrderBy(*cols)`."""
        from ..maintenance import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self._spark, self._uri)

    def restoreToVersion(self, version: int) -> Any:
        """Restore an earlier version in one commit; delta-spark's metrics DataFrame."""
        from ..maintenance import restore

        return restore(self._spark, self._uri, None, version=version)

    def restoreToTimestamp(self, timestamp: str) -> Any:
        """Restore the version current at `timestamp` (`yyyy-MM-dd[ HH:mm:ss]`, session time zone)."""
        from ..maintenance import restore

        return restore(self._spark, self._uri, None, timestamp=timestamp)

    def clone(self, target: str, isShallow: bool = False, replace: bool = False,
              properties: dict[str, str] | None = None) -> DeltaTable:
        """Clone the current version to `target` (a path or delta.`path`); deep copies run as a Spark job."""
        from ..maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties))

    def cloneAtVersion(self, version: int, target: str, isShallow: bool = False, replace: bool = False,
                       properties: dict[str, str] | None = None) -> DeltaTable:
        from ..maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties,
                                             version=version))

    def cloneAtTimestamp(self, timestamp: str, target: str, isShallow: bool = False, replace: bool = False,
                         properties: dict[str, str] | None = None) -> DeltaTable:
        from ..maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties,
                                             timestamp=timestamp))

    def generate(self, mode: str) -> None:
        """`generate("symlink_format_manifest")`: `_symlink_format_manifest/` for Presto / Athena."""
        from ..maintenance import generate

        generate(self._uri, None, mode)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        from ..maintenance import drop_feature_support

        drop_feature_support(self._uri, None, featureName, truncateHistory)

    @classmethod
    def convertToDelta(cls, sparkSession: Any, identifier: str, partitionSchema: Any = None) -> DeltaTable:
        """`parquet.\\`/path\\`` (Hive-style partition directories described by `partitionSchema`) -> Delta."""
        from ..maintenance import convert_to_delta

        return cls(sparkSession, convert_to_delta(sparkSession, identifier, partitionSchema))

    def __repr__(self) -> str:
        return f"DeltaTable({self._path!r})"


_JOB = pa.struct([("jobId", pa.string()), ("jobName", pa.string()), ("runId", pa.string()),
                  ("jobOwnerId", pa.string()), ("triggerType", pa.string())])
_NOTEBOOK = pa.struct([("notebookId", pa.string())])
HISTORY_SCHEMA = pa.schema([
    ("version", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("userId", pa.string()),
    ("userName", pa.string()), ("operation", pa.string()),
    ("operationParameters", pa.map_(pa.string(), pa.string())), ("job", _JOB), ("notebook", _NOTEBOOK),
    ("clusterId", pa.string()), ("readVersion", pa.int64()), ("isolationLevel", pa.string()),
    ("isBlindAppend", pa.bool_()), ("operationMetrics", pa.map_(pa.string(), pa.string())),
    ("userMetadata", pa.string()), ("engineInfo", pa.string()),
])


def _struct(value: Any, fields: tuple[str, ...]) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    return {f: None if value.get(f) is None else str(value.get(f)) for f in fields}


def history_row(info: dict[str, Any]) -> dict[str, Any]:
    """One commitInfo as a DESCRIBE HISTORY row (delta-spark's `DeltaHistory`)."""
    params = info.get("operationParameters") or {}
    metrics = info.get("operationMetrics") or {}
    return {
        "version": int(info["version"]),
        "timestamp": _ts(int(info.get("timestamp") or 0)),
        "userId": info.get("userId"),
        "userName": info.get("userName"),
        "operation": info.get("operation"),
        "operationParameters": {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in params.items()},
        "job": _struct(info.get("job"), ("jobId", "jobName", "runId", "jobOwnerId", "triggerType")),
        "notebook": _struct(info.get("notebook"), ("notebookId",)),
        "clusterId": info.get("clusterId"),
        "readVersion": info.get("readVersion"),
        "isolationLevel": info.get("isolationLevel"),
        "isBlindAppend": info.get("isBlindAppend"),
        "operationMetrics": {str(k): str(v) for k, v in metrics.items()},
        "userMetadata": info.get("userMetadata"),
        "engineInfo": info.get("engineInfo"),
    }


def _ts(ms: Any) -> Any:
    if ms is None:
        return None
    return pa.scalar(int(ms), pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")).as_py()


__all__ = ["DeltaTable", "DeltaTableBuilder", "IdentityGenerator", "from_spark_schema"]
