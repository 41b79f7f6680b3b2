"""Checkpoint of snapshot_100k (100,100 live files) at its latest version (200).

Before every run the parent copies snapshot_100k/_delta_log to a fresh directory under benchmarks/data/_tmp,
so each contender writes its own `00000000000000000200.checkpoint.parquet` (+ `_last_checkpoint`); after the
run the parent checks the checkpoint (Parquet row count, add rows, `_last_checkpoint` version) and, on the
first run of each contender, that both deltalake and deltakernel open the checkpointed table with 100,100
files. The child does no verification, so its peak RSS is the operation's alone.

Contenders (fresh subprocess per run; imports untimed):
* deltakernel ``DeltaTable(p).create_checkpoint()`` and deltalake ``DeltaTable(p).create_checkpoint()``:
  load the snapshot + write the checkpoint (what a user pays);
* the same with ``DeltaTable(p)`` in the untimed setup and the child's peak RSS reset (``/proc/self/clear_refs``)
  before the timed part: the checkpoint write alone. Its "peak RSS" is still the process's (loaded snapshot
  included); "peak RSS above setup" is what the checkpoint itself adds.

deltakernel loads cold (pandas not preloaded), as in bench_snapshot: its replay makes pyarrow import pandas.

Target: deltakernel checkpoint (load + write) peak RSS <= deltalake's.

Usage: ``.venv/bin/python benchmarks/bench_checkpoint.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Contender, Measurement, load_average, measurement_rows, table
from _prepared import RESET_PEAK_RSS, measure_prepared
from make_tables import EXPECTED_SNAPSHOT_FILES, SNAPSHOT_TABLE, make_snapshot_table

TMP_DIR = Path(__file__).resolve().parent / "data" / "_tmp"
VERSION = 200
CHECKPOINT = f"{VERSION:020d}.checkpoint.parquet"

DK = "deltakernel DeltaTable(p).create_checkpoint()"
DL = "deltalake DeltaTable(p).create_checkpoint()"
DK_ONLY = "deltakernel create_checkpoint() alone (snapshot loaded in setup)"
DL_ONLY = "deltalake create_checkpoint() alone (snapshot loaded in setup)"

CONTENDERS = [
    Contender(DK, "from deltakernel import DeltaTable",
              "dt = DeltaTable(PARAMS['path'])\ndt.create_checkpoint()\nresult = 0"),
    Contender(DL, "from deltalake import DeltaTable",
              "dt = DeltaTable(PARAMS['path'])\ndt.create_checkpoint()\nresult = 0"),
    Contender(DK_ONLY, "from deltakernel import DeltaTable\ndt = DeltaTable(PARAMS['path'])\n" + RESET_PEAK_RSS,
              "dt.create_checkpoint()\nresult = 0"),
    Contender(DL_ONLY, "from deltalake import DeltaTable\ndt = DeltaTable(PARAMS['path'])\n" + RESET_PEAK_RSS,
              "dt.create_checkpoint()\nresult = 0"),
]
TARGET_RSS = 1.0  # deltakernel / deltalake peak RSS, load + checkpoint


class _Checker:
    def __init__(self) -> None:
        self.info: dict[str, dict[str, Any]] = {}

    def prepare(self, c: Contender, rep: int) -> dict[str, Any]:
        out = TMP_DIR / f"checkpoint_{rep}_{CONTENDERS.index(c)}"
        if out.exists():
            shutil.rmtree(out)
        TMP_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SNAPSHOT_TABLE / "_delta_log", out / "_delta_log")
        return {"path": str(out)}

    def finish(self, c: Contender, rep: int, params: dict[str, Any]) -> Any:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        root = Path(params["path"])
        try:
            cp = root / "_delta_log" / CHECKPOINT
            if not cp.exists():
                raise RuntimeError(f"{c.name}: no {CHECKPOINT} written")
            last = json.loads((root / "_delta_log" / "_last_checkpoint").read_text())
            if last["version"] != VERSION:
                raise RuntimeError(f"{c.name}: _last_checkpoint says version {last['version']}")
            pf = pq.ParquetFile(cp)
            adds = pq.read_table(cp, columns=["add"]).column("add")
            n_adds = len(adds) - adds.null_count
            removes = pq.read_table(cp, columns=["remove"]).column("remove")
            n_removes = len(removes) - removes.null_count
            add_fields = [adds.type.field(i).name for i in range(adds.type.num_fields)]
            self.info[c.name] = {
                "bytes": cp.stat().st_size,
                "rows": pf.metadata.num_rows,
                "row_groups": pf.metadata.num_row_groups,
                "adds": n_adds,
                "removes": n_removes,
                "stats_parsed": "stats_parsed" in add_fields,
                "json_stats": int(pc.sum(pc.is_valid(pc.struct_field(adds, "stats"))).as_py())
                if "stats" in add_fields else 0,
            }
            if n_adds != EXPECTED_SNAPSHOT_FILES:
                raise RuntimeError(f"{c.name}: checkpoint holds {n_adds} adds, expected {EXPECTED_SNAPSHOT_FILES}")
            if rep == 0:  # both libraries read the new checkpoint (the log before it is still there too)
                import deltalake

                sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
                import deltakernel

                n_dl = len(deltalake.DeltaTable(str(root)).file_uris())
                n_dk = len(deltakernel.DeltaTable(str(root)).files())
                if not n_dl == n_dk == EXPECTED_SNAPSHOT_FILES:
                    raise RuntimeError(f"{c.name}: after checkpoint deltalake sees {n_dl}, deltakernel {n_dk} files")
            return n_adds
        finally:
            shutil.rmtree(root, ignore_errors=True)


def run(repeat: int = 5) -> tuple[str, list[Measurement], dict[str, float]]:
    if not (SNAPSHOT_TABLE / "_delta_log" / "_last_checkpoint").exists():
        make_snapshot_table()
    load_before = load_average()
    chk = _Checker()
    ms = measure_prepared(CONTENDERS, chk.prepare, chk.finish, repeat, tag="checkpoint ")
    by = {m.name: m for m in ms}
    headers, rows = measurement_rows(ms, {DL: "deltalake"})
    headers = [*headers[:6], "peak RSS above setup MB", *headers[6:]]
    for m, row in zip(ms, rows):
        row[6:6] = [f"{m.peak_rss_mb - m.base_rss_mb:.0f}"]
    # the "alone" rows compare with deltalake's "alone" row
    for i, m in enumerate(ms):
        if m.name in (DK_ONLY, DL_ONLY):
            rows[i][7] = f"{m.best / by[DL_ONLY].best:.2f}x (vs deltalake alone)"
            rows[i][8] = f"{m.peak_rss_mb / by[DL_ONLY].peak_rss_mb:.2f}x (vs deltalake alone)"
    info_rows = [
        [name, f"{i['bytes'] / 1e6:.1f}", str(i["rows"]), str(i["row_groups"]), str(i["adds"]), str(i["removes"]),
         str(i["json_stats"]), "yes" if i["stats_parsed"] else "no"]
        for name, i in chk.info.items() if name in (DK, DL)
    ]
    dk, dl, dko, dlo = by[DK], by[DL], by[DK_ONLY], by[DL_ONLY]
    r_rss = dk.peak_rss_mb / dl.peak_rss_mb
    r_t = dk.best / dl.best
    md = (
        f"### Checkpoint of snapshot_100k at version {VERSION} ({EXPECTED_SNAPSHOT_FILES:,} live files), {repeat} runs "
        f"each (fresh process and fresh copy of the log per run), load average before: {load_before}\n\n"
        "\"RSS after imports\" is after the untimed setup (for the \"alone\" rows: with the snapshot loaded; their "
        "peak RSS is reset to that before the timed part).\n\n"
        + table(headers, rows) + "\n\n"
        + "Checkpoint files written:\n\n"
        + table(["contender", "MB", "rows", "row groups", "adds", "removes", "adds with JSON stats",
                 "stats_parsed"], info_rows) + "\n\n"
        f"deltakernel / deltalake (load + checkpoint): peak RSS {r_rss:.2f}x (target <= {TARGET_RSS:.1f}x: "
        f"{'MET' if r_rss <= TARGET_RSS else 'MISSED'}), time {r_t:.2f}x (median {dk.median / dl.median:.2f}x). "
        f"Checkpoint alone: deltakernel {dko.best:.3f}s, +{dko.peak_rss_mb - dko.base_rss_mb:.0f} MB above the loaded "
        f"snapshot; deltalake {dlo.best:.3f}s, +{dlo.peak_rss_mb - dlo.base_rss_mb:.0f} MB.\n"
    )
    summary = {
        "checkpoint_rss_ratio": r_rss,
        "checkpoint_time_ratio": r_t,
        "checkpoint_alone_time_ratio": dko.best / dlo.best,
    }
    return md, ms, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    md, _, _ = run(args.repeat)
    print(md)


if __name__ == "__main__":
    main()
