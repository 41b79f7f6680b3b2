"""Concurrent writers with real processes on local disk and on an S3-compatible server (moto, loopback),
and the conflict matrix on the kernel Transaction."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
)
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.kernel.transaction.transaction import Transaction
from deltakernel.storage import storage_for_uri

PROCS = 4
APPENDS = 10


def _writer(uri: str, options: dict[str, str] | None, proc: int, n: int) -> None:
    for i in range(n):
        write_deltalake(uri, pa.table({"proc": [proc], "i": [i]}), mode="append", storage_options=options)


def _run_writers(uri: str, options: dict[str, str] | None) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(uri, options, p, APPENDS)) for p in range(PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0, f"writer exited with {p.exitcode}"


def _check(uri: str, options: dict[str, str] | None) -> None:
    t = DeltaTable(uri, storage_options=options)
    assert t.version() == PROCS * APPENDS  # version 0 created the table
    rows = sorted((r["proc"], r["i"]) for r in t.to_pyarrow_table().to_pylist())
    assert rows == sorted((p, i) for p in range(PROCS) for i in range(APPENDS))  # nothing lost or duplicated
    versions = [h["version"] for h in t.history()]
    assert versions == list(range(PROCS * APPENDS, -1, -1))  # contiguous
    for v in range(PROCS * APPENDS + 1):
        assert DeltaTable(uri, version=v, storage_options=options).count() == v


@pytest.mark.slow
def test_processes_append_concurrently_local(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"proc": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}))
    _run_writers(uri, None)
    _check(uri, None)


@pytest.mark.slow
def test_processes_append_concurrently_s3(s3_bucket: str, s3_options: dict[str, str]) -> None:
    uri = f"s3://{s3_bucket}/concurrent"
    write_deltalake(uri, pa.table({"proc": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}),
                    storage_options=s3_options)
    _run_writers(uri, s3_options)
    _check(uri, s3_options)


# ----------------------------------------------------------------------------- conflict matrix
@pytest.fixture()
def table(tmp_path: Path) -> str:
    uri = str(tmp_path / "m")
    write_deltalake(uri, pa.table({"p": ["a", "b"], "x": [1, 2]}), partition_by=["p"])
    return uri


def _txn(uri: str, **kw: Any) -> Transaction:
    storage = storage_for_uri(uri)
    return Transaction(storage, Snapshot.load(storage), operation="TEST", **kw)


def _add(path: str, p: str) -> dict[str, Any]:
    return {"path": path, "partitionValues": {"p": p}, "size": 1, "modificationTime": 0, "dataChange": True,
            "stats": '{"numRecords":1}'}


def _file_of(uri: str, p: str) -> dict[str, Any]:
    for r in Snapshot.load(storage_for_uri(uri)).files.to_pylist():
        if r["partition_values"]["p"] == p:
            return {"path": r["path"], "dataChange": True, "partitionValues": r["partition_values"],
                    "size": r["size"], "deletionTimestamp": 0}
    raise AssertionError(p)


def _winner_non_blind_add(uri: str, p: str) -> None:
    # an overwrite of partition p is not a blind append: its adds count against readers of p
    write_deltalake(uri, pa.table({"p": [p], "x": [9]}), mode="overwrite", predicate=f"p = '{p}'")


def test_blind_appends_rebase(table: str) -> None:
    t = _txn(table)
    t.add_files([_add("new1.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append")
    result = t.commit()
    assert result.version == 2 and result.retries == 1


def test_read_partition_vs_concurrent_add_same_partition(table: str) -> None:
    from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal

    t = _txn(table)
    t.read_predicate(Comparison("=", Column(("p",)), Literal("a")))
    t.add_files([_add("n.parquet", "a")])
    _winner_non_blind_add(table, "a")
    with pytest.raises(ConcurrentAppendError):
        t.commit()


def test_read_partition_vs_concurrent_add_other_partition_rebases(table: str) -> None:
    from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal

    t = _txn(table)
    t.read_predicate(Comparison("=", Column(("p",)), Literal("a")))
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["b"], "x": [9]}), mode="overwrite", predicate="p = 'b'")
    assert t.commit().version == 2


def test_blind_append_does_not_conflict_under_write_serializable(table: str) -> None:
    t = _txn(table)
    t.read_whole_table()
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append")
    assert t.commit().version == 2


def test_blind_append_conflicts_under_serializable(table: str) -> None:
    t = _txn(table, isolation_level="Serializable")
    t.read_whole_table()
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append")
    with pytest.raises(ConcurrentAppendError):
        t.commit()


def test_delete_read(table: str) -> None:
    f = _file_of(table, "a")
    t = _txn(table)
    t.read_files([f["path"]])
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [5]}), mode="overwrite", predicate="p = 'a'")
    with pytest.raises(ConcurrentDeleteReadError):
        t.commit()


def test_delete_delete(table: str) -> None:
    f = _file_of(table, "b")
    t = _txn(table)
    t.remove_files([f])
    write_deltalake(table, pa.table({"p": ["b"], "x": [5]}), mode="overwrite", predicate="p = 'b'")
    with pytest.raises(ConcurrentDeleteDeleteError):
        t.commit()


def test_metadata_changed(table: str) -> None:
    t = _txn(table)
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [1], "y": [1]}), mode="append", schema_mode="merge")
    with pytest.raises(MetadataChangedError):
        t.commit()


def test_protocol_changed(table: str) -> None:
    from deltakernel.kernel.log.actions import Protocol

    t = _txn(table)
    t.add_files([_add("n.parquet", "a")])
    w = _txn(table)
    w.update_protocol(Protocol(1, 4))
    w.commit()
    with pytest.raises(ProtocolChangedError):
        t.commit()


def test_same_app_transaction(table: str) -> None:
    from deltakernel import CommitProperties
    from deltakernel import Transaction as AppTxn

    t = _txn(table)
    t.set_app_transaction("etl", 7)
    t.add_files([_add("n.parquet", "a")])
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append",
                    commit_properties=CommitProperties(app_transactions=[AppTxn("etl", 7)]))
    with pytest.raises(ConcurrentTransactionError):
        t.commit()


def test_idempotent_app_transaction_is_skipped(table: str) -> None:
    from deltakernel import CommitProperties
    from deltakernel import Transaction as AppTxn

    props = CommitProperties(app_transactions=[AppTxn("job", 3)])
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append", commit_properties=props)
    write_deltalake(table, pa.table({"p": ["a"], "x": [3]}), mode="append", commit_properties=props)
    t = DeltaTable(table)
    assert t.version() == 1 and t.count() == 3
    assert t.transaction_versions() == {"job": 3}
