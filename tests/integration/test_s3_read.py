"""End to end on a real S3-compatible server (moto, on 127.0.0.1): a table written by deltalake, with
a checkpoint, partitions and a delete, uploaded object by object, reads the same as from local disk."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import TableNotFoundError
from deltakernel.storage import storage_for_uri

deltalake = pytest.importorskip("deltalake")


def _rows(t: pa.Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def test_read_table_from_s3(tmp_path: Path, s3_bucket: str, s3_options: dict[str, str]) -> None:
    local = str(tmp_path / "t")
    for i in range(3):
        deltalake.write_deltalake(
            local,
            pa.table({"id": list(range(i * 10, i * 10 + 10)), "part": [f"p {i % 2}"] * 10, "v": [1.5 * j for j in range(10)]}),
            partition_by=["part"],
            mode="append",
        )
    deltalake.DeltaTable(local).create_checkpoint()
    deltalake.DeltaTable(local).delete("id = 3")

    uri = f"s3://{s3_bucket}/tables/t"
    store = storage_for_uri(uri, s3_options)
    for dirpath, _, names in os.walk(local):
        for name in names:
            full = os.path.join(dirpath, name)
            key = os.path.relpath(full, local).replace(os.sep, "/")
            store.put_if_absent(key, Path(full).read_bytes())

    remote = DeltaTable(uri, storage_options=s3_options)
    here = DeltaTable(local)
    assert remote.version() == here.version() == 3
    assert _rows(remote.to_pyarrow_table()) == _rows(here.to_pyarrow_table())
    assert remote.count() == 29
    assert _rows(remote.to_pyarrow_table(filters=[("part", "=", "p 1")])) == _rows(
        here.to_pyarrow_table(filters=[("part", "=", "p 1")])
    )
    assert len(remote.history()) == 4
    assert _rows(DeltaTable(uri, version=1, storage_options=s3_options).to_pyarrow_table()) == _rows(
        DeltaTable(local, version=1).to_pyarrow_table()
    )
    assert DeltaTable.is_deltatable(uri, s3_options)
    assert not DeltaTable.is_deltatable(f"s3://{s3_bucket}/nothing", s3_options)
    with pytest.raises(TableNotFoundError):
        DeltaTable(f"s3://{s3_bucket}/nothing", storage_options=s3_options)
