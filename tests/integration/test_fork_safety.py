"""deltakernel in fork children of a process that already ran DataFusion and obstore (issue 22 §1).

DataFusion's and obstore's tokio runtimes are process-wide and lose their threads in a fork child: there a
QueryBuilder query or an S3 read waited forever (deltalake's `test_read_simple_in_threads_and_processes`
pattern: the same table queried in the parent, then in forked children). Every child here runs with a timeout,
so a hang fails the test instead of hanging the suite, and its results must equal the parent's.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("datafusion")

from deltakernel import DeltaTable, QueryBuilder, write_deltalake
from deltakernel.errors import FileAlreadyExistsError, ForkedProcessError
from deltakernel.storage import forksafe

TIMEOUT_S = int(os.environ.get("DELTAKERNEL_TEST_FORK_TIMEOUT", "90"))
QUERIES = [
    "SELECT g, count(*) AS n, sum(id) AS s FROM t GROUP BY g ORDER BY g",
    "SELECT id, name FROM t WHERE id % 7 = 3 ORDER BY id DESC",
    "SELECT a.g, count(*) AS n FROM t a JOIN t b ON a.id = b.id + 1 GROUP BY a.g ORDER BY a.g",
]
#: what the children use, set by the parent before it forks (children inherit it; nothing is pickled)
STATE: dict[str, Any] = {}


def _data(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "g": pa.array([i % 3 for i in ids], pa.int64()),
                     "name": pa.array([f"n{i}" for i in ids])})


def _make_table(uri: str, opts: dict[str, str] | None = None) -> None:
    write_deltalake(uri, _data(0, 300), storage_options=opts)
    write_deltalake(uri, _data(300, 200), mode="append", storage_options=opts)  # two files, two partitions of work
    DeltaTable(uri, storage_options=opts).delete("id = 5")


def _query_all(qb: QueryBuilder) -> list[list[dict[str, Any]]]:
    return [qb.execute(sql).read_all().to_pylist() for sql in QUERIES]


def in_fork_children(fn: Callable[..., Any], *args: Any, children: int = 2) -> list[Any]:
    """`fn(*args)` in `children` fork children at once, each result within TIMEOUT_S (else the children are
    killed and the test fails)."""
    pool = ProcessPoolExecutor(children, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(fn, *args) for _ in range(children)]
        return [f.result(timeout=TIMEOUT_S) for f in futures]
    except FutureTimeout:
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.kill()
            proc.join(10)
        pytest.fail(f"a fork child running {fn.__name__} hung (no result within {TIMEOUT_S} s)")
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@pytest.fixture()
def state() -> Iterator[dict[str, Any]]:
    STATE.clear()
    yield STATE
    STATE.clear()


# ----------------------------------------------------------------------------- local table, DataFusion only
def _child_queries_local() -> dict[str, Any]:
    fresh = _query_all(QueryBuilder().register("t", DeltaTable(STATE["uri"])))
    inherited = _query_all(STATE["qb"])  # the parent's builder: its session is rebuilt in the child
    return {"fresh": fresh, "inherited": inherited, "pid": os.getpid()}


def test_query_builder_in_parent_then_in_fork_children(tmp_path: Path, state: dict[str, Any]) -> None:
    uri = str(tmp_path / "t")
    _make_table(uri)
    qb = QueryBuilder().register("t", DeltaTable(uri))
    expected = _query_all(qb)  # DataFusion's runtime now runs in this process
    assert expected[0] and expected[1] and expected[2]
    state.update(uri=uri, qb=qb)

    results = in_fork_children(_child_queries_local)

    assert len({r["pid"] for r in results} | {os.getpid()}) == 3
    for r in results:
        assert r["fresh"] == expected
        assert r["inherited"] == expected
    assert _query_all(qb) == expected  # the parent's session still works


def _child_dml() -> tuple[int, list[dict[str, Any]]]:
    qb: QueryBuilder = STATE["qb"]
    affected = qb.execute("DELETE FROM t WHERE g = 0").read_all().to_pylist()[0]["num_affected_rows"]
    return affected, qb.execute("SELECT count(*) AS n FROM t").read_all().to_pylist()


def test_sql_dml_in_a_fork_child(tmp_path: Path, state: dict[str, Any]) -> None:
    uri = str(tmp_path / "t")
    _make_table(uri)
    qb = QueryBuilder().register("t", DeltaTable(uri))
    before = qb.execute("SELECT count(*) AS n FROM t WHERE g <> 0").read_all().to_pylist()
    state.update(qb=qb)

    [(affected, after)] = in_fork_children(_child_dml, children=1)

    assert affected == 167  # ids 0..499 with id % 3 == 0 (the deleted id 5 is not one of them)
    assert after == before
    assert DeltaTable(uri).version() == 3


# ----------------------------------------------------------------------------- S3 (moto): obstore + DataFusion
def _child_s3(depth: int) -> dict[str, Any]:
    uri, opts = STATE["uri"], STATE["opts"]
    out: dict[str, Any] = {
        "inherited_table": sorted(STATE["dt"].to_pyarrow_table().column("id").to_pylist()),
        "fresh_table": sorted(DeltaTable(uri, storage_options=opts).to_pyarrow_table().column("id").to_pylist()),
        "inherited_qb": _query_all(STATE["qb"]),
        "fresh_qb": _query_all(QueryBuilder().register("t", DeltaTable(uri, storage_options=opts))),
        # obstore's errors (classes of the child's own instance) still map to deltakernel's
        "missing_is_table": DeltaTable.is_deltatable(f"{uri}-missing", storage_options=opts),
    }
    try:
        STATE["dt"]._storage.put_if_absent("_delta_log/00000000000000000000.json", b"{}")
        out["conflict"] = "no error"
    except FileAlreadyExistsError:
        out["conflict"] = "FileAlreadyExistsError"
    if depth:  # a grandchild: forked from a process that itself runs fresh copies of both runtimes
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
        try:
            out["grandchild"] = pool.submit(_child_s3, depth - 1).result(timeout=TIMEOUT_S)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
    return out


def _child_append(i: int) -> int:
    dt: DeltaTable = STATE["dt"]  # its storage (and obstore client) was made in the parent
    write_deltalake(dt, _data(10_000 + i, 1), mode="append")
    return dt.version()


def test_s3_table_in_parent_then_in_fork_children(s3_bucket: str, s3_options: dict[str, str],
                                                  state: dict[str, Any]) -> None:
    uri = f"s3://{s3_bucket}/t"
    _make_table(uri, s3_options)
    dt = DeltaTable(uri, storage_options=s3_options)
    ids = sorted(dt.to_pyarrow_table().column("id").to_pylist())  # obstore's runtime runs in this process
    qb = QueryBuilder().register("t", dt)
    expected = _query_all(qb)
    state.update(uri=uri, opts=s3_options, dt=dt, qb=qb)

    results = in_fork_children(_child_s3, 1)

    for r in results:
        for level in (r, r["grandchild"]):
            assert level["inherited_table"] == ids
            assert level["fresh_table"] == ids
            assert level["inherited_qb"] == expected
            assert level["fresh_qb"] == expected
            assert level["missing_is_table"] is False
            assert level["conflict"] == "FileAlreadyExistsError"

    # writes from children through the parent's DeltaTable (conditional-put commits on child-made clients)
    versions = [in_fork_children(_child_append, i, children=1)[0] for i in range(2)]
    assert versions == [dt.version() + 1, dt.version() + 2]
    after = DeltaTable(uri, storage_options=s3_options)
    assert sorted(after.to_pyarrow_table().column("id").to_pylist()) == sorted([*ids, 10_000, 10_001])
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == ids  # the parent's client still works


# ----------------------------------------------------------------------------- storage caches keyed by URI
def _child_cached_storage() -> tuple[bool, bool, bytes]:
    import sys

    from deltakernel.spark.dml.frame import executor_storage

    storage = executor_storage(STATE["uri"], STATE["opts"])
    obs, _ = storage._client()
    data = storage.read("_delta_log/00000000000000000000.json")
    return storage is STATE["storage"], obs is sys.modules["obstore._obstore"], data


def test_a_storage_cache_hit_in_a_fork_child_uses_a_client_made_there(s3_bucket: str, s3_options: dict[str, str],
                                                                       state: dict[str, Any]) -> None:
    pytest.importorskip("pyspark")
    from deltakernel.spark.dml.frame import executor_storage

    uri = f"s3://{s3_bucket}/t"
    _make_table(uri, s3_options)
    storage = executor_storage(uri, s3_options)
    data = storage.read("_delta_log/00000000000000000000.json")  # the cached storage's client ran here
    state.update(uri=uri, opts=s3_options, storage=storage)

    [(same_object, original_obstore, child_data)] = in_fork_children(_child_cached_storage, children=1)

    assert same_object, "the child must hit the cache the parent filled"
    assert not original_obstore, "the cached storage must hand out a client of the child's own obstore instance"
    assert child_data == data
    assert executor_storage(uri, s3_options).read("_delta_log/00000000000000000000.json") == data


# ----------------------------------------------------------------------------- memory://
def _child_memory() -> tuple[list[int], list[int]]:
    uri = STATE["uri"]
    seen = sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist())
    write_deltalake(uri, _data(900, 2), mode="append")
    return seen, sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist())


def test_memory_table_is_copied_into_a_fork_child(state: dict[str, Any]) -> None:
    uri = f"memory:///fork-{uuid.uuid4().hex}"
    write_deltalake(uri, _data(0, 10))
    ids = sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist())
    state.update(uri=uri)

    [(seen, after)] = in_fork_children(_child_memory, children=1)

    assert seen == ids  # the child starts with the parent's objects, as with any memory after fork()
    assert after == [*ids, 900, 901]
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == ids  # the parent's store is its own


# ----------------------------------------------------------------------------- refusals, never hangs
def _child_error(kind: str) -> str:
    try:
        if kind == "query":
            QueryBuilder().register("t", DeltaTable(STATE["uri"])).execute("SELECT 1").read_all()
        elif kind == "s3":
            STATE["dt"].to_pyarrow_table()
        elif kind == "dataset":  # DeltaDataset read by pyarrow: the native DataFusion reader is skipped
            from deltakernel.datafusion import dataset

            ds = dataset(STATE["uri"])
            return repr((sorted(ds.to_table().column("id").to_pylist()), ds.metrics.files_native_path))
        elif kind == "context":
            import deltakernel.datafusion as dkdf

            dkdf.register(STATE["ctx"], "t", STATE["uri"])
        return "no error"
    except ForkedProcessError as e:
        return f"ForkedProcessError: {e}"


def test_without_fresh_copies_a_fork_child_raises_a_typed_error(s3_bucket: str, s3_options: dict[str, str],
                                                                state: dict[str, Any],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    uri = f"s3://{s3_bucket}/t"
    _make_table(uri, s3_options)
    dt = DeltaTable(uri, storage_options=s3_options)
    dt.to_pyarrow_table()
    _query_all(QueryBuilder().register("t", dt))
    state.update(uri=uri, dt=dt)
    monkeypatch.setenv(forksafe.COPY_OPTION, "0")

    [query] = in_fork_children(_child_error, "query", children=1)
    [s3] = in_fork_children(_child_error, "s3", children=1)

    assert query.startswith("ForkedProcessError: datafusion._internal") and forksafe.COPY_OPTION in query
    assert s3.startswith("ForkedProcessError: obstore._obstore") and "spawn" in s3


def test_without_fresh_copies_a_dataset_falls_back_to_pyarrow(tmp_path: Path, state: dict[str, Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from deltakernel.datafusion import dataset

    uri = str(tmp_path / "t")
    _make_table(uri)
    ds = dataset(uri)
    ids = sorted(ds.to_table().column("id").to_pylist())
    assert ds.metrics.files_native_path > 0, "the parent must read through DataFusion's native reader"
    state.update(uri=uri)
    monkeypatch.setenv(forksafe.COPY_OPTION, "0")

    [result] = in_fork_children(_child_error, "dataset", children=1)

    assert result == repr((ids, 0))


def test_copies_only_from_a_private_directory(tmp_path: Path, state: dict[str, Any],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The library copies are code: a cache directory others may write is refused (a typed error, no hang)."""
    uri = str(tmp_path / "t")
    _make_table(uri)
    _query_all(QueryBuilder().register("t", DeltaTable(uri)))
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(forksafe.CACHE_OPTION, str(shared))
    state.update(uri=uri)

    [query] = in_fork_children(_child_error, "query", children=1)

    assert query.startswith("ForkedProcessError: datafusion._internal") and str(shared) in query
    assert list(shared.iterdir()) == []


def test_a_session_context_made_before_the_fork_is_refused(tmp_path: Path, state: dict[str, Any]) -> None:
    import datafusion

    uri = str(tmp_path / "t")
    _make_table(uri)
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("x", [[pa.record_batch({"a": [1, 2, 3]})]])
    assert pa.table(ctx.sql("SELECT sum(a) AS s FROM x")).to_pylist() == [{"s": 6}]  # runs DataFusion's runtime
    state.update(uri=uri, ctx=ctx)

    [message] = in_fork_children(_child_error, "context", children=1)

    assert message.startswith("ForkedProcessError: this DataFusion SessionContext was made before")
