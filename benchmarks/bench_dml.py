"""DML: DELETE of 1 % of a 5M-row, 11-file table where the deleted rows touch every file (issue 10 targets).

Tables (built once under benchmarks/data/, gitignored): ``dml_5m`` (written by deltalake, no deletion
vectors) and ``dml_5m_dv`` (the same rows, ``delta.enableDeletionVectors=true``); 5,000,000 rows of scan_10m's
generator (``id``, ``value``, ``name``, ``ts``, ``day``) in 11 files of ~455k rows. The predicate
``id % 100 = 7`` deletes 50,000 rows, some in every file.

Contenders (fresh subprocess per run; the parent copies the table into a fresh directory before each run and
checks the rows left afterwards with deltalake's QueryBuilder, outside the child):
* deltalake ``DeltaTable(p).delete("id % 100 = 7")`` (copy-on-write: rewrites every file)
* deltakernel ``DeltaTable(p).delete("id % 100 = 7")`` on ``dml_5m`` (copy-on-write)
* deltakernel ``DeltaTable(p).delete("id % 100 = 7")`` on ``dml_5m_dv`` (deletion vectors)
* (info) raw pyarrow: read every file, filter, write the survivors back (the cost of a full rewrite)

Targets: DELETE copy-on-write <= 1.0x deltalake, with deletion vectors <= 0.2x deltalake; peak RSS <= deltalake.

``--merge``: MERGE 1 % upsert (``when_matched_update_all().when_not_matched_insert_all()`` on ``t.id = s.id``;
25k existing ids, ``id % 200 = 7``, so every file is touched, + 25k new ids): deltalake (copy-on-write) vs
deltakernel copy-on-write (target <= 0.8x) and with deletion vectors (target <= 0.5x).

``--update``: UPDATE 1 % (``id % 100 = 7``, ``SET value = value + 1, name = 'updated'``): deltalake
(copy-on-write) vs deltakernel copy-on-write (target <= 1.0x) and with deletion vectors (target <= 0.5x).

Usage: ``.venv/bin/python benchmarks/bench_dml.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import IMPORT_DELTAKERNEL, Contender, Measurement, load_average, measurement_rows, table
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
    Contender(DK, IMPORT_DELTAKERNEL + RESET_PEAK_RSS,
              f"m = deltakernel.DeltaTable(PARAMS['out']).delete({PREDICATE!r})\nresult = int(m['num_deleted_rows'])"),
    Contender(DK_DV, IMPORT_DELTAKERNEL + RESET_PEAK_RSS,
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

            # deltalake's DataFusion path reads deletion vectors (its pyarrow path refuses them)
            qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(out)))
            return qb.execute("SELECT count(*) AS n FROM t").read_all().column(0)[0].as_py()
        finally:
            shutil.rmtree(out, ignore_errors=True)


# ----------------------------------------------------------------------------- MERGE (issue 10)
MERGE_SOURCE = DATA / "dml_merge_source.parquet"
M_DL = "deltalake merge upsert (copy-on-write)"
M_DK = "deltakernel merge upsert (copy-on-write)"
M_DK_DV = "deltakernel merge upsert (deletion vectors)"
_MERGE_OP = ("m = {mod}.DeltaTable(PARAMS['out']).merge(SRC, 't.id = s.id', source_alias='s', target_alias='t')"
             ".when_matched_update_all().when_not_matched_insert_all().execute()\n"
             "result = [int(m['num_target_rows_updated']), int(m['num_target_rows_inserted'])]")
_MERGE_SETUP = "import pyarrow.parquet as pq\nSRC = pq.read_table(PARAMS['source'])\n"
MERGE_CONTENDERS = [
    Contender(M_DL, "import deltalake\n" + _MERGE_SETUP + RESET_PEAK_RSS, _MERGE_OP.format(mod="deltalake")),
    Contender(M_DK, IMPORT_DELTAKERNEL + _MERGE_SETUP + RESET_PEAK_RSS, _MERGE_OP.format(mod="deltakernel")),
    Contender(M_DK_DV, IMPORT_DELTAKERNEL + _MERGE_SETUP + RESET_PEAK_RSS, _MERGE_OP.format(mod="deltakernel")),
]


def make_merge_source() -> None:
    """The 1 % upsert: 25,000 existing ids (id % 200 = 7, in every file) with new values + 25,000 new ids."""
    if MERGE_SOURCE.exists():
        return
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from make_tables import _scan_batch

    n = ROWS_SOURCE_FILES * _scan_batch(0).num_rows
    upd = np.arange(7, n, 200, dtype=np.int64)
    ins = np.arange(n, n + upd.size, dtype=np.int64)
    ids = np.concatenate([upd, ins])
    rng = np.random.default_rng(7)
    template = _scan_batch(0).slice(0, ids.size)
    src = pa.table({"id": pa.array(ids), "value": pa.array(rng.normal(0, 100, ids.size)),
                    "name": template.column("name"), "ts": template.column("ts"), "day": template.column("day")})
    pq.write_table(src, MERGE_SOURCE)


class _MergeRuns(_Runs):
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"dml_merge_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(WITH_DV if c.name == M_DK_DV else PLAIN, out)
        return {"out": str(out), "source": str(MERGE_SOURCE)}


def run_merge(repeat: int) -> None:
    make_merge_source()
    load = load_average()
    ms = measure_prepared(MERGE_CONTENDERS, _MergeRuns().prepare, _MergeRuns().finish, repeat, tag="merge ")
    headers, rows = measurement_rows(ms, {M_DL: "deltalake"})
    print(f"### MERGE 1 % upsert (25k updates, id % 200 = 7, + 25k inserts) into 5M rows in 11 files, every file "
          f"touched, {repeat} runs each (fresh process and fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))


# ----------------------------------------------------------------------------- UPDATE (issue 10)
UPDATES = {"value": "value + 1", "name": "'updated'"}
U_DL = "deltalake update (copy-on-write)"
U_DK = "deltakernel update (copy-on-write)"
U_DK_DV = "deltakernel update (deletion vectors)"
_UPDATE_OP = (f"m = MOD.DeltaTable(PARAMS['out']).update(updates={UPDATES!r}, predicate={PREDICATE!r})\n"
              "result = int(m['num_updated_rows'])")
UPDATE_CONTENDERS = [
    Contender(U_DL, "import deltalake\n" + RESET_PEAK_RSS, _UPDATE_OP.replace("MOD", "deltalake")),
    Contender(U_DK, IMPORT_DELTAKERNEL + RESET_PEAK_RSS, _UPDATE_OP.replace("MOD", "deltakernel")),
    Contender(U_DK_DV, IMPORT_DELTAKERNEL + RESET_PEAK_RSS, _UPDATE_OP.replace("MOD", "deltakernel")),
]


class _UpdateRuns(_Runs):
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"dml_update_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(WITH_DV if c.name == U_DK_DV else PLAIN, out)
        return {"out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        out = Path(params["out"])
        try:
            import deltalake

            qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(out)))
            sql = ("SELECT count(*) AS n, sum(CASE WHEN name = 'updated' THEN 1 ELSE 0 END) AS u, "
                   "sum(CASE WHEN name = 'updated' AND id % 100 <> 7 THEN 1 ELSE 0 END) AS wrong FROM t")
            import pyarrow as pa

            row = pa.table(qb.execute(sql).read_all()).to_pylist()[0]
            return [row["n"], row["u"], row["wrong"]]
        finally:
            shutil.rmtree(out, ignore_errors=True)


def run_update(repeat: int) -> None:
    load = load_average()
    runs = _UpdateRuns()
    ms = measure_prepared(UPDATE_CONTENDERS, runs.prepare, runs.finish, repeat, tag="update ")
    headers, rows = measurement_rows(ms, {U_DL: "deltalake"})
    print(f"### UPDATE 1 % ({PREDICATE}, SET {UPDATES}) of 5M rows in 11 files, every file touched, {repeat} runs "
          f"each (fresh process and fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--update", action="store_true", help="run the UPDATE contenders only")
    ap.add_argument("--merge", action="store_true", help="run the MERGE contenders only")
    args = ap.parse_args()
    make_tables()
    if args.update:
        run_update(args.repeat)
        return
    if args.merge:
        run_merge(args.repeat)
        return
    load = load_average()
    runs = _Runs()
    ms: list[Measurement] = measure_prepared(CONTENDERS, runs.prepare, runs.finish, args.repeat, tag="dml ")
    headers, rows = measurement_rows(ms, {DL: "deltalake"})
    print(f"### DELETE 1 % ({PREDICATE}) of 5M rows in 11 files, every file touched, {args.repeat} runs each "
          f"(fresh process and fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
