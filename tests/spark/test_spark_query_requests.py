"""A classic Delta query sends a bounded number of py4j requests more than the same query over the very same files
read as Parquet (issue 32, TPC-H per query: the Delta tax in driver round trips).

Every request of the driver's Python process to its JVM is a socket exchange (0.3-3 ms on a loaded driver), so a
per-query count that creeps back up is a per-query slowdown (benchmarks/py4j_requests.py attributes them by
command; docs/decisions.md, "py4j requests per query"). Counted here, deterministically: the requests of every
thread during `spark.sql(q).collect()` - the router, Spark's callbacks into the Delta file index - except py4j's
finalizer deletes, which its finalizer thread sends at a time of its own; instead each JVM reference Python received
(a returned object, a callback's argument) counts once, as the delete it causes. Left out, as Spark's thread pools
decide them: `note_callback`'s bookkeeping of a JVM pool thread calling back for the first time (2 requests) and
its periodic reaping of ended threads' connections.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from deltakernel import write_deltalake
from deltakernel.spark.scan import callbacks, file_index

pytestmark = pytest.mark.classic_only("counts the classic driver's py4j requests")


@pytest.fixture()
def requests_of(classic_spark, monkeypatch):
    """`requests_of(sql)`: the requests (and JVM references received) of `spark.sql(sql).collect()`."""
    from py4j import clientserver

    client = classic_spark._jvm._gateway_client
    send = client.send_command
    lock = threading.Lock()
    state = {"on": False, "n": 0}
    paused = threading.local()

    def count(n: int) -> None:
        if state["on"] and not getattr(paused, "on", False):
            with lock:
                state["n"] += n

    def counted(command, *a, **kw):
        answer = send(command, *a, **kw)
        if not command.startswith("m\nd\n"):  # a finalizer delete: counted as the reference that caused it
            count(1 + (isinstance(answer, str) and answer.startswith("yro")))
        return answer

    get_params = clientserver.ClientServerConnection._get_params

    def params(self, stream):
        out = get_params(self, stream)
        count(sum(1 for p in out if isinstance(getattr(p, "_target_id", None), str)))
        return out

    note = callbacks.note_callback

    def note_paused(jvm):
        paused.on = True
        try:
            return note(jvm)
        finally:
            paused.on = False

    monkeypatch.setattr(client, "send_command", counted)
    monkeypatch.setattr(clientserver.ClientServerConnection, "_get_params", params)
    monkeypatch.setattr(file_index, "note_callback", note_paused)

    def run(sql: str) -> int:
        classic_spark.sql(sql).collect()  # warm: per-gateway lookups, the session's kept plan of a path
        state["n"], state["on"] = 0, True
        try:
            classic_spark.sql(sql).collect()
        finally:
            state["on"] = False
        return state["n"]

    return run


@pytest.fixture()
def table(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array(range(100), pa.int64()), "s": [f"v{i}" for i in range(100)]}))
    return path


def test_point_query_over_a_view(classic_spark, table, requests_of):
    classic_spark.read.format("delta").load(table).createOrReplaceTempView("dk_req_delta")
    classic_spark.read.parquet(table).createOrReplaceTempView("dk_req_parquet")
    query = "SELECT s FROM {} WHERE id = 42"
    delta = requests_of(query.format("dk_req_delta"))
    parquet = requests_of(query.format("dk_req_parquet"))
    assert delta - parquet <= DELTA_VIEW_EXTRA, (delta, parquet)  # the listing and its callback's bookkeeping
    assert delta <= DELTA_VIEW, (delta, parquet)  # the router's share too (paid by every statement)
    assert classic_spark.sql(query.format("dk_req_delta")).collect()[0][0] == "v42"


def test_sql_statement_by_path(classic_spark, table, requests_of):
    query = "SELECT s FROM {}.`{}` WHERE id = 42"
    delta = requests_of(query.format("delta", table))
    parquet = requests_of(query.format("parquet", table))
    assert delta - parquet <= DELTA_PATH_EXTRA, (delta, parquet)
    assert delta <= DELTA_PATH, (delta, parquet)
    assert classic_spark.sql(query.format("delta", table)).collect()[0][0] == "v42"


def test_reap_closes_the_connections_of_ended_threads_only(classic_spark):
    """`reap` tells ended JVM threads from live ones by id, all ids in one answer (callbacks.py)."""
    from deltakernel.spark.scan.jvm_refs import static

    jvm = classic_spark._jvm
    alive = callbacks._live_thread_ids(jvm)
    me = int(static(jvm, "java.lang.Thread", "currentThread")().getId())
    assert me in alive and len(alive) > 1

    class Conn:
        socket = object()

    ended, live = Conn(), Conn()
    with callbacks._lock:
        callbacks._CALLERS[ended] = (max(alive) + 10**9, None)  # an id no live thread has
        callbacks._CALLERS[live] = (me, None)
    try:
        callbacks.reap(jvm, force=True)
        assert ended not in callbacks._CALLERS and live in callbacks._CALLERS
    finally:
        with callbacks._lock:
            callbacks._CALLERS.pop(ended, None)
            callbacks._CALLERS.pop(live, None)


#: measured 2026-12-07 (pyspark 4.3): view 45 (Parquet 20), path 105 (Parquet 89); before the cut the router alone
#: walked the parsed plan node by node (~8 requests per node, ~70 per statement for the point query's plan)
DELTA_VIEW_EXTRA = 30
DELTA_VIEW = 50
DELTA_PATH_EXTRA = 20
DELTA_PATH = 115
