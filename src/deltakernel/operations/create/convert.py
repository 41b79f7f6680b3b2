"""`convert_to_deltalake`: a directory of Parquet files becomes a Delta table (deltalake's API, "CONVERT").

Version 0 holds protocol, metaData and one add per file. Files are listed through the storage layer
(local or object store; hidden `_`/`.` directories and files skipped), footers are read in parallel, the
table schema is the union of the files' schemas (every column nullable, partition columns last, as delta-spark
and deltalake), and each add's stats come from its footer (row count, per-leaf null counts and min/max,
folded by `kernel/stats/collect` exactly as the write path folds its own footers). Nothing is read per row.

Partition values come from the path: `hive` (`k=v/` directories, Spark-escaped, `__HIVE_DEFAULT_PARTITION__`
= null) or `directory` (the partition_by fields mapped onto the directories in order). Footers of the first
`FOOTER_CACHE` files are kept between the schema pass and the stats pass; later ones are read again, so memory
stays bounded for directories of any size.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import DeltaError, SchemaError, UnsupportedFeatureError
from ...kernel.log.action_types import AddAction
from ...kernel.log.actions import Format, Metadata
from ...kernel.log.segment import LOG_DIR
from ...kernel.scan.partition_values import parse_partition_value
from ...kernel.schema.arrow import from_arrow_schema
from ...kernel.schema.types import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType, schema_to_json
from ...kernel.stats.collect import (
    LeafStats,
    fold_footer_chunk,
    stat_kind,
    stat_leaves,
    stats_document,
    stats_json,
    stats_schema,
)
from ...kernel.transaction.transaction import Transaction
from ...storage import Storage, storage_for_uri
from ...storage.base import ObjectMeta
from ..commit_options import CommitProperties, PostCommitHookProperties, commit_with
from ..files.layout import unescape_path_name, uri_encode_path

log = logging.getLogger(__name__)

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
FOOTER_CACHE = 10_000
FOOTER_THREADS = 16


def convert_to_deltalake(
    uri: str | Any,
    mode: str = "error",
    partition_by: Any = None,
    partition_strategy: str | None = None,
    name: str | None = None,
    description: str | None = None,
    configuration: Mapping[str, str | None] | None = None,
    storage_options: dict[str, str] | None = None,
    *args: Any,
    collect_stats: bool = True,
    commit_properties: CommitProperties | None = None,
    post_commithook_properties: PostCommitHookProperties | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Convert the Parquet files under `uri` into a Delta table (version 0, operation "CONVERT").

    `partition_by`: the partition columns as a schema (pyarrow Schema, deltalake Schema, anything with
    `__arrow_c_schema__`, or a Delta StructType); needs `partition_strategy` "hive" or "directory".
    `mode`: "error" (default) raises if a Delta table is already there, "ignore" leaves it alone.
    `progress(done, total)` is called as footers are read.
    """
    from ..commit_options import check_commit_properties, positional_commit_args

    commit_properties, post_commithook_properties = positional_commit_args(
        "convert_to_deltalake", args, commit_properties, post_commithook_properties, stacklevel=3)
    check_commit_properties(commit_properties)
    if mode not in ("error", "ignore"):
        raise DeltaError(f"mode must be 'error' or 'ignore', got {mode!r}")
    if partition_by is not None and partition_strategy is None:
        raise DeltaError("Partition strategy has to be provided with partition_by.")
    if partition_strategy is not None and partition_strategy not in ("hive", "directory"):
        raise DeltaError("Partition strategy must be `hive` or `directory`.")
    conf = {k: v for k, v in (configuration or {}).items() if v is not None}
    if conf.get("delta.columnMapping.mode", "none") != "none":
        raise UnsupportedFeatureError("columnMapping", "convert_to_deltalake cannot enable column mapping: convert "
                                      "first, then enable it with alter.set_table_properties")
    storage = storage_for_uri(str(uri), storage_options)
    if any(True for _ in storage.list_from(f"{LOG_DIR}/0")):
        if mode == "ignore":
            return
        raise DeltaError(f"{storage.root_uri} is already a Delta table")
    start = time.perf_counter()
    parts = _partition_schema(partition_by)
    files = _list_parquet_files(storage)
    values = [_partition_values(f.key, parts, partition_strategy) for f in files] if parts else [{} for _ in files]
    footers = _FooterReader(storage, files, progress)
    schema = _table_schema(footers, files, parts)
    part_names = [f.name for f in parts.fields] if parts else []
    stats_plan = _StatsPlan(schema, part_names, conf) if collect_stats else None
    adds: list[AddAction] = []
    for f, pv, stats in zip(files, values, footers.stats(stats_plan)):
        add: AddAction = {"path": uri_encode_path(f.key), "partitionValues": pv, "size": f.size,
                          "modificationTime": f.last_modified_ms, "dataChange": True}
        if stats is not None:
            add["stats"] = stats
        adds.append(add)
    _commit(storage, schema, part_names, conf, name, description, adds, collect_stats, commit_properties,
            post_commithook_properties)
    log.info("converted %d Parquet files under %s in %.2fs", len(files), storage.root_uri,
             time.perf_counter() - start)


# ----------------------------------------------------------------------------- listing and partitions
def _skip_dir(key: str) -> bool:
    return key.rsplit("/", 1)[-1][:1] in ("_", ".")


def _list_parquet_files(storage: Storage) -> list[ObjectMeta]:
    out: list[ObjectMeta] = []
    for page in storage.walk("", skip_dir=_skip_dir):
        for m in page:
            name = m.key.rsplit("/", 1)[-1]
            if name.endswith(".parquet") and name[:1] not in ("_", "."):
                out.append(m)
    out.sort(key=lambda m: m.key)
    return out


def _partition_schema(partition_by: Any) -> StructType | None:
    if partition_by is None:
        return None
    if isinstance(partition_by, StructType):
        return partition_by
    if isinstance(partition_by, pa.Schema):
        arrow = partition_by
    elif hasattr(partition_by, "to_arrow"):
        arrow = pa.schema(partition_by.to_arrow())
    else:
        arrow = pa.schema(partition_by)  # __arrow_c_schema__
    return from_arrow_schema(arrow)


def _partition_values(key: str, parts: StructType, strategy: str | None) -> dict[str, str | None]:
    dirs = key.split("/")[:-1]
    out: dict[str, str | None] = {}
    if strategy == "hive":
        found: dict[str, str] = {}
        for d in dirs:
            k, eq, v = d.partition("=")
            if eq:
                found[unescape_path_name(k)] = unescape_path_name(v)
        for f in parts.fields:
            if f.name not in found:
                raise DeltaError(f"{key!r} has no {f.name}=... directory for partition column {f.name!r}")
            raw = found[f.name]
            out[f.name] = None if raw == HIVE_NULL else raw
    else:  # directory: the fields onto the directories, in order
        if len(dirs) != len(parts.fields):
            raise DeltaError(f"{key!r} is not {len(parts.fields)} directories deep (partition columns "
                             f"{parts.names})")
        for f, d in zip(parts.fields, dirs):
            raw = unescape_path_name(d)
            out[f.name] = None if raw == HIVE_NULL else raw
    for f in parts.fields:  # a value that does not parse as its type is refused now, not at read time
        parse_partition_value(out[f.name], f.type, column=f.name, path=key)
    return out


# ----------------------------------------------------------------------------- footers
class _FooterReader:
    """Parquet footers read in parallel; the first FOOTER_CACHE are kept for the stats pass."""

    def __init__(self, storage: Storage, files: Sequence[ObjectMeta],
                 progress: Callable[[int, int], None] | None) -> None:
        self.storage, self.files, self.progress = storage, list(files), progress
        self.cache: dict[int, pq.FileMetaData] = {}

    def _read(self, i: int) -> pq.FileMetaData:
        key = self.files[i].key
        try:
            with self.storage.open_input_file(key) as f:
                return pq.read_metadata(f)
        except DeltaError:
            raise
        except Exception as e:
            raise DeltaError(f"cannot read the Parquet footer of {self.storage.full_uri(key)}: {e}") from e

    def _map(self, fn: Callable[[int], Any], indexes: Sequence[int]) -> list[Any]:
        if len(indexes) <= 1:
            return [fn(i) for i in indexes]
        with ThreadPoolExecutor(max_workers=min(FOOTER_THREADS, len(indexes))) as pool:
            return list(pool.map(fn, indexes))

    def schemas(self) -> list[tuple[pa.Schema, int]]:
        """Each distinct Arrow schema with the index of one file that has it (bounded memory)."""
        distinct: dict[str, tuple[pa.Schema, int]] = {}
        total, done = len(self.files), 0
        step = FOOTER_THREADS * 64
        for lo in range(0, total, step):
            idx = list(range(lo, min(lo + step, total)))
            for i, md in zip(idx, self._map(self._read, idx)):
                if i < FOOTER_CACHE:
                    self.cache[i] = md
                arrow = md.schema.to_arrow_schema().remove_metadata()
                distinct.setdefault(arrow.to_string(show_field_metadata=False), (arrow, i))
            done += len(idx)
            if self.progress is not None:
                self.progress(done, total)
        return list(distinct.values())

    def stats(self, plan: _StatsPlan | None) -> list[str | None]:
        if plan is None:
            return [None] * len(self.files)

        def one(i: int) -> str:
            md = self.cache.pop(i, None) or self._read(i)
            return plan.stats_json(md)

        return self._map(one, list(range(len(self.files))))


def _nullable(t: DataType) -> DataType:
    if isinstance(t, StructType):
        return StructType(tuple(StructField(f.name, _nullable(f.type), True, dict(f.metadata)) for f in t.fields))
    if isinstance(t, ArrayType):
        return ArrayType(_nullable(t.element_type), True)
    if isinstance(t, MapType):
        return MapType(_nullable(t.key_type), _nullable(t.value_type), True)
    return t


def _table_schema(footers: _FooterReader, files: Sequence[ObjectMeta], parts: StructType | None) -> StructType:
    if not files:
        raise DeltaError(f"no Parquet files to convert under {footers.storage.root_uri}")
    distinct = footers.schemas()
    try:
        arrow = pa.unify_schemas([s for s, _ in distinct])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SchemaError(f"the Parquet files under {footers.storage.root_uri} have incompatible schemas ({e}); "
                          f"e.g. {files[distinct[0][1]].key!r} and {files[distinct[-1][1]].key!r}") from e
    data = _nullable(from_arrow_schema(arrow))
    assert isinstance(data, StructType)
    part_lower = {f.name.lower() for f in parts.fields} if parts else set()
    fields = [f for f in data.fields if f.name.lower() not in part_lower]
    for f in fields:
        if f.type == _VOID:
            raise SchemaError(f"column {f.name!r} holds only nulls (Parquet type null) in every file: it has no type")
    if parts:
        fields += [StructField(f.name, _nullable(f.type), True) for f in parts.fields]
    return StructType(tuple(fields))


_VOID = PrimitiveType("void")


class _StatsPlan:
    """Which Parquet leaf feeds which Delta stats leaf, by column path (files may differ in columns)."""

    def __init__(self, schema: StructType, partition_columns: list[str], conf: Mapping[str, str]) -> None:
        self.leaves: list[tuple[tuple[str, ...], str | None, bool, bool]] = []
        for lp, _pp, dtype in stat_leaves(stats_schema(schema, conf, partition_columns), "none"):
            utc = not (getattr(dtype, "name", None) == "timestamp_ntz")
            nested = isinstance(dtype, (ArrayType, MapType))
            self.leaves.append((lp, stat_kind(dtype), utc, nested))
        self.tight = str(conf.get("delta.enableDeletionVectors", "false")).strip().lower() == "true"

    def stats_json(self, md: pq.FileMetaData) -> str:
        index = {md.schema.column(i).path: i for i in range(md.num_columns)}
        folded: list[tuple[LeafStats, int | None]] = []
        for lp, kind, utc, nested in self.leaves:
            leaf = LeafStats(lp, lp, None if nested else kind, utc)
            col = None if nested else index.get(".".join(lp))
            if nested:
                leaf.null_count = None  # a list/map leaf's footer counts element nulls, not null values
            elif col is None and not any(p.startswith(".".join(lp) + ".") for p in index):
                leaf.null_count = md.num_rows  # the column is absent from this file: all null
            elif col is None:
                leaf.null_count = None
            if kind in ("float", "double"):
                leaf.has_nan = True  # footers (Arrow) do not say whether NaN was present: no max
            folded.append((leaf, col))
        for r in range(md.num_row_groups):
            rg = md.row_group(r)
            for leaf, col in folded:
                if col is not None:
                    fold_footer_chunk(leaf, rg.column(col), rg.num_rows, count_nulls=True, nan_sorts_last=False)
        return stats_json(stats_document(md.num_rows, [leaf for leaf, _ in folded], tight_bounds=self.tight))


# ----------------------------------------------------------------------------- commit
def _commit(storage: Storage, schema: StructType, part_names: list[str], conf: dict[str, str], name: str | None,
            description: str | None, adds: list[AddAction], collect_stats: bool,
            commit_properties: CommitProperties | None,
            post_commithook_properties: PostCommitHookProperties | None) -> None:
    from ..write.plan import protocol_for, required_features

    props = commit_properties or CommitProperties()
    md = Metadata(id=str(uuid.uuid4()), schema_string=schema_to_json(schema), partition_columns=tuple(part_names),
                  configuration=conf, name=name, description=description, format=Format("parquet", {}),
                  created_time=int(time.time() * 1000))
    protocol = protocol_for(required_features(schema, conf))
    parameters = {"collectStats": collect_stats, "numFiles": len(adds),
                  "partitionBy": json.dumps(part_names, separators=(",", ":"))}
    txn = Transaction(storage, None, operation="CONVERT", operation_parameters=parameters)
    txn.operation_metrics["numConvertedFiles"] = len(adds)  # delta-spark's CONVERT metric
    txn.update_metadata(md)
    txn.update_protocol(protocol)
    txn.add_files(adds)
    commit_with(txn, props, post_commithook_properties)


__all__ = ["convert_to_deltalake"]
