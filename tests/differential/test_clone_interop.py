"""Shallow clones read by other engines: the add paths our shallow clone writes (percent-encoded absolute paths
for local files, `file:///` URIs for deletion vectors) are read by deltalake's DataFusion scan (QueryBuilder)
and DuckDB's delta extension, before and after the clone is written to. Which absolute forms each reader
accepts is pinned here, so a change in a reader shows up (docs/decisions.md "Shallow clone paths")."""

from __future__ import annotations

import json
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import helpers

from deltakernel import DeltaTable, write_deltalake

deltalake = pytest.importorskip("deltalake")


def _querybuilder(uri: str | Path) -> pa.Table:
    """deltalake's DataFusion scan (delta-kernel-rs resolves add paths as URLs against the table root)."""
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(uri)))
    return pa.table(qb.execute("SELECT * FROM t").read_all())


def _assert_read_by_all(uri: str | Path, expected: pa.Table, what: str) -> None:
    helpers.assert_same_rows(DeltaTable(str(uri)).to_pyarrow_table(), expected, f"{what}: deltakernel")
    helpers.assert_same_rows(_querybuilder(uri), expected, f"{what}: deltalake QueryBuilder")
    helpers.assert_same_rows(helpers.duckdb_table(uri), expected, f"{what}: DuckDB")


def _source(root: Path) -> DeltaTable:
    """A partitioned source with deletion vectors, URI-special characters in its directory and values."""
    uri = root / "src dir %x"
    data = pa.table({"id": pa.array(range(40), pa.int64()), "p": [f"c d{i % 3}" for i in range(40)],
                     "s": [f"v{i}" for i in range(40)]})
    write_deltalake(uri, data, partition_by=["p"], configuration={"delta.enableDeletionVectors": "true"})
    write_deltalake(uri, data.slice(0, 5), mode="append")
    DeltaTable(str(uri)).delete("id = 4 OR id = 7")  # DVs on two files
    DeltaTable(str(uri)).delete("id = 8")  # one DV replaced
    return DeltaTable(str(uri))


def _adds(uri: str | Path, version: int) -> list[dict[str, Any]]:
    return [a["add"] for a in helpers.read_actions(uri, version) if "add" in a]


def test_shallow_clone_is_read_by_deltalake_and_duckdb(tmp_path: Path) -> None:
    src = _source(tmp_path)
    clone = src.clone(str(tmp_path / "clone"))
    adds = _adds(clone.table_uri, 0)
    src_dir = urllib.parse.quote(str(Path(src.table_uri)))
    assert all(a["path"].startswith(src_dir + "/p=c%20d") for a in adds), adds[0]["path"]
    dvs = [a["deletionVector"] for a in adds if a.get("deletionVector")]
    src_dvs = src.snapshot.files.column("deletion_vector")
    assert len(dvs) == len(src_dvs) - src_dvs.null_count == 3
    assert all(d["storageType"] == "p" and d["pathOrInlineDv"].startswith("file:///") for d in dvs)
    expected = src.to_pyarrow_table()
    assert expected.num_rows == 45 - 4  # 40 rows + 5 appended copies, minus ids 4 (twice), 7 and 8
    _assert_read_by_all(clone.table_uri, expected, "shallow clone")
    rows = helpers.duckdb_connection().execute(
        "SELECT id FROM delta_scan(?) WHERE p = 'c d1' ORDER BY id", [clone.table_uri]).fetchall()
    want = sorted(i for i, p in zip(expected.column("id").to_pylist(), expected.column("p").to_pylist())
                  if p == "c d1")
    assert [r[0] for r in rows] == want


def test_shallow_clone_at_a_version_then_written_to(tmp_path: Path) -> None:
    """A clone of an older version, then appended to, deleted from (a DV in the clone on a source file) and
    updated copy-on-write: every reader still agrees, and the source is untouched."""
    src = _source(tmp_path)
    at = src.version() - 2
    clone = src.clone(str(tmp_path / "clone"), version=at)
    expected_src = src.to_pyarrow_table()
    _assert_read_by_all(clone.table_uri, DeltaTable(src.table_uri, version=at).to_pyarrow_table(), "at a version")
    write_deltalake(clone.table_uri, pa.table({"id": pa.array([100, 101], pa.int64()), "p": ["c d0", "new"],
                                               "s": ["x", "y"]}), mode="append")
    DeltaTable(clone.table_uri).delete("id = 10")  # merge-on-read: DV in the clone for a source data file
    new_dv = [a for a in _adds(clone.table_uri, 2) if a.get("deletionVector")]
    assert new_dv and new_dv[0]["path"].startswith("/") and new_dv[0]["deletionVector"]["storageType"] == "u"
    DeltaTable(clone.table_uri).update(updates={"s": "'changed'"}, predicate="id = 11")
    expected = DeltaTable(clone.table_uri).to_pyarrow_table()
    assert 10 not in expected.column("id").to_pylist() and 100 in expected.column("id").to_pylist()
    _assert_read_by_all(clone.table_uri, expected, "written clone")
    helpers.assert_same_rows(src.to_pyarrow_table(), expected_src, "the source is unchanged")


def _rewrite_paths(clone: Path, form: str) -> None:
    """Rewrite the clone's add paths into another absolute form (as other writers would have written them)."""
    actions = helpers.read_actions(clone, 0)
    for a in actions:
        if "add" in a:
            path = a["add"]["path"]
            assert path.startswith("/")
            a["add"]["path"] = {"bare": path, "file1": "file:" + path, "file3": "file://" + path,
                                "localhost": "file://localhost" + path}[form]
    helpers.write_actions(clone, 0, actions)
    crc = clone / "_delta_log" / f"{0:020d}.crc"
    crc.unlink(missing_ok=True)


@pytest.mark.parametrize("form", ["bare", "file1", "file3", "localhost"])
def test_which_absolute_forms_each_reader_accepts(tmp_path: Path, form: str) -> None:
    """Our reader and deltalake's DataFusion scan accept every absolute form; DuckDB's delta extension joins
    `file:` URIs to the table root (duckdb/duckdb-delta#74) and reads only plain absolute paths, which is why
    the clone writes those."""
    src = tmp_path / "src"
    data = pa.table({"id": pa.array(range(12), pa.int64()), "p": [f"k{i % 2}" for i in range(12)]})
    write_deltalake(src, data, partition_by=["p"])
    clone = tmp_path / "clone"
    DeltaTable(str(src)).clone(str(clone))
    _rewrite_paths(clone, form)
    helpers.assert_same_rows(DeltaTable(str(clone)).to_pyarrow_table(), data, f"{form}: deltakernel")
    helpers.assert_same_rows(_querybuilder(clone), data, f"{form}: deltalake QueryBuilder")
    if form == "bare":
        helpers.assert_same_rows(helpers.duckdb_table(clone), data, "bare: DuckDB")
    else:
        with pytest.raises(Exception, match="(?i)no such file|cannot open"):
            helpers.duckdb_table(clone)


def test_deltalake_pyarrow_path_cannot_read_any_absolute_form(tmp_path: Path) -> None:
    """deltalake's `to_pyarrow_table` / `file_uris` join the add path to the table root whatever its form
    (delta-io/delta-rs#865, open): a limitation of that reader, not of the clone. If this fails, deltalake
    learned absolute paths: update docs/decisions.md."""
    src = tmp_path / "src"
    write_deltalake(src, pa.table({"id": pa.array([1, 2], pa.int64())}))
    clone = tmp_path / "clone"
    DeltaTable(str(src)).clone(str(clone))
    uri = str(deltalake.DeltaTable(str(clone)).file_uris()[0])
    assert uri.startswith(str(clone)) and str(src) in uri  # <clone root>/<absolute path>
    with pytest.raises(Exception, match="not found"):
        deltalake.DeltaTable(str(clone)).to_pyarrow_table()


def test_deep_clone_stays_readable_everywhere(tmp_path: Path) -> None:
    src = _source(tmp_path)
    deep = src.clone(str(tmp_path / "deep"), shallow=False)
    assert all(not a["path"].startswith(("/", "file:")) for a in _adds(deep.table_uri, 0))
    _assert_read_by_all(deep.table_uri, src.to_pyarrow_table(), "deep clone")
    assert json.loads((Path(deep.table_uri) / "_delta_log" / f"{0:020d}.crc").read_text())["numFiles"] == len(
        src.files())
