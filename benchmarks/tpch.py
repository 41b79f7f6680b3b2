"""TPC-H on Delta tables: the "Delta tax" of deltakernel on Spark and the embedded engines (issue 32, item 1).

What is compared, over identical rows (data from `tpchgen-cli`, PyPI, cached under `--data-dir`):
* variants of the eight tables: `parquet` (the files as tpchgen-cli wrote them), `converted` (a Delta table over
  the very same files: hard links, then deltakernel's `convert_to_deltalake`), `written` (Delta tables written by
  deltakernel's own writer from those rows, with statistics; customer and supplier partitioned by their nation
  key - see docs/decisions.md, "TPC-H benchmark");
* engines, each family in a fresh process: `spark-classic` and `spark-connect` (local[2]; Delta through
  `deltakernel.spark`), `embedded` (DataFusion through `deltakernel.datafusion` on every variant - the Delta
  variants in deltakernel's own session, `dkdf.session_context()`, as deltalake's runs in its own -, deltalake's
  `QueryBuilder` and DuckDB's delta extension on the Delta variants, DuckDB's `read_parquet` on the Parquet
  files) and `sail` (pysail's Spark Connect server reading the same tables with its own Delta reader).
Per query: one warm-up of every contender (rows checked equal: sorted, numbers to 4 decimals and 9 significant digits), then
`--runs` rounds, each running every contender once in a rotated order (alternating, so a load spike hits all).
Reported: per-query median seconds and ratios, geometric means; `--json` keeps everything.

    .venv/bin/python benchmarks/tpch.py                       # SF1, every engine, 3 runs
    .venv/bin/python benchmarks/tpch.py --sf 10 --engine spark-classic --queries 5,6,9 --runs 5
    .venv/bin/python benchmarks/tpch.py --quick --engine embedded  # SF 0.01, 2 runs (the smoke test)
    .venv/bin/python benchmarks/tpch.py --engine spark-classic --plans  # DPP / runtime filters in the plans
    .venv/bin/python benchmarks/tpch.py --engine spark-classic,spark-connect --queries 6 --runs 1 --profile 6
                                                              # where the Delta time goes, per phase

Measurements only: nothing here asserts a time (tests/benchmarks/test_tpch_quick.py asserts rows only).
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tpch_queries import TABLES, render  # noqa: E402

ROOT = HERE.parent
VARIANTS = ("parquet", "converted", "written")
ENGINES = ("spark-classic", "spark-connect", "embedded", "sail")
#: tables deltakernel writes partitioned (docs/decisions.md, "TPC-H benchmark"): the nation key is the join key
#: of the dimension tables that queries 5, 7, 8, 9, 10, 11, 20 and 21 filter through `nation` / `region`, so
#: Spark's dynamic partition pruning has something to prune; 25 partitions keep files large enough at SF1
PARTITION_BY = {"customer": ["c_nationkey"], "supplier": ["s_nationkey"]}
#: tpchgen-cli `--parts` per table at SF1 (scaled with SF): lineitem and orders in several files as a
#: generator run on a cluster writes them (~55 MiB lineitem files at SF1), the small tables in one
PARTS_PER_SF = {"lineitem": 4, "orders": 4, "partsupp": 1, "part": 1, "customer": 1}


# ----------------------------------------------------------------------------- data
def tpchgen() -> str:
    exe = Path(sys.executable).with_name("tpchgen-cli")
    if exe.exists():
        return str(exe)
    found = shutil.which("tpchgen-cli")
    if not found:
        raise SystemExit("tpchgen-cli is missing: pip install 'deltakernel[test]' (tpchgen-cli>=4,<5)")
    return found


def generate(data: Path, sf: float) -> None:
    """tpchgen-cli Parquet files under `data/parquet/<table>/` (kept: generated once per directory)."""
    out = data / "parquet"
    if (out / ".complete").exists():
        return
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for table in TABLES:
        parts = max(1, round(PARTS_PER_SF.get(table, 0) * sf))
        subprocess.run([tpchgen(), "parquet", "-s", str(sf), "--parts", str(parts), "-T", table, "-q",
                        "-o", str(out)], check=True)
    (out / ".complete").write_text("ok")


def convert(data: Path) -> None:
    """`converted/<table>`: hard links of the Parquet files (the very same bytes) + deltakernel's CONVERT."""
    from deltakernel import convert_to_deltalake

    out = data / "converted"
    if (out / ".complete").exists():
        return
    shutil.rmtree(out, ignore_errors=True)
    for table in TABLES:
        (out / table).mkdir(parents=True)
        for f in sorted((data / "parquet" / table).glob("*.parquet")):
            try:
                os.link(f, out / table / f.name)
            except OSError:
                shutil.copy2(f, out / table / f.name)
        convert_to_deltalake(str(out / table))
    (out / ".complete").write_text("ok")


def write_tables(data: Path) -> None:
    """`written/<table>`: the same rows through deltakernel's writer (default target file size, statistics)."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    from deltakernel import write_deltalake

    out = data / "written"
    if (out / ".complete").exists():
        return
    shutil.rmtree(out, ignore_errors=True)
    for table in TABLES:
        source = ds.dataset(str(data / "parquet" / table), format="parquet")
        # the generator's string_view columns as plain strings (Delta has one string type)
        schema = pa.schema([pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type, f.nullable)
                            for f in source.schema])
        batches = (b.cast(schema) for b in source.to_batches(batch_size=131072))
        write_deltalake(str(out / table), batches, schema=schema, partition_by=PARTITION_BY.get(table))
    (out / ".complete").write_text("ok")


def prepare(data: Path, sf: float, variants: list[str]) -> None:
    generate(data, sf)
    if "converted" in variants:
        convert(data)
    if "written" in variants:
        write_tables(data)


def table_path(data: Path, variant: str, table: str) -> str:
    return str(data / variant / table)


# ----------------------------------------------------------------------------- rows
def _norm(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, decimal.Decimal)):
        x = float(value)
        if x == 0 or math.isnan(x):
            return 0.0 if x == 0 else "nan"
        return float(f"{round(x, 4):.9g}")  # avg: decimal(., 6) on Spark / DataFusion, double on DuckDB
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()[:10]
    return str(value)


def normalize(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows comparable across engines: numbers as floats to 4 decimals and 9 significant digits, dates as text, sorted."""
    return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)


def arrow_rows(table: Any) -> list[tuple[Any, ...]]:
    cols = [c.to_pylist() for c in table.columns]
    return list(zip(*cols)) if cols else []


# ----------------------------------------------------------------------------- contenders
class Contender:
    """One engine on one variant: `prepare()` once (untimed: sessions, registrations), `run(sql)` -> rows."""

    name: str
    dialect: str

    def prepare(self) -> None:
        pass

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        raise NotImplementedError


class SparkContender(Contender):
    """A Spark session's temp views over one variant, re-registered before each query (untimed)."""

    dialect = "spark"

    def __init__(self, spark: Any, engine: str, variant: str, data: Path, delta: bool) -> None:
        self.spark, self.variant, self.data, self.delta = spark, variant, data, delta
        self.name = f"{engine}:{variant}"
        self.frames: dict[str, Any] = {}

    def prepare(self) -> None:
        for t in TABLES:
            path = table_path(self.data, self.variant, t)
            reader = self.spark.read
            self.frames[t] = reader.format("delta").load(path) if self.delta else reader.parquet(path)
        self.register()

    def register(self) -> None:
        for t, df in self.frames.items():
            df.createOrReplaceTempView(t)

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.spark.sql(sql).collect()]


class DataFusionContender(Contender):
    dialect = "datafusion"

    def __init__(self, variant: str, data: Path) -> None:
        self.variant, self.data, self.name = variant, data, f"datafusion:{variant}"

    def prepare(self) -> None:
        import datafusion

        if self.variant == "parquet":  # DataFusion's own defaults over the plain files
            self.ctx = datafusion.SessionContext()
            for t in TABLES:
                self.ctx.register_parquet(t, table_path(self.data, "parquet", t) + "/", file_extension=".parquet")
            return
        import deltakernel.datafusion as dkdf

        # deltakernel's session (its settings: datafusion/session_defaults.py), as deltalake's QueryBuilder runs in
        # deltalake's (DeltaSessionConfig); the same session deltakernel.QueryBuilder uses
        self.ctx = dkdf.session_context()
        for t in TABLES:
            dkdf.register(self.ctx, t, table_path(self.data, self.variant, t))

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        if self.variant == "parquet":
            return arrow_rows(self.ctx.sql(sql).to_arrow_table())
        import deltakernel.datafusion as dkdf

        # deltakernel's SQL entry point (as deltalake's contender runs QueryBuilder.execute): per table, the
        # Parquet row filter only where a join's dynamic filter reaches the scan (datafusion/row_filters.py)
        return arrow_rows(dkdf.sql(self.ctx, sql).to_arrow_table())


class DeltalakeContender(Contender):
    dialect = "datafusion"

    def __init__(self, variant: str, data: Path) -> None:
        self.variant, self.data, self.name = variant, data, f"deltalake-qb:{variant}"

    def prepare(self) -> None:
        from deltalake import DeltaTable, QueryBuilder

        self.qb = QueryBuilder()
        for t in TABLES:
            self.qb.register(t, DeltaTable(table_path(self.data, self.variant, t)))

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        import pyarrow as pa

        return arrow_rows(pa.table(self.qb.execute(sql).read_all()))


def duckdb_delta_extension() -> str:
    import duckdb_extension_delta

    base = Path(duckdb_extension_delta.__file__).parent
    found = sorted(base.rglob("delta.duckdb_extension"))
    if not found:
        raise SystemExit(f"no delta.duckdb_extension under {base}")
    return str(found[-1])


class DuckDBContender(Contender):
    dialect = "duckdb"

    def __init__(self, variant: str, data: Path) -> None:
        self.variant, self.data, self.name = variant, data, f"duckdb:{variant}"

    def prepare(self) -> None:
        import duckdb

        self.con = duckdb.connect(config={"allow_unsigned_extensions": "true", "threads": os.cpu_count() or 2})
        self.con.execute(f"LOAD '{duckdb_delta_extension()}'")
        for t in TABLES:
            path = table_path(self.data, self.variant, t)
            source = f"read_parquet('{path}/*.parquet')" if self.variant == "parquet" else f"delta_scan('{path}')"
            self.con.execute(f"CREATE VIEW {t} AS SELECT * FROM {source}")

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.con.execute(sql).fetchall()]


# ----------------------------------------------------------------------------- sessions
def spark_session(engine: str, args: argparse.Namespace) -> tuple[Any, Callable[[], None]]:
    """A local[2] session of the engine's kind (deltakernel enabled) and a function that stops it."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import deltakernel.spark as dks

    confs = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.ui.enabled": "false",
             "spark.sql.session.timeZone": "UTC", "spark.driver.memory": args.driver_memory,
             "spark.ui.showConsoleProgress": "false"}
    if engine == "spark-classic":
        builder = SparkSession.builder.master("local[2]").appName("tpch")
        for k, v in confs.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        dks.enable(spark)
        return spark, spark.stop
    # Spark Connect: pyspark starts a local Connect server (its own JVM) for remote("local[2]")
    builder = SparkSession.builder.remote("local[2]").appName("tpch")
    for k, v in confs.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    dks.enable(spark)
    return spark, spark.stop


def sail_session() -> tuple[Any, Callable[[], None]]:
    from pysail.spark import SparkConnectServer
    from pyspark.sql import SparkSession

    server = SparkConnectServer("127.0.0.1", 0)
    server.start(background=True)
    host, port = server.listening_address
    spark = SparkSession.builder.remote(f"sc://{host}:{port}").getOrCreate()

    def stop() -> None:
        spark.stop()
        server.stop()

    return spark, stop


def contenders_for(engine: str, variants: list[str], data: Path, args: argparse.Namespace
                   ) -> tuple[list[Contender], Callable[[], None], Any]:
    if engine in ("spark-classic", "spark-connect"):
        spark, stop = spark_session(engine, args)
        return [SparkContender(spark, engine, v, data, v != "parquet") for v in variants], stop, spark
    if engine == "sail":
        spark, stop = sail_session()
        return [SparkContender(spark, engine, v, data, v != "parquet") for v in variants], stop, spark
    if engine == "embedded":
        cs: list[Contender] = []
        for v in variants:
            cs.append(DataFusionContender(v, data))
            if v != "parquet":
                cs.append(DeltalakeContender(v, data))
            cs.append(DuckDBContender(v, data))
        return cs, lambda: None, None
    raise SystemExit(f"unknown engine {engine!r}; one of {ENGINES}")


# ----------------------------------------------------------------------------- one engine (a worker process)
def run_engine(engine: str, args: argparse.Namespace) -> dict[str, Any]:
    data = Path(args.data_dir)
    variants = args.variants
    queries = args.queries
    contenders, stop, spark = contenders_for(engine, variants, data, args)
    result: dict[str, Any] = {"engine": engine, "sf": args.sf, "runs": args.runs, "queries": {},
                              "load_before": os.getloadavg()}
    try:
        for c in contenders:
            c.prepare()
        for q in queries:
            entry: dict[str, Any] = {"times": {c.name: [] for c in contenders}, "rows": {}, "errors": {}}
            rows: dict[str, list[tuple[Any, ...]]] = {}
            for c in contenders:  # warm-up; rows checked
                try:
                    if isinstance(c, SparkContender):
                        c.register()
                    rows[c.name] = normalize(c.run(render(q, c.dialect, args.sf)))
                    entry["rows"][c.name] = len(rows[c.name])
                except Exception as e:  # reported, not fatal: the other contenders still run
                    entry["errors"][c.name] = f"{type(e).__name__}: {str(e)[:400]}"
            reference = next(iter(rows.values()), None)
            entry["mismatch"] = sorted(name for name, r in rows.items() if r != reference)
            entry["digest"] = repr(reference)[:200] if reference is not None else None
            entry["reference"] = reference if args.keep_rows else None
            ok = [c for c in contenders if c.name in rows]
            for i in range(args.runs):
                shift = i % len(ok) if ok else 0
                for c in ok[shift:] + ok[:shift]:
                    sql = render(q, c.dialect, args.sf)
                    if isinstance(c, SparkContender):
                        c.register()
                    start = time.perf_counter()
                    c.run(sql)
                    entry["times"][c.name].append(time.perf_counter() - start)
            result["queries"][str(q)] = entry
            med = {n: statistics.median(t) for n, t in entry["times"].items() if t}
            print(f"[{engine}] Q{q}: " + ", ".join(f"{n} {s:.3f}s" for n, s in med.items())
                  + (f"  MISMATCH {entry['mismatch']}" if entry["mismatch"] else "")
                  + (f"  ERRORS {list(entry['errors'])}" if entry["errors"] else ""), file=sys.stderr, flush=True)
        # the diagnostics never cost the timings above: a failure is reported in the results
        if spark is not None and args.plans and engine.startswith("spark"):
            try:
                result["plans"] = plan_checks(spark, contenders, args)
            except Exception as e:
                result["plans_error"] = f"{type(e).__name__}: {str(e)[:400]}"
        if spark is not None and args.profile and engine.startswith("spark"):
            try:
                result["profile"] = profile_phases(spark, contenders, args)
            except Exception as e:
                result["profile_error"] = f"{type(e).__name__}: {str(e)[:400]}"
    finally:
        result["load_after"] = os.getloadavg()
        stop()
    return result


# ----------------------------------------------------------------------------- plans and phases (Spark)
PLAN_MARKERS = {"dynamic partition pruning": "dynamicpruningexpression", "runtime bloom filter": "might_contain",
                "runtime IN-subquery filter": "in subquery"}


def _executed_plan(spark: Any, sql: str) -> str:
    df = spark.sql(sql)
    df.collect()
    if hasattr(df, "_jdf"):  # classic: the executed (final adaptive) plan
        return str(df._jdf.queryExecution().executedPlan().toString())
    return str(df._explain_string(mode="formatted")) if hasattr(df, "_explain_string") else ""


def plan_checks(spark: Any, contenders: list[Contender], args: argparse.Namespace) -> dict[str, Any]:
    """Which of Spark's runtime pruning features appear in the executed plans of Q5 / Q9 / Q21 per variant.

    Runtime bloom filters apply only when the filtered scan is larger than
    `spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold` (10 GB), so that threshold is
    lowered to 1 MB here (for the check only) to see whether they would apply to a Delta scan at all.
    """
    out: dict[str, Any] = {}
    spark.conf.set("spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold", "1MB")
    spark.conf.set("spark.sql.optimizer.runtime.bloomFilter.enabled", "true")
    try:
        for q in (5, 9, 21):
            for c in contenders:
                assert isinstance(c, SparkContender)
                c.register()
                plan = _executed_plan(spark, render(q, "spark", args.sf)).lower()
                out[f"Q{q} {c.name}"] = {label: plan.count(marker) for label, marker in PLAN_MARKERS.items()}
                if args.plans_dir:
                    Path(args.plans_dir).mkdir(parents=True, exist_ok=True)
                    (Path(args.plans_dir) / f"q{q}-{c.name.replace(':', '-')}.txt").write_text(plan)
    finally:
        spark.conf.unset("spark.sql.optimizer.runtime.bloomFilter.applicationSideScanSizeThreshold")
    return out


def profile_phases(spark: Any, contenders: list[Contender], args: argparse.Namespace) -> dict[str, Any]:
    """Where one query's time goes, per contender (`--profile-runs` warm runs each, alternating; medians): the
    `spark.sql()` call (routing; Connect also analyses there unless the router sends the query lazily) and the
    action apart, the driver process's CPU seconds (this Python process: routing, callbacks - load-independent,
    unlike wall time), requests to Spark (classic: py4j round trips from this process; Connect: gRPC requests by
    kind), the Delta file index's callbacks (classic; count and time per method), Spark's phase timings (classic:
    QueryExecution's tracker), the scans of the final plan (classic: files and tasks per scan) and the driver's
    Python profile of the last run."""
    import cProfile
    import io
    import pstats

    from deltakernel.spark.scan import file_index

    calls: dict[str, list[float]] = {}
    originals: dict[str, Any] = {}
    for name in ("listFiles", "sizeInBytes", "partitionSchema", "rootPaths", "inputFiles", "toString",
                 "hashCode", "equals", "isTimeTravel", "metadataOpsTimeNs", "refresh"):
        orig = getattr(file_index.DeltaFileIndex, name, None)
        if orig is None:
            continue
        originals[name] = orig

        def timed(self: Any, *a: Any, __orig: Any = orig, __name: str = name) -> Any:
            start = time.perf_counter()
            try:
                return __orig(self, *a)
            finally:
                calls.setdefault(__name, []).append(time.perf_counter() - start)

        setattr(file_index.DeltaFileIndex, name, timed)
    requests: dict[str, int] = {}
    restore = _count_requests(spark, requests)
    classic = hasattr(spark, "_jsparkSession")
    out: dict[str, Any] = {}
    try:
        for q in args.profile:
            sql = render(q, "spark", args.sf)
            runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in contenders}
            for c in contenders:
                assert isinstance(c, SparkContender)
                c.register()
                c.run(sql)  # warm
            for i in range(args.profile_runs + 1):  # the last round only for the Python profile (it slows Python)
                profiled = i == args.profile_runs
                shift = i % len(contenders)
                for c in contenders[shift:] + contenders[:shift]:
                    assert isinstance(c, SparkContender)
                    c.register()
                    calls.clear()
                    requests.clear()
                    prof = cProfile.Profile() if profiled else None
                    cpu0, t0 = time.process_time(), time.perf_counter()
                    if prof is not None:
                        prof.enable()
                    df = spark.sql(sql)
                    t1 = time.perf_counter()
                    df.collect()
                    if prof is not None:
                        prof.disable()
                    t2, cpu1 = time.perf_counter(), time.process_time()
                    if prof is not None:
                        stream = io.StringIO()
                        pstats.Stats(prof, stream=stream).sort_stats("cumulative").print_stats(25)
                        runs[c.name][-1]["driver_python_profile"] = stream.getvalue()[:6000]
                        continue
                    entry: dict[str, Any] = {
                        "wall_s": t2 - t0, "sql_call_s": t1 - t0, "action_s": t2 - t1, "driver_cpu_s": cpu1 - cpu0,
                        "requests": dict(requests),
                        "callbacks": {k: {"count": len(v), "total_ms": 1000 * sum(v)} for k, v in calls.items()},
                    }
                    if classic:
                        entry["spark_phases_ms"] = _tracker_phases(df)
                        try:
                            entry["scans"] = _scan_summary(df)
                        except Exception as e:  # a diagnostic: never fails the profile
                            entry["scans"] = [f"({type(e).__name__})"]
                    runs[c.name].append(entry)
            for name, entries in runs.items():
                med = {k: statistics.median(e[k] for e in entries)
                       for k in ("wall_s", "sql_call_s", "action_s", "driver_cpu_s")}
                last = entries[-1]
                out[f"Q{q} {name}"] = {**med, "runs": len(entries), **{k: v for k, v in last.items() if k not in med}}
    finally:
        restore()
        for name, orig in originals.items():
            setattr(file_index.DeltaFileIndex, name, orig)
    return out


def _count_requests(spark: Any, counts: dict[str, int]) -> Callable[[], None]:
    """Count the driver's requests to Spark into `counts` (py4j round trips of this process, or Connect's gRPC
    calls by kind); returns the function that undoes the wrapping."""
    if hasattr(spark, "_jsparkSession"):
        client = spark._jvm._gateway_client
        original = client.send_command

        def send_command(*a: Any, **kw: Any) -> Any:
            counts["py4j"] = counts.get("py4j", 0) + 1
            return original(*a, **kw)

        client.send_command = send_command
        return lambda: client.__dict__.pop("send_command", None)
    client = spark.client
    wrapped = []
    for method in ("_execute_and_fetch_as_iterator", "_analyze", "config", "_execute"):
        original = getattr(client, method, None)
        if original is None:
            continue

        def counted(*a: Any, __orig: Any = original, __name: str = method.strip("_"), **kw: Any) -> Any:
            counts[__name] = counts.get(__name, 0) + 1
            return __orig(*a, **kw)

        setattr(client, method, counted)
        wrapped.append(method)
    return lambda: [client.__dict__.pop(m, None) for m in wrapped] and None


def _tracker_phases(df: Any) -> dict[str, int]:
    tracker = df._jdf.queryExecution().tracker()
    phases = {}
    for phase in ("parsing", "analysis", "optimization", "planning"):
        opt = tracker.phases().get(phase)
        if opt.isDefined():
            phases[phase] = int(opt.get().durationMs())
    return phases


def _scan_summary(df: Any) -> list[str]:
    """The file scans of a classic query's final (adaptive) plan: table, files, bytes, tasks, rows out."""
    plan = df._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.finalPhysicalPlan()
    out: list[str] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        name = str(node.nodeName())
        if name.startswith("Scan ") or "FileSourceScan" in str(node.getClass().getSimpleName()):
            metrics = node.metrics()

            def metric(key: str, metrics: Any = metrics) -> str:
                m = metrics.get(key)
                return str(m.get().value()) if m.isDefined() else "?"

            try:
                tasks = str(node.inputRDDs().head().getNumPartitions())
            except Exception:
                tasks = "?"
            location = str(node.relation().location().toString())[:60]
            out.append(f"{location}: files {metric('numFiles')}, bytes {metric('filesSize')}, tasks {tasks}, "
                       f"rows {metric('numOutputRows')}")
            continue
        kids = [node.children().apply(i) for i in range(int(node.children().size()))]
        for attr in ("plan", "child"):  # query stages, reused exchanges
            if not kids and hasattr(node, attr) and name.endswith(("QueryStage", "Exchange", "ReusedExchange")):
                try:
                    kids = [getattr(node, attr)()]
                except Exception:
                    pass
        stack.extend(kids)
    return sorted(out)


# ----------------------------------------------------------------------------- report
def geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(results: list[dict[str, Any]]) -> str:
    lines: list[str] = []
    for res in results:
        engine = res["engine"]
        if "error" in res:
            lines.append(f"### {engine}\n\nnot run: {res['error']}\n")
            continue
        names = list(next(iter(res["queries"].values()))["times"]) if res["queries"] else []
        base = {n: n.split(":")[0] + ":parquet" for n in names}
        lines.append(f"### {engine} (SF {res['sf']}, {res['runs']} runs, load average before "
                     f"{res['load_before'][0]:.2f}, after {res['load_after'][0]:.2f})\n")
        ratio_cols = [n for n in names if not n.endswith(":parquet") and base[n] in names]
        extra: list[tuple[str, str, str]] = []  # (label, numerator, denominator)
        if engine == "embedded":
            for v in ("converted", "written"):
                for other in ("deltalake-qb", "duckdb"):
                    if f"datafusion:{v}" in names and f"{other}:{v}" in names:
                        extra.append((f"dk/{other} {v}", f"datafusion:{v}", f"{other}:{v}"))
        header = ["query", *[f"{n} s" for n in names], *[f"{n} / parquet" for n in ratio_cols],
                  *[e[0] for e in extra], "rows"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        per_col: dict[str, list[float]] = {n: [] for n in names}
        per_ratio: dict[str, list[float]] = {n: [] for n in ratio_cols}
        per_extra: dict[str, list[float]] = {e[0]: [] for e in extra}
        for q, entry in res["queries"].items():
            med = {n: statistics.median(t) if t else float("nan") for n, t in entry["times"].items()}
            cells = [f"Q{q}"]
            for n in names:
                cells.append(f"{med[n]:.3f}")
                if not math.isnan(med[n]):
                    per_col[n].append(med[n])
            for n in ratio_cols:
                r = med[n] / med[base[n]] if med[base[n]] else float("nan")
                per_ratio[n].append(r)
                cells.append(f"{r:.2f}x")
            for label, num, den in extra:
                r = med[num] / med[den] if med[den] else float("nan")
                per_extra[label].append(r)
                cells.append(f"{r:.2f}x")
            status = "equal" if not entry["mismatch"] and not entry["errors"] else \
                ("DIFFER: " + ",".join(entry["mismatch"]) if entry["mismatch"] else "") + \
                (" ERRORS: " + "; ".join(f"{k}: {v[:80]}" for k, v in entry["errors"].items()) if entry["errors"] else "")
            cells.append(f"{status} ({max(entry['rows'].values(), default=0)})")
            lines.append("| " + " | ".join(cells) + " |")
        cells = ["geomean", *[f"{geomean(per_col[n]):.3f}" for n in names],
                 *[f"**{geomean([r for r in per_ratio[n] if not math.isnan(r)]):.2f}x**" for n in ratio_cols],
                 *[f"**{geomean([r for r in per_extra[e] if not math.isnan(r)]):.2f}x**" for e in per_extra], ""]
        lines.append("| " + " | ".join(cells) + " |")
        worst = {n: max((r, q) for r, q in zip(per_ratio[n], res["queries"]) if not math.isnan(r))
                 for n in ratio_cols if any(not math.isnan(r) for r in per_ratio[n])}
        if worst:
            lines.append("\nworst query per ratio: " + ", ".join(f"{n}: Q{q} {r:.2f}x" for n, (r, q) in worst.items()))
        spread = []
        for n in names:
            rel = [(max(t) - min(t)) / statistics.median(t) for e in res["queries"].values()
                   if len(t := e["times"][n]) > 1 and statistics.median(t) > 0]
            if rel:
                spread.append(f"{n} {100 * statistics.median(rel):.0f} %")
        if spread:
            lines.append("run-to-run spread (median over queries of (max-min)/median): " + ", ".join(spread))
        for key in ("plans_error", "profile_error"):
            if res.get(key):
                lines.append(f"\n{key}: {res[key]}")
        if res.get("plans"):
            lines.append("\nexecuted plans (counts of markers; bloom-filter threshold lowered to 1 MB for the check):\n")
            lines.append("| query:variant | " + " | ".join(PLAN_MARKERS) + " |")
            lines.append("|---|" + "---|" * len(PLAN_MARKERS))
            for k, v in res["plans"].items():
                lines.append(f"| {k} | " + " | ".join(str(v[m]) for m in PLAN_MARKERS) + " |")
        if res.get("profile"):
            lines.append("\nwhere the time goes (medians of the profiled warm runs; requests and callbacks of the last):\n")
            lines.append("| query:variant | wall s | sql() s | action s | driver CPU s | requests | Spark phases ms "
                         "| file-index callbacks (count, ms) | scans |")
            lines.append("|---|---|---|---|---|---|---|---|---|")
            for k, v in res["profile"].items():
                cb = ", ".join(f"{m} {d['count']}x {d['total_ms']:.0f}" for m, d in v["callbacks"].items())
                ph = ", ".join(f"{p} {ms}" for p, ms in v.get("spark_phases_ms", {}).items())
                rq = ", ".join(f"{m} {n}" for m, n in v.get("requests", {}).items())
                sc = "; ".join(v.get("scans", []))
                lines.append(f"| {k} | {v['wall_s']:.3f} | {v['sql_call_s']:.3f} | {v['action_s']:.3f} | "
                             f"{v['driver_cpu_s']:.3f} | {rq or '-'} | {ph or '-'} | {cb or '-'} | {sc or '-'} |")
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sf", type=float, default=None, help="scale factor (default 1; --quick: 0.01)")
    ap.add_argument("--quick", action="store_true", help="SF 0.01 and 2 runs unless given (a smoke run)")
    ap.add_argument("--data-dir", default=None, help="cache of generated tables (default .bench-data/tpch-sf<SF>)")
    ap.add_argument("--engine", default=",".join(ENGINES), help=f"comma list of {ENGINES}")
    ap.add_argument("--queries", default="all", help="comma list of query numbers (default all 22)")
    ap.add_argument("--runs", type=int, default=None, help="timed rounds after the warm-up (default 3)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list of {VARIANTS}")
    ap.add_argument("--plans", action="store_true", help="Spark: DPP / runtime-filter markers in executed plans")
    ap.add_argument("--plans-dir", default=None, help="also write those plans here")
    ap.add_argument("--profile", default="", help="Spark: where the time of these queries goes, per variant")
    ap.add_argument("--profile-runs", type=int, default=3,
                    help="warm runs per variant of each profiled query (medians; one more round for cProfile)")
    ap.add_argument("--json", default=None, help="write all results (times, rows counts, plans) here")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--sail-python", default=os.environ.get("TPCH_SAIL_PYTHON"),
                    help="interpreter for the sail worker: a venv with pysail and the pyspark client version it "
                         "supports (pysail 0.7.2: pyspark-client 4.2.0; it refuses the 4.3 client this repository "
                         "tests with); default: this interpreter")
    ap.add_argument("--keep-rows", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.sf is None:
        args.sf = 0.01 if args.quick else 1.0
    if args.runs is None:
        args.runs = 2 if args.quick else 3
    if args.sf == int(args.sf):
        args.sf = int(args.sf)
    if args.data_dir is None:
        args.data_dir = str(ROOT / ".bench-data" / f"tpch-sf{args.sf}")
    args.queries = list(range(1, 23)) if args.queries == "all" else [int(q) for q in args.queries.split(",") if q]
    args.variants = [v for v in args.variants.split(",") if v]
    args.engines = [e for e in args.engine.split(",") if e]
    args.profile = [int(q) for q in args.profile.split(",") if q]
    for v in args.variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}")
    return args


def worker_argv(args: argparse.Namespace, engine: str, out: str) -> list[str]:
    python = args.sail_python if engine == "sail" and args.sail_python else sys.executable
    argv = [python, str(Path(__file__).resolve()), "--worker", engine, "--worker-out", out,
            "--sf", str(args.sf), "--data-dir", args.data_dir, "--runs", str(args.runs),
            "--queries", ",".join(map(str, args.queries)), "--variants", ",".join(args.variants),
            "--driver-memory", args.driver_memory]
    if args.plans:
        argv.append("--plans")
    if args.plans_dir:
        argv += ["--plans-dir", args.plans_dir]
    if args.profile:
        argv += ["--profile", ",".join(map(str, args.profile)), "--profile-runs", str(args.profile_runs)]
    if args.keep_rows:
        argv.append("--keep-rows")
    return argv


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    if args.worker:
        res = run_engine(args.worker, args)
        Path(args.worker_out).write_text(json.dumps(res, default=str))
        return [res]
    data = Path(args.data_dir)
    start = time.perf_counter()
    prepare(data, args.sf, args.variants)
    print(f"data ready under {data} ({time.perf_counter() - start:.1f}s)", file=sys.stderr, flush=True)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for engine in args.engines:
            out = str(Path(tmp) / f"{engine}.json")
            proc = subprocess.run(worker_argv(args, engine, out), check=False)
            if proc.returncode != 0 or not Path(out).exists():
                results.append({"engine": engine, "error": f"worker exited {proc.returncode}"})
                continue
            results.append(json.loads(Path(out).read_text()))
    # rows equal across engines too (the first contender's rows of each engine)
    digests: dict[str, dict[str, Any]] = {}
    for res in results:
        for q, entry in res.get("queries", {}).items():
            digests.setdefault(q, {})[res["engine"]] = entry.get("digest")
    cross = {q: sorted(d) for q, d in digests.items() if len({v for v in d.values() if v is not None}) > 1}
    text = report(results)
    if cross:
        text += "\nrows differ between engines for: " + ", ".join(f"Q{q} {v}" for q, v in cross.items()) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "cross_engine_differences": cross},
                                              default=str, indent=1))
    return results


if __name__ == "__main__":
    main()
