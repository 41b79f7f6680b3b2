"""deltalake 1.6.6 parity of `DeltaTable.alter` and the commit options (issue 24, "deltalake API").

Each test runs the same calls on deltalake and on deltakernel and compares signatures, exception types,
resulting protocols and `_delta_log` contents. Where deltakernel keeps a different behaviour on purpose
(legacy features kept when upgrading to writer 7, `domainMetadata` with `rowTracking`, engine-owned commitInfo
fields, log cleanup only after a checkpoint unless asked) the test asserts ours and says why; the reasons are
in docs/decisions.md.
"""

from __future__ import annotations

import inspect
import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
import deltakernel.exceptions
from deltakernel import DeltaTable, write_deltalake
from deltakernel.operations.alter.alterer import TableAlterer

deltalake = pytest.importorskip("deltalake")
from deltalake.table import TableAlterer as DLTableAlterer

LIBS = {"deltalake": deltalake, "deltakernel": deltakernel}
FEATURE_NAMES = sorted(n for n in dir(deltalake.TableFeatures) if not n.startswith("_"))
COMMIT_KWARGS = ("commit_properties", "post_commithook_properties")


def _params(fn: Callable[..., Any]) -> list[tuple[str, str, Any]]:
    """(name, kind, default) of each parameter: what callers can rely on (annotations aside; deltalake's
    sentinel defaults compare by their repr)."""
    return [(p.name, p.kind.name, repr(p.default)) for p in inspect.signature(fn).parameters.values()]


def _table(lib: Any, path: Path, conf: dict[str, str] | None = None) -> Any:
    lib.write_deltalake(str(path), pa.table({"x": pa.array([1, 2], pa.int64())}), configuration=conf)
    return lib.DeltaTable(str(path))


def _proto(t: Any) -> tuple[int, int, set[str] | None, set[str] | None]:
    p = t.protocol()
    return (
        p.min_reader_version,
        p.min_writer_version,
        set(p.reader_features) if p.reader_features else None,
        set(p.writer_features) if p.writer_features else None,
    )


def _last_commit(path: Path) -> dict[str, Any]:
    log = path / "_delta_log"
    last = max(log.glob("*.json"), key=lambda p: p.name)
    return next(json.loads(line)["commitInfo"] for line in last.read_text().splitlines() if "commitInfo" in line)


# ----------------------------------------------------------------------------- 1. signatures
ALTER_METHODS = sorted(n for n, _ in inspect.getmembers(DLTableAlterer, inspect.isfunction) if not n.startswith("_"))


@pytest.mark.parametrize("name", ALTER_METHODS)
def test_every_alter_method_has_deltalakes_parameters(name: str) -> None:
    """Same parameters in the same order and kinds; ours may add keyword-only extras (custom_metadata)."""
    theirs = _params(getattr(DLTableAlterer, name))
    ours = _params(getattr(TableAlterer, name))
    assert ours[: len(theirs)] == theirs
    assert all(kind == "KEYWORD_ONLY" for _, kind, _ in ours[len(theirs) :])
    assert {n for n, _, _ in theirs} >= set(COMMIT_KWARGS)


DT_METHODS = ["create", "delete", "update", "merge", "vacuum", "restore", "repair", "create_write_transaction"]


@pytest.mark.parametrize("name", DT_METHODS)
def test_deltatable_commit_methods_have_deltalakes_parameters(name: str) -> None:
    theirs = _params(getattr(deltalake.DeltaTable, name))
    ours = _params(getattr(DeltaTable, name))
    assert ours[: len(theirs)] == theirs
    assert all(kind == "KEYWORD_ONLY" for _, kind, _ in ours[len(theirs) :])


@pytest.mark.parametrize("name", ["compact", "z_order"])
def test_optimizer_and_convert_have_deltalakes_parameters(name: str) -> None:
    from deltalake.table import TableOptimizer as DLOptimizer

    from deltakernel.operations.maintenance.optimize.execute import TableOptimizer

    theirs = _params(getattr(DLOptimizer, name))
    assert _params(getattr(TableOptimizer, name))[: len(theirs)] == theirs
    theirs = _params(deltalake.convert_to_deltalake)
    assert _params(deltakernel.convert_to_deltalake)[: len(theirs)] == theirs


def _warned(fn: Callable[[], Any]) -> tuple[str, Any]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
        except Exception as e:
            return type(e).__name__, str(e) if isinstance(e, TypeError) else ""
    return "ok", sorted({w.category.__name__ for w in caught if w.filename == __file__})


POSITIONAL_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "set_table_name(one)": lambda t, lib: t.alter.set_table_name("n", None),
    "set_table_name(two)": lambda t, lib: t.alter.set_table_name("n", None, lib.PostCommitHookProperties()),
    "set_table_name(three)": lambda t, lib: t.alter.set_table_name("n", None, None, None),
    "set_table_name(clash)": lambda t, lib: t.alter.set_table_name(
        "n", lib.CommitProperties(), commit_properties=lib.CommitProperties()
    ),
    "add_constraint": lambda t, lib: t.alter.add_constraint({"c": "x > 0"}, None),
    "drop_constraint": lambda t, lib: t.alter.drop_constraint("nope", False, None, None),
    "set_table_properties": lambda t, lib: t.alter.set_table_properties({"delta.appendOnly": "false"}, True, None),
    "add_feature": lambda t, lib: t.alter.add_feature(lib.TableFeatures.ChangeDataFeed, True, None),
    "set_table_description": lambda t, lib: t.alter.set_table_description("d", None),
    "set_column_metadata": lambda t, lib: t.alter.set_column_metadata("x", {"k": "v"}, None),
    "add_columns": lambda t, lib: t.alter.add_columns([lib.Field("y", "string")], None),
    "drop_column_not_null(positional ok)": lambda t, lib: t.alter.drop_column_not_null("x", None, None),
    "delete": lambda t, lib: t.delete("x = 1", None, None),
    "update": lambda t, lib: t.update({"x": "x + 1"}, None, "x = 1", None, True, None),
    "merge": lambda t, lib: (
        t.merge(
            pa.table({"x": pa.array([1], pa.int64())}),
            "target.x = source.x",
            "source",
            "target",
            False,
            True,
            None,
            True,
            None,
            None,
            None,
        )
        .when_matched_delete()
        .execute()
    ),
    "repair": lambda t, lib: t.repair(False, None),
    "vacuum(four)": lambda t, lib: t.vacuum(None, True, True, None, None, False, None),
    "vacuum(five)": lambda t, lib: t.vacuum(None, True, True, None, None, False, None, 1),
    "vacuum(clash full)": lambda t, lib: t.vacuum(None, True, True, None, None, True, full=True),
    "vacuum(clash post)": lambda t, lib: t.vacuum(
        None, True, True, lib.PostCommitHookProperties(), post_commithook_properties=lib.PostCommitHookProperties()
    ),
    "compact": lambda t, lib: t.optimize.compact(None, None, None, None, None, None, None, None),
}


@pytest.mark.parametrize("case", sorted(POSITIONAL_CASES))
def test_positional_commit_arguments_warn_or_raise_as_deltalake(tmp_path: Path, case: str) -> None:
    """DeprecationWarning (pointing at the caller) for positional commit options; TypeError for too many or a
    clash with the keyword, with deltalake's message."""
    results = {}
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name)
        results[name] = _warned(lambda t=t, lib=lib: POSITIONAL_CASES[case](t, lib))
    assert results["deltakernel"] == results["deltalake"]


def test_create_takes_deltalakes_legacy_positionals(tmp_path: Path) -> None:
    schema = pa.schema([("x", pa.int64())])
    for name, lib in LIBS.items():
        with pytest.warns(DeprecationWarning, match="positionally to create"):
            lib.DeltaTable.create(
                str(tmp_path / name), schema, "error", None, None, None, {"foo.bar": "1"}, None, None, None, False
            )
        with pytest.raises(TypeError, match="unexpected positional"):
            lib.DeltaTable.create(
                str(tmp_path / f"{name}2"), schema, "error", None, None, None, None, None, None, None, False, 4
            )
        with pytest.raises(deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError):
            lib.DeltaTable.create(str(tmp_path / f"{name}3"), schema, configuration={"delta.notAProperty": "1"})


# ----------------------------------------------------------------------------- 1. post-commit hooks
HOOK_OPS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "set_table_properties": lambda t, lib, p: t.alter.set_table_properties(
        {"delta.appendOnly": "false"}, post_commithook_properties=p
    ),
    "add_constraint": lambda t, lib, p: t.alter.add_constraint({"pos": "x > 0"}, post_commithook_properties=p),
    "set_table_name": lambda t, lib, p: t.alter.set_table_name("n", post_commithook_properties=p),
    "add_columns": lambda t, lib, p: t.alter.add_columns(lib.Field("y", "string"), post_commithook_properties=p),
    "delete": lambda t, lib, p: t.delete("x = 1", post_commithook_properties=p),
    "write": lambda t, lib, p: lib.write_deltalake(
        t, pa.table({"x": pa.array([3], pa.int64())}), mode="append", post_commithook_properties=p
    ),
    "restore": lambda t, lib, p: t.restore(0, post_commithook_properties=p),
}


def _checkpoints(path: Path) -> set[int]:
    return {int(p.name.split(".")[0]) for p in (path / "_delta_log").glob("*.checkpoint*.parquet")}


@pytest.mark.parametrize("create_checkpoint", [True, False])
@pytest.mark.parametrize("op", sorted(HOOK_OPS))
def test_create_checkpoint_is_honoured_by_every_operation(tmp_path: Path, op: str, create_checkpoint: bool) -> None:
    """With `delta.checkpointInterval=1` a checkpoint is due at every commit: written only when the hook allows."""
    seen = {}
    for name, lib in LIBS.items():
        path = tmp_path / name
        t = _table(lib, path, {"delta.checkpointInterval": "1"})
        lib.write_deltalake(t, pa.table({"x": pa.array([5], pa.int64())}), mode="append")  # version 1
        t = lib.DeltaTable(str(path))
        HOOK_OPS[op](t, lib, lib.PostCommitHookProperties(create_checkpoint=create_checkpoint))
        new = lib.DeltaTable(str(path)).version()
        seen[name] = (new, new in _checkpoints(path))
    assert seen["deltakernel"] == seen["deltalake"]
    assert seen["deltakernel"][1] is create_checkpoint


def _aged_table(lib: Any, path: Path) -> Any:
    """Versions 0..3 with a checkpoint at 2, commit files dated two days ago, log retention one day."""
    conf = {"delta.logRetentionDuration": "interval 1 days", "delta.checkpointInterval": "1000"}
    t = _table(lib, path, conf)
    for i in range(3):
        lib.write_deltalake(t, pa.table({"x": pa.array([i], pa.int64())}), mode="append")
        if i == 1:
            lib.DeltaTable(str(path)).create_checkpoint()
    old = time.time() - 2 * 86400
    for i, f in enumerate(sorted((path / "_delta_log").glob("*.json"))):
        os.utime(f, (old + i, old + i))
    return lib.DeltaTable(str(path))


def _commit_files(path: Path) -> list[int]:
    return sorted(int(p.name.split(".")[0]) for p in (path / "_delta_log").glob("0*.json"))


@pytest.mark.parametrize("cleanup", [True, False])
@pytest.mark.parametrize("create_checkpoint", [True, False])
def test_cleanup_expired_logs_is_honoured(tmp_path: Path, create_checkpoint: bool, cleanup: bool) -> None:
    """`cleanup_expired_logs=True`: commits older than the retention and before the newest checkpoint are
    deleted after this commit, checkpoint or not; False: nothing is deleted."""
    seen = {}
    for name, lib in LIBS.items():
        t = _aged_table(lib, tmp_path / name)
        t.alter.set_table_description(
            "d",
            post_commithook_properties=lib.PostCommitHookProperties(
                create_checkpoint=create_checkpoint, cleanup_expired_logs=cleanup
            ),
        )
        seen[name] = _commit_files(tmp_path / name)
    assert seen["deltakernel"] == seen["deltalake"]
    assert seen["deltakernel"] == ([2, 3, 4] if cleanup else [0, 1, 2, 3, 4])


def test_default_cleanup_runs_after_a_checkpoint_only(tmp_path: Path) -> None:
    """Deliberately different: with `cleanup_expired_logs=None` deltalake lists and cleans the log after every
    commit; we clean after writing a checkpoint (delta-spark's rule: one listing per checkpoint, not per commit).
    `cleanup_expired_logs=True` asks for deltalake's behaviour."""
    t = _aged_table(deltakernel, tmp_path / "t")
    t.alter.set_table_description("d")  # no checkpoint due: nothing cleaned
    assert _commit_files(tmp_path / "t") == [0, 1, 2, 3, 4]
    t.alter.set_table_properties({"delta.checkpointInterval": "6"})  # version 5
    t.alter.set_table_description("e")  # version 6: checkpoint due, cleanup follows
    assert 0 not in _commit_files(tmp_path / "t")


# ----------------------------------------------------------------------------- 2. custom commit metadata
CUSTOM = {
    "int": {"a": 1},
    "float": {"a": 1.5},
    "list": {"a": [1, 2]},
    "object": {"a": {"b": 1}},
    "null": {"a": None},
    "bool": {"a": True},
    "nan": {"a": float("nan")},
    "inf": {"a": float("inf")},
    "set": {"a": {1}},
    "bytes": {"a": b"x"},
    "int key": {1: "x"},
    "operation": {"operation": "X"},
    "timestamp": {"timestamp": 5},
    "engineInfo": {"engineInfo": "x"},
    "clientVersion": {"clientVersion": "c"},
    "version": {"version": 3},
    "operationParameters str": {"operationParameters": "x"},
    "readVersion float": {"readVersion": 1.0},
    "readVersion negative": {"readVersion": -1},
    "readVersion ok": {"readVersion": 0},
    "userId int": {"userId": 5},
    "userName int": {"userName": 5},
    "userName none": {"userName": None},
    "userMetadata int": {"userMetadata": 5},
    "userMetadata": {"userMetadata": "m"},
    "isolationLevel bad": {"isolationLevel": "x"},
    "isolationLevel ok": {"isolationLevel": "Serializable"},
    "isBlindAppend str": {"isBlindAppend": "true"},
    "isBlindAppend ok": {"isBlindAppend": False},
    "empty key": {"": "x"},
}


@pytest.mark.parametrize("case", sorted(CUSTOM))
def test_custom_metadata_is_validated_as_deltalake_validates_it(tmp_path: Path, case: str) -> None:
    """The constructor accepts anything; the operation raises ValueError (nothing committed) for what deltalake
    rejects, and stores the same user fields otherwise."""
    out = {}
    for name, lib in LIBS.items():
        path = tmp_path / name
        t = _table(lib, path)
        props = lib.CommitProperties(custom_metadata=CUSTOM[case])
        try:
            t.alter.set_table_description("d", commit_properties=props)
        except ValueError:
            out[name] = ("ValueError", lib.DeltaTable(str(path)).version())
            continue
        info = _last_commit(path)
        user = {k: info.get(k) for k in CUSTOM[case] if k in ("a", "clientVersion", "userMetadata", "")}
        out[name] = ("ok", user)
    assert out["deltakernel"] == out["deltalake"]


def test_custom_metadata_is_checked_before_data_is_written(tmp_path: Path) -> None:
    for name, lib in LIBS.items():
        path = tmp_path / name
        _table(lib, path)
        with pytest.raises(ValueError, match="cannot be set"):
            lib.write_deltalake(
                str(path),
                pa.table({"x": pa.array([9], pa.int64())}),
                mode="append",
                commit_properties=lib.CommitProperties(custom_metadata={"operation": "X"}),
            )
        assert len(list(path.glob("*.parquet"))) == 1


def test_reserved_fields_keep_the_engines_values(tmp_path: Path) -> None:
    """Deliberately different: deltalake writes a user's readVersion / isolationLevel / isBlindAppend / txnId /
    inCommitTimestamp / operationMetrics as given; conflict detection and time travel read them, so ours keeps
    the engine's values. operationParameters are merged as deltalake merges them."""
    path = tmp_path / "t"
    t = _table(deltakernel, path)
    custom = {
        "readVersion": 7,
        "isolationLevel": "SnapshotIsolation",
        "isBlindAppend": True,
        "txnId": "t",
        "operationParameters": {"z": 1, "metadataUpdate": "mine"},
        "clientVersion": "cv",
    }
    t.alter.set_table_description("d", commit_properties=deltakernel.CommitProperties(custom_metadata=custom))
    info = _last_commit(path)
    assert info["readVersion"] == 0 and info["isolationLevel"] != "SnapshotIsolation" and info["txnId"] != "t"
    assert info["isBlindAppend"] is False and info["clientVersion"] == "cv"
    assert info["operationParameters"] == {"z": "1", "metadataUpdate": '{"name":null,"description":"d"}'}


def test_alter_custom_metadata_keyword_merges_over_commit_properties(tmp_path: Path) -> None:
    path = tmp_path / "t"
    t = _table(deltakernel, path)
    t.alter.set_table_properties(
        {"delta.appendOnly": "false"},
        custom_metadata={"b": "2", "a": "3"},
        commit_properties=deltakernel.CommitProperties(custom_metadata={"a": "1"}, max_commit_retries=0),
    )
    info = _last_commit(path)
    assert (info["a"], info["b"]) == ("3", "2")


def test_deltalakes_exception_names_are_importable_and_raised(tmp_path: Path) -> None:
    """`deltakernel.exceptions` has every name of `deltalake.exceptions`; a lost commit race is a
    CommitFailedError in both (ours: its subclass ConcurrentAppendError etc.)."""
    theirs = {n for n in dir(deltalake.exceptions) if not n.startswith("_")}
    assert theirs <= set(dir(deltakernel.exceptions))
    from deltakernel.errors import CommitConflictError

    assert issubclass(CommitConflictError, deltakernel.exceptions.CommitFailedError)
    path = tmp_path / "t"
    t = _table(deltakernel, path)
    stale = DeltaTable(str(path))
    t.alter.add_constraint({"pos": "x > 0"})
    from deltakernel.operations.dml.delete import delete

    write_deltalake(str(path), pa.table({"x": pa.array([4], pa.int64())}), mode="append")
    with pytest.raises(deltakernel.exceptions.CommitFailedError):
        delete(stale._storage, stale.snapshot, "x > 0")  # read the table at the stale version; an append landed
    with pytest.raises(deltakernel.exceptions.TableNotFoundError):
        DeltaTable(str(tmp_path / "missing"))


# ----------------------------------------------------------------------------- 3. add_feature
#: ours lists what the protocol needs beyond deltalake's lists (docs/decisions.md): the legacy writer-2
#: features a writer-7 upgrade must keep, and rowTracking's required domainMetadata
OURS_EXTRA = {"appendOnly", "invariants"}
DEPENDS = {"RowTracking": {"domainMetadata"}}
NOT_WRITABLE = {"IcebergCompatV1"}  # deltakernel refuses: it cannot keep the feature's per-write rules


@pytest.mark.parametrize("allow", [False, True])
@pytest.mark.parametrize("feature", FEATURE_NAMES)
def test_add_feature_matches_deltalake_for_every_member(tmp_path: Path, feature: str, allow: bool) -> None:
    out = {}
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name)
        try:
            t.alter.add_feature(getattr(lib.TableFeatures, feature), allow_protocol_versions_increase=allow)
            out[name] = ("ok", _proto(t))
        except Exception as e:
            assert isinstance(e, deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError)
            out[name] = ("error", None)
    if feature in NOT_WRITABLE and out["deltalake"][0] == "ok":
        assert out["deltakernel"] == ("error", None)
        return
    assert out["deltakernel"][0] == out["deltalake"][0]
    if out["deltalake"][0] == "ok":
        r, w, rf, wf = out["deltalake"][1]  # type: ignore[misc]
        extra = OURS_EXTRA | DEPENDS.get(feature, set())
        assert out["deltakernel"][1] == (r, w, rf, (wf or set()) | extra)


def test_add_feature_of_a_listed_feature_keeps_the_protocol_and_takes_a_list(tmp_path: Path) -> None:
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name)
        feats = [lib.TableFeatures.ChangeDataFeed, lib.TableFeatures.DeletionVectors]
        t.alter.add_feature(feats, allow_protocol_versions_increase=True)
        version = t.version()
        before = _proto(t)
        t.alter.add_feature(lib.TableFeatures.ChangeDataFeed)  # already listed: the protocol stays
        assert _proto(t) == before
        # deliberately different: deltalake commits an "ADD FEATURE" that changes nothing, ours commits nothing
        assert t.version() == (version + 1 if lib is deltalake else version)
        assert {"changeDataFeed", "deletionVectors"} <= set(t.protocol().writer_features or [])


# ----------------------------------------------------------------------------- 3. name / description
NAME_CASES: list[tuple[str, Any]] = [
    ("name", ""),
    ("name", "a"),
    ("name", "a" * 255),
    ("name", "a" * 256),
    ("name", "é" * 255),
    ("name", "é" * 256),
    ("name", " "),
    ("name", None),
    ("name", 5),
    ("description", ""),
    ("description", "d" * 4000),
    ("description", "d" * 4001),
    ("description", None),
    ("description", 5),
]


@pytest.mark.parametrize(("what", "value"), NAME_CASES, ids=lambda v: repr(v)[:12])
def test_table_name_and_description_limits(tmp_path: Path, what: str, value: Any) -> None:
    out = {}
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name)
        try:
            getattr(t.alter, f"set_table_{what}")(value)
            out[name] = ("ok", getattr(t.metadata(), what))
        except TypeError:
            out[name] = ("TypeError", None)
        except Exception as e:
            assert isinstance(e, deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError)
            out[name] = ("DeltaError", "cannot exceed" in str(e))
    assert out["deltakernel"] == out["deltalake"]


# ----------------------------------------------------------------------------- 3. set_table_properties
PROPS = [
    {"delta.enableChangeDataFeed": "true"},
    {"delta.enableChangeDataFeed": "false"},
    {"delta.enableDeletionVectors": "true"},
    {"delta.enableDeletionVectors": "false"},
    {"delta.appendOnly": "true"},
    {"delta.appendOnly": "false"},
    {"delta.checkpointInterval": "5"},
    {"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"},
    {"delta.minWriterVersion": "4"},
    {"delta.enableChangeDataFeed": "yes"},
]


@pytest.mark.parametrize("base", [None, {"delta.enableDeletionVectors": "true"}], ids=["writer2", "dv"])
@pytest.mark.parametrize("props", PROPS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_set_table_properties_bumps_the_protocol_as_deltalake(
    tmp_path: Path, props: dict[str, str], base: dict[str, str] | None
) -> None:
    """The resulting protocol is deltalake's. Compared without `variantType` (deltalake lists it whenever it
    moves a table to reader 3 / writer 7, not a property's doing) and without the legacy appendOnly /
    invariants (deltalake lists them on a table created at writer 7; ours only when needed), checked apart."""
    out = {}
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name, base)
        before = _proto(t)
        try:
            t.alter.set_table_properties(props)
        except Exception as e:
            assert isinstance(e, deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError)
            out[name] = "error"
            continue
        after = _proto(t)
        strip = lambda s: (s or set()) - {"variantType", "appendOnly", "invariants"}
        out[name] = (
            after[:2],
            strip(after[2]),
            strip(after[3]),
            {k: t.metadata().configuration.get(k) for k in props if "Version" not in k},
        )
        assert (
            before[1] < 7
            or after[1] < 7
            or props.get("delta.appendOnly") != "true"
            or "appendOnly" in (after[3] or set())
        )
    assert out["deltakernel"] == out["deltalake"]


def test_set_table_properties_raise_if_not_exists(tmp_path: Path) -> None:
    """Unknown `delta.*` keys raise unless raise_if_not_exists=False, as deltalake. Deliberately different:
    keys outside `delta.` are user properties (Spark's TBLPROPERTIES), which deltalake refuses by default."""
    for name, lib in LIBS.items():
        t = _table(lib, tmp_path / name)
        with pytest.raises(deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError):
            t.alter.set_table_properties({"delta.notAProperty": "1"})
        t.alter.set_table_properties({"delta.notAProperty": "1"}, raise_if_not_exists=False)
        assert t.metadata().configuration["delta.notAProperty"] == "1"
    t = DeltaTable(str(tmp_path / "deltakernel"))
    t.alter.set_table_properties({"team.owner": "etl"})
    assert t.metadata().configuration["team.owner"] == "etl"


def test_a_racing_metadata_change_fails_with_commit_failed_error(tmp_path: Path) -> None:
    """deltalake alters the loaded version and a concurrent metadata change makes it fail with
    CommitFailedError. Ours re-reads the latest version first (as delta-spark's ALTER TABLE does, so a stale
    handle is no error and no update is lost); a change landing between that read and the commit fails the same
    way, with CommitFailedError (MetadataChangedError)."""
    from dataclasses import replace

    from deltakernel.errors import MetadataChangedError

    for name, lib in LIBS.items():
        path = tmp_path / name
        stale = _table(lib, path)
        lib.DeltaTable(str(path)).alter.set_table_properties({"delta.appendOnly": "false"})
        if name == "deltalake":
            with pytest.raises(deltalake.exceptions.CommitFailedError):
                stale.alter.set_table_description("late")
            continue
        stale.alter.set_table_description("late")  # re-read first: lands on top of the concurrent change
        assert stale.metadata().description == "late"
        assert stale.metadata().configuration["delta.appendOnly"] == "false"
        alterer = stale.alter
        txn = alterer._txn("UPDATE TABLE METADATA", {})
        txn.update_metadata(replace(stale.snapshot.metadata, description="racing"))
        lib.DeltaTable(str(path)).alter.set_table_name("concurrent")
        with pytest.raises(deltakernel.exceptions.CommitFailedError) as e:
            alterer._commit(txn)
        assert isinstance(e.value, MetadataChangedError)


@pytest.mark.parametrize("create_checkpoint", [True, False])
def test_our_alterations_honour_the_hook_too(tmp_path: Path, create_checkpoint: bool) -> None:
    """drop_feature and cluster_by (ours; deltalake has neither) take the same hook options."""
    hook = deltakernel.PostCommitHookProperties(create_checkpoint=create_checkpoint)
    path = tmp_path / "t"
    t = _table(deltakernel, path, {"delta.checkpointInterval": "1", "delta.enableChangeDataFeed": "true"})
    t.alter.drop_feature("changeDataFeed", allow_protocol_versions_increase=True, post_commithook_properties=hook)
    assert (t.version() in _checkpoints(path)) is create_checkpoint
    t.alter.cluster_by(["x"], post_commithook_properties=hook)
    assert (t.version() in _checkpoints(path)) is create_checkpoint


# ----------------------------------------------------------------------------- create_write_transaction
def _external_file(path: Path, part: str, value: int) -> Any:
    """A Parquet file written outside the library, described by deltalake's AddAction."""
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    (path / f"p={part}").mkdir(exist_ok=True)
    f = path / f"p={part}" / f"ext-{value}.parquet"
    pq.write_table(pa.table({"x": pa.array([value], pa.int64())}), f)
    stats = json.dumps({"numRecords": 1, "minValues": {"x": value}, "maxValues": {"x": value}, "nullCount": {"x": 0}})
    return AddAction(f"p={part}/{f.name}", f.stat().st_size, {"p": part}, int(time.time() * 1000), True, stats)


def test_create_write_transaction_appends_external_files(tmp_path: Path) -> None:
    schema = pa.schema([("x", pa.int64()), ("p", pa.string())])
    out = {}
    for name, lib in LIBS.items():
        path = tmp_path / name
        lib.write_deltalake(str(path), pa.table({"x": pa.array([1], pa.int64()), "p": ["a"]}), partition_by=["p"])
        t = lib.DeltaTable(str(path))
        t.create_write_transaction([_external_file(path, "b", 2)], "append", schema, partition_by=["p"])
        t = lib.DeltaTable(str(path))
        info = _last_commit(path)
        out[name] = (
            t.version(),
            sorted(t.to_pyarrow_table().to_pylist(), key=str),
            info["operation"],
            info["operationParameters"],
        )
    assert out["deltakernel"] == out["deltalake"]
    assert deltalake.DeltaTable(str(tmp_path / "deltakernel")).to_pyarrow_table().num_rows == 2


def test_create_write_transaction_overwrite_replaces_the_filtered_partitions(tmp_path: Path) -> None:
    """Deliberately different: deltalake 1.6.6's overwrite only adds the files (the old ones stay live); ours
    removes the live files of `partition_filters` (all without) first, as an overwrite does."""
    path = tmp_path / "t"
    data = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "p": ["a", "b", "b"]})
    write_deltalake(str(path), data, partition_by=["p"])
    t = DeltaTable(str(path))
    schema = pa.schema([("x", pa.int64()), ("p", pa.string())])
    t.create_write_transaction([_external_file(path, "b", 9)], "overwrite", schema, partition_filters=[("p", "=", "b")])
    assert t.version() == 1 and _last_commit(path)["operationParameters"]["mode"] == "Overwrite"
    assert sorted(t.to_pyarrow_table().to_pylist(), key=str) == [{"x": 1, "p": "a"}, {"x": 9, "p": "b"}]
    with pytest.raises(deltakernel.DeltaError, match="mode"):
        t.create_write_transaction([], "error", schema)
    with pytest.warns(DeprecationWarning):
        t.create_write_transaction([], "append", schema, None, None, None)
