"""OPTIMIZE (issue 11): compaction of a 1,000-small-file table, and file skipping after Z-order.

Tables (built once under benchmarks/data/, gitignored, by deltalake):
* ``optimize_1000``: 1,000 appends of 5,000 rows (``id``, ``value``, ``name``, ``day``): 5M rows in 1,000 files.
* ``zorder_100``: 100 appends of 20,000 rows of uniform random ``x`` (int64), ``y`` (double), ``k`` (string).

Compaction contenders (fresh subprocess and fresh copy of the table per run; the parent checks the row count
and the number of files left with deltalake, outside the child):
* deltalake ``DeltaTable(p).optimize.compact()``
* deltakernel ``DeltaTable(p).optimize.compact()``
Target: deltakernel <= 1.0x deltalake's wall time.

Z-order: both libraries' ``optimize.z_order(["x", "y", "k"], target_size=...)`` (timed the same way), then the
files a point query on each column opens (deltakernel's scan metrics: partition/stats skipping) before and
after, printed as a table.

Usage: ``.venv/bin/python benchmarks/bench_optimize.py [--repeat N] [--skip-zorder]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import IMPORT_DELTAKERNEL, Contender, load_average, measurement_rows, table
from _prepared import RESET_PEAK_RSS, measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data"
TMP_DIR = DATA / "_tmp"
SMALL = DATA / "optimize_1000"
ZTABLE = DATA / "zorder_100"
APPENDS, ROWS = 1000, 5000
Z_APPENDS, Z_ROWS = 100, 20_000
Z_COLUMNS = ["x", "y", "k"]
Z_TARGET = 2 * 1024 * 1024  # ~40 output files

DL = "deltalake optimize.compact()"
DK = "deltakernel optimize.compact()"
ZDL = "deltalake optimize.z_order()"
ZDK = "deltakernel optimize.z_order()"


def _small_batch(i: int) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(i)
    ids = np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)
    return pa.table({"id": ids, "value": rng.normal(0, 100, ROWS),
                     "name": pa.array([f"name-{v % 997}" for v in ids.tolist()]),
                     "day": pa.array((ids % 365).astype("datetime64[D]"), pa.date32())})


def _z_batch(i: int) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(1000 + i)
    return pa.table({"x": rng.integers(0, 1_000_000, Z_ROWS), "y": rng.random(Z_ROWS) * 1e6,
                     "k": pa.array([f"k{v:06d}" for v in rng.integers(0, 1_000_000, Z_ROWS).tolist()])})


def make_tables(force: bool = False) -> None:
    import deltalake

    for root, n, batch in ((SMALL, APPENDS, _small_batch), (ZTABLE, Z_APPENDS, _z_batch)):
        if root.exists() and (root / "_delta_log").exists() and not force:
            continue
        if root.exists():
            shutil.rmtree(root)
        print(f"building {root} ({n} appends)...", file=sys.stderr, flush=True)
        for i in range(n):
            deltalake.write_deltalake(str(root), batch(i), mode="append")


_OP = "m = MOD.DeltaTable(PARAMS['out']).optimize.compact()\nresult = [int(m['numFilesRemoved']), int(m['numFilesAdded'])]"
CONTENDERS = [
    Contender(DL, "import deltalake\n" + RESET_PEAK_RSS, _OP.replace("MOD", "deltalake")),
    Contender(DK, IMPORT_DELTAKERNEL + RESET_PEAK_RSS, _OP.replace("MOD", "deltakernel")),
]
_ZOP = (f"m = MOD.DeltaTable(PARAMS['out']).optimize.z_order({Z_COLUMNS!r}, target_size={Z_TARGET})\n"
        "result = int(m['numFilesRemoved'])")
Z_CONTENDERS = [
    Contender(ZDL, "import deltalake\n" + RESET_PEAK_RSS, _ZOP.replace("MOD", "deltalake")),
    Contender(ZDK, IMPORT_DELTAKERNEL + RESET_PEAK_RSS, _ZOP.replace("MOD", "deltakernel")),
]


def _probes() -> dict[str, Any]:
    b = _z_batch(0)
    return {"x": b.column("x")[123].as_py(), "y": b.column("y")[456].as_py(), "k": b.column("k")[789].as_py()}


def files_opened(path: Path) -> tuple[int, dict[str, int]]:
    """(live files, files a point query on each Z-order column opens) by deltakernel's skipping."""
    import deltakernel

    t = deltakernel.DeltaTable(str(path))
    out = {}
    for col, value in _probes().items():
        scan = t.scan(filters=[(col, "=", value)])
        scan.plan()
        out[col] = int(scan.metrics.files_scanned)
    return len(t.files()), out


class _Runs:
    def __init__(self, source: Path, zorder: bool = False) -> None:
        self.source = source
        self.zorder = zorder
        self.opened: dict[str, tuple[int, dict[str, int]]] = {}

    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"optimize_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.source, out)
        return {"out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        out = Path(params["out"])
        try:
            import deltalake

            dt = deltalake.DeltaTable(str(out))
            qb = deltalake.QueryBuilder().register("t", dt)
            n = qb.execute("SELECT count(*) AS n FROM t").read_all().column(0)[0].as_py()
            if self.zorder and c.name not in self.opened:
                self.opened[c.name] = files_opened(out)
            return [n, len(dt.file_uris())] if not self.zorder else n
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-zorder", action="store_true")
    args = ap.parse_args()
    make_tables()
    load = load_average()
    runs = _Runs(SMALL)
    ms = measure_prepared(CONTENDERS, runs.prepare, runs.finish, args.repeat, tag="compact ")
    headers, rows = measurement_rows(ms, {DL: "deltalake"})
    print(f"### OPTIMIZE compact of {APPENDS * ROWS:,} rows in {APPENDS:,} files ({ROWS:,} rows each), "
          f"{args.repeat} runs each (fresh process and fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))
    if args.skip_zorder:
        return
    zruns = _Runs(ZTABLE, zorder=True)
    ms = measure_prepared(Z_CONTENDERS, zruns.prepare, zruns.finish, args.repeat, tag="zorder ")
    headers, rows = measurement_rows(ms, {ZDL: "deltalake"})
    print(f"\n### OPTIMIZE z_order({Z_COLUMNS}) of {Z_APPENDS * Z_ROWS:,} rows in {Z_APPENDS} files, target "
          f"{Z_TARGET // 1024 // 1024} MiB, {args.repeat} runs each\n")
    print(table(headers, rows))
    before = files_opened(ZTABLE)
    lines = [["before (as written)", str(before[0]), *(str(before[1][c]) for c in Z_COLUMNS)]]
    for name in (ZDL, ZDK):
        n, opened = zruns.opened[name]
        lines.append([f"after {name}", str(n), *(str(opened[c]) for c in Z_COLUMNS)])
    print("\n### Files opened by a point query on each Z-order column (deltakernel's file skipping)\n")
    print(table(["table", "files", *(f"{c} = v" for c in Z_COLUMNS)], lines))


if __name__ == "__main__":
    main()
