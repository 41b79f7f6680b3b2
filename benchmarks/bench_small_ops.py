"""Small operations, deltakernel vs deltalake (issue 22): cold start, and warm operations in one process.

* cold start: a fresh process imports the library, opens a 1,000-row table and reads it (`to_pyarrow_table`);
  imports included (that is the cost a short script pays), one fresh subprocess per run, round-robin.
* warm: one process per library, modules loaded and the table opened before timing (deltakernel's modules
  preloaded as `import deltalake` loads its extension); then, per operation, `--ops` runs after 5 untimed ones:
  - append: `write_deltalake(dt, <100 rows>, mode="append")` through the same DeltaTable handle (it moves on);
  - delete: `dt.delete("id = <k>")` of one row (copy-on-write);
  - merge: `dt.merge(<10 rows>, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all()`;
  - open: `DeltaTable(path)` of the table the other operations grew.
  The two libraries' processes alternate (`--processes` each); medians of each are reported, and their ratio.
Target: warm appends <= 1.0x deltalake.

Usage: ``.venv/bin/python benchmarks/bench_small_ops.py [--ops N] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, ROOT, Contender, load_average, measure_all, measurement_rows, table

_WORKER = """
import json, shutil, statistics, sys, time
import pyarrow as pa
{imports}
mod = sys.modules[{mod!r}]
path, n_ops = sys.argv[1], int(sys.argv[2])
shutil.rmtree(path, ignore_errors=True)
rows = lambda start, n: pa.table({{"id": pa.array(range(start, start + n), pa.int64()),
                                   "v": pa.array([f"x{{i}}" for i in range(start, start + n)])}})
mod.write_deltalake(path, rows(0, 1000))
dt = mod.DeltaTable(path)
out = {{}}
def run(name, fn):
    for _ in range(5):
        fn()
    times = []
    for _ in range(n_ops):
        t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
    out[name] = statistics.median(times)
state = {{"next": 10_000}}
def append():
    mod.write_deltalake(dt, rows(state["next"], 100), mode="append"); state["next"] += 100
def delete():
    dt.delete(f"id = {{state['next'] - 1}}"); state["next"] -= 1
def merge():
    src = rows(state["next"] - 5, 10); state["next"] += 5
    (dt.merge(src, "t.id = s.id", source_alias="s", target_alias="t").when_matched_update_all()
       .when_not_matched_insert_all().execute())
run("append 100 rows", append)
run("delete 1 row", delete)
run("merge 10 rows", merge)
run("open", lambda: mod.DeltaTable(path))
print("@@RESULT@@" + json.dumps(out))
"""


def warm(lib: str, n_ops: int) -> dict[str, float]:
    imports = PRELOAD_DELTAKERNEL if lib == "deltakernel" else "import deltalake"
    code = _WORKER.format(imports=imports, mod=lib)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory(dir=ROOT / "benchmarks" / "data") as tmp:
        out = subprocess.run([sys.executable, "-c", code, str(Path(tmp) / "t"), str(n_ops)], env=env,
                             capture_output=True, text=True, timeout=1800)
    line = next((x for x in out.stdout.splitlines() if x.startswith("@@RESULT@@")), None)
    if line is None:
        raise SystemExit(f"{lib} failed:\n{out.stderr[-3000:]}")
    return json.loads(line[len("@@RESULT@@"):])  # type: ignore[no-any-return]


COLD = [
    Contender("deltakernel cold: import + open + read", "",
              "import deltakernel\nresult = deltakernel.DeltaTable(PARAMS['path']).to_pyarrow_table().num_rows"),
    Contender("deltalake cold: import + open + read", "",
              "import deltalake\nresult = deltalake.DeltaTable(PARAMS['path']).to_pyarrow_table().num_rows"),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--processes", type=int, default=3, help="warm processes per library (alternating)")
    args = ap.parse_args()
    (ROOT / "benchmarks" / "data").mkdir(parents=True, exist_ok=True)
    cold_table = ROOT / "benchmarks" / "data" / "small_1k"
    if not (cold_table / "_delta_log").exists():
        import deltalake
        import pyarrow as pa

        shutil.rmtree(cold_table, ignore_errors=True)
        deltalake.write_deltalake(str(cold_table), pa.table({"id": pa.array(range(1000), pa.int64()),
                                                             "v": pa.array([f"x{i}" for i in range(1000)])}))
    load = load_average()
    ms = measure_all(COLD, {"path": str(cold_table)}, args.repeat, tag="cold ")
    print(f"## Small operations (issue 22), load average {load}\n")
    print("### Cold start\n")
    print(table(*measurement_rows(ms, {COLD[1].name: "deltalake"})))
    runs: dict[str, list[dict[str, float]]] = {"deltakernel": [], "deltalake": []}
    for _ in range(args.processes):
        for lib in ("deltakernel", "deltalake"):
            runs[lib].append(warm(lib, args.ops))
    print(f"\n### Warm, medians of {args.ops} operations ({args.processes} processes per library, alternating)\n")
    print("| operation | deltakernel ms | deltalake ms | ratio |\n|---|---|---|---|")
    for op in runs["deltakernel"][0]:
        dk = statistics.median(r[op] for r in runs["deltakernel"]) * 1000
        dl = statistics.median(r[op] for r in runs["deltalake"]) * 1000
        print(f"| {op} | {dk:.2f} | {dl:.2f} | {dk / dl:.2f}x |")


if __name__ == "__main__":
    main()
