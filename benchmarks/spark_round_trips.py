"""The driver's round trips to Spark during one operation, by phase: py4j commands (classic) or gRPC requests
(Spark Connect), counted at the client and attributed to the deltakernel function on the caller's stack.

Why: on `local[2]` a Spark MERGE of a small source spends much of its time on the driver between jobs, and on a
classic session every Column, DataFrame and conf call is one or more socket round trips to the JVM (each also
waits for whatever the JVM does: analysis, optimization). Counting them per phase, with the time spent waiting
for the answers, shows what is repeated or avoidable; the counts do not depend on the machine's load, the
seconds do. Used by `profile_spark_merge.py --count` only (tests count their own way).

A round trip is attributed to the innermost *phase* function on the calling thread's stack (`PHASES`: the MERGE's
steps); round trips of other threads (py4j's finalizer, JVM callbacks such as the Delta file index's listing)
count under "(thread <name>)". Within a phase, the innermost deltakernel / pyspark function that sent it is kept
too (the top `detail` of each phase are printed), and, on classic, the py4j command kind (call, reflection,
constructor, delete of a Python-held JVM object, ...).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# (source file stem, function name) -> phase; the innermost one on the stack names the round trip's phase
PHASES: dict[tuple[str, str], str] = {
    ("merge", "execute"): "builder.execute (conf, result frame)",
    ("merge", "merge"): "merge(): target, checks, transaction",
    ("merge_plan", "__init__"): "MergePlan()",
    ("merge_plan", "prepare"): "MergePlan.prepare (clauses analysed)",
    ("merge", "_driver_rows_plan"): "driver rows plan (size estimate)",
    ("merge_plan", "materialize"): "source materialize (persist)",
    ("merge_plan", "source_stats"): "source job (stats + rows)",
    ("merge", "_outputs"): "written values planned",
    ("merge_plan", "source_update_values"): "source_update_values",
    ("merge", "_pairs"): "pairs planned (target scan + join)",
    ("touched", "deletion_vectors_on_driver"): "scan + join job, driver DVs",
    ("merge", "_dv_job"): "DV job",
    ("merge", "_source_rows"): "written rows planned",
    ("driver_rows", "write"): "driver writes rows",
    ("merge", "_high_water_marks"): "identity high-water marks",
    ("commit", "run_commit"): "commit",
    ("merge_plan", "release"): "release (unpersist)",
    ("merge", "_run"): "merge run (other)",
}
_PY4J = ("py4j", "java_gateway", "protocol", "clientserver", "java_collections")


def _stem(filename: str) -> str:
    name = filename.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".py") else name


def _where(skip: int) -> tuple[str, str]:
    """(phase, detail) of the calling thread: the innermost PHASES function on the stack and the innermost
    function outside py4j and this module (`module.function`), with the innermost deltakernel line when that
    function is not deltakernel's (`module.function < dk_module:line`)."""
    frame = sys._getframe(skip)
    detail = phase = None
    ours = False  # `detail` names a deltakernel line already
    while frame is not None:
        code = frame.f_code
        path = code.co_filename
        if detail is None and "/py4j/" not in path and "/grpc/" not in path and \
                not path.endswith("spark_round_trips.py") and "/connect/client/" not in path:
            detail = f"{_stem(path)}.{code.co_name}"
            if "/deltakernel/" in path:
                detail, ours = f"{detail}:{frame.f_lineno}", True
        elif detail is not None and not ours and "/deltakernel/" in path:
            detail, ours = f"{detail} < {_stem(path)}:{frame.f_lineno}", True
        if phase is None and "/deltakernel/" in path:
            phase = PHASES.get((_stem(path), code.co_name))
            if phase is not None:
                break
        frame = frame.f_back  # type: ignore[assignment]
    if phase is None:
        phase = "outside the MERGE" if threading.current_thread() is threading.main_thread() else \
            f"(thread {threading.current_thread().name.split('-')[0]})"
    return phase, detail or "?"


_KINDS = {"c": "call", "r": "reflection", "i": "constructor", "m": "memory (delete)", "f": "field", "a": "array",
          "l": "list", "j": "import", "d": "dir", "h": "help", "s": "set", "t": "stream", "y": "java_import",
          "q": "shutdown"}


class RoundTrips:
    """Counts (and times) round trips by phase while `counting()` is active."""

    def __init__(self) -> None:
        self.n: Counter[str] = Counter()
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.detail: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.kinds: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.active = False

    def record(self, kind: str, seconds: float, skip: int) -> str | None:
        """Count one round trip of `kind` (its phase from the caller's stack, `skip` frames up); its phase."""
        if not self.active:
            return None
        phase, detail = _where(skip + 1)
        with self._lock:
            self.n[phase] += 1
            self.seconds[phase] += seconds
            self.detail[phase][detail] += 1
            self.kinds[kind] += 1
        return phase

    def wait(self, phase: str | None, seconds: float) -> None:
        """More time waited for an answer of `phase` (a streamed answer read after the call returned)."""
        if phase is not None:
            with self._lock:
                self.seconds[phase] += seconds

    @contextmanager
    def counting(self) -> Iterator[RoundTrips]:
        """Count from now until the block ends (the counts of a previous block are dropped)."""
        with self._lock:
            self.n.clear()
            self.seconds.clear()
            self.detail.clear()
            self.kinds.clear()
        self.active = True
        try:
            yield self
        finally:
            self.active = False

    def total(self) -> int:
        return sum(self.n.values())

    def report(self, title: str, details: int = 3) -> str:
        lines = [f"{title}: {self.total()} in all, {sum(self.seconds.values()):.3f} s waiting for the answers"]
        for phase, n in self.n.most_common():
            top = ", ".join(f"{d} {k}" for d, k in self.detail[phase].most_common(details))
            lines.append(f"  {n:5d}  {self.seconds[phase]:7.3f} s  {phase}: {top}")
        if self.kinds:
            lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in self.kinds.most_common()))
        return "\n".join(lines)


def count_py4j(spark: Any) -> RoundTrips:
    """A RoundTrips fed by every py4j command the session's gateway client sends (classic sessions)."""
    counter = RoundTrips()
    client = spark._jvm._gateway_client
    send = client.send_command

    def counted(command: str, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return send(command, *args, **kwargs)
        finally:
            counter.record(_KINDS.get(command[:1], command[:1]), time.perf_counter() - start, 2)

    client.send_command = counted
    return counter


def count_connect(spark: Any) -> RoundTrips:
    """A RoundTrips fed by every request the session's Connect client sends: ExecutePlan (`execute`), AnalyzePlan
    (`analyze`), Config (`config`), artifacts (`artifacts`, e.g. a UDF's or a broadcast's payload)."""
    counter = RoundTrips()
    client = spark.client
    for name, kind in (("_execute_and_fetch_as_iterator", "execute"), ("_execute", "execute"),
                       ("_analyze", "analyze"), ("config", "config"), ("add_artifacts", "artifacts")):
        original = getattr(client, name, None)
        if original is None:
            continue

        def wrapper(*args: Any, _original: Any = original, _kind: str = kind, **kwargs: Any) -> Any:
            start = time.perf_counter()
            out = _original(*args, **kwargs)
            phase = counter.record(_kind, time.perf_counter() - start, 2)
            return _timed(out, counter, phase) if hasattr(out, "__next__") else out

        setattr(client, name, wrapper)
    return counter


def _timed(answers: Iterator[Any], counter: RoundTrips, phase: str | None) -> Iterator[Any]:
    """A streamed answer (ExecutePlan's responses), the time its reading waits counted to `phase`."""
    while True:
        start = time.perf_counter()
        try:
            item = next(answers)
        except StopIteration:
            counter.wait(phase, time.perf_counter() - start)
            return
        counter.wait(phase, time.perf_counter() - start)
        yield item


__all__ = ["PHASES", "RoundTrips", "count_connect", "count_py4j"]
