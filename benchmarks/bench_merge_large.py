"""MERGE of a 10M-row source into a 50M-row target (issue 10: "finishes within 4 GiB RSS").

Tables (built once under benchmarks/data/, gitignored; ~2 GB): ``merge_50m`` (50 files of 1,000,000 rows,
written by deltalake, no deletion vectors) and ``merge_50m_dv`` (the same rows,
``delta.enableDeletionVectors=true``); columns ``id`` (int64, each file a contiguous range), ``value``
(double), ``name`` (string), ``ts`` (timestamp), ``day`` (date). Source ``merge_10m_source.parquet``:
5,000,000 existing ids drawn at random (every file touched, so key-range pruning cannot help) with new
values + 5,000,000 new ids, rows shuffled.

The source is handed to MERGE as a *stream* (``pyarrow.parquet.ParquetFile.iter_batches`` as a
``RecordBatchReader``), as a pipeline reading a larger-than-memory source would: deltakernel keeps the
join keys in memory and spills the rows to a memory-mapped Arrow file past 256 MiB.

Contenders (fresh subprocess and fresh copy of the table per run):
* deltakernel upsert, copy-on-write (rewrites all 50M rows)
* deltakernel upsert, deletion vectors
* with ``--deltalake``: deltalake 1.6.6 upsert (copy-on-write) on the same stream, for comparison

Reported: wall time, peak RSS (VmHWM after setup). Target: deltakernel peak RSS <= 4 GiB.
The parent checks the row count afterwards (55,000,000) and the number of updated/inserted rows.

Usage: ``.venv/bin/python benchmarks/bench_merge_large.py [--repeat N] [--deltalake]``
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
PLAIN = DATA / "merge_50m"
WITH_DV = DATA / "merge_50m_dv"
SOURCE = DATA / "merge_10m_source.parquet"
FILES = 50
ROWS_PER_FILE = 1_000_000
SOURCE_UPDATES = 5_000_000
SOURCE_INSERTS = 5_000_000

DK = "deltakernel merge 10M into 50M (copy-on-write)"
DK_DV = "deltakernel merge 10M into 50M (deletion vectors)"
DL = "deltalake merge 10M into 50M (copy-on-write)"

_SETUP = ("import pyarrow as pa, pyarrow.parquet as pq\n"
          "_pf = pq.ParquetFile(PARAMS['source'])\n"
          "SRC = pa.RecordBatchReader.from_batches(_pf.schema_arrow, _pf.iter_batches(batch_size=65536))\n")
_OP = ("m = {mod}.DeltaTable(PARAMS['out']).merge(SRC, 't.id = s.id', source_alias='s', target_alias='t')"
       ".when_matched_update_all().when_not_matched_insert_all().execute()\n"
       "result = [int(m['num_target_rows_updated']), int(m['num_target_rows_inserted'])]")


def _file(k: int) -> Any:
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(k)
    ids = np.arange(k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE, dtype=np.int64)
    words = pa.array([f"name_{i:05d}_{'x' * (i % 17)}" for i in range(10_000)])
    return pa.table({
        "id": pa.array(ids),
        "value": pa.array(rng.normal(0, 100, ids.size)),
        "name": words.take(pa.array(rng.integers(0, 10_000, ids.size))),
        "ts": pa.array((1_700_000_000_000_000 + ids * 1_000_000).astype("datetime64[us]"),
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array((19_000 + ids // 1_000_000).astype("int32"), pa.int32()).cast(pa.date32()),
    })


def make_tables() -> None:
    import deltalake
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    for root, conf in ((PLAIN, None), (WITH_DV, {"delta.enableDeletionVectors": "true"})):
        if (root / "_delta_log").exists():
            continue
        if root.exists():
            shutil.rmtree(root)
        print(f"building {root} ...", file=sys.stderr, flush=True)
        for k in range(FILES):
            deltalake.write_deltalake(str(root), _file(k), mode="append", configuration=conf if k == 0 else None)
    if SOURCE.exists():
        return
    print(f"building {SOURCE} ...", file=sys.stderr, flush=True)
    rng = np.random.default_rng(99)
    total = FILES * ROWS_PER_FILE
    ids = np.concatenate([rng.choice(total, SOURCE_UPDATES, replace=False),
                          np.arange(total, total + SOURCE_INSERTS)]).astype(np.int64)
    rng.shuffle(ids)
    template = _file(0)
    with pq.ParquetWriter(SOURCE, template.schema) as w:
        for lo in range(0, ids.size, ROWS_PER_FILE):
            part = ids[lo:lo + ROWS_PER_FILE]
            t = template.slice(0, part.size)
            w.write_table(pa.table({"id": pa.array(part), "value": pa.array(rng.normal(0, 100, part.size)),
                                    "name": t.column("name"), "ts": t.column("ts"), "day": t.column("day")}))


class _Runs:
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"merge_large_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(WITH_DV if c.name == DK_DV else PLAIN, out)
        return {"out": str(out), "source": str(SOURCE)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        out = Path(params["out"])
        try:
            import deltakernel

            rows = deltakernel.DeltaTable(str(out)).count()
            expected = FILES * ROWS_PER_FILE + SOURCE_INSERTS
            if rows != expected:
                raise RuntimeError(f"{c.name}: {rows} rows after the MERGE, expected {expected}")
            return {"rows": rows}
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--deltalake", action="store_true", help="also run deltalake (slow, may need more memory)")
    ap.add_argument("--only", choices=["cow", "dv"], help="run one deltakernel contender")
    args = ap.parse_args()
    make_tables()
    contenders = []
    if args.only in (None, "cow"):
        contenders.append(Contender(DK, IMPORT_DELTAKERNEL + _SETUP + RESET_PEAK_RSS, _OP.format(mod="deltakernel")))
    if args.only in (None, "dv"):
        contenders.append(Contender(DK_DV, IMPORT_DELTAKERNEL + _SETUP + RESET_PEAK_RSS,
                                    _OP.format(mod="deltakernel")))
    if args.deltalake:
        contenders.append(Contender(DL, "import deltalake\n" + _SETUP + RESET_PEAK_RSS, _OP.format(mod="deltalake")))
    load = load_average()
    ms = measure_prepared(contenders, _Runs().prepare, _Runs().finish, args.repeat, tag="merge-large ")
    headers, rows = measurement_rows(ms, {DL: "deltalake"} if args.deltalake else {})
    print(f"### MERGE upsert of a 10M-row source (5M updates spread over every file + 5M inserts, streamed) into "
          f"50M rows in 50 files, {args.repeat} run(s) each, load average before: {load}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
