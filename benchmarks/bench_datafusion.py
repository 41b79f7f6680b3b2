"""SQL through DataFusion: deltakernel's `register()` vs native DataFusion Parquet and deltalake.

Contenders (fresh subprocess per run; imports untimed; the Delta log is loaded inside the timed part):
* native: ``ctx.register_parquet('t', dir)`` over the same Parquet files (no Delta log)
* deltakernel: ``deltakernel.datafusion.register(ctx, 't', path)`` (plain local files read by DataFusion's
  own Parquet reader after the kernel's file skipping, see ``deltakernel/datafusion/native.py``)
* deltakernel pyarrow path: the same with ``native_reader=False`` (pyarrow's Parquet scanner, for comparison)
* deltalake QueryBuilder: ``QueryBuilder().register('t', DeltaTable(path)).execute(sql)``
* deltalake provider: ``ctx.register_table('t', deltalake.DeltaTable(path))`` (FFI table provider)

Queries on scan_10m (10M rows, 20 files): a full scan aggregate over every column kind, and a 1 %
selective query on `id` (stats skipping + row-group pruning). Then a 2000-small-files table
(1M rows) full scan: deltakernel with file grouping (default) and with one fragment per file.

Targets (issue 5): full scan <= 1.5x native, selective <= 1.2x QueryBuilder.

Usage: ``.venv/bin/python benchmarks/bench_datafusion.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Contender, Measurement, load_average, measure_all, measurement_rows, table
from make_tables import SCAN_TABLE, make_scan_table

SMALL_TABLE = Path(__file__).resolve().parent / "data" / "small_2000"
FULL_SQL = "SELECT count(*) AS n, sum(value) AS v, max(name) AS m, min(ts) AS t, max(day) AS d FROM t"
SELECTIVE_SQL = "SELECT id, value, name FROM t WHERE id >= 5000000 AND id < 5100000"
CHECK = ("import json\nrows = out.to_pylist()\nfor r in rows: r[\"v\"] = round(r[\"v\"], 3)\n"
         "result = json.loads(json.dumps(rows, default=str))")
SEL_CHECK = "result = [out.num_rows, sum(out.column('id').to_pylist())]"
PRE = "import pandas\nimport pyarrow as pa\nimport datafusion\n"

NATIVE = "datafusion register_parquet (native)"
DK = "deltakernel.datafusion.register"
DK_NOGROUP = "deltakernel register, 1 fragment per file"
DK_PYARROW = "deltakernel register, native_reader=False"
QB = "deltalake QueryBuilder"
DL_PROVIDER = "deltalake provider in datafusion"


def contenders(sql: str, check: str, with_nogroup: bool = False, with_pyarrow: bool = False) -> list[Contender]:
    to_arrow = "out = ctx.sql(PARAMS['sql']).to_arrow_table()\n"
    post = check
    cs = [
        Contender(NATIVE, PRE, "ctx = datafusion.SessionContext()\n"
                  "ctx.register_parquet('t', PARAMS['path'], file_extension='.parquet')\n" + to_arrow, post),
        Contender(DK, PRE + "import deltakernel.datafusion as dkdf",
                  "ctx = datafusion.SessionContext()\ndkdf.register(ctx, 't', PARAMS['path'])\n" + to_arrow, post),
        Contender(QB, PRE + "from deltalake import DeltaTable, QueryBuilder",
                  "out = pa.table(QueryBuilder().register('t', DeltaTable(PARAMS['path'])).execute(PARAMS['sql'])"
                  ".read_all())\n", post),
        Contender(DL_PROVIDER, PRE + "from deltalake import DeltaTable",
                  "ctx = datafusion.SessionContext()\nctx.register_table('t', DeltaTable(PARAMS['path']))\n" + to_arrow,
                  post),
    ]
    if with_pyarrow:
        cs.insert(2, Contender(DK_PYARROW, PRE + "import deltakernel.datafusion as dkdf",
                               "ctx = datafusion.SessionContext()\n"
                               "dkdf.register(ctx, 't', PARAMS['path'], native_reader=False)\n" + to_arrow, post))
    if with_nogroup:
        cs.insert(2, Contender(DK_NOGROUP, PRE + "import deltakernel.datafusion as dkdf",
                               "ctx = datafusion.SessionContext()\n"
                               "dkdf.register(ctx, 't', PARAMS['path'], target_partitions=100000)\n" + to_arrow, post))
    return cs


def make_small_table() -> Path:
    """1M rows in 2000 files of 500 rows, one commit (deltakernel's writer, max_rows_per_file)."""
    if (SMALL_TABLE / "_delta_log").exists():
        return SMALL_TABLE
    import numpy as np
    import pyarrow as pa

    from deltakernel import write_deltalake

    n = 1_000_000
    rng = np.random.default_rng(7)
    data = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64)),
        "value": pa.array(rng.normal(0, 100, n)),
        "name": pa.array([f"n{i % 1000}" for i in range(n)]),
        "ts": pa.array((np.arange(n) * 1_000_000).astype("datetime64[us]"), pa.timestamp("us", tz="UTC")),
        "day": pa.array((np.arange(n) // 100_000).astype("int32"), pa.date32()),
    })
    write_deltalake(str(SMALL_TABLE), data, max_rows_per_file=500)
    return SMALL_TABLE


def _section(title: str, ms: list[Measurement], ratios: list[tuple[str, str, float | None]]) -> str:
    headers, rows = measurement_rows(ms, {NATIVE: "native", QB: "QueryBuilder"})
    by = {m.name: m for m in ms}
    lines = []
    for a, b, target in ratios:
        if a in by and b in by:
            r, rm = by[a].best / by[b].best, by[a].median / by[b].median
            verdict = "" if target is None else f" (target <= {target:.1f}x on best: {'MET' if r <= target else 'MISSED'})"
            lines.append(f"{a} / {b}: {r:.2f}x best, {rm:.2f}x median{verdict}")
    return f"### {title}\n\n" + table(headers, rows) + "\n\n" + "\n".join(lines) + "\n"


def _check_same(ms: list[Measurement]) -> None:
    ref = ms[0].result
    for m in ms[1:]:
        if m.result != ref:
            raise SystemExit(f"{m.name}: result {m.result!r} differs from {ms[0].name}: {ref!r}")


def run(repeat: int = 3) -> str:
    if not (SCAN_TABLE / "_delta_log").exists():
        make_scan_table()
    small = make_small_table()
    load = load_average()
    out = [f"## DataFusion SQL (load average before: {load}), {repeat} runs each, fresh process per run\n"]
    p = {"path": str(SCAN_TABLE), "sql": FULL_SQL}
    ms = measure_all(contenders(FULL_SQL, CHECK, with_pyarrow=True), p, repeat, tag="df-full ")
    _check_same(ms)
    out.append(_section(f"Full scan aggregate on scan_10m: `{FULL_SQL}`", ms,
                        [(DK, NATIVE, 1.5), (DK, QB, None), (DK, DL_PROVIDER, None), (DK_PYARROW, DK, None)]))
    p = {"path": str(SCAN_TABLE), "sql": SELECTIVE_SQL}
    ms = measure_all(contenders(SELECTIVE_SQL, SEL_CHECK, with_pyarrow=True), p, repeat, tag="df-sel ")
    _check_same(ms)
    out.append(_section(f"1 % selective query on scan_10m: `{SELECTIVE_SQL}`", ms,
                        [(DK, QB, 1.2), (DK, NATIVE, None), (DK, DL_PROVIDER, None), (DK_PYARROW, DK, None)]))
    p = {"path": str(small), "sql": FULL_SQL}
    ms = measure_all(contenders(FULL_SQL, CHECK, with_nogroup=True), p, repeat, tag="df-small ")
    _check_same(ms)
    out.append(_section("2000 small files (1M rows), full scan aggregate", ms,
                        [(DK, NATIVE, 1.5), (DK_NOGROUP, DK, None), (DK, QB, None)]))
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(run(args.repeat))


if __name__ == "__main__":
    main()
