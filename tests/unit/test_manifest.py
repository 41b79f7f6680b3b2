"""Symlink format manifests (operations/manifest.py): read back the way Presto / Athena read them - the files a
manifest lists, partition values from the manifest's directory - and compared with deltalake's read."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, UnsupportedFeatureError
from deltakernel.operations.files.layout import unescape_path_name
from deltakernel.operations.maintenance.manifest import MANIFEST_DIR, generate


def _manifests(table: Path) -> dict[str, list[str]]:
    root = table / MANIFEST_DIR
    return {str(p.parent.relative_to(root)): p.read_text().splitlines() for p in root.rglob("manifest")}


def _read_like_presto(table: Path, partition_cols: list[str]) -> pa.Table:
    """Rows of every file every manifest lists, plus the partition columns its directory names."""
    parts = []
    for rel, lines in _manifests(table).items():
        values = {}
        if rel != ".":
            for piece in rel.split("/"):
                k, _, v = piece.partition("=")
                values[unescape_path_name(k)] = None if v == "__HIVE_DEFAULT_PARTITION__" else unescape_path_name(v)
        for line in lines:
            assert line.startswith("file:/") and not line.startswith("file://")
            data = pq.read_table(line[len("file:"):])
            for c in partition_cols:
                data = data.append_column(c, pa.array([values[c]] * data.num_rows, pa.string()))
            parts.append(data)
    return pa.concat_tables(parts)


def test_partitioned_manifest_lists_every_live_file(tmp_path):
    path = tmp_path / "t"
    data = pa.table({"id": pa.array(range(12), pa.int64()),
                     "p": ["a", "b", None, "x:y/z", "a", "b", None, "x:y/z", "a", "b", "", "a"]})
    write_deltalake(str(path), data, partition_by=["p"])
    write_deltalake(str(path), data.slice(0, 4), partition_by=["p"], mode="append")
    stats = generate(DeltaTable(str(path))._snapshot, "symlink_format_manifest")
    manifests = _manifests(path)
    assert stats == {"filesWritten": len(manifests), "filesDeleted": 0, "partitioned": True}
    # one manifest per partition holding files; null and '' share Hive's default partition
    assert sorted(manifests) == sorted(["p=a", "p=b", "p=__HIVE_DEFAULT_PARTITION__", "p=x%3Ay%2Fz"])
    import deltalake

    live = set(deltalake.DeltaTable(str(path)).file_uris())  # the oracle's absolute paths of the live files
    listed = {line[len("file:"):] for lines in manifests.values() for line in lines}
    assert listed == live
    expected = helpers.deltalake_table(path)
    got = _read_like_presto(path, ["p"])
    # Hive reads the empty string partition as null, as it does for the data Delta wrote there
    expected = expected.set_column(expected.schema.get_field_index("p"), "p",
                                   pc.if_else(pc.equal(expected.column("p"), ""), None, expected.column("p")))
    helpers.assert_same_rows(got, expected.select(got.column_names), "manifest read")


def test_stale_partitions_are_deleted_and_unpartitioned_tables_get_one_manifest(tmp_path):
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"id": [1, 2, 3], "p": ["a", "b", "c"]}), partition_by=["p"])
    generate(DeltaTable(str(path))._snapshot, "SYMLINK_FORMAT_MANIFEST")  # mode is case-insensitive
    DeltaTable(str(path)).delete("p = 'b'")
    stats = generate(DeltaTable(str(path))._snapshot, "symlink_format_manifest")
    assert sorted(_manifests(path)) == ["p=a", "p=c"]
    assert stats["filesDeleted"] == 1

    flat = tmp_path / "flat"
    write_deltalake(str(flat), pa.table({"id": [1, 2]}))
    write_deltalake(str(flat), pa.table({"id": [3]}), mode="append")
    generate(DeltaTable(str(flat))._snapshot, "symlink_format_manifest")
    assert list(_manifests(flat)) == ["."] and len(_manifests(flat)["."]) == 2
    helpers.assert_same_rows(_read_like_presto(flat, []), helpers.deltalake_table(flat), "flat")
    assert (flat / MANIFEST_DIR / "manifest").read_text().endswith(".parquet\n")

    DeltaTable(str(flat)).delete()  # an empty table still has its (empty) manifest
    generate(DeltaTable(str(flat))._snapshot, "symlink_format_manifest")
    assert (flat / MANIFEST_DIR / "manifest").read_text() == ""


def test_refused_modes_deletion_vectors_and_column_mapping(tmp_path):
    path = tmp_path / "dv"
    write_deltalake(str(path), pa.table({"id": list(range(10))}),
                    configuration={"delta.enableDeletionVectors": "true"})
    with pytest.raises(DeltaError, match="not supported"):
        generate(DeltaTable(str(path))._snapshot, "manifest")
    DeltaTable(str(path)).delete("id = 3")
    assert DeltaTable(str(path))._snapshot.files.column("deletion_vector").null_count == 0
    with pytest.raises(UnsupportedFeatureError, match="deletion vectors"):
        generate(DeltaTable(str(path))._snapshot, "symlink_format_manifest")
    assert not (path / MANIFEST_DIR).exists()

    cm = tmp_path / "cm"
    write_deltalake(str(cm), pa.table({"id": [1]}), configuration={"delta.columnMapping.mode": "name"})
    with pytest.raises(UnsupportedFeatureError, match="column mapping"):
        generate(DeltaTable(str(cm))._snapshot, "symlink_format_manifest")
