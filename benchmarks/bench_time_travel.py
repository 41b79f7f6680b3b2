"""Time travel over many JSON commits: load version 500 of a 1,000-commit log whose only checkpoint is at
version 600 (and `_last_checkpoint` points at it), so 501 commit files must be listed, read and replayed.

Contenders (each in a fresh subprocess per repetition; imports not timed):
* deltakernel: ``DeltaTable(path, version=500)`` + ``len(dt.file_uris())`` (modules preloaded, as deltalake's)
* deltalake:   ``DeltaTable(path, version=500)`` + ``len(dt.file_uris())``

Target: deltakernel <= 0.5x deltalake's time (median). Run on local disk and, with ``--s3``, on a moto S3
server started here (same table uploaded to ``s3://bench/tt``).

Usage: ``.venv/bin/python benchmarks/bench_time_travel.py [--repeat N] [--s3]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, Contender, Measurement, load_average, measure_all, measurement_rows, table

DATA_DIR = Path(__file__).resolve().parent / "data"
TT_TABLE = DATA_DIR / "time_travel_1k"
N_COMMITS = 1000  # versions 0..999
CHECKPOINT_AT = 600
TARGET_VERSION = 500
ADDS_PER_COMMIT = 2
REMOVES_PER_COMMIT = 1  # from version 2 on: the first add of the commit before the previous one
BASE_TIME_MS = 1_704_067_200_000
TARGET = 0.5


def _schema_string() -> str:
    fields = [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "name", "type": "string", "nullable": True, "metadata": {}},
        {"name": "part", "type": "string", "nullable": True, "metadata": {}},
    ]
    return json.dumps({"type": "struct", "fields": fields})


def _add(v: int, i: int) -> dict:
    stats = {
        "numRecords": 1000,
        "minValues": {"id": v * 1000, "value": 0.5, "name": "a"},
        "maxValues": {"id": v * 1000 + 999, "value": 99.5, "name": "z"},
        "nullCount": {"id": 0, "value": 0, "name": 3},
    }
    return {
        "add": {
            "path": f"part={v % 10}/part-{v:05d}-{i}-{uuid.UUID(int=v * 10 + i)}.c000.snappy.parquet",
            "partitionValues": {"part": str(v % 10)},
            "size": 12345 + v,
            "modificationTime": BASE_TIME_MS + v * 1000,
            "dataChange": True,
            "stats": json.dumps(stats),
        }
    }


def _commit_lines(v: int) -> list[dict]:
    ts = BASE_TIME_MS + v * 1000
    lines: list[dict] = [{"commitInfo": {"timestamp": ts, "operation": "WRITE",
                                         "operationParameters": {"mode": "Append"}, "engineInfo": "bench"}}]
    if v == 0:
        lines.append({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})
        lines.append({"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet",
                      "options": {}}, "schemaString": _schema_string(), "partitionColumns": ["part"],
                      "configuration": {"delta.checkpointInterval": "100000"}, "createdTime": ts}})
    lines += [_add(v, i) for i in range(ADDS_PER_COMMIT)]
    if v >= 2:
        old = _add(v - 2, 0)["add"]
        lines.append({"remove": {"path": old["path"], "deletionTimestamp": ts, "dataChange": True,
                                 "extendedFileMetadata": True, "partitionValues": old["partitionValues"],
                                 "size": old["size"]}})
    return lines


def expected_files(version: int) -> int:
    return (version + 1) * ADDS_PER_COMMIT - max(0, version - 1) * REMOVES_PER_COMMIT


def make_time_travel_table(root: Path = TT_TABLE, force: bool = False) -> Path:
    """Commits 0..999 by hand, a checkpoint at 600 written by deltalake (it also writes `_last_checkpoint`)."""
    if (root / "_delta_log" / "_last_checkpoint").exists() and not force:
        return root
    if root.exists():
        shutil.rmtree(root)
    log = root / "_delta_log"
    log.mkdir(parents=True)

    def write(v: int) -> None:
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in _commit_lines(v)) + "\n")

    for v in range(CHECKPOINT_AT + 1):
        write(v)
    import deltalake

    deltalake.DeltaTable(str(root)).create_checkpoint()
    for v in range(CHECKPOINT_AT + 1, N_COMMITS):
        write(v)
    return root


def _contenders(uri_key: str) -> list[Contender]:
    return [
        Contender(
            "deltakernel DeltaTable(version=500) + file_uris()",
            PRELOAD_DELTAKERNEL,
            f"dt = DeltaTable(PARAMS['{uri_key}'], version={TARGET_VERSION}, storage_options=PARAMS.get('opts'))\n"
            "result = len(dt.file_uris())",
        ),
        Contender(
            "deltalake DeltaTable(version=500) + file_uris()",
            "from deltalake import DeltaTable",
            f"dt = DeltaTable(PARAMS['{uri_key}'], version={TARGET_VERSION}, storage_options=PARAMS.get('opts'))\n"
            "result = len(dt.file_uris())",
        ),
    ]


def _report(label: str, ms: list[Measurement], repeat: int, load_before: str) -> tuple[str, float]:
    for m in ms:
        if m.result != expected_files(TARGET_VERSION):
            raise SystemExit(f"{m.name}: {m.result} files, expected {expected_files(TARGET_VERSION)}")
    dk, dl = ms
    headers, rows = measurement_rows(ms, {dl.name: "deltalake"})
    r_med = dk.median / dl.median
    md = (
        f"### Time travel ({label}): version {TARGET_VERSION} of a {N_COMMITS}-commit log, checkpoint only at "
        f"{CHECKPOINT_AT} (`_last_checkpoint` -> {CHECKPOINT_AT}), {repeat} runs each, load average before: "
        f"{load_before}\n\n" + table(headers, rows) + "\n\n"
        f"deltakernel / deltalake: median time {r_med:.2f}x (target <= {TARGET:.1f}x: "
        f"{'MET' if r_med <= TARGET else 'MISSED'}), best {dk.best / dl.best:.2f}x, peak RSS "
        f"{dk.peak_rss_mb / dl.peak_rss_mb:.2f}x.\n"
    )
    return md, r_med


def run_local(repeat: int) -> tuple[str, float]:
    make_time_travel_table()
    load_before = load_average()
    ms = measure_all(_contenders("path"), {"path": str(TT_TABLE)}, repeat, tag="time-travel local ")
    return _report("local disk", ms, repeat, load_before)


def run_s3(repeat: int) -> tuple[str, float]:
    """Same table uploaded to a moto S3 server on localhost (request latency ~1 ms, no bandwidth limit)."""
    import boto3
    from moto.server import ThreadedMotoServer

    make_time_travel_table()
    server = ThreadedMotoServer(port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="k", aws_secret_access_key="s",
                          region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        for f in sorted(TT_TABLE.rglob("*")):
            if f.is_file():
                s3.upload_file(str(f), "bench", f"tt/{f.relative_to(TT_TABLE).as_posix()}")
        opts = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
        load_before = load_average()
        ms = measure_all(_contenders("uri"), {"uri": "s3://bench/tt", "opts": opts}, repeat, tag="time-travel s3 ")
        return _report("moto S3", ms, repeat, load_before)
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--s3", action="store_true", help="also run against a local moto S3 server")
    ap.add_argument("--only-s3", action="store_true")
    args = ap.parse_args()
    if not args.only_s3:
        print(run_local(args.repeat)[0])
    if args.s3 or args.only_s3:
        print(run_s3(args.repeat)[0])


if __name__ == "__main__":
    main()
