"""`df.writeStream.format("delta")`: the exactly-once Delta streaming sink (Spark 4's `DataSourceStreamArrowWriter`).

Per micro-batch, Spark builds a `DeltaStreamWriter` on the driver (the table's metadata is planned there, as for
a batch write: schema evolution with `mergeSchema`, column mapping, constraints, generated columns, partition
columns), executors write Parquet files with `write_batches` (writer.py) and return their add actions, and the
driver's `commit(messages, batchId)` makes ONE kernel commit: the adds (plus removes of every live file in
`complete` mode), and Delta's `txn` action `{appId: query id, version: batchId}` - delta-spark's
`STREAMING UPDATE`. A batch whose `txn` version is already in the table (a replay after a crash between the
commit and Spark's own checkpoint) is not committed again and its new files are deleted.

The query id: Spark does not pass it to Python sinks, but it keeps it in `<checkpointLocation>/metadata`
(`{"id": ...}`, written before the first batch and stable across restarts), and the `checkpointLocation`
option reaches the sink - so the appId is the same id delta-spark's sink uses. Option `txnAppId` overrides it
(a query whose checkpoint location is set through `spark.sql.streaming.checkpointLocation` must set it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter

from ...errors import CommitConflictError, DeltaError
from ..common.schema import Options, table_path, table_uri

_log = logging.getLogger(__name__)
OPERATION = "STREAMING UPDATE"
_TXN_OPTIONS = ("txnAppId", "txnVersion")


class DeltaStreamWriter(DataSourceStreamArrowWriter):
    """One micro-batch's write; see the module docstring. `overwrite` is Spark's flag for outputMode complete."""

    def __init__(self, opts: Options, schema: Any, overwrite: bool) -> None:
        from ..writing.writer import WritePlan, plan_write, table_arrow_schema, write_arguments

        self.opts = opts
        self.complete = bool(overwrite)
        plain = Options({k: v for k, v in opts.items() if k not in {t.lower() for t in _TXN_OPTIONS}})
        parts = _partition_columns(opts)
        self.kwargs = write_arguments(None, table_path(opts), "overwrite" if overwrite else "append", parts, plain)
        self.arrow_schema = table_arrow_schema(schema)
        self.metadata, protocol = plan_write(self.kwargs, self.arrow_schema)
        k = self.kwargs
        self.table_uri = table_uri(k["table_or_uri"])
        uri, options = self.table_uri, k.get("storage_options")
        if uri.lower().startswith("uc://"):
            # a catalog's table: tasks write files at its location with the catalog's vended credentials (no
            # catalog calls of their own); the commit goes through the catalog (`_storage`)
            storage = self._storage()
            uri, options = storage.root_uri, dict(getattr(storage, "storage_options", None) or {})
        self.plan = WritePlan(uri, options, self.metadata, protocol, None, k.get("max_rows_per_file"), None)

    # ------------------------------------------------------------------ executors
    def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
        from ..common.task_errors import marked
        from ..writing.task_payloads import DeltaCommitMessage
        from ..writing.writer import write_batches

        with marked():
            adds, rows = write_batches(self.plan, iterator)
        return DeltaCommitMessage(adds, rows)

    # ------------------------------------------------------------------ driver
    def _storage(self) -> Any:
        from ...storage import storage_for_uri

        return storage_for_uri(self.table_uri, self.kwargs.get("storage_options"))

    def app_id(self) -> str:
        """The query id (see the module docstring) or option txnAppId."""
        explicit = self.opts.get("txnAppId")
        if explicit:
            return str(explicit)
        return query_id(self.opts.get("checkpointLocation"))

    def commit(self, messages: list[Any], batchId: int) -> None:
        from ..common.task_errors import marked

        with marked():
            self._commit(messages, int(batchId))

    def _commit(self, messages: list[Any], batch_id: int) -> None:
        from ...kernel.transaction.transaction import Transaction as KernelTransaction
        from ...operations.commit_options import CommitProperties, Transaction, commit_with
        from ...operations.files.dml_output import delete_quietly
        from ...operations.write.overwrite import plan_overwrite
        from ...operations.write.pipeline import load_snapshot
        from ...operations.write.plan import plan_metadata
        from ..writing.writer import ENGINE_INFO

        adds = [a for m in messages if m is not None for a in m.adds]
        rows = sum(m.rows for m in messages if m is not None)
        paths = [a["path"] for a in adds]
        storage = self._storage()
        try:
            app_id = self.app_id()
            snapshot = load_snapshot(storage)
        except BaseException:
            delete_quietly(storage, paths)
            raise
        done = snapshot.txns.get(app_id) if snapshot is not None else None
        if done is not None and done.version >= batch_id:
            _log.info("batch %d of streaming query %s is already in %s (txn version %d): skipped", batch_id, app_id,
                      storage.root_uri, done.version)
            delete_quietly(storage, paths)
            return
        k = self.kwargs
        mode = "overwrite" if self.complete else "append"
        conf = {key: v for key, v in (k.get("configuration") or {}).items() if v is not None}
        txn = KernelTransaction(
            storage, snapshot, operation=OPERATION,
            operation_parameters={"outputMode": "Complete" if self.complete else "Append", "queryId": app_id,
                                  "epochId": str(batch_id)},
            engine_info=ENGINE_INFO,
        )
        try:
            metadata, protocol, new_meta = plan_metadata(snapshot, self.arrow_schema, k.get("partition_by"), mode,
                                                          k.get("schema_mode"), conf, None, None)
            if (metadata.schema_string, metadata.partition_columns) != (self.metadata.schema_string,
                                                                         self.metadata.partition_columns):
                raise CommitConflictError(f"the schema of {storage.root_uri} changed while batch {batch_id} was "
                                          "written; the query fails and a restart writes the batch again")
            if new_meta:
                txn.update_metadata(metadata)
            if snapshot is None or protocol != snapshot.protocol:
                txn.update_protocol(protocol)
            txn.add_files(adds)
            if self.complete and snapshot is not None:
                plan_overwrite(txn, snapshot, adds, None, None, "static", storage, None)
            txn.operation_metrics.update({
                "numAddedFiles": len(adds), "numRemovedFiles": len(txn.removes), "numOutputRows": rows,
                "numOutputBytes": sum(int(a.get("size") or 0) for a in adds),
            })
            meta = self.opts.get("userMetadata")
            props = CommitProperties(custom_metadata={"userMetadata": meta} if meta else None,
                                     app_transactions=[Transaction(app_id, batch_id)])
            version = commit_with(txn, props, None)
        except BaseException:
            if not txn.may_have_committed:  # known absent: the files are nobody's
                delete_quietly(storage, paths)
            raise
        _log.info("streaming query %s batch %d committed as version %d of %s (%d files, %d rows)", app_id, batch_id,
                  version, storage.root_uri, len(adds), rows)

    def abort(self, messages: list[Any], batchId: int) -> None:
        """Delete the batch's files unless the batch is in the table (a commit that raised may have landed)."""
        from ...operations.files.dml_output import delete_quietly
        from ...operations.write.pipeline import load_snapshot

        paths = [a["path"] for m in messages if m is not None for a in m.adds]
        if not paths:
            return
        storage = self._storage()
        try:
            snapshot = load_snapshot(storage)
            done = snapshot.txns.get(self.app_id()) if snapshot is not None else None
        except Exception:  # cannot tell: keep the files (orphans at worst, never missing data)
            return
        if done is not None and done.version >= int(batchId):
            return
        delete_quietly(storage, paths)


def _partition_columns(opts: Options) -> list[str] | None:
    """`partitionBy` as Spark hands it to sources (a JSON list under `__partition_columns`), if any."""
    raw = opts.get("__partition_columns") or opts.get("partitionBy")
    if not raw:
        return None
    try:
        cols = json.loads(raw)
    except ValueError:
        cols = [c.strip() for c in str(raw).split(",") if c.strip()]
    return [str(c) for c in cols] or None


def query_id(checkpoint_location: str | None) -> str:
    """The streaming query's id from its checkpoint (`<checkpointLocation>/metadata`, written by Spark)."""
    from ...storage import storage_for_uri

    if not checkpoint_location:
        raise DeltaError("the Delta streaming sink needs the query's checkpointLocation option (or option "
                         "txnAppId) to commit every batch exactly once")
    uri = table_uri(str(checkpoint_location))
    if uri.startswith("s3a://"):
        uri = "s3://" + uri[len("s3a://"):]
    try:
        raw = storage_for_uri(uri).read("metadata")
        qid = json.loads(raw).get("id")
    except Exception as e:
        raise DeltaError(f"cannot read the streaming query id from {checkpoint_location}/metadata: {e}") from e
    if not qid:
        raise DeltaError(f"{checkpoint_location}/metadata has no query id")
    return str(qid)


__all__ = ["DeltaStreamWriter", "OPERATION", "query_id"]
