"""The rows a small Spark upsert writes from the driver (`spark/dml/driver_rows.pick`), checked against the rule
`MergePlan.source_rows` states for Spark's write (no Spark here: Arrow data; tests/spark/test_spark_merge*.py run
the MERGEs): a source row is written once per pair of an updating clause, a source row in no pair once under its
first NOT MATCHED clause whose condition holds (NULL does not hold), pairs of other clauses (-1: no condition held;
a DELETE) write nothing. Also the Connect size estimate read off `explain(mode="cost")` text."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from deltakernel.spark.dml.driver_rows import pick
from deltakernel.spark.dml.facts_connect import _size_in_bytes

TARGET = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.float64())])


def _expected(updates, inserts, values, source, pairs):
    """The rule, row by row in Python."""
    by_sid: dict[int, list[int]] = {}
    for s, a in zip(pairs["sid"].to_pylist(), pairs["a"].to_pylist()):
        by_sid.setdefault(s, []).append(a)
    out = []
    for r in source.to_pylist():
        clauses = by_sid.get(r["__dk_sid"])
        if clauses:
            chosen = [a for a in clauses if a in updates]
        else:
            chosen = [next((i for i in inserts if r[f"__dk_c{i}"]), -1)]
            chosen = [c for c in chosen if c >= 0]
        for c in chosen:
            out.append(tuple(r[values[c][n]] if n in values[c] else None for n in TARGET.names))
    return sorted(out, key=repr)


def test_pick_follows_the_source_rows_rule() -> None:
    rng = np.random.default_rng(11)
    n = 300
    sid = (rng.permutation(n) * 3 + 2**33).astype(np.int64)  # sparse ids, as monotonically_increasing_id gives
    cond = rng.integers(0, 3, n)
    source = pa.table({
        "__dk_sid": pa.array(sid),
        "__dk_s0": pa.array(rng.integers(0, 1000, n), pa.int64()),
        "__dk_s1": pa.array([f"r{i}" for i in range(n)]),
        "__dk_s2": pa.array(rng.random(n)),
        "__dk_c3": pa.array([None if c == 0 else bool(c == 1) for c in cond], pa.bool_()),
        "__dk_c4": pa.array([True] * n),
    })
    matched = rng.choice(sid, 120)  # some source rows in several pairs
    pairs = pa.table({"sid": pa.array(matched), "a": pa.array(rng.choice([0, 1, 2, -1], 120).astype(np.int32))})
    every = {"id": "__dk_s0", "v": "__dk_s1", "w": "__dk_s2"}
    # clauses: 0 update *, 1 update * (second matched clause), 2 a matched DELETE, 3 insert * when cond,
    # 4 insert of (id, v) only
    values = [every, every, {}, every, {"id": "__dk_s0", "v": "__dk_s1"}]
    updates, inserts = [0, 1], [3, 4]
    got = pick(updates, inserts, values, source, pairs, TARGET)
    assert got.schema.names == TARGET.names
    assert [f.type for f in got.schema] == list(TARGET.types)
    rows = sorted((tuple(r.values()) for r in got.to_pylist()), key=repr)
    assert rows == _expected(updates, inserts, values, source, pairs)
    assert any(r[2] is None for r in rows)  # clause 4's rows: w not assigned


def test_pick_without_pairs_and_without_rows() -> None:
    source = pa.table({"__dk_sid": pa.array([1, 2], pa.int64()), "__dk_s0": pa.array([5, 6], pa.int64()),
                       "__dk_s1": pa.array(["a", "b"]), "__dk_s2": pa.array([0.5, 1.5]),
                       "__dk_c1": pa.array([False, True])})
    every = {"id": "__dk_s0", "v": "__dk_s1", "w": "__dk_s2"}
    got = pick([0], [1], [every, every], source, None, TARGET)
    assert got.to_pylist() == [{"id": 6, "v": "b", "w": 1.5}]
    nothing = pick([0], [], [every], source, None, TARGET)
    assert nothing.num_rows == 0 and nothing.schema.names == TARGET.names


def test_size_estimate_from_explain_text() -> None:
    text = ("== Optimized Logical Plan ==\nProject [id#1L], Statistics(sizeInBytes=1.5 MiB)\n"
            "+- Relation [id#1L] parquet, Statistics(sizeInBytes=90.0 GiB)\n")
    assert _size_in_bytes(text) == int(1.5 * 2**20)
    assert _size_in_bytes("Statistics(sizeInBytes=8.0 EiB)") == 8 * 2**60
    assert _size_in_bytes("Statistics(sizeInBytes=1.2e+20 B)") == 120_000_000_000_000_000_000
    assert _size_in_bytes("Statistics(sizeInBytes=312.0 B)") == 312
    assert _size_in_bytes("== Physical Plan ==\nno statistics") is None


def test_scan_task_returns_its_pairs_or_the_overflow_marker() -> None:
    """`touched._fetch_task`: a scan task hands its pairs `(fid, row, clause, sid)` to the driver in the fetched
    schema, all of them, or past its limit one row with a NULL file id (the driver then runs the DV job)."""
    from deltakernel.spark.dml.touched import _FETCHED_SCHEMA, _fetch_task

    def batch(fids: list[int]) -> pa.RecordBatch:  # Spark's types: int, long, int, long
        n = len(fids)
        return pa.RecordBatch.from_arrays(
            [pa.array(fids, pa.int32()), pa.array(range(n), pa.int64()), pa.array([0] * n, pa.int32()),
             pa.array(range(100, 100 + n), pa.int64())], names=["__dk_fid", "__dk_row", "a", "__dk_sid"])

    out = list(_fetch_task(5)(iter([batch([1, 1]), batch([]), batch([2, 3, 3])])))
    table = pa.Table.from_batches(out, schema=_FETCHED_SCHEMA)
    assert table.column("fid").to_pylist() == [1, 1, 2, 3, 3]
    assert table.column("sid").to_pylist() == [100, 101, 100, 101, 102]
    over = list(_fetch_task(4)(iter([batch([1, 1]), batch([2, 3, 3])])))
    assert len(over) == 1 and over[0].num_rows == 1 and over[0].column(0).null_count == 1
    assert list(_fetch_task(4)(iter([]))) == []
