"""The writer's layout (issue 32 item 1): does a table deltakernel writes read as fast on Spark as the same rows
written by Spark?

The same rows - TPC-H lineitem from `tpchgen-cli` (SF1 by default: 6M rows, 16 columns, 4 decimals, 3 dates,
6 strings) - written five ways, each a Delta table:
* `spark`      - Spark's own writer: `spark.read.parquet(generated).write.parquet(dir)`, then deltakernel's
  `convert_to_deltalake(dir)` (no deltakernel code writes a byte): the reference;
* `dk-classic` / `dk-connect` - `df.write.format("delta").save(dir)` through `deltakernel.spark` on a classic
  session / a Spark Connect client of the same JVM (the native path: Spark's Parquet writer, footer stats);
* `embedded`   - deltakernel's own writer (`write_deltalake` of the generated batches, default target file size);
* `embedded-flba` - the same writer with decimals stored as fixed-length byte arrays, as it wrote them before
  this benchmark (pyarrow's default): the "before" of the layout fix.

For each table: files, sizes, row groups, the decimals' physical type, dictionary-encoded columns, write time
(one run). Then Spark `local[2]` reads (a fresh `format("delta").load(path)` per query, as a user writes it):
`full` (an aggregate touching all 16 columns), `q1` and `q6` (TPC-H Q1 / Q6). One warm-up per table, then
`--rounds` rounds running every table once in a rotated order; per query the median time of each table and the
median of the per-round ratios table / `spark` with their spread; rows checked equal across tables.

Usage: ``.venv/bin/python benchmarks/bench_spark_layout.py [--sf 1] [--rounds 5] [--kinds classic[,connect]]
[--data-dir DIR] [--out DIR] [--rebuild]``. Tables are kept under `<data-dir>/layout/` (rebuilt with `--rebuild`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

VARIANTS = ("spark", "dk-classic", "dk-connect", "embedded", "embedded-flba")
REFERENCE = "spark"
FULL = """select count(*), sum(l_orderkey), sum(l_partkey), sum(l_suppkey), sum(l_linenumber), sum(l_quantity),
  sum(l_extendedprice), sum(l_discount), sum(l_tax), max(l_returnflag), max(l_linestatus), max(l_shipdate),
  max(l_commitdate), max(l_receiptdate), max(l_shipinstruct), max(l_shipmode), sum(length(l_comment))
from lineitem"""


def _mode(kind: str) -> None:
    if kind == "connect":
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    else:
        os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


# ----------------------------------------------------------------------------- the tables
def build(variant: str, source: Path, out: Path, sessions: dict[str, Any]) -> float:
    """Write `variant`'s table at `out` from the generated files in `source`; seconds taken."""
    from deltakernel import convert_to_deltalake

    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    if variant == "spark":
        sessions["classic"].read.parquet(str(source)).write.parquet(str(out))
        convert_to_deltalake(str(out))
    elif variant.startswith("dk-"):
        kind = variant[3:]
        _mode(kind)
        try:
            sessions[kind].read.parquet(str(source)).write.format("delta").save(str(out))
        finally:
            _mode("classic")
    else:
        _embedded(source, out, flba=variant == "embedded-flba")
    return time.perf_counter() - t0


def _embedded(source: Path, out: Path, flba: bool) -> None:
    import pyarrow as pa
    import pyarrow.dataset as ds

    from deltakernel import write_deltalake
    from deltakernel.operations.files import writer_options

    data = ds.dataset(str(source), format="parquet")
    # the generator's string_view columns as plain strings (Delta has one string type)
    schema = pa.schema([pa.field(f.name, pa.string() if f.type == pa.string_view() else f.type, f.nullable)
                        for f in data.schema])
    batches = (b.cast(schema) for b in data.to_batches(batch_size=131072))
    original = writer_options.WriterProperties.parquet_options
    if flba:  # the writer as it was: pyarrow's default decimal layout
        def parquet_options(self: Any, layout: Any = None) -> dict[str, Any]:
            return {**original(self, layout), "store_decimal_as_integer": False}
        writer_options.WriterProperties.parquet_options = parquet_options  # type: ignore[method-assign]
    try:
        write_deltalake(str(out), batches, schema=schema)
    finally:
        writer_options.WriterProperties.parquet_options = original  # type: ignore[method-assign]


def layout(path: Path) -> dict[str, Any]:
    import pyarrow.parquet as pq

    from deltakernel import DeltaTable

    files = DeltaTable(str(path)).file_uris()
    sizes, groups, decimals, dictionary, writer = [], [], set(), 0, ""
    for f in files:
        local = f.removeprefix("file://")
        md = pq.read_metadata(local)
        sizes.append(os.path.getsize(local) / 2**20)
        groups.append(md.num_row_groups)
        writer = (md.created_by or "").split(" (")[0]
        rg = md.row_group(0)
        for i in range(rg.num_columns):
            c = rg.column(i)
            if c.path_in_schema in ("l_quantity", "l_extendedprice", "l_discount", "l_tax"):
                decimals.add(c.physical_type)
        dictionary = max(dictionary, sum(1 for i in range(rg.num_columns) if rg.column(i).has_dictionary_page))
    return {"files": len(files), "sizes": sizes, "row_groups": groups, "decimals": "/".join(sorted(decimals)),
            "dictionary": dictionary, "writer": writer}


# ----------------------------------------------------------------------------- the reads
def queries() -> dict[str, str]:
    from tpch_queries import render

    return {"full": FULL, "q1": render(1, "spark"), "q6": render(6, "spark")}


def run_query(spark: Any, kind: str, path: Path, sql: str) -> tuple[float, list[tuple[Any, ...]]]:
    _mode(kind)
    try:
        t0 = time.perf_counter()
        spark.read.format("delta").load(str(path)).createOrReplaceTempView("lineitem")
        rows = [tuple(r) for r in spark.sql(sql).collect()]
        return time.perf_counter() - t0, rows
    finally:
        _mode("classic")


def read_times(spark: Any, kind: str, tables: dict[str, Path], rounds: int) -> list[str]:
    from tpch import normalize

    out = []
    names = list(tables)
    for qname, sql in queries().items():
        load0 = os.getloadavg()[0]
        expected = None
        for name in names:  # warm-up, rows compared
            _, rows = run_query(spark, kind, tables[name], sql)
            got = normalize(rows)
            if expected is None:
                expected = got
            elif got != expected:
                raise SystemExit(f"{qname}: rows of {name} differ from {names[0]}'s")
        times: dict[str, list[float]] = {n: [] for n in names}
        ratios: dict[str, list[float]] = {n: [] for n in names}
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            got_t = {n: run_query(spark, kind, tables[n], sql)[0] for n in order}
            for n in names:
                times[n].append(got_t[n])
                ratios[n].append(got_t[n] / got_t[REFERENCE])
        load1 = os.getloadavg()[0]
        for n in names:
            rs = ratios[n]
            out.append(f"| {kind} | {qname} | {n} | {statistics.median(times[n]):.3f} | "
                       f"**{statistics.median(rs):.2f}x** | {min(rs):.2f}-{max(rs):.2f} | {load0:.1f} / {load1:.1f} |")
            print(out[-1], file=sys.stderr, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kinds", default="classic")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--data-dir", default=None, help="tpch.py's data cache (default .bench-data/tpch-sf<SF>)")
    ap.add_argument("--out", default=None, help="where the five tables go (default <data-dir>/layout)")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    sf = int(args.sf) if args.sf == int(args.sf) else args.sf
    data = Path(args.data_dir or ROOT / ".bench-data" / f"tpch-sf{sf}")
    source = data / "parquet" / "lineitem"
    if not source.exists():
        from tpch import generate

        generate(data, float(args.sf))
    variants = [v for v in args.variants.split(",") if v]
    if REFERENCE not in variants:
        variants.insert(0, REFERENCE)
    out_dir = Path(args.out) if args.out else data / "layout"
    from bench_spark_connect import sessions as make_sessions

    classic, remote = make_sessions()
    classic.conf.set("spark.sql.session.timeZone", "UTC")
    remote.conf.set("spark.sql.session.timeZone", "UTC")
    sessions = {"classic": classic, "connect": remote}
    try:
        print(f"# Writer layout, TPC-H SF{sf} lineitem, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"load average {os.getloadavg()[0]:.1f}\n")
        tables: dict[str, Path] = {}
        written: dict[str, float | None] = {}
        for v in variants:
            path = out_dir / v
            written[v] = None
            if args.rebuild or not (path / "_delta_log").exists():
                written[v] = build(v, source, path, sessions)
            tables[v] = path
        print("| table | files | MiB per file | row groups per file | decimals as | dictionary columns | writer "
              "| write s |\n|---|---:|---|---|---|---:|---|---:|")
        for v, path in tables.items():
            lay = layout(path)
            w = written[v]
            print(f"| {v} | {lay['files']} | {', '.join(f'{s:.1f}' for s in lay['sizes'])} | "
                  f"{', '.join(map(str, lay['row_groups']))} | {lay['decimals']} | {lay['dictionary']} | "
                  f"{lay['writer']} | {'-' if w is None else f'{w:.1f}'} |")
        print("\n| session | query | table | median s | / spark (median of rounds) | spread | load before / after |\n"
              "|---|---|---|---:|---:|---|---|")
        for kind in [k for k in args.kinds.split(",") if k]:
            for line in read_times(sessions[kind], kind, tables, args.rounds):
                print(line)
    finally:
        try:
            remote.client.close()
        finally:
            classic.stop()


if __name__ == "__main__":
    main()
