"""Catalog-managed tables in the kernel (issue 33): commit latency through a catalog vs the filesystem, and
snapshot load with 0 / 10 / 100 unpublished (staged, ratified) commits.

The catalog is the in-memory `MemoryCatalog` of the kernel tests (tests/unit/memory_catalog.py), so these are the
kernel's own costs - staging, the extra reads and the publish copy - without any network (a Unity Catalog server
adds its round trips on top). Local storage under a temporary directory.

* commit: one blind append of a small file per commit; rounds alternate filesystem / catalog (auto-publish on),
  medians and their ratio;
* load: three tables of 101 versions each, the last k in {0, 10, 100} ratified but unpublished; rounds alternate the
  tables; `Snapshot.load(catalog=...)` medians and the ratio to k = 0.

Usage: ``.venv/bin/python benchmarks/bench_catalog_commits.py [--rounds N]`` (prints Markdown).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "unit"))

from memory_catalog import MemoryCatalog  # noqa: E402

from deltakernel.kernel.log.actions import Metadata, Protocol  # noqa: E402
from deltakernel.kernel.snapshot import Snapshot  # noqa: E402
from deltakernel.kernel.transaction.committer import CatalogCommitter  # noqa: E402
from deltakernel.kernel.transaction.transaction import Transaction  # noqa: E402
from deltakernel.storage import storage_for_uri  # noqa: E402

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
CM = Protocol(3, 7, frozenset({"catalogManaged", "vacuumProtocolCheck"}),
              frozenset({"catalogManaged", "inCommitTimestamp", "vacuumProtocolCheck"}))
ICT = {"delta.enableInCommitTimestamps": "true"}


def _add(storage, i: int) -> dict:
    buf = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([i], pa.int64())}), buf)
    path = f"part-{uuid.uuid4()}.parquet"
    storage.put(path, buf.getvalue())
    return {"path": path, "partitionValues": {}, "size": len(buf.getvalue()), "modificationTime": 0,
            "dataChange": True, "stats": json.dumps({"numRecords": 1})}


def _create(storage, catalog: MemoryCatalog | None) -> None:
    txn = Transaction(storage, None, operation="CREATE TABLE",
                      committer=CatalogCommitter(storage, catalog) if catalog is not None else None)
    txn.update_protocol(CM if catalog is not None else Protocol(1, 2))
    txn.update_metadata(Metadata(str(uuid.uuid4()), SCHEMA, (), dict(ICT)))
    txn.commit()


def _append(storage, snap: Snapshot, i: int, committer=None) -> Snapshot:
    txn = Transaction(storage, snap, operation="WRITE", committer=committer)
    txn.add_files([_add(storage, i)])
    v = txn.commit(post_commit=False).version
    return snap.advance(v)


def bench_commits(base: Path, rounds: int) -> tuple[float, float]:
    fs, cs = storage_for_uri(str(base / "fs")), storage_for_uri(str(base / "cat"))
    cat = MemoryCatalog()
    _create(fs, None)
    _create(cs, cat)
    fsnap, csnap = Snapshot.load(fs), Snapshot.load(cs, catalog=cat)
    t_fs, t_cat = [], []
    for i in range(rounds):
        t0 = time.perf_counter()
        fsnap = _append(fs, fsnap, i)
        t1 = time.perf_counter()
        csnap = _append(cs, csnap, i)
        t2 = time.perf_counter()
        t_fs.append(t1 - t0)
        t_cat.append(t2 - t1)
    return statistics.median(t_fs), statistics.median(t_cat)


def bench_loads(base: Path, rounds: int) -> dict[int, float]:
    tables = {}
    for k in (0, 10, 100):
        st = storage_for_uri(str(base / f"load{k}"))
        cat = MemoryCatalog()
        _create(st, cat)
        snap = Snapshot.load(st, catalog=cat)
        for i in range(100):
            publish = i < 100 - k
            snap = _append(st, snap, i, CatalogCommitter(st, cat, auto_publish=publish))
        CatalogCommitter(st, cat).publish(100 - k)
        assert len(cat.get_log_tail().commits) == k
        tables[k] = (st, cat)
    times: dict[int, list[float]] = {k: [] for k in tables}
    for _ in range(rounds):
        for k, (st, cat) in tables.items():
            t0 = time.perf_counter()
            snap = Snapshot.load(st, catalog=cat)
            times[k].append(time.perf_counter() - t0)
            assert snap.version == 100 and snap.num_files == 100
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        base = Path(d)
        fs, cat = bench_commits(base, args.rounds)
        loads = bench_loads(base, args.rounds)
    print(f"load average {os.getloadavg()[0]:.1f} (2 cores, shared), {args.rounds} alternating rounds, medians\n")
    print("| commit (blind append, local) | median | ratio |\n|---|---|---|")
    print(f"| filesystem put-if-absent | {fs * 1000:.1f} ms | 1.00x |")
    print(f"| catalog: stage, ratify, publish | {cat * 1000:.1f} ms | {cat / fs:.2f}x |\n")
    print("| snapshot load, 101 versions | median | ratio to 0 |\n|---|---|---|")
    for k, t in loads.items():
        print(f"| {k} unpublished | {t * 1000:.1f} ms | {t / loads[0]:.2f}x |")


if __name__ == "__main__":
    main()
