"""Snapshot load of snapshot_100k: open the table at its latest version and list its 100,100 live files.

Contenders (each in a fresh subprocess per repetition; imports not timed):
* deltakernel: ``DeltaTable(path)`` + ``len(dt.file_uris())`` (modules preloaded, as deltalake's)
* deltalake:   ``DeltaTable(path)`` + ``len(dt.file_uris())`` (deltalake 1.x has no ``files()``)

Target: deltakernel no slower than deltalake (time ratio <= 1.0).

Usage: ``.venv/bin/python benchmarks/bench_snapshot.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, Contender, Measurement, load_average, measure_all, measurement_rows, table
from make_tables import EXPECTED_SNAPSHOT_FILES, SNAPSHOT_TABLE, make_snapshot_table

CONTENDERS = [
    Contender(
        "deltakernel DeltaTable + file_uris()",
        PRELOAD_DELTAKERNEL,
        "dt = DeltaTable(PARAMS['path'])\nresult = len(dt.file_uris())",
    ),
    Contender(
        "deltalake DeltaTable + file_uris()",
        "from deltalake import DeltaTable",
        "dt = DeltaTable(PARAMS['path'])\nresult = len(dt.file_uris())",
    ),
    # diagnostic: pyarrow imports pandas lazily on its first Python-object conversion (pa.array/pa.scalar),
    # which deltakernel's replay triggers inside DeltaTable(); this row moves that import out of the timing
    Contender(
        "deltakernel, pandas preloaded (diagnostic)",
        "import pandas\nfrom deltakernel import DeltaTable",
        "dt = DeltaTable(PARAMS['path'])\nresult = len(dt.files())",
    ),
]
TARGET = 1.0  # deltakernel / deltalake best time


def run(repeat: int = 7) -> tuple[str, list[Measurement], dict[str, float]]:
    if not (SNAPSHOT_TABLE / "_delta_log" / "_last_checkpoint").exists():
        make_snapshot_table()
    params = {"path": str(SNAPSHOT_TABLE)}
    load_before = load_average()
    ms = measure_all(CONTENDERS, params, repeat, tag="snapshot ")
    for m in ms:
        if m.result != EXPECTED_SNAPSHOT_FILES:
            raise SystemExit(f"{m.name}: {m.result} files, expected {EXPECTED_SNAPSHOT_FILES}")
    dk, dl, dkw = ms
    headers, rows = measurement_rows(ms, {dl.name: "deltalake"})
    r = dk.best / dl.best
    md = (
        f"### Snapshot load: snapshot_100k (checkpoint of 100k adds + 100 commits, {EXPECTED_SNAPSHOT_FILES} live "
        f"files), {repeat} runs each (fresh process per run), load average before: {load_before}\n\n" + table(headers, rows) + "\n\n"
        f"deltakernel / deltalake: time {r:.2f}x (target <= {TARGET:.1f}x: "
        f"{'MET' if r <= TARGET else 'MISSED'}), peak RSS {dk.peak_rss_mb / dl.peak_rss_mb:.2f}x. "
        f"With pandas preloaded deltakernel takes {dkw.best:.3f}s ({dkw.best / dl.best:.2f}x of deltalake).\n"
    )
    return md, ms, {"snapshot_time_ratio": r, "snapshot_rss_ratio": dk.peak_rss_mb / dl.peak_rss_mb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    md, _, _ = run(args.repeat)
    print(md)


if __name__ == "__main__":
    main()
