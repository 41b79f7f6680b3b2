"""Unity Catalog client: the HTTP cost of catalog commits and of loading a log tail, as ratios.

What it measures (client + test server of tests/uc_server, both in this process, on 127.0.0.1):
1. commit latency: stage a commit file + ratify it (updateTable `add-commit`) vs a filesystem commit (put-if-absent
   of `_delta_log/<v>.json`) of the same payload - the catalog's overhead per commit before publishing;
2. loadTable with 0 / 10 / 100 unpublished commits (the log tail a reader fetches), relative to 0.
Contenders alternate (A, B, A, B, ...) so background load hits both alike; medians and their ratio are printed with
the load average. The kernel side (snapshot load from the tail, publish) is measured once the adapter exists.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_uc_client.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "uc"))

from uc_helpers import create_managed_table, stage_commit  # noqa: E402
from uc_server import Policy  # noqa: E402
from uc_server.fixtures import CATALOG, SCHEMA, client_for, start_server  # noqa: E402

from deltakernel.storage.local import LocalStorage  # noqa: E402


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def bench_commit(repeat: int, tmp: Path) -> None:
    server = start_server(tmp / "commit", policy=Policy(max_unpublished=10**6))
    try:
        client = client_for(server)
        staging, loaded = create_managed_table(client, CATALOG, SCHEMA, "t")
        fs_root = tmp / "fs"
        (fs_root / "_delta_log").mkdir(parents=True)
        fs = LocalStorage(str(fs_root))
        payload = b'{"commitInfo":{"timestamp":1,"operation":"WRITE"}}\n{"add":{"path":"x.parquet"}}\n'
        cat, fsys = [], []
        for v in range(1, repeat + 1):
            t0 = time.perf_counter()
            c = stage_commit(staging.location, v)
            client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c)
            cat.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            fs.put_if_absent(f"_delta_log/{v:020d}.json", payload)
            fsys.append(time.perf_counter() - t0)
        print(f"commit: catalog (stage + add-commit) median {_median_ms(cat):.2f} ms, filesystem put-if-absent "
              f"{_median_ms(fsys):.3f} ms, ratio {statistics.median(cat) / statistics.median(fsys):.1f}x "
              f"({repeat} pairs)")
    finally:
        server.stop()


def bench_load(repeat: int, tmp: Path) -> None:
    servers, clients = [], []
    try:
        for n in (0, 10, 100):
            server = start_server(tmp / f"load{n}", policy=Policy(max_unpublished=1000))
            client = client_for(server)
            staging, loaded = create_managed_table(client, CATALOG, SCHEMA, "t")
            commits = [stage_commit(staging.location, v) for v in range(1, n + 1)]
            for c in commits:
                client.add_commit(CATALOG, SCHEMA, "t", table_uuid=loaded.table_uuid, commit=c)
            servers.append(server)
            clients.append(client)
        times: list[list[float]] = [[], [], []]
        for _ in range(repeat):
            for i, client in enumerate(clients):
                t0 = time.perf_counter()
                got = client.load_table(CATALOG, SCHEMA, "t")
                times[i].append(time.perf_counter() - t0)
                assert len(got.commits) == (0, 10, 100)[i]
        base = statistics.median(times[0])
        print("loadTable: " + ", ".join(
            f"{n} unpublished {_median_ms(t):.2f} ms ({statistics.median(t) / base:.2f}x)"
            for n, t in zip((0, 10, 100), times)) + f" ({repeat} rounds)")
    finally:
        for s in servers:
            s.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores shared)")
    with tempfile.TemporaryDirectory() as d:
        bench_commit(args.repeat, Path(d))
        bench_load(args.repeat, Path(d))
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
