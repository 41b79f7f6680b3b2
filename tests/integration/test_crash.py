"""A failed or killed writer leaves the table at a committed version, readable and unchanged.

Crash points are real process deaths (`os._exit` inside the writer process, and SIGKILL at random
moments), not exceptions the writer could clean up after.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import ConstraintViolationError, DeltaError, StorageError

WRITER = textwrap.dedent(
    """
    import os, sys
    import pyarrow as pa
    import deltakernel.operations.write.api as w
    import deltakernel.kernel.transaction.transaction as t
    import deltakernel.kernel.checkpoints.write as c
    import deltakernel.storage.local as local
    uri, point = sys.argv[1], sys.argv[2]
    def die(*a, **k):
        os._exit(9)
    if point == "before_data":
        import deltakernel.operations.files.parquet_writer as fw
        fw.write_data_files = die
    elif point == "after_data":
        t.Transaction.commit = die
    elif point == "during_commit":
        os.link = die               # the commit's temp file is written, the link never happens
    elif point == "during_checkpoint":
        real_put = local.LocalStorage.put_if_absent
        def put(self, key, data):
            if ".checkpoint." in key:
                die()               # checkpoint built, process dies while storing it
            return real_put(self, key, data)
        local.LocalStorage.put_if_absent = put
    import json
    opts = json.loads(os.environ.get("DK_STORAGE_OPTIONS") or "null")
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    for i in range(n):
        w.write_deltalake(uri, pa.table({"v": [int(sys.argv[4]) + i if len(sys.argv) > 4 else 100]}), mode="append",
                          storage_options=opts)
    """
)


def _rows(uri: str, opts: dict[str, str] | None = None) -> list[int]:
    return sorted(DeltaTable(uri, storage_options=opts).to_pyarrow_table().column("v").to_pylist())


@pytest.fixture()
def table(tmp_path: Path) -> str:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"v": [1, 2]}), configuration={"delta.checkpointInterval": "2"})
    return uri


@pytest.mark.parametrize("point", ["before_data", "after_data", "during_commit", "during_checkpoint"])
def test_writer_killed_at_crash_point(table: str, tmp_path: Path, point: str) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    before_version, before_rows = DeltaTable(table).version(), _rows(table)
    proc = subprocess.run([sys.executable, str(script), table, point], capture_output=True, text=True, timeout=120)
    if point == "during_checkpoint":
        # the commit (version 1) landed; only the checkpoint at version 2? interval 2 -> v2 is the first
        # checkpoint, so write one more commit to reach it
        assert proc.returncode == 0, proc.stderr
        proc = subprocess.run([sys.executable, str(script), table, point, "1", "200"], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 9, proc.stderr
        t = DeltaTable(table)
        assert t.version() == 2  # the commit is durable; the checkpoint is not
        assert _rows(table) == [1, 2, 100, 200]
        assert not list((Path(table) / "_delta_log").glob("*.checkpoint*.parquet")) or \
            DeltaTable(table).count() == 4
        write_deltalake(table, pa.table({"v": [300]}), mode="append")
        assert _rows(table) == [1, 2, 100, 200, 300]
        return
    assert proc.returncode == 9, proc.stderr
    assert DeltaTable(table).version() == before_version
    assert _rows(table) == before_rows
    # the table stays writable after the crash
    write_deltalake(table, pa.table({"v": [7]}), mode="append")
    assert _rows(table) == sorted([*before_rows, 7])


@pytest.mark.slow
def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    uri = str(tmp_path / "k")
    write_deltalake(uri, pa.table({"v": [0]}), configuration={"delta.checkpointInterval": "3"})
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(1234)
    next_value = 1
    for _ in range(6):
        proc = subprocess.Popen([sys.executable, str(script), uri, "none", "40", str(next_value)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.8, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        t = DeltaTable(uri)
        rows = sorted(t.to_pyarrow_table().column("v").to_pylist())
        # each commit appends the next integer: the table holds a gap-free prefix of what was sent
        committed = [r for r in rows if r >= next_value]
        assert committed == list(range(next_value, next_value + len(committed)))
        assert len(rows) == len(set(rows))
        assert t.count() == len(rows)
        next_value += 1000
        assert os.path.exists(os.path.join(uri, "_delta_log"))


def test_exception_mid_stream_commits_nothing(table: str) -> None:
    schema = pa.schema([("v", pa.int64())])
    before = sorted(os.listdir(table))

    def gen():
        yield pa.record_batch([pa.array([10, 11])], schema=schema)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError):
        write_deltalake(table, pa.RecordBatchReader.from_batches(schema, gen()), mode="append")
    assert DeltaTable(table).version() == 0 and _rows(table) == [1, 2]
    assert sorted(os.listdir(table)) == before  # written files were removed again


def test_constraint_violation_commits_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path / "c")
    write_deltalake(uri, pa.table({"v": [1]}))
    DeltaTable(uri).alter.add_constraint({"positive": "v > 0"})
    v = DeltaTable(uri).version()
    with pytest.raises(ConstraintViolationError) as e:
        write_deltalake(uri, pa.table({"v": [5, -1]}), mode="append")
    assert "positive" in str(e.value)
    assert DeltaTable(uri).version() == v and _rows(uri) == [1]


def test_failed_commit_put_leaves_table_unchanged(table: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltakernel.storage.local import LocalStorage

    real = LocalStorage.put_if_absent

    def failing(self: LocalStorage, key: str, data: bytes) -> None:
        if key.endswith(".json") and "_delta_log" in key:
            raise StorageError("simulated: no space left on device")
        real(self, key, data)

    monkeypatch.setattr(LocalStorage, "put_if_absent", failing)
    with pytest.raises(DeltaError):
        write_deltalake(table, pa.table({"v": [9]}), mode="append")
    monkeypatch.undo()
    assert DeltaTable(table).version() == 0 and _rows(table) == [1, 2]


def test_keyboard_interrupt_after_the_commit_keeps_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C during the post-commit checkpoint: the commit landed, so its data files must stay."""
    import deltakernel.kernel.checkpoints.write as cw

    uri = str(tmp_path / "ki")
    write_deltalake(uri, pa.table({"v": [1]}), configuration={"delta.checkpointInterval": "1"})

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cw, "write_checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_deltalake(uri, pa.table({"v": [2]}), mode="append")
    monkeypatch.undo()
    assert DeltaTable(uri).version() == 1
    assert _rows(uri) == [1, 2]  # every referenced file is there


def test_keyboard_interrupt_during_the_commit_put_keeps_its_files(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the commit put is in flight (here: after the object was stored): the outcome is
    unknown to the writer, so it must not delete the files the commit may reference."""
    from deltakernel.storage.local import LocalStorage

    uri = str(tmp_path / "kp")
    write_deltalake(uri, pa.table({"v": [1]}))
    real = LocalStorage.put_if_absent

    def put(self: LocalStorage, key: str, data: bytes) -> None:
        real(self, key, data)
        if key.endswith(".json"):
            raise KeyboardInterrupt

    monkeypatch.setattr(LocalStorage, "put_if_absent", put)
    with pytest.raises(KeyboardInterrupt):
        write_deltalake(uri, pa.table({"v": [2]}), mode="append")
    monkeypatch.undo()
    assert _rows(uri) == [1, 2]


def _signal_writers(uri: str, tmp_path: Path, sig: int, rounds: int, opts: dict[str, str] | None,
                    seed: int) -> None:
    """Start a writer of 40 appends, send `sig` at a random moment, check the table; repeat."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "DK_STORAGE_OPTIONS": json.dumps(opts)}
    rng = random.Random(seed)
    next_value = 1
    for _ in range(rounds):
        proc = subprocess.Popen([sys.executable, str(script), uri, "none", "40", str(next_value)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(rng.uniform(0.8, 3.0))
        proc.send_signal(sig)
        proc.wait(timeout=120)
        t = DeltaTable(uri, storage_options=opts)
        rows = sorted(t.to_pyarrow_table().column("v").to_pylist())  # every referenced file exists
        committed = [r for r in rows if r >= next_value]
        assert committed == list(range(next_value, next_value + len(committed))), "lost or doubled commit"
        assert len(rows) == len(set(rows))
        next_value += 1000


@pytest.mark.slow
def test_sigint_at_random_moments_local(tmp_path: Path) -> None:
    uri = str(tmp_path / "sigint")
    write_deltalake(uri, pa.table({"v": [0]}), configuration={"delta.checkpointInterval": "2"})
    _signal_writers(uri, tmp_path, signal.SIGINT, 5, None, seed=7)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_signal_at_random_moments_s3(tmp_path: Path, s3_bucket: str, s3_options: dict[str, str], sig: int) -> None:
    uri = f"s3://{s3_bucket}/crash"
    write_deltalake(uri, pa.table({"v": [0]}), configuration={"delta.checkpointInterval": "2"},
                    storage_options=s3_options)
    _signal_writers(uri, tmp_path, sig, 4, s3_options, seed=11)
