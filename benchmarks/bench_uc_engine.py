"""Unity Catalog tables from the embedded engine (issue 33, item 3): end-to-end costs of `uc://` names, as ratios.

What it measures (the UC test server of tests/uc_server and the engine in this process, on 127.0.0.1, local disk):
1. append: `write_deltalake(table, one-row batch, mode="append")` on an opened `DeltaTable("uc://...")` (stage,
   ratify over HTTP, publish, report the backfill) vs the same on a filesystem table by path;
2. open + latest snapshot: `DeltaTable("uc://...")` (loadTable, credentials, the log tail, the snapshot) with 0 / 10 /
   100 ratified-but-unpublished commits, relative to 0, and the 0 case relative to opening a path table.
Contenders alternate (A, B, A, B, ...) so background load hits both alike; medians and their ratios are printed with
the load average.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_uc_engine.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from uc_server import Policy  # noqa: E402
from uc_server.fixtures import UC_TOKEN, start_server  # noqa: E402

from deltakernel import DeltaTable, write_deltalake  # noqa: E402
from deltakernel.kernel.snapshot import Snapshot  # noqa: E402
from deltakernel.kernel.transaction.committer import CatalogCommitter  # noqa: E402
from deltakernel.kernel.transaction.transaction import Transaction  # noqa: E402
from deltakernel.operations.write.data_files import write_data  # noqa: E402


def _row(i: int) -> pa.Table:
    return pa.table({"id": pa.array([i], pa.int64())})


def _unpublished(dt: DeltaTable, n: int) -> None:
    storage = dt._storage
    for i in range(n):
        snap = Snapshot.load(storage)
        txn = Transaction(storage, snap, operation="WRITE",
                          committer=CatalogCommitter(storage, storage.catalog, auto_publish=False))
        adds, _, _ = write_data(storage, iter(_row(i).to_batches()), snap.metadata, snap.protocol)
        txn.add_files(adds)
        txn.commit()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        server = start_server(base, policy=Policy(max_unpublished=200))
        opts = {"unity_catalog_url": server.url, "unity_catalog_token": UC_TOKEN}
        try:
            path = str(base / "fs")
            write_deltalake(path, _row(0))
            write_deltalake("uc://main.default.a", _row(0), storage_options=opts)
            fs_t, uc_t = DeltaTable(path), DeltaTable("uc://main.default.a", storage_options=opts)
            t_fs, t_uc = [], []
            for i in range(args.rounds):
                t0 = time.perf_counter()
                write_deltalake(fs_t, _row(i), mode="append")
                t1 = time.perf_counter()
                write_deltalake(uc_t, _row(i), mode="append")
                t2 = time.perf_counter()
                t_fs.append(t1 - t0)
                t_uc.append(t2 - t1)
            assert uc_t.version() == args.rounds
            names = {}
            for k in (0, 10, 100):
                name = f"uc://main.default.l{k}"
                write_deltalake(name, _row(0), storage_options=opts)
                for i in range(100 - k):
                    write_deltalake(name, _row(i), mode="append", storage_options=opts)
                _unpublished(DeltaTable(name, storage_options=opts), k)
                names[k] = name
            write_deltalake(str(base / "fs100"), _row(0))
            for i in range(100):
                write_deltalake(str(base / "fs100"), _row(i), mode="append")
            loads: dict[str, list[float]] = {"path": [], **{str(k): [] for k in names}}
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                assert DeltaTable(str(base / "fs100")).version() == 100
                loads["path"].append(time.perf_counter() - t0)
                for k, name in names.items():
                    t0 = time.perf_counter()
                    assert DeltaTable(name, storage_options=opts).version() == 100
                    loads[str(k)].append(time.perf_counter() - t0)
        finally:
            server.stop()
    med = {k: statistics.median(v) * 1000 for k, v in loads.items()}
    fs_ms, uc_ms = statistics.median(t_fs) * 1000, statistics.median(t_uc) * 1000
    print(f"load average {os.getloadavg()[0]:.1f}, {args.rounds} rounds\n")
    print("| measure | median ms | ratio |\n|---|---|---|")
    print(f"| append, path table | {fs_ms:.1f} | 1.00 |")
    print(f"| append, uc:// table | {uc_ms:.1f} | {uc_ms / fs_ms:.2f} |")
    print(f"| open 101-version path table | {med['path']:.1f} | 1.00 |")
    for k in ("0", "10", "100"):
        print(f"| open uc:// table, {k} unpublished | {med[k]:.1f} | {med[k] / med['path']:.2f} "
              f"(vs 0 unpublished: {med[k] / med['0']:.2f}) |")


if __name__ == "__main__":
    main()
