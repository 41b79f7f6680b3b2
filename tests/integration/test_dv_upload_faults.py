"""Deletion-vector uploads on a real S3-compatible server (moto) behind a fault-injecting proxy (issue 22 §3).

The fault hits the PUT of `deletion_vector_<uuid>.bin`: the server stores the object, then the response is lost
(connection closed) or replaced by a 500. With the client's retries on (object_store's default), DELETE, UPDATE
and MERGE on a table with `delta.enableDeletionVectors=true` must succeed, commit once and leave the right rows -
the resent PUT used to meet its own first attempt (`FileAlreadyExistsError`). With retries off the operation
fails with a typed error naming the file, the table stays as it was and the stored DV file is deleted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from fault_proxy import FaultProxy

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError, StorageError

DV_PUT = re.compile(r"/deletion_vector_[0-9a-f-]{36}\.bin$")
FAULTS = ("drop_after_store", "500_after_store")
BASE = {i: i * 10 for i in range(20)}  # id -> v, one data file


def _is_dv_put(method: str, path: str) -> bool:
    return method == "PUT" and bool(DV_PUT.search(path.split("?", 1)[0]))


def _delete(dt: DeltaTable) -> None:
    dt.delete("id < 5")


def _update(dt: DeltaTable) -> None:
    dt.update(updates={"v": "v + 1"}, predicate="id >= 15")


def _merge(dt: DeltaTable) -> None:
    source = pa.table({"id": pa.array(range(10, 25), pa.int64()), "v": pa.array([-i for i in range(10, 25)], pa.int64())})
    (dt.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
       .when_matched_update(updates={"v": "s.v"})
       .when_not_matched_insert_all()
       .execute())


OPS: dict[str, tuple[Callable[[DeltaTable], None], dict[int, int]]] = {
    "delete": (_delete, {i: v for i, v in BASE.items() if i >= 5}),
    "update": (_update, {i: (v + 1 if i >= 15 else v) for i, v in BASE.items()}),
    "merge": (_merge, {**BASE, **{i: -i for i in range(10, 25)}}),
}


@pytest.fixture(scope="module")
def proxy(moto_endpoint: str):
    with FaultProxy(moto_endpoint) as p:
        p.plan.match = _is_dv_put
        yield p


def _rows(uri: str, opts: dict[str, str]) -> dict[int, int]:
    t = DeltaTable(uri, storage_options=opts).to_pyarrow_table()
    ids, vs = t.column("id").to_pylist(), t.column("v").to_pylist()
    assert len(ids) == len(set(ids)), "a row is duplicated"
    return dict(zip(ids, vs))


def _dv_objects(uri: str, opts: dict[str, str]) -> list[str]:
    storage = DeltaTable(uri, storage_options=opts)._storage
    return sorted(m.key for m in storage.list_from("deletion_vector_"))


def _download(uri: str, opts: dict[str, str], dest: Path) -> Path:
    """Every object of the table, copied to `dest` (deltalake's DataFusion reader is run on local files)."""
    storage = DeltaTable(uri, storage_options=opts)._storage
    for meta in storage.list_from("", recursive=True):
        target = dest / meta.key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(storage.read(meta.key))
    return dest


def _setup(uri: str, opts: dict[str, str]) -> None:
    data = pa.table({"id": pa.array(list(BASE), pa.int64()), "v": pa.array(list(BASE.values()), pa.int64())})
    write_deltalake(uri, data, configuration={"delta.enableDeletionVectors": "true"}, storage_options=opts)


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("op", list(OPS))
def test_dml_succeeds_once_when_the_dv_put_is_resent(proxy: FaultProxy, s3_bucket: str, s3_options: dict[str, str],
                                                     tmp_path: Path, op: str, fault: str) -> None:
    uri = f"s3://{s3_bucket}/t"
    direct = dict(s3_options)
    _setup(uri, direct)
    run, expected = OPS[op]
    proxy.clear()
    proxy.add_faults(fault)
    faulty = {**s3_options, "AWS_ENDPOINT_URL": proxy.endpoint, "max_retries": "3", "retry_timeout": "20s"}

    run(DeltaTable(uri, storage_options=faulty))

    dv_puts = [e for e in proxy.log if _is_dv_put(e.method, e.path)]
    proxy.clear()
    assert [e.fault for e in dv_puts] == [fault, None], f"the fault must fire on the DV PUT, then one resend: {dv_puts}"
    assert dv_puts[1].status == 200
    t = DeltaTable(uri, storage_options=direct)
    assert t.version() == 1, "the operation must commit exactly once"
    assert [h["operation"] for h in t.history()][:1] == [op.upper()]
    # the commit really uses the DV file the fault hit
    log = [json.loads(line) for line in t._storage.read("_delta_log/00000000000000000001.json").decode().splitlines()]
    dvs = [a["add"]["deletionVector"] for a in log if "add" in a and a["add"].get("deletionVector")]
    assert dvs, "the operation must write a deletion vector"
    faulted_name = dv_puts[0].path.split("?", 1)[0].rsplit("/", 1)[1]
    assert _dv_objects(uri, direct) == [faulted_name]
    assert _rows(uri, direct) == expected
    # an independent reader agrees: deltalake's engine on a local copy of the objects the server holds
    import deltalake

    copy = _download(uri, direct, tmp_path / "copy")
    theirs = deltalake.DeltaTable(str(copy))
    assert theirs.version() == 1
    other = pa.table(deltalake.QueryBuilder().register("t", theirs).execute("SELECT id, v FROM t").read_all())
    assert dict(zip(other.column("id").to_pylist(), other.column("v").to_pylist())) == expected


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("op", list(OPS))
def test_dml_without_client_retries_fails_typed_and_leaves_the_table(proxy: FaultProxy, s3_bucket: str,
                                                                     s3_options: dict[str, str], op: str,
                                                                     fault: str) -> None:
    uri = f"s3://{s3_bucket}/t"
    direct = dict(s3_options)
    _setup(uri, direct)
    run, _ = OPS[op]
    proxy.clear()
    proxy.add_faults(fault)
    faulty = {**s3_options, "AWS_ENDPOINT_URL": proxy.endpoint, "max_retries": "0"}

    with pytest.raises(StorageError) as info:
        run(DeltaTable(uri, storage_options=faulty))

    fired = proxy.fired()
    proxy.clear()
    assert [e.fault for e in fired] == [fault] and _is_dv_put(fired[0].method, fired[0].path)
    assert isinstance(info.value, DeltaError) and "deletion_vector_" in str(info.value)
    t = DeltaTable(uri, storage_options=direct)
    assert t.version() == 0
    assert _rows(uri, direct) == BASE
    assert _dv_objects(uri, direct) == [], "the DV file the server stored must be deleted (no commit names it)"
    run(t)  # the table stays writable
    assert _rows(uri, direct) == OPS[op][1]
