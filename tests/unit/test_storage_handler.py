"""deltakernel.fs.DeltaStorageHandler: a pyarrow filesystem rooted at a table, on our storage layer."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import deltakernel
from deltakernel import DeltaTable
from deltakernel.fs import DeltaStorageHandler


@pytest.mark.parametrize("where", ["local", "memory"])
def test_paths_are_relative_to_the_table(tmp_path: Path, where: str) -> None:
    uri = str(tmp_path / "t") if where == "local" else f"memory:///handler-{tmp_path.name}"
    data = pa.table({"a": pa.array(range(10), pa.int64()), "p": ["x", "y"] * 5})
    deltakernel.write_deltalake(uri, data, partition_by=["p"])
    fs = pafs.PyFileSystem(DeltaStorageHandler(uri))
    listed = {i.path: i for i in fs.get_file_info(pafs.FileSelector("", recursive=True))}
    files = DeltaTable(uri).files()
    assert set(files) <= {k for k, v in listed.items() if v.type == pafs.FileType.File}
    assert "_delta_log/00000000000000000000.json" in listed
    info = fs.get_file_info(["_delta_log/00000000000000000000.json", "missing.parquet"])
    assert info[0].type == pafs.FileType.File and info[0].size > 0 and info[1].type == pafs.FileType.NotFound
    # read a data file through the handler, as pyarrow / a dataset does
    assert pq.read_table(files[0], filesystem=fs).num_rows == 5
    assert ds.dataset(files, filesystem=fs, format="parquet").to_table().num_rows == 10
    # write, move, copy, delete under the table root
    with fs.open_output_stream("scratch/a.bin") as out:
        out.write(b"hello")
    fs.copy_file("scratch/a.bin", "scratch/b.bin")
    fs.move("scratch/b.bin", "scratch/c.bin")
    with fs.open_input_file("scratch/c.bin") as f:
        assert f.read() == b"hello"
    fs.delete_file("scratch/a.bin")
    fs.delete_dir("scratch")
    assert fs.get_file_info(["scratch/c.bin"])[0].type == pafs.FileType.NotFound
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 10  # the table is untouched


def test_as_dataset_filesystem_like_deltalake(tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    import deltalake
    import deltalake.fs

    data = pa.table({"a": pa.array(range(10), pa.int64()), "p": ["x y", "z"] * 5})
    deltalake.write_deltalake(tmp_path, data, partition_by=["p"])  # escaped partition directory
    ours = pafs.PyFileSystem(DeltaStorageHandler(str(tmp_path)))
    t = DeltaTable(str(tmp_path)).to_pyarrow_dataset(filesystem=ours).to_table()
    theirs = deltalake.DeltaTable(tmp_path).to_pyarrow_dataset(
        filesystem=pafs.PyFileSystem(deltalake.fs.DeltaStorageHandler(str(tmp_path)))).to_table()
    assert t.sort_by("a").equals(theirs.sort_by("a"))
    handler = DeltaStorageHandler.from_table(DeltaTable(str(tmp_path)))
    assert handler == DeltaStorageHandler(str(tmp_path))
    with pytest.raises(ValueError):
        handler.delete_dir_contents("")
