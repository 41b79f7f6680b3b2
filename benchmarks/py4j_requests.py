"""Where a classic Spark query's py4j requests go, by command: Delta vs Parquet on TPC-H (issue 32, item 1 Spark).

Why: on a classic session every request the driver's Python process sends to its JVM is a socket exchange (0.3-3 ms
on a loaded driver), and a TPC-H query over Delta tables sent +115-270 more of them than the same query over the
very same files as Parquet (`tpch.py --profile`), beyond the 8 of a listing. This script says which: it wraps the
gateway client's `send_command` (here only - nothing in the product is changed) and files every request under
- its phase: `spark.sql(q)`, `.collect()`, and `release` (dropping the DataFrame: py4j's finalizer deletes of the
  JVM objects the query's Python side held, sent by py4j's finalizer thread; drained before the next phase);
- its command kind (py4j protocol: call, static call, constructor, reflection - `jvm.a.b.C` resolves one package
  segment per request -, field, memory delete, list, array, JVM view);
- its target (the JVM class of the object called or deleted - asked once per object id with requests that are not
  counted -, or the static class / reflected name) and method;
- its origin in Python: the first deltakernel frame on the stack, else the first pyspark frame, else the thread;
  for a delete, the origin that created the object (a callback's JVM arguments count as created by that callback).
JVM -> Python callbacks (the Delta file index's `listFiles`, `rootPaths`, ...) are counted apart by method.

    PYTHONPATH=src .venv/bin/python benchmarks/py4j_requests.py --queries 6,22,5 \
        --data-dir .bench-data/tpch-sf1 --variants parquet,converted --runs 2 [--json out.json]

Counts only (deterministic up to Spark's thread pools: a new pool thread's first callback costs 2 more); nothing
here is timed. One warm-up run of each variant first (per-gateway lookups out of the way), then `--runs` rounds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

PHASES = ("sql", "collect", "release")
_KINDS = {"c": "call", "i": "constructor", "r": "reflection", "f": "field", "m": "memory", "l": "list",
          "a": "array", "j": "jvmview", "d": "dir", "h": "help", "p": "exception", "S": "stream"}


class Recorder:
    """Counts the requests of one gateway client by phase, kind, target and origin (see the module docstring)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.original = client.send_command
        self.phase: str | None = None
        self.lock = threading.Lock()
        self.classes: dict[str, str] = {}  # object id -> JVM class name (ids are never reused by py4j)
        self.created: dict[str, str] = {}  # object id -> origin that received it
        self.local = threading.local()  # the callback a thread is serving
        self.by_phase: dict[str, dict[str, Counter[str]]] = {}
        self.callbacks: dict[str, Counter[str]] = {}
        self._looking_up = threading.local()

    # ------------------------------------------------------------------ bookkeeping
    def reset(self) -> None:
        self.by_phase = {p: {"kind": Counter(), "target": Counter(), "origin": Counter()} for p in PHASES}
        self.callbacks = {p: Counter() for p in PHASES}

    def install(self) -> None:
        from py4j import clientserver

        rec = self
        self.client.send_command = self.send_command
        self._call_proxy = clientserver.ClientServerConnection._call_proxy
        self._get_params = clientserver.ClientServerConnection._get_params

        def call_proxy(conn: Any, obj_id: str, stream: Any) -> Any:
            tap = _Tap(stream)
            try:
                return rec._call_proxy(conn, obj_id, tap)
            finally:
                rec.local.callback = None

        def get_params(conn: Any, stream: Any) -> Any:
            method = getattr(stream, "first", None) or "?"
            rec.local.callback = method
            if rec.phase is not None:
                with rec.lock:
                    rec.callbacks[rec.phase][method] += 1
            params = rec._get_params(conn, stream)
            for p in params:
                target = getattr(p, "_target_id", None)
                if isinstance(target, str):
                    rec.created[target] = f"callback {method} (argument)"
            return params

        clientserver.ClientServerConnection._call_proxy = call_proxy
        clientserver.ClientServerConnection._get_params = get_params

    def uninstall(self) -> None:
        from py4j import clientserver

        self.client.__dict__.pop("send_command", None)
        clientserver.ClientServerConnection._call_proxy = self._call_proxy
        clientserver.ClientServerConnection._get_params = self._get_params

    # ------------------------------------------------------------------ the wrapper
    def send_command(self, command: str, *a: Any, **kw: Any) -> Any:
        if getattr(self._looking_up, "on", False) or self.phase is None:
            return self.original(command, *a, **kw)
        kind, target, origin = self.classify(command)
        answer = self.original(command, *a, **kw)
        if isinstance(answer, str) and answer.startswith("yro"):
            self.created[answer[2:]] = origin
        phase = self.phase
        if phase is not None:
            with self.lock:
                c = self.by_phase[phase]
                c["kind"][kind] += 1
                c["target"][f"{kind} {target}"] += 1
                c["origin"][f"{kind} <- {origin}"] += 1
        return answer

    def classify(self, command: str) -> tuple[str, str, str]:
        lines = command.split("\n")
        kind = _KINDS.get(lines[0], lines[0])
        origin = _origin(getattr(self.local, "callback", None))
        if kind == "call":
            target, method = lines[1], lines[2] if len(lines) > 2 else "?"
            if target.startswith("z:"):
                return "static", f"{target[2:]}.{method}", origin
            return "call", f"{self.class_of(target)}.{method}", origin
        if kind == "memory" and len(lines) > 2 and lines[1] == "d":
            oid = lines[2]
            return "delete", self.class_of(oid), self.created.pop(oid, "?")
        if kind == "constructor":
            return kind, lines[1], origin
        if kind == "reflection":
            return kind, " ".join(lines[1:3]), origin
        if kind == "field":
            return kind, f"{self.class_of(lines[2])}.{lines[3] if len(lines) > 3 else '?'}", origin
        return kind, " ".join(lines[1:2]), origin

    def class_of(self, oid: str) -> str:
        """The JVM class of object `oid` (three requests the counts leave out, once per object)."""
        if not oid.startswith("o"):
            return {"t": "entry_point", "GATEWAY_SERVER": "GatewayServer"}.get(oid, oid)
        found = self.classes.get(oid)
        if found is not None:
            return found
        self._looking_up.on = True
        try:
            cls = self.original(f"c\n{oid}\ngetClass\ne\n")
            name = "?"
            if cls.startswith("yro"):
                got = self.original(f"c\n{cls[2:]}\ngetName\ne\n")
                name = got[2:] if got.startswith("ys") else "?"
                self.original(f"m\nd\n{cls[2:]}\ne\n")
        except Exception:
            name = "?"
        finally:
            self._looking_up.on = False
        self.classes[oid] = name
        return name


class _Tap:
    """The callback stream, remembering its first line (the Python method the JVM calls)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.first: str | None = None

    def readline(self, *a: Any) -> Any:
        line = self._stream.readline(*a)
        if self.first is None:
            self.first = line.decode("utf-8").rstrip("\n") if isinstance(line, bytes) else str(line).rstrip("\n")
        return line

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _origin(callback: str | None) -> str:
    """The first deltakernel frame of the caller's stack, else the first pyspark frame, else the thread's name."""
    frame = sys._getframe(3)
    pyspark = None
    while frame is not None:
        fn = frame.f_code.co_filename.replace("\\", "/")
        if "/deltakernel/" in fn:
            mod = fn.split("/deltakernel/", 1)[1].removesuffix(".py").replace("/", ".")
            where = f"dk {mod}.{frame.f_code.co_name}"
            return f"{where} [in {callback}]" if callback else where
        if pyspark is None and "/pyspark/" in fn and "/py4j/" not in fn:
            mod = fn.split("/pyspark/", 1)[1].removesuffix(".py").replace("/", ".")
            pyspark = f"pyspark {mod}.{frame.f_code.co_name}"
        frame = frame.f_back
    if pyspark is not None:
        return pyspark
    return f"callback {callback}" if callback else f"thread {threading.current_thread().name}"


def _drain(client: Any) -> None:
    """Let py4j's finalizer thread send the deletes of what Python dropped."""
    gc.collect()
    deque = getattr(client, "finalizer_deque", None)
    for _ in range(200):
        if not deque:
            break
        time.sleep(0.01)
    time.sleep(0.2)


def measure(spark: Any, contenders: list[Any], queries: list[int], runs: int, sf: float) -> dict[str, Any]:
    from tpch_queries import render

    client = spark._jvm._gateway_client
    rec = Recorder(client)
    rec.install()
    out: dict[str, Any] = {}
    try:
        for q in queries:
            sql = render(q, "spark", sf)
            for c in contenders:  # warm-up: per-gateway lookups, Spark's code paths
                c.register()
                c.run(sql)
            for i in range(runs):
                for c in contenders[i % len(contenders):] + contenders[:i % len(contenders)]:
                    c.register()
                    _drain(client)
                    rec.reset()
                    rec.phase = "sql"
                    df = spark.sql(sql)
                    rec.phase = "collect"
                    df.collect()
                    rec.phase = "release"
                    del df
                    _drain(client)
                    rec.phase = None
                    out.setdefault(f"Q{q}", {}).setdefault(c.name, []).append({
                        "phases": {p: {k: dict(v) for k, v in rec.by_phase[p].items()} for p in PHASES},
                        "callbacks": {p: dict(rec.callbacks[p]) for p in PHASES}})
    finally:
        rec.phase = None
        rec.uninstall()
    return out


def total(run: dict[str, Any], phase: str | None = None) -> int:
    phases = [phase] if phase else list(PHASES)
    return sum(sum(run["phases"][p]["kind"].values()) for p in phases)


def report(result: dict[str, Any], top: int) -> str:
    lines = []
    for q, variants in result.items():
        names = list(variants)
        lines.append(f"\n## {q}: requests per phase (each run)\n")
        lines.append("| variant | " + " | ".join(PHASES) + " | total | callbacks (JVM -> Python) |")
        lines.append("|---|" + "---|" * (len(PHASES) + 2))
        for name in names:
            for run in variants[name]:
                cbs = Counter()
                for p in PHASES:
                    cbs.update(run["callbacks"][p])
                lines.append(f"| {name} | " + " | ".join(str(total(run, p)) for p in PHASES)
                             + f" | {total(run)} | " + ", ".join(f"{k} {v}" for k, v in cbs.most_common()) + " |")
        last = {n: variants[n][-1] for n in names}
        for view in ("kind", "target", "origin"):
            lines.append(f"\n### {q}: by {view}, phase by phase (last run)\n")
            lines.append("| phase | " + view + " | " + " | ".join(names) + " |")
            lines.append("|---|---|" + "---|" * len(names))
            for p in PHASES:
                keys: Counter[str] = Counter()
                for n in names:
                    keys.update(last[n]["phases"][p][view])
                ranked = sorted(keys, key=lambda k: (-max(abs(last[n]["phases"][p][view].get(k, 0)
                                                              - last[names[0]]["phases"][p][view].get(k, 0))
                                                          for n in names), -keys[k], k))
                for k in ranked[:top]:
                    lines.append(f"| {p} | {k} | " + " | ".join(str(last[n]["phases"][p][view].get(k, 0))
                                                                for n in names) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", default=str(HERE.parent / ".bench-data" / "tpch-sf1"))
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--queries", default="6,22,5")
    ap.add_argument("--variants", default="parquet,converted")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--top", type=int, default=25, help="rows per table (largest Delta - Parquet differences first)")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import tpch

    spark, stop = tpch.spark_session("spark-classic", args)
    load = [os.getloadavg()]
    try:
        data = Path(args.data_dir)
        contenders = [tpch.SparkContender(spark, "spark-classic", v, data, v != "parquet")
                      for v in args.variants.split(",")]
        for c in contenders:
            c.prepare()
        result = measure(spark, contenders, [int(q) for q in args.queries.split(",") if q], args.runs, args.sf)
    finally:
        load.append(os.getloadavg())
        stop()
    print(report(result, args.top))
    print(f"\nload average before / after: {load[0]} / {load[1]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load": load, "result": result}, indent=1))
    return result


if __name__ == "__main__":
    main()
