"""The listing path (`deltakernel.datafusion.listing`): a table registered as a view over DataFusion's own
scans of the snapshot's live files must give exactly the rows of the pyarrow-Dataset provider
(`provider="dataset"`, the kernel's reads), and be chosen only where that holds: column mapping "name"
(physical -> logical names), partition values (typed, NULL) with plan-time partition pruning, time travel
(the files of the pinned version only), deletion vectors (the table keeps the dataset provider).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

datafusion = pytest.importorskip("datafusion")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaTable, write_deltalake
from deltakernel.datafusion import listing

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the listing path needs >= 2 CPUs (native.available)")


def _rows(path: str, sql: str, **opts: Any) -> tuple[list[str], dkdf.DeltaDataset, Any]:
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", path, **opts)
    return sorted(map(str, ctx.sql(sql).to_arrow_table().to_pylist())), ds, ctx


def _same(path: str, sql: str, **opts: Any) -> list[str]:
    """Rows of the listing path; asserts the path was taken and equals the dataset provider's rows."""
    got, ds, _ = _rows(path, sql, **opts)
    want, ds_plain, _ = _rows(path, sql, provider="dataset", **opts)
    assert ds.scan_path == "listing" and ds_plain.scan_path == "dataset", sql
    assert got == want, sql
    return got


def _plan(ctx: Any, sql: str) -> str:
    rows = ctx.sql(f"EXPLAIN {sql}").to_pylist()
    return str(next(r["plan"] for r in rows if r["plan_type"] == "physical_plan"))


def test_listing_rows_and_pushdown(ranges: str) -> None:
    for sql in ["SELECT * FROM t", "SELECT id, x FROM t WHERE x <> 2", "SELECT id FROM t WHERE x IS NULL OR s = 's3'",
                "SELECT id FROM t WHERE x NOT IN (1, 3)", "SELECT id, d FROM t WHERE d > 4000.125",
                "SELECT s, count(*) AS n, sum(x) AS sx FROM t GROUP BY s"]:
        _same(ranges, sql)
    rows, ds, ctx = _rows(ranges, "SELECT id FROM t WHERE id >= 1020 AND id < 1025")
    assert rows == sorted(str({"id": i}) for i in range(1020, 1025))
    plan = _plan(ctx, "SELECT id FROM t WHERE id >= 1020 AND id < 1025")
    # one DataFusion Parquet scan over the 6 live files (links), grouped into scan partitions, with the filter
    # inside the reader; no Python dataset in the plan
    assert "DatasetExec" not in plan and plan.count("DataSourceExec") == 1 and "predicate=id@" in plan
    assert "file_groups={2 groups" in plan and plan.count(".parquet") == 6
    assert ds.metrics.plans == 0  # the dataset provider was never asked
    assert ctx.sql("SELECT s FROM t LIMIT 1").to_arrow_table().schema.field("s").type == pa.string_view()
    _, plain_types, ctx2 = _rows(ranges, "SELECT 1", view_types=False)
    assert plain_types.scan_path == "listing"
    assert ctx2.sql("SELECT s FROM t LIMIT 1").to_arrow_table().schema.field("s").type == pa.string()


def test_partitions_pruned_at_plan_time(tmp_path: Path, parts_table: Callable[[str], str]) -> None:
    path = parts_table(str(tmp_path / "parts"))
    for sql in ["SELECT * FROM t", "SELECT v, p FROM t WHERE p = 'b'", "SELECT v FROM t WHERE p IS NULL",
                "SELECT v, q FROM t WHERE q > 1 OR p IS NULL", "SELECT p, q, count(*) AS n FROM t GROUP BY p, q"]:
        _same(path, sql)
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", path)
    assert ds.scan_path == "listing"
    # the files of every other partition are gone from disk: a query on p = 'b' AND q = 2 must not open them
    keep = [f for f in DeltaTable(path).file_uris() if "p=b" in f and "q=2" in f]
    assert len(keep) == 1
    for f in DeltaTable(path).file_uris():
        if f not in keep:
            os.remove(f.removeprefix("file://"))
    got = ctx.sql("SELECT v FROM t WHERE p = 'b' AND q = 2 ORDER BY v").to_pylist()
    assert got == [{"v": v} for v in range(12) if v % 3 == 1 and v % 4 == 1]


def test_column_mapping_name(tmp_path: Path) -> None:
    path = str(tmp_path / "cm")
    write_deltalake(path, pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", "y", None],
                                    "p": ["u", "v", "u"]}), partition_by=["p"],
                    configuration={"delta.columnMapping.mode": "name"})
    dt = DeltaTable(path)
    dt.alter.rename_column("b", "renamed b")
    write_deltalake(path, pa.table({"a": pa.array([4], pa.int64()), "renamed b": ["z"], "p": ["v"]}), mode="append")
    rows = _same(path, 'SELECT a, "renamed b", p FROM t')
    assert rows == sorted(map(str, [{"a": 1, "renamed b": "x", "p": "u"}, {"a": 2, "renamed b": "y", "p": "v"},
                                    {"a": 3, "renamed b": None, "p": "u"}, {"a": 4, "renamed b": "z", "p": "v"}]))
    _same(path, "SELECT a FROM t WHERE \"renamed b\" >= 'y' AND p = 'v'")


def test_time_travel_reads_the_pinned_files(tmp_path: Path) -> None:
    path = str(tmp_path / "tt")
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    write_deltalake(path, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    write_deltalake(path, pa.table({"id": pa.array([9], pa.int64())}), mode="overwrite")
    assert _same(path, "SELECT id FROM t", version=0) == [str({"id": 1}), str({"id": 2})]
    assert _same(path, "SELECT id FROM t", version=1) == sorted(str({"id": i}) for i in (1, 2, 3))
    assert _same(path, "SELECT id FROM t") == [str({"id": 9})]


def test_deletion_vectors_only_their_files_on_the_dataset_provider(tmp_path: Path) -> None:
    path = str(tmp_path / "dv")
    for k in range(3):
        write_deltalake(path, pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64())}), mode="append",
                        configuration={"delta.enableDeletionVectors": "true"} if k == 0 else None)
    DeltaTable(path).delete("id >= 10 AND id < 20 AND id % 3 = 0")  # a DV on the second file only
    assert DeltaTable(path).snapshot.files.column("deletion_vector").null_count == 2
    live = [i for i in range(30) if not (10 <= i < 20 and i % 3 == 0)]
    assert _same(path, "SELECT id FROM t") == sorted(str({"id": i}) for i in live)
    assert _same(path, "SELECT id FROM t WHERE id > 8 AND id < 22") == sorted(str({"id": i}) for i in live
                                                                             if 8 < i < 22)
    rows, ds, ctx = _rows(path, "SELECT count(*) AS n FROM t")
    assert ds.scan_path == "listing" and rows == [str({"n": 27})]
    plan = _plan(ctx, "SELECT id FROM t")
    # the two files without a DV: DataFusion's scan; the one with a DV: the kernel through the dataset provider
    assert plan.count("DataSourceExec") == 1 and plan.count(".parquet") == 2 and "DatasetExec" in plan
    assert ds.metrics.files_total == 1 and ds.metrics.files_kernel_path == 1
    # every live file with a DV: the dataset provider for the whole table
    DeltaTable(path).delete("id % 10 = 1")
    rows, ds, _ = _rows(path, "SELECT count(*) AS n FROM t")
    assert ds.scan_path == "dataset" and listing.plan(ds) is None and rows == [str({"n": 24})]


def test_dml_repins_through_the_listing_path(tmp_path: Path) -> None:
    path = str(tmp_path / "dml")
    write_deltalake(path, pa.table({"id": pa.array(range(5), pa.int64())}))
    ctx = datafusion.SessionContext()
    assert dkdf.register(ctx, "t", path).scan_path == "listing"
    dkdf.sql(ctx, "INSERT INTO t VALUES (10)").to_pylist()
    assert sorted(r["id"] for r in ctx.sql("SELECT id FROM t").to_pylist()) == [0, 1, 2, 3, 4, 10]
    assert next(iter(dkdf.delta_tables(ctx).values())).scan_path == "listing"


def test_dataset_provider_parses_stats_once_per_snapshot(ranges: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltakernel.kernel.scan import skipping

    calls: list[int] = []
    real = skipping.parse_stats

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(skipping, "parse_stats", counting)
    ctx = datafusion.SessionContext()
    ds = dkdf.register(ctx, "t", ranges, provider="dataset")
    for lo in (10, 1500, 2500):  # three queries on the same column: one parse
        assert len(ctx.sql(f"SELECT id FROM t WHERE id >= {lo} AND id < {lo + 5}").to_pylist()) == 5
        assert ds.metrics.files_skipped == 5
    assert len(calls) == 1
    ctx.sql("SELECT id FROM t WHERE x = 1").to_pylist()  # another column: parsed once more
    assert len(calls) == 2


def test_more_than_128_files_one_scan(tmp_path: Path) -> None:
    path = str(tmp_path / "many")
    write_deltalake(path, pa.table({"id": pa.array(range(1500), pa.int64())}), max_rows_per_file=10)
    write_deltalake(path, pa.table({"id": pa.array(range(1500, 1510), pa.int64())}), mode="append")
    assert DeltaTable(path).snapshot.files.num_rows == 151
    rows, ds, ctx = _rows(path, "SELECT count(*) AS n, sum(id) AS s FROM t")
    assert ds.scan_path == "listing" and rows == [str({"n": 1510, "s": sum(range(1510))})]
    plan = _plan(ctx, "SELECT id FROM t WHERE id = 1505")
    assert plan.count("DataSourceExec") == 1 and "file_groups={2 groups" in plan and "DatasetExec" not in plan
    assert _same(path, "SELECT id FROM t WHERE id % 97 = 3") == sorted(str({"id": i}) for i in range(1510)
                                                                       if i % 97 == 3)
    # time travel to the first version: its 150 files only (another directory of links)
    assert _same(path, "SELECT count(*) AS n FROM t", version=0) == [str({"n": 1500})]


def test_many_partition_groups_keep_the_dataset_provider(tmp_path: Path, parts_table: Callable[[str], str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = parts_table(str(tmp_path / "parts"))  # 12 (p, q) groups
    monkeypatch.setattr(listing, "MAX_GROUPS", 11)
    assert _rows(path, "SELECT 1")[1].scan_path == "dataset"
    monkeypatch.setattr(listing, "MAX_GROUPS", 12)
    assert _rows(path, "SELECT 1")[1].scan_path == "listing"


def test_many_files_keep_the_dataset_provider(ranges: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "MAX_FILES", 5)  # `ranges` has 6 files
    rows, ds, _ = _rows(ranges, "SELECT count(*) AS n FROM t")
    assert ds.scan_path == "dataset" and rows == [str({"n": 6000})]
    assert _rows(ranges, "SELECT 1", provider="dataset")[1].scan_path == "dataset"


def test_link_directories_hold_exactly_the_targets(tmp_path: Path) -> None:
    from deltakernel.datafusion import links

    targets = []
    for name in ("a b%20.parquet", "c.parquet", "d=1.parquet"):  # any characters: DataFusion opens the links
        (tmp_path / name).write_bytes(name.encode())
        targets.append(str(tmp_path / name))
    d = links.link_dir(targets)
    assert d.endswith(os.sep) and links.link_dir(list(targets)) == d  # same files: the same directory
    entries = sorted(os.listdir(d))
    assert entries == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert [os.readlink(os.path.join(d, e)) for e in entries] == targets
    assert links.link_dir(targets[:2]) != d and sorted(os.listdir(links.link_dir(targets[:2]))) == entries[:2]


def test_partition_values_from_hive_link_directories(tmp_path: Path) -> None:
    """Partition values with an exact text form (integers, plain strings) are read by one scan from
    `<column>=<value>/` link directories, pruned when DataFusion lists them; other values (and NULLs) keep one
    scan each with typed literals. Rows equal the dataset provider's either way."""
    path = str(tmp_path / "hive")
    n = 40
    write_deltalake(path, pa.table({
        "v": pa.array(range(n), pa.int64()),
        "k": pa.array([i % 5 - 2 for i in range(n)], pa.int16()),  # negative values too
        "c": pa.array(["x", "y-1", "Z_2", "x"] * (n // 4)),
    }), partition_by=["k", "c"])
    queries = ["SELECT * FROM t", "SELECT v FROM t WHERE k = -1", "SELECT v, c FROM t WHERE c = 'y-1' OR v > 30",
               "SELECT k, c, count(*) AS n, sum(v) AS s FROM t GROUP BY k, c"]
    for sql in queries:
        _same(path, sql)
    rows, ds, ctx = _rows(path, "SELECT count(*) AS n FROM t")
    assert ds.scan_path == "listing" and rows == [str({"n": n})]
    plan = _plan(ctx, "SELECT v, k, c FROM t")
    assert plan.count("DataSourceExec") == 1 and "UnionExec" not in plan and "k=-2/c=x/" in plan
    pruned = _plan(ctx, "SELECT v FROM t WHERE k = 1 AND c = 'x'")
    assert pruned.count(".parquet") == 1 and "k=1/c=x/" in pruned  # pruned at plan time, from the names
    assert ctx.sql("SELECT k, c FROM t LIMIT 1").to_arrow_table().schema.field("k").type == pa.int16()

    # values without an exact directory-name text keep their literal branches, beside the one scan of the rest
    odd = str(tmp_path / "odd")
    write_deltalake(odd, pa.table({"v": pa.array(range(7), pa.int64()),
                                   "c": ["a b", "1.5", "x/y", "é", None, "plain", "also-plain"]}),
                    partition_by=["c"])
    for sql in ["SELECT * FROM t", "SELECT v FROM t WHERE c = 'x/y'", "SELECT v FROM t WHERE c IS NULL",
                "SELECT c, count(*) AS n FROM t GROUP BY c"]:
        _same(odd, sql)
    _, ds, ctx = _rows(odd, "SELECT 1")
    plan = _plan(ctx, "SELECT v, c FROM t")
    assert ds.scan_path == "listing" and plan.count("DataSourceExec") == 6 and "c=plain/" in plan
    assert "c=also-plain/" in plan and plan.count("c=") == 2


def test_statistics_and_join_broadcast_of_deltakernel_sessions(tmp_path: Path) -> None:
    """DataFusion plans joins from the listing path's statistics (row counts and min / max from the footers:
    equal to the Delta log's); sessions deltakernel makes broadcast a build side of up to ~1M rows / 16 MiB
    (`session_defaults.py`) where DataFusion's defaults (131,072 rows / 1 MiB) repartition both sides; a
    caller's own session keeps DataFusion's settings."""
    import json

    from deltakernel import QueryBuilder
    from deltakernel.datafusion import session_defaults

    dim, fact = str(tmp_path / "dim"), str(tmp_path / "fact")
    write_deltalake(dim, pa.table({"id": pa.array(range(200_000), pa.int64())}))
    write_deltalake(fact, pa.table({"fk": pa.array([i % 250_000 for i in range(300_000)], pa.int64())}))
    log_stats = [json.loads(s) for s in DeltaTable(dim).snapshot.files.column("stats").to_pylist()]
    rows = sum(s["numRecords"] for s in log_stats)
    lo, hi = min(s["minValues"]["id"] for s in log_stats), max(s["maxValues"]["id"] for s in log_stats)
    sql = "SELECT count(*) AS n FROM fact JOIN dim ON fk = id"

    def plan_of(ctx: Any) -> str:
        dkdf.register(ctx, "dim", dim)
        dkdf.register(ctx, "fact", fact)
        assert ctx.sql(sql).to_pylist() == [{"n": 250_000}]
        return _plan(ctx, sql)

    plain = datafusion.SessionContext()
    plain.sql("SET datafusion.explain.show_statistics = true").collect()
    dkdf.register(plain, "dim", dim)
    scan = _plan(plain, "SELECT id FROM dim")
    assert f"Rows=Exact({rows})" in scan and f"Min=Exact(Int64({lo})) Max=Exact(Int64({hi}))" in scan
    assert "mode=Partitioned" in plan_of(datafusion.SessionContext())  # DataFusion's defaults
    assert "mode=CollectLeft" in plan_of(dkdf.session_context())
    qb = QueryBuilder()
    assert "mode=CollectLeft" in plan_of(qb.context)
    small = QueryBuilder(session_config={"datafusion.optimizer.hash_join_single_partition_threshold_rows": "1000",
                                         "datafusion.optimizer.hash_join_single_partition_threshold": "1000"})
    assert "mode=Partitioned" in plan_of(small.context)  # the caller's settings win
    assert int(session_defaults.DEFAULTS["datafusion.optimizer.hash_join_single_partition_threshold_rows"]) > rows
