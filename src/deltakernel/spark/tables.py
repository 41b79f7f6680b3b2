"""`DeltaTable` for PySpark with delta-spark's names (`from deltakernel.spark import DeltaTable`).

Reads go through the native plan (`reader.py`), metadata through the kernel, commits through the kernel
Transaction. DML (delete/update/merge) and maintenance (optimize/vacuum/restore) are the next issue: they
belong here as methods that build a kernel Transaction exactly like `upgradeTableProtocol` below.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from ..errors import DeltaError
from ..kernel.log.actions import Protocol
from ..kernel.snapshot import Snapshot
from ..kernel.transaction.transaction import Transaction as KernelTransaction
from ..table import DeltaTable as KernelTable
from ._schema import from_spark_schema, table_uri

ENGINE_INFO = "deltakernel-spark/0.1.0"


class DeltaTable:
    """A Delta table addressed by path, bound to a SparkSession."""

    def __init__(self, spark: Any, path: str, alias: str | None = None) -> None:
        self._spark = spark
        self._path = path
        self._uri = table_uri(path)
        self._alias = alias
        if not KernelTable.is_deltatable(self._uri):
            raise DeltaError(f"{path!r} is not a Delta table")

    # ------------------------------------------------------------------ construction
    @classmethod
    def forPath(cls, sparkSession: Any, path: str, hadoopConf: dict[str, str] | None = None) -> DeltaTable:
        return cls(sparkSession, path)

    @classmethod
    def forName(cls, sparkSession: Any, tableOrViewName: str) -> DeltaTable:
        """A Delta catalog table (Spark's session catalog, provider delta) or `delta`.`/path` (see catalog.py)."""
        from .catalog import require, split_name

        ref = require(sparkSession, split_name(sparkSession, tableOrViewName), tableOrViewName)
        return cls(sparkSession, ref.location)

    @staticmethod
    def isDeltaTable(sparkSession: Any, identifier: str) -> bool:
        return KernelTable.is_deltatable(table_uri(identifier))

    @classmethod
    def create(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "error")

    @classmethod
    def createIfNotExists(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "ignore")

    @classmethod
    def createOrReplace(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "overwrite")

    @classmethod
    def replace(cls, sparkSession: Any = None) -> DeltaTableBuilder:
        return DeltaTableBuilder(sparkSession, "replace")

    # ------------------------------------------------------------------ reads
    def _snapshot(self) -> Snapshot:
        return KernelTable(self._uri).snapshot

    def toDF(self) -> Any:
        from .reader import frame_for_snapshot

        df = frame_for_snapshot(self._spark, self._snapshot())
        return df.alias(self._alias) if self._alias else df

    def alias(self, aliasName: str) -> DeltaTable:
        return DeltaTable(self._spark, self._path, aliasName)

    def history(self, limit: int | None = None) -> Any:
        """Commits newest first, delta-spark's columns, as a Spark DataFrame."""
        rows = []
        for info in KernelTable(self._uri).history(limit):
            params = info.get("operationParameters") or {}
            metrics = info.get("operationMetrics") or {}
            rows.append({
                "version": int(info["version"]),
                "timestamp": pa.scalar(int(info.get("timestamp") or 0), pa.timestamp("ms", tz="UTC")).cast(
                    pa.timestamp("us", tz="UTC")).as_py(),
                "userId": info.get("userId"),
                "userName": info.get("userName"),
                "operation": info.get("operation"),
                "operationParameters": {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in params.items()},
                "clusterId": info.get("clusterId"),
                "readVersion": info.get("readVersion"),
                "isolationLevel": info.get("isolationLevel"),
                "isBlindAppend": info.get("isBlindAppend"),
                "operationMetrics": {str(k): str(v) for k, v in metrics.items()},
                "userMetadata": info.get("userMetadata"),
                "engineInfo": info.get("engineInfo"),
            })
        schema = pa.schema([
            ("version", pa.int64()), ("timestamp", pa.timestamp("us", tz="UTC")), ("userId", pa.string()),
            ("userName", pa.string()), ("operation", pa.string()),
            ("operationParameters", pa.map_(pa.string(), pa.string())), ("clusterId", pa.string()),
            ("readVersion", pa.int64()), ("isolationLevel", pa.string()), ("isBlindAppend", pa.bool_()),
            ("operationMetrics", pa.map_(pa.string(), pa.string())), ("userMetadata", pa.string()),
            ("engineInfo", pa.string()),
        ])
        return self._spark.createDataFrame(pa.Table.from_pylist(rows, schema=schema))

    def detail(self) -> Any:
        """One row describing the table (delta-spark's DESCRIBE DETAIL columns)."""
        from ..kernel.detail import table_detail

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
        from ..kernel.protocol.select import with_min_versions

        new = with_min_versions(self._snapshot().protocol, readerVersion, writerVersion)
        self._commit_protocol(new, "UPGRADE PROTOCOL",
                              {"newProtocol": json.dumps(new.to_json(), separators=(",", ":"))})

    def addFeatureSupport(self, featureName: str) -> None:
        from ..kernel.protocol.features import SUPPORTED_WRITER_FEATURES
        from ..kernel.protocol.select import table_features_protocol

        if featureName not in SUPPORTED_WRITER_FEATURES:
            raise DeltaError(f"table feature {featureName!r} is not supported by deltakernel")
        cur = self._snapshot().protocol
        self._commit_protocol(table_features_protocol({featureName}, cur), "ADD FEATURE",
                              {"feature": featureName})

    # ------------------------------------------------------------------ DML (spark/dml: distributed jobs)
    def delete(self, condition: Any = None) -> None:
        """Delete the rows matching `condition` (SQL string or Column; all rows when None), as delta-spark."""
        from .dml.delete import delete

        delete(self._spark, self._path, condition, alias=self._alias)

    def update(self, condition: Any = None, set: Any = None) -> None:
        """Set `set` (column -> SQL string or Column) on the rows matching `condition`, as delta-spark."""
        from .dml.update import update

        update(self._spark, self._path, condition, set, alias=self._alias)

    def merge(self, source: Any, condition: Any) -> Any:
        """delta-spark's `DeltaMergeBuilder` for `source` (a DataFrame) on `condition` (SQL string or Column)."""
        from .dml.merge import DeltaMergeBuilder

        return DeltaMergeBuilder(self._spark, self._path, self._alias, source, condition)

    # ------------------------------------------------------------------ maintenance (spark/maintenance)
    def vacuum(self, retentionHours: float | None = None) -> Any:
        """Delete files no retained version needs (a full VACUUM); an empty DataFrame, as delta-spark."""
        from .maintenance import vacuum

        return vacuum(self._spark, self._uri, None, retentionHours)

    def optimize(self) -> Any:
        """`DeltaOptimizeBuilder`: `.where(partitionFilter)`, `.executeCompaction()`, `.executeZOrderBy(*cols)`."""
        from .maintenance import DeltaOptimizeBuilder

        return DeltaOptimizeBuilder(self._spark, self._uri)

    def restoreToVersion(self, version: int) -> Any:
        """Restore an earlier version in one commit; delta-spark's metrics DataFrame."""
        from .maintenance import restore

        return restore(self._spark, self._uri, None, version=version)

    def restoreToTimestamp(self, timestamp: str) -> Any:
        """Restore the version current at `timestamp` (`yyyy-MM-dd[ HH:mm:ss]`, session time zone)."""
        from .maintenance import restore

        return restore(self._spark, self._uri, None, timestamp=timestamp)

    def clone(self, target: str, isShallow: bool = False, replace: bool = False,
              properties: dict[str, str] | None = None) -> DeltaTable:
        """Clone the current version to `target` (a path or delta.`path`); deep copies run as a Spark job."""
        from .maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties))

    def cloneAtVersion(self, version: int, target: str, isShallow: bool = False, replace: bool = False,
                       properties: dict[str, str] | None = None) -> DeltaTable:
        from .maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties,
                                             version=version))

    def cloneAtTimestamp(self, timestamp: str, target: str, isShallow: bool = False, replace: bool = False,
                         properties: dict[str, str] | None = None) -> DeltaTable:
        from .maintenance import clone

        return DeltaTable(self._spark, clone(self._spark, self._uri, None, target, isShallow, replace, properties,
                                             timestamp=timestamp))

    def generate(self, mode: str) -> None:
        """`generate("symlink_format_manifest")`: `_symlink_format_manifest/` for Presto / Athena."""
        from .maintenance import generate

        generate(self._uri, None, mode)

    def dropFeatureSupport(self, featureName: str, truncateHistory: bool | None = None) -> None:
        from .maintenance import drop_feature_support

        drop_feature_support(self._uri, None, featureName, truncateHistory)

    @classmethod
    def convertToDelta(cls, sparkSession: Any, identifier: str, partitionSchema: Any = None) -> DeltaTable:
        """`parquet.\\`/path\\`` (Hive-style partition directories described by `partitionSchema`) -> Delta."""
        from .maintenance import convert_to_delta

        return cls(sparkSession, convert_to_delta(sparkSession, identifier, partitionSchema))

    def __repr__(self) -> str:
        return f"DeltaTable({self._path!r})"


def _ts(ms: Any) -> Any:
    if ms is None:
        return None
    return pa.scalar(int(ms), pa.timestamp("ms", tz="UTC")).cast(pa.timestamp("us", tz="UTC")).as_py()


class DeltaTableBuilder:
    """delta-spark's `DeltaTableBuilder`: location, columns, partitioning or clustering, properties, comment."""

    def __init__(self, spark: Any, mode: str) -> None:
        self._spark = spark
        self._mode = mode
        self._location: str | None = None
        self._fields: list[dict[str, Any]] = []
        self._partitions: list[str] = []
        self._clustering: list[str] = []
        self._properties: dict[str, str] = {}
        self._comment: str | None = None
        self._name: str | None = None

    def tableName(self, identifier: str) -> DeltaTableBuilder:
        self._name = identifier
        return self

    def location(self, location: str) -> DeltaTableBuilder:
        self._location = location
        return self

    def comment(self, comment: str) -> DeltaTableBuilder:
        self._comment = comment
        return self

    def addColumn(self, colName: str, dataType: Any, nullable: bool = True, generatedAlwaysAs: str | None = None,
                  comment: str | None = None) -> DeltaTableBuilder:
        from pyspark.sql.types import DataType, _parse_datatype_string

        typ = dataType if isinstance(dataType, DataType) else _parse_datatype_string(str(dataType))
        meta: dict[str, Any] = {}
        if comment is not None:
            meta["comment"] = comment
        if generatedAlwaysAs is not None:
            meta["delta.generationExpression"] = generatedAlwaysAs
        self._fields.append({"name": colName, "type": typ.jsonValue(), "nullable": bool(nullable), "metadata": meta})
        return self

    def addColumns(self, cols: Any) -> DeltaTableBuilder:
        for f in cols.fields:
            self._fields.append(f.jsonValue())
        return self

    def partitionedBy(self, *cols: Any) -> DeltaTableBuilder:
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        self._partitions = list(cols)
        return self

    def clusterBy(self, *cols: Any) -> DeltaTableBuilder:
        """A clustered table (protocol "Clustered Table"): OPTIMIZE clusters its files by these columns."""
        if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
            cols = tuple(cols[0])
        self._clustering = [str(c) for c in cols]
        return self

    def property(self, key: str, value: str) -> DeltaTableBuilder:
        self._properties[key] = str(value)
        return self

    def execute(self) -> DeltaTable:
        from ..kernel.schema.types import parse_schema_string
        from ..operations.write import create_table

        if self._location is None and self._name is None:
            raise DeltaError("a table needs .tableName(name) or .location(path)")
        if not self._fields:
            raise DeltaError("a table needs at least one column (addColumn)")
        schema = parse_schema_string(json.dumps({"type": "struct", "fields": self._fields}))
        if self._clustering and self._partitions:
            raise DeltaError("clusterBy and partitionedBy cannot be used together "
                             "(a clustered table has no partitions)")
        if self._name is not None:  # a catalog table (managed without .location): spark/catalog.py
            from .catalog import TableSpec, create, split_name

            spec = TableSpec(schema=schema, location=self._location, partition_by=self._partitions or None,
                             cluster_by=self._clustering or None, properties=dict(self._properties) or None,
                             comment=self._comment)
            how = {"error": "create", "ignore": "ignore", "overwrite": "create_or_replace", "replace": "replace"}
            ref = create(self._spark, split_name(self._spark, self._name), spec, how[self._mode], label=self._name)
            return DeltaTable(self._spark, ref.location)
        assert self._location is not None
        uri = table_uri(self._location)
        exists = KernelTable.is_deltatable(uri)
        if self._mode == "replace" and not exists:
            raise DeltaError(f"cannot replace: no Delta table at {self._location}")
        mode = {"error": "error", "ignore": "ignore", "overwrite": "overwrite", "replace": "overwrite"}[self._mode]
        if not (mode == "ignore" and exists):
            create_table(uri, schema, mode=mode, partition_by=self._partitions or None, name=self._name,
                         description=self._comment, configuration=dict(self._properties) or None,
                         cluster_by=self._clustering or None)
        return DeltaTable(self._spark, self._location)


__all__ = ["DeltaTable", "DeltaTableBuilder", "from_spark_schema"]
