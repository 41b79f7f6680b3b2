"""A/B of DataFusion settings on the embedded TPC-H path (issue 32 item 1: DataFusion through deltakernel vs DuckDB).

Why a separate script: `tpch.py` compares engines; choosing deltakernel's own DataFusion settings needs the *same*
engine several times in one process - arm A (deltakernel's current settings) and one arm per candidate (A plus its
settings: B, C, ...) over the same tables - run in rotated, alternating order so that a loaded machine's drift hits
every arm alike, with the process CPU seconds beside the wall seconds (CPU time is steadier than wall time when
other processes share the cores). The listing path's Parquet options live in the ListingTables (made by `listing._builder_context()`), so a
`parquet.*` candidate is applied to the builder for that arm's registrations; other keys go to the arm's session.
DuckDB (delta extension) can run beside them as the reference. Rows of every arm are compared (as in tpch.py).

    PYTHONPATH=src .venv/bin/python benchmarks/tpch_embedded_ab.py --queries 1,6,12,15,17 --runs 4 \\
        --b datafusion.execution.batch_size=16384 --duckdb
    PYTHONPATH=src .venv/bin/python benchmarks/tpch_embedded_ab.py --queries 6 --explain   # EXPLAIN ANALYZE of A
    PYTHONPATH=src .venv/bin/python benchmarks/tpch_embedded_ab.py --b deltakernel.row_filters=dynamic

The pseudo-setting `deltakernel.row_filters=<policy>` makes an arm run its queries through `dkdf.sql` with
`deltakernel.datafusion.row_filters.POLICY` set to `<policy>` (per table, the Parquet row filter only where a
join's dynamic filter reaches the scan); arms without it run `ctx.sql`, the registered views as they are.

Measurements only: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tpch import DuckDBContender, arrow_rows, normalize, table_path  # noqa: E402
from tpch_queries import TABLES, render  # noqa: E402

POLICY_KEY = "deltakernel.row_filters"  # pseudo-setting: the arm runs dkdf.sql with this policy


def parse_settings(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            if part.strip():
                k, _, v = part.partition("=")
                out[k.strip()] = v.strip()
    return out


class Arm:
    """deltakernel's session (its defaults + `session`) over tables registered with builder options `builder`."""

    dialect = "datafusion"

    def __init__(self, name: str, settings: dict[str, str], variant: str, data: Path) -> None:
        self.name, self.variant, self.data = f"{name}:{variant}", variant, data
        self.policy = settings.get(POLICY_KEY)
        self.session = {k: v for k, v in settings.items() if ".parquet." not in k and k != POLICY_KEY}
        self.builder = {k: v for k, v in settings.items() if ".parquet." in k}

    def prepare(self) -> None:
        import deltakernel.datafusion as dkdf
        from deltakernel.datafusion import listing
        from deltakernel.datafusion.session_defaults import session_config

        saved = dict(listing.BUILDER_OPTIONS)
        listing.BUILDER_OPTIONS.update(self.builder)
        listing._builder.clear()  # a builder context with this arm's Parquet options
        try:
            self.ctx = dkdf.session_context(session_config(self.session))
            for t in TABLES:
                dkdf.register(self.ctx, t, table_path(self.data, self.variant, t))
        finally:
            listing.BUILDER_OPTIONS.clear()
            listing.BUILDER_OPTIONS.update(saved)
            listing._builder.clear()

    def frame(self, sql: str) -> Any:
        if self.policy is None:
            return self.ctx.sql(sql)
        import deltakernel.datafusion as dkdf
        from deltakernel.datafusion import row_filters

        saved, row_filters.POLICY = row_filters.POLICY, self.policy
        try:
            return dkdf.sql(self.ctx, sql)
        finally:
            row_filters.POLICY = saved

    def run(self, sql: str) -> list[tuple[Any, ...]]:
        return arrow_rows(self.frame(sql).to_arrow_table())

    def explain(self, sql: str) -> str:
        if self.policy is not None:  # the plan of the statement as dkdf.sql planned it (printed by DataFusion)
            self.frame(sql).explain(analyze=True)
            return ""
        rows = self.ctx.sql("EXPLAIN ANALYZE " + sql).to_arrow_table().to_pylist()
        return "\n".join(str(r.get("plan", r)) for r in rows)


def timed(c: Any, sql: str) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    c.run(sql)
    return time.perf_counter() - wall, time.process_time() - cpu


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(HERE.parent / ".bench-data" / "tpch-sf1"))
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--variants", default="converted,written")
    p.add_argument("--queries", default=",".join(str(i) for i in range(1, 23)))
    p.add_argument("--runs", type=int, default=4, help="timed runs per arm (order rotated every round)")
    p.add_argument("--a", action="append", default=[], help="extra settings of arm A (k=v,k=v)")
    p.add_argument("--b", action="append", default=[],
                   help="one candidate arm (B, C, ...) per --b: its settings on top of A's (k=v,k=v)")
    p.add_argument("--duckdb", action="store_true", help="DuckDB's delta extension as a reference contender")
    p.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE of each arm, no timings")
    args = p.parse_args(argv)
    data = Path(args.data_dir)
    a = parse_settings(args.a)
    cands = [{**a, **parse_settings([b])} for b in args.b]
    names = [chr(ord("B") + i) for i in range(len(cands))]
    queries = [int(q) for q in args.queries.split(",")]
    out: dict[str, Any] = {"a": a, "arms": dict(zip(names, cands, strict=True)), "load_before": os.getloadavg(),
                           "queries": {}}
    print(f"A={a}\n" + "".join(f"{n}={c}\n" for n, c in zip(names, cands, strict=True))
          + f"load before {os.getloadavg()}", flush=True)
    for variant in args.variants.split(","):
        arms: list[Any] = [Arm("A", a, variant, data)]
        arms += [Arm(n, c, variant, data) for n, c in zip(names, cands, strict=True)]
        if args.duckdb:
            arms.append(DuckDBContender(variant, data))
        for c in arms:
            c.prepare()
        arm_names = [c.name for c in arms if isinstance(c, Arm)]
        ratios: dict[str, list[float]] = {}
        for q in queries:
            if args.explain:
                for c in arms:
                    if isinstance(c, Arm):
                        print(f"==== Q{q} {c.name}\n{c.explain(render(q, c.dialect, args.sf))}", flush=True)
                continue
            rows = {c.name: normalize(c.run(render(q, c.dialect, args.sf))) for c in arms}  # warm-up
            ref = rows[arms[0].name]
            bad = [n for n, r in rows.items() if r != ref]
            wall: dict[str, list[float]] = {c.name: [] for c in arms}
            cpu: dict[str, list[float]] = {c.name: [] for c in arms}
            for i in range(args.runs):  # rotated, and reversed every other round
                order = arms[i % len(arms):] + arms[:i % len(arms)]
                for c in (order if i % 2 == 0 else order[::-1]):
                    w, t = timed(c, render(q, c.dialect, args.sf))
                    wall[c.name].append(w)
                    cpu[c.name].append(t)
            med_w = {n: statistics.median(v) for n, v in wall.items()}
            med_c = {n: statistics.median(v) for n, v in cpu.items()}
            line = f"[{variant}] Q{q}: " + ", ".join(f"{n} {med_w[n]:.3f}s/{med_c[n]:.3f}cpu" for n in wall)
            for n in arm_names[1:]:
                for kind, med in (("wall", med_w), ("cpu", med_c)):
                    ratios.setdefault(f"{n[0]}/A {kind}", []).append(med[n] / med[arm_names[0]])
                line += f"  {n[0]}/A {med_w[n] / med_w[arm_names[0]]:.2f}x ({med_c[n] / med_c[arm_names[0]]:.2f}x cpu)"
            if args.duckdb:
                duck = med_w[arms[-1].name]
                for n in arm_names:
                    ratios.setdefault(f"{n[0]}/duckdb wall", []).append(med_w[n] / duck)
                line += "  /duckdb " + " ".join(f"{n[0]} {med_w[n] / duck:.2f}x" for n in arm_names)
            if bad:
                line += f"  ROWS DIFFER: {bad}"
            print(line + f"  (load {os.getloadavg()[0]:.1f})", flush=True)
            out["queries"][f"{variant}:Q{q}"] = {"wall": wall, "cpu": cpu, "rows_differ": bad}
        for key, xs in ratios.items():
            print(f"[{variant}] geomean {key}: {geomean(xs):.3f}x over {len(xs)} queries", flush=True)
    out["load_after"] = os.getloadavg()
    print(f"load after {os.getloadavg()}", flush=True)
    return out


if __name__ == "__main__":
    main()
