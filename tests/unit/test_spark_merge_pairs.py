"""The Spark MERGE's pairs as the deletion-vector job returns them and as the write looks them up (no Spark here:
the task-side functions on Arrow data; tests/spark/test_spark_merge_distributed.py runs them in Spark jobs).

A source row's clauses are exactly those of its pairs, in any order of the pairs, once per pair (a source row
matching several target rows is written once per target row); a row in no pair gets an empty list (inserted by
its NOT MATCHED clause); a task over its share of pairs returns the overflow marker, never part of them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from deltakernel.spark.dml.pair_clauses import lookup, sorted_pairs
from deltakernel.spark.dml.touched import _DV_PAIRS_SCHEMA, _pairs_batch


def _clauses_by_lookup(pairs: pa.Table, sids: list[int]) -> list[list[int]]:
    keys, values = sorted_pairs(pairs)
    return lookup(keys, values, pa.array(sids, pa.int64())).to_pylist()


def test_lookup_gives_each_source_row_the_clauses_of_its_pairs() -> None:
    rng = np.random.default_rng(7)
    sid = rng.integers(0, 50, 400).astype(np.int64)  # repeated ids: a source row in several pairs
    clause = rng.integers(-1, 3, 400).astype(np.int32)
    pairs = pa.table({"sid": pa.array(sid), "a": pa.array(clause)})
    queried = list(range(-3, 60)) + [2**40 + 5, 0, 0]  # ids in no pair, beyond the last, and asked twice
    got = _clauses_by_lookup(pairs, queried)
    for s, found in zip(queried, got):
        assert sorted(found) == sorted(clause[sid == s].tolist()), s


def test_lookup_without_pairs_and_in_batches() -> None:
    empty = pa.table({"sid": pa.array([], pa.int64()), "a": pa.array([], pa.int32())})
    assert _clauses_by_lookup(empty, [0, 1, 2]) == [[], [], []]
    pairs = pa.table({"sid": pa.array([5, 3, 5], pa.int64()), "a": pa.array([1, 0, 2], pa.int32())})
    assert _clauses_by_lookup(pairs, []) == []
    out = _clauses_by_lookup(pairs, [5, 4, 3])
    assert [sorted(x) for x in out] == [[1, 2], [], [0]]
    keys, values = sorted_pairs(pairs)
    arr = lookup(keys, values, pa.array([3, 5], pa.int64()))
    assert arr.type == pa.list_(pa.int32())


def test_task_pairs_batch_and_overflow_marker() -> None:
    batch = _pairs_batch([np.array([4, 9], np.int64), np.array([1], np.int64)],
                         [np.array([0, 1], np.int32), np.array([-1], np.int32)], limit=3)
    assert batch.schema == _DV_PAIRS_SCHEMA
    table = pa.Table.from_batches([batch])
    assert table.column("fid").null_count == 3  # pair rows are told from file rows by a NULL file id
    assert table.select(["sid", "a"]).to_pylist() == [{"sid": 4, "a": 0}, {"sid": 9, "a": 1}, {"sid": 1, "a": -1}]
    over = pa.Table.from_batches([_pairs_batch([np.array([4, 9], np.int64)], [np.array([0, 1], np.int32)],
                                               limit=1)])
    assert over.num_rows == 1 and over.column("fid").null_count == 1 and over.column("sid").null_count == 1
    none = pa.Table.from_batches([_pairs_batch([], [], limit=1)])
    assert none.num_rows == 0
