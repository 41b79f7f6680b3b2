"""Peak memory of a streamed append: 2M / 20M / 40M rows from a generator-backed RecordBatchReader.

Input: a ``pyarrow.RecordBatchReader`` over a Python generator that builds each 100,000-row batch on demand
(``id`` int64, ``value`` float64, ``name`` string of 10,000 distinct values, ``ts`` timestamp[us, UTC],
``day`` date32 — the columns of scan_10m; ~3.6 MB of Arrow data per batch, ~1.4 GB at 40M rows). Nothing
holds the batches but the writer, so a library that streams keeps a flat peak whatever the length.

Contenders (fresh subprocess per run; the parent gives each run a new output directory under
benchmarks/data/_tmp, checks the row count from the Parquet footers and deletes it afterwards):
* deltakernel ``deltakernel.write_deltalake(path, reader, mode="append")``
* deltalake ``deltalake.write_deltalake(path, reader, mode="append")``

Peak RSS is the child's VmHWM (= its own ``ru_maxrss``, imports included); "above imports" subtracts the
child's peak after imports. Target: flat across lengths and at most deltalake's.

Usage: ``.venv/bin/python benchmarks/bench_memory.py [--repeat N] [--rows 2000000,20000000,40000000]``
(repeat applies to runs up to 20M rows; 40M runs once per contender: it takes minutes on two cores).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import IMPORT_DELTAKERNEL, Contender, Measurement, load_average, table
from _prepared import measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
TMP_DIR = BENCH_DIR / "data" / "_tmp"
BATCH_ROWS = 100_000
BASE_TIME_MS = 1_700_000_000_000


def make_reader(total_rows: int) -> Any:
    """A RecordBatchReader that generates `total_rows` rows batch by batch (nothing materialised)."""
    import numpy as np
    import pyarrow as pa

    words = pa.array([f"name_{i:05d}_{'x' * (i % 17)}" for i in range(10_000)], pa.string())
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("name", pa.string()),
                        ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32())])

    def batches() -> Any:
        for start in range(0, total_rows, BATCH_ROWS):
            n = min(BATCH_ROWS, total_rows - start)
            rng = np.random.default_rng(start)
            ids = np.arange(start, start + n, dtype=np.int64)
            ts = (BASE_TIME_MS * 1000 + ids * 1_000_000 + rng.integers(0, 1_000_000, n)).astype("datetime64[us]")
            yield pa.record_batch([
                pa.array(ids),
                pa.array(rng.normal(0, 100, n)),
                words.take(pa.array(rng.integers(0, len(words), n))),
                pa.array(ts, pa.timestamp("us", tz="UTC")),
                pa.array((BASE_TIME_MS // 86_400_000 + ids // 1_000_000).astype("int32"), pa.date32()),
            ], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


SETUP = """\
sys.path.insert(0, PARAMS['bench_dir'])
from bench_memory import make_reader
reader = make_reader(PARAMS['rows'])
"""

DK = "deltakernel write_deltalake"
DL = "deltalake write_deltalake"
CONTENDERS = [
    Contender(DK, SETUP + IMPORT_DELTAKERNEL,
              "deltakernel.write_deltalake(PARAMS['out'], reader, mode='append')\nresult = 0"),
    Contender(DL, SETUP + "import deltalake",
              "deltalake.write_deltalake(PARAMS['out'], reader, mode='append')\nresult = 0"),
]


class _Checker:
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"memory_{self.rows}_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        return {"bench_dir": str(BENCH_DIR), "rows": self.rows, "out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        import pyarrow.parquet as pq

        out = Path(params["out"])
        try:
            files = sorted(out.rglob("*.parquet"))
            rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            if rows != self.rows or not (out / "_delta_log" / "00000000000000000000.json").exists():
                raise RuntimeError(f"{c.name}: wrote {rows} rows, expected {self.rows}")
            return rows
        finally:
            shutil.rmtree(out, ignore_errors=True)


def run(repeat: int = 3, sizes: tuple[int, ...] = (2_000_000, 20_000_000, 40_000_000)) -> tuple[str, list[Measurement]]:
    results: dict[int, dict[str, Measurement]] = {}
    load_before = load_average()
    for rows in sizes:
        chk = _Checker(rows)
        reps = repeat if rows <= 20_000_000 else 1
        ms = measure_prepared(CONTENDERS, chk.prepare, chk.finish, reps, tag=f"memory {rows // 1_000_000}M ")
        results[rows] = {m.name: m for m in ms}
    headers = ["rows", "runs", "deltakernel peak RSS MiB", "deltalake peak RSS MiB", "deltakernel above imports MiB",
               "deltalake above imports MiB", "RSS vs deltalake", "deltakernel best s", "deltalake best s"]
    body = []
    for rows, by in results.items():
        dk, dl = by[DK], by[DL]
        body.append([f"{rows // 1_000_000}M", str(len(dk.seconds)), f"{dk.peak_rss_mb:.0f}", f"{dl.peak_rss_mb:.0f}",
                     f"{dk.peak_rss_mb - dk.base_rss_mb:.0f}", f"{dl.peak_rss_mb - dl.base_rss_mb:.0f}",
                     f"{dk.peak_rss_mb / dl.peak_rss_mb:.2f}x", f"{dk.best:.1f}", f"{dl.best:.1f}"])
    md = (f"### Streamed append from a generator-backed RecordBatchReader (peak RSS, median of runs), "
          f"load average before: {load_before}\n\n" + table(headers, body) + "\n")
    return md, [m for by in results.values() for m in by.values()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rows", default="2000000,20000000,40000000")
    args = ap.parse_args()
    md, _ = run(args.repeat, tuple(int(x) for x in args.rows.split(",")))
    print(md)


if __name__ == "__main__":
    main()
