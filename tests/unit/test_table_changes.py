"""Change data feed (kernel/table_changes.py), differential against deltalake 1.6.6's load_cdf.

Rows are compared as multisets with columns matched by name: deltalake moves partition columns to the
end and returns string_view / uint64 where deltakernel returns string / int64. Known, deliberate
differences (each has its own test): deltalake uses the loaded (latest) schema even when
`ending_version` is older, where we use the end version's schema; deltalake reports epoch 0 as
`_commit_timestamp` of a commit without commitInfo, we use the commit file's modification time (Spark);
deltalake lets a range start at a version whose metadata has CDF off, we raise (Spark).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

deltalake = pytest.importorskip("deltalake")

import deltakernel
from deltakernel.errors import DeltaError, VersionNotFoundError
from deltakernel.kernel.table_changes import (
    COMMIT_TIMESTAMP_TYPE,
    ChangeDataFeedNotEnabledError,
    TableChanges,
    parse_sql_predicate,
)
from deltakernel.storage import storage_for_uri

CORPUS = Path("/work/shared/conformance/tables")
CDF = {"delta.enableChangeDataFeed": "true"}


# ----------------------------------------------------------------------------- helpers
def _norm(t: Any) -> pa.Table:
    t = pa.table(t)
    fields = []
    for f in t.schema:
        typ = f.type
        if typ in (pa.string_view(), pa.large_string()):
            typ = pa.string()
        if f.name == "_commit_version":
            typ = pa.int64()
        fields.append(pa.field(f.name, typ))
    return t.cast(pa.schema(fields))


def _rows(t: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    return sorted(tuple(repr(r[n]) for n in names) for r in t.select(names).to_pylist())


def ours(path: str | Path, **kw: Any) -> pa.Table:
    return deltakernel.DeltaTable(str(path)).load_cdf(**kw).read_all()


def theirs(path: str | Path, **kw: Any) -> pa.Table:
    return _norm(deltalake.DeltaTable(str(path)).load_cdf(**kw).read_all())


def assert_same(path: str | Path, ref_path: str | Path | None = None, ignore_ts: bool = False, **kw: Any) -> pa.Table:
    """Our feed of `path` equals deltalake's feed of `ref_path` (default: the same table)."""
    a = theirs(ref_path or path, **kw)
    b = ours(path, **kw)
    names = list(b.schema.names)
    assert set(names) <= set(a.schema.names), (a.schema.names, names)
    for extra in set(a.schema.names) - set(names):  # newer columns deltalake adds (latest schema)
        assert a.column(extra).null_count == a.num_rows, extra
    if ignore_ts and "_commit_timestamp" in names:
        names.remove("_commit_timestamp")
    assert _rows(a, names) == _rows(b, names)
    return b


# ----------------------------------------------------------------------------- scenario tables
def _build(path: Path, partitioned: bool) -> Path:
    w = deltalake.write_deltalake
    kw = {"partition_by": ["p"]} if partitioned else {}
    data = pa.table({"x": pa.array([1, 2, 3, 4, 5], pa.int64()), "p": ["a", "a", "b", "b", "c"],
                     "s": ["u", "v", "w", "x", "y"]})
    w(str(path), data, configuration=CDF, **kw)  # v0
    w(str(path), pa.table({"x": pa.array([6, 7], pa.int64()), "p": ["a", "c"], "s": ["z", None]}),
      mode="append")  # v1
    deltalake.DeltaTable(str(path)).delete("x > 5")  # v2
    deltalake.DeltaTable(str(path)).update({"s": "'upd'"}, predicate="x <= 2")  # v3
    src = pa.table({"x": pa.array([2, 3, 10], pa.int64()), "p": ["a", "b", "c"], "s": ["m1", "m2", "m3"]})
    (deltalake.DeltaTable(str(path)).merge(src, "t.x = s.x", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())  # v4
    deltalake.DeltaTable(str(path)).delete()  # v5
    w(str(path), pa.table({"x": pa.array([100, 200], pa.int64()), "p": ["a", "d"], "s": ["o", "o"]}),
      mode="overwrite")  # v6
    w(str(path), pa.table({"x": pa.array([300], pa.int64()), "p": ["d"], "s": ["n"], "extra": [1.5]}),
      mode="append", schema_mode="merge")  # v7: new column
    deltalake.DeltaTable(str(path)).delete("x = 100")  # v8
    return path


@pytest.fixture(scope="module", params=[True, False], ids=["partitioned", "unpartitioned"])
def scenario(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("cdf") / "t", request.param)


def test_full_range_matches_deltalake(scenario: Path) -> None:
    out = assert_same(scenario)
    assert out.num_rows == 28
    assert out.schema.names[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    assert out.schema.field("_commit_version").type == pa.int64()
    assert out.schema.field("_commit_timestamp").type == COMMIT_TIMESTAMP_TYPE
    kinds = set(out.column("_change_type").to_pylist())
    assert kinds == {"insert", "delete", "update_preimage", "update_postimage"}


@pytest.mark.parametrize("start", range(9))
def test_sub_ranges_match_deltalake(scenario: Path, start: int) -> None:
    assert_same(scenario, starting_version=start)
    assert_same(scenario, starting_version=start, ending_version=start)


def test_columns_and_predicates(scenario: Path) -> None:
    out = assert_same(scenario, columns=["s", "_change_type", "x"])
    assert out.schema.names == ["s", "_change_type", "x"]
    assert_same(scenario, predicate="x > 2 and _change_type <> 'insert'")
    assert_same(scenario, predicate="p = 'a' or s is null")
    assert_same(scenario, predicate="x in (1, 2, 3) and not s = 'upd'", columns=["x"])
    assert_same(scenario, predicate="x between 2 and 4 and _commit_version >= 3", columns=["p", "x"])


def test_end_version_schema(scenario: Path) -> None:
    """deltalake returns the latest schema (with `extra`) for an old range; we use the end version's."""
    out = ours(scenario, starting_version=0, ending_version=1)
    assert "extra" not in out.schema.names
    assert "extra" in theirs(scenario, starting_version=0, ending_version=1).schema.names


def test_ending_version_past_latest_is_clamped(scenario: Path) -> None:
    assert_same(scenario, starting_version=6, ending_version=50)


def test_out_of_range(scenario: Path) -> None:
    with pytest.raises(VersionNotFoundError):
        ours(scenario, starting_version=9)
    with pytest.raises(deltalake.exceptions.DeltaError):
        theirs(scenario, starting_version=9)
    out = ours(scenario, starting_version=9, allow_out_of_range=True)
    assert out.num_rows == 0 and out.schema.names[-1] == "_commit_timestamp"
    assert theirs(scenario, starting_version=9, allow_out_of_range=True).num_rows == 0
    with pytest.raises(DeltaError):
        ours(scenario, starting_version=3, ending_version=2)
    with pytest.raises(DeltaError):
        ours(scenario, starting_version=-1)


def test_unknown_column_is_an_error(scenario: Path) -> None:
    with pytest.raises(DeltaError):
        ours(scenario, columns=["nope"])
    with pytest.raises(DeltaError):
        ours(scenario, predicate="nope = 1")


# ----------------------------------------------------------------------------- CDF on / off
@pytest.fixture(scope="module")
def toggled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """v0,v1 without CDF; v2 turns it on; v3 append; v4 turns it off; v5 append."""
    p = tmp_path_factory.mktemp("toggle") / "t"
    w = deltalake.write_deltalake
    w(str(p), pa.table({"x": [1, 2, 3]}))
    w(str(p), pa.table({"x": [4]}), mode="append")
    deltalake.DeltaTable(str(p)).alter.set_table_properties(CDF)
    w(str(p), pa.table({"x": [5]}), mode="append")
    deltalake.DeltaTable(str(p)).alter.set_table_properties({"delta.enableChangeDataFeed": "false"})
    w(str(p), pa.table({"x": [6]}), mode="append")
    return p


@pytest.mark.parametrize("kw", [{}, {"starting_version": 2}, {"starting_version": 3, "ending_version": 4},
                                {"starting_version": 4}])
def test_cdf_disabled_raises_like_deltalake(toggled: Path, kw: dict[str, Any]) -> None:
    with pytest.raises(ChangeDataFeedNotEnabledError):
        ours(toggled, **kw)
    with pytest.raises(deltalake.exceptions.DeltaError):
        theirs(toggled, **kw)


def test_cdf_enabled_window(toggled: Path) -> None:
    out = assert_same(toggled, starting_version=2, ending_version=3)
    assert out.column("_commit_version").to_pylist() == [3]


@pytest.mark.parametrize("kw", [{"starting_version": 5}, {"starting_version": 1, "ending_version": 3}])
def test_start_version_without_cdf_raises(toggled: Path, kw: dict[str, Any]) -> None:
    """deltalake 1.6.6 only checks metaData actions inside the range (and version 0), so it returns
    rows of v1 / v5 written with CDF off; Spark checks the metadata in effect at the start too: we raise."""
    assert theirs(toggled, **kw).num_rows >= 1
    with pytest.raises(ChangeDataFeedNotEnabledError):
        ours(toggled, **kw)


# ----------------------------------------------------------------------------- timestamps
def _edit_commit(path: Path, version: int, fn: Any) -> None:
    f = path / "_delta_log" / f"{version:020d}.json"
    lines = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
    f.write_text("\n".join(json.dumps(x) for x in fn(lines)) + "\n")


def test_commit_timestamp_sources(tmp_path: Path) -> None:
    p = tmp_path / "t"
    deltalake.write_deltalake(str(p), pa.table({"x": [1]}), configuration=CDF)
    deltalake.write_deltalake(str(p), pa.table({"x": [2]}), mode="append")
    deltalake.write_deltalake(str(p), pa.table({"x": [3]}), mode="append")

    def set_ts(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for a in lines:
            if "commitInfo" in a:
                a["commitInfo"]["timestamp"] = 1_000_000_000_123
        return lines

    _edit_commit(p, 1, set_ts)
    _edit_commit(p, 2, lambda lines: [a for a in lines if "commitInfo" not in a])
    os.utime(p / "_delta_log" / f"{2:020d}.json", (1_500_000_000, 1_500_000_000))
    out = ours(p)
    ts = {r["_commit_version"]: r["_commit_timestamp"] for r in out.to_pylist()}
    assert ts[1] == pa.scalar(1_000_000_000_123, pa.int64()).cast(COMMIT_TIMESTAMP_TYPE).as_py()
    assert ts[2] == pa.scalar(1_500_000_000_000, pa.int64()).cast(COMMIT_TIMESTAMP_TYPE).as_py()
    ref = {r["_commit_version"]: r["_commit_timestamp"] for r in theirs(p).to_pylist()}
    assert ref[1] == ts[1] and ref[0] == ts[0]  # deltalake: commitInfo.timestamp, epoch 0 without one


def test_in_commit_timestamp_preferred(tmp_path: Path) -> None:
    p = tmp_path / "t"
    deltalake.write_deltalake(str(p), pa.table({"x": [1]}), configuration=CDF)

    def ict(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for a in lines:
            if "metaData" in a:
                a["metaData"]["configuration"]["delta.enableInCommitTimestamps"] = "true"
            if "commitInfo" in a:
                a["commitInfo"]["inCommitTimestamp"] = 1_234_567_890_000
        return lines

    _edit_commit(p, 0, ict)
    changes = TableChanges(storage_for_uri(str(p)), 0)
    assert changes.tasks()[0].timestamp_ms == 1_234_567_890_000


# ----------------------------------------------------------------------------- SQL predicates
def test_sql_predicate_parser() -> None:
    schema = pa.schema([("a", pa.int64()), ("b", pa.string()), ("d", pa.date32()), ("My Col", pa.float64())])
    t = pa.table({"a": [1, 2, 3, None], "b": ["x", "it's", None, "z"],
                  "d": pa.array([0, 19000, 19714, None], pa.int32()).cast(pa.date32()),
                  "My Col": [0.5, 1.5, -2.0, None]})

    def rows(sql: str) -> list[int | None]:
        return t.filter(parse_sql_predicate(sql, schema)).column("a").to_pylist()

    assert rows("a >= 2") == [2, 3]
    assert rows("A = 1 OR b = 'it''s'") == [1, 2]
    assert rows("b IS NULL") == [3]
    assert rows("b is not null and not a = 1") == [2]
    assert rows("a not in (1, 3)") == [2]
    assert rows("d > '2022-01-08'") == [3]
    assert rows("d = DATE '2022-01-08'") == [2]
    assert rows("`My Col` < -1") == [3]
    assert rows("(a = 1 or a = 3) and \"My Col\" > 0") == [1]
    assert rows("a between 2 and 3") == [2, 3]
    for bad in ("a >", "a = 1 and", "zzz = 1", "a = = 1", "(a = 1"):
        with pytest.raises(DeltaError):
            parse_sql_predicate(bad, schema)
    assert isinstance(parse_sql_predicate("a = 1", schema), pc.Expression)


# ----------------------------------------------------------------------------- conformance corpus
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="/work/shared conformance corpus not present")

READABLE_BY_DELTALAKE = [
    "dat/cdf/delta",
    "delta-rs/cdf-table",
    "delta-rs/cdf-table-non-partitioned",
    "delta-rs/cdf-table-with-cdc-and-dvs",
    "kernel-rs/data/cdf-table",
    "kernel-rs/data/cdf-table-non-partitioned",
    "kernel-rs/data/cdf-table-with-cdc-and-dvs",
]
# file names with a literal '%' (logged as %25): deltalake 1.6.6 does not decode them, so it reads a copy
# whose files are renamed to the undecoded name; we read the original table
PERCENT_NAMED = [
    "cdf-table-backtick-column-names",
    "cdf-table-data-change",
    "cdf-table-delete-conditional-all-rows",
    "cdf-table-delete-conditional-two-rows",
    "cdf-table-delete-unconditional",
    "cdf-table-partitioned",
    "cdf-table-simple",
    "cdf-table-update-ops",
]


@needs_corpus
@pytest.mark.parametrize("name", READABLE_BY_DELTALAKE)
def test_corpus_matches_deltalake(name: str) -> None:
    assert_same(CORPUS / name)


@needs_corpus
@pytest.mark.parametrize("name", PERCENT_NAMED)
def test_corpus_percent_named_files(name: str, tmp_path: Path) -> None:
    src = CORPUS / "kernel-rs/data" / name
    ref = tmp_path / name
    shutil.copytree(src, ref)
    for root, _, files in os.walk(ref):
        for f in files:
            if "%" in f:
                os.rename(os.path.join(root, f), os.path.join(root, f.replace("%", "%25")))
    assert_same(src, ref_path=ref)


@needs_corpus
def test_corpus_dv_pairs() -> None:
    """Remove + re-add of one file with a new DV: only rows whose DV state changed (also restores).

    The commits have no commitInfo, so timestamps differ from deltalake's epoch 0 (see module doc).
    """
    path = CORPUS / "kernel-rs/data/cdf-table-with-dv"
    out = assert_same(path, ignore_ts=True)
    by_version: dict[int, list[tuple[str, int]]] = {}
    for r in out.to_pylist():
        by_version.setdefault(r["_commit_version"], []).append((r["_change_type"], r["value"]))
    assert sorted(by_version[0]) == [("insert", v) for v in range(10)]
    assert all(k == "delete" for k, _ in by_version[1])
    assert min(out.column("_commit_timestamp").to_pylist()).year > 1970


@needs_corpus
def test_corpus_checkpointed_history() -> None:
    path = CORPUS / "delta-rs/checkpoint-cdf-table"
    with pytest.raises(VersionNotFoundError):  # commits 0-2 were cleaned up
        ours(path)
    assert_same(path, starting_version=3)
    assert_same(path, starting_version=4)


@needs_corpus
def test_corpus_cdf_turned_off_midway() -> None:
    path = CORPUS / "kernel-rs/data/table-with-cdf"
    with pytest.raises(ChangeDataFeedNotEnabledError):
        ours(path)
    assert ours(path, starting_version=3).num_rows == 0  # metadata-only commits


@needs_corpus
@pytest.mark.parametrize("name", ["cdf-column-mapping-name-mode", "cdf-column-mapping-id-mode",
                                  "cdf-column-mapping-name-mode-3-7"])
def test_corpus_column_mapping(name: str) -> None:
    """deltalake 1.6.6 refuses CDF on column-mapping tables; expected rows follow from the log."""
    path = CORPUS / "kernel-rs/data" / name
    with pytest.raises(ChangeDataFeedNotEnabledError):  # CDF turned on at version 1
        ours(path)
    out = ours(path, starting_version=1)
    assert out.schema.names == ["id", "name", "value", "_change_type", "_commit_version", "_commit_timestamp"]
    got = sorted((r["_commit_version"], r["_change_type"], r["id"], r["name"], r["value"]) for r in out.to_pylist())
    expected = {
        "cdf-column-mapping-id-mode": [
            (2, "update_postimage", 2, "Frank", 275.0), (2, "update_preimage", 2, "Frank", 250.0),
            (3, "insert", 4, "Henry", 450.0), (4, "delete", 3, "Grace", 350.0)],
    }.get(name, [
        (2, "update_postimage", 2, "Bob", 250.0), (2, "update_preimage", 2, "Bob", 200.0),
        (3, "insert", 4, "David", 400.0), (4, "delete", 1, "Alice", 100.0)])
    assert got == sorted(expected)
    # the feed agrees with the table state: latest rows = v1 rows + inserts/postimages - deletes/preimages
    latest = deltakernel.DeltaTable(str(path)).to_pyarrow_table()
    assert {(2, e[3], e[4]) for e in expected if e[1] == "update_postimage"} <= {
        (r["id"], r["name"], r["value"]) for r in latest.to_pylist()}
