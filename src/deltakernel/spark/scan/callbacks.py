"""The py4j callback server: Spark's JVM calls back into this Python process (the Delta file index).

Started once per gateway, under a lock (two threads reading Delta tables at once start it once).

Connections of JVM threads that are gone. With pyspark's pinned-thread gateway (py4j's ClientServer, the
default), every JVM thread that calls a Python object gets a connection of its own: a socket, a Python thread
serving it, and a small Java object - and py4j never closes it (its `PythonClient` has no cleaner). Spark lists a
scan's files on whatever thread plans or runs that scan: the caller's thread mostly, but a broadcast join's build
side on a `broadcast-exchange` thread and adaptive result stages on `ResultQueryStageExecution` threads, pools
whose threads end after 60 s idle and are replaced by new ones. Measured (benchmarks/long_session.py): every
join of Delta tables left two connections behind, +35 MiB of driver RSS per 100 mixed queries, without end.
`note_callback` (called by the file index's callbacks) remembers, for each connection a JVM pool thread opened,
that thread's id and the connection's Java side; `reap` shuts down the connections whose JVM thread has ended (such
a connection can never be used again: py4j keys connections by thread), which ends the Python thread serving it.
Connections of live threads are left alone (closing one under a thread about to call back could fail that
call), so the count is bounded by the JVM's live pool threads. `reap` runs inside a callback - on the query's
path - so it asks the JVM for the ids of all its live threads at once (two round trips), not each remembered
thread whether it is alive (one round trip per connection: ~10-40 per reap in a TPC-H session).
"""

from __future__ import annotations

import threading
import time
from typing import Any

_lock = threading.Lock()
_STARTED: set[int] = set()
# Python side of a callback connection -> (id of the JVM thread that opened it, the connection's Java side)
_CALLERS: dict[Any, tuple[int, Any]] = {}
_REAP_EVERY_S = 2.0
_last_reap = 0.0


def ensure_callbacks(spark: Any) -> Any:
    """Start pyspark's callback server once per gateway (as foreachBatch does); returns the JVM view."""
    sc = spark.sparkContext if hasattr(spark, "sparkContext") else spark
    gateway = sc._gateway
    if id(gateway) not in _STARTED:
        with _lock:
            if id(gateway) not in _STARTED:
                from pyspark.java_gateway import ensure_callback_server_started

                ensure_callback_server_started(gateway)
                _STARTED.add(id(gateway))
    return sc._jvm


def note_callback(jvm: Any) -> None:
    """In a callback from the JVM: remember the connection it came on when a JVM thread other than a Python
    caller's opened it (see the module docstring), and reap the connections of ended threads now and then."""
    client = getattr(jvm, "_gateway_client", None)
    get_connection = getattr(client, "get_thread_connection", None)
    if get_connection is None:  # not py4j's ClientServer: its callback client cleans up by itself
        return
    conn = get_connection()
    if conn is None or getattr(conn, "initiated_from_client", True):
        return  # a Python thread's own connection (the JVM calls back on the thread Python called it from)
    if conn not in _CALLERS:
        try:
            from .jvm_refs import static

            # these calls run on the calling JVM thread (py4j answers on the connection the callback came on): three
            # round trips on the query's path (a Spark pool thread's first callback - often one per query)
            thread_id = int(static(jvm, "java.lang.Thread", "currentThread")().getId())
            entry = (thread_id, _callback_client(jvm).getPerThreadConnection())
        except Exception:
            return
        with _lock:
            _CALLERS[conn] = entry
    reap(jvm)


def reap(jvm: Any, force: bool = False) -> int:
    """Shut down the callback connections whose JVM thread has ended; returns how many (at most every
    `_REAP_EVERY_S` seconds unless `force`)."""
    global _last_reap
    now = time.monotonic()
    with _lock:
        if not force and now - _last_reap < _REAP_EVERY_S:
            return 0
        _last_reap = now
        entries = list(_CALLERS.items())
    if not entries:
        return 0
    try:
        alive = _live_thread_ids(jvm)
    except Exception:
        return 0  # the JVM cannot tell: leave them for the next round
    ended = [(conn, jconn) for conn, (thread_id, jconn) in entries
             if getattr(conn, "socket", None) is None or thread_id not in alive]
    for conn, jconn in ended:
        with _lock:
            _CALLERS.pop(conn, None)
        try:
            client = _callback_client(jvm)
            client.connectionStopped(jconn)  # out of py4j's connection list
            jconn.shutdown()  # closes the socket: the Python thread serving it ends
        except Exception:
            pass
    return len(ended)


_MX: dict[int, Any] = {}  # gateway client -> the JVM's ThreadMXBean


def _live_thread_ids(jvm: Any) -> set[int]:
    """The ids of the JVM's live threads, in two round trips: the ids as a `long[]`, rendered as one string (py4j
    would fetch a Java array's elements one round trip each). A thread's id is unique while it lives and HotSpot
    never hands it out again; were one reused, a connection would only be kept longer (never closed early)."""
    from .jvm_refs import static

    key = id(jvm._gateway_client)
    mx = _MX.get(key)
    if mx is None:
        mx = _MX[key] = static(jvm, "java.lang.management.ManagementFactory", "getThreadMXBean")()
    text = str(static(jvm, "java.util.Arrays", "toString")(mx.getAllThreadIds()))
    return {int(t) for t in text.strip("[]").split(",") if t.strip()}


_CLIENTS: dict[int, Any] = {}  # gateway client -> the JVM GatewayServer's callback client (set once it is started)


def _callback_client(jvm: Any) -> Any:
    """The JVM's callback client (py4j's PythonClient), fetched once per gateway: `ensure_callbacks` set it up
    before any callback can arrive, and nothing replaces it afterwards."""
    key = id(jvm._gateway_client)
    found = _CLIENTS.get(key)
    if found is None:
        found = _CLIENTS[key] = _gateway_server(jvm).getCallbackClient()
    return found


def _gateway_server(jvm: Any) -> Any:
    """py4j's GatewayServer object in the JVM (as pyspark's `ensure_callback_server_started` reaches it)."""
    from py4j.java_gateway import JavaObject

    return JavaObject("GATEWAY_SERVER", jvm._gateway_client)


def callback_connections() -> int:
    """Callback connections opened by JVM pool threads and still open (benchmarks, tests)."""
    with _lock:
        return len(_CALLERS)


__all__ = ["callback_connections", "ensure_callbacks", "note_callback", "reap"]
