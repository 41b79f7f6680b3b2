"""Generate the benchmark tables under benchmarks/data/ (gitignored, created lazily).

* ``snapshot_100k`` - a log only (no data files): one classic single-file checkpoint at version 100 holding
  100,000 ``add`` actions (partitioned by ``part``; realistic per-file stats JSON over 5 columns) and 1,000
  tombstones, then 100 JSON commits (versions 101..200), each adding 3 files and removing 2. The commits
  before the checkpoint are absent, as after log cleanup. Live files at the end: 100,000 + 300 - 200 = 100,100.
  The checkpoint is written with pyarrow using the checkpoint schema Spark writes.
* ``scan_10m`` - 10,000,000 rows in 20 Parquet files of 500,000 rows (int64, float64, string, timestamp,
  date), written with ``deltalake.write_deltalake`` in 20 appends.

Usage: ``.venv/bin/python benchmarks/make_tables.py [--force] [snapshot_100k|scan_10m ...]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = Path(__file__).resolve().parent / "data"
SNAPSHOT_TABLE = DATA_DIR / "snapshot_100k"
SCAN_TABLE = DATA_DIR / "scan_10m"

CHECKPOINT_VERSION = 100
N_CHECKPOINT_ADDS = 100_000
N_CHECKPOINT_REMOVES = 1_000
N_COMMITS = 100
ADDS_PER_COMMIT = 3
REMOVES_PER_COMMIT = 2
N_PARTITIONS = 100
EXPECTED_SNAPSHOT_FILES = N_CHECKPOINT_ADDS + N_COMMITS * (ADDS_PER_COMMIT - REMOVES_PER_COMMIT)

SCAN_FILES = 20
SCAN_ROWS_PER_FILE = 500_000

# --------------------------------------------------------------------------------------------- schema
SNAPSHOT_SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "day", "type": "date", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}},
    ],
}

STR_MAP = pa.map_(pa.string(), pa.string())
DV_STRUCT = pa.struct(
    [
        ("storageType", pa.string()),
        ("pathOrInlineDv", pa.string()),
        ("offset", pa.int32()),
        ("sizeInBytes", pa.int32()),
        ("cardinality", pa.int64()),
        ("maxRowIndex", pa.int64()),
    ]
)
#: the classic checkpoint schema as Spark (Delta 3.x) writes it
CHECKPOINT_SCHEMA = pa.schema(
    [
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
        (
            "add",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("partitionValues", STR_MAP),
                    ("size", pa.int64()),
                    ("modificationTime", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("tags", STR_MAP),
                    ("deletionVector", DV_STRUCT),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                    ("clusteringProvider", pa.string()),
                    ("stats", pa.string()),
                ]
            ),
        ),
        (
            "remove",
            pa.struct(
                [
                    ("path", pa.string()),
                    ("deletionTimestamp", pa.int64()),
                    ("dataChange", pa.bool_()),
                    ("extendedFileMetadata", pa.bool_()),
                    ("partitionValues", STR_MAP),
                    ("size", pa.int64()),
                    ("deletionVector", DV_STRUCT),
                    ("baseRowId", pa.int64()),
                    ("defaultRowCommitVersion", pa.int64()),
                ]
            ),
        ),
        (
            "metaData",
            pa.struct(
                [
                    ("id", pa.string()),
                    ("name", pa.string()),
                    ("description", pa.string()),
                    ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
                    ("schemaString", pa.string()),
                    ("partitionColumns", pa.list_(pa.string())),
                    ("configuration", STR_MAP),
                    ("createdTime", pa.int64()),
                ]
            ),
        ),
        (
            "protocol",
            pa.struct(
                [
                    ("minReaderVersion", pa.int32()),
                    ("minWriterVersion", pa.int32()),
                    ("readerFeatures", pa.list_(pa.string())),
                    ("writerFeatures", pa.list_(pa.string())),
                ]
            ),
        ),
    ]
)

BASE_TIME_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _iso_ms(ms: int) -> str:
    secs, rem = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{rem:03d}Z"


def _iso_day(days: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(days * 86400))


class _FileGen:
    """Deterministic, realistic add actions."""

    def __init__(self, seed: int = 42) -> None:
        self.rng = np.random.default_rng(seed)
        self.counter = 0

    def part_of(self, i: int) -> str:
        return f"p{i % N_PARTITIONS:03d}"

    def path(self, i: int) -> str:
        return f"part={self.part_of(i)}/part-{i:05d}-{uuid.UUID(int=i + 1)}.c000.snappy.parquet"

    def stats(self, i: int) -> str:
        rng = self.rng
        n = int(rng.integers(50_000, 150_000))
        id_min = i * 200_000
        v_min = float(rng.normal(0, 100))
        ts_min = BASE_TIME_MS + i * 60_000
        day0 = BASE_TIME_MS // 86_400_000 + i // 1000
        nulls = int(rng.integers(0, 50))
        return json.dumps(
            {
                "numRecords": n,
                "minValues": {
                    "id": id_min,
                    "value": round(v_min, 6),
                    "name": f"name_{int(rng.integers(0, 1000)):04d}",
                    "ts": _iso_ms(ts_min),
                    "day": _iso_day(day0),
                },
                "maxValues": {
                    "id": id_min + n - 1,
                    "value": round(v_min + float(rng.uniform(1, 500)), 6),
                    "name": f"name_{int(rng.integers(5000, 9999)):04d}",
                    "ts": _iso_ms(ts_min + 3_600_000),
                    "day": _iso_day(day0 + 1),
                },
                "nullCount": {"id": 0, "value": nulls, "name": nulls // 2, "ts": 0, "day": 0},
            },
            separators=(",", ":"),
        )

    def add(self, i: int, mod_time: int) -> dict:
        return {
            "path": self.path(i),
            "partitionValues": {"part": self.part_of(i)},
            "size": int(self.rng.integers(1 << 20, 128 << 20)),
            "modificationTime": mod_time,
            "dataChange": True,
            "stats": self.stats(i),
        }


def _metadata_action() -> dict:
    return {
        "id": "6b0b5a4e-5c3c-4c1e-9d0e-000000100000",
        "name": None,
        "description": None,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(SNAPSHOT_SCHEMA, separators=(",", ":")),
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": BASE_TIME_MS,
    }


def make_snapshot_table(force: bool = False) -> Path:
    root = SNAPSHOT_TABLE
    log_dir = root / "_delta_log"
    if root.exists() and not force and (log_dir / "_last_checkpoint").exists():
        _log(f"{root} exists, skipping (use --force to rebuild)")
        return root
    if root.exists():
        shutil.rmtree(root)
    log_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    gen = _FileGen()

    # --- checkpoint at CHECKPOINT_VERSION
    adds = [gen.add(i, BASE_TIME_MS + i * 1000) for i in range(N_CHECKPOINT_ADDS)]
    removes = [
        {
            "path": gen.path(10_000_000 + j),
            "deletionTimestamp": BASE_TIME_MS + 86_400_000,
            "dataChange": True,
            "extendedFileMetadata": True,
            "partitionValues": [("part", gen.part_of(j))],
            "size": 1 << 20,
        }
        for j in range(N_CHECKPOINT_REMOVES)
    ]
    for a in adds:
        a["partitionValues"] = list(a["partitionValues"].items())  # pyarrow map = list of pairs
    md = _metadata_action()
    md["format"]["options"] = []
    md["configuration"] = []
    rows = (
        [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}]
        + [{"metaData": md}]
        + [{"add": a} for a in adds]
        + [{"remove": r} for r in removes]
    )
    table = pa.Table.from_pylist(rows, schema=CHECKPOINT_SCHEMA)
    cp_name = f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    pq.write_table(table, log_dir / cp_name, compression="snappy")
    cp_size = (log_dir / cp_name).stat().st_size
    last = {
        "version": CHECKPOINT_VERSION,
        "size": table.num_rows,
        "sizeInBytes": cp_size,
        "numOfAddFiles": N_CHECKPOINT_ADDS,
    }
    (log_dir / "_last_checkpoint").write_text(json.dumps(last, separators=(",", ":")))
    _log(f"checkpoint: {table.num_rows} rows, {cp_size / 1e6:.1f} MB")

    # --- 100 JSON commits after it
    next_file = N_CHECKPOINT_ADDS
    next_remove = 0  # removes files 0, 1, 2, ... of the checkpoint
    for k in range(N_COMMITS):
        version = CHECKPOINT_VERSION + 1 + k
        ts = BASE_TIME_MS + 100 * 86_400_000 + k * 60_000
        lines = [
            {
                "commitInfo": {
                    "timestamp": ts,
                    "operation": "WRITE",
                    "operationParameters": {"mode": "Append", "partitionBy": '["part"]'},
                    "readVersion": version - 1,
                    "isolationLevel": "Serializable",
                    "isBlindAppend": False,
                    "operationMetrics": {"numFiles": str(ADDS_PER_COMMIT)},
                    "engineInfo": "deltakernel-benchmarks",
                }
            }
        ]
        for _ in range(REMOVES_PER_COMMIT):
            i = next_remove * 7  # spread over the checkpoint
            next_remove += 1
            lines.append(
                {
                    "remove": {
                        "path": gen.path(i),
                        "deletionTimestamp": ts,
                        "dataChange": True,
                        "extendedFileMetadata": True,
                        "partitionValues": {"part": gen.part_of(i)},
                        "size": 1 << 20,
                    }
                }
            )
        for _ in range(ADDS_PER_COMMIT):
            lines.append({"add": gen.add(next_file, ts)})
            next_file += 1
        body = "\n".join(json.dumps(x, separators=(",", ":")) for x in lines) + "\n"
        path = log_dir / f"{version:020d}.json"
        path.write_text(body)
        os.utime(path, (ts / 1000, ts / 1000))
    _log(f"snapshot_100k written in {time.perf_counter() - t0:.1f}s")
    return root


def verify_snapshot_table(root: Path = SNAPSHOT_TABLE) -> int:
    import deltalake

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import deltakernel

    dl = deltalake.DeltaTable(str(root))
    dk = deltakernel.DeltaTable(str(root))
    n_dl = len(dl.file_uris())
    n_dk = len(dk.files())
    _log(f"verify snapshot_100k: deltalake v{dl.version()} {n_dl} files, deltakernel v{dk.version()} {n_dk} files")
    if not (n_dl == n_dk == EXPECTED_SNAPSHOT_FILES):
        raise SystemExit(f"file count mismatch: deltalake {n_dl}, deltakernel {n_dk}, expected {EXPECTED_SNAPSHOT_FILES}")
    if set(dl.file_uris()) != set(dk.file_uris()):
        raise SystemExit("file sets differ between deltalake and deltakernel")
    return n_dk


def _scan_batch(k: int) -> pa.Table:
    n = SCAN_ROWS_PER_FILE
    rng = np.random.default_rng(1000 + k)
    ids = np.arange(k * n, (k + 1) * n, dtype=np.int64)
    words = np.array([f"name_{i:05d}_{'x' * (i % 17)}" for i in range(10_000)], dtype=object)
    ts_us = (BASE_TIME_MS * 1000 + ids * 1_000_000 + rng.integers(0, 1_000_000, n)).astype("datetime64[us]")
    days = (BASE_TIME_MS // 86_400_000 + ids // 100_000).astype("int32")
    return pa.table(
        {
            "id": pa.array(ids),
            "value": pa.array(rng.normal(0, 100, n)),
            "name": pa.array(words[rng.integers(0, len(words), n)], pa.string()),
            "ts": pa.array(ts_us, pa.timestamp("us", tz="UTC")),
            "day": pa.array(days, pa.date32()),
        }
    )


def make_scan_table(force: bool = False) -> Path:
    import deltalake

    root = SCAN_TABLE
    if root.exists() and not force and (root / "_delta_log").exists():
        _log(f"{root} exists, skipping (use --force to rebuild)")
        return root
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    for k in range(SCAN_FILES):
        deltalake.write_deltalake(str(root), _scan_batch(k), mode="append")
    dt = deltalake.DeltaTable(str(root))
    nfiles = len(dt.file_uris())
    rows = dt.count() if hasattr(dt, "count") else None
    _log(f"scan_10m written in {time.perf_counter() - t0:.1f}s: {nfiles} files, {rows} rows")
    return root


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tables", nargs="*", default=["snapshot_100k", "scan_10m"])
    ap.add_argument("--force", action="store_true", help="rebuild even if present")
    args = ap.parse_args(argv)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    if "snapshot_100k" in args.tables:
        make_snapshot_table(args.force)
        verify_snapshot_table()
    if "scan_10m" in args.tables:
        make_scan_table(args.force)


if __name__ == "__main__":
    main()
