"""`delta_changes(uri [, start [, end]])`: the change data feed as a DataFusion table equals `load_cdf`.

Every CDF table of the conformance corpus (CDC files, DVs, column mapping, in-commit timestamps, tables
whose early versions lack CDF or were cleaned up) is read over several version ranges both ways; where
`load_cdf` raises, `delta_changes` raises the same error type. Kernel-written tables check timestamp
ranges, projections, pushed filters and count(*), and the `deltakernel sql` CLI.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

datafusion = pytest.importorskip("datafusion")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaTable, QueryBuilder, write_deltalake
from deltakernel.datafusion.cli import without_views
from deltakernel.errors import ChangeDataFeedNotEnabledError, DeltaError, VersionNotFoundError

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "tables"
CDF_TABLES = [
    "kernel-rs/data/cdf-column-mapping-id-mode",
    "kernel-rs/data/cdf-column-mapping-name-mode",
    "kernel-rs/data/cdf-column-mapping-name-mode-3-7",
    "kernel-rs/data/cdf-table",
    "kernel-rs/data/cdf-table-delete-conditional-all-rows",
    "kernel-rs/data/cdf-table-non-partitioned",
    "kernel-rs/data/cdf-table-partitioned",
    "kernel-rs/data/cdf-table-update-ops",
    "kernel-rs/data/cdf-table-with-cdc-and-dvs",
    "kernel-rs/data/table-with-cdf",
    "dat/cdf/delta",
    "delta-rs/cdc_ict_table",
    "delta-rs/checkpoint-cdf-table",
    "delta-rs/simple_table_with_cdc",
]


def rows(table: Any) -> list[tuple[Any, ...]]:
    t = without_views(pa.table(table))
    return sorted((tuple(r.values()) for r in t.to_pylist()), key=lambda r: tuple((v is None, repr(v)) for v in r))


def sql_range(start: Any, end: Any) -> str:
    args = [repr(a) if isinstance(a, str) else str(a) for a in (start, end) if a is not None]
    return ", ".join(args)


def changes_sql(path: str, start: Any = None, end: Any = None, select: str = "*", where: str = "") -> str:
    args = ", ".join([f"'{path}'", *([sql_range(start, end)] if start is not None else [])])
    return f"SELECT {select} FROM delta_changes({args}){' WHERE ' + where if where else ''}"


def outcome(fn: Any) -> Any:
    """Rows, or the error type raised."""
    try:
        return rows(fn())
    except DeltaError as e:
        return type(e)


@pytest.mark.parametrize("table", CDF_TABLES)
def test_conformance_feed_equals_load_cdf(table: str) -> None:
    path = str(CONFORMANCE / table)
    if not (CONFORMANCE / table / "_delta_log").exists():
        pytest.skip("conformance corpus not available")
    latest = DeltaTable(path).version()
    qb = QueryBuilder()
    seen_rows = 0
    for start, end in {(0, None), (1, None), (1, 2), (latest, latest), (latest, None)}:
        expected = outcome(lambda s=start, e=end: DeltaTable(path).load_cdf(starting_version=s,
                                                                            ending_version=e).read_all())
        got = outcome(lambda s=start, e=end: qb.execute(changes_sql(path, s, e)).read_all())
        assert got == expected, (start, end)
        seen_rows += len(expected) if isinstance(expected, list) else 0
    if table not in ("kernel-rs/data/table-with-cdf", "delta-rs/checkpoint-cdf-table"):
        assert seen_rows > 0


@pytest.fixture()
def cdf_table(tmp_path: Path) -> str:
    """Four versions: create, two appends, an overwrite of one partition (inserts + deletes)."""
    path = str(tmp_path / "cdf")
    config = {"delta.enableChangeDataFeed": "true"}
    write_deltalake(path, pa.table({"id": pa.array(range(100), pa.int64()), "p": ["a", "b"] * 50}),
                    partition_by=["p"], configuration=config)
    write_deltalake(path, pa.table({"id": pa.array(range(100, 130), pa.int64()), "p": ["a"] * 30}),
                    mode="append")
    write_deltalake(path, pa.table({"id": pa.array(range(130, 150), pa.int64()), "p": ["c"] * 20}),
                    mode="append")
    write_deltalake(path, pa.table({"id": pa.array(range(1000, 1007), pa.int64()), "p": ["b"] * 7}), mode="overwrite",
                    predicate="p = 'b'")
    return path


def test_kernel_table_ranges(cdf_table: str) -> None:
    dtab = DeltaTable(cdf_table)
    ctx = dkdf.session_context()
    for start, end in [(0, None), (0, 0), (1, 2), (3, 3), (2, 99)]:
        expected = rows(dtab.load_cdf(starting_version=start, ending_version=end).read_all())
        assert rows(ctx.sql(changes_sql(cdf_table, start, end)).to_arrow_table()) == expected
    kinds = ctx.sql(changes_sql(cdf_table, 3, 3, select="DISTINCT _change_type")).to_pydict()["_change_type"]
    assert sorted(kinds) == ["delete", "insert"]
    # no start: the whole feed, as load_cdf()
    assert rows(ctx.sql(changes_sql(cdf_table)).to_arrow_table()) == rows(dtab.load_cdf().read_all())


def test_timestamps_resolve_like_load_cdf(cdf_table: str) -> None:
    dtab = DeltaTable(cdf_table)
    feed = dtab.load_cdf().read_all()
    stamps = sorted(set(feed.column("_commit_timestamp").to_pylist()))
    assert len(stamps) >= 3
    iso = [s.replace(tzinfo=dt.timezone.utc).isoformat() for s in stamps]
    qb = QueryBuilder()
    for start, end in [(iso[1], None), (iso[1], iso[2]), (iso[0], iso[-1]), (1, iso[2]), (iso[1], 3)]:
        kw: dict[str, Any] = {}
        kw["starting_timestamp" if isinstance(start, str) else "starting_version"] = start
        if end is not None:
            kw["ending_timestamp" if isinstance(end, str) else "ending_version"] = end
        expected = rows(dtab.load_cdf(**kw).read_all())
        assert expected
        assert rows(qb.execute(changes_sql(cdf_table, start, end)).read_all()) == expected, (start, end)
    # an end before the first commit: no changes (as load_cdf)
    assert qb.execute(changes_sql(cdf_table, 0, "2001-01-01T00:00:00Z")).read_all().num_rows == 0
    assert dtab.load_cdf(ending_timestamp="2001-01-01T00:00:00Z").read_all().num_rows == 0


def test_projection_filter_and_count(cdf_table: str) -> None:
    full = DeltaTable(cdf_table).load_cdf().read_all()
    ctx = dkdf.session_context()
    # count(*) projects no column at all
    assert ctx.sql(changes_sql(cdf_table, 0, select="count(*) AS n")).to_pylist() == [{"n": full.num_rows}]
    got = ctx.sql(changes_sql(cdf_table, 0, select="id, _commit_version",
                              where="_change_type = 'delete' AND id >= 3")).to_arrow_table()
    mask = pc.and_(pc.equal(full.column("_change_type"), "delete"), pc.greater_equal(full.column("id"), 3))
    expected = full.filter(mask).select(["id", "_commit_version"])
    assert expected.num_rows > 0 and rows(got) == rows(expected)
    agg = ctx.sql(changes_sql(cdf_table, 0, select="_commit_version, count(*) AS n",
                              where="p = 'a'") + " GROUP BY _commit_version").to_arrow_table()
    a = full.filter(pc.equal(full.column("p"), "a")).group_by("_commit_version").aggregate([("id", "count")])
    assert rows(agg) == rows(a.rename_columns(["_commit_version", "n"]))


def test_join_feed_with_table(cdf_table: str) -> None:
    qb = QueryBuilder().register("t", DeltaTable(cdf_table))
    got = qb.execute(f"SELECT c.id, c._change_type FROM delta_changes('{cdf_table}', 3, 3) c "
                     "JOIN t ON t.id = c.id AND t.p = c.p").read_all()
    # rows inserted at v3 are in the table; deleted ones are not
    assert {r["_change_type"] for r in got.to_pylist()} == {"insert"} and got.num_rows == 7


def test_table_without_cdf_is_a_clear_error(tmp_path: Path) -> None:
    path = str(tmp_path / "plain")
    write_deltalake(path, pa.table({"x": [1, 2]}))
    with pytest.raises(ChangeDataFeedNotEnabledError, match="enableChangeDataFeed"):
        QueryBuilder().execute(changes_sql(path, 0))
    with pytest.raises(ChangeDataFeedNotEnabledError):
        DeltaTable(path).load_cdf()


def test_out_of_range_as_load_cdf(cdf_table: str) -> None:
    qb = QueryBuilder()
    with pytest.raises(VersionNotFoundError, match="after the latest version"):
        qb.execute(changes_sql(cdf_table, 9))
    with pytest.raises(VersionNotFoundError):
        DeltaTable(cdf_table).load_cdf(starting_version=9)
    with pytest.raises(VersionNotFoundError, match="no commit at or after"):
        qb.execute(changes_sql(cdf_table, "2999-01-01T00:00:00Z"))
    with pytest.raises(DeltaError, match="start version 2 is greater than end version 1"):
        qb.execute(changes_sql(cdf_table, 2, 1))
    with pytest.raises(DeltaError, match="unsupported delta_changes argument type"):
        qb.execute(f"SELECT * FROM delta_changes('{cdf_table}', 1.5)")
    with pytest.raises(DeltaError, match="delta_changes"):
        qb.execute(f"SELECT * FROM delta_changes('{cdf_table}', 0, 1, 2)")


def test_cli(cdf_table: str, tmp_path: Path) -> None:
    expected = DeltaTable(cdf_table).load_cdf(starting_version=1, ending_version=3).read_all()
    proc = subprocess.run(
        [sys.executable, "-m", "deltakernel.cli", "sql", changes_sql(cdf_table, 1, 3, select="id, p, _change_type"),
         "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows(pa.Table.from_pylist(got)) == rows(expected.select(["id", "p", "_change_type"]))
    plain = str(tmp_path / "plain")
    write_deltalake(plain, pa.table({"x": [1]}))
    proc = subprocess.run([sys.executable, "-m", "deltakernel.cli", "sql", changes_sql(plain, 0)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ChangeDataFeedNotEnabledError: change data feed is not enabled")
    assert "Traceback" not in proc.stderr
