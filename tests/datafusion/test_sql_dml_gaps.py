"""SQL DML on the embedded engine, the forms added for issue 10's gaps: INSERT with a partition spec, common
table expressions, `MERGE WITH SCHEMA EVOLUTION`, and subqueries in DELETE / UPDATE conditions.

Oracles: deltalake 1.6.6 doing the same change through its Python API on a copy of the same table (same rows
read back by deltalake, same metrics, same history operation); delta-spark's own InsertInto test suites for
partition specs (their expected rows, restated here); DuckDB's delta extension reading the result. Bad input
raises a typed DeltaError and leaves the table as it was.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import canon_rows, dml_data, duckdb_table, make_dml_table

datafusion = pytest.importorskip("datafusion")
deltalake = pytest.importorskip("deltalake")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaError, DeltaTable, QueryBuilder, write_deltalake
from deltakernel.cli import main as cli_main
from deltakernel.datafusion.cli import without_views
from deltakernel.datafusion.dml import DmlError, is_dml
from deltakernel.errors import InvalidFilterError, SchemaError

COLUMNS = ["id", "p", "v", "s"]
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64()), ("s", pa.string())])


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset, schema=SCHEMA)


def _source() -> pa.Table:
    """Matches ids 5..40 step 5, new ids 100..104 and a NULL key."""
    ids = [*range(5, 41, 5), 100, 101, 102, 103, 104, None]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": [["a", "b", "c"][(i or 0) % 3] for i in ids],
        "v": pa.array([None if i == 10 else -float(i or 1) for i in ids], pa.float64()),
        "s": [f"new{i}" for i in ids],
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dml_gap_bases")
    make_dml_table(root / "partitioned", "partitioned", _data)
    make_dml_table(root / "plain", "plain", _data)
    make_dml_table(root / "dv", "plain", _data, {"delta.enableDeletionVectors": "true"})
    deltalake.write_deltalake(str(root / "src"), _source())
    wide = _source().append_column("extra", pa.array([f"x{i}" for i in range(len(_source()))]))
    deltalake.write_deltalake(str(root / "wide"), wide)
    return {"partitioned": root / "partitioned", "plain": root / "plain", "dv": root / "dv",
            "src": root / "src", "wide": root / "wide"}


def _copy(base: Path, dest: Path) -> str:
    shutil.copytree(base, dest)
    return str(dest)


def _rows(table: Any, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    return canon_rows(without_views(pa.table(table)), columns or COLUMNS)


def _dl_rows(path: str, columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    """The rows as deltalake reads them (its QueryBuilder: its pyarrow reader refuses deletion vectors)."""
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return _rows(qb.execute("SELECT * FROM t").read_all(), columns)


def _metrics(table: Any) -> dict[str, int]:
    rows = pa.table(table).to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def _last_operation(path: str) -> str:
    return str(deltalake.DeltaTable(path).history(1)[0]["operation"])


def _session(path: str, bases: dict[str, Path]) -> QueryBuilder:
    return (QueryBuilder().register("t", DeltaTable(path)).register("src", DeltaTable(str(bases["src"])))
            .register("wide", DeltaTable(str(bases["wide"]))))


def _src(bases: dict[str, Path]) -> pa.Table:
    return deltalake.DeltaTable(str(bases["src"])).to_pyarrow_table()


def _dl_append(path: str, data: pa.Table, **kwargs: Any) -> dict[str, int]:
    deltalake.write_deltalake(path, data.select(COLUMNS).cast(SCHEMA), **kwargs)
    return {"num_affected_rows": data.num_rows, "num_inserted_rows": data.num_rows}


def _with_p(data: pa.Table, value: str) -> pa.Table:
    return data.set_column(1, "p", pa.array([value] * data.num_rows, pa.string()))


def _valid_ids(src: pa.Table) -> pa.Table:
    return src.filter(pc.is_valid(src["id"]))


# ----------------------------------------------------------------------------- differential cases
Oracle = Callable[[Any, pa.Table, str], dict[str, int]]  # (deltalake table, source, path) -> expected metrics

CASES: dict[str, tuple[str, Oracle]] = {
    "insert_into_static_partition": (
        "INSERT INTO t PARTITION (p = 'z') SELECT id + 1000, v, s FROM src WHERE id IS NOT NULL",
        lambda dt, src, path: _dl_append(path, _with_p(_valid_ids(src).set_column(
            0, "id", pc.add(_valid_ids(src)["id"], 1000)), "z"), mode="append"),
    ),
    "insert_into_static_partition_column_list": (
        "INSERT INTO TABLE t PARTITION (p = 'a') (s, id) VALUES ('x', 500), (NULL, 501)",
        lambda dt, src, path: _dl_append(path, pa.table({
            "id": pa.array([500, 501], pa.int64()), "p": ["a", "a"], "v": pa.nulls(2, pa.float64()),
            "s": ["x", None]}), mode="append"),
    ),
    "insert_overwrite_static_partition": (
        "INSERT OVERWRITE t PARTITION (p = 'b') SELECT id, v, s FROM src WHERE id > 100",
        lambda dt, src, path: _dl_append(path, _with_p(src.filter(pc.greater(src["id"], 100)), "b"),
                                         mode="overwrite", predicate="p = 'b'"),
    ),
    "insert_overwrite_dynamic_partition_static_mode": (  # no static value: Spark's static mode replaces all
        "INSERT OVERWRITE TABLE t PARTITION (p) SELECT * FROM src WHERE id IS NOT NULL",
        lambda dt, src, path: _dl_append(path, _valid_ids(src), mode="overwrite"),
    ),
    "cte_before_insert": (
        "WITH big AS (SELECT * FROM src WHERE id >= 100) INSERT INTO t SELECT * FROM big",
        lambda dt, src, path: _dl_append(path, src.filter(pc.greater_equal(src["id"], 100)), mode="append"),
    ),
    "cte_inside_insert": (
        "INSERT INTO t WITH big AS (SELECT * FROM src WHERE id >= 100) SELECT id, p, v, s FROM big",
        lambda dt, src, path: _dl_append(path, src.filter(pc.greater_equal(src["id"], 100)), mode="append"),
    ),
    "cte_both_places": (
        "WITH big AS (SELECT * FROM src WHERE id >= 100) "
        "INSERT INTO t WITH odd AS (SELECT * FROM big WHERE id % 2 = 1) SELECT * FROM odd",
        lambda dt, src, path: _dl_append(path, src.filter(pc.and_(pc.greater_equal(src["id"], 100), pc.equal(
            pc.bit_wise_and(src["id"], 1), 1))), mode="append"),
    ),
    "cte_merge_source": (
        "WITH s AS (SELECT * FROM src WHERE id <> 15) MERGE INTO t USING s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        lambda dt, src, path: _dl_merge(dt.merge(src.filter(pc.not_equal(src["id"], 15)), "t.id = s.id",
                                                 source_alias="s", target_alias="t")
                                        .when_matched_update_all().when_not_matched_insert_all().execute()),
    ),
    "cte_in_merge_subquery": (
        "MERGE INTO t USING (WITH x AS (SELECT * FROM src) SELECT * FROM x WHERE id < 30) AS s ON t.id = s.id "
        "WHEN MATCHED THEN DELETE",
        lambda dt, src, path: _dl_merge(dt.merge(src.filter(pc.less(src["id"], 30)), "t.id = s.id",
                                                 source_alias="s", target_alias="t")
                                        .when_matched_delete().execute()),
    ),
    "delete_in_subquery": (
        "DELETE FROM t AS a WHERE a.id IN (SELECT id FROM src WHERE id < 30) AND a.p <> 'c'",
        lambda dt, src, path: {"num_affected_rows": dt.delete(
            f"id IN ({_id_list(src, 30)}) AND p <> 'c'")["num_deleted_rows"]},
    ),
    "delete_in_subquery_with_nulls": (  # the subquery yields a NULL: it matches nothing, the rest still match
        "DELETE FROM t WHERE id IN (SELECT id FROM src)",
        lambda dt, src, path: {"num_affected_rows": dt.delete(
            f"id IN ({_id_list(src, 10**6)})")["num_deleted_rows"]},
    ),
    "delete_in_subquery_cte": (
        "WITH k AS (SELECT id AS key FROM src UNION ALL SELECT id FROM src) DELETE FROM t WHERE id IN (SELECT key FROM k)",
        lambda dt, src, path: {"num_affected_rows": dt.delete(
            f"id IN ({_id_list(src, 10**6)})")["num_deleted_rows"]},
    ),
    "update_in_subquery": (
        "UPDATE t SET s = concat(coalesce(s, 'x'), '!'), v = v * 2 WHERE id IN (SELECT id + 1 FROM src) AND v > 10",
        lambda dt, src, path: {"num_affected_rows": dt.update(
            updates={"s": "concat(coalesce(s, 'x'), '!')", "v": "v * 2"},
            predicate=f"id IN ({_id_list(src, 10**6, 1)}) AND v > 10")["num_updated_rows"]},
    ),
}


def _id_list(src: pa.Table, below: int, plus: int = 0) -> str:
    ids = [i + plus for i in src["id"].to_pylist() if i is not None and i < below]
    return ", ".join(str(i) for i in ids)


def _dl_merge(counts: dict[str, Any]) -> dict[str, int]:
    u, d, i = counts["num_target_rows_updated"], counts["num_target_rows_deleted"], counts["num_target_rows_inserted"]
    return {"num_affected_rows": u + d + i, "num_updated_rows": u, "num_deleted_rows": d, "num_inserted_rows": i}


_OPERATION = {"cte_merge_source": "MERGE", "cte_in_merge_subquery": "MERGE", "delete_in_subquery": "DELETE",
              "delete_in_subquery_with_nulls": "DELETE", "delete_in_subquery_cte": "DELETE",
              "update_in_subquery": "UPDATE"}


def _check(tmp_path: Path, bases: dict[str, Path], kind: str, case: str, run: Callable[[str, str], Any]) -> str:
    sql, oracle = CASES[case]
    mine = _copy(bases[kind], tmp_path / "mine")
    theirs = _copy(bases[kind], tmp_path / "theirs")
    expected_metrics = oracle(deltalake.DeltaTable(theirs), _src(bases), theirs)
    before = DeltaTable(mine).version()
    metrics, selected = run(mine, sql)
    assert _metrics(metrics) == expected_metrics
    expected = _dl_rows(theirs)
    assert _dl_rows(mine) == expected
    assert _rows(selected) == expected  # the session sees the new version
    assert DeltaTable(mine).version() == before + 1
    return mine


@pytest.mark.parametrize("case", sorted(CASES))
def test_statement_matches_deltalake(tmp_path: Path, bases: dict[str, Path], case: str) -> None:
    def run(path: str, sql: str) -> Any:
        qb = _session(path, bases)
        return qb.execute(sql).read_all(), qb.execute("SELECT * FROM t").read_all()

    mine = _check(tmp_path, bases, "partitioned", case, run)
    if case.startswith("insert") or (case.startswith("cte_") and "merge" not in case):
        assert _last_operation(mine) == _last_operation(str(tmp_path / "theirs")) == "WRITE"
    elif case in _OPERATION and _OPERATION[case] == "MERGE":
        assert _last_operation(mine) == "MERGE"
    # DuckDB's delta extension reads the same rows
    assert _rows(duckdb_table(mine)) == _dl_rows(mine)


@pytest.mark.parametrize("case", ["delete_in_subquery", "update_in_subquery", "cte_merge_source"])
def test_statement_on_deletion_vector_table_through_datafusion_sql(tmp_path: Path, bases: dict[str, Path],
                                                                    case: str) -> None:
    def run(path: str, sql: str) -> Any:
        ctx = dkdf.session_context()
        dkdf.register(ctx, "t", path)
        dkdf.register(ctx, "src", str(bases["src"]))
        return dkdf.sql(ctx, sql).to_arrow_table(), dkdf.sql(ctx, "SELECT * FROM t").to_arrow_table()

    mine = _check(tmp_path, bases, "dv", case, run)
    metrics = DeltaTable(mine).history(1)[0]["operationMetrics"]
    assert int(metrics.get("numTargetDeletionVectorsAdded", metrics.get("numDeletionVectorsAdded", 0))) > 0


def test_in_subquery_commits_a_merge_naming_the_statement(tmp_path: Path, bases: dict[str, Path]) -> None:
    """delta-spark has no DELETE with a subquery to copy: the commit is the MERGE it runs, and commitInfo says
    which statement it came from."""
    path = _copy(bases["partitioned"], tmp_path / "t")
    _session(path, bases).execute("DELETE FROM t WHERE id IN (SELECT id FROM src)").read_all()
    commit = [json.loads(line) for line in (Path(path) / "_delta_log" / f"{DeltaTable(path).version():020}.json")
              .read_text().splitlines()]
    info = next(a["commitInfo"] for a in commit if "commitInfo" in a)
    assert info["operation"] == "MERGE"
    assert info["deltakernelStatement"] == "DELETE"


def test_cli_runs_with_statements(tmp_path: Path, bases: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(bases["plain"], tmp_path / "t")
    sql = ("WITH n AS (SELECT id FROM src WHERE id >= 100) DELETE FROM t WHERE id IN (SELECT id - 90 FROM n); "
           "WITH q AS (SELECT 1 AS update) SELECT * FROM q")
    assert cli_main(["sql", sql, "-t", f"t={path}", "-t", f"src={bases['src']}", "--format", "json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert lines == [{"num_affected_rows": 5}, {"update": 1}]  # ids 10..14 deleted; the WITH query ran as is
    assert sorted(r["id"] for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist()) == \
        [i for i in range(90) if not 10 <= i <= 14]


def test_with_queries_still_go_to_datafusion(bases: dict[str, Path]) -> None:
    qb = QueryBuilder().register("src", DeltaTable(str(bases["src"])))
    assert is_dml("WITH x AS (SELECT 1) DELETE FROM t") and not is_dml("WITH x AS (SELECT 1) SELECT * FROM x")
    assert is_dml("WITH x AS (SELECT 'update' AS w) SELECT * FROM x")  # a candidate, parsed, then a query
    got = qb.execute("WITH x AS (SELECT 'update' AS w, count(*) AS n FROM src) SELECT * FROM x").read_all()
    assert without_views(got).to_pylist() == [{"w": "update", "n": 14}]
    got = qb.execute("WITH x AS (SELECT 1 AS a) SELECT a FROM x WHERE a = 1 -- merge").read_all()
    assert got.to_pylist() == [{"a": 1}]


# ----------------------------------------------------------------------------- INSERT ... PARTITION: delta-spark's suites
def _spark_suite_table(path: str, schema: pa.Schema, parts: list[str], rows: list[tuple[Any, ...]]) -> None:
    data = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
    write_deltalake(path, data, partition_by=parts)


@pytest.mark.parametrize("statement,expected", [
    # DeltaInsertIntoSQLSuite "insert overwrite should work with selecting constants"
    # (there on an empty table; here the table holds (5, 6, 7), (9, 2, 3), (8, 2, 4) to show what is replaced)
    ("INSERT OVERWRITE TABLE t1 PARTITION (c=3) SELECT 1, 2", [(1, 2, 3), (5, 6, 7), (8, 2, 4)]),
    ("INSERT OVERWRITE TABLE t1 PARTITION (b=2, c=3) SELECT 1", [(1, 2, 3), (5, 6, 7), (8, 2, 4)]),
    ("INSERT OVERWRITE TABLE t1 PARTITION (b=2, c) SELECT 1, 3", [(1, 2, 3), (5, 6, 7)]),
    ("INSERT INTO t1 PARTITION (b=2, c) SELECT 1, 3", [(1, 2, 3), (5, 6, 7), (9, 2, 3), (8, 2, 4)]),
])
def test_partition_spec_as_delta_spark_constants_suite(tmp_path: Path, statement: str,
                                                       expected: list[tuple[int, int, int]]) -> None:
    path = str(tmp_path / "t1")
    schema = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("c", pa.int32())])
    _spark_suite_table(path, schema, ["b", "c"], [(5, 6, 7), (9, 2, 3), (8, 2, 4)])
    qb = QueryBuilder().register("t1", DeltaTable(path))
    qb.execute(statement).read_all()
    got = sorted(tuple(r.values()) for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())
    assert got == sorted(expected)


@pytest.mark.parametrize("statement,expected", [
    # InsertIntoSQLOnlyTests (delta-spark's copy): static mode, the view holds (1,'a'), (2,'b'), (3,'c')
    ("INSERT OVERWRITE TABLE t PARTITION (id, p = 2) SELECT * FROM v", [(1, "a", 2), (2, "b", 2), (3, "c", 2),
                                                                          (4, "keep", 3)]),
    ("INSERT OVERWRITE TABLE t PARTITION (p = 2, id) SELECT * FROM v", [(1, "a", 2), (2, "b", 2), (3, "c", 2),
                                                                          (4, "keep", 3)]),
    ("INSERT OVERWRITE TABLE t PARTITION (p = 2) SELECT * FROM v", [(1, "a", 2), (2, "b", 2), (3, "c", 2),
                                                                      (4, "keep", 3)]),
    ("INSERT INTO t PARTITION (id = 23) SELECT data, 9 FROM v", [(2, "dummy", 2), (4, "also-deleted", 2),
                                                                 (4, "keep", 3), (23, "a", 9), (23, "b", 9),
                                                                 (23, "c", 9)]),
])
def test_partition_spec_as_delta_spark_sql_only_suite(tmp_path: Path, statement: str,
                                                     expected: list[tuple[Any, ...]]) -> None:
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("data", pa.string()), ("p", pa.int32())])
    _spark_suite_table(path, schema, ["id", "p"], [(2, "dummy", 2), (4, "also-deleted", 2), (4, "keep", 3)])
    qb = QueryBuilder().register("t", DeltaTable(path))
    view = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "data": ["a", "b", "c"]})
    qb.context.register_record_batches("v", [view.to_batches()])
    assert _metrics(qb.execute(statement).read_all())["num_inserted_rows"] == 3
    got = sorted(tuple(r[c] for c in ("id", "data", "p")) for r in deltalake.DeltaTable(path).to_pyarrow_table()
                 .to_pylist())
    assert got == sorted(expected)


def test_static_partition_values_take_the_column_type(tmp_path: Path) -> None:
    """Values are cast as Spark casts a partition spec's constants: '2024-01-02' to DATE, 7 to STRING."""
    path = str(tmp_path / "t")
    import datetime as dt

    write_deltalake(path, pa.table({"x": [1], "d": pa.array([dt.date(2024, 1, 1)]), "k": ["q"]}),
                    partition_by=["d", "k"])
    qb = QueryBuilder().register("t", DeltaTable(path))
    qb.execute("INSERT INTO t PARTITION (d = '2024-01-02', k = 7) VALUES (2)").read_all()
    qb.execute("INSERT OVERWRITE t PARTITION (d = DATE '2024-01-01', k = 'q') VALUES (3)").read_all()
    got = sorted(tuple(r.values()) for r in deltalake.DeltaTable(path).to_pyarrow_table().select(["x", "d", "k"])
                 .to_pylist())
    assert got == [(2, dt.date(2024, 1, 2), "7"), (3, dt.date(2024, 1, 1), "q")]


# ----------------------------------------------------------------------------- MERGE WITH SCHEMA EVOLUTION
@pytest.mark.parametrize("evolution", [True, False])
def test_merge_with_schema_evolution_matches_deltalake_merge_schema(tmp_path: Path, bases: dict[str, Path],
                                                                    evolution: bool) -> None:
    """`MERGE WITH SCHEMA EVOLUTION INTO` is deltalake's `merge_schema=True`; without it the source's extra
    column is ignored by `SET *` / `INSERT *` (delta-spark's rule), and the schema stays."""
    mine = _copy(bases["plain"], tmp_path / "mine")
    theirs = _copy(bases["plain"], tmp_path / "theirs")
    wide = deltalake.DeltaTable(str(bases["wide"])).to_pyarrow_table()
    expected = _dl_merge(deltalake.DeltaTable(theirs).merge(wide, "t.id = s.id", source_alias="s", target_alias="t",
                                                            merge_schema=evolution)
                         .when_matched_update_all().when_not_matched_insert_all().execute())
    qb = _session(mine, bases)
    clause = "WITH SCHEMA EVOLUTION" if evolution else ""
    got = qb.execute(f"-- upsert with the new column\nMERGE {clause} INTO t USING wide AS s "
                     "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").read_all()
    assert _metrics(got) == expected
    columns = [*COLUMNS, "extra"] if evolution else COLUMNS
    assert deltalake.DeltaTable(mine).schema().to_arrow().names == columns
    assert _dl_rows(mine, columns) == _dl_rows(theirs, columns)
    assert _rows(qb.execute("SELECT * FROM t").read_all(), columns) == _dl_rows(theirs, columns)
    assert _rows(duckdb_table(mine), columns) == _dl_rows(theirs, columns)


def test_schema_evolution_words_elsewhere_are_not_the_clause(tmp_path: Path, bases: dict[str, Path]) -> None:
    """Only `MERGE WITH SCHEMA EVOLUTION INTO` at the top level counts (tokens: not in a comment or a string);
    without it the target's schema does not change."""
    path = _copy(bases["plain"], tmp_path / "t")
    qb = _session(path, bases)
    sql = ("/* MERGE WITH SCHEMA EVOLUTION */ MERGE INTO t USING (SELECT id, 'MERGE WITH SCHEMA EVOLUTION' AS s "
           "FROM wide) AS w ON t.id = w.id WHEN MATCHED THEN UPDATE SET s = w.s")
    assert _metrics(qb.execute(sql).read_all())["num_updated_rows"] == 8
    assert deltalake.DeltaTable(path).schema().to_arrow().names == COLUMNS
    assert {r["s"] for r in deltalake.DeltaTable(path).to_pyarrow_table().to_pylist() if r["id"] == 5} == \
        {"MERGE WITH SCHEMA EVOLUTION"}


# ----------------------------------------------------------------------------- bad input
BAD: dict[str, tuple[str, type[DeltaError], str]] = {
    "partition_non_partition_column": ("INSERT INTO t PARTITION (id = 1) SELECT p, v, s FROM src", DmlError,
                                       "non-partition column 'id'"),
    "partition_dynamic_non_partition_column": ("INSERT INTO t PARTITION (s) SELECT * FROM src", DmlError,
                                               "non-partition column 's'"),
    "partition_twice": ("INSERT INTO t PARTITION (p = 'a', p = 'b') SELECT id, v, s FROM src", DmlError, "twice"),
    "partition_static_in_column_list": ("INSERT INTO t PARTITION (p = 'a') (id, p) VALUES (1, 'a')", DmlError,
                                        "column list"),
    "partition_arity": ("INSERT INTO t PARTITION (p = 'a') SELECT * FROM src", DmlError, "static partition"),
    "partition_not_constant": ("INSERT INTO t PARTITION (p = id) SELECT id, v, s FROM src", DmlError, "constant"),
    "partition_with_replace_where": ("INSERT INTO t PARTITION (p = 'a') REPLACE WHERE p = 'a' SELECT id, v, s "
                                     "FROM src", DeltaError, ""),
    "not_in_subquery": ("DELETE FROM t WHERE id NOT IN (SELECT id FROM src)", DmlError,
                        "Subqueries are not supported in the DELETE"),
    "exists_subquery": ("DELETE FROM t WHERE EXISTS (SELECT 1 FROM src WHERE src.id = t.id)", DmlError,
                        "Subqueries are not supported in the DELETE"),
    "scalar_subquery": ("DELETE FROM t WHERE id = (SELECT max(id) FROM src)", DmlError,
                        "Subqueries are not supported in the DELETE"),
    "in_subquery_under_or": ("UPDATE t SET s = 'x' WHERE id IN (SELECT id FROM src) OR id = 1", DmlError,
                             "Subqueries are not supported in the UPDATE"),
    "two_in_subqueries": ("DELETE FROM t WHERE id IN (SELECT id FROM src) AND id IN (SELECT id FROM src)",
                          DmlError, "Subqueries are not supported"),
    "subquery_in_set": ("UPDATE t SET v = (SELECT max(v) FROM src) WHERE id = 1", DmlError,
                        "Subqueries are not supported in the UPDATE"),
    "in_subquery_two_columns": ("DELETE FROM t WHERE id IN (SELECT id, v FROM src)", DmlError, "one column"),
    "in_subquery_correlated": ("DELETE FROM t WHERE id IN (SELECT id FROM src WHERE src.p = t.p)", DmlError,
                               "IN subquery"),
    "in_subquery_unknown_column": ("DELETE FROM t WHERE nope IN (SELECT id FROM src)", InvalidFilterError, "nope"),
    "schema_evolution_on_delete": ("DELETE WITH SCHEMA EVOLUTION FROM t", DmlError, ""),
    "cte_bad_query": ("WITH c AS (SELECT nope FROM src) INSERT INTO t SELECT * FROM c", DmlError, "nope"),
    "partition_value_type": ("INSERT INTO t2 PARTITION (k = 'abc') VALUES (1)", SchemaError, "'abc'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_typed_and_leaves_the_table_unchanged(tmp_path: Path, bases: dict[str, Path],
                                                           case: str) -> None:
    sql, error, fragment = BAD[case]
    path = _copy(bases["partitioned"], tmp_path / "t")
    path2 = str(tmp_path / "t2")
    write_deltalake(path2, pa.table({"x": [1], "k": pa.array([1], pa.int32())}), partition_by=["k"])
    before = (DeltaTable(path).version(), _dl_rows(path), DeltaTable(path2).version())
    qb = _session(path, bases).register("t2", DeltaTable(path2))
    with pytest.raises(error) as info:
        qb.execute(sql).read_all()
    assert fragment in str(info.value)
    assert (DeltaTable(path).version(), _dl_rows(path), DeltaTable(path2).version()) == before
    assert _rows(qb.execute("SELECT * FROM t").read_all()) == before[1]
