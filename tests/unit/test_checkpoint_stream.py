"""Checkpoint file actions are streamed in small batches and filtered against newer commits.

The batch size is forced down to a few rows so that every checkpoint here spans many batches, and the
results are compared with deltalake's view of the same table and with the unbatched result.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.checkpoints import read as checkpoint_read


def _make_table(path: Path, *, partitioned: bool) -> None:
    for i in range(23):
        data = pa.table({"id": pa.array([i * 10 + j for j in range(3)], pa.int64()),
                         "part": pa.array([f"p{i % 4}"] * 3)})
        write_deltalake(path, data, mode="append", partition_by=["part"] if partitioned else None)
    DeltaTable(path).create_checkpoint()  # version 22: 23 adds in the checkpoint
    # newer commits remove checkpoint files (overwrite with a predicate) and add new ones
    write_deltalake(path, pa.table({"id": pa.array([5], pa.int64()), "part": pa.array(["p1"])}),
                    mode="overwrite", predicate="part = 'p1'")
    write_deltalake(path, pa.table({"id": pa.array([7], pa.int64()), "part": pa.array(["p2"])}), mode="append")


def _state(path: Path) -> tuple[list[str], list[str], list[int]]:
    dt = DeltaTable(path)
    snap = dt._snapshot
    files = sorted(snap.files.column("path").to_pylist())
    tombs = sorted(snap.tombstones.column("path").to_pylist())
    ids = sorted(dt.to_pyarrow_table().column("id").to_pylist())
    return files, tombs, ids


@pytest.mark.parametrize("partitioned", [False, True])
def test_small_batches_match_unbatched_and_deltalake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     partitioned: bool) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = tmp_path / "t"
    _make_table(path, partitioned=partitioned)
    whole = _state(path)
    monkeypatch.setattr(checkpoint_read, "_BATCH_ROWS", 2)
    batched = _state(path)
    assert batched == whole

    files, tombs, ids = batched
    oracle = deltalake.DeltaTable(str(path))
    prefix = str(path).rstrip("/") + "/"
    assert files == sorted(unquote(u.split(prefix, 1)[1]) for u in oracle.file_uris())
    assert ids == sorted(oracle.to_pyarrow_table().column("id").to_pylist())
    # the p1 files of the checkpoint were removed by the overwrite: they are tombstones now, not live files
    assert len(files) == 23 - 6 + 2 and len(tombs) >= 6
    assert not set(files) & set(tombs)


def test_small_batches_keep_stats_and_partition_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t"
    _make_table(path, partitioned=True)
    expected = DeltaTable(path)._snapshot.files.sort_by("path")
    monkeypatch.setattr(checkpoint_read, "_BATCH_ROWS", 3)
    got = DeltaTable(path)._snapshot.files
    assert got.num_rows == expected.num_rows
    got = got.sort_by("path")
    for name in ("path", "partition_values", "size", "stats"):
        assert got.column(name).to_pylist() == expected.column(name).to_pylist()
    # filters still skip on the streamed stats and partition values
    assert DeltaTable(path).to_pyarrow_table(filters=[("part", "=", "p0")]).num_rows == 6 * 3
