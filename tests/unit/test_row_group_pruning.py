"""Row-group and page-index pruning (kernel/scan/row_groups.py, page_index.py): a filtered read of files with many
row groups and pages returns exactly the rows the same read returns with pruning (and the row filter left out where
the footer statistics prove every row matches) switched off, on random data,
row-group and page sizes and predicates (nulls, NaN, strings, timestamps, partitions, IN lists), and with deletion
vectors and row ids (physical row offsets)."""

from __future__ import annotations

import datetime as dt
import pathlib
import tempfile
from typing import Any

import deltalake
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltakernel import DeltaTable, WriterProperties, write_deltalake
from deltakernel.kernel.scan import scan as scan_module

_T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def _read_unpruned(monkeypatch: pytest.MonkeyPatch, path: str, filters: Any, **kw: Any) -> pa.Table:
    """The same read with every row group read (the reference)."""
    with monkeypatch.context() as m:
        m.setattr(scan_module, "row_groups_to_read", lambda *a, **k: None)
        m.setattr(scan_module, "read_pruned", lambda *a, **k: None)
        m.setattr(scan_module, "rows_all_match", lambda *a, **k: False)
        table, skipped = _read(path, filters, **kw)
    assert skipped == 0
    return table


def _rows(table: pa.Table) -> list[Any]:
    """Rows in a canonical order, NaN made comparable."""
    rows = [{k: "NaN" if isinstance(v, float) and v != v else v for k, v in r.items()} for r in table.to_pylist()]
    return sorted(rows, key=repr)


def _read(path: str, filters: Any, **kw: Any) -> tuple[pa.Table, int]:
    scan = DeltaTable(path).scan(filters=filters, **kw)
    table = scan.to_table()
    return table, scan.metrics.row_groups_skipped


_VALUES = {"i": st.integers(-20, 20), "f": st.sampled_from([float("nan"), -1.5, 0.0, 2.25, 7.0, float("inf")]),
           "s": st.sampled_from(["", "a", "ab", "b", "ba", "zz", "é"]),
           "t": st.integers(0, 50).map(lambda s: _T0 + dt.timedelta(seconds=s, microseconds=s * 7))}
ints, floats, strings, stamps = (st.one_of(st.none(), _VALUES[c]) for c in "ifst")


@st.composite
def _case(draw: st.DrawFn, dense: bool = False) -> tuple[pa.Table, int, list[str], list[Any], bool]:
    """`dense`: no nulls in the data (NaN still), so whole row groups often match a predicate outright."""
    n = draw(st.integers(0, 40))

    def col(name: str, values: Any) -> list[Any]:
        return draw(st.lists(_VALUES[name] if dense else values, min_size=n, max_size=n))

    table = pa.table({
        "i": pa.array(col("i", ints), pa.int64()),
        "f": pa.array(col("f", floats), pa.float64()),
        "s": pa.array(col("s", strings), pa.string()),
        "t": pa.array(col("t", stamps), pa.timestamp("us", tz="UTC")),
        "p": pa.array(draw(st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n)), pa.string()),
    })
    partitions = ["p"] if draw(st.booleans()) else []
    values = {"i": ints.filter(lambda v: v is not None), "f": floats.filter(lambda v: v is not None),
              "s": strings.filter(lambda v: v is not None), "t": stamps.filter(lambda v: v is not None),
              "p": st.sampled_from(["x", "y"])}
    conjunct = []
    for _ in range(draw(st.integers(1, 3))):
        col = draw(st.sampled_from(sorted(values)))
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">=", "in", "not in"]))
        value = draw(st.lists(values[col], min_size=1, max_size=3)) if "in" in op else draw(values[col])
        conjunct.append((col, op, value))
    filters: list[Any] = conjunct if draw(st.booleans()) else [conjunct, [draw(st.sampled_from(conjunct))]]
    return table, draw(st.integers(1, 6)), partitions, filters, draw(st.booleans())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(_case())
def test_pruned_reads_equal_unpruned_reads(monkeypatch: pytest.MonkeyPatch,
                                           case: tuple[pa.Table, int, list[str], list[Any], bool]) -> None:
    """deltakernel's writer (no page index) and delta-rs's with pages of 1-3 rows in row groups of up to 18 (the
    page index: page pruning inside the row groups)."""
    _check_pruned_read(monkeypatch, case)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(_case(dense=True))
def test_pruned_reads_without_nulls_equal_unpruned_reads(monkeypatch: pytest.MonkeyPatch,
                                                         case: tuple[pa.Table, int, list[str], list[Any], bool]) -> None:
    """The same without nulls in the data: whole row groups often match outright, so the row filter is left out
    (`rows_all_match`) and the page index skipped (`covered_row_groups`) - the rows must not change."""
    _check_pruned_read(monkeypatch, case)


def _check_pruned_read(monkeypatch: pytest.MonkeyPatch, case: tuple[pa.Table, int, list[str], list[Any], bool]
                       ) -> None:
    table, rg_rows, partitions, filters, pages = case
    with tempfile.TemporaryDirectory() as d:
        if pages:
            props = deltalake.WriterProperties(max_row_group_size=rg_rows * 3, data_page_row_count_limit=rg_rows % 3 + 1,
                                               write_batch_size=rg_rows % 3 + 1)
            deltalake.write_deltalake(d, table, partition_by=partitions or None, writer_properties=props)
        else:
            write_deltalake(d, table, partition_by=partitions or None,
                            writer_properties=WriterProperties(max_row_group_size=rg_rows))
        pruned, _ = _read(d, filters)
        full = _read_unpruned(monkeypatch, d, filters)
        assert pruned.schema == full.schema
        assert _rows(pruned) == _rows(full)


def test_row_groups_are_skipped_and_deletion_vectors_count_physical_rows(tmp_path: pathlib.Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten row groups of 100 rows: a range read skips the others; with a deletion vector and row ids the kept
    row groups (not the first ones of the file) still lose exactly the deleted rows and keep their row ids."""
    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([i % 7 for i in range(1000)], pa.int64())})
    write_deltalake(path, data, writer_properties=WriterProperties(max_row_group_size=100),
                    configuration={"delta.enableDeletionVectors": "true", "delta.enableRowTracking": "true"})
    filters = [[("id", ">=", 250), ("id", "<", 420)], [("id", ">=", 905)]]
    table, skipped = _read(path, filters)
    assert skipped == 6  # row groups 2, 3, 4 and 9 are read
    assert sorted(table.column("id").to_pylist()) == [*range(250, 420), *range(905, 1000)]
    DeltaTable(path).delete("v = 3")
    for kw in ({}, {"row_tracking": True}):
        pruned, skipped = _read(path, filters, **kw)
        full = _read_unpruned(monkeypatch, path, filters, **kw)
        assert skipped == 6
        assert _rows(pruned) == _rows(full)
        ids = sorted(pruned.column("id").to_pylist())
        assert ids == [i for i in [*range(250, 420), *range(905, 1000)] if i % 7 != 3]
        if kw:
            assert pruned.column("_row_id").to_pylist() == pruned.column("id").to_pylist()
    empty, skipped = _read(path, [("id", ">", 5000)])
    assert empty.num_rows == 0 and skipped == 0  # (the file itself is skipped by its log statistics)


def test_page_index_reads_only_the_matching_pages(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One row group of 1,000 rows in pages of 50 (delta-rs writes the page index): a 50-row range decodes two
    pages of every column, not the row group, and the rows are those of the unpruned read."""
    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(1000), pa.int64()), "s": pa.array([f"v{i % 13}" for i in range(1000)]),
                     "t": pa.array([_T0 + dt.timedelta(seconds=i) for i in range(1000)], pa.timestamp("us", tz="UTC"))})
    props = deltalake.WriterProperties(max_row_group_size=1000, data_page_row_count_limit=50, write_batch_size=50)
    deltalake.write_deltalake(path, data, writer_properties=props)
    decoded: list[int] = []
    real = scan_module.read_pruned

    def spy(*args: Any, **kwargs: Any) -> pa.Table | None:
        out = real(*args, **kwargs)
        decoded.append(-1 if out is None else out.num_rows)
        return out

    monkeypatch.setattr(scan_module, "read_pruned", spy)
    for filters, rows in (([("id", ">=", 120), ("id", "<", 170)], list(range(120, 170))),
                          ([("t", ">", _T0 + dt.timedelta(seconds=949.5))], list(range(950, 1000)))):
        decoded.clear()
        table, _ = _read(path, filters)
        assert decoded == [100 if rows[0] == 120 else 50]
        assert sorted(table.column("id").to_pylist()) == rows
        with monkeypatch.context() as m:
            m.setattr(scan_module, "read_pruned", real)
            assert _rows(table) == _rows(_read_unpruned(monkeypatch, path, filters))


def test_row_groups_inside_the_range_skip_the_page_index(tmp_path: pathlib.Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten row groups of 100 rows in pages of 20: a range that spans whole row groups is decided on the footer
    statistics (no footer decode, no page index: the page index could not rule out a page); a range that cuts
    into row groups still reads only the matching pages of those."""
    from deltakernel.kernel.scan import page_index

    path = str(tmp_path / "t")
    data = pa.table({"id": pa.array(range(1000), pa.int64()), "v": pa.array([i % 7 for i in range(1000)], pa.int64())})
    props = deltalake.WriterProperties(max_row_group_size=100, data_page_row_count_limit=20, write_batch_size=20)
    deltalake.write_deltalake(path, data, writer_properties=props)
    footers: list[int] = []
    real_footer, real_pruned = page_index._footer, scan_module.read_pruned
    decoded: list[int] = []

    def footer(source: Any) -> Any:
        footers.append(1)
        return real_footer(source)

    def spy(*args: Any, **kwargs: Any) -> pa.Table | None:
        out = real_pruned(*args, **kwargs)
        decoded.append(-1 if out is None else out.num_rows)
        return out

    monkeypatch.setattr(page_index, "_footer", footer)
    monkeypatch.setattr(scan_module, "read_pruned", spy)
    for filters, rows, footer_read, pages_rows in (
            ([("id", ">=", 200), ("id", "<", 400)], range(200, 400), False, -1),
            ([("id", ">=", 200), ("id", "<", 430)], range(200, 430), True, 240),  # groups 2-3 whole, 2 pages of 4
            ([("id", ">=", 250), ("id", "<", 270)], range(250, 270), True, 40)):
        footers.clear()
        decoded.clear()
        table, _ = _read(path, filters)
        assert sorted(table.column("id").to_pylist()) == list(rows)
        assert bool(footers) == footer_read and decoded == [pages_rows]
        with monkeypatch.context() as m:
            m.setattr(scan_module, "read_pruned", real_pruned)
            assert _rows(table) == _rows(_read_unpruned(monkeypatch, path, filters))
    pf = pq.ParquetFile(next(pathlib.Path(path).glob("*.parquet")))
    scan = DeltaTable(path).scan(filters=[("id", ">=", 150), ("id", "<", 500)])
    assert page_index.covered_row_groups(pf.metadata, pf.schema_arrow, scan.predicate, scan.schema, scan.mode,
                                         set()) == {2, 3, 4}


def test_row_filter_left_out_only_where_the_footer_proves_every_row_matches(tmp_path: pathlib.Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Row groups of 100 rows: a range spanning whole row groups of a column without nulls needs no row filter; a
    range cutting a row group, a column with nulls in the read row groups, a NULL literal and an extra row filter
    keep it - and every read returns the rows of the read with all pruning off."""
    path = str(tmp_path / "t")
    ids = pa.array(range(1000), pa.int64())
    data = pa.table({"id": ids, "n": pa.array([None if 600 <= i < 610 else i for i in range(1000)], pa.int64())})
    write_deltalake(path, data, writer_properties=WriterProperties(max_row_group_size=100))
    seen: list[bool] = []
    real = scan_module.rows_all_match

    def spy(*args: Any, **kwargs: Any) -> bool:
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(scan_module, "rows_all_match", spy)
    for filters, exact, n in (([("id", ">=", 200), ("id", "<", 400)], True, 200),
                              ([("n", ">=", 200), ("n", "<", 400)], True, 200),
                              ([("id", ">=", 200), ("id", "<", 450)], False, 250),
                              ([("n", ">=", 500), ("n", "<", 700)], False, 190),  # nulls in row group 6
                              ([("n", "!=", 5000)], False, 990),
                              ([("id", "not in", [5000, 6000])], True, 1000)):
        seen.clear()
        table, _ = _read(path, filters)
        assert seen == [exact] and table.num_rows == n, filters
        with monkeypatch.context() as m:
            m.setattr(scan_module, "rows_all_match", real)
            assert _rows(table) == _rows(_read_unpruned(monkeypatch, path, filters))
    scan = DeltaTable(path).scan(filters=[("id", ">=", 200), ("id", "<", 400)])
    pf = pq.ParquetFile(next(pathlib.Path(path).glob("*.parquet")))
    assert real(pf, [2, 3], scan.predicate, scan.schema, scan.mode, set())
    from deltakernel.kernel.expressions.predicate import Column as Col
    from deltakernel.kernel.expressions.predicate import Comparison, Literal, Or

    null_literal = Or(scan.predicate, Comparison("=", Col("id"), Literal(None)))
    assert not real(pf, [2, 3], null_literal, scan.schema, scan.mode, set())
    with_row_filter = scan_module.Scan(DeltaTable(path)._snapshot, predicate=scan.predicate,
                                       row_filter=pc.field("id") < 250)
    seen.clear()
    assert with_row_filter.to_table().column("id").to_pylist() == list(range(200, 250))
    assert seen == []  # (an extra row filter: not asked)
