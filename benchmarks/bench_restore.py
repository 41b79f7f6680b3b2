"""RESTORE on a 100,000-file log (issue 11 target: <= 1.0x deltalake).

Table (built once under benchmarks/data/, gitignored, cheaply: four tiny Parquet files hard-linked 25,000
times each): version 0 adds 100,000 files; version 1 removes 50,000 of them and adds one. ``restore(0)``
re-adds the 50,000 files (checking that they exist) and removes the one. Before each run the parent deletes
every commit after version 1 (restore only ever adds a commit), so every run restores the same table.

Contenders (fresh subprocess per run): deltalake and deltakernel ``DeltaTable(p).restore(0)``; the result is
the metrics dict, and the parent checks the restored table's file count with deltalake.

Usage: ``.venv/bin/python benchmarks/bench_restore.py [--repeat N]``
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

from _harness import IMPORT_DELTAKERNEL, Contender, load_average, measurement_rows, table
from _prepared import RESET_PEAK_RSS, measure_prepared

BENCH_DIR = Path(__file__).resolve().parent
DATA = BENCH_DIR / "data"
TABLE = DATA / "restore_100k"
FILES = 100_000
REMOVED = 50_000
SOURCES = 4  # ext4 allows 65,000 links per inode

DL = "deltalake restore"
DK = "deltakernel restore"


def _name(i: int) -> str:
    return f"part-{i:06d}-00000000-0000-0000-0000-{i:012d}-c000.snappy.parquet"


def make_table() -> None:
    if (TABLE / "_delta_log" / "00000000000000000001.json").exists():
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    if TABLE.exists():
        shutil.rmtree(TABLE)
    (TABLE / "_delta_log").mkdir(parents=True)
    sources = []
    for k in range(SOURCES):
        src = TABLE / _name(k)
        pq.write_table(pa.table({"x": pa.array([k], pa.int64())}), src)
        sources.append(src)
    for i in range(SOURCES, FILES + 1):
        os.link(sources[i % SOURCES], TABLE / _name(i))
    size = sources[0].stat().st_size
    now = int(time.time() * 1000)
    schema = json.dumps({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True,
                                                        "metadata": {}}]})

    def add(i: int) -> dict[str, Any]:
        k = i % SOURCES
        stats = {"numRecords": 1, "minValues": {"x": k}, "maxValues": {"x": k}, "nullCount": {"x": 0}}
        return {"add": {"path": _name(i), "partitionValues": {}, "size": size, "modificationTime": now,
                        "dataChange": True, "stats": json.dumps(stats)}}

    v0 = [{"commitInfo": {"timestamp": now - 60_000, "operation": "WRITE", "operationParameters": {}}},
          {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
          {"metaData": {"id": "restore-bench", "format": {"provider": "parquet", "options": {}},
                        "schemaString": schema, "partitionColumns": [], "configuration": {},
                        "createdTime": now}}]
    v0 += [add(i) for i in range(FILES)]
    v1 = [{"commitInfo": {"timestamp": now, "operation": "DELETE", "operationParameters": {}}}, add(FILES)]
    v1 += [{"remove": {"path": _name(i), "deletionTimestamp": now, "dataChange": True, "size": size,
                       "partitionValues": {}, "extendedFileMetadata": True}} for i in range(REMOVED)]
    for v, actions in ((0, v0), (1, v1)):
        text = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions)
        (TABLE / "_delta_log" / f"{v:020d}.json").write_text(text)


_OP = "m = {mod}.DeltaTable(PARAMS['out']).restore(0)\nresult = [int(m['numRestoredFile']), int(m['numRemovedFile'])]"
CONTENDERS = [
    Contender(DL, "import deltalake\n" + RESET_PEAK_RSS, _OP.format(mod="deltalake")),
    Contender(DK, IMPORT_DELTAKERNEL + RESET_PEAK_RSS, _OP.format(mod="deltakernel")),
]


def _reset() -> None:
    """Drop every log file after version 1 (the previous run's RESTORE commit, checkpoints, .crc files)."""
    for p in (TABLE / "_delta_log").iterdir():
        if (p.name[:20].isdigit() and int(p.name[:20]) > 1) or p.name == "_last_checkpoint":
            p.unlink()


class _Runs:
    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        _reset()
        return {"out": str(TABLE)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        import deltalake

        d = deltalake.DeltaTable(params["out"])
        n = len(d.file_uris())
        _reset()
        assert d.version() == 2 and n == FILES, f"{c.name}: version {d.version()}, {n} files"
        return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    make_table()
    load = load_average()
    runs = _Runs()
    ms = measure_prepared(CONTENDERS, runs.prepare, runs.finish, args.repeat, tag="restore ")
    headers, rows = measurement_rows(ms, {DL: "deltalake"})
    print(f"### RESTORE to version 0 of a {FILES:,}-file log ({REMOVED:,} files re-added, 1 removed), "
          f"{args.repeat} runs each (fresh process per run), load average before: {load}\n")
    print(table(headers, rows))


if __name__ == "__main__":
    main()
