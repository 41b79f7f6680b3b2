"""Snapshot open + file listing at 100k, 1M and 10M files, time and peak RSS, deltakernel vs deltalake (issue 22).

Tables (logs only, no data files, under `benchmarks/data/`): `snapshot_100k` (make_tables.py), `snapshot_1m`
and `snapshot_10m` built here with Arrow (no Python loop per file): one classic checkpoint at version 100 with
N adds (partitioned by `part`, 100 values; per-file stats JSON over 5 columns, ~300 bytes), then 100 JSON
commits of 3 adds and 2 removes each, as snapshot_100k.

Contenders (a fresh subprocess per run, round-robin; imports untimed; deltakernel's modules preloaded as
`import deltalake` loads its extension):
* deltakernel: ``DeltaTable(path)`` + ``len(dt.file_uris())``
* deltalake:   ``DeltaTable(path)`` + ``len(dt.file_uris())``
Targets: <= 0.7x at 100k files; <= 1.0x time and peak RSS at 1M and 10M files.

Usage: ``.venv/bin/python benchmarks/bench_snapshot_scale.py [--repeat N] [--sizes 100k,1m,10m]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, Contender, load_average, measure_all, measurement_rows, table
from make_tables import (
    BASE_TIME_MS,
    CHECKPOINT_SCHEMA,
    DATA_DIR,
    SNAPSHOT_TABLE,
    _metadata_action,
    make_snapshot_table,
)

SIZES = {"100k": 100_000, "1m": 1_000_000, "10m": 10_000_000}
CHECKPOINT_VERSION = 100
N_COMMITS, ADDS, REMOVES = 100, 3, 2
CHUNK = 500_000

CONTENDERS = [
    Contender("deltakernel DeltaTable + file_uris()", PRELOAD_DELTAKERNEL,
              "dt = DeltaTable(PARAMS['path'])\nresult = len(dt.file_uris())"),
    Contender("deltalake DeltaTable + file_uris()", "from deltalake import DeltaTable",
              "dt = DeltaTable(PARAMS['path'])\nresult = len(dt.file_uris())"),
]


def _s(arr: pa.Array) -> pa.Array:
    return arr.cast(pa.string())


def _j(*parts: object) -> pa.Array:
    return pc.binary_join_element_wise(*[pa.scalar(p) if isinstance(p, str) else p for p in parts], "")


def _adds(start: int, n: int) -> pa.StructArray:
    i = np.arange(start, start + n, dtype=np.int64)
    ia = pa.array(i)
    part = _j("p", pc.utf8_lpad(_s(pa.array(i % 100)), 3, "0"))
    path = _j("part=", part, "/part-", pc.utf8_lpad(_s(ia), 9, "0"), "-6b0b5a4e-5c3c-4c1e-9d0e-",
              pc.utf8_lpad(_s(ia), 12, "0"), ".c000.snappy.parquet")
    n_rec = pa.array(50_000 + (i * 7919) % 100_000)
    id_min = pa.array(i * 200_000)
    id_max = pa.array(i * 200_000 + 50_000 + (i * 7919) % 100_000 - 1)
    v_min = pa.array(((i * 37) % 20_000 - 10_000) / 100.0)
    stats = _j('{"numRecords":', _s(n_rec), ',"minValues":{"id":', _s(id_min), ',"value":', _s(v_min),
               ',"name":"name_', pc.utf8_lpad(_s(pa.array(i % 1000)), 4, "0"),
               '","ts":"2024-01-01T00:00:00.000Z","day":"2024-01-01"},"maxValues":{"id":', _s(id_max),
               ',"value":', _s(pa.array(((i * 37) % 20_000) / 10.0)), ',"name":"name_',
               pc.utf8_lpad(_s(pa.array(5000 + i % 4999)), 4, "0"),
               '","ts":"2024-01-01T01:00:00.000Z","day":"2024-01-02"},"nullCount":{"id":0,"value":',
               _s(pa.array(i % 50)), ',"name":', _s(pa.array((i % 50) // 2)), ',"ts":0,"day":0}}')
    pv = pa.MapArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32)), pa.array(["part"] * n), part)
    add_type = CHECKPOINT_SCHEMA.field("add").type
    cols = {
        "path": path, "partitionValues": pv, "size": pa.array(1_000_000 + i % 1000),
        "modificationTime": pa.array(BASE_TIME_MS + i * 1000), "dataChange": pa.array(np.zeros(n, dtype=bool)),
        "stats": stats,
    }
    arrays = [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in add_type]
    return pa.StructArray.from_arrays(arrays, fields=list(add_type))


def make_scale_table(size: str) -> Path:
    n = SIZES[size]
    if size == "100k":
        return make_snapshot_table()
    root = DATA_DIR / f"snapshot_{size}"
    log_dir = root / "_delta_log"
    if (log_dir / "_last_checkpoint").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    log_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    cp = log_dir / f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    md = _metadata_action()
    md["format"]["options"] = []
    md["configuration"] = []
    head = pa.Table.from_pylist([{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": md}],
                                schema=CHECKPOINT_SCHEMA)
    with pq.ParquetWriter(cp, CHECKPOINT_SCHEMA, compression="snappy") as w:
        w.write_table(head)
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            cols = [_adds(start, m) if f.name == "add" else pa.nulls(m, f.type) for f in CHECKPOINT_SCHEMA]
            w.write_table(pa.Table.from_arrays(cols, schema=CHECKPOINT_SCHEMA))
    (log_dir / "_last_checkpoint").write_text(json.dumps({"version": CHECKPOINT_VERSION, "size": n + 2}))
    next_file, next_remove = n, 0
    for k in range(N_COMMITS):
        version = CHECKPOINT_VERSION + 1 + k
        ts = BASE_TIME_MS + 100 * 86_400_000 + k * 60_000
        lines: list[dict] = [{"commitInfo": {"timestamp": ts, "operation": "WRITE", "readVersion": version - 1,
                                             "operationParameters": {"mode": "Append"}}}]
        for r in range(REMOVES):
            row = _adds((next_remove + r) * 7, 1).to_pylist()[0]
            lines.append({"remove": {"path": row["path"], "deletionTimestamp": ts, "dataChange": True,
                                     "extendedFileMetadata": True, "partitionValues": dict(row["partitionValues"]),
                                     "size": row["size"]}})
        next_remove += REMOVES
        for row in _adds(next_file, ADDS).to_pylist():
            lines.append({"add": {"path": row["path"], "partitionValues": dict(row["partitionValues"]),
                                  "size": row["size"], "modificationTime": ts, "dataChange": True,
                                  "stats": row["stats"]}})
        next_file += ADDS
        (log_dir / f"{version:020d}.json").write_text("\n".join(json.dumps(x, separators=(",", ":"))
                                                                for x in lines) + "\n")
    print(f"{root}: {n} files in the checkpoint, written in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="100k,1m,10m")
    args = ap.parse_args()
    print("## Snapshot open + file_uris() at scale (issue 22)\n")
    for size in args.sizes.split(","):
        root = SNAPSHOT_TABLE if size == "100k" else make_scale_table(size)
        if size == "100k":
            make_scale_table(size)
        load = load_average()
        ms = measure_all(CONTENDERS, {"path": str(root)}, args.repeat, tag=f"{size} ")
        counts = {m.result for m in ms}
        assert len(counts) == 1, f"file counts differ: {counts}"
        dk, dl = ms
        print(f"### {size} files ({ms[0].result} live), load average {load}\n")
        print(table(*measurement_rows(ms, {CONTENDERS[1].name: "deltalake"})))
        print(f"\ndeltakernel / deltalake: time {dk.best / dl.best:.2f}x best ({dk.median / dl.median:.2f}x median), "
              f"peak RSS {dk.peak_rss_mb / dl.peak_rss_mb:.2f}x\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
