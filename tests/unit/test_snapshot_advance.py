"""`Snapshot.advance` (read only the commits after a snapshot) against a fresh `Snapshot.load`, over random
sequences of operations: appends, overwrites, replaceWhere, deletes and updates (copy-on-write and deletion
vectors: remove + add of the same path), schema evolution, app transactions, checkpoints, a partitioning change
(the fallback), and commits by another writer in between."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltakernel import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltakernel.errors import CommitConflictError
from deltakernel.kernel.snapshot import Snapshot

OPS = ["append", "append_other_writer", "overwrite", "replace_where", "delete", "update", "merge_schema", "txn",
       "checkpoint", "repartition"]


def _data(start: int, n: int, extra: bool = False) -> pa.Table:
    cols = {"id": pa.array(range(start, start + n), pa.int64()), "p": pa.array([f"p{i % 3}" for i in range(n)])}
    if extra:
        cols["x"] = pa.array([float(i) for i in range(n)])
    return pa.table(cols)


def _cp(snap: Snapshot) -> int:
    return snap.segment.checkpoint.version if snap.segment.checkpoint else -1


def same(a: Snapshot, b: Snapshot) -> bool:
    """Equal table states (`dataChange` and the commitInfo of commits a checkpoint covers may legitimately
    differ between a checkpoint-sourced and a commit-sourced replay)."""
    after = max(_cp(a), _cp(b))
    sa, sb = _state(a, after), _state(b, after)
    assert sa == sb
    return True


def _state(snap: Snapshot, after: int) -> dict:
    files = snap.files.select(["path", "size", "partition_values", "deletion_vector", "stats",
                               "base_row_id", "default_row_commit_version"]).to_pylist()
    parts = set(snap.partition_columns)
    for f in files:  # a replay from commits keeps old partition keys as nulls, one from a checkpoint does not
        f["partition_values"] = {k: v for k, v in (f["partition_values"] or {}).items() if k in parts}
    tomb = snap.tombstones.select(["path", "deletion_vector"]).to_pylist()
    key = lambda r: (r["path"], str(r["deletion_vector"]))
    return {
        "version": snap.version,
        "files": sorted(files, key=key),
        "tombstones": sorted(tomb, key=key),
        "protocol": snap.protocol,
        "metadata": snap.metadata.to_json(),
        "txns": {k: (v.version,) for k, v in snap.txns.items()},
        "domains": snap.domain_metadata,
        "commit_infos": sorted(v for v in snap.commit_infos if v > after),
    }


@pytest.mark.parametrize("dv", [False, True])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=7))
def test_advance_equals_load(tmp_path_factory, dv, ops):
    path = str(tmp_path_factory.mktemp("adv") / "t")
    config = {"delta.enableDeletionVectors": "true"} if dv else None
    write_deltalake(path, _data(0, 9), partition_by=["p"], configuration=config)
    held = DeltaTable(path)  # the writer's handle: advances after each of its own commits
    base = held.snapshot
    n = 100
    for op in ops:
        n += 10
        try:
            _run(op, path, held, n)
        except CommitConflictError:  # held is behind another writer's commit: it catches up, as a writer would
            held.update_incremental()
        # the handle's snapshot (advanced after its own commits) equals a fresh load of its version
        assert same(held.snapshot, Snapshot.load(held._storage, held.version()))
    latest = Snapshot.load(held._storage)
    assert same(base.advance(), latest)  # many commits at once, from the first version
    held.update_incremental()
    assert same(held.snapshot, latest)


def _run(op: str, path: str, held: DeltaTable, n: int) -> None:
    """One operation; `held` is the writer whose handle advances after its own commits."""
    if op == "append":
        write_deltalake(held, _data(n, 6), mode="append")
    elif op == "append_other_writer":
        write_deltalake(path, _data(n, 4), mode="append")  # held does not see it until it advances
    elif op == "overwrite":
        write_deltalake(held, _data(n, 5), mode="overwrite")
    elif op == "replace_where":
        write_deltalake(held, _data(n, 3).set_column(1, "p", pa.array(["p1"] * 3)), mode="overwrite",
                        predicate="p = 'p1'")
    elif op == "delete":
        DeltaTable(path).delete("id % 2 = 0")
    elif op == "update":
        DeltaTable(path).update(updates={"id": "id + 1000"}, predicate="id % 3 = 1")
    elif op == "merge_schema":
        write_deltalake(held, _data(n, 3, extra=True), mode="append", schema_mode="merge")
    elif op == "txn":
        write_deltalake(held, _data(n, 2), mode="append",
                        commit_properties=CommitProperties(app_transactions=[Transaction("app", n)]))
    elif op == "checkpoint":
        DeltaTable(path).create_checkpoint()
    elif op == "repartition":
        write_deltalake(held, _data(n, 4), mode="overwrite", schema_mode="overwrite", partition_by=[])


def test_advance_is_lazy_and_bounded(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, _data(0, 3))
    snap = Snapshot.load(DeltaTable(path)._storage)
    assert snap.advance() is snap  # nothing newer
    for i in range(3):
        write_deltalake(path, _data(10 * (i + 1), 3), mode="append")
    mid = snap.advance(2)
    assert mid.version == 2 and mid.files.num_rows == 3
    assert same(mid, Snapshot.load(snap.storage, 2))
    assert same(mid.advance(1), Snapshot.load(snap.storage, 1))  # backwards: a load
