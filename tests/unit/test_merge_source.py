"""The MERGE source read once as a stream: kept in memory while small, spilled to a memory-mapped Arrow file
past the budget. A spilled source gives exactly the MERGE an in-memory one gives (both join paths: the
sorted single-key search and Arrow's hash join), and the spill directory is gone afterwards, also on error."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError
from deltakernel.operations.dml.merge.source import MergeSource

DV = {"delta.enableDeletionVectors": "true"}


def _reader(table: pa.Table, rows_per_batch: int = 7) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=rows_per_batch))


def _target(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "k2": pa.array([f"k{i % 3}" for i in range(n)]),
        "v": pa.array(ids * 10),
        "name": pa.array([None if i % 7 == 0 else f"n{i}" for i in range(n)]),
    })


def _source(n_target: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.concatenate([rng.choice(n_target, n_target // 4, replace=False),
                          np.arange(n_target, n_target + 20)]).astype(np.int64)
    rng.shuffle(ids)
    id_arr = pa.array(ids, mask=rng.random(ids.size) < 0.05)  # some NULL keys: never match
    return pa.table({
        "id": id_arr,
        "k2": pa.array([f"k{i % 3}" for i in ids]),
        "v": pa.array(rng.integers(-1000, 1000, ids.size)),
        "name": pa.array([f"src{i}" for i in ids]),
    })


def _rows(path: Path) -> list[dict]:
    t = DeltaTable(str(path)).to_pyarrow_table()
    return sorted(t.to_pylist(), key=lambda r: (r["id"] is None, r["id"] or 0, r["k2"], r["v"]))


def test_source_spills_past_the_budget_and_takes_in_order(tmp_path: Path) -> None:
    table = _source(200, seed=1)
    spill = tmp_path / "spill"
    spill.mkdir()
    src = MergeSource(_reader(table), memory_limit=0)
    import os

    old = os.environ.get("DELTAKERNEL_SPILL_DIR")
    os.environ["DELTAKERNEL_SPILL_DIR"] = str(spill)
    try:
        src.load(["id"])
    finally:
        if old is None:
            del os.environ["DELTAKERNEL_SPILL_DIR"]
        else:
            os.environ["DELTAKERNEL_SPILL_DIR"] = old
    assert src.spilled and src.spilled_bytes > 0
    assert list(spill.iterdir()), "the spill file lives in DELTAKERNEL_SPILL_DIR"
    assert src.num_rows == table.num_rows
    assert src.column("id").equals(table.column("id"))
    idx = np.random.default_rng(2).permutation(table.num_rows)[:97]
    assert src.take(idx).equals(table.take(pa.array(idx)))
    assert src.take(np.sort(idx)).equals(table.take(pa.array(np.sort(idx))))
    src.close()
    assert not list(spill.iterdir())


def test_small_stream_stays_in_memory() -> None:
    table = _source(50, seed=3)
    src = MergeSource(_reader(table))
    src.load(["id"])
    assert not src.spilled
    assert src.rows.equals(table)


def test_view_types_become_plain() -> None:
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array(["a", "b"], pa.string_view())})
    src = MergeSource(_reader(table, 1), memory_limit=0)
    src.load(["id"])
    assert src.schema.field("s").type == pa.large_string()
    assert src.take(np.array([1, 0])).column("s").to_pylist() == ["b", "a"]
    src.close()


@pytest.mark.parametrize("conf", [{}, DV], ids=["cow", "dv"])
@pytest.mark.parametrize("on", ["t.id = s.id", "t.id = s.id AND t.k2 = s.k2", "t.k2 = s.k2 AND t.id = s.id AND s.v > -500"],
                         ids=["one-key", "two-keys", "residual"])
def test_spilled_source_merges_like_an_in_memory_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     conf: dict, on: str) -> None:
    base = tmp_path / "base"
    target = _target(300)
    write_deltalake(str(base), target.slice(0, 150), configuration=conf or None)
    write_deltalake(str(base), target.slice(150), mode="append")
    source = _source(300, seed=4)
    results = []
    for mode in ("table", "spilled"):
        path = tmp_path / mode
        shutil.copytree(base, path)
        spill = tmp_path / f"spill-{mode}"
        spill.mkdir()
        monkeypatch.setenv("DELTAKERNEL_SPILL_DIR", str(spill))
        monkeypatch.setenv("DELTAKERNEL_MERGE_SOURCE_MEMORY", "0" if mode == "spilled" else str(1 << 30))
        data = source if mode == "table" else _reader(source)
        metrics = (DeltaTable(str(path)).merge(data, on, source_alias="s", target_alias="t")
                   .when_matched_update({"v": "s.v", "name": "s.name"}, predicate="s.v % 2 = 0")
                   .when_matched_delete(predicate="s.v % 3 = 0")
                   .when_not_matched_insert_all()
                   .execute())
        assert not list(spill.iterdir()), "spill removed after the MERGE"
        results.append(({k: v for k, v in metrics.items() if not k.endswith("_ms")}, _rows(path)))
    assert results[0] == results[1]
    m = results[0][0]
    assert m["num_source_rows"] == source.num_rows
    assert m["num_target_rows_updated"] > 0 and m["num_target_rows_deleted"] > 0 and m["num_target_rows_inserted"] > 0


def test_spill_removed_and_table_unchanged_on_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    write_deltalake(str(path), _target(40))
    before = _rows(path)
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setenv("DELTAKERNEL_SPILL_DIR", str(spill))
    monkeypatch.setenv("DELTAKERNEL_MERGE_SOURCE_MEMORY", "0")
    dup = pa.table({"id": pa.array([3, 3, 5], pa.int64()), "k2": ["a", "b", "c"], "v": [1, 2, 3], "name": ["x"] * 3})
    with pytest.raises(MergeDuplicateMatchError):
        DeltaTable(str(path)).merge(_reader(dup, 1), "t.id = s.id", source_alias="s", target_alias="t") \
            .when_matched_update_all().execute()
    assert not list(spill.iterdir())
    assert _rows(path) == before and DeltaTable(str(path)).version() == 0


def test_temporal_and_null_keys_use_the_sorted_search(tmp_path: Path) -> None:
    """Date keys take the binary-search path; NULL keys on either side never match (SQL equality)."""
    path = tmp_path / "t"
    days = pa.array([0, 1, 2, None, 4], pa.int32()).cast(pa.date32())
    write_deltalake(str(path), pa.table({"d": days, "v": [1, 2, 3, 4, 5]}))
    src = pa.table({"d": pa.array([1, None, 4, 9], pa.int32()).cast(pa.date32()), "v": [20, 40, 50, 90]})
    m = DeltaTable(str(path)).merge(_reader(src, 1), "t.d = s.d", source_alias="s", target_alias="t") \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    assert (m["num_target_rows_updated"], m["num_target_rows_inserted"]) == (2, 2)
    got = sorted(DeltaTable(str(path)).to_pyarrow_table().column("v").to_pylist())
    assert got == sorted([1, 20, 3, 4, 50, 40, 90])
