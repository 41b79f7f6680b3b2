"""The Python data source registered as "delta" (Spark 4's `pyspark.sql.datasource`).

It serves what the routed DataFrame API does not: SQL (`CREATE TEMPORARY VIEW v USING delta OPTIONS
(path '...')`), sessions where `enable()` has not patched the reader, and tables the native plan cannot
express. Facts it is built on (measured, see issue 4): batches must match Spark's schema exactly; each
task costs ~60 ms, so many files are packed into one partition; pushed filters are all returned to
Spark (none kept) and only used for file skipping; there is no column pruning.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
)

from ...kernel.schema.types import StructType
from ..common.geo_types import from_wkb, session_geo_types
from ..common.schema import Options, storage_options, table_path, table_uri, to_spark_schema
from ..writing import identity as idc
from ..writing.task_payloads import DeltaCommitMessage, LiteSnapshot
from .layout import quote
from .read_snapshot import load_snapshot

SOURCE_NAME = "delta"
TARGET_PARTITION_BYTES = 256 * 1024 * 1024
CDF_FIELDS = [("_change_type", "string"), ("_commit_version", "long"), ("_commit_timestamp", "timestamp")]


class DeltaDataSource(DataSource):
    """`format("delta")` for Python data sources; see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def _opts(self) -> Options:
        return Options(dict(self.options))

    def schema(self) -> Any:
        opts = self._opts()
        snap = load_snapshot(table_path(opts), opts)
        spark_schema = to_spark_schema(snap.schema)
        if opts.flag("readChangeFeed"):
            from pyspark.sql.types import LongType, StringType, TimestampType
            from pyspark.sql.types import StructField as SF

            # no _parse_datatype_string: it needs a SparkContext, absent in the Python worker planning a stream
            types = {"string": StringType(), "long": LongType(), "timestamp": TimestampType()}
            for name, typ in CDF_FIELDS:
                spark_schema = spark_schema.add(SF(name, types[typ], True))
        return spark_schema

    def reader(self, schema: Any) -> DataSourceReader:
        return DeltaSourceReader(self._opts(), schema)

    def writer(self, schema: Any, overwrite: bool) -> DeltaSourceWriter:
        return DeltaSourceWriter(self._opts(), schema, overwrite)

    def streamReader(self, schema: Any) -> Any:
        """`spark.readStream.format("delta")` (spark/streaming/source.py)."""
        from ..streaming.source import DeltaStreamReader

        return DeltaStreamReader(self._opts(), schema)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        """`df.writeStream.format("delta")`, exactly once per batch (spark/streaming/sink.py)."""
        from ..streaming.sink import DeltaStreamWriter

        return DeltaStreamWriter(self._opts(), schema, overwrite)


# ----------------------------------------------------------------------------- reads
class DeltaSourceReader(DataSourceReader):
    def __init__(self, opts: Options, schema: Any) -> None:
        self.opts = opts
        self.spark_schema = schema
        self.filters: list[Any] = []  # Spark's filter objects: they pickle, kernel expressions do not

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Keep the filters for file skipping; hand every one back to Spark (which applies them)."""
        for f in filters:
            self.filters.append(f)
            yield f

    @property
    def predicate(self) -> Any:
        from ...kernel.expressions.predicate import And

        preds = [p for p in (_filter_to_predicate(f) for f in self.filters) if p is not None]
        if not preds:
            return None
        return preds[0] if len(preds) == 1 else And(*preds)

    def partitions(self) -> Sequence[InputPartition]:
        from ...kernel.scan.scan import Scan
        from ...kernel.schema.types import schema_to_json

        opts = self.opts
        if opts.flag("readChangeFeed"):
            return [InputPartition({"cdf": dict(opts)})]
        snap = load_snapshot(table_path(opts), opts)
        pred = self.predicate
        if pred is not None:
            try:
                files = Scan(snap, predicate=pred).plan()
            except Exception:
                files = snap.files
        else:
            files = snap.files
        options = storage_options(opts)
        if getattr(snap.storage, "catalog", None) is not None:  # a catalog's table (uc://): tasks read the files
            options = dict(getattr(snap.storage, "storage_options", None) or {})  # with its vended credentials
        header = {"uri": snap.storage.root_uri, "storage_options": options,
                  "schema": schema_to_json(snap.schema), "mode": snap.column_mapping_mode,
                  "partition_columns": snap.partition_columns, "version": snap.version}
        tasks = files.select(["path", "partition_values", "deletion_vector", "size"]).to_pylist()
        groups: list[list[dict[str, Any]]] = [[]]
        size = 0
        for t in tasks:
            if groups[-1] and size + int(t["size"] or 0) > TARGET_PARTITION_BYTES:
                groups.append([])
                size = 0
            groups[-1].append(t)
            size += int(t["size"] or 0)
        return [InputPartition({"header": header, "tasks": g}) for g in groups if g] or \
            [InputPartition({"header": header, "tasks": []})]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from pyspark.sql.pandas.types import to_arrow_schema

        target = to_arrow_schema(self.spark_schema, timezone="UTC")
        value = partition.value
        if "cdf" in value:
            yield from _read_cdf(Options(value["cdf"]), target)
            return
        from ...kernel.scan.scan import Scan

        h = value["header"]
        snap = LiteSnapshot(h["uri"], h["storage_options"], h["schema"], h["mode"], h["partition_columns"],
                            h["version"])
        scan = Scan(snap)  # type: ignore[arg-type]
        for task in value["tasks"]:
            table = scan.read_file(task)
            for batch in table.to_batches():
                yield _conform(batch, target)


def _conform(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    if batch.schema == target:
        return batch
    cols = [batch.column(i).cast(f.type) for i, f in enumerate(target)]
    return pa.RecordBatch.from_arrays(cols, schema=target)


def _read_cdf(opts: Options, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    from ...table import DeltaTable

    dtab = DeltaTable(table_path(opts), storage_options=storage_options(opts))
    start = opts.int("startingVersion")
    reader = dtab.load_cdf(starting_version=start or 0, ending_version=opts.int("endingVersion"),
                           starting_timestamp=opts.get("startingTimestamp"),
                           ending_timestamp=opts.get("endingTimestamp"))
    for batch in reader:
        batch = batch.select(target.names)
        yield _conform(batch, target)


def _filter_to_predicate(f: Any) -> Any:
    """A pushed-down Spark filter as a kernel predicate (None when not expressible)."""
    from pyspark.sql import datasource as ds

    from ...kernel.expressions import predicate as ex

    def col(attr: tuple[str, ...]) -> Any:
        return ex.Column(tuple(attr))

    try:
        if isinstance(f, ds.EqualTo):
            return ex.Comparison("=", col(f.attribute), ex.Literal(f.value))
        if isinstance(f, ds.GreaterThan):
            return ex.Comparison(">", col(f.attribute), ex.Literal(f.value))
        if isinstance(f, ds.GreaterThanOrEqual):
            return ex.Comparison(">=", col(f.attribute), ex.Literal(f.value))
        if isinstance(f, ds.LessThan):
            return ex.Comparison("<", col(f.attribute), ex.Literal(f.value))
        if isinstance(f, ds.LessThanOrEqual):
            return ex.Comparison("<=", col(f.attribute), ex.Literal(f.value))
        if isinstance(f, ds.IsNull):
            return ex.IsNull(col(f.attribute))
        if isinstance(f, ds.IsNotNull):
            return ex.IsNull(col(f.attribute), True)
        if isinstance(f, ds.In):
            return ex.In(col(f.attribute), tuple(f.value))
    except Exception:
        return None
    return None


# ----------------------------------------------------------------------------- writes
class DeltaSourceWriter(DataSourceArrowWriter):
    """append / overwrite through the Python data source API (mode error/ignore and partitionBy are
    refused by Spark before a Python source sees them: use `deltakernel.spark.write` or `enable()`)."""

    def __init__(self, opts: Options, schema: Any, overwrite: bool) -> None:
        from pyspark.sql import SparkSession

        from ..writing.writer import WritePlan, plan_write, write_arguments

        spark = SparkSession.getActiveSession()
        self.kwargs = write_arguments(spark, table_path(opts), "overwrite" if overwrite else "append", None, opts)
        from ..writing.writer import table_arrow_schema

        self.arrow_schema = table_arrow_schema(schema)
        md, proto = plan_write(self.kwargs, self.arrow_schema)
        self.metadata = md
        # identity columns the data does not supply: generated by each task (spark/identity.py)
        idents = idc.identities(md, proto)
        idc.check_explicit(self.arrow_schema.names, idents)
        self.generated = [i for i in idents if i.name.lower() not in {n.lower() for n in self.arrow_schema.names}]
        k = self.kwargs
        self.plan = WritePlan(table_uri(k["table_or_uri"]), k.get("storage_options"),
                              idc.task_metadata(md, self.generated), proto, k.get("predicate"),
                              k.get("max_rows_per_file"), None)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> DeltaCommitMessage:
        from ..common.task_errors import marked
        from ..writing.writer import write_batches

        with marked():
            batches = idc.generated_batches(iterator, self.generated) if self.generated else iterator
            adds, rows = write_batches(self.plan, batches)
        return DeltaCommitMessage(adds, rows)

    def commit(self, messages: list[Any]) -> None:
        from pyspark.sql import SparkSession

        from ...errors import CommitConflictError
        from ...operations.write.pipeline import execute_write
        from ...operations.write.request import WriteRequest

        # from here on the write pipeline owns the files: it deletes them only when its commit is known absent,
        # so Spark's abort() after a failed commit must not (the commit may have landed)
        self._commit_attempted = True
        adds = [a for m in messages if m is not None for a in m.adds]
        rows = sum(m.rows for m in messages if m is not None)

        def files(metadata: Any, protocol: Any) -> tuple[list[dict[str, Any]], int, dict[str, int]]:
            # (an identity high-water mark moved by another writer changes the schema string too: refused)
            if (metadata.schema_string, metadata.partition_columns) != (self.metadata.schema_string,
                                                                         self.metadata.partition_columns):
                raise CommitConflictError("the table's schema changed while the files were written; retry")
            marks = idc.high_water_marks(SparkSession.getActiveSession(), self.plan.table_uri, metadata,
                                         self.generated, adds) if self.generated else {}
            return adds, rows, marks

        kwargs = dict(self.kwargs)
        target = kwargs.pop("table_or_uri")
        execute_write(target, self.arrow_schema.empty_table(), WriteRequest.of(**kwargs), write_files=files)

    def abort(self, messages: list[Any]) -> None:
        from ...operations.files.dml_output import delete_quietly
        from ...storage import storage_for_uri

        if getattr(self, "_commit_attempted", False):
            return

        storage = storage_for_uri(self.plan.table_uri, self.plan.storage_options)
        delete_quietly(storage, [a["path"] for m in messages for a in (m.adds if m is not None else [])])


def python_source_frame(spark: Any, path: str, options: dict[str, str], snapshot: Any = None) -> Any:
    """A DataFrame read through the registered Python source (bypassing enable()'s routing); with the `snapshot`
    it reads (no change feed), its schema goes with the plan: Spark then does not start a Python worker to ask the
    source for it on every analysis (measured on Connect: a temporary view over a Delta table 125 -> 53 ms)."""
    register(spark)
    from ..kinds import kind_of

    schema = to_spark_schema(snapshot.schema).json() if snapshot is not None else None
    frame = kind_of(spark).sources.python_source_frame(SOURCE_NAME, path, options, schema)
    geo = session_geo_types(spark, snapshot.schema) if snapshot is not None else {}
    if geo:  # the source yields WKB; Spark's geometry/geography types where the session has them
        from pyspark.sql import functions as F

        names = [f.name for f in snapshot.schema.fields]  # the source's columns (no schema round trip)
        frame = frame.select(*[from_wkb(F.col(quote(n)), geo[n]).alias(n) if n in geo else F.col(quote(n))
                               for n in names])
    return frame


def register(spark: Any) -> None:
    """Register the source once per session (idempotent)."""
    if getattr(spark, "_deltakernel_registered", False):
        return
    spark.dataSource.register(DeltaDataSource)
    spark._deltakernel_registered = True


__all__ = ["DeltaDataSource", "SOURCE_NAME", "StructType", "python_source_frame", "register"]
