"""Ambiguous commit outcomes on a real S3-compatible server (moto) behind a fault-injecting proxy.

Each write either returns with its commit in the log exactly once, or raises with it absent; the table
stays readable (every file the log references exists). Faults hit the conditional PUT of
`_delta_log/N.json`: the response lost after the server stored it, a 500 after storing, a 503 without
storing — once, or on every attempt — with the client's own retries off and on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pyarrow as pa
import pytest
from fault_proxy import FAULTS, FaultProxy

from deltakernel import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltakernel.errors import CommitStateUnknownError, DeltaError

BASE = pa.table({"v": pa.array([1, 2, 3, 150], pa.int64())})
NEW = pa.table({"v": pa.array([100, 200], pa.int64())})


def _opts(endpoint: str, s3_options: dict[str, str], retries: int) -> dict[str, str]:
    return {**s3_options, "AWS_ENDPOINT_URL": endpoint, "max_retries": str(retries), "retry_timeout": "20s"}


def _rows(uri: str, opts: dict[str, str]) -> list[int]:
    return sorted(DeltaTable(uri, storage_options=opts).to_pyarrow_table().column("v").to_pylist())


def _do(op: str, uri: str, opts: dict[str, str]) -> None:
    if op == "create":
        write_deltalake(uri, NEW, storage_options=opts)
    elif op == "append":
        write_deltalake(uri, NEW, mode="append", storage_options=opts)
    elif op == "append_txn":
        write_deltalake(uri, NEW, mode="append", storage_options=opts,
                        commit_properties=CommitProperties(app_transactions=[Transaction("etl", 7)]))
    elif op == "overwrite":
        write_deltalake(uri, NEW, mode="overwrite", storage_options=opts)
    elif op == "replace_where":
        write_deltalake(uri, NEW, mode="overwrite", predicate="v >= 100", storage_options=opts)
    else:  # pragma: no cover
        raise AssertionError(op)


EXPECTED: dict[str, Callable[[list[int]], list[int]]] = {
    "create": lambda base: [100, 200],
    "append": lambda base: sorted([*base, 100, 200]),
    "append_txn": lambda base: sorted([*base, 100, 200]),
    "overwrite": lambda base: [100, 200],
    "replace_where": lambda base: sorted([*(b for b in base if b < 100), 100, 200]),
}


@pytest.fixture(scope="module")
def proxy(moto_endpoint: str):
    with FaultProxy(moto_endpoint) as p:
        yield p


@pytest.mark.parametrize("retries", [0, 3], ids=["client-retries-off", "client-retries-on"])
@pytest.mark.parametrize("persistent", [False, True], ids=["once", "every-attempt"])
@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("op", list(EXPECTED))
def test_commit_outcome_is_exact_under_faults(proxy: FaultProxy, s3_bucket: str, s3_options: dict[str, str],
                                              op: str, fault: str, persistent: bool, retries: int) -> None:
    uri = f"s3://{s3_bucket}/t"
    direct = {**s3_options}
    proxy.clear()
    if op != "create":
        write_deltalake(uri, BASE, storage_options=direct)
    before_version = DeltaTable(uri, storage_options=direct).version() if op != "create" else -1
    before_rows = _rows(uri, direct) if op != "create" else []

    proxy.add_faults(*([fault] * (12 if persistent else 1)))
    error: Exception | None = None
    try:
        _do(op, uri, _opts(proxy.endpoint, s3_options, retries))
    except DeltaError as e:
        error = e
    assert proxy.fired(), "the fault was never injected"
    proxy.clear()

    if error is None:
        t = DeltaTable(uri, storage_options=direct)
        assert t.version() == before_version + 1, "the write must commit exactly once"
        assert _rows(uri, direct) == EXPECTED[op](before_rows)
        ours = [h for h in t.history() if h["version"] > before_version]
        assert len(ours) == 1 and ours[0].get("txnId")
        if op == "append_txn":
            assert t._snapshot.txns["etl"].version == 7
        # an independent reader agrees (deltalake, through the same S3 server)
        import deltalake

        theirs = deltalake.DeltaTable(uri, storage_options=direct)
        assert theirs.version() == before_version + 1
        assert sorted(theirs.to_pyarrow_table().column("v").to_pylist()) == EXPECTED[op](before_rows)
    else:
        # only a put the server never stored may fail, and then nothing is committed
        assert fault == "503_no_store" and persistent, f"{fault} must not fail the write: {error!r}"
        assert isinstance(error, CommitStateUnknownError)
        if op == "create":
            assert not DeltaTable.is_deltatable(uri, storage_options=direct)
        else:
            assert DeltaTable(uri, storage_options=direct).version() == before_version
            assert _rows(uri, direct) == before_rows
        # the table stays writable
        _do(op, uri, direct)
        assert _rows(uri, direct) == EXPECTED[op](before_rows)


def test_app_transaction_retried_after_lost_response_is_not_applied_twice(
        proxy: FaultProxy, s3_bucket: str, s3_options: dict[str, str]) -> None:
    """The caller's own retry of an idempotent write after it landed is skipped (txn action)."""
    uri = f"s3://{s3_bucket}/t"
    write_deltalake(uri, BASE, storage_options=s3_options)
    proxy.clear()
    proxy.add_faults("drop_after_store")
    opts = _opts(proxy.endpoint, s3_options, 0)
    _do("append_txn", uri, opts)
    _do("append_txn", uri, opts)  # the application retries: version 7 of "etl" is already there
    proxy.clear()
    assert DeltaTable(uri, storage_options=s3_options).version() == 1
    assert _rows(uri, s3_options) == sorted([1, 2, 3, 150, 100, 200])


@pytest.mark.slow
def test_concurrent_writers_through_faults(proxy: FaultProxy, s3_bucket: str, s3_options: dict[str, str]) -> None:
    """Writers racing through random faults: every returned write is in the table exactly once, nothing else."""
    uri = f"s3://{s3_bucket}/t"
    write_deltalake(uri, pa.table({"w": pa.array([-1], pa.int64()), "i": pa.array([-1], pa.int64())}),
                    storage_options=s3_options)
    proxy.clear()
    proxy.random_faults(0.3, seed=42)
    opts = _opts(proxy.endpoint, s3_options, 1)
    writers, appends = 4, 6
    outcome: dict[tuple[int, int], str] = {}
    lock = threading.Lock()

    def run(w: int) -> None:
        for i in range(appends):
            try:
                write_deltalake(uri, pa.table({"w": [w], "i": [i]}), mode="append", storage_options=opts)
                result = "ok"
            except CommitStateUnknownError:
                result = "unknown"
            except DeltaError as e:  # pragma: no cover - reported below
                result = f"error: {e!r}"
            with lock:
                outcome[(w, i)] = result

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    fired = proxy.fired()
    proxy.clear()
    assert fired, "no fault was injected"
    assert not [v for v in outcome.values() if v.startswith("error")], outcome
    table = DeltaTable(uri, storage_options=s3_options)
    rows = [(r["w"], r["i"]) for r in table.to_pyarrow_table().to_pylist() if r["w"] >= 0]
    assert len(rows) == len(set(rows)), "a write was committed twice"
    present = set(rows)
    for key, result in outcome.items():
        if result == "ok":
            assert key in present, f"write {key} returned but is not in the table"
    assert present <= set(outcome)
    # one commit per landed write, contiguous versions
    assert table.version() == len(present)
    commits = [json.loads(line) for v in range(1, table.version() + 1)
               for line in table._storage.read(f"_delta_log/{v:020d}.json").decode().splitlines()]
    ids = [c["commitInfo"]["txnId"] for c in commits if "commitInfo" in c]
    assert len(ids) == len(set(ids)) == len(present)

