"""Which scans evaluate their predicate inside the Parquet reader (`deltakernel.datafusion.row_filters`): through
`dkdf.sql` / `QueryBuilder.execute`, a Delta table whose scans only have the query's own predicates reads without
the row filter (a FilterExec after decoding), a table reached by a join's dynamic filter keeps it, and the rows,
the result's column names and the session's tables are those of a plain `ctx.sql`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

datafusion = pytest.importorskip("datafusion")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaTable, QueryBuilder, write_deltalake
from deltakernel.datafusion import row_filters

pytestmark = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the listing path needs >= 2 CPUs (native.available)")

FILTER_ONLY = "SELECT sum(t.id) FROM t WHERE x = 2 AND s <> 's1'"
JOIN = "SELECT t.id, d.tag FROM d JOIN t ON d.k = t.id WHERE d.tag = 'b'"


@pytest.fixture(scope="module")
def dim(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small dimension table: keys 0, 1000, ..., 5000 of `ranges`' ids, two tags."""
    path = str(tmp_path_factory.mktemp("df-rowfilter") / "dim")
    write_deltalake(path, pa.table({"k": pa.array(range(0, 6000, 1000), pa.int64()),
                                    "tag": ["a", "b"] * 3}))
    return path


def _ctx(ranges: str, dim: str) -> Any:
    ctx = dkdf.session_context()
    assert dkdf.register(ctx, "t", ranges).scan_path == "listing"
    assert dkdf.register(ctx, "d", dim).scan_path == "listing"
    return ctx


def _rows(df: Any) -> list[str]:
    return sorted(map(str, df.to_arrow_table().to_pylist()))


def _probe_filtered_after_decoding(df: Any, column: str) -> bool:
    """Whether the plan filters `column`'s table in a FilterExec (no row filter in its scan)."""
    plan = df.execution_plan().display_indent()
    return any(line.strip().startswith("FilterExec") and f"{column}@" in line for line in plan.splitlines())


def test_filter_only_query_reads_without_the_row_filter(ranges: str, dim: str) -> None:
    ctx = _ctx(ranges, dim)
    plain, chosen = ctx.sql(FILTER_ONLY), dkdf.sql(ctx, FILTER_ONLY)
    assert [k[2] for k in row_filters.tables_without_row_filter(ctx, plain.execution_plan())] == ["t"]
    assert not _probe_filtered_after_decoding(plain, "x")  # the registered view: predicate in the reader
    assert _probe_filtered_after_decoding(chosen, "x")  # the twin: filtered after decoding
    assert "predicate=x@" in chosen.execution_plan().display_indent()  # ... still pruning with it
    assert chosen.schema() == plain.schema() and chosen.schema().names == ["sum(t.id)"]
    assert _rows(chosen) == _rows(plain)
    names = ctx.catalog().schema().names()
    assert names == {"t", "d"}  # the hidden twin names were only there while planning


def test_join_keeps_the_row_filter_where_the_dynamic_filter_arrives(ranges: str, dim: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _ctx(ranges, dim)
    plan = ctx.sql(JOIN).execution_plan()
    probe = [s for s in row_filters.scans(plan) if s.dynamic]
    assert len(probe) == 1 and probe[0].selective and not probe[0].static  # t: probe side of a filtered build
    assert [k[2] for k in row_filters.tables_without_row_filter(ctx, plan)] == ["d"]  # d: its own predicate only
    chosen = dkdf.sql(ctx, JOIN)
    assert _probe_filtered_after_decoding(chosen, "tag") and not _probe_filtered_after_decoding(chosen, "id")
    assert _rows(chosen) == _rows(ctx.sql(JOIN)) == [str({"id": k, "tag": "b"}) for k in (1000, 3000, 5000)]
    monkeypatch.setattr(row_filters, "POLICY", "off")
    assert not _probe_filtered_after_decoding(dkdf.sql(ctx, JOIN), "tag")


def test_unreduced_build_side_counts_only_under_the_selective_policy(ranges: str, dim: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sql = "SELECT d.tag, count(*) AS n FROM d JOIN t ON d.k = t.id WHERE t.x = 0 GROUP BY d.tag"
    ctx = _ctx(ranges, dim)
    plan = ctx.sql(sql).execution_plan()
    (probe,) = [s for s in row_filters.scans(plan) if s.dynamic]
    assert probe.static and not probe.selective  # every key of d reaches t: its dynamic filter removes little
    assert row_filters.tables_without_row_filter(ctx, plan) == {}
    monkeypatch.setattr(row_filters, "POLICY", "selective")
    assert [k[2] for k in row_filters.tables_without_row_filter(ctx, plan)] == ["t"]
    assert _probe_filtered_after_decoding(dkdf.sql(ctx, sql), "x")
    assert _rows(dkdf.sql(ctx, sql)) == _rows(ctx.sql(sql))


def test_statements_it_leaves_alone(ranges: str, dim: str) -> None:
    ctx = _ctx(ranges, dim)
    shadowed = "WITH d AS (SELECT * FROM d WHERE tag = 'a') SELECT count(*) AS n FROM d"
    assert not _probe_filtered_after_decoding(dkdf.sql(ctx, shadowed), "tag")  # a CTE named d: no rewrite
    assert _rows(dkdf.sql(ctx, shadowed)) == [str({"n": 3})]
    cte = "WITH u AS (SELECT * FROM d WHERE tag = 'a') SELECT count(*) AS n FROM u"
    assert _probe_filtered_after_decoding(dkdf.sql(ctx, cte), "tag")  # inside a CTE of another name: rewritten
    assert _rows(dkdf.sql(ctx, cte)) == [str({"n": 3})]
    qualified = "SELECT count(*) AS n FROM public.t WHERE x = 2"
    assert not _probe_filtered_after_decoding(dkdf.sql(ctx, qualified), "x")
    assert _rows(dkdf.sql(ctx, qualified)) == _rows(ctx.sql(qualified))
    aliased = "SELECT u.id FROM t AS u WHERE u.x = 2 AND u.id < 20"
    assert _probe_filtered_after_decoding(dkdf.sql(ctx, aliased), "x")
    assert _rows(dkdf.sql(ctx, aliased)) == _rows(ctx.sql(aliased))
    dkdf.sql(ctx, "CREATE VIEW v AS SELECT id FROM t WHERE x = 2")  # not a query: run once, as ctx.sql
    assert ctx.table_exist("v") and not row_filters.is_query("CREATE VIEW w AS SELECT 1")
    assert row_filters.is_query("  -- c\n/* x */ (SELECT 1)") and row_filters.is_query("with a as (select 1) select 1")


def test_query_builder_reads_the_same_rows(ranges: str, dim: str, tmp_path: Path) -> None:
    qb = QueryBuilder().register("t", DeltaTable(ranges)).register("d", DeltaTable(dim))
    got = qb.execute(JOIN).read_all().to_pylist()
    assert sorted(r["id"] for r in got) == [1000, 3000, 5000]
    assert qb.execute(FILTER_ONLY).read_all().column(0).to_pylist() == \
        dkdf.sql(_ctx(ranges, dim), FILTER_ONLY).to_arrow_table().column(0).to_pylist()


def test_dml_streams_a_join_source(ranges: str, dim: str, tmp_path: Path) -> None:
    """INSERT ... SELECT over a join of listing views streams every partition at once (`streams.py`): read one
    partition after the other, the join's dynamic filter waited for a partition nobody polled (a hang)."""
    out = str(tmp_path / "out")
    write_deltalake(out, pa.table({"id": pa.array([], pa.int64()), "tag": pa.array([], pa.string())}))
    ctx = _ctx(ranges, dim)
    dkdf.register(ctx, "o", out)
    dkdf.sql(ctx, f"INSERT INTO o {JOIN}").collect()
    assert sorted(DeltaTable(out).to_pyarrow_table().column("id").to_pylist()) == [1000, 3000, 5000]
