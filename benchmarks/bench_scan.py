"""Full scan of scan_10m (10M rows, 20 files) into Arrow, plus streaming peak memory.

Materialising contenders (fresh subprocess per repetition; imports not timed, the log is read inside the
timed part for the Delta readers):
* raw pyarrow ``pq.read_table(files)`` and ``ds.dataset(files).to_table()`` over the same 20 files
  (the list comes from the Delta log, computed once by the parent)
* deltakernel ``DeltaTable(p).to_pyarrow_table()``
* deltalake ``DeltaTable(p).to_pyarrow_table()`` and ``.to_pyarrow_dataset().to_table()``

Streaming contenders (consume every batch, keep only a running sum): deltakernel ``to_batches()``,
deltalake ``to_pyarrow_dataset().to_batches()``, raw pyarrow ``ds.dataset(files).to_batches()``.

Target: deltakernel ``to_pyarrow_table`` within 1.1x of raw pyarrow (the better of the two raw readers).

Usage: ``.venv/bin/python benchmarks/bench_scan.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Contender, Measurement, load_average, measure_all, measurement_rows, table
from make_tables import SCAN_FILES, SCAN_ROWS_PER_FILE, SCAN_TABLE, make_scan_table

N_ROWS = SCAN_FILES * SCAN_ROWS_PER_FILE
_CHECK = (
    "import pyarrow.compute as _pc\n"
    "result = [tbl.num_rows, _pc.sum(tbl.column('id')).as_py(), sorted(tbl.column_names)]"
)
_STREAM_LOOP = """\
rows = 0
ids = 0
for b in batches:
    rows += b.num_rows
    ids += _pc.sum(b.column(b.schema.get_field_index('id'))).as_py() or 0
result = [rows, ids]
"""

# pyarrow imports pandas lazily the first time it converts a Python object (pa.array, pa.scalar, ...), and
# `import pyarrow.dataset` imports it eagerly. Preload it in every contender's (untimed) setup so that no
# contender pays ~0.2-0.5 s of pandas import inside the timed region; DK_COLD shows the cold cost.
PRE = "import pandas\n"

RAW_PQ = "pyarrow pq.read_table(files)"
RAW_DS = "pyarrow ds.dataset(files).to_table()"
DK_TABLE = "deltakernel to_pyarrow_table()"
DL_TABLE = "deltalake to_pyarrow_table()"
DL_DS = "deltalake to_pyarrow_dataset().to_table()"
DK_COLD = "deltakernel to_pyarrow_table(), pandas not preloaded"

TABLE_CONTENDERS = [
    Contender(RAW_PQ, PRE + "import pyarrow.parquet as pq", "tbl = pq.read_table(PARAMS['files'])", _CHECK),
    Contender(
        RAW_DS, PRE + "import pyarrow.dataset as ds", "tbl = ds.dataset(PARAMS['files'], format='parquet').to_table()", _CHECK
    ),
    Contender(DK_TABLE, PRE + "from deltakernel import DeltaTable", "tbl = DeltaTable(PARAMS['path']).to_pyarrow_table()",
              _CHECK),
    Contender(DL_TABLE, PRE + "from deltalake import DeltaTable", "tbl = DeltaTable(PARAMS['path']).to_pyarrow_table()",
              _CHECK),
    Contender(
        DL_DS, PRE + "from deltalake import DeltaTable",
        "tbl = DeltaTable(PARAMS['path']).to_pyarrow_dataset().to_table()", _CHECK
    ),
    Contender(DK_COLD, "from deltakernel import DeltaTable", "tbl = DeltaTable(PARAMS['path']).to_pyarrow_table()",
              _CHECK),
]

STREAM_CONTENDERS = [
    Contender(
        "pyarrow ds.dataset(files).to_batches()",
        PRE + "import pyarrow.dataset as ds\nimport pyarrow.compute as _pc",
        "batches = ds.dataset(PARAMS['files'], format='parquet').to_batches()\n" + _STREAM_LOOP,
    ),
    Contender(
        "deltakernel to_batches()",
        PRE + "from deltakernel import DeltaTable\nimport pyarrow.compute as _pc",
        "batches = DeltaTable(PARAMS['path']).to_batches()\n" + _STREAM_LOOP,
    ),
    Contender(
        "deltalake to_pyarrow_dataset().to_batches()",
        PRE + "from deltalake import DeltaTable\nimport pyarrow.compute as _pc",
        "batches = DeltaTable(PARAMS['path']).to_pyarrow_dataset().to_batches()\n" + _STREAM_LOOP,
    ),
]
TARGET = 1.1  # deltakernel / best raw pyarrow


def _params() -> dict:
    import deltalake

    if not (SCAN_TABLE / "_delta_log").exists():
        make_scan_table()
    files = deltalake.DeltaTable(str(SCAN_TABLE)).file_uris()
    return {"path": str(SCAN_TABLE), "files": files}


def run(repeat: int = 5) -> tuple[str, list[Measurement], dict[str, float]]:
    params = _params()
    load_before = load_average()
    ms = measure_all(TABLE_CONTENDERS, params, repeat, tag="scan ")
    ref = ms[0].result
    for m in ms:
        if m.result[0] != N_ROWS or m.result != ref:
            raise SystemExit(f"{m.name}: result {m.result} differs from {ref} (expected {N_ROWS} rows)")
    by = {m.name: m for m in ms}
    raw_best = min((by[RAW_PQ], by[RAW_DS]), key=lambda m: m.best)
    headers, rows = measurement_rows(ms, {raw_best.name: "raw pyarrow", DL_TABLE: "deltalake"})
    dk = by[DK_TABLE]
    r_raw = dk.best / raw_best.best
    r_dl = dk.best / by[DL_TABLE].best
    md = (
        f"### Full scan to a pyarrow.Table: scan_10m ({N_ROWS:,} rows, {SCAN_FILES} files), {repeat} runs each "
        f"(fresh process per run), load average before: {load_before}\n\n"
        f"Raw pyarrow baseline = `{raw_best.name}` (the faster raw reader). pandas is preloaded (untimed) in "
        f"every contender except the last row, because pyarrow imports it lazily on first use.\n\n" + table(headers, rows) + "\n\n"
        f"deltakernel / raw pyarrow: time {r_raw:.2f}x (target <= {TARGET:.1f}x: "
        f"{'MET' if r_raw <= TARGET else 'MISSED'}); deltakernel / deltalake: time {r_dl:.2f}x, "
        f"peak RSS {dk.peak_rss_mb / by[DL_TABLE].peak_rss_mb:.2f}x\n"
    )

    sms = measure_all(STREAM_CONTENDERS, params, repeat, tag="stream ")
    for m in sms:
        if m.result != ref[:2]:
            raise SystemExit(f"{m.name}: result {m.result} differs from {ref[:2]}")
    srows = [
        [m.name, f"{m.best:.3f}", f"{m.median:.3f}", f"{m.best_cpu:.2f}", f"{m.peak_rss_mb:.0f}",
         f"{m.base_rss_mb:.0f}", f"{m.peak_rss_mb / dk.peak_rss_mb:.2f}x"]
        for m in sms
    ]
    dks = sms[1]
    md += (
        f"\n### Streaming scan of scan_10m (batches consumed and dropped), {repeat} runs each\n\n"
        + table(["contender", "best s", "median s", "best CPU s", "peak RSS MB", "RSS after imports MB",
                 "peak RSS vs deltakernel to_pyarrow_table"], srows)
        + "\n\n"
        f"deltakernel to_batches peak RSS {dks.peak_rss_mb:.0f} MB vs to_pyarrow_table {dk.peak_rss_mb:.0f} MB "
        f"({dks.peak_rss_mb / dk.peak_rss_mb:.2f}x)\n"
    )
    summary = {
        "scan_time_vs_raw": r_raw,
        "scan_time_vs_deltalake": r_dl,
        "stream_rss_vs_table": dks.peak_rss_mb / dk.peak_rss_mb,
    }
    return md, ms + sms, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    md, _, _ = run(args.repeat)
    print(md)


if __name__ == "__main__":
    main()
