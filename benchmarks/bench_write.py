"""Write path: append 10M rows into an empty table, unpartitioned and partitioned (20 partitions).

Input (built in every child's untimed setup by ``make_data``, the same generator as scan_10m in
make_tables.py): 10,000,000 rows as a ``pyarrow.Table`` of 20 chunks of 500,000 rows with ``id`` int64,
``value`` float64, ``name`` string, ``ts`` timestamp[us, UTC], ``day`` date32; the partitioned variant adds
``part`` string with 20 values ``p00``..``p19`` assigned at random (every chunk holds every partition).

Contenders (fresh subprocess per run; the parent hands each run a fresh, not yet existing output directory
under benchmarks/data/_tmp and checks what was written afterwards, outside the child):
* unpartitioned: raw pyarrow ``pq.write_table(tbl, file, compression="snappy")`` (one file, no log, no
  Delta stats), deltakernel ``deltakernel.write_deltalake(path, tbl)``, deltalake
  ``deltalake.write_deltalake(path, tbl)``
* partitioned: deltakernel and deltalake with ``partition_by=["part"]``, and (info) raw pyarrow
  ``ds.write_dataset(tbl, path, partitioning=["part"], partitioning_flavor="hive")``

Targets: deltakernel append <= 1.0x deltalake (both variants) and <= 1.1x raw pyarrow (unpartitioned).

Usage: ``.venv/bin/python benchmarks/bench_write.py [--repeat N] [--only plain|partitioned]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import IMPORT_DELTAKERNEL, Contender, Measurement, load_average, measurement_rows, table
from _prepared import measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
TMP_DIR = BENCH_DIR / "data" / "_tmp"
N_CHUNKS = 20
N_PARTITIONS = 20


def make_data(partitioned: bool) -> Any:
    """The benchmark input: 10M rows in 20 chunks (scan_10m's generator), plus `part` when partitioned."""
    import numpy as np
    import pyarrow as pa
    from make_tables import _scan_batch

    labels = pa.array([f"p{i:02d}" for i in range(N_PARTITIONS)])
    chunks = []
    for k in range(N_CHUNKS):
        t = _scan_batch(k)
        if partitioned:
            codes = np.random.default_rng(2000 + k).integers(0, N_PARTITIONS, t.num_rows)
            t = t.append_column("part", labels.take(pa.array(codes)))
        chunks.append(t)
    return pa.concat_tables(chunks)


SETUP = """\
sys.path.insert(0, PARAMS['bench_dir'])
from bench_write import make_data
tbl = make_data(PARAMS['partitioned'])
"""

RAW = "pyarrow pq.write_table (snappy, 1 file)"
DK = "deltakernel write_deltalake"
DL = "deltalake write_deltalake"
DK_P = "deltakernel write_deltalake, partition_by=[part]"
DL_P = "deltalake write_deltalake, partition_by=[part]"
RAW_P = "pyarrow ds.write_dataset, hive partitioning (info)"

PLAIN = [
    Contender(RAW, SETUP + "import pyarrow.parquet as pq",
              "pq.write_table(tbl, PARAMS['out'] + '/part-0.snappy.parquet', compression='snappy')\nresult = 0"),
    Contender(DK, SETUP + IMPORT_DELTAKERNEL, "deltakernel.write_deltalake(PARAMS['out'], tbl)\nresult = 0"),
    Contender(DL, SETUP + "import deltalake", "deltalake.write_deltalake(PARAMS['out'], tbl)\nresult = 0"),
]
PARTITIONED = [
    Contender(DK_P, SETUP + IMPORT_DELTAKERNEL,
              "deltakernel.write_deltalake(PARAMS['out'], tbl, partition_by=['part'])\nresult = 0"),
    Contender(DL_P, SETUP + "import deltalake",
              "deltalake.write_deltalake(PARAMS['out'], tbl, partition_by=['part'])\nresult = 0"),
    Contender(RAW_P, SETUP + "import pyarrow.dataset as ds",
              "ds.write_dataset(tbl, PARAMS['out'], format='parquet', partitioning=['part'], "
              "partitioning_flavor='hive', existing_data_behavior='overwrite_or_ignore')\nresult = 0"),
]
TARGET_DL = 1.0
TARGET_RAW = 1.1


# ----------------------------------------------------------------------------- checking the output
def _fingerprint(tbl: Any) -> list[Any]:
    """Order-independent summary of the data, to compare what was written with the input."""
    import pyarrow.compute as pc

    out: list[Any] = [
        tbl.num_rows,
        pc.sum(tbl["id"]).as_py(),
        round(pc.sum(tbl["value"]).as_py(), 3),
        pc.sum(pc.utf8_length(tbl["name"])).as_py(),
        str(pc.min(tbl["ts"]).as_py()),
        str(pc.max(tbl["ts"]).as_py()),
        pc.sum(tbl["day"].cast("int32").cast("int64")).as_py(),
    ]
    if "part" in tbl.column_names:
        vc = pc.value_counts(tbl["part"].cast("string"))
        out.append(sorted((d["values"], d["counts"]) for d in vc.to_pylist()))
    return out


class _Checker:
    """Parent-side preparation and verification: fresh output dir per run; read back what was written."""

    def __init__(self, partitioned: bool) -> None:
        self.partitioned = partitioned
        self.expected: list[Any] | None = None
        self.files: dict[str, tuple[int, int]] = {}  # contender -> (data files, bytes) of the last run

    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"write_{'p' if self.partitioned else 'u'}_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        if c.name == RAW:
            out.mkdir()
        return {"bench_dir": str(BENCH_DIR), "partitioned": self.partitioned, "out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        import pyarrow.dataset as ds
        import pyarrow.parquet as pq

        out = Path(params["out"])
        try:
            if c.name in (RAW, RAW_P):
                files = sorted(str(p) for p in out.rglob("*.parquet"))
                if c.name == RAW_P:
                    dataset = ds.dataset(str(out), format="parquet", partitioning="hive")
                else:
                    dataset = ds.dataset(files, format="parquet")
            else:
                import deltalake

                dt = deltalake.DeltaTable(str(out))
                if dt.version() != 0:
                    raise RuntimeError(f"{c.name}: expected version 0, got {dt.version()}")
                files = [u.removeprefix("file://") for u in dt.file_uris()]
                dataset = dt.to_pyarrow_dataset()
            self.files[c.name] = (len(files), sum(Path(f).stat().st_size for f in files))
            if rep == 0:  # full read-back (deltalake reads the Delta tables) against the input
                if self.expected is None:
                    sys.path.insert(0, str(BENCH_DIR))
                    self.expected = _fingerprint(make_data(self.partitioned))
                got = _fingerprint(dataset.to_table())
                if got != self.expected:
                    raise RuntimeError(f"{c.name}: data read back differs:\n{got}\nvs input\n{self.expected}")
            rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
            return rows
        finally:
            shutil.rmtree(out, ignore_errors=True)


def _section(title: str, ms: list[Measurement], baselines: dict[str, str], checker: _Checker, repeat: int,
             load_before: str) -> str:
    headers, rows = measurement_rows(ms, baselines)
    headers = [*headers[:6], "peak RSS above setup MB", "data files", "MB written", *headers[6:]]
    for m, row in zip(ms, rows):
        nf, nb = checker.files.get(m.name, (0, 0))
        row[6:6] = [f"{m.peak_rss_mb - m.base_rss_mb:.0f}", str(nf), f"{nb / 1e6:.0f}"]
    return (
        f"### {title}, {repeat} runs each (fresh process per run), load average before: {load_before}\n\n"
        "\"RSS after imports\" here is after the untimed setup, i.e. includes the ~0.5 GB input table.\n\n"
        + table(headers, rows) + "\n"
    )


def run(repeat: int = 5, only: str | None = None) -> tuple[str, list[Measurement], dict[str, float]]:
    md = ""
    summary: dict[str, float] = {}
    all_ms: list[Measurement] = []
    if only in (None, "plain"):
        load_before = load_average()
        chk = _Checker(partitioned=False)
        ms = measure_prepared(PLAIN, chk.prepare, chk.finish, repeat, tag="write ")
        for m in ms:
            if m.result != 10_000_000:
                raise SystemExit(f"{m.name}: wrote {m.result} rows")
        by = {m.name: m for m in ms}
        dk, dl, raw = by[DK], by[DL], by[RAW]
        r_dl, r_raw = dk.best / dl.best, dk.best / raw.best
        md += _section("Append 10M rows into an empty table (unpartitioned)", ms,
                       {RAW: "raw pyarrow", DL: "deltalake"}, chk, repeat, load_before)
        md += (
            f"\ndeltakernel / deltalake: time {r_dl:.2f}x (target <= {TARGET_DL:.1f}x: "
            f"{'MET' if r_dl <= TARGET_DL else 'MISSED'}); deltakernel / raw pyarrow: time {r_raw:.2f}x "
            f"(target <= {TARGET_RAW:.1f}x: {'MET' if r_raw <= TARGET_RAW else 'MISSED'}); peak RSS above setup: "
            f"deltakernel {dk.peak_rss_mb - dk.base_rss_mb:.0f} MB, deltalake {dl.peak_rss_mb - dl.base_rss_mb:.0f} MB, "
            f"raw {raw.peak_rss_mb - raw.base_rss_mb:.0f} MB. Medians: {dk.median / dl.median:.2f}x deltalake, "
            f"{dk.median / raw.median:.2f}x raw. Best CPU time (all threads; steadier than wall time on a loaded "
            f"machine): {dk.best_cpu / dl.best_cpu:.2f}x deltalake, {dk.best_cpu / raw.best_cpu:.2f}x raw.\n\n"
        )
        summary.update({"write_vs_deltalake": r_dl, "write_vs_raw": r_raw,
                        "write_median_vs_deltalake": dk.median / dl.median,
                        "write_median_vs_raw": dk.median / raw.median,
                        "write_cpu_vs_deltalake": dk.best_cpu / dl.best_cpu, "write_cpu_vs_raw": dk.best_cpu / raw.best_cpu})
        all_ms += ms
    if only in (None, "partitioned"):
        load_before = load_average()
        chk = _Checker(partitioned=True)
        ms = measure_prepared(PARTITIONED, chk.prepare, chk.finish, repeat, tag="write-part ")
        for m in ms:
            if m.result != 10_000_000:
                raise SystemExit(f"{m.name}: wrote {m.result} rows")
        by = {m.name: m for m in ms}
        dk, dl = by[DK_P], by[DL_P]
        r = dk.best / dl.best
        md += _section(f"Append 10M rows into an empty table partitioned by `part` ({N_PARTITIONS} values)", ms,
                       {DL_P: "deltalake"}, chk, repeat, load_before)
        md += (
            f"\ndeltakernel / deltalake (partitioned): time {r:.2f}x (target <= {TARGET_DL:.1f}x: "
            f"{'MET' if r <= TARGET_DL else 'MISSED'}), median {dk.median / dl.median:.2f}x, best CPU "
            f"{dk.best_cpu / dl.best_cpu:.2f}x; peak RSS above setup: "
            f"deltakernel {dk.peak_rss_mb - dk.base_rss_mb:.0f} MB, deltalake {dl.peak_rss_mb - dl.base_rss_mb:.0f} MB.\n"
        )
        summary.update({"write_part_vs_deltalake": r, "write_part_median_vs_deltalake": dk.median / dl.median,
                        "write_part_cpu_vs_deltalake": dk.best_cpu / dl.best_cpu})
        all_ms += ms
    return md, all_ms, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=["plain", "partitioned"])
    args = ap.parse_args()
    md, _, _ = run(args.repeat, args.only)
    print(md)


if __name__ == "__main__":
    main()
