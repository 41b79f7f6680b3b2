"""Differential tests: deltakernel reads exactly what deltalake (delta-rs) and DuckDB's delta extension read.

Every table is written inside the tests with `deltalake.write_deltalake` (module-scoped fixtures build
each one once) and compared as a sorted multiset of canonical rows, at the latest version and at every
version (time travel), together with history, file lists, counts and filtered reads.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import pathlib
import sys
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import helpers

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("duckdb")
pytest.importorskip("duckdb_extension_delta")

from deltakernel.table import DeltaTable

write = deltalake.write_deltalake

# ----------------------------------------------------------------------------- table builders

PART_STRINGS = ["a b", "x=y", "p/q", "50%", None, "é", "plain", "a%20b", "colon:x"]


def _partitioned_batch(seed: int) -> pa.Table:
    n = len(PART_STRINGS)
    return pa.table(
        {
            "s": pa.array(PART_STRINGS, pa.string()),
            "i": pa.array([(k + seed) % 3 if k % 4 else None for k in range(n)], pa.int64()),
            "d": pa.array([dt.date(2020, 1, 1 + (k + seed) % 3) if k % 5 else None for k in range(n)], pa.date32()),
            "v": pa.array([float(seed * 100 + k) for k in range(n)], pa.float64()),
            "id": pa.array([seed * 100 + k for k in range(n)], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def partitioned(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Partitioned by string, int and date (nulls and awkward strings), checkpoints every 3 commits,
    appends, a delete that drops whole files, a partial overwrite (predicate) and a full delete."""
    p = str(tmp_path_factory.mktemp("diff") / "partitioned")
    write(p, _partitioned_batch(0), partition_by=["s", "i", "d"], configuration={"delta.checkpointInterval": "3"})
    for seed in range(1, 5):
        write(p, _partitioned_batch(seed), mode="append", partition_by=["s", "i", "d"])
    deltalake.DeltaTable(p).delete("v > 300")
    write(p, _partitioned_batch(7).filter(pc.equal(pc.field("s"), "plain")), mode="overwrite",
          partition_by=["s", "i", "d"], predicate="s = 'plain'")
    deltalake.DeltaTable(p).delete("s = 'p/q'")
    write(p, _partitioned_batch(9), mode="append", partition_by=["s", "i", "d"])
    return p


@pytest.fixture(scope="module")
def many_commits(tmp_path_factory: pytest.TempPathFactory) -> str:
    """30 appends with checkpointInterval 10, an overwrite, explicit checkpoints, and a delete that
    rewrites files (partial matches), then a few more appends after the last checkpoint."""
    p = str(tmp_path_factory.mktemp("diff") / "many")
    for k in range(30):
        t = pa.table({"x": pa.array([k * 10 + j for j in range(5)], pa.int64()),
                      "tag": pa.array([f"t{k % 4}"] * 5)})
        if k == 0:
            write(p, t, configuration={"delta.checkpointInterval": "10"})
        else:
            write(p, t, mode="append")
    write(p, pa.table({"x": pa.array(list(range(1000, 1040)), pa.int64()), "tag": ["ow"] * 40}), mode="overwrite")
    for k in range(3):
        write(p, pa.table({"x": pa.array([2000 + k * 3 + j for j in range(3)], pa.int64()), "tag": [f"t{k}"] * 3}),
              mode="append")
    deltalake.DeltaTable(p).create_checkpoint()
    deltalake.DeltaTable(p).delete("x % 2 = 0")  # partial: rewrites every file
    write(p, pa.table({"x": pa.array([5000, 5001], pa.int64()), "tag": ["late", "late"]}), mode="append")
    deltalake.DeltaTable(p).delete("tag = 'late' AND x = 5001")
    return p


@pytest.fixture(scope="module")
def schema_evolution(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Columns added by `schema_mode="merge"` (top level and a struct), so old files lack them."""
    p = str(tmp_path_factory.mktemp("diff") / "evolve")
    write(p, pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", None]}), partition_by=["b"])
    write(p, pa.table({"a": pa.array([4], pa.int64()), "b": ["x"], "c": pa.array([1.5], pa.float64())}),
          mode="append", schema_mode="merge", partition_by=["b"])
    st = pa.struct([("u", pa.int32()), ("w", pa.string())])
    write(p, pa.table({"a": pa.array([5, 6], pa.int64()), "b": ["z", None], "c": pa.array([None, 2.5]),
                       "n": pa.array([{"u": 1, "w": "q"}, None], st)}),
          mode="append", schema_mode="merge", partition_by=["b"])
    deltalake.DeltaTable(p).create_checkpoint()
    write(p, pa.table({"a": pa.array([7], pa.int64()), "b": ["y"], "c": pa.array([3.5]),
                       "n": pa.array([{"u": 2, "w": None}], st), "e": pa.array([True])}),
          mode="append", schema_mode="merge", partition_by=["b"])
    deltalake.DeltaTable(p).delete("a = 2")
    return p


def _all_types_batch(seed: int) -> pa.Table:
    utc = dt.timezone.utc
    st = pa.struct([("x", pa.int32()), ("y", pa.string()), ("inner", pa.struct([("z", pa.float64())]))])
    return pa.table(
        {
            "i8": pa.array([1 + seed, -128, None, 127], pa.int8()),
            "i16": pa.array([1, -32768, 32767, None], pa.int16()),
            "i32": pa.array([None, -(2**31), 2**31 - 1, seed], pa.int32()),
            "i64": pa.array([2**63 - 1, -(2**63), None, seed], pa.int64()),
            "f32": pa.array([1.5, None, float("inf"), -0.0], pa.float32()),
            "f64": pa.array([1e300, -2.5, None, float("-inf")], pa.float64()),
            "dec": pa.array([decimal.Decimal("1.23"), None, decimal.Decimal("-99999999.99"),
                             decimal.Decimal(seed)], pa.decimal128(10, 2)),
            "dec38": pa.array([decimal.Decimal("12345678901234567890.123456789012345678"), None,
                               decimal.Decimal(-1), decimal.Decimal(0)], pa.decimal128(38, 18)),
            "b": pa.array([True, False, None, True]),
            "s": pa.array(["a", None, "", "ünï\u00e7ødé"]),
            "bin": pa.array([b"x", None, b"\x00\xff", b""], pa.binary()),
            "d": pa.array([dt.date(2020, 1, 1), None, dt.date(1970, 1, 1), dt.date(1, 1, 1)], pa.date32()),
            "ts": pa.array([dt.datetime(2020, 1, 1, 1, 2, 3, 123456, tzinfo=utc), None,
                            dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=utc),
                            dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=utc)], pa.timestamp("us", tz="UTC")),
            "tsn": pa.array([dt.datetime(2020, 1, 1, 1, 2, 3), None, dt.datetime(1999, 12, 31, 23, 59, 59, 999999),
                             dt.datetime(2000, 2, 29)], pa.timestamp("us")),
            "st": pa.array([{"x": 1, "y": "a", "inner": {"z": 1.0}}, None, {"x": None, "y": "b", "inner": None},
                            {"x": seed, "y": None, "inner": {"z": None}}], st),
            "l": pa.array([[1, 2], None, [], [None, 3]], pa.list_(pa.int64())),
            "ls": pa.array([[{"x": 1, "y": "a", "inner": None}], None, [], [None]], pa.list_(st)),
            "m": pa.array([[("k", 1), ("j", None)], None, [], [("z", 26)]], pa.map_(pa.string(), pa.int64())),
            "row": pa.array([seed * 10 + k for k in range(4)], pa.int64()),
        }
    )


@pytest.fixture(scope="module")
def all_types(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every primitive type plus nested struct/list/map, over a checkpoint and later commits."""
    p = str(tmp_path_factory.mktemp("diff") / "types")
    write(p, _all_types_batch(0))
    write(p, _all_types_batch(1), mode="append")
    deltalake.DeltaTable(p).create_checkpoint()
    write(p, _all_types_batch(2), mode="append")
    deltalake.DeltaTable(p).delete("row = 11")
    return p


@pytest.fixture(scope="module")
def overwritten(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Overwrites (full, with a different schema via schema_mode="overwrite", and by predicate)."""
    p = str(tmp_path_factory.mktemp("diff") / "overwrite")
    write(p, pa.table({"k": pa.array([1, 2, 3], pa.int32()), "p": ["a", "b", "c"]}), partition_by=["p"])
    write(p, pa.table({"k": pa.array([4, 5], pa.int32()), "p": ["a", "d"]}), mode="overwrite", partition_by=["p"])
    write(p, pa.table({"k": pa.array([6], pa.int32()), "p": ["e"]}), mode="append", partition_by=["p"])
    write(p, pa.table({"k": pa.array([7, 8], pa.int32()), "p": ["a", "a"]}), mode="overwrite",
          partition_by=["p"], predicate="p = 'a'")
    write(p, pa.table({"q": pa.array(["new"]), "p": ["z"]}), mode="overwrite", schema_mode="overwrite",
          partition_by=["p"])
    write(p, pa.table({"q": pa.array(["newer"]), "p": ["y"]}), mode="append", partition_by=["p"])
    return p


@pytest.fixture(scope="module")
def typed_partitions(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Partitioned by bool, int8, timestamp (UTC), timestamp_ntz and decimal, incl. nulls."""
    p = str(tmp_path_factory.mktemp("diff") / "typedparts")
    utc = dt.timezone.utc

    def batch(seed: int) -> pa.Table:
        return pa.table({
            "b": pa.array([True, False, None, True]),
            "i8": pa.array([1, None, -3, seed], pa.int8()),
            "ts": pa.array([dt.datetime(2020, 1, 1, 12, 30, tzinfo=utc), None,
                            dt.datetime(1999, 1, 1, 0, 0, 0, 5, tzinfo=utc),
                            dt.datetime(2020, 1, 1, 12, 30, tzinfo=utc)], pa.timestamp("us", tz="UTC")),
            "tsn": pa.array([dt.datetime(2020, 1, 1, 12, 30), None, dt.datetime(1999, 1, 1), None],
                            pa.timestamp("us")),
            "dec": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("0.05"), decimal.Decimal("1.50")],
                            pa.decimal128(5, 2)),
            "x": pa.array([seed * 10 + k for k in range(4)], pa.int64()),
        })

    parts = ["b", "i8", "ts", "tsn", "dec"]
    write(p, batch(0), partition_by=parts)
    write(p, batch(1), partition_by=parts, mode="append")
    deltalake.DeltaTable(p).create_checkpoint()
    write(p, batch(2), partition_by=parts, mode="append")
    return p


@pytest.fixture(scope="module")
def stats_struct(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Checkpoint with `stats_parsed` only (writeStatsAsStruct, not writeStatsAsJson), sub-millisecond
    timestamps whose JSON/struct stats are truncated to milliseconds."""
    p = str(tmp_path_factory.mktemp("diff") / "statsstruct")
    utc = dt.timezone.utc
    for k in range(4):
        t = pa.table({
            "x": pa.array([k * 10 + j for j in range(3)], pa.int64()),
            "s": pa.array([f"s{k}{j}" for j in range(3)]),
            "ts": pa.array([dt.datetime(2020, 1, 1 + k, 12, 30, 0, 999 * j, tzinfo=utc) for j in range(3)],
                           pa.timestamp("us", tz="UTC")),
            "tsn": pa.array([dt.datetime(2020, 1, 1 + k, 12, 30, 0, 999 * j) for j in range(3)], pa.timestamp("us")),
            "f": pa.array([float(k) + j / 4 for j in range(3)], pa.float64()),
        })
        if k == 0:
            write(p, t, configuration={"delta.checkpoint.writeStatsAsStruct": "true",
                                       "delta.checkpoint.writeStatsAsJson": "false"})
        else:
            write(p, t, mode="append")
    deltalake.DeltaTable(p).create_checkpoint()
    return p


TABLES = ["partitioned", "many_commits", "schema_evolution", "all_types", "overwritten", "typed_partitions",
          "stats_struct"]


@pytest.fixture(params=TABLES)
def table(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(request.param)


def _latest(p: str) -> int:
    return deltalake.DeltaTable(p).version()


def _dk(p: str, version: int | None = None) -> pa.Table:
    return DeltaTable(p, version=version).to_pyarrow_table()


# ----------------------------------------------------------------------------- full reads


def test_latest_matches_deltalake(table: str) -> None:
    helpers.assert_same_rows(_dk(table), helpers.deltalake_table(table), f"{table} latest vs deltalake")


def test_latest_matches_duckdb(table: str) -> None:
    helpers.assert_same_rows(_dk(table), helpers.duckdb_table(table), f"{table} latest vs duckdb")


def test_oracles_agree(table: str) -> None:
    """Sanity check of the oracles themselves (a disagreement here is not a deltakernel bug)."""
    helpers.assert_same_rows(helpers.deltalake_table(table), helpers.duckdb_table(table), f"{table} oracles")


def test_every_version_matches_deltalake(table: str) -> None:
    latest = _latest(table)
    assert DeltaTable(table).version() == latest
    for v in range(latest + 1):
        dk = DeltaTable(table, version=v)
        assert dk.version() == v
        helpers.assert_same_rows(dk.to_pyarrow_table(), helpers.deltalake_table(table, version=v),
                                 f"{table} version {v}")


def test_load_as_version_matches(table: str) -> None:
    dk = DeltaTable(table)
    dl = deltalake.DeltaTable(table)
    for v in sorted({0, _latest(table) // 2, _latest(table)}):
        dk.load_as_version(v)
        dl.load_as_version(v)
        assert dk.version() == dl.version() == v
        helpers.assert_same_rows(dk.to_pyarrow_table(), pa.table(dl.to_pyarrow_dataset().to_table()),
                                 f"{table} load_as_version({v})")


def test_schema_matches_deltalake(table: str) -> None:
    for v in sorted({0, _latest(table)}):
        dk_schema = DeltaTable(table, version=v).to_pyarrow_table().schema
        dl_schema = pa.schema(deltalake.DeltaTable(table, version=v).schema().to_arrow())
        assert dk_schema.names == dl_schema.names, f"{table}@{v}"
        for f in dl_schema:
            got = dk_schema.field(f.name).type
            # deltalake uses Arrow's default list child name "element"; everything else must be equal
            assert got == f.type or str(got) == str(f.type), f"{table}@{v} column {f.name}: {got} vs {f.type}"


def test_projection_matches(table: str) -> None:
    dl = helpers.deltalake_table(table)
    cols = dl.column_names[::2]
    got = DeltaTable(table).to_pyarrow_table(columns=cols)
    assert got.column_names == cols
    helpers.assert_same_rows(got, dl.select(cols), f"{table} projection {cols}")


def test_to_batches_and_pandas(table: str) -> None:
    dk = DeltaTable(table)
    batches = list(dk.to_batches())
    got = pa.Table.from_batches(batches, schema=dk.to_pyarrow_table().schema) if batches else dk.to_pyarrow_table()
    helpers.assert_same_rows(got, helpers.deltalake_table(table), f"{table} to_batches")
    assert len(dk.to_pandas()) == helpers.deltalake_table(table).num_rows


# ----------------------------------------------------------------------------- log-level API


def test_count_matches(table: str) -> None:
    for v in sorted({0, _latest(table)}):
        assert DeltaTable(table, version=v).count() == helpers.deltalake_table(table, version=v).num_rows


def test_history_matches(table: str) -> None:
    dk_hist = DeltaTable(table).history()
    dl_hist = deltalake.DeltaTable(table).history()
    assert len(dk_hist) == len(dl_hist)
    assert [h["version"] for h in dk_hist] == [h["version"] for h in dl_hist]
    assert [h["operation"] for h in dk_hist] == [h["operation"] for h in dl_hist]
    assert [h.get("operationParameters") for h in dk_hist] == [h.get("operationParameters") for h in dl_hist]
    assert [h["timestamp"] for h in dk_hist] == [h["timestamp"] for h in dl_hist]
    limited = DeltaTable(table).history(limit=3)
    assert [h["version"] for h in limited] == [h["version"] for h in deltalake.DeltaTable(table).history(3)]


def test_history_at_old_version(table: str) -> None:
    v = _latest(table) // 2
    hist = DeltaTable(table, version=v).history()
    assert [h["version"] for h in hist] == list(range(v, -1, -1))


def test_file_uris_match(table: str) -> None:
    for v in sorted({0, _latest(table) // 2, _latest(table)}):
        dk = DeltaTable(table, version=v)
        dl = deltalake.DeltaTable(table, version=v)
        assert sorted(dk.file_uris()) == sorted(dl.file_uris()), f"{table}@{v}"
        for uri in dk.file_uris():
            assert os.path.exists(uri), uri
        # files() are the log's paths, relative to the table root
        files = dk.files()
        assert len(files) == len(set(files)) == len(dl.file_uris())
        assert all(not f.startswith("/") for f in files)


def test_add_actions_match(table: str) -> None:
    dk = DeltaTable(table).get_add_actions(flatten=True)
    dl = pa.table(deltalake.DeltaTable(table).get_add_actions(flatten=True))
    assert dk.num_rows == dl.num_rows
    key = "path"
    dk_rows = {r[key]: r for r in dk.to_pylist()}
    dl_rows = {r[key]: r for r in dl.to_pylist()}
    assert set(dk_rows) == set(dl_rows)
    for path, r in dl_rows.items():
        assert dk_rows[path]["size_bytes"] == r["size_bytes"], path
        assert dk_rows[path]["num_records"] == r["num_records"], path


def test_is_deltatable(table: str, tmp_path: pathlib.Path) -> None:
    assert DeltaTable.is_deltatable(table)
    assert not DeltaTable.is_deltatable(str(tmp_path))


def test_metadata_and_protocol(table: str) -> None:
    dk = DeltaTable(table)
    dl = deltalake.DeltaTable(table)
    assert dk.metadata().id == dl.metadata().id
    assert list(dk.metadata().partition_columns) == list(dl.metadata().partition_columns)
    assert dk.protocol().min_reader_version == dl.protocol().min_reader_version
    assert dk.protocol().min_writer_version == dl.protocol().min_writer_version


def test_duckdb_time_travel_matches(table: str) -> None:
    latest = _latest(table)
    con = helpers.duckdb_connection()
    for v in sorted({0, latest // 2, latest}):
        res = con.execute(f"SELECT * FROM delta_scan('{table}', version => {v})")
        expected = res.to_arrow_table() if hasattr(res, "to_arrow_table") else res.fetch_arrow_table()
        helpers.assert_same_rows(_dk(table, v), expected, f"{table}@{v} vs duckdb")


# ----------------------------------------------------------------------------- filters


def _check_filter(p: str, filters: Any, expected_expr: pc.Expression, what: str) -> None:
    full = helpers.deltalake_table(p)
    expected = full.filter(expected_expr)
    got = DeltaTable(p).to_pyarrow_table(filters=filters)
    helpers.assert_same_rows(got, expected, what)
    assert DeltaTable(p).count(filters=filters) == expected.num_rows, what


@pytest.mark.parametrize(
    "filters,expr",
    [
        ([("s", "=", "a b")], pc.field("s") == "a b"),
        ([("s", "=", "x=y")], pc.field("s") == "x=y"),
        ([("s", "=", "p/q")], pc.field("s") == "p/q"),
        ([("s", "=", "50%")], pc.field("s") == "50%"),
        ([("s", "=", "a%20b")], pc.field("s") == "a%20b"),
        ([("s", "!=", "plain")], pc.field("s") != "plain"),
        ([("s", "in", ["é", "colon:x"])], pc.field("s").isin(["é", "colon:x"])),
        ([("s", "not in", ["é", "colon:x"])], ~pc.field("s").isin(["é", "colon:x"])),
        ([("i", "=", 1)], pc.field("i") == 1),
        ([("i", ">", 0)], pc.field("i") > 0),
        ([("i", "<=", 1), ("s", "=", "a b")], (pc.field("i") <= 1) & (pc.field("s") == "a b")),
        ([[("i", "=", 2)], [("s", "=", "é")]], (pc.field("i") == 2) | (pc.field("s") == "é")),
        ([("d", "=", dt.date(2020, 1, 2))], pc.field("d") == pa.scalar(dt.date(2020, 1, 2))),
        ([("d", ">=", dt.date(2020, 1, 2))], pc.field("d") >= pa.scalar(dt.date(2020, 1, 2))),
        ([("v", ">", 150.0)], pc.field("v") > 150.0),
        ([("id", "<", 105), ("i", "=", 0)], (pc.field("id") < 105) & (pc.field("i") == 0)),
    ],
    ids=lambda x: repr(x)[:40] if isinstance(x, list) else "",
)
def test_dnf_filters_partitioned(partitioned: str, filters: Any, expr: pc.Expression) -> None:
    """DNF tuples mean what they mean in deltalake (pyarrow semantics: `not in` keeps nulls)."""
    expected = pa.table(deltalake.DeltaTable(partitioned).to_pyarrow_table(filters=filters))
    got = DeltaTable(partitioned).to_pyarrow_table(filters=filters)
    helpers.assert_same_rows(got, expected, f"filters={filters} vs deltalake")
    assert DeltaTable(partitioned).count(filters=filters) == expected.num_rows


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("v") > 3,
        pc.field("v") > 250,
        pc.field("s") == "a b",
        pc.field("s").is_null(),
        pc.field("i").is_null(),
        pc.field("d").is_null() | (pc.field("i") == 2),
        (pc.field("id") >= 200) & (pc.field("id") < 205),
        pc.field("s").isin(["x=y", "p/q", "50%"]),
    ],
    ids=str,
)
def test_pyarrow_filters_partitioned(partitioned: str, expr: pc.Expression) -> None:
    _check_filter(partitioned, expr, expr, f"filter {expr}")


@pytest.mark.parametrize(
    "expr",
    [
        pc.field("x") > 3,
        pc.field("x") < 0,
        (pc.field("x") >= 1000) & (pc.field("x") < 1010),
        pc.field("tag") == "ow",
        pc.field("tag").isin(["t0", "late"]),
    ],
    ids=str,
)
def test_pyarrow_filters_many_commits(many_commits: str, expr: pc.Expression) -> None:
    _check_filter(many_commits, expr, expr, f"filter {expr}")


def test_filters_on_evolved_column(schema_evolution: str) -> None:
    # files written before `c` existed have no `c` column: it reads as null and must not match `c > 1`
    _check_filter(schema_evolution, pc.field("c") > 1, pc.field("c") > 1, "c > 1")
    _check_filter(schema_evolution, pc.field("c").is_null(), pc.field("c").is_null(), "c is null")
    _check_filter(schema_evolution, [("e", "=", True)], pc.field("e") == True, "e = true")


def test_filters_all_types(all_types: str) -> None:
    cases = [
        pc.field("i8") > 0,
        pc.field("dec") < pa.scalar(decimal.Decimal("0.00"), pa.decimal128(10, 2)),
        pc.field("d") < pa.scalar(dt.date(2000, 1, 1)),
        pc.field("ts") > pa.scalar(dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc), pa.timestamp("us", tz="UTC")),
        pc.field("tsn") < pa.scalar(dt.datetime(2000, 1, 1), pa.timestamp("us")),
        pc.field("s") == "",
        pc.field("b") == False,
    ]
    for expr in cases:
        _check_filter(all_types, expr, expr, f"filter {expr}")


def test_partition_filter_file_uris(partitioned: str) -> None:
    dk = DeltaTable(partitioned)
    dl = deltalake.DeltaTable(partitioned)
    for pf in ([("s", "=", "a b")], [("s", "=", "x=y")], [("i", "=", "1")], [("s", "in", ["50%", "é"])]):
        assert sorted(dk.file_uris(partition_filters=pf)) == sorted(dl.file_uris(partition_filters=pf)), pf


def test_partition_values_roundtrip(partitioned: str) -> None:
    """The partition columns read back with their logical values (no '%' decoding accidents)."""
    got = DeltaTable(partitioned).to_pyarrow_table(columns=["s"])
    assert set(got.column("s").to_pylist()) <= set(PART_STRINGS)
    assert None in set(got.column("s").to_pylist())


def test_projection_of_partition_columns_only(partitioned: str) -> None:
    """Reading only partition columns must still produce one row per data row."""
    expected = helpers.deltalake_table(partitioned).select(["s", "i"])
    got = DeltaTable(partitioned).to_pyarrow_table(columns=["s", "i"])
    helpers.assert_same_rows(got, expected, "partition-only projection")


def test_load_as_version_by_timestamp(tmp_path: pathlib.Path) -> None:
    """Timestamp time travel resolves to the same version as deltalake (commit file times set apart)."""
    p = str(tmp_path / "tt")
    for k in range(4):
        write(p, pa.table({"x": [k]}), mode="append")
    base = 1_600_000_000  # seconds; commits one hour apart
    for v in range(4):
        os.utime(helpers.commit_file(p, v), (base + 3600 * v, base + 3600 * v))
    dk = DeltaTable(p)
    for v in range(4):
        for offset in (0, 1800):
            when = dt.datetime.fromtimestamp(base + 3600 * v + offset, dt.timezone.utc)
            dk.load_as_version(when)
            dl = deltalake.DeltaTable(p)
            dl.load_as_version(when)
            assert dk.version() == dl.version() == v, (when, dk.version(), dl.version())
            dk.load_as_version(when.isoformat())
            assert dk.version() == v
            helpers.assert_same_rows(dk.to_pyarrow_table(), pa.table(dl.to_pyarrow_dataset().to_table()),
                                     f"as of {when}")


def test_filters_typed_partitions(typed_partitions: str) -> None:
    utc = dt.timezone.utc
    cases = [
        pc.field("b") == True,
        pc.field("b").is_null(),
        pc.field("i8") < 0,
        pc.field("ts") == pa.scalar(dt.datetime(2020, 1, 1, 12, 30, tzinfo=utc), pa.timestamp("us", tz="UTC")),
        pc.field("ts") < pa.scalar(dt.datetime(1999, 1, 1, 0, 0, 0, 6, tzinfo=utc), pa.timestamp("us", tz="UTC")),
        pc.field("tsn") == pa.scalar(dt.datetime(1999, 1, 1), pa.timestamp("us")),
        pc.field("dec") > pa.scalar(decimal.Decimal("1.00"), pa.decimal128(5, 2)),
    ]
    for expr in cases:
        _check_filter(typed_partitions, expr, expr, f"filter {expr}")
    expected = pa.table(deltalake.DeltaTable(typed_partitions).to_pyarrow_table(filters=[("b", "=", True)]))
    helpers.assert_same_rows(DeltaTable(typed_partitions).to_pyarrow_table(filters=[("b", "=", True)]), expected,
                             "b = True (DNF)")


def test_filters_stats_struct_and_submillisecond_timestamps(stats_struct: str) -> None:
    """Stats skipping from `stats_parsed` and ms-truncated timestamp bounds must never drop a match."""
    files = DeltaTable(stats_struct).snapshot.files
    assert files.column("stats").null_count == files.num_rows  # the fixture really has struct stats only
    assert "stats_parsed" in files.column_names
    utc = dt.timezone.utc
    exact = dt.datetime(2020, 1, 2, 12, 30, 0, 1998, tzinfo=utc)  # above the ms-truncated max of its file
    cases = [
        pc.field("x") == 21,
        pc.field("x") > 25,
        pc.field("s") == "s12",
        pc.field("f") >= 3.5,
        pc.field("ts") == pa.scalar(exact, pa.timestamp("us", tz="UTC")),
        pc.field("ts") > pa.scalar(dt.datetime(2020, 1, 2, 12, 30, 0, 1500, tzinfo=utc), pa.timestamp("us", tz="UTC")),
        pc.field("tsn") == pa.scalar(exact.replace(tzinfo=None), pa.timestamp("us")),
        pc.field("tsn") >= pa.scalar(exact.replace(tzinfo=None), pa.timestamp("us")),
    ]
    for expr in cases:
        _check_filter(stats_struct, expr, expr, f"filter {expr}")
    for dnf in ([("x", "=", 21)], [("s", ">", "s30")], [("ts", "=", exact)]):
        expected = pa.table(deltalake.DeltaTable(stats_struct).to_pyarrow_table(filters=dnf))
        helpers.assert_same_rows(DeltaTable(stats_struct).to_pyarrow_table(filters=dnf), expected, f"{dnf}")


def test_submillisecond_timestamp_filters_json_stats(tmp_path: pathlib.Path) -> None:
    """JSON stats truncate timestamps to milliseconds (max "…12:30:00.000Z" for a .000999 value): a
    filter on the exact value must still find the row."""
    utc = dt.timezone.utc
    p = str(tmp_path / "subms")
    v = dt.datetime(2020, 1, 1, 12, 30, 0, 999, tzinfo=utc)
    write(p, pa.table({"ts": pa.array([dt.datetime(2020, 1, 1, tzinfo=utc), v], pa.timestamp("us", tz="UTC")),
                       "tsn": pa.array([dt.datetime(2020, 1, 1), v.replace(tzinfo=None)], pa.timestamp("us")),
                       "x": [1, 2]}))
    write(p, pa.table({"ts": pa.array([dt.datetime(2021, 1, 1, tzinfo=utc)], pa.timestamp("us", tz="UTC")),
                       "tsn": pa.array([dt.datetime(2021, 1, 1)], pa.timestamp("us")), "x": [3]}), mode="append")
    for expr in (
        pc.field("ts") == pa.scalar(v, pa.timestamp("us", tz="UTC")),
        pc.field("ts") >= pa.scalar(v, pa.timestamp("us", tz="UTC")),
        pc.field("tsn") == pa.scalar(v.replace(tzinfo=None), pa.timestamp("us")),
        pc.field("tsn") > pa.scalar(dt.datetime(2020, 1, 1, 12, 30, 0, 500), pa.timestamp("us")),
    ):
        _check_filter(p, expr, expr, f"filter {expr}")
