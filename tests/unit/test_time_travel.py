"""Time travel by version, datetime and ISO-8601 string; file mtimes vs in-commit timestamps; history."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import VersionNotFoundError
from deltakernel.kernel.log.time_travel import commit_timestamps, parse_timestamp, version_at_timestamp
from deltakernel.storage import LocalStorage

deltalake = pytest.importorskip("deltalake")


def _commit_file(path: Path, v: int) -> Path:
    return path / "_delta_log" / f"{v:020d}.json"


@pytest.fixture()
def table_with_times(tmp_path: Path) -> Path:
    """Three commits whose file modification times are set to known instants."""
    p = tmp_path / "t"
    for i in range(3):
        deltalake.write_deltalake(str(p), pa.table({"x": [i]}), mode="append")
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc).timestamp()
    for v in range(3):
        t = base + v * 3600  # one hour apart
        os.utime(_commit_file(p, v), (t, t))
    return p


def test_load_as_version_by_int_datetime_and_string(table_with_times: Path) -> None:
    t = DeltaTable(str(table_with_times))
    assert t.version() == 2
    t.load_as_version(0)
    assert t.to_pyarrow_table().column("x").to_pylist() == [0]
    t.load_as_version(dt.datetime(2026, 1, 1, 1, 30, tzinfo=dt.timezone.utc))
    assert t.version() == 1
    t.load_as_version("2026-01-01T02:00:00Z")  # exactly at commit 2
    assert t.version() == 2
    t.load_as_version("2026-01-01T01:59:59.999+00:00")
    assert t.version() == 1
    t.load_as_version(dt.datetime(2026, 1, 1, 0, 30))  # naive = UTC
    assert t.version() == 0
    t.load_as_version("2025-12-31T23:00:00Z")  # before the first commit: that commit, as deltalake (issue 24)
    assert t.version() == 0
    with pytest.raises(VersionNotFoundError):
        t.load_as_version(7)


def test_constructor_version_and_history(table_with_times: Path) -> None:
    t = DeltaTable(str(table_with_times), version=1)
    assert sorted(t.to_pyarrow_table().column("x").to_pylist()) == [0, 1]
    h = DeltaTable(str(table_with_times)).history()
    assert [e["version"] for e in h] == [2, 1, 0]
    assert all(e["operation"] == "WRITE" for e in h)
    assert [e["version"] for e in DeltaTable(str(table_with_times)).history(limit=2)] == [2, 1]
    # history at an older version stops there
    assert [e["version"] for e in t.history()] == [1, 0]


def test_mtimes_are_made_monotonic(table_with_times: Path) -> None:
    # commit 2 written "before" commit 1 on the clock: Delta treats it as commit1 + 1 ms
    t1 = os.stat(_commit_file(table_with_times, 1)).st_mtime
    os.utime(_commit_file(table_with_times, 2), (t1 - 100, t1 - 100))
    ts = commit_timestamps(LocalStorage(str(table_with_times)))
    assert ts[2] == ts[1] + 1
    assert version_at_timestamp(ts, ts[1]) == 1


def test_in_commit_timestamps_win_over_mtimes(tmp_path: Path) -> None:
    """With delta.enableInCommitTimestamps the commitInfo's inCommitTimestamp is the commit time."""
    p = tmp_path / "ict"
    log = p / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]})
    ict0 = 1_700_000_000_000
    lines0 = [
        {"commitInfo": {"timestamp": 1, "inCommitTimestamp": ict0, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]}},
        {"metaData": {"id": "a", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                      "partitionColumns": [], "configuration": {"delta.enableInCommitTimestamps": "true",
                      "delta.inCommitTimestampEnablementVersion": "0",
                      "delta.inCommitTimestampEnablementTimestamp": str(ict0)}}},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines0) + "\n")
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": 2, "inCommitTimestamp": ict0 + 5000,
                                                                   "operation": "WRITE"}}) + "\n")
    # file mtimes say the opposite order: they must be ignored
    os.utime(log / f"{0:020d}.json", (2_000_000_000, 2_000_000_000))
    os.utime(log / f"{1:020d}.json", (1_000_000_000, 1_000_000_000))
    t = DeltaTable(str(p))
    t.load_as_version(dt.datetime.fromtimestamp((ict0 + 4000) / 1000, dt.timezone.utc))
    assert t.version() == 0
    t.load_as_version(dt.datetime.fromtimestamp((ict0 + 5000) / 1000, dt.timezone.utc))
    assert t.version() == 1


def test_parse_timestamp_forms() -> None:
    assert parse_timestamp("1970-01-01T00:00:01Z") == 1000
    assert parse_timestamp("1970-01-01 00:00:01.5") == 1500
    assert parse_timestamp(dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))) == 0
    with pytest.raises(VersionNotFoundError):
        parse_timestamp("yesterday")


def test_time_travel_matches_deltalake(table_with_times: Path) -> None:
    for v in range(3):
        ours = DeltaTable(str(table_with_times), version=v).to_pyarrow_table()
        theirs = deltalake.DeltaTable(str(table_with_times), version=v).to_pyarrow_table()
        assert sorted(ours.column("x").to_pylist()) == sorted(theirs.column("x").to_pylist())
