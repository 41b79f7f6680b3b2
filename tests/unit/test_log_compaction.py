"""Log compaction files (`<x>.<y>.compacted.json`): written with the reconciled actions of commits x..y
(checked against Databricks' compactions in the corpus and by replaying the compaction alone), and ignored
safely by our reader (and by deltalake / DuckDB)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError
from deltakernel.kernel.log.compaction import compacted_lines, compaction_key
from deltakernel.kernel.log.segment import list_commits
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.storage import storage_for_uri

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import helpers

CORPUS_TABLE = "tables/kernel-rs/data/compacted-log-files-table"


def _dv_id(dv: dict[str, Any] | None) -> str:
    if not dv:
        return ""
    base = dv["storageType"] + dv["pathOrInlineDv"]
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


def _summary(lines: list[dict[str, Any]]) -> set[tuple[str, ...]]:
    """The state a compaction describes: per (path, DV id) the first file action in file order (ours holds one
    per key; Databricks' lists newest first and keeps superseded ones, which readers skip that way)."""
    out: set[tuple[str, ...]] = set()
    seen: set[tuple[str, str]] = set()
    for a in lines:
        (kind, body), = a.items()
        if kind in ("add", "remove"):
            key = (body["path"], _dv_id(body.get("deletionVector")))
            if key not in seen:
                seen.add(key)
                out.add((kind, *key))
        elif kind in ("protocol", "metaData"):
            out.add((kind, json.dumps(body, sort_keys=True)))
        elif kind == "txn":
            out.add((kind, body["appId"], str(body["version"])))
        elif kind == "domainMetadata":
            out.add((kind, body["domain"], body.get("configuration", ""), str(body.get("removed"))))
    return out


@pytest.mark.parametrize("rng", [(0, 5), (6, 10), (6, 15)])
def test_same_reconciliation_as_databricks_compactions(conformance_dir: Path, rng: tuple[int, int]) -> None:
    table = conformance_dir / CORPUS_TABLE
    storage = storage_for_uri(str(table))
    commits = list_commits(storage)
    ours = [json.loads(line) for line in compacted_lines(storage, [commits[v] for v in range(rng[0], rng[1] + 1)])
            .decode().splitlines()]
    theirs = [json.loads(line) for line in (table / compaction_key(*rng)).read_text().splitlines() if line.strip()]
    assert _summary(ours) == _summary(theirs)  # cdc (which Databricks keeps) is not part of the reconciliation
    keys = [(a[k]["path"], _dv_id(a[k].get("deletionVector"))) for a in ours for k in a if k in ("add", "remove")]
    assert len(keys) == len(set(keys))  # fully reconciled: one action per file key, order-independent
    assert not any("commitInfo" in a or "cdc" in a for a in ours)


def test_reader_ignores_compactions(conformance_dir: Path) -> None:
    table = conformance_dir / CORPUS_TABLE
    snap = Snapshot.load(storage_for_uri(str(table)))
    assert [m.key.rsplit("/", 1)[-1] for m in snap.segment.commits][:2] == [
        "00000000000000000000.json", "00000000000000000001.json"]
    assert not any("compacted" in m.key for m in snap.segment.commits)


def _make(uri: str) -> None:
    write_deltalake(uri, pa.table({"id": list(range(10)), "p": ["a", "b"] * 5}), partition_by=["p"],
                    configuration={"delta.enableDeletionVectors": "true"})
    write_deltalake(uri, pa.table({"id": [100], "p": ["c"]}), mode="append")
    t = DeltaTable(uri)
    t.delete("id = 1")
    t.delete("id = 3")
    t.delete("p = 'c'")
    write_deltalake(uri, pa.table({"id": [7], "p": ["a"]}), mode="overwrite", predicate="p = 'a'")


def test_compaction_replays_to_the_same_state(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    _make(uri)
    t = DeltaTable(uri)
    key = t.compact_logs()
    assert key == compaction_key(0, t.version())
    # the compaction alone, as the only commit of a table, replays to the same state
    alone = tmp_path / "alone"
    (alone / "_delta_log").mkdir(parents=True)
    for f in Path(uri).iterdir():
        if f.name != "_delta_log":
            (shutil.copytree if f.is_dir() else shutil.copy)(f, alone / f.name)
    (alone / "_delta_log" / "00000000000000000000.json").write_bytes((Path(uri) / key).read_bytes())
    a, b = DeltaTable(str(alone)), DeltaTable(uri)
    helpers.assert_same_rows(a.to_pyarrow_table(), b.to_pyarrow_table())
    assert sorted(a.files()) == sorted(b.files())
    assert a.protocol() == b.protocol() and a.metadata() == b.metadata()
    assert a.snapshot.tombstones.num_rows == b.snapshot.tombstones.num_rows


def test_other_readers_still_read_the_table(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"id": [1, 2]}))
    write_deltalake(uri, pa.table({"id": [3]}), mode="append")
    write_deltalake(uri, pa.table({"id": [4]}), mode="overwrite")
    t = DeltaTable(uri)
    assert t.compact_logs(0, 2) is not None
    assert (Path(uri) / compaction_key(0, 2)).exists()
    expected = DeltaTable(uri).to_pyarrow_table()
    assert expected.column("id").to_pylist() == [4]
    helpers.assert_same_rows(helpers.deltalake_table(uri), expected, "deltalake")
    helpers.assert_same_rows(helpers.duckdb_table(uri), expected, "duckdb")
    assert DeltaTable(uri, version=1).count() == 3


def test_ranges(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    for i in range(4):
        write_deltalake(uri, pa.table({"id": [i]}), mode="append")
    t = DeltaTable(uri)
    assert t.compact_logs(2, 2) is None  # one commit: nothing to compact
    with pytest.raises(DeltaError, match="invalid compaction range"):
        t.compact_logs(1, 9)
    t.create_checkpoint()
    write_deltalake(uri, pa.table({"id": [9]}), mode="append")
    write_deltalake(uri, pa.table({"id": [10]}), mode="append")
    t = DeltaTable(uri)
    assert t.compact_logs() == compaction_key(4, 5)  # default: after the checkpoint
    assert t.compact_logs() == compaction_key(4, 5)  # again: the file is kept, not rewritten
