"""VACUUM of a table with 10,000 expired files (issue 11 target: <= 0.7x deltalake).

Table (built once under benchmarks/data/, gitignored, cheaply: one tiny Parquet file hard-linked): version 0
adds 10,100 files, version 1 removes 10,000 of them with a deletionTimestamp 30 days old (so the default
7-day retention has expired them); every data file's modification time is 30 days old. Each run gets a fresh
copy (the log copied, data files hard-linked from the pristine table: not timed).

Contenders (fresh subprocess per run): ``DeltaTable(p).vacuum(dry_run=False)`` in lite mode (the default, from
the log's tombstones) and ``full=True`` (a storage listing), deltalake and deltakernel. The parent checks that
the 10,000 files are gone and the 100 live ones stay.

Usage: ``.venv/bin/python benchmarks/bench_vacuum.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, Contender, load_average, measurement_rows, table
from _prepared import RESET_PEAK_RSS, measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data"
SOURCE = DATA / "vacuum_10k"
TMP_DIR = DATA / "_tmp"
EXPIRED = 10_000
LIVE = 100

DL = "deltalake vacuum (lite)"
DK = "deltakernel vacuum (lite)"
DL_FULL = "deltalake vacuum (full)"
DK_FULL = "deltakernel vacuum (full)"


def _name(i: int) -> str:
    return f"part-{i:05d}-00000000-0000-0000-0000-{i:012d}-c000.snappy.parquet"


def make_table() -> None:
    """Version 0: 10,100 adds; version 1: 10,000 removes 30 days old. One Parquet file, hard-linked."""
    if (SOURCE / "_delta_log" / "00000000000000000001.json").exists():
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    if SOURCE.exists():
        shutil.rmtree(SOURCE)
    (SOURCE / "_delta_log").mkdir(parents=True)
    first = SOURCE / _name(0)
    pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), first)
    for i in range(1, EXPIRED + LIVE):
        os.link(first, SOURCE / _name(i))
    old = time.time() - 30 * 86_400
    os.utime(first, (old, old))  # one inode: every link is 30 days old
    size = first.stat().st_size
    now = int(time.time() * 1000)
    stats = json.dumps({"numRecords": 1, "minValues": {"x": 1}, "maxValues": {"x": 1}, "nullCount": {"x": 0}})
    schema = json.dumps({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True,
                                                        "metadata": {}}]})
    v0 = [{"commitInfo": {"timestamp": now - 31 * 86_400_000, "operation": "WRITE", "operationParameters": {}}},
          {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
          {"metaData": {"id": "vacuum-bench", "format": {"provider": "parquet", "options": {}},
                        "schemaString": schema, "partitionColumns": [], "configuration": {},
                        "createdTime": now}}]
    v0 += [{"add": {"path": _name(i), "partitionValues": {}, "size": size, "modificationTime": now,
                    "dataChange": True, "stats": stats}} for i in range(EXPIRED + LIVE)]
    ts = now - 30 * 86_400_000
    v1 = [{"commitInfo": {"timestamp": ts, "operation": "DELETE", "operationParameters": {}}}]
    v1 += [{"remove": {"path": _name(i), "deletionTimestamp": ts, "dataChange": True, "size": size,
                       "partitionValues": {}, "extendedFileMetadata": True}} for i in range(EXPIRED)]
    for v, actions in ((0, v0), (1, v1)):
        text = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions)
        (SOURCE / "_delta_log" / f"{v:020d}.json").write_text(text)


_OP = "r = {mod}.DeltaTable(PARAMS['out']).vacuum(dry_run=False{extra})\nresult = len(set(r))"
CONTENDERS = [
    Contender(DL, "import deltalake\n" + RESET_PEAK_RSS, _OP.format(mod="deltalake", extra="")),
    Contender(DK, PRELOAD_DELTAKERNEL + RESET_PEAK_RSS, _OP.format(mod="deltakernel", extra="")),
    Contender(DL_FULL, "import deltalake\n" + RESET_PEAK_RSS, _OP.format(mod="deltalake", extra=", full=True")),
    Contender(DK_FULL, PRELOAD_DELTAKERNEL + RESET_PEAK_RSS, _OP.format(mod="deltakernel", extra=", full=True")),
]


class _Runs:
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"vacuum_{rep}_{abs(hash(c.name)) % 10**8}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SOURCE / "_delta_log", out / "_delta_log")
        for i in range(EXPIRED + LIVE):
            os.link(SOURCE / _name(i), out / _name(i))
        return {"out": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        out = Path(params["out"])
        try:
            left = sorted(p.name for p in out.iterdir() if p.is_file())
            assert left == [_name(i) for i in range(EXPIRED, EXPIRED + LIVE)], f"{c.name}: {len(left)} files left"
            return len(left)
        finally:
            shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    make_table()
    load = load_average()
    runs = _Runs()
    ms = measure_prepared(CONTENDERS, runs.prepare, runs.finish, args.repeat, tag="vacuum ")
    headers, rows = measurement_rows(ms, {DL: "deltalake lite", DL_FULL: "deltalake full"})
    print(f"### VACUUM of {EXPIRED:,} expired files ({LIVE} live), {args.repeat} runs each (fresh process and "
          f"fresh copy per run), load average before: {load}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
