"""Run every benchmark and print a Markdown report to stdout (progress goes to stderr).

Usage: ``.venv/bin/python benchmarks/run_all.py [--repeat-snapshot N] [--repeat-scan N]``

Builds the tables under benchmarks/data/ first if they are missing (see make_tables.py). The steps run one
after another (never in parallel): the machine is small and parallel runs would disturb the timings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_scan
import bench_snapshot
from _harness import load_average, machine, table, versions
from make_tables import make_scan_table, make_snapshot_table, verify_snapshot_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat-snapshot", type=int, default=7)
    ap.add_argument("--repeat-scan", type=int, default=5)
    args = ap.parse_args()

    make_snapshot_table()
    verify_snapshot_table()
    make_scan_table()

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mach = machine()
    vers = versions()
    load0 = load_average()
    snap_md, _, snap = bench_snapshot.run(args.repeat_snapshot)
    scan_md, _, scan = bench_scan.run(args.repeat_scan)

    def verdict(ok: bool) -> str:
        return "MET" if ok else "MISSED"

    summary = table(
        ["target", "measured (best-of wall time ratio)", "status"],
        [
            ["snapshot load no slower than deltalake (deltakernel/deltalake <= 1.0x)",
             f"{snap['snapshot_time_ratio']:.2f}x", verdict(snap["snapshot_time_ratio"] <= bench_snapshot.TARGET)],
            ["full scan within 1.1x of raw pyarrow on the same files",
             f"{scan['scan_time_vs_raw']:.2f}x", verdict(scan["scan_time_vs_raw"] <= bench_scan.TARGET)],
            ["(info) full scan vs deltalake", f"{scan['scan_time_vs_deltalake']:.2f}x", ""],
            ["(info) snapshot peak RSS vs deltalake", f"{snap['snapshot_rss_ratio']:.2f}x", ""],
            ["(info) streaming to_batches peak RSS vs to_pyarrow_table", f"{scan['stream_rss_vs_table']:.2f}x", ""],
        ],
    )
    print(f"## deltakernel benchmarks — {when}\n")
    print(
        f"Machine: {mach['cpu']}, nproc={mach['nproc']}, {mach['memory']} RAM, {mach['os']}; "
        f"load average at start: {load0}.  \n"
        + "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".\n"
    )
    print("### Targets\n")
    print(summary + "\n")
    print(snap_md)
    print(scan_md)


if __name__ == "__main__":
    main()
