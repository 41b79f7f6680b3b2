"""Delta DML in SQL (Spark syntax) on the embedded engine, through all three entry points — `QueryBuilder`,
`deltakernel sql` (the CLI's `main()`) and `deltakernel.datafusion.sql` — against deltalake 1.6.6 doing the
same operation through its Python API on a copy of the same table: same rows afterwards (read back by
deltalake from both copies), same metrics, and a SELECT in the same session sees the new rows. Bad input
raises a typed DeltaError and leaves the table (version and rows) as it was.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers import canon_rows, dml_data, make_dml_table

datafusion = pytest.importorskip("datafusion")
deltalake = pytest.importorskip("deltalake")

import deltakernel.datafusion as dkdf
from deltakernel import DeltaError, DeltaTable, QueryBuilder, write_deltalake
from deltakernel.cli import main as cli_main
from deltakernel.datafusion.cli import without_views
from deltakernel.datafusion.dml import DmlError, DmlSyntaxError, DmlTargetError
from deltakernel.errors import InvalidFilterError, SchemaError
from deltakernel.operations.dml.merge.plan import MergeDuplicateMatchError

COLUMNS = ["id", "p", "v", "s"]
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64()), ("s", pa.string())])


def _data(n: int, offset: int = 0) -> pa.Table:
    return dml_data(n, offset, schema=SCHEMA)


def _source() -> pa.Table:
    """Matches ids 5..40 step 5 (one with a NULL value), new ids 100..104 and a NULL key."""
    ids = [*range(5, 41, 5), 100, 101, 102, 103, 104, None]
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": [["a", "b", "c"][(i or 0) % 3] for i in ids],
        "v": pa.array([None if i == 10 else -float(i or 1) for i in ids], pa.float64()),
        "s": [f"new{i}" for i in ids],
    }, schema=SCHEMA)


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One pristine table per kind, plus the MERGE / INSERT source table; copied before each run."""
    root = tmp_path_factory.mktemp("dml_bases")
    out = {}
    for kind in ("plain", "partitioned"):
        make_dml_table(root / kind, kind, _data)
        out[kind] = root / kind
    make_dml_table(root / "dv", "partitioned", _data, {"delta.enableDeletionVectors": "true"})
    DeltaTable(str(root / "dv")).delete("id % 9 = 0")  # the table already has deletion vectors
    out["dv"] = root / "dv"
    deltalake.write_deltalake(str(root / "src"), _source())
    out["src"] = root / "src"
    return out


def _copy(base: Path, dest: Path) -> str:
    shutil.copytree(base, dest)
    return str(dest)


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return canon_rows(without_views(pa.table(table)), COLUMNS)


def _dl_rows(path: str) -> list[tuple[Any, ...]]:
    """The table's rows as deltalake reads them (its QueryBuilder: its pyarrow reader refuses DVs)."""
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path))
    return _rows(qb.execute("SELECT * FROM t").read_all())


def _metrics(table: pa.Table) -> dict[str, int]:
    rows = pa.table(table).to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


# ----------------------------------------------------------------------------- the three entry points
Engine = Callable[[str, str, list[str]], list[pa.Table]]


def run_query_builder(path: str, src: str, statements: list[str]) -> list[pa.Table]:
    qb = QueryBuilder().register("t", DeltaTable(path)).register("src", DeltaTable(src))
    return [pa.table(qb.execute(s).read_all()) for s in statements]


def run_datafusion(path: str, src: str, statements: list[str]) -> list[pa.Table]:
    ctx = dkdf.session_context()
    dkdf.register(ctx, "t", path)
    dkdf.register(ctx, "src", src)
    return [dkdf.sql(ctx, s).to_arrow_table() for s in statements]


def run_cli(path: str, src: str, statements: list[str]) -> list[pa.Table]:
    """`deltakernel sql "<s1>; <s2>" -t t=... -t src=... --format json` in-process: metric rows and the
    table's rows come out as JSON lines, told apart by their keys."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["sql", ";\n".join(statements), "-t", f"t={path}", "-t", f"src={src}", "--format", "json"])
    assert code == 0
    results: list[list[dict[str, Any]]] = []
    for line in out.getvalue().splitlines():
        row = json.loads(line)
        kind = "metrics" if all(k.startswith("num_") for k in row) else "rows"
        if not results or results[-1][0].get("__kind") != kind:
            results.append([{"__kind": kind}])
        results[-1].append(row)
    tables = []
    for group in results:
        kind, rows = group[0]["__kind"], group[1:]
        tables.append(pa.Table.from_pylist(rows, schema=SCHEMA if kind == "rows" else None))
    if len(tables) == len(statements) - 1:  # the final SELECT printed no JSON line: no rows
        tables.append(SCHEMA.empty_table())
    return tables


ENGINES: dict[str, Engine] = {"query_builder": run_query_builder, "cli": run_cli, "datafusion": run_datafusion}


# ----------------------------------------------------------------------------- statements and their oracles
Oracle = Callable[[Any, pa.Table, str], dict[str, int]]  # (deltalake table, source, path) -> expected metrics


def _dl_merge(counts: dict[str, Any]) -> dict[str, int]:
    u, d, i = counts["num_target_rows_updated"], counts["num_target_rows_deleted"], counts["num_target_rows_inserted"]
    return {"num_affected_rows": u + d + i, "num_updated_rows": u, "num_deleted_rows": d, "num_inserted_rows": i}


def _dl_insert(path: str, data: pa.Table, **kwargs: Any) -> dict[str, int]:
    deltalake.write_deltalake(path, data.select(COLUMNS).cast(SCHEMA), **kwargs)
    return {"num_affected_rows": data.num_rows, "num_inserted_rows": data.num_rows}


CASES: dict[str, tuple[str, Oracle]] = {
    "delete_where": (
        "DELETE FROM t AS a WHERE a.id % 3 = 0 AND a.s IS NOT NULL",
        lambda dt, src, p: {"num_affected_rows": dt.delete("id % 3 = 0 AND s IS NOT NULL")["num_deleted_rows"]},
    ),
    "delete_all": (
        "DELETE FROM t",
        lambda dt, src, p: {"num_affected_rows": dt.delete()["num_deleted_rows"]},
    ),
    "update": (
        "UPDATE t SET v = v * 2, `s` = concat(coalesce(t.s, 'x'), '!') WHERE id < 20 OR p = 'c'",
        lambda dt, src, p: {"num_affected_rows": dt.update(
            updates={"v": "v * 2", "s": "concat(coalesce(s, 'x'), '!')"}, predicate="id < 20 OR p = 'c'",
        )["num_updated_rows"]},
    ),
    "insert_values": (
        "INSERT INTO t (s, id) VALUES ('x', 100), (NULL, 101)",
        lambda dt, src, p: _dl_insert(p, pa.table({"id": pa.array([100, 101], pa.int64()),
                                                   "p": pa.nulls(2, pa.string()), "v": pa.nulls(2, pa.float64()),
                                                   "s": ["x", None]}), mode="append"),
    ),
    "insert_select": (
        "INSERT INTO TABLE t SELECT id + 1000, p, v, s FROM src WHERE id > 30",
        lambda dt, src, p: _dl_insert(
            p, src.filter(pc.greater(src["id"], 30)).set_column(0, "id", pc.add(
                src.filter(pc.greater(src["id"], 30))["id"], 1000)), mode="append"),
    ),
    "insert_overwrite": (
        "INSERT OVERWRITE TABLE t SELECT * FROM src WHERE id IS NOT NULL",
        lambda dt, src, p: _dl_insert(p, src.filter(pc.is_valid(src["id"])), mode="overwrite"),
    ),
    "replace_where": (
        "INSERT INTO t REPLACE WHERE p = 'a' SELECT id, p, v, s FROM src WHERE p = 'a'",
        lambda dt, src, p: _dl_insert(p, src.filter(pc.equal(src["p"], "a")), mode="overwrite",
                                      predicate="p = 'a'"),
    ),
    "merge_upsert": (
        "MERGE INTO t USING src ON t.id = src.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        lambda dt, src, p: _dl_merge(
            dt.merge(src, "t.id = src.id", source_alias="src", target_alias="t")
            .when_matched_update_all().when_not_matched_insert_all().execute()),
    ),
    "merge_clauses": (
        "MERGE INTO t AS tgt USING (SELECT * FROM src WHERE id <> 15) AS s2 ON tgt.id = s2.id "
        "WHEN MATCHED AND s2.v IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET tgt.v = s2.v, s = concat(coalesce(tgt.s, 'x'), '+') "
        "WHEN NOT MATCHED BY TARGET AND s2.id > 101 THEN INSERT (id, p, s) VALUES (s2.id, s2.p, 'new') "
        "WHEN NOT MATCHED BY SOURCE AND tgt.id > 80 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET s = 'orphan'",
        lambda dt, src, p: _dl_merge(
            dt.merge(src.filter(pc.not_equal(src["id"], 15)), "tgt.id = s2.id", source_alias="s2",
                     target_alias="tgt")
            .when_matched_delete("s2.v IS NULL")
            .when_matched_update({"v": "s2.v", "s": "concat(coalesce(tgt.s, 'x'), '+')"})
            .when_not_matched_insert({"id": "s2.id", "p": "s2.p", "s": "'new'"}, "s2.id > 101")
            .when_not_matched_by_source_delete("tgt.id > 80")
            .when_not_matched_by_source_update({"s": "'orphan'"}).execute()),
    ),
}


def _check(tmp_path: Path, bases: dict[str, Path], kind: str, engine: str, case: str) -> None:
    sql, oracle = CASES[case]
    mine = _copy(bases[kind], tmp_path / "mine")
    theirs = _copy(bases[kind], tmp_path / "theirs")
    src = str(bases["src"])
    source = deltalake.DeltaTable(src).to_pyarrow_table()
    expected_metrics = oracle(deltalake.DeltaTable(theirs), source, theirs)
    before = DeltaTable(mine).version()

    metrics, selected = ENGINES[engine](mine, src, [sql, "SELECT * FROM t"])

    assert _metrics(metrics) == expected_metrics
    expected = _dl_rows(theirs)
    assert _dl_rows(mine) == expected  # the committed table, read by deltalake
    assert _rows(selected) == expected  # the same session sees the new version
    assert DeltaTable(mine).version() == before + 1


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("case", sorted(CASES))
def test_statement_matches_deltalake_partitioned(tmp_path: Path, bases: dict[str, Path], engine: str,
                                                 case: str) -> None:
    _check(tmp_path, bases, "partitioned", engine, case)


@pytest.mark.parametrize("case", sorted(CASES))
def test_statement_matches_deltalake_plain(tmp_path: Path, bases: dict[str, Path], case: str) -> None:
    _check(tmp_path, bases, "plain", "query_builder", case)


@pytest.mark.parametrize("case", ["delete_where", "update", "merge_clauses", "replace_where"])
@pytest.mark.parametrize("engine", ["query_builder", "datafusion"])
def test_statement_on_deletion_vector_table(tmp_path: Path, bases: dict[str, Path], engine: str,
                                            case: str) -> None:
    _check(tmp_path, bases, "dv", engine, case)
    # DELETE / UPDATE wrote deletion vectors (deltalake rewrote its copy): same rows all the same
    if case in ("delete_where", "update"):
        metrics = DeltaTable(str(tmp_path / "mine")).history(1)[0]["operationMetrics"]
        added = metrics.get("numDeletionVectorsAdded", metrics.get("numTargetDeletionVectorsAdded"))
        assert int(added) > 0, metrics


def test_nothing_matched_commits_nothing(tmp_path: Path, bases: dict[str, Path]) -> None:
    path = _copy(bases["partitioned"], tmp_path / "t")
    before = DeltaTable(path).version()
    qb = QueryBuilder().register("t", DeltaTable(path))
    assert _metrics(qb.execute("DELETE FROM t WHERE id < 0").read_all()) == {"num_affected_rows": 0}
    assert _metrics(qb.execute("UPDATE t SET s = 'x' WHERE id < 0").read_all()) == {"num_affected_rows": 0}
    assert DeltaTable(path).version() == before


def test_statements_chain_in_one_session(tmp_path: Path, bases: dict[str, Path]) -> None:
    """Each statement reads the version the previous one committed (the registration is re-pinned);
    the DeltaTable that was registered keeps its own version."""
    path = _copy(bases["plain"], tmp_path / "t")
    dt = DeltaTable(path)
    v0 = dt.version()
    qb = QueryBuilder().register("t", dt).register("src", DeltaTable(str(bases["src"])))
    qb.execute("INSERT INTO t SELECT * FROM src WHERE id >= 100")
    qb.execute("UPDATE t SET s = 'big' WHERE id >= 100")
    qb.execute("DELETE FROM t WHERE id = 104")
    got = qb.execute("SELECT id, s FROM t WHERE id >= 100 ORDER BY id").read_all().to_pylist()
    assert got == [{"id": i, "s": "big"} for i in range(100, 104)]
    assert dt.version() == v0
    assert DeltaTable(path).version() == v0 + 3


def test_merge_source_from_delta_scan_and_case_insensitive_names(tmp_path: Path, bases: dict[str, Path]) -> None:
    """The source query runs in the session (here `delta_scan`); Spark resolves names case-insensitively."""
    path = _copy(bases["plain"], tmp_path / "t")
    theirs = _copy(bases["plain"], tmp_path / "theirs")
    src = str(bases["src"]).replace("'", "''")
    ctx = dkdf.session_context()
    dkdf.register(ctx, "target", path)
    m = dkdf.sql(ctx, f"MERGE INTO TARGET AS T USING delta_scan('{src}') S ON T.ID = S.Id "
                      "WHEN MATCHED THEN DELETE").to_arrow_table()
    expected = deltalake.DeltaTable(theirs).merge(
        deltalake.DeltaTable(str(bases["src"])).to_pyarrow_table(), "t.id = s.id", source_alias="s",
        target_alias="t").when_matched_delete().execute()
    assert _metrics(m) == _dl_merge(expected)
    assert _dl_rows(path) == _dl_rows(theirs)


def test_create_external_table_and_catalog_targets(tmp_path: Path, bases: dict[str, Path]) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    path = _copy(bases["plain"], lake / "sales")
    ctx = dkdf.session_context()
    dkdf.sql(ctx, f"CREATE EXTERNAL TABLE \"Sales\" STORED AS DELTA LOCATION '{path}'")
    assert _metrics(dkdf.sql(ctx, "DELETE FROM `Sales` WHERE id < 10").to_arrow_table()) == {"num_affected_rows": 10}
    assert dkdf.sql(ctx, 'SELECT min(id) AS m FROM "Sales"').to_arrow_table().to_pylist() == [{"m": 10}]
    dkdf.register_catalog(ctx, "lake", str(lake))
    assert _metrics(dkdf.sql(ctx, "UPDATE lake.public.sales SET s = 'c' WHERE id < 20").to_arrow_table()) == \
        {"num_affected_rows": 10}
    got = dkdf.sql(ctx, "SELECT count(*) AS n FROM lake.public.sales WHERE s = 'c'").to_arrow_table()
    assert got.to_pylist() == [{"n": 10}]
    assert DeltaTable(path).version() == 4


def test_non_delta_statements_go_to_datafusion(bases: dict[str, Path]) -> None:
    """DML on DataFusion's own tables and plain queries behave exactly as `ctx.sql`."""
    ctx = dkdf.session_context()
    dkdf.sql(ctx, "CREATE TABLE mem AS VALUES (1), (2)")
    assert dkdf.sql(ctx, "INSERT INTO mem VALUES (3)").to_arrow_table().to_pylist() == [{"count": 1}]
    assert dkdf.sql(ctx, "DELETE FROM mem WHERE column1 = 1").to_arrow_table().to_pylist() == [{"count": 1}]
    assert sorted(r["column1"] for r in dkdf.sql(ctx, "SELECT * FROM mem").to_arrow_table().to_pylist()) == [2, 3]


# ----------------------------------------------------------------------------- bad input
BAD: dict[str, tuple[str, type[DeltaError], str]] = {
    "syntax": ("DELETE FROM t WHERE", DmlSyntaxError, "syntax error"),
    "syntax_token": ("UPDATE t SET s = 'open WHERE id = 1", DmlSyntaxError, "syntax error"),
    "update_without_set": ("UPDATE t SET WHERE id = 1", DmlSyntaxError, "SET"),
    "merge_without_on": ("MERGE INTO t USING src WHEN MATCHED THEN DELETE", DmlSyntaxError, "MERGE"),
    "unknown_table": ("DELETE FROM nope WHERE id = 1", DmlTargetError, "nope"),
    "merge_into_memory_table": ("MERGE INTO mem USING src ON mem.column1 = src.id WHEN MATCHED THEN DELETE",
                                DmlTargetError, "not a Delta table"),
    "unknown_column_delete": ("DELETE FROM t WHERE nope = 1", InvalidFilterError, "nope"),
    "unknown_column_update": ("UPDATE t SET nope = 1", SchemaError, "nope"),
    "unknown_column_insert": ("INSERT INTO t (id, nope) VALUES (1, 2)", DmlError, "nope"),
    "unknown_column_merge": ("MERGE INTO t USING src ON t.id = src.nope WHEN MATCHED THEN DELETE",
                             InvalidFilterError, "nope"),
    "type_mismatch_update": ("UPDATE t SET id = 'abc' WHERE id = 1", SchemaError, "abc"),
    "type_mismatch_insert": ("INSERT INTO t VALUES ('x', 'a', 1.0, 'y')", SchemaError, "id"),
    "arity_insert": ("INSERT INTO t VALUES (1, 'a')", DmlError, "2 column(s)"),
    "duplicate_source_keys": ("MERGE INTO t USING (SELECT * FROM src UNION ALL SELECT * FROM src) s "
                              "ON t.id = s.id WHEN MATCHED THEN UPDATE SET *", MergeDuplicateMatchError, ""),
    "merge_source_query_fails": ("MERGE INTO t USING (SELECT nope FROM src) s ON t.id = s.id "
                                 "WHEN MATCHED THEN DELETE", DmlError, "nope"),
    "unreachable_clause": ("MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN DELETE "
                           "WHEN MATCHED AND src.v > 0 THEN UPDATE SET *", DmlError, "last WHEN MATCHED"),
    "subquery_in_delete": ("DELETE FROM t WHERE id NOT IN (SELECT id FROM src)", DmlError, "subqueries"),
    "replace_where_violated": ("INSERT INTO t REPLACE WHERE p = 'a' SELECT * FROM src", DeltaError, "p = 'a'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_typed_and_leaves_the_table_unchanged(tmp_path: Path, bases: dict[str, Path],
                                                           case: str) -> None:
    sql, error, fragment = BAD[case]
    path = _copy(bases["partitioned"], tmp_path / "t")
    before_version, before_rows = DeltaTable(path).version(), _dl_rows(path)
    qb = QueryBuilder().register("t", DeltaTable(path)).register("src", DeltaTable(str(bases["src"])))
    qb.context.sql("CREATE TABLE mem AS VALUES (1), (2)")
    with pytest.raises(error) as info:
        qb.execute(sql)
    assert fragment in str(info.value)
    assert DeltaTable(path).version() == before_version
    assert _dl_rows(path) == before_rows
    assert _rows(qb.execute("SELECT * FROM t").read_all()) == before_rows  # the session still works


def test_bad_input_through_datafusion_sql_and_cli(tmp_path: Path, bases: dict[str, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = _copy(bases["partitioned"], tmp_path / "t")
    before = DeltaTable(path).version()
    ctx = dkdf.session_context()
    dkdf.register(ctx, "t", path)
    with pytest.raises(InvalidFilterError, match="nope"):
        dkdf.sql(ctx, "UPDATE t SET s = 'x' WHERE nope > 1")
    with pytest.raises(DmlTargetError, match="unknown table 'u'"):
        dkdf.sql(ctx, "DELETE FROM u")
    assert cli_main(["sql", "DELETE FROM t WHERE", "-t", f"t={path}"]) == 1
    assert "error: DmlSyntaxError: syntax error" in capsys.readouterr().err
    assert cli_main(["sql", "INSERT INTO t (id) VALUES ('x')", "-t", f"t={path}"]) == 1
    assert "error: SchemaError" in capsys.readouterr().err
    assert DeltaTable(path).version() == before


def test_import_deltakernel_imports_neither_sqlglot_nor_datafusion() -> None:
    code = ("import sys, deltakernel\n"
            "assert 'sqlglot' not in sys.modules and 'datafusion' not in sys.modules, 'eager import'\n"
            "from deltakernel import QueryBuilder\n"
            "QueryBuilder().execute('SELECT 1').read_all()\n"
            "assert 'sqlglot' not in sys.modules, 'a SELECT imported sqlglot'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_tables_written_by_sql_read_back_by_write_deltalake_appends(tmp_path: Path) -> None:
    """A table created by deltakernel, INSERTed into by SQL with a column list: missing columns are NULL."""
    path = str(tmp_path / "t")
    write_deltalake(path, _data(3))
    qb = QueryBuilder().register("t", DeltaTable(path))
    assert _metrics(qb.execute("INSERT INTO t (id) SELECT 7").read_all()) == {"num_affected_rows": 1,
                                                                             "num_inserted_rows": 1}
    row = deltalake.DeltaTable(path).to_pyarrow_table().filter(pc.equal(pc.field("id"), 7)).to_pylist()
    assert row == [{"id": 7, "p": None, "v": None, "s": None}]


def test_spark_syntax_round_trips_to_the_kernel(tmp_path: Path) -> None:
    """Backticked names with spaces, alias-qualified columns, escaped string literals, `<=>`, Spark's typed
    literals: what sqlglot hands to the kernel means what Spark means (expected rows computed in memory)."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "my col": ["it's", "x", None, "y"],
                                    "d": pa.array([1, 2, 3, 4], pa.int32())}))
    qb = QueryBuilder().register("t", DeltaTable(path))
    assert _metrics(qb.execute("DELETE FROM t AS a WHERE a.`my col` = 'it\\'s'").read_all()) == \
        {"num_affected_rows": 1}
    assert _metrics(qb.execute("UPDATE t a SET a.`my col` = 'q\\'s', d = d + 10 "
                               "WHERE a.`my col` <=> NULL OR id = 4L").read_all()) == {"num_affected_rows": 2}
    got = qb.execute("SELECT id, `my col` AS c, d FROM t ORDER BY id").read_all()
    assert without_views(got).to_pylist() == [{"id": 2, "c": "x", "d": 2}, {"id": 3, "c": "q's", "d": 13},
                                              {"id": 4, "c": "q's", "d": 14}]
