"""Run every benchmark and print a Markdown report to stdout (progress goes to stderr).

Usage: ``.venv/bin/python benchmarks/run_all.py [--repeat-snapshot N] [--repeat-scan N] [--repeat-write N]
[--repeat-checkpoint N] [--only snapshot,scan,write,checkpoint]``

Builds the tables under benchmarks/data/ first if they are missing (see make_tables.py). The steps run one
after another (never in parallel): the machine is small and parallel runs would disturb the timings.
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_checkpoint
import bench_scan
import bench_snapshot
import bench_write
from _harness import load_average, machine, table, versions
from make_tables import make_scan_table, make_snapshot_table, verify_snapshot_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat-snapshot", type=int, default=7)
    ap.add_argument("--repeat-scan", type=int, default=5)
    ap.add_argument("--repeat-write", type=int, default=5)
    ap.add_argument("--repeat-checkpoint", type=int, default=7)
    ap.add_argument("--only", default="snapshot,scan,write,checkpoint",
                    help="comma-separated subset of: snapshot, scan, write, checkpoint")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}

    if only & {"snapshot", "checkpoint"}:
        make_snapshot_table()
        verify_snapshot_table()
    if "scan" in only:
        make_scan_table()  # bench_write needs no table: it generates its input (make_tables._scan_batch)

    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    git = subprocess.run(["git", "-C", str(Path(__file__).resolve().parents[1]), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "?"
    mach = machine()
    vers = versions()
    load0 = load_average()
    snap_md, _, snap = bench_snapshot.run(args.repeat_snapshot) if "snapshot" in only else ("", [], {})
    scan_md, _, scan = bench_scan.run(args.repeat_scan) if "scan" in only else ("", [], {})
    write_md, _, write = bench_write.run(args.repeat_write) if "write" in only else ("", [], {})
    ckpt_md, _, ckpt = bench_checkpoint.run(args.repeat_checkpoint) if "checkpoint" in only else ("", [], {})

    def verdict(ok: bool) -> str:
        return "MET" if ok else "MISSED"

    rows: list[list[str]] = []
    if snap:
        rows += [
            ["snapshot load no slower than deltalake (deltakernel/deltalake <= 1.0x)",
             f"{snap['snapshot_time_ratio']:.2f}x", verdict(snap["snapshot_time_ratio"] <= bench_snapshot.TARGET)],
        ]
    if scan:
        rows += [
            ["full scan within 1.1x of raw pyarrow on the same files",
             f"{scan['scan_time_vs_raw']:.2f}x", verdict(scan["scan_time_vs_raw"] <= bench_scan.TARGET)],
        ]
    if write:
        rows += [
            ["append 10M rows no slower than deltalake (deltakernel/deltalake <= 1.0x)",
             f"{write['write_vs_deltalake']:.2f}x (median {write['write_median_vs_deltalake']:.2f}x, "
             f"best CPU {write['write_cpu_vs_deltalake']:.2f}x)",
             verdict(write["write_vs_deltalake"] <= bench_write.TARGET_DL)],
            ["append 10M rows within 1.1x of raw pyarrow pq.write_table",
             f"{write['write_vs_raw']:.2f}x (median {write['write_median_vs_raw']:.2f}x, "
             f"best CPU {write['write_cpu_vs_raw']:.2f}x)",
             verdict(write["write_vs_raw"] <= bench_write.TARGET_RAW)],
            ["partitioned append (20 partitions) no slower than deltalake",
             f"{write['write_part_vs_deltalake']:.2f}x (median {write['write_part_median_vs_deltalake']:.2f}x, "
             f"best CPU {write['write_part_cpu_vs_deltalake']:.2f}x)",
             verdict(write["write_part_vs_deltalake"] <= bench_write.TARGET_DL)],
        ]
    if ckpt:
        rows += [
            ["checkpoint (load + write) peak RSS no higher than deltalake's",
             f"{ckpt['checkpoint_rss_ratio']:.2f}x (peak RSS ratio)",
             verdict(ckpt["checkpoint_rss_ratio"] <= bench_checkpoint.TARGET_RSS)],
        ]
    if scan:
        rows += [["(info) full scan vs deltalake", f"{scan['scan_time_vs_deltalake']:.2f}x", ""]]
    if snap:
        rows += [["(info) snapshot peak RSS vs deltalake", f"{snap['snapshot_rss_ratio']:.2f}x", ""]]
    if scan:
        rows += [["(info) streaming to_batches peak RSS vs to_pyarrow_table", f"{scan['stream_rss_vs_table']:.2f}x", ""]]
    if ckpt:
        rows += [
            ["(info) checkpoint (load + write) time vs deltalake", f"{ckpt['checkpoint_time_ratio']:.2f}x", ""],
            ["(info) checkpoint write alone time vs deltalake", f"{ckpt['checkpoint_alone_time_ratio']:.2f}x", ""],
        ]
    summary = table(["target", "measured (best-of wall time ratio unless noted)", "status"], rows)
    print(f"## deltakernel benchmarks — {when}, git {git} (working tree as found)\n")
    print(
        f"Machine: {mach['cpu']}, nproc={mach['nproc']}, {mach['memory']} RAM, {mach['os']}; "
        f"load average at start: {load0}.  \n"
        + "Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()) + ".\n"
    )
    print("### Targets\n")
    print(summary + "\n")
    for md in (snap_md, scan_md, write_md, ckpt_md):
        if md:
            print(md)


if __name__ == "__main__":
    main()
