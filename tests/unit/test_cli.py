"""The `deltakernel` console script, run in a subprocess as a user runs it: errors are one `error: ...` line
on stderr with exit code 1 (no traceback), `--version`, CSV output of DataFusion's string_view results,
ISO-8601 timestamps in `history` and time-travel errors, and `head`'s progress bar under a terminal."""

from __future__ import annotations

import csv
import io
import os
import pty
import re
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltakernel import DeltaTable
from deltakernel.operations.write.api import write_deltalake

ISO_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def _script() -> list[str]:
    exe = Path(sys.executable).parent / "deltakernel"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "deltakernel.cli"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "DELTAKERNEL_TRACEBACK"}
    return subprocess.run([*_script(), *args], capture_output=True, text=True, timeout=180, env=env)


def assert_clean_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("error: "), proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Three commits, one data file each (so a scan has several files to report progress over)."""
    uri = str(tmp_path_factory.mktemp("cli") / "t")
    write_deltalake(uri, pa.table({"a": pa.array([1, 2], pa.int64()), "s": ["x", "y"]}))
    time.sleep(0.01)
    write_deltalake(uri, pa.table({"a": pa.array([3], pa.int64()), "s": ["z"]}), mode="append")
    time.sleep(0.01)
    write_deltalake(uri, pa.table({"a": pa.array([4], pa.int64()), "s": [None]}), mode="append")
    return uri


def test_version_flag_prints_the_package_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"deltakernel {version('deltakernel')}"


def test_sql_syntax_error_is_one_error_line() -> None:
    assert_clean_error(cli("sql", "SELEC 1"), "SELEC")


def test_sql_unknown_column_is_one_error_line(table: str) -> None:
    assert_clean_error(cli("sql", "SELECT nope FROM t", "--table", f"t={table}"), "nope")


@pytest.mark.parametrize("command", ["info", "history", "head", "sql"])
def test_malformed_storage_option_is_one_error_line(table: str, command: str) -> None:
    args = ["sql", "SELECT 1", "--table", f"t={table}"] if command == "sql" else [command, table]
    assert_clean_error(cli(*args, "-o", "FOO"), "'FOO'", "KEY=VALUE")


@pytest.mark.parametrize("command", ["info", "count", "sql"])
def test_missing_table_is_one_error_line(tmp_path: Path, command: str) -> None:
    missing = str(tmp_path / "nothing")
    args = ["sql", "SELECT * FROM t", "--table", f"t={missing}"] if command == "sql" else [command, missing]
    assert_clean_error(cli(*args), "TableNotFoundError", missing)


def test_sql_csv_with_string_view_columns(table: str) -> None:
    proc = cli("sql", "SELECT a, s, concat(s, '!') AS e FROM t ORDER BY a", "--table", f"t={table}", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows == [["a", "s", "e"], ["1", "x", "x!"], ["2", "y", "y!"], ["3", "z", "z!"], ["4", "", "!"]]


def _dml_table(path: Path) -> str:
    uri = str(path / "dml")
    write_deltalake(uri, pa.table({"a": pa.array([1, 2, 3, 4], pa.int64()), "s": ["x", "y", "z", None]}))
    return uri


def test_sql_dml_then_select_in_one_script(tmp_path: Path) -> None:
    """`deltakernel sql` runs Delta DML (Spark SQL) and prints its metrics like a query result; the next
    statement of the script sees the committed version."""
    pytest.importorskip("datafusion")
    uri = _dml_table(tmp_path)
    script = ("DELETE FROM t WHERE a = 1; UPDATE t SET s = 'w' WHERE s IS NULL; "
              "INSERT INTO t (a) VALUES (5); SELECT a, s FROM t ORDER BY a")
    proc = cli("sql", script, "--table", f"t={uri}", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows == [["num_affected_rows"], ["1"], ["num_affected_rows"], ["1"],
                    ["num_affected_rows", "num_inserted_rows"], ["1", "1"],
                    ["a", "s"], ["2", "y"], ["3", "z"], ["4", "w"], ["5", ""]]
    assert DeltaTable(uri).version() == 3
    assert sorted(DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["a"]) == [
        {"a": 2, "s": "y"}, {"a": 3, "s": "z"}, {"a": 4, "s": "w"}, {"a": 5, "s": None}]


@pytest.mark.parametrize(("statement", "fragments"), [
    ("UPDATE t SET nope = 1", ("SchemaError", "nope")),
    ("DELETE FROM t WHERE", ("DmlSyntaxError", "syntax error")),
    ("MERGE INTO u USING t ON u.a = t.a WHEN MATCHED THEN DELETE", ("DmlTargetError", "unknown table 'u'")),
])
def test_sql_dml_error_is_one_error_line_and_table_unchanged(tmp_path: Path, statement: str,
                                                             fragments: tuple[str, ...]) -> None:
    pytest.importorskip("datafusion")
    uri = _dml_table(tmp_path)
    assert_clean_error(cli("sql", statement, "--table", f"t={uri}"), *fragments)
    assert DeltaTable(uri).version() == 0


def test_history_shows_iso_timestamps(table: str) -> None:
    import json

    proc = cli("history", table, "--json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)  # one JSON document (an array), like `detail --json`
    assert isinstance(entries, list)
    expected = {e["version"]: e["timestamp"] for e in DeltaTable(table).history()}
    assert [e["version"] for e in entries] == [2, 1, 0]
    for e in entries:
        assert ISO_MS.match(e["timestamp"]), e
        assert _iso_to_ms(e["timestamp"]) == expected[e["version"]]


def _iso_to_ms(text: str) -> int:
    import datetime as dt

    t = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    return round(t.timestamp() * 1000)


def test_time_travel_error_shows_iso_timestamps(table: str) -> None:
    proc = cli("info", table, "--version", "2001-02-03T04:05:06.789Z")
    assert_clean_error(proc, "VersionNotFoundError", "2001-02-03T04:05:06.789Z")
    earliest = os.stat(Path(table) / "_delta_log" / f"{0:020d}.json").st_mtime_ns // 1_000_000  # commit 0's time
    stamps = re.findall(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z", proc.stderr)
    assert [_iso_to_ms(s) for s in stamps] == [_iso_to_ms("2001-02-03T04:05:06.789Z"), earliest]
    assert not re.search(r"\d{10,} ?ms", proc.stderr), proc.stderr


def test_head_in_a_terminal_ends_the_progress_bar_before_the_rows(table: str) -> None:
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([*_script(), "head", table, "-n", "1"], stdin=slave, stdout=slave, stderr=slave,
                                close_fds=True)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0
    finally:
        os.close(master)
    out = b"".join(chunks).decode()
    # head stops after the first file (1 of 3): the bar is left at 1/3 and must end its line
    bar = re.search(r"\[[#.]+\] 1/3 files", out)
    assert bar is not None, out
    rest = out[bar.end():]
    assert rest.startswith(("\r\n", "\n")), repr(out)
    lines = [ln for ln in rest.replace("\r", "").split("\n") if ln.strip()]
    assert "a" in lines[0].split() and "s" in lines[0].split(), repr(out)  # the header on its own line
    assert "files" not in rest, repr(out)


# ----------------------------------------------------------------------------- detail and maintenance commands
def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    import json

    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_detail_matches_the_snapshot(table: str) -> None:
    got = _json(cli("detail", table, "--json"))
    dt = DeltaTable(table)
    sizes = sum(a["size_bytes"] for a in dt.get_add_actions().to_pylist())
    assert got["numFiles"] == 3 and got["sizeInBytes"] == sizes and got["format"] == "delta"
    assert got["id"] == dt.metadata().id and got["version"] == 2
    assert ISO_MS.match(got["lastModified"]) and ISO_MS.match(got["createdAt"])
    people = cli("detail", table)
    assert people.returncode == 0 and re.search(r"^numFiles\s+3$", people.stdout, re.M), people.stdout


def test_delete_is_a_dry_run_unless_asked(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"a": pa.array(range(10), pa.int64())}))
    write_deltalake(uri, pa.table({"a": pa.array(range(10, 20), pa.int64())}), mode="append")
    plan = _json(cli("delete", uri, "a % 3 = 0", "--json"))
    assert plan == {"dry_run": True, "version": 1, "rows_to_delete": 7, "files_touched": 2}
    assert DeltaTable(uri).version() == 1 and DeltaTable(uri).count() == 20
    people = cli("delete", uri, "a % 3 = 0")
    assert people.returncode == 0 and "--no-dry-run" in people.stdout and DeltaTable(uri).version() == 1
    done = _json(cli("delete", uri, "a % 3 = 0", "--no-dry-run", "--json"))
    assert done["dry_run"] is False and done["num_deleted_rows"] == 7 and done["version"] == 2
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("a").to_pylist()) == [
        i for i in range(20) if i % 3]


def test_delete_with_a_bad_predicate_is_one_error_line(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"a": pa.array([1], pa.int64())}))
    assert_clean_error(cli("delete", uri, "nope = 1", "--no-dry-run"), "nope")
    assert DeltaTable(uri).version() == 0


def test_optimize_vacuum_restore_from_the_command_line(tmp_path: Path) -> None:
    """optimize compacts (metrics as JSON), vacuum and restore are dry runs until --no-dry-run, and each
    real run changes the table exactly as the API does."""
    uri = str(tmp_path / "t")
    for i in range(4):
        write_deltalake(uri, pa.table({"a": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), mode="append")
    opt = _json(cli("optimize", uri, "--json"))
    assert opt["numFilesRemoved"] == 4 and opt["numFilesAdded"] == 1 and opt["version"] == 4
    assert len(DeltaTable(uri).files()) == 1
    plan = _json(cli("vacuum", uri, "--retention-hours", "0", "--no-enforce-retention", "--json"))
    assert plan["dry_run"] is True and plan["num_files"] == 4
    assert all((tmp_path / "t" / Path(f).name).exists() for f in plan["files"])
    (tmp_path / "t" / "fresh-orphan.parquet").write_bytes(b"x")  # maybe a writer's uncommitted file
    full = ("vacuum", uri, "--full", "--retention-hours", "0", "--no-enforce-retention", "--json")
    assert set(_json(cli(*full))["files"]) == set(plan["files"]), "younger than the minimum age: kept"
    no_guard = _json(cli(*full, "--min-unreferenced-age-hours", "0"))
    assert set(no_guard["files"]) == {*plan["files"], "fresh-orphan.parquet"}
    (tmp_path / "t" / "fresh-orphan.parquet").unlink()
    refused = cli("vacuum", uri, "--retention-hours", "0", "--no-dry-run")
    assert_clean_error(refused, "deletedFileRetentionDuration", "--no-enforce-retention", "--retention-hours 0")
    assert "enforce_retention_duration" not in refused.stderr, "the CLI names its flags, not the API's keywords"
    restore_plan = _json(cli("restore", uri, "1", "--json"))
    assert restore_plan == {"dry_run": True, "current_version": 4, "restore_to_version": 1,
                            "files_to_restore": 2, "files_to_remove": 1}
    assert DeltaTable(uri).version() == 4
    done = _json(cli("restore", uri, "1", "--no-dry-run", "--json"))
    assert done["dry_run"] is False and done["version"] == 5
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("a").to_pylist()) == list(range(20))
    gone = _json(cli("vacuum", uri, "--retention-hours", "0", "--no-enforce-retention", "--no-dry-run", "--json"))
    assert gone["dry_run"] is False and gone["num_files"] == 3  # the compacted file + files 2, 3 of the appends
    assert sorted(DeltaTable(uri).to_pyarrow_table().column("a").to_pylist()) == list(range(20))
