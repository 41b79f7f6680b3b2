"""Absolute paths in add/remove/cdc actions and 'p' deletion vectors (shallow clones).

A "shallow clone" here is built by hand: a table whose log adds point, with absolute URIs, at the data
files of a source table written by deltakernel. Reads must give the source's rows; absolute paths into
another store are refused unless DELTAKERNEL_ALLOW_FOREIGN_PATHS is set; relative `../` stays refused.
"""

from __future__ import annotations

import json
import os
import urllib.parse
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import InvalidPathError
from deltakernel.kernel.deletion_vectors import encode_dv_file, serialize_roaring_bitmap_array
from deltakernel.operations.write.api import write_deltalake
from deltakernel.storage import storage_for_uri

try:
    from s3_fixtures import moto_endpoint, s3_bucket, s3_options
except ImportError:  # pragma: no cover
    from tests.unit.s3_fixtures import moto_endpoint, s3_bucket, s3_options  # type: ignore[no-redef]  # noqa: F401

OPT_IN = {"DELTAKERNEL_ALLOW_FOREIGN_PATHS": "true"}


def _data() -> pa.Table:
    return pa.table({
        "id": pa.array(range(12), pa.int64()),
        "part": pa.array(["a b", "c/d", "x"] * 4, pa.string()),  # percent-encoded partition directories
        "v": pa.array([float(i) / 3 for i in range(12)]),
    })


def _sorted(t: pa.Table) -> list[dict[str, Any]]:
    return sorted(t.select(["id", "part", "v"]).to_pylist(), key=lambda r: r["id"])


def _source_actions(uri: str, options: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The actions of commit 0 of a source table (protocol, metaData, adds)."""
    storage = storage_for_uri(uri, options)
    lines = storage.read("_delta_log/00000000000000000000.json").decode().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def _write_clone(clone_uri: str, source_actions: list[dict[str, Any]], to_abs: Any,
                 options: dict[str, str] | None = None) -> list[str]:
    """Commit 0 of a clone whose adds are `to_abs(relative path)`; returns the absolute paths written."""
    out, paths = [], []
    for a in source_actions:
        if "add" in a:
            add = dict(a["add"], path=to_abs(a["add"]["path"]))
            paths.append(add["path"])
            out.append({"add": add})
        elif "metaData" in a:
            out.append({"metaData": dict(a["metaData"], id=str(uuid.uuid4()))})
        elif "protocol" in a:
            out.append(a)
    out.insert(0, {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CLONE"}})
    storage = storage_for_uri(clone_uri, options)
    storage.put_if_absent("_delta_log/00000000000000000000.json", "\n".join(json.dumps(x) for x in out).encode())
    return paths


@pytest.fixture()
def local_source(tmp_path: Path) -> Path:
    src = tmp_path / "src dir"  # a space: the absolute URIs must be percent-encoded and decoded
    write_deltalake(str(src), _data(), partition_by=["part"], configuration={"delta.enableChangeDataFeed": "true"})
    return src


def _file_uri_styles(src: Path) -> dict[str, Any]:
    enc = urllib.parse.quote(str(src))
    return {
        "file:/": lambda rel: f"file:{enc}/{rel}",  # Spark's canonical form
        "file:///": lambda rel: f"file://{enc}/{rel}",
        "bare /": lambda rel: f"{enc}/{rel}",
    }


@pytest.mark.parametrize("style", ["file:/", "file:///", "bare /"])
def test_local_shallow_clone_reads_source_rows(tmp_path: Path, local_source: Path, style: str) -> None:
    clone = tmp_path / "clone"
    paths = _write_clone(str(clone), _source_actions(str(local_source)), _file_uri_styles(local_source)[style])
    dt = DeltaTable(str(clone))
    assert dt.files() == sorted(dt.files()) or set(dt.files()) == set(paths)  # paths kept as in the log
    assert set(dt.files()) == set(paths)
    assert _sorted(dt.to_pyarrow_table()) == _sorted(DeltaTable(str(local_source)).to_pyarrow_table())
    uris = dt.file_uris()
    assert all(u.startswith(str(local_source) + os.sep) and os.path.exists(u) for u in uris)
    # the pyarrow dataset path reads the files outside the root too
    assert _sorted(dt.to_pyarrow_dataset().to_table()) == _sorted(dt.to_pyarrow_table())
    # the change data feed reads the clone's adds
    cdf = dt.load_cdf(starting_version=0).read_all()
    assert sorted(cdf.column("id").to_pylist()) == list(range(12))


def test_local_clone_through_datafusion(tmp_path: Path, local_source: Path) -> None:
    datafusion = pytest.importorskip("datafusion")
    from deltakernel.datafusion import register

    clone = tmp_path / "clone"
    _write_clone(str(clone), _source_actions(str(local_source)), _file_uri_styles(local_source)["file:/"])
    for native_reader in (True, False):
        ctx = datafusion.SessionContext()
        register(ctx, "t", str(clone), native_reader=native_reader)
        got = ctx.sql("SELECT id, part, v FROM t WHERE id >= 3").to_arrow_table()
        assert _sorted(got) == [r for r in _sorted(_data()) if r["id"] >= 3]


@pytest.mark.parametrize("style", ["file:/", "file:///"])
def test_deltalake_reads_the_local_clone(tmp_path: Path, local_source: Path, style: str) -> None:
    """Interop: delta-rs's DataFusion scan (QueryBuilder) reads the same clone. (deltalake 1.6's
    `to_pyarrow_table()` / `file_uris()` join absolute paths onto the table root and fail, so they are
    not the reference here.)"""
    deltalake = pytest.importorskip("deltalake")
    clone = tmp_path / "clone"
    _write_clone(str(clone), _source_actions(str(local_source)), _file_uri_styles(local_source)[style])
    got = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(clone))).execute(
        "SELECT id, part, v FROM t").read_all()
    assert _sorted(pa.table(got)) == _sorted(_data()) == _sorted(DeltaTable(str(clone)).to_pyarrow_table())


def test_absolute_deletion_vector_path(tmp_path: Path) -> None:
    """A 'p' deletion vector whose absolute path lies in the source table (outside the clone's root)."""
    src = tmp_path / "src"
    write_deltalake(str(src), _data(), configuration={"delta.enableDeletionVectors": "true"})
    actions = _source_actions(str(src))
    dv_bytes, offsets = encode_dv_file([serialize_roaring_bitmap_array([0, 5])])
    dv_file = src / "my dv.bin"
    dv_file.write_bytes(dv_bytes)
    clone = tmp_path / "clone"
    enc = urllib.parse.quote(str(src))
    adds = [a for a in actions if "add" in a]
    assert len(adds) == 1
    n_rows = json.loads(adds[0]["add"]["stats"])["numRecords"]
    adds[0]["add"]["deletionVector"] = {
        "storageType": "p", "pathOrInlineDv": f"file:{urllib.parse.quote(str(dv_file))}", "offset": offsets[0],
        "sizeInBytes": len(serialize_roaring_bitmap_array([0, 5])), "cardinality": 2,
    }
    _write_clone(str(clone), actions, lambda rel: f"file:{enc}/{rel}")
    dt = DeltaTable(str(clone))
    assert dt.protocol().min_reader_version == 3
    got = dt.to_pyarrow_table()
    assert got.num_rows == n_rows - 2
    src_rows = DeltaTable(str(src)).to_pyarrow_table()
    expected = [r for i, r in enumerate(src_rows.to_pylist()) if i not in (0, 5)]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])


def test_relative_parent_paths_stay_refused(tmp_path: Path, local_source: Path) -> None:
    clone = tmp_path / "clone"
    _write_clone(str(clone), _source_actions(str(local_source)), lambda rel: f"../{local_source.name}/{rel}")
    with pytest.raises(InvalidPathError, match=r"\.\."):
        DeltaTable(str(clone)).to_pyarrow_table()


def test_local_table_refuses_s3_paths_without_opt_in(tmp_path: Path, local_source: Path) -> None:
    clone = tmp_path / "clone"
    _write_clone(str(clone), _source_actions(str(local_source)), lambda rel: f"s3://elsewhere/t/{rel}")
    with pytest.raises(InvalidPathError, match="DELTAKERNEL_ALLOW_FOREIGN_PATHS") as info:
        DeltaTable(str(clone)).to_pyarrow_table()
    assert "s3://elsewhere/t/" in str(info.value)


def test_overwrite_of_clone_removes_absolute_paths_as_logged(tmp_path: Path, local_source: Path) -> None:
    clone = tmp_path / "clone"
    paths = _write_clone(str(clone), _source_actions(str(local_source)), _file_uri_styles(local_source)["file:/"])
    write_deltalake(str(clone), _data().slice(0, 2), mode="overwrite")
    lines = (clone / "_delta_log" / "00000000000000000001.json").read_text().splitlines()
    removed = [json.loads(x)["remove"]["path"] for x in lines if '"remove"' in x]
    assert sorted(removed) == sorted(paths)
    assert _sorted(DeltaTable(str(clone)).to_pyarrow_table()) == _sorted(_data().slice(0, 2))
    # the source's files are untouched
    assert _sorted(DeltaTable(str(local_source)).to_pyarrow_table()) == _sorted(_data())


# ----------------------------------------------------------------------------- S3 (moto)
@pytest.mark.parametrize("scheme", ["s3", "s3a"])
def test_s3_shallow_clone_same_bucket(s3_bucket: str, s3_options: dict[str, str], scheme: str) -> None:
    src = f"s3://{s3_bucket}/src"
    write_deltalake(src, _data(), partition_by=["part"], storage_options=s3_options)
    clone = f"s3://{s3_bucket}/clone"
    _write_clone(clone, _source_actions(src, s3_options), lambda rel: f"{scheme}://{s3_bucket}/src/{rel}", s3_options)
    dt = DeltaTable(clone, storage_options=s3_options)
    assert _sorted(dt.to_pyarrow_table()) == _sorted(_data())
    assert all(u.startswith(f"s3://{s3_bucket}/src/") for u in dt.file_uris())
    assert _sorted(dt.to_pyarrow_dataset().to_table()) == _sorted(_data())


def test_s3_path_into_another_bucket_needs_opt_in(
    moto_endpoint: str, s3_bucket: str, s3_options: dict[str, str]
) -> None:
    from s3_fixtures import _create_bucket

    other = f"{s3_bucket}-other"
    _create_bucket(moto_endpoint, other)
    src = f"s3://{other}/src"
    write_deltalake(src, _data(), storage_options=s3_options)
    clone = f"s3://{s3_bucket}/clone"
    _write_clone(clone, _source_actions(src, s3_options), lambda rel: f"{src}/{rel}", s3_options)
    with pytest.raises(InvalidPathError, match="DELTAKERNEL_ALLOW_FOREIGN_PATHS") as info:
        DeltaTable(clone, storage_options=s3_options).to_pyarrow_table()
    assert f"s3://{other}/src/" in str(info.value)
    dt = DeltaTable(clone, storage_options={**s3_options, **OPT_IN})
    assert _sorted(dt.to_pyarrow_table()) == _sorted(_data())


def test_local_table_reads_s3_paths_with_opt_in(tmp_path: Path, s3_bucket: str, s3_options: dict[str, str]) -> None:
    """The opt-in opens the other store with the table's storage options (here: a local table, S3 files)."""
    src = f"s3://{s3_bucket}/src"
    write_deltalake(src, _data(), storage_options=s3_options)
    clone = tmp_path / "clone"
    _write_clone(str(clone), _source_actions(src, s3_options), lambda rel: f"{src}/{rel}")
    with pytest.raises(InvalidPathError, match="DELTAKERNEL_ALLOW_FOREIGN_PATHS"):
        DeltaTable(str(clone), storage_options=s3_options).to_pyarrow_table()
    dt = DeltaTable(str(clone), storage_options={**s3_options, **OPT_IN})
    assert _sorted(dt.to_pyarrow_table()) == _sorted(_data())
    assert all(u.startswith(f"{src}/") for u in dt.file_uris())


def test_memory_store_clone() -> None:
    """memory:// is one store: a clone's absolute memory:/// paths read the source's files."""
    name = uuid.uuid4().hex
    src = f"memory:///{name}/src"
    write_deltalake(src, _data())
    clone = f"memory:///{name}/clone"
    _write_clone(clone, _source_actions(src), lambda rel: f"{src}/{rel}")
    assert _sorted(DeltaTable(clone).to_pyarrow_table()) == _sorted(_data())
