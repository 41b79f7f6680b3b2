"""`write_deltalake(dt, ...)` reads at `dt`'s version (later commits are conflict-checked, not absorbed)
and leaves `dt` at the version it committed, as deltalake does."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import CommitConflictError


def _v(values: list[int]) -> pa.Table:
    return pa.table({"v": pa.array(values, pa.int64())})


def test_overwrite_through_a_stale_table_conflicts(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    dt = DeltaTable(p)
    write_deltalake(p, _v([2]), mode="overwrite")  # another writer, after dt was loaded
    with pytest.raises(CommitConflictError):
        write_deltalake(dt, _v([3]), mode="overwrite")  # it read version 0, whose file was removed at 1
    assert DeltaTable(p).version() == 1
    assert DeltaTable(p).to_pyarrow_table().column("v").to_pylist() == [2]
    assert dt.version() == 0


def test_overwrite_through_a_stale_table_keeps_a_concurrent_blind_append(tmp_path: Path) -> None:
    """WriteSerializable (Delta's default): the overwrite replaces what it read at dt's version; a blind
    append committed meanwhile is not something it read, so it survives (refreshing dt first would drop it)."""
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    dt = DeltaTable(p)
    write_deltalake(p, _v([2]), mode="append")
    write_deltalake(dt, _v([3]), mode="overwrite")
    assert dt.version() == 2
    assert sorted(DeltaTable(p).to_pyarrow_table().column("v").to_pylist()) == [2, 3]


def test_blind_append_through_a_stale_table_rebases_and_updates_it(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    dt = DeltaTable(p)
    write_deltalake(p, _v([2]), mode="append")
    write_deltalake(dt, _v([3]), mode="append")
    assert dt.version() == 2
    assert sorted(dt.to_pyarrow_table().column("v").to_pylist()) == [1, 2, 3]
    history = DeltaTable(p).history()
    assert history[0]["readVersion"] == 0  # the transaction read at dt's version


def test_table_at_an_old_version_is_not_refreshed_before_writing(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write_deltalake(p, _v([1]))
    write_deltalake(p, _v([2]), mode="overwrite")
    dt = DeltaTable(p, version=0)
    with pytest.raises(CommitConflictError):
        write_deltalake(dt, _v([9]), mode="overwrite", predicate="v >= 0")
    assert DeltaTable(p).version() == 1
