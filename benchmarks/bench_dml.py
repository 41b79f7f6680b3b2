"""DML: DELETE of 1 % of a 5M-row, 11-file table where the deleted rows touch every file (issue 10 targets).

Tables (built once under benchmarks/data/, gitignored): ``dml_5m`` (written by deltalake, no deletion
vectors) and ``dml_5m_dv`` (the same rows, ``delta.enableDeletionVectors=true``); 5,000,000 rows of scan_10m's
generator (``id``, ``value``, ``name``, ``ts``, ``day``) in 11 files of ~455k rows. The predicate
``id % 100 = 7`` deletes 50,000 rows, some in every file.

Contenders (fresh subprocess per run; the parent copies the table into a fresh directory before each run and
checks the rows left afterwards with deltalake, outside the child):
* deltalake ``DeltaTable(p).delete("id % 100 = 7")`` (copy-on-write: rewrites every file)
* deltakernel ``DeltaTable(p).delete("id % 100 = 7")`` on ``dml_5m`` (copy-on-write)
* deltakernel ``DeltaTable(p).delete("id % 100 = 7")`` on ``dml_5m_dv`` (deletion vectors)
* (info) raw pyarrow: read every file, filter, write the survivors back (the cost of a full rewrite)

Targets: DELETE copy-on-write <= 1.0x deltalake, with deletion vectors <= 0.2x deltalake; peak RSS <= deltalake.

Usage: ``.venv/bin/python benchmarks/bench_dml.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Contender, Measurement, load_average, measurement_rows, table
from _prepared import RESET_PEAK_RSS, measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data"
TMP_DIR = DATA / "_tmp"
PLAIN = DATA / "dml_5m"
WITH_DV = DATA / "dml_5m_dv"
ROWS_SOURCE_FILES = 10  # scan_10m batches of 500k rows -> 5M rows
FILES = 11
PREDICATE = "id % 100 = 7"

DL = "deltalake delete (copy-on-write)"
DK = "deltakernel delete (copy-on-write)"
DK_DV = "deltakernel delete (deletion vectors)"
RAW = "pyarrow read + filter + rewrite every file (info)"


def make_tables(force: bool = False) -> None:
    """Build dml_5m (no DVs) and dml_5m_dv (DVs enabled) with deltalake, 11 files each."""
    import deltalake
    import pyarrow as pa
    from make_tables import _scan_batch

    for root, conf in ((PLAIN, None), (WITH_DV, {"delta.enableDeletionVectors": "true"})):
        if root.exists() and (root / "_delta_log").exists() and not force:
            continue
        if root.exists():
            shutil.rmtree(root)
        data = pa.concat_tables([_scan_batch(k) for k in range(ROWS_SOURCE_FILES)])
        step = -(-data.num_rows // FILES)
        for i in range(FILES):
            piece = data.slice(i * step, step)
            if i == 0:
                deltalake.write_deltalake(str(root), piece, configuration=conf)
            else:
                deltalake.write_deltalake(str(root), piece, mode="append")


CONTENDERS = [
    Contender(DL, "import deltalake\n" + RESET_PEAK_RSS,
              f"m = deltalake.DeltaTable(PARAMS['out']).delete({PREDICATE!r})\nresult = int(m['num_deleted_rows'])"),
    Contender(DK, "import deltakernel\n" + RESET_PEAK_RSS,
              f"m = deltakernel.DeltaTable(PARAMS['out']).delete({PREDICATE!r})\nresult = int(m['num_deleted_rows'])"),
    Contender(DK_DV, "import deltakernel\n" + RESET_PEAK_RSS,
              f"m = deltakernel.DeltaTable(PARAMS['out']).delete({PREDICATE!r})\nresult = int(m['num_deleted_rows'])"),
    Contender(RAW, "import glob, pyarrow.compute as pc, pyarrow.parquet as pq\n" + RESET_PEAK_RSS,
              "n = 0\n"
              "for f in sorted(glob.glob(PARAMS['out'] + '/*.parquet')):\n"
              "    t = pq.read_table(f)\n"
              "    keep = pc.not_equal(pc.subtract(t['id'], pc.multiply(pc.divide(t['id'], 100), 100)), 7)\n"
              "    n += t.num_rows - pc.sum(keep.cast('int64')).as_py()\n"
              "    pq.write_table(t.filter(keep), f + '.rewritten.parquet')\n"
              "result = int(n)"),
]


class _Runs:
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"dml_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(WITH_DV if c.name == DK_DV else PLAIN, out)
        return {"out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        out = Path(params["out"])
        try:
            if c.name == RAW:
                return "info"
            import deltalake

            left = deltalake.DeltaTable(str(out)).to_pyarrow_table(columns=["id"]).num_rows
            return left
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    make_tables()
    load = load_average()
    runs = _Runs()
    ms: list[Measurement] = measure_prepared(CONTENDERS, runs.prepare, runs.finish, args.repeat, tag="dml ")
    headers, rows = measurement_rows(ms, {DL: "deltalake"})
    print(f"### DELETE 1 % ({PREDICATE}) of 5M rows in 11 files, every file touched, {args.repeat} runs each "
          f"(fresh process and fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
