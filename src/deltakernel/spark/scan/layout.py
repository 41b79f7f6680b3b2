"""How a snapshot's columns sit in its Parquet files, seen from Spark: the one place reads and DML scans get it.

Data columns are read by physical name (column mapping `name`) or Parquet field id (`id`), partition columns are
not in the files; the scan's output is renamed (and nested column-mapped structs cast) to the logical schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ...kernel.schema.column_mapping import to_physical_schema
from ...kernel.schema.types import StructField, StructType
from ...kernel.snapshot import Snapshot
from ..common.geo_types import from_wkb, spark_schema_with_geo
from ..common.schema import to_spark_schema

_NONE: Mapping[str, Any] = MappingProxyType({})


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class ScanLayout:
    snapshot: Snapshot
    data_fields: tuple[StructField, ...]  # logical, non-partition
    physical: StructType  # the data fields with physical names (and ids)
    phys_spark: Any  # pyspark StructType of `physical` (field ids in id mode)
    logical_spark: Any  # pyspark StructType of the logical schema
    partitions: frozenset[str]  # partition column names, lower case

    @classmethod
    def of(cls, snapshot: Snapshot) -> ScanLayout:
        """The layout of `snapshot`, built once per snapshot (the session keeps the latest snapshot across
        queries: `read_snapshot.latest_snapshot`; two schema conversions through pyspark's JSON each time)."""
        found = snapshot.__dict__.get(_ATTR)  # kept on the snapshot: it lives exactly as long
        if found is None:
            found = snapshot.__dict__.setdefault(_ATTR, cls._build(snapshot))
        return found  # type: ignore[no-any-return]

    @classmethod
    def _build(cls, snapshot: Snapshot) -> ScanLayout:
        mode = snapshot.column_mapping_mode
        parts = frozenset(c.lower() for c in snapshot.partition_columns)
        data_fields = tuple(f for f in snapshot.schema.fields if f.name.lower() not in parts)
        physical = to_physical_schema(StructType(data_fields), mode)
        return cls(snapshot, data_fields, physical, to_spark_schema(physical, field_ids=(mode == "id")),
                   to_spark_schema(snapshot.schema), parts)

    def read_schema(self, extra_longs: list[str] | tuple[str, ...] = ()) -> Any:
        """The physical data columns, plus `extra_longs` (materialized row-tracking columns) when absent."""
        from pyspark.sql.types import LongType
        from pyspark.sql.types import StructField as SparkField
        from pyspark.sql.types import StructType as SparkStruct

        have = set(self.phys_spark.fieldNames())
        return SparkStruct(list(self.phys_spark.fields) + [SparkField(n, LongType(), True) for n in extra_longs
                                                           if n not in have])

    def partition_schema(self) -> Any:
        """The partition columns as the table declares them: a NOT NULL partition column stays NOT NULL in the
        DataFrame's schema, as delta-spark's (its `toDF().schema` is the table's schema)."""
        from pyspark.sql.types import StructField as SparkField
        from pyspark.sql.types import StructType as SparkStruct

        return SparkStruct([SparkField(f.name, self.logical_spark[f.name].dataType, self.logical_spark[f.name].nullable)
                            for f in self.snapshot.partition_fields])

    def data_names(self) -> dict[str, str]:
        """Physical top-level name -> logical name, for the file index's filter translation."""
        return {pf.name: lf.name for lf, pf in zip(self.data_fields, self.physical.fields)}

    def scan_is_logical(self, extra_longs: list[str] | tuple[str, ...] = (), geo: Mapping[str, Any] = _NONE) -> bool:
        """Do the scan's columns (`read_schema(extra_longs)` then `partition_schema()`) already carry the logical
        schema's names, types and metadata in its order (no column mapping, partition columns last)? Then
        `logical_columns` would be an identity Project (nullability: an alias keeps the scan's anyway). `geo`:
        the columns shown as Spark geospatial types (`common/geo_types.session_geo_types`) need the Project."""
        if geo:
            return False
        scan = list(self.read_schema(extra_longs).fields) + list(self.partition_schema().fields)
        logical = list(self.logical_spark.fields)
        return len(scan) == len(logical) and all(
            s.name == f.name and s.dataType == f.dataType and (s.metadata or {}) == (f.metadata or {})
            for s, f in zip(scan, logical))

    def logical_schema(self, geo: Mapping[str, Any] = _NONE) -> Any:
        """The logical pyspark schema, `geo`'s columns as Spark geospatial types."""
        return spark_schema_with_geo(self.logical_spark, dict(geo))

    def logical_columns(self, geo: Mapping[str, Any] = _NONE) -> list[Any]:
        """The select list turning the scan's columns (physical data, partition columns by logical name) into the
        logical schema, column comments kept; `geo`'s columns (name -> GeoType, from
        `common/geo_types.session_geo_types`) become Spark geospatial values from their WKB."""
        from pyspark.sql import functions as F

        out = []
        names = [d.name for d in self.data_fields]
        for f in self.snapshot.schema.fields:
            lf = self.logical_spark[f.name]
            if f.name.lower() in self.partitions:
                out.append(F.col(quote(f.name)).cast(lf.dataType).alias(f.name, metadata=lf.metadata))
                continue
            pf = self.physical.fields[names.index(f.name)]
            col = F.col(quote(pf.name))
            if self.phys_spark[pf.name].dataType != lf.dataType:
                col = col.cast(lf.dataType)  # nested physical names -> logical (positional struct cast)
            if f.name in geo:
                col = from_wkb(col, geo[f.name])
            out.append(col.alias(f.name, metadata=lf.metadata))
        return out


_ATTR = "_dk_scan_layout"


def row_tracking_columns(configuration: dict[str, str], base_row_id: str, row_index: str,
                         default_version: str) -> list[Any]:
    """`_row_id` / `_row_commit_version` (PROTOCOL.md "Row Tracking"): the materialized columns where written,
    else `baseRowId + physical row index` and the file's `defaultRowCommitVersion` (columns of the scan)."""
    from pyspark.sql import functions as F

    from ...kernel import row_tracking as rt

    row_id = F.col(base_row_id) + F.col(row_index)
    version = F.col(default_version)
    id_col, version_col = rt.materialized_names(configuration)
    if id_col:
        row_id = F.coalesce(F.col(quote(id_col)), row_id)
    if version_col:
        version = F.coalesce(F.col(quote(version_col)), version)
    return [row_id.alias(rt.ROW_ID), version.alias(rt.ROW_COMMIT_VERSION)]


__all__ = ["ScanLayout", "quote", "row_tracking_columns"]
