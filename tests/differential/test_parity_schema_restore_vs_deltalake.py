"""deltalake 1.6.6 parity of the schema classes, time travel / restore by timestamp and VACUUM's checks (issue 24).

Same calls on deltalake and on deltakernel, compared. Deliberate differences (docs/decisions.md) are asserted
as ours: naive timestamp strings are read as UTC (deltalake refuses them), `to_arrow()` returns pyarrow objects
(deltalake: arro3), a version whose commits were cleaned up raises LogTruncatedError (deltalake:
TableNotFoundError), fractional `retention_hours` are accepted.
"""

from __future__ import annotations

import datetime as dt
import glob
import inspect
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltakernel
import deltakernel.schema as K
from deltakernel.errors import LogTruncatedError, VersionNotFoundError

deltalake = pytest.importorskip("deltalake")
import deltalake.schema as S

LIBS = {"deltalake": deltalake, "deltakernel": deltakernel}


def _outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", result) or ("error", the exception)."""
    try:
        return "ok", fn()
    except Exception as e:
        return "error", e


def _kind(e: BaseException) -> str:
    """What a deltalake user catches: TypeError, ValueError or (deltalake's) DeltaError."""
    return "TypeError" if isinstance(e, TypeError) else "ValueError" if isinstance(e, ValueError) else "DeltaError"


def assert_same(ours: tuple[str, Any], theirs: tuple[str, Any]) -> None:
    """Same result; or both failed and ours is catchable as deltalake's exception is (ours may be a subclass of
    more: VacuumRetentionError is a DeltaError and a ValueError)."""
    if theirs[0] == "ok" or ours[0] == "ok":
        assert ours == theirs
        return
    catch = {"TypeError": TypeError, "ValueError": ValueError, "DeltaError": deltakernel.DeltaError}
    assert isinstance(ours[1], catch[_kind(theirs[1])]), (ours[1], theirs[1])


# ----------------------------------------------------------------------------- 4. schema classes
@pytest.mark.parametrize("cls", ["ArrayType", "MapType", "Field", "StructType", "PrimitiveType", "Schema"])
def test_schema_constructor_signatures(cls: str) -> None:
    theirs = inspect.signature(getattr(S, cls))
    ours = inspect.signature(getattr(K, cls))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    public = {n for n in dir(getattr(S, cls)) if not n.startswith("_")}
    assert public <= {n for n in dir(getattr(K, cls)) if not n.startswith("_")}


SCHEMA_CASES: dict[str, Callable[[Any], Any]] = {
    "array positional": lambda m: m.ArrayType(m.PrimitiveType("integer"), False).to_json(),
    "array keywords": lambda m: m.ArrayType(element_type="integer", contains_null=False).to_json(),
    "map positional": lambda m: m.MapType("string", "long", False).to_json(),
    "map keywords": lambda m: m.MapType(key_type="integer", value_type="string", value_contains_null=False).to_json(),
    "field positional": lambda m: m.Field("a", "string", False, {"k": "v"}).to_json(),
    "field keywords": lambda m: m.Field(name="a", type="integer", nullable=False, metadata=None).to_json(),
    "field metadata text and ints": lambda m: m.Field("a", "integer", True, {"s": "true", "i": 1}).metadata,
    "field from_json": lambda m: (
        m.Field.from_json('{"name":"a","type":"integer","nullable":false,"metadata":{"k":{"x":1}}}').metadata
    ),
    "struct": lambda m: m.StructType([m.Field("a", "integer")]).to_json(),
    "schema": lambda m: m.Schema([m.Field("a", "integer"), m.Field("b", m.ArrayType("string"))]).to_json(),
    "schema from_arrow": lambda m: m.Schema.from_arrow(
        pa.schema([pa.field("a", pa.int8(), nullable=False), pa.field("t", pa.timestamp("us"))])
    ).to_json(),
    "schema from_arrow tz": lambda m: m.Schema.from_arrow(
        pa.schema([pa.field("t", pa.timestamp("us", "UTC"))])
    ).to_json(),
    "schema from_json": lambda m: m.Schema.from_json('{"type":"struct","fields":[]}').fields,
    "map from_arrow": lambda m: m.MapType.from_arrow(pa.map_(pa.string(), pa.int64())).to_json(),
    "array from_arrow": lambda m: m.ArrayType.from_arrow(pa.list_(pa.int32())).to_json(),
    "array from_json": lambda m: (
        m.ArrayType.from_json('{"type":"array","elementType":"integer","containsNull":false}').contains_null
    ),
    "primitive from_arrow": lambda m: m.PrimitiveType.from_arrow(pa.int16()).to_json(),
    "primitive from_json": lambda m: m.PrimitiveType.from_json('"integer"').type,
    "primitive decimal": lambda m: m.PrimitiveType("decimal(10,2)").to_json(),
    "primitive bad": lambda m: m.PrimitiveType("foo"),
    "primitive decimal too wide": lambda m: m.PrimitiveType("decimal(40,2)"),
    "reprs": lambda m: [
        repr(m.PrimitiveType("integer")),
        repr(m.ArrayType("integer", False)),
        repr(m.MapType("integer", "string", False)),
        repr(m.Field("a", "integer", False, {"x": "y"})),
        repr(m.StructType([m.Field("a", "integer")])),
        repr(m.Schema([m.Field("a", "integer")])),
    ],
    "equality": lambda m: (
        m.PrimitiveType("integer") == m.PrimitiveType("integer"),
        m.Field("a", "integer") == m.Field("a", "integer", True),
        m.StructType([m.Field("a", "integer")]) == m.StructType([m.Field("a", "integer")]),
    ),
    "type names": lambda m: (m.Field("a", "integer").type.type, m.StructType([]).type, m.ArrayType("long").type),
    "invariants": lambda m: (
        m.Schema(
            [m.Field("a", "integer", True, {"delta.invariants": json.dumps({"expression": {"expression": "a > 0"}})})]
        ).invariants
    ),
    "fields is a list": lambda m: type(m.StructType([m.Field("a", "integer")]).fields).__name__,
    "element not a type": lambda m: m.ArrayType(5),
    "field name not a str": lambda m: m.Field(5, "integer"),
    "struct of non-fields": lambda m: m.StructType([5]),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_CASES))
def test_schema_classes_behave_as_deltalakes(case: str) -> None:
    assert_same(_outcome(lambda: SCHEMA_CASES[case](K)), _outcome(lambda: SCHEMA_CASES[case](S)))


def test_field_metadata_keeps_its_json_types() -> None:
    """Deliberately different (issue 22, docs/decisions.md): deltalake's `Field(...)` stores non-string,
    non-integer metadata values as JSON text; ours keeps them as given (they reach the log as JSON values)."""
    meta = {"k": {"x": 1}, "b": True, "f": 1.5, "i": 1, "s": "t"}
    assert K.Field("a", "integer", True, meta).metadata == meta
    assert S.Field("a", "integer", True, meta).metadata == {"k": '{"x":1}', "b": "true", "f": "1.5", "i": 1, "s": "t"}


def test_to_arrow_gives_the_same_arrow_types_as_pyarrow_objects() -> None:
    """deltalake returns arro3 objects; ours pyarrow ones (both speak the Arrow C interface): same types."""
    schema = [("a", "integer"), ("b", "timestamp"), ("c", "string")]
    ours = K.Schema([K.Field(n, t) for n, t in schema]).to_arrow()
    theirs = pa.schema(S.Schema([S.Field(n, t) for n, t in schema]).to_arrow())
    assert ours == theirs
    assert K.Schema([K.Field("c", "string")]).to_arrow(as_large_types=True) == pa.schema(
        S.Schema([S.Field("c", "string")]).to_arrow(as_large_types=True)
    )
    assert pa.field(K.Field("a", "integer", False, {"k": "v"}).to_arrow()) == pa.field(
        S.Field("a", "integer", False, {"k": "v"}).to_arrow()
    )


def test_a_schema_built_with_deltalakes_signatures_creates_the_same_table(tmp_path: Path) -> None:
    for name, m in (("deltalake", S), ("deltakernel", K)):
        schema = m.Schema(
            [
                m.Field("id", "long", False),
                m.Field("tags", m.ArrayType("string", False)),
                m.Field("attrs", m.MapType("string", "integer", True), True, {"comment": "c"}),
            ]
        )
        LIBS[name].DeltaTable.create(str(tmp_path / name), schema)
    theirs = deltalake.DeltaTable(str(tmp_path / "deltalake")).schema().to_json()
    assert deltakernel.DeltaTable(str(tmp_path / "deltakernel")).schema().to_json() == theirs
    assert deltalake.DeltaTable(str(tmp_path / "deltakernel")).schema().to_json() == theirs


# ----------------------------------------------------------------------------- 5. time travel by timestamp
DAYS = [dt.datetime(2024, 1, 1 + i, tzinfo=dt.timezone.utc) for i in range(4)]


def _dated_table(lib: Any, path: Path) -> str:
    """Versions 0..3 committed (file time and commitInfo) on 2024-01-01 .. 2024-01-04, midnight UTC."""
    for i in range(4):
        lib.write_deltalake(str(path), pa.table({"x": pa.array([i], pa.int64())}), mode="append")
    for i, day in enumerate(DAYS):
        f = path / "_delta_log" / f"{i:020d}.json"
        actions = [json.loads(line) for line in f.read_text().splitlines()]
        for a in actions:
            if "commitInfo" in a:
                a["commitInfo"]["timestamp"] = int(day.timestamp() * 1000)
        f.write_text("".join(json.dumps(a) + "\n" for a in actions))
        os.utime(f, (day.timestamp(), day.timestamp()))
    for crc in glob.glob(str(path / "_delta_log" / "*.crc")):
        os.remove(crc)
    return str(path)


TARGETS: list[Any] = [
    "2024-01-02T00:00:00Z",
    "2024-01-02T12:00:00Z",
    "2024-01-02T12:00:00+02:00",
    "2024-01-03T01:00:00+02:00",
    "2023-12-31T00:00:00Z",
    "2030-01-01T00:00:00Z",
    "garbage",
    dt.datetime(2024, 1, 2, 12),
    dt.datetime(2024, 1, 2, 12, tzinfo=dt.timezone.utc),
    dt.datetime(2024, 1, 3, tzinfo=dt.timezone(dt.timedelta(hours=5))),
    2,
    9,
    -1,
]


def _travel(lib: Any, path: str, target: Any, op: str) -> tuple[str, Any]:
    def run() -> Any:
        t = lib.DeltaTable(path)
        if op == "load":
            t.load_as_version(target)
            return t.version(), t.to_pyarrow_table().num_rows
        metrics = t.restore(target)
        return t.version(), t.to_pyarrow_table().num_rows, metrics["numRemovedFile"]

    return _outcome(run)


@pytest.mark.parametrize("op", ["load", "restore"])
@pytest.mark.parametrize("target", TARGETS, ids=repr)
def test_load_as_version_and_restore_choose_deltalakes_version(tmp_path: Path, target: Any, op: str) -> None:
    """RFC 3339 strings with any offset, aware datetimes and naive datetimes (UTC); a time before the first
    commit loads / restores the first commit; after the last, the last (restore: an error, nothing to undo)."""
    out = {name: _travel(lib, _dated_table(lib, tmp_path / name), target, op) for name, lib in LIBS.items()}
    if op == "restore" and isinstance(target, dt.datetime) and target.tzinfo is None:
        assert out["deltakernel"] == ("ok", (4, 2, 2))  # deltalake 1.6.6 fails to format a naive datetime
        return
    assert_same(out["deltakernel"], out["deltalake"])


@pytest.mark.parametrize("target", ["2024-01-02T12:00:00", "2024-01-02", "2024-01-02 12:00:00"])
def test_naive_timestamp_strings_are_utc(tmp_path: Path, target: str) -> None:
    """Deliberately more lenient than deltalake (ValueError): an offset-less string is UTC, as delta-spark
    reads `TIMESTAMP AS OF '2024-01-02'` in a UTC session; an unparsable one is a ValueError in both."""
    path = _dated_table(deltakernel, tmp_path / "t")
    t = deltakernel.DeltaTable(path)
    t.load_as_version(target)
    assert t.version() == 1
    with pytest.raises(ValueError):
        t.load_as_version("2024-13-45T00:00:00Z")


def _expire(path: str) -> None:
    """Checkpoint version 2 and delete commits 0 and 1, as log cleanup does."""
    t = deltakernel.DeltaTable(path)
    t.load_as_version(2)
    t.create_checkpoint()
    for v in (0, 1):
        os.remove(Path(path) / "_delta_log" / f"{v:020d}.json")


@pytest.mark.parametrize("op", ["load", "restore"])
@pytest.mark.parametrize(
    "target",
    [2, 3, "2024-01-01T12:00:00Z", "2024-01-02T12:00:00Z", "2024-01-03T12:00:00Z", "2023-01-01T00:00:00Z"],
    ids=repr,
)
def test_time_travel_over_expired_logs(tmp_path: Path, target: Any, op: str) -> None:
    """Commits before a checkpoint cleaned up: a time before the earliest commit left loads that commit."""
    out = {}
    for name, lib in LIBS.items():
        path = _dated_table(lib, tmp_path / name)
        _expire(path)
        out[name] = _travel(lib, path, target, op)
    assert_same(out["deltakernel"], out["deltalake"])


@pytest.mark.parametrize("op", ["load", "restore"])
def test_a_cleaned_up_version_is_an_error_in_both(tmp_path: Path, op: str) -> None:
    """deltalake raises TableNotFoundError ("No files in log segment"); ours the more precise LogTruncatedError
    (a VersionNotFoundError and a DeltaProtocolError): both are DeltaErrors."""
    for name, lib in LIBS.items():
        path = _dated_table(lib, tmp_path / name)
        _expire(path)
        result = _travel(lib, path, 0, op)
        assert result[0] == "error" and _kind(result[1]) == "DeltaError"
        assert isinstance(result[1], deltalake.exceptions.DeltaError if name == "deltalake" else deltakernel.DeltaError)
    path = str(tmp_path / "deltakernel")
    with pytest.raises(LogTruncatedError):
        deltakernel.DeltaTable(path).load_as_version(1)
    assert issubclass(LogTruncatedError, VersionNotFoundError)


def test_spark_style_resolution_still_refuses_times_before_the_log(tmp_path: Path) -> None:
    """The kernel's default (used by delta-spark's `timestampAsOf` / `restoreToTimestamp`) stays an error."""
    from deltakernel.kernel.snapshot import Snapshot

    path = _dated_table(deltakernel, tmp_path / "t")
    t = deltakernel.DeltaTable(path)
    with pytest.raises(VersionNotFoundError, match="no commit at or before"):
        Snapshot.load_at(t.snapshot.storage, "2023-12-31T00:00:00Z")
    assert Snapshot.load_at(t.snapshot.storage, "2023-12-31T00:00:00Z", clamp_to_earliest=True).version == 0
    with pytest.raises(VersionNotFoundError, match="no commit at or before"):
        t.load_as_version("2023-12-31T00:00:00Z", strict=True)  # what the CLI and Spark's timestampAsOf want
    assert t.version() == 3


# ----------------------------------------------------------------------------- 6. vacuum
VACUUM_CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "negative": {"retention_hours": -1},
    "negative unenforced": {"retention_hours": -1, "enforce_retention_duration": False},
    "zero": {"retention_hours": 0},
    "one": {"retention_hours": 1},
    "168": {"retention_hours": 168},
    "200": {"retention_hours": 200},
    "string": {"retention_hours": "5"},
    "zero unenforced": {"retention_hours": 0, "enforce_retention_duration": False},
    "zero unenforced real": {"retention_hours": 0, "enforce_retention_duration": False, "dry_run": False},
    "full": {"retention_hours": 0, "enforce_retention_duration": False, "full": True},
    "keep_versions": {"retention_hours": 0, "enforce_retention_duration": False, "keep_versions": [0]},
    "keep missing version": {"retention_hours": 0, "enforce_retention_duration": False, "keep_versions": [7]},
}


def _overwritten(lib: Any, path: Path, conf: dict[str, str] | None = None) -> str:
    lib.write_deltalake(str(path), pa.table({"x": pa.array([1], pa.int64())}), configuration=conf)
    lib.write_deltalake(str(path), pa.table({"x": pa.array([2], pa.int64())}), mode="overwrite")
    return str(path)


@pytest.mark.parametrize("case", sorted(VACUUM_CASES))
def test_vacuum_checks_and_results_match_deltalake(tmp_path: Path, case: str) -> None:
    """Same exception types (ValueError for a negative retention, DeltaError when below the table's retention
    and enforced), same files listed, same versions committed."""
    out = {}
    for name, lib in LIBS.items():
        path = _overwritten(lib, tmp_path / name)

        def run(lib: Any = lib, path: str = path) -> Any:
            files = lib.DeltaTable(path).vacuum(**VACUUM_CASES[case])
            return sorted(Path(f).name[:10] for f in files), lib.DeltaTable(path).version()

        out[name] = _outcome(run)
    assert_same(out["deltakernel"], out["deltalake"])


def test_vacuum_messages_start_with_deltalakes(tmp_path: Path) -> None:
    """deltalake's texts (users match on them), followed by ours saying how to override."""
    path = _overwritten(deltakernel, tmp_path / "t", {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t = deltakernel.DeltaTable(path)
    with pytest.raises(ValueError, match=r"^The retention periods should be positive\."):
        t.vacuum(retention_hours=-1)
    with pytest.raises(
        deltakernel.DeltaError,
        match=r"^Invalid retention period, minimum retention for vacuum is "
        r"configured to be greater than 1 hours, got 0 hours\..*enforce_retention_duration=False",
    ):
        t.vacuum(retention_hours=0)
    assert t.vacuum(retention_hours=1) == []
    d = _overwritten(deltalake, tmp_path / "dl", {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    with pytest.raises(deltalake.exceptions.DeltaError, match="greater than 1 hours, got 0 hours"):
        deltalake.DeltaTable(d).vacuum(retention_hours=0)


def test_fractional_retention_hours_are_accepted(tmp_path: Path) -> None:
    """Deliberately more lenient: deltalake's binding takes whole hours only (TypeError for a float)."""
    path = _overwritten(deltakernel, tmp_path / "t")
    time.sleep(0.1)  # the removed file's tombstone is older than 1e-6 hours (3.6 ms)
    assert len(deltakernel.DeltaTable(path).vacuum(retention_hours=1e-6, enforce_retention_duration=False)) == 1
