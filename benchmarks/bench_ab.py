"""A/B of deltakernel against another checkout of itself: the same public-API workload, alternating processes.

For refactors ("behaviour unchanged, no regression"): the baseline is any source tree of deltakernel (e.g.
`git worktree add /tmp/base <rev>`), imported through PYTHONPATH in its processes; the current tree is what the
venv has installed. Each round runs one baseline process then one current process (alternating controls drift
on a busy machine); medians per step and their ratio (current / baseline) are printed as Markdown.

Workload (one fresh table per process): write 1M rows partitioned by 8 values, 20 appends of 100 rows, a
copy-on-write DELETE of ~1/80 of the rows, a 10k-row MERGE upsert, an UPDATE of 50k rows, OPTIMIZE compaction,
a partition read; plus the cold start of `import deltakernel` + open + read of a small table.

Usage: ``.venv/bin/python benchmarks/bench_ab.py --baseline /tmp/base/src [--rounds 8]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

WORKLOAD = r'''
import json, shutil, sys, tempfile, time
import numpy as np, pyarrow as pa
import deltakernel
from deltakernel import DeltaTable, write_deltalake

def data(n, start=0):
    rng = np.random.default_rng(start)
    return pa.table({"id": np.arange(start, start + n, dtype=np.int64), "p": (np.arange(n) % 8).astype(np.int32),
                     "v": rng.random(n), "s": pa.array([f"s{i % 1000}" for i in range(n)])})

out = {}
d = tempfile.mkdtemp()
def step(name, fn):
    t0 = time.perf_counter(); fn(); out[name] = time.perf_counter() - t0
try:
    t = f"{d}/t"
    big = data(1_000_000)
    step("write 1M rows, partitioned", lambda: write_deltalake(t, big, partition_by=["p"]))
    step("20 appends of 100 rows", lambda: [write_deltalake(t, data(100, 2_000_000 + i * 100), mode="append")
                                          for i in range(20)])
    dt = DeltaTable(t)
    step("DELETE (copy-on-write)", lambda: dt.delete("id % 10 = 3 AND p = 1"))
    src = data(10_000, 995_000)
    step("MERGE 10k upsert", lambda: dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    step("UPDATE 50k rows", lambda: dt.update({"v": "v + 1"}, predicate="id < 50000"))
    step("OPTIMIZE compact", lambda: dt.optimize.compact())
    rows = []
    step("read one partition", lambda: rows.append(DeltaTable(t).to_pyarrow_table(filters=[("p", "=", 3)]).num_rows))
    out["_rows"] = rows[0]
finally:
    shutil.rmtree(d, ignore_errors=True)
out["_file"] = deltakernel.__file__
print(json.dumps(out))
'''

COLD = "from deltakernel import DeltaTable; DeltaTable(sys.argv[1]).to_pyarrow_table()"


def _env(baseline: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if baseline:
        env["PYTHONPATH"] = baseline
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="the baseline's src directory (holding deltakernel/)")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"baseline": [], "current": []}
    cold: dict[str, list[float]] = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as d:
        small = f"{d}/small"
        subprocess.run([sys.executable, "-c", "import pyarrow as pa, sys; from deltakernel import write_deltalake; "
                        "write_deltalake(sys.argv[1], pa.table({'id': list(range(1000))}))", small], check=True)
        for i in range(args.rounds):
            for side, base in (("baseline", args.baseline), ("current", None)):
                out = subprocess.run([sys.executable, "-c", WORKLOAD], env=_env(base), capture_output=True,
                                     text=True, check=True).stdout
                result = json.loads(out.strip().splitlines()[-1])
                if side == "baseline" and not result["_file"].startswith(os.path.abspath(args.baseline)):
                    raise SystemExit(f"the baseline run imported {result['_file']}, not {args.baseline}")
                runs[side].append(result)
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", "import sys; " + COLD, small], env=_env(base), check=True)
                cold[side].append(time.perf_counter() - t0)
            print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    if runs["baseline"][0]["_rows"] != runs["current"][0]["_rows"]:
        raise SystemExit("the two trees read different row counts: not the same behaviour")
    print("| step | baseline (median) | current (median) | current / baseline |")
    print("|---|---|---|---|")
    steps = [k for k in runs["baseline"][0] if not k.startswith("_")]
    for k in steps:
        b = statistics.median(r[k] for r in runs["baseline"])
        c = statistics.median(r[k] for r in runs["current"])
        print(f"| {k} | {b * 1000:.0f} ms | {c * 1000:.0f} ms | {c / b:.2f}x |")
    b, c = statistics.median(cold["baseline"]), statistics.median(cold["current"])
    print(f"| cold start: import + open + read (fresh process) | {b * 1000:.0f} ms | {c * 1000:.0f} ms | {c / b:.2f}x |")


if __name__ == "__main__":
    main()
