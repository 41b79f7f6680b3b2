"""Log replay (PROTOCOL.md "Action Reconciliation") on hand-written logs with tiny real Parquet files."""

from __future__ import annotations

import json
import pathlib
import sys

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import helpers
from helpers import add_action, commit_info, metadata_action, protocol_action, remove_action

from deltakernel.kernel.snapshot import Snapshot
from deltakernel.storage import LocalStorage
from deltakernel.table import DeltaTable

SCHEMA = [("id", "long"), ("name", "string")]
DV_PROTOCOL = protocol_action(3, 7, ["deletionVectors"], ["deletionVectors"])


def _snap(p: pathlib.Path | str, version: int | None = None) -> Snapshot:
    return Snapshot.load(LocalStorage(str(p)), version)


def _data(p: pathlib.Path, name: str, ids: list[int]) -> int:
    return helpers.write_data_file(p, name, {"id": pa.array(ids, pa.int64()),
                                             "name": pa.array([f"n{i}" for i in ids])})


def _live(snap: Snapshot) -> list[tuple]:
    """(path, dv unique-ish id) of the live files, sorted."""
    rows = snap.files.select(["path", "deletion_vector"]).to_pylist()
    return sorted(((r["path"], (r["deletion_vector"] or {}).get("pathOrInlineDv")) for r in rows), key=repr)


def _ids(p: pathlib.Path | str, version: int | None = None) -> list[int]:
    return sorted(DeltaTable(str(p), version=version).to_pyarrow_table().column("id").to_pylist())


# ----------------------------------------------------------------------------- add / remove


def test_readd_after_remove(tmp_path: pathlib.Path) -> None:
    sa, sb = _data(tmp_path, "a.parquet", [1, 2]), _data(tmp_path, "b.parquet", [3])
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(SCHEMA), commit_info(),
                                        add_action("a.parquet", sa), add_action("b.parquet", sb)])
    helpers.write_actions(tmp_path, 1, [commit_info("DELETE"), remove_action("a.parquet")])
    helpers.write_actions(tmp_path, 2, [commit_info(), add_action("a.parquet", sa)])
    assert _live(_snap(tmp_path, 0)) == [("a.parquet", None), ("b.parquet", None)]
    assert _live(_snap(tmp_path, 1)) == [("b.parquet", None)]
    snap = _snap(tmp_path)
    assert _live(snap) == [("a.parquet", None), ("b.parquet", None)]
    assert snap.tombstones.num_rows == 0  # the re-add supersedes the remove
    assert _ids(tmp_path, 1) == [3]
    assert _ids(tmp_path) == [1, 2, 3]
    t1 = _snap(tmp_path, 1).tombstones
    assert t1.column("path").to_pylist() == ["a.parquet"]


def test_remove_and_readd_in_one_commit_and_later_remove(tmp_path: pathlib.Path) -> None:
    sa = _data(tmp_path, "a.parquet", [1])
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(SCHEMA), add_action("a.parquet", sa)])
    helpers.write_actions(tmp_path, 1, [remove_action("a.parquet"), add_action("a.parquet", sa,
                                                                                stats={"numRecords": 1})])
    helpers.write_actions(tmp_path, 2, [remove_action("a.parquet")])
    snap1 = _snap(tmp_path, 1)
    assert _live(snap1) == [("a.parquet", None)]
    assert json.loads(snap1.files.column("stats")[0].as_py()) == {"numRecords": 1}
    assert _live(_snap(tmp_path)) == []
    assert _ids(tmp_path) == []


def test_newest_add_of_same_path_wins(tmp_path: pathlib.Path) -> None:
    """Re-adding a live path (e.g. a stats-only update, dataChange=false) keeps one entry, the newest."""
    sa = _data(tmp_path, "a.parquet", [1, 2])
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(SCHEMA),
                                        add_action("a.parquet", sa, modification_time=1)])
    helpers.write_actions(tmp_path, 1, [add_action("a.parquet", sa, modification_time=2, data_change=False,
                                                   stats={"numRecords": 2})])
    snap = _snap(tmp_path)
    assert snap.files.num_rows == 1
    row = snap.files.to_pylist()[0]
    assert row["modification_time"] == 2 and row["data_change"] is False
    assert json.loads(row["stats"])["numRecords"] == 2
    assert _ids(tmp_path) == [1, 2]


def test_deletion_vector_keyed_identity(tmp_path: pathlib.Path) -> None:
    """add(a) ; remove(a) + add(a, dv1) ; remove(a, dv1) + add(a, dv2) -> exactly one live (a, dv2)."""
    sa = _data(tmp_path, "a.parquet", [10, 11, 12, 13])
    dv1 = helpers.inline_dv([0])
    dv2 = helpers.inline_dv([0, 2])
    helpers.write_actions(tmp_path, 0, [DV_PROTOCOL, metadata_action(SCHEMA, configuration={
        "delta.enableDeletionVectors": "true"}), add_action("a.parquet", sa, stats={"numRecords": 4})])
    helpers.write_actions(tmp_path, 1, [commit_info("DELETE"), remove_action("a.parquet"),
                                        add_action("a.parquet", sa, deletion_vector=dv1, stats={"numRecords": 4})])
    helpers.write_actions(tmp_path, 2, [commit_info("DELETE"), remove_action("a.parquet", deletion_vector=dv1),
                                        add_action("a.parquet", sa, deletion_vector=dv2, stats={"numRecords": 4})])
    snap = _snap(tmp_path)
    assert snap.files.num_rows == 1
    live = snap.files.to_pylist()[0]
    assert live["path"] == "a.parquet"
    assert live["deletion_vector"]["pathOrInlineDv"] == dv2["pathOrInlineDv"]
    assert live["deletion_vector"]["storageType"] == "i"
    assert live["deletion_vector"]["cardinality"] == 2
    tomb = sorted(((r["path"], (r["deletion_vector"] or {}).get("pathOrInlineDv"))
                   for r in snap.tombstones.select(["path", "deletion_vector"]).to_pylist()), key=repr)
    assert tomb == sorted([("a.parquet", None), ("a.parquet", dv1["pathOrInlineDv"])], key=repr)
    # data: row indexes 0 and 2 deleted
    assert _ids(tmp_path) == [11, 13]
    assert _ids(tmp_path, 1) == [11, 12, 13]
    assert _ids(tmp_path, 0) == [10, 11, 12, 13]
    assert DeltaTable(str(tmp_path)).count() == 2
    assert _snap(tmp_path, 1).files.num_rows == 1


def test_dv_same_path_different_offsets_are_distinct(tmp_path: pathlib.Path) -> None:
    """The DV unique id includes the offset: (path, 'u'+p+'@1') and (path, 'u'+p+'@9') are two keys."""
    sa = _data(tmp_path, "a.parquet", [1])
    base = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "sizeInBytes": 10, "cardinality": 1}
    dv_a = dict(base, offset=1)
    dv_b = dict(base, offset=9)
    helpers.write_actions(tmp_path, 0, [DV_PROTOCOL, metadata_action(SCHEMA),
                                        add_action("a.parquet", sa, deletion_vector=dv_a)])
    helpers.write_actions(tmp_path, 1, [remove_action("a.parquet", deletion_vector=dv_b)])  # other key
    assert _snap(tmp_path).files.num_rows == 1
    helpers.write_actions(tmp_path, 2, [remove_action("a.parquet", deletion_vector=dv_a),
                                        add_action("a.parquet", sa, deletion_vector=dv_b)])
    files = _snap(tmp_path).files.to_pylist()
    assert len(files) == 1 and files[0]["deletion_vector"]["offset"] == 9


# ----------------------------------------------------------------------------- txn / domains / P&M


def test_txn_latest_per_app_id(tmp_path: pathlib.Path) -> None:
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(SCHEMA),
                                        {"txn": {"appId": "app1", "version": 1, "lastUpdated": 10}}])
    helpers.write_actions(tmp_path, 1, [{"txn": {"appId": "app1", "version": 5, "lastUpdated": 20}},
                                        {"txn": {"appId": "app2", "version": 3}}])
    helpers.write_actions(tmp_path, 2, [{"txn": {"appId": "app1", "version": 7, "lastUpdated": 30}}])
    snap = _snap(tmp_path)
    assert {k: t.version for k, t in snap.txns.items()} == {"app1": 7, "app2": 3}
    assert snap.txns["app1"].last_updated == 30
    assert {k: t.version for k, t in _snap(tmp_path, 1).txns.items()} == {"app1": 5, "app2": 3}
    assert {k: t.version for k, t in _snap(tmp_path, 0).txns.items()} == {"app1": 1}
    assert DeltaTable(str(tmp_path)).transaction_versions() == {"app1": 7, "app2": 3}


def test_domain_metadata_add_and_remove(tmp_path: pathlib.Path) -> None:
    def dm(domain: str, conf: str, removed: bool = False) -> dict:
        return {"domainMetadata": {"domain": domain, "configuration": conf, "removed": removed}}

    helpers.write_actions(tmp_path, 0, [protocol_action(3, 7, [], ["domainMetadata"]), metadata_action(SCHEMA),
                                        dm("d1", '{"a":1}')])
    helpers.write_actions(tmp_path, 1, [dm("d2", '{"b":2}'), dm("d1", '{"a":2}')])
    helpers.write_actions(tmp_path, 2, [dm("d1", '{"a":2}', removed=True)])
    helpers.write_actions(tmp_path, 3, [dm("d1", '{"a":3}')])
    confs = lambda s: {k: d.configuration for k, d in s.domain_metadata.items()}
    assert confs(_snap(tmp_path, 0)) == {"d1": '{"a":1}'}
    assert confs(_snap(tmp_path, 1)) == {"d1": '{"a":2}', "d2": '{"b":2}'}
    assert confs(_snap(tmp_path, 2)) == {"d2": '{"b":2}'}
    assert confs(_snap(tmp_path, 3)) == {"d1": '{"a":3}', "d2": '{"b":2}'}
    assert all(not d.removed for d in _snap(tmp_path).domain_metadata.values())


def test_protocol_and_metadata_newest_wins(tmp_path: pathlib.Path) -> None:
    sa = _data(tmp_path, "a.parquet", [1])
    helpers.write_actions(tmp_path, 0, [protocol_action(1, 2), metadata_action(SCHEMA, table_id="id-0"),
                                        add_action("a.parquet", sa)])
    helpers.write_actions(tmp_path, 1, [metadata_action([*SCHEMA, ("extra", "double")], table_id="id-0",
                                                        configuration={"delta.appendOnly": "true"})])
    helpers.write_actions(tmp_path, 2, [protocol_action(3, 7, ["timestampNtz"], ["timestampNtz", "appendOnly"]),
                                        metadata_action([*SCHEMA, ("extra", "double"), ("ts", "timestamp_ntz")],
                                                        table_id="id-0")])
    s0, s1, s2 = (_snap(tmp_path, v) for v in range(3))
    assert (s0.protocol.min_reader_version, s0.protocol.min_writer_version) == (1, 2)
    assert s0.schema.names == ["id", "name"] and s0.configuration == {}
    assert s1.protocol == s0.protocol
    assert s1.schema.names == ["id", "name", "extra"] and s1.configuration == {"delta.appendOnly": "true"}
    assert s2.protocol.min_reader_version == 3 and s2.protocol.reader_features == frozenset({"timestampNtz"})
    assert s2.schema.names == ["id", "name", "extra", "ts"] and s2.configuration == {}
    t = DeltaTable(str(tmp_path)).to_pyarrow_table()
    assert t.column_names == ["id", "name", "extra", "ts"]
    assert t.to_pylist() == [{"id": 1, "name": "n1", "extra": None, "ts": None}]
    assert t.schema.field("ts").type == pa.timestamp("us")


def test_blank_lines_and_unknown_actions_are_ignored(tmp_path: pathlib.Path) -> None:
    sa = _data(tmp_path, "a.parquet", [1])
    lines = [json.dumps(protocol_action()), "", json.dumps(metadata_action(SCHEMA)), "   ",
             json.dumps({"someFutureAction": {"x": 1}}), json.dumps(add_action("a.parquet", sa)),
             json.dumps({"cdc": {"path": "_change_data/x.parquet", "partitionValues": {}, "size": 1,
                                 "dataChange": False}}),
             json.dumps({"checkpointMetadata": {"version": 0}}), ""]
    helpers.commit_file(tmp_path, 0).parent.mkdir(parents=True, exist_ok=True)
    helpers.commit_file(tmp_path, 0).write_text("\n".join(lines) + "\r\n")
    snap = _snap(tmp_path)
    assert _live(snap) == [("a.parquet", None)]
    assert _ids(tmp_path) == [1]


def test_add_with_extra_unknown_fields(tmp_path: pathlib.Path) -> None:
    sa = _data(tmp_path, "a.parquet", [1])
    add = add_action("a.parquet", sa)
    add["add"]["clusteringProvider"] = "liquid"
    add["add"]["someNewField"] = {"nested": [1, 2]}
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(SCHEMA), add])
    assert _live(_snap(tmp_path)) == [("a.parquet", None)]


def test_partition_values_raw_strings(tmp_path: pathlib.Path) -> None:
    fields = [("id", "long"), ("p", "string"), ("q", "integer")]
    s1 = helpers.write_data_file(tmp_path, "p=a/1.parquet", {"id": pa.array([1], pa.int64())})
    s2 = helpers.write_data_file(tmp_path, "p=__HIVE_DEFAULT_PARTITION__/2.parquet", {"id": pa.array([2], pa.int64())})
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action(fields, partition_columns=["p", "q"]),
                                        add_action("p=a/1.parquet", s1, partition_values={"p": "a", "q": "7"}),
                                        add_action("p=__HIVE_DEFAULT_PARTITION__/2.parquet", s2,
                                                   partition_values={"p": None, "q": ""})])
    files = _snap(tmp_path).files
    pv = sorted(files.column("partition_values").to_pylist(), key=repr)
    assert {"p": "a", "q": "7"} in pv and {"p": None, "q": ""} in pv
    assert files.schema.field("partition_values").type == pa.struct([("p", pa.string()), ("q", pa.string())])
    rows = sorted(DeltaTable(str(tmp_path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "p": "a", "q": 7}, {"id": 2, "p": None, "q": None}]


# ----------------------------------------------------------------------------- file table shape

EXPECTED_COLUMNS = {
    "path": pa.string(),
    "size": pa.int64(),
    "modification_time": pa.int64(),
    "data_change": pa.bool_(),
    "stats": pa.string(),
    "deletion_vector": pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()),
                                  ("offset", pa.int32()), ("sizeInBytes", pa.int32()),
                                  ("cardinality", pa.int64())]),
    "base_row_id": pa.int64(),
    "default_row_commit_version": pa.int64(),
    "tags": pa.map_(pa.string(), pa.string()),
}


def _check_file_table(files: pa.Table, partition_cols: list[str]) -> None:
    names = set(files.column_names)
    missing = [c for c in [*EXPECTED_COLUMNS, "partition_values"] if c not in names]
    assert not missing, f"file table lacks documented columns {missing}; has {files.column_names}"
    extra = names - set(EXPECTED_COLUMNS) - {"partition_values", "stats_parsed"}
    assert not extra, f"undocumented file table columns {extra}"
    for c, t in EXPECTED_COLUMNS.items():
        assert files.schema.field(c).type == t, f"{c}: {files.schema.field(c).type} != {t}"
    pv_type = files.schema.field("partition_values").type
    assert pa.types.is_struct(pv_type)
    assert [pv_type.field(i).name for i in range(pv_type.num_fields)] == partition_cols
    assert all(pv_type.field(i).type == pa.string() for i in range(pv_type.num_fields))


def test_file_table_columns_from_json(tmp_path: pathlib.Path) -> None:
    sa = _data(tmp_path, "a.parquet", [1])
    add = add_action("a.parquet", sa, stats={"numRecords": 1}, deletion_vector=helpers.inline_dv([]))
    add["add"]["tags"] = {"INSERTION_TIME": "123", "k": "v"}
    add["add"]["baseRowId"] = 5
    add["add"]["defaultRowCommitVersion"] = 0
    helpers.write_actions(tmp_path, 0, [DV_PROTOCOL, metadata_action(SCHEMA), add])
    files = _snap(tmp_path).files
    _check_file_table(files, [])
    row = files.to_pylist()[0]
    assert row["base_row_id"] == 5 and row["default_row_commit_version"] == 0
    assert row["size"] == sa and row["modification_time"] == 1_700_000_000_000 and row["data_change"] is True
    assert dict(row["tags"]) == {"INSERTION_TIME": "123", "k": "v"}


def test_file_table_columns_empty_table(tmp_path: pathlib.Path) -> None:
    helpers.write_actions(tmp_path, 0, [protocol_action(), metadata_action([("id", "long"), ("p", "string")],
                                                                           partition_columns=["p"])])
    files = _snap(tmp_path).files
    assert files.num_rows == 0
    _check_file_table(files, ["p"])


def test_file_table_columns_from_checkpoint(tmp_path: pathlib.Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    p = str(tmp_path / "t")
    deltalake.write_deltalake(p, pa.table({"id": [1, 2], "p": ["a", "b"]}), partition_by=["p"])
    deltalake.DeltaTable(p).create_checkpoint()
    _check_file_table(_snap(p).files, ["p"])  # checkpoint only
    deltalake.write_deltalake(p, pa.table({"id": [3], "p": ["c"]}), partition_by=["p"], mode="append")
    files = _snap(p).files
    _check_file_table(files, ["p"])  # checkpoint + commit
    assert files.num_rows == 3


# ----------------------------------------------------------------------------- checkpoint + commits


def _dl_uris(p: str, version: int | None = None) -> list[str]:
    import deltalake

    return sorted(deltalake.DeltaTable(p, version=version).file_uris())


def test_checkpoint_plus_commits_reconciliation(tmp_path: pathlib.Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    from deltalake import CommitProperties, Transaction

    p = str(tmp_path / "t")
    for k in range(4):
        deltalake.write_deltalake(
            p, pa.table({"id": pa.array([k * 10 + j for j in range(3)], pa.int64()), "g": [k % 2] * 3}),
            mode="append", commit_properties=CommitProperties(app_transactions=[Transaction("app", k)]))
    deltalake.DeltaTable(p).delete("id = 10")  # v4: rewrites the file of commit 1
    deltalake.DeltaTable(p).create_checkpoint()  # checkpoint at 4 (holds the tombstones of v4)
    deltalake.write_deltalake(p, pa.table({"id": pa.array([100], pa.int64()), "g": [5]}), mode="append",
                              commit_properties=CommitProperties(app_transactions=[Transaction("app", 9),
                                                                                   Transaction("other", 1)]))
    deltalake.DeltaTable(p).delete("id < 5")  # v6: removes a file that lives in the checkpoint
    cp_files = _snap(p, 4).files.column("path").to_pylist()
    assert len(cp_files) == 4
    snap = _snap(p)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == 4
    assert snap.segment.commit_versions == [5, 6]
    assert sorted(DeltaTable(p).file_uris()) == _dl_uris(p)
    assert {k: t.version for k, t in snap.txns.items()} == {"app": 9, "other": 1}
    assert {k: t.version for k, t in _snap(p, 4).txns.items()} == {"app": 3}
    expected = sorted(helpers.deltalake_table(p).column("id").to_pylist())
    assert _ids(p) == expected
    assert 10 not in expected and all(i >= 5 for i in expected)

    # hand-written v7: re-add a file the checkpoint has as a tombstone, remove a checkpoint file
    tomb = _snap(p, 4).tombstones.column("path").to_pylist()
    assert tomb, "the checkpoint should carry the tombstone of the file rewritten by the delete"
    live_from_cp = next(f for f in snap.files.column("path").to_pylist() if f in cp_files)
    size = (pathlib.Path(p) / tomb[0]).stat().st_size
    helpers.write_actions(p, 7, [commit_info("MANUAL"), add_action(tomb[0], size),
                                 remove_action(live_from_cp)])
    snap7 = _snap(p)
    paths7 = sorted(snap7.files.column("path").to_pylist())
    assert tomb[0] in paths7 and live_from_cp not in paths7
    assert len(paths7) == len(set(paths7))
    assert paths7 == sorted(set(snap.files.column("path").to_pylist()) - {live_from_cp} | {tomb[0]})
    assert live_from_cp in snap7.tombstones.column("path").to_pylist()
    assert tomb[0] not in snap7.tombstones.column("path").to_pylist()


def test_checkpoint_then_metadata_change(tmp_path: pathlib.Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    p = str(tmp_path / "t")
    deltalake.write_deltalake(p, pa.table({"id": pa.array([1], pa.int64())}))
    deltalake.DeltaTable(p).create_checkpoint()
    deltalake.write_deltalake(p, pa.table({"id": pa.array([2], pa.int64()), "z": ["x"]}), mode="append",
                              schema_mode="merge")
    snap = _snap(p)
    assert snap.schema.names == ["id", "z"]
    assert sorted(DeltaTable(p).to_pyarrow_table().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "z": None}, {"id": 2, "z": "x"}]


# ----------------------------------------------------------------------------- model-based


@st.composite
def _ops(draw: st.DrawFn) -> list[list[tuple[str, str, int | None]]]:
    """Commits of (op, path, dv-id) where op is add/remove; only valid sequences are generated."""
    commits: list[list[tuple[str, str, int | None]]] = []
    live: dict[str, int | None] = {}
    n_commits = draw(st.integers(1, 8))
    for _ in range(n_commits):
        actions: list[tuple[str, str, int | None]] = []
        touched: set[str] = set()
        for _ in range(draw(st.integers(1, 4))):
            path = draw(st.sampled_from(["a", "b", "c", "d"]))
            if path in touched:
                continue
            touched.add(path)
            kind = draw(st.sampled_from(["add", "remove", "dv"]))
            if path not in live:
                if kind == "remove":
                    actions.append(("remove", path, None))  # remove of an unknown file: a no-op tombstone
                else:
                    dv = draw(st.sampled_from([None, 1, 2]))
                    actions.append(("add", path, dv))
                    live[path] = dv
            elif kind == "remove":
                actions.append(("remove", path, live.pop(path)))
            elif kind == "dv":
                new = draw(st.sampled_from([d for d in (None, 1, 2, 3) if d != live[path]]))
                actions.append(("remove", path, live[path]))
                actions.append(("add", path, new))
                live[path] = new
            else:  # re-add the same (path, dv): a stats/tags update
                actions.append(("add", path, live[path]))
        commits.append(actions)
    return commits


_DV_IDS = {k: {"storageType": "u", "pathOrInlineDv": f"ab^-aqEH.-t@S}}K{{vb[*k^{k}", "offset": 1,
               "sizeInBytes": 10, "cardinality": 1} for k in (1, 2, 3)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=_ops(), checkpoint_at=st.integers(-1, 8), drop_old_commits=st.booleans())
def test_replay_matches_model(tmp_path_factory: pytest.TempPathFactory, commits: list, checkpoint_at: int,
                              drop_old_commits: bool) -> None:
    """Random valid add/remove/DV-update sequences, optionally with a classic checkpoint in the middle
    (written from the model state, tombstones included), replay to the model's live set."""
    root = tmp_path_factory.mktemp("model")
    header = [DV_PROTOCOL, metadata_action(SCHEMA, table_id="model")]
    helpers.write_actions(root, 0, header)
    model: dict[str, int | None] = {}
    tombstones: dict[tuple[str, int | None], dict] = {}
    live_actions: dict[str, dict] = {}
    latest = len(commits)
    for v, actions in enumerate(commits, start=1):
        out = []
        for op, path, dv in actions:
            d = _DV_IDS.get(dv) if dv is not None else None
            if op == "add":
                a = add_action(f"{path}.parquet", 1, deletion_vector=d, modification_time=v)
                out.append(a)
                model[path] = dv
                live_actions[path] = a
                tombstones.pop((path, dv), None)
            else:
                r = remove_action(f"{path}.parquet", deletion_vector=d)
                out.append(r)
                tombstones[(path, dv)] = r
                if path in model and model[path] == dv:
                    model.pop(path)
                    live_actions.pop(path)
        helpers.write_actions(root, v, out)
        if v == checkpoint_at:
            helpers.write_classic_checkpoint(root, v, [*header, *live_actions.values(), *tombstones.values()])
    if 1 <= checkpoint_at <= latest and drop_old_commits:
        for v in range(checkpoint_at):  # log cleanup: only the checkpoint holds the early history
            helpers.commit_file(root, v).unlink()
    snap = _snap(root)
    if 1 <= checkpoint_at <= latest:
        assert snap.segment.checkpoint is not None and snap.segment.checkpoint.version == checkpoint_at
    got = sorted(((r["path"], (r["deletion_vector"] or {}).get("pathOrInlineDv"), r["modification_time"])
                  for r in snap.files.select(["path", "deletion_vector", "modification_time"]).to_pylist()),
                 key=repr)
    want = sorted(((f"{p}.parquet", _DV_IDS[d]["pathOrInlineDv"] if d is not None else None,
                    live_actions[p]["add"]["modificationTime"]) for p, d in model.items()), key=repr)
    assert got == want
    want_tomb = sorted(((f"{p}.parquet", _DV_IDS[d]["pathOrInlineDv"] if d is not None else None)
                        for (p, d) in tombstones), key=repr)
    got_tomb = sorted(((r["path"], (r["deletion_vector"] or {}).get("pathOrInlineDv"))
                       for r in snap.tombstones.select(["path", "deletion_vector"]).to_pylist()), key=repr)
    assert got_tomb == want_tomb


# ----------------------------------------------------------------------------- V2 checkpoints

V2_PROTOCOL = protocol_action(3, 7, ["v2Checkpoint", "deletionVectors"], ["v2Checkpoint", "deletionVectors"])


def _write_sidecar(root: pathlib.Path, name: str, actions: list[dict]) -> dict:
    import pyarrow.parquet as pq

    sc_dir = helpers.log_dir(root) / "_sidecars"
    sc_dir.mkdir(parents=True, exist_ok=True)
    schema = pa.schema([helpers.CHECKPOINT_SCHEMA.field("add"), helpers.CHECKPOINT_SCHEMA.field("remove")])
    rows = []
    for a in actions:
        ((kind, body),) = a.items()
        body = dict(body, partitionValues=list((body.get("partitionValues") or {}).items()))
        rows.append({kind: body})
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sc_dir / name)
    return {"sidecar": {"path": name, "sizeInBytes": (sc_dir / name).stat().st_size,
                        "modificationTime": 1_700_000_000_000}}


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_with_sidecars_and_commits(tmp_path: pathlib.Path, fmt: str) -> None:
    import uuid

    import pyarrow.parquet as pq

    sizes = {n: _data(tmp_path, f"{n}.parquet", [i]) for i, n in enumerate(["a", "b", "c", "d", "e"])}
    header = [V2_PROTOCOL, metadata_action(SCHEMA, table_id="v2", configuration={"delta.checkpointPolicy": "v2"})]
    # commits 0..2 (will be cleaned up): a, b, c, d added, b removed
    helpers.write_actions(tmp_path, 0, [*header, add_action("a.parquet", sizes["a"])])
    helpers.write_actions(tmp_path, 1, [add_action("b.parquet", sizes["b"]), add_action("c.parquet", sizes["c"])])
    helpers.write_actions(tmp_path, 2, [remove_action("b.parquet"), add_action("d.parquet", sizes["d"])])
    sc1 = _write_sidecar(tmp_path, f"{uuid.uuid4()}.parquet", [add_action("a.parquet", sizes["a"]),
                                                               add_action("c.parquet", sizes["c"])])
    sc2 = _write_sidecar(tmp_path, f"{uuid.uuid4()}.parquet", [add_action("d.parquet", sizes["d"]),
                                                               remove_action("b.parquet")])
    top = [{"checkpointMetadata": {"version": 2}}, *header, {"txn": {"appId": "x", "version": 4}}, sc1, sc2]
    name = f"{2:020d}.checkpoint.{uuid.uuid4()}.{fmt}"
    if fmt == "json":
        (helpers.log_dir(tmp_path) / name).write_text("".join(json.dumps(a) + "\n" for a in top))
    else:
        schema = pa.schema([*helpers.CHECKPOINT_SCHEMA,
                            ("checkpointMetadata", pa.struct([("version", pa.int64())])),
                            ("sidecar", pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64()),
                                                   ("modificationTime", pa.int64())]))])
        rows = []
        for a in top:
            ((kind, body),) = a.items()
            if kind == "metaData":
                body = dict(body, configuration=list(body["configuration"].items()),
                            format={"provider": "parquet", "options": []})
            rows.append({kind: body})
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), helpers.log_dir(tmp_path) / name)
    for v in range(2):
        helpers.commit_file(tmp_path, v).unlink()
    # after the checkpoint: re-add b, remove a
    helpers.write_actions(tmp_path, 3, [add_action("b.parquet", sizes["b"]), remove_action("a.parquet"),
                                        add_action("e.parquet", sizes["e"])])
    snap = _snap(tmp_path)
    assert snap.segment.checkpoint is not None and snap.segment.checkpoint.kind == "v2"
    assert snap.segment.commit_versions == [3]
    assert _live(snap) == [("b.parquet", None), ("c.parquet", None), ("d.parquet", None), ("e.parquet", None)]
    assert {k: t.version for k, t in snap.txns.items()} == {"x": 4}
    assert _ids(tmp_path) == [1, 2, 3, 4]
    snap2 = _snap(tmp_path, 2)
    assert _live(snap2) == [("a.parquet", None), ("c.parquet", None), ("d.parquet", None)]
    assert snap2.tombstones.column("path").to_pylist() == ["b.parquet"]
    assert _ids(tmp_path, 2) == [0, 2, 3]
