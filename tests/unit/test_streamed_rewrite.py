"""Copy-on-write DELETE / UPDATE stream each touched file in pieces (`Scan.read_file_pieces`) instead of
reading it whole, so a rewrite's memory does not grow with the file. Pieces of 7 rows here (files of ~90 rows)
must give exactly what whole-file reads give: the rows a pyarrow model expects, and the same change data, row
ids and metrics as a run with one piece per file (deltalake cannot write tables with row tracking)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import assert_same_rows, dml_data

import deltakernel.operations.dml.rewrite as rewrite_mod
from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.scan.scan import Scan

CONF = {"delta.enableChangeDataFeed": "true", "delta.enableRowTracking": "true"}


def _table(path: Path, configuration: dict[str, str] | None = None, partitioned: bool = False) -> None:
    for i in range(3):
        write_deltalake(str(path), dml_data(90, 90 * i), mode="append", partition_by=["p"] if partitioned else None,
                        configuration=configuration if i == 0 else None)


def _with_row_ids(path: Path) -> pa.Table:
    dt = DeltaTable(str(path))
    return Scan(dt.snapshot, row_tracking=True).to_table().sort_by("id")


def test_pieces_equal_whole_file_with_deletion_vector_and_row_tracking(tmp_path: Path) -> None:
    t = tmp_path / "t"
    _table(t, {"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"})
    DeltaTable(str(t)).delete("id % 3 = 1")  # deletion vectors on every file
    snap = DeltaTable(str(t)).snapshot
    scan = Scan(snap, row_tracking=True)
    tasks = snap.files.to_pylist()
    assert all(task["deletion_vector"] for task in tasks)
    for task in tasks:
        whole = scan.read_file(dict(task))
        pieces = list(scan.read_file_pieces(dict(task), 7))
        assert len(pieces) == -(-90 // 7)
        assert pa.concat_tables(pieces).equals(whole)


@pytest.mark.parametrize("partitioned", [False, True])
def test_streamed_delete_matches_deltalake_and_whole_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           partitioned: bool) -> None:
    base = tmp_path / "base"
    _table(base, CONF, partitioned)
    for name in ("whole", "pieces"):
        shutil.copytree(base, tmp_path / name)
    before = _with_row_ids(base)
    m_whole = DeltaTable(str(tmp_path / "whole")).delete("id % 4 = 1 or v is null")
    monkeypatch.setattr(rewrite_mod, "PIECE_ROWS", 7)
    m_pieces = DeltaTable(str(tmp_path / "pieces")).delete("id % 4 = 1 or v is null")
    for key in ("num_deleted_rows", "num_copied_rows", "num_removed_files", "num_added_files"):
        assert m_pieces[key] == m_whole[key], key
    rows = before.drop_columns(["_row_id", "_row_commit_version"])
    gone = pc.or_kleene(pc.equal(pc.subtract(rows["id"], pc.multiply(pc.divide(rows["id"], 4), 4)), 1),
                        pc.is_null(rows["v"]))
    assert m_pieces["num_deleted_rows"] == pc.sum(gone.cast("int64")).as_py() > 0
    assert_same_rows(DeltaTable(str(tmp_path / "pieces")).to_pyarrow_table(), rows.filter(pc.invert(gone)))
    # survivors keep their row ids and commit versions
    after = _with_row_ids(tmp_path / "pieces")
    kept = before.filter(pc.is_in(before["id"], after["id"]))
    assert after["_row_id"].equals(kept["_row_id"])
    assert after["_row_commit_version"].equals(kept["_row_commit_version"])
    cdf_whole = DeltaTable(str(tmp_path / "whole")).load_cdf(starting_version=3).read_all()
    cdf_pieces = DeltaTable(str(tmp_path / "pieces")).load_cdf(starting_version=3).read_all()
    assert cdf_pieces.num_rows == m_pieces["num_deleted_rows"]
    assert_same_rows(cdf_pieces.drop_columns(["_commit_timestamp"]), cdf_whole.drop_columns(["_commit_timestamp"]))


def test_streamed_update_matches_deltalake_and_whole_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "base"
    _table(base, CONF)
    for name in ("whole", "pieces"):
        shutil.copytree(base, tmp_path / name)
    before = _with_row_ids(base)
    updates = {"v": "v + 1", "s": "'updated'"}
    pred = "id % 5 = 2"
    m_whole = DeltaTable(str(tmp_path / "whole")).update(updates=updates, predicate=pred)
    monkeypatch.setattr(rewrite_mod, "PIECE_ROWS", 7)
    import deltakernel.operations.dml.update as update_mod
    monkeypatch.setattr(update_mod, "PIECE_ROWS", 7)
    m_pieces = DeltaTable(str(tmp_path / "pieces")).update(updates=updates, predicate=pred)
    for key in ("num_updated_rows", "num_copied_rows", "num_removed_files", "num_added_files"):
        assert m_pieces[key] == m_whole[key], key
    after = _with_row_ids(tmp_path / "pieces")
    rows = before.drop_columns(["_row_id", "_row_commit_version"])
    hit = pc.equal(pc.subtract(rows["id"], pc.multiply(pc.divide(rows["id"], 5), 5)), 2)
    expected = rows.set_column(2, "v", pc.if_else(hit, pc.add(rows["v"], 1.0), rows["v"])).set_column(
        3, "s", pc.if_else(hit, pa.scalar("updated"), rows["s"]))
    assert m_pieces["num_updated_rows"] == pc.sum(hit.cast("int64")).as_py() > 0
    assert_same_rows(after.drop_columns(["_row_id", "_row_commit_version"]), expected)
    assert after["_row_id"].equals(before["_row_id"])  # updated rows keep their ids too
    changed = pc.equal(pc.subtract(after["id"], pc.multiply(pc.divide(after["id"], 5), 5)), 2)
    assert pc.all(pc.equal(after.filter(changed)["_row_commit_version"], 3)).as_py()
    assert after.filter(pc.invert(changed))["_row_commit_version"].equals(
        before.filter(pc.invert(changed))["_row_commit_version"])
    cdf_whole = DeltaTable(str(tmp_path / "whole")).load_cdf(starting_version=3).read_all()
    cdf_pieces = DeltaTable(str(tmp_path / "pieces")).load_cdf(starting_version=3).read_all()
    assert cdf_pieces.num_rows == 2 * m_pieces["num_updated_rows"]
    assert_same_rows(cdf_pieces.drop_columns(["_commit_timestamp"]), cdf_whole.drop_columns(["_commit_timestamp"]))


def test_producer_error_surfaces_and_table_is_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while a file is streamed fails the UPDATE with that error; nothing commits, no file is left."""
    t = tmp_path / "t"
    _table(t)
    import deltakernel.operations.dml.update as update_mod

    def broken(self: Scan, task: dict, rows: int = 7):  # type: ignore[no-untyped-def]
        yield Scan.read_file(self, task).slice(0, 7)
        raise OSError("disk went away")

    monkeypatch.setattr(update_mod.Scan, "read_file_pieces", broken)
    version = DeltaTable(str(t)).version()
    with pytest.raises(OSError, match="disk went away"):
        DeltaTable(str(t)).update(updates={"v": "0"}, predicate="id > 3")
    assert DeltaTable(str(t)).version() == version
    assert sorted(p.name for p in t.glob("*.parquet")) == sorted(
        Path(a).name for a in DeltaTable(str(t)).file_uris())


@pytest.mark.parametrize("dv", [False, True])
def test_streamed_merge_matches_whole_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dv: bool) -> None:
    """MERGE with updates, deletes and inserts: rows, change data, row ids and metrics do not depend on the
    piece size (copy-on-write streams pieces; with deletion vectors files are read whole)."""
    base = tmp_path / "base"
    _table(base, {**CONF, "delta.enableDeletionVectors": str(dv).lower()})
    for name in ("whole", "pieces"):
        shutil.copytree(base, tmp_path / name)
    before = _with_row_ids(base)
    source = pa.table({"id": pa.array([*range(1, 270, 9), *range(300, 310)], pa.int64()),
                       "v": pa.array([float(i) for i in range(40)])})

    def merge(path: Path) -> dict:  # type: ignore[type-arg]
        return (DeltaTable(str(path)).merge(source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_delete("t.id % 2 = 0").when_matched_update({"v": "s.v", "s": "'merged'"})
                .when_not_matched_insert({"id": "s.id", "v": "s.v", "p": "'n'"}).execute())

    m_whole = merge(tmp_path / "whole")
    import deltakernel.operations.dml.merge.execute as merge_exec_mod
    monkeypatch.setattr(merge_exec_mod, "PIECE_ROWS", 7)
    m_pieces = merge(tmp_path / "pieces")
    for key in ("num_target_rows_updated", "num_target_rows_deleted", "num_target_rows_inserted",
                "num_target_rows_copied", "num_target_files_removed", "num_target_files_added"):
        assert m_pieces[key] == m_whole[key], key
    assert m_pieces["num_target_rows_updated"] == 15 and m_pieces["num_target_rows_deleted"] == 15
    whole, pieces = _with_row_ids(tmp_path / "whole"), _with_row_ids(tmp_path / "pieces")
    assert_same_rows(pieces.drop_columns(["_row_commit_version"]), whole.drop_columns(["_row_commit_version"]))
    kept = before.filter(pc.is_in(before["id"], pieces["id"]))
    assert pieces.filter(pc.is_in(pieces["id"], before["id"]))["_row_id"].equals(kept["_row_id"])
    cdf = [DeltaTable(str(tmp_path / n)).load_cdf(starting_version=3).read_all().drop_columns(["_commit_timestamp"])
           for n in ("whole", "pieces")]
    assert cdf[1].num_rows == 15 + 2 * 15 + 10
    assert_same_rows(cdf[1], cdf[0])


@pytest.mark.parametrize("op", ["delete", "update", "merge"])
def test_a_file_shorter_than_the_log_says_fails_and_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    op: str) -> None:
    """A streamed file that yields fewer live rows than the log promised (changed underneath) fails the operation
    with a DeltaError naming the file; nothing commits."""
    from deltakernel import DeltaError

    t = tmp_path / "t"
    _table(t)
    original = Scan.read_file_pieces

    def short(self: Scan, task: dict, rows: int = 7):  # type: ignore[no-untyped-def]
        pieces = list(original(self, task, rows))
        yield from pieces[:-1]

    monkeypatch.setattr(Scan, "read_file_pieces", short)
    version = DeltaTable(str(t)).version()
    with pytest.raises(DeltaError, match=r"data file .*\.parquet changed while it was rewritten"):
        dt = DeltaTable(str(t))
        if op == "delete":
            dt.delete("id % 4 = 1")
        elif op == "update":
            dt.update(updates={"v": "0"}, predicate="id % 4 = 1")
        else:
            dt.merge(pa.table({"id": pa.array([1, 5], pa.int64())}), "t.id = s.id", source_alias="s",
                     target_alias="t").when_matched_delete().execute()
    assert DeltaTable(str(t)).version() == version


def test_pool_memory_returned_while_a_delete_streams(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`live_pieces(release_rows=n)` hands the pool's free memory back after about every n rows; the DELETE
    rewrite asks for it (same rows as without), and the pieces still add up."""
    pieces = [pa.table({"x": pa.array(range(i * 5, i * 5 + 5))}) for i in range(7)]
    calls: list[int] = []

    class Pool:
        def release_unused(self) -> None:
            calls.append(1)

    monkeypatch.setattr(rewrite_mod.pa, "default_memory_pool", lambda: Pool())
    got = list(rewrite_mod.live_pieces("f", iter(pieces), 35, release_rows=10))
    assert [o for o, _ in got] == [0, 5, 10, 15, 20, 25, 30]
    assert len(calls) == 3  # after rows 10, 20, 30
    calls.clear()
    assert len(list(rewrite_mod.live_pieces("f", iter(pieces), 35))) == 7 and calls == []
    monkeypatch.setattr(rewrite_mod, "PIECE_ROWS", 7)
    monkeypatch.setattr(rewrite_mod, "RELEASE_ROWS", 14)
    t = tmp_path / "t"
    _table(t)
    DeltaTable(str(t)).delete("id % 4 = 1")
    assert calls, "the DELETE rewrite released pool memory"
    assert DeltaTable(str(t)).to_pyarrow_table().num_rows == 270 - len([i for i in range(270) if i % 4 == 1])
