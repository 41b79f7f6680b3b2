"""`deltakernel.QueryBuilder` against deltalake 1.6.6's `QueryBuilder` on the same tables.

The same SQL goes to both; results are compared as sorted rows (string/binary views cast to plain types,
since both engines return views). Tables: conformance tables with deletion vectors, column mapping,
partitions and checkpoints (every one deltalake's QueryBuilder reads), and tables written by deltakernel.
Queries are generated from each table's schema: full scans, literal filters (a value taken from the
data), filters against a scalar subquery, aggregates, and a join of two registered tables.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

datafusion = pytest.importorskip("datafusion")
deltalake = pytest.importorskip("deltalake")

import deltakernel
from deltakernel import DeltaError, DeltaTable, QueryBuilder, write_deltalake
from deltakernel.datafusion.cli import without_views
from deltakernel.query import QueryError

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance" / "tables"
TABLES = [
    "dat/deletion_vectors/delta",
    "delta-rs/table-with-dv-small",
    "kernel-rs/data/with-short-dv",
    "delta-rs/table_with_deletion_logs",
    "kernel-rs/data/cdf-table-with-cdc-and-dvs",
    "dat/column_mapping/delta",
    "delta-rs/table_with_column_mapping",
    "delta-rs/table_with_partitioning_mapping",
    "dat/basic_partitioned/delta",
    "dat/multi_partitioned/delta",
    "dat/with_checkpoint/delta",
]


def rows(result: Any) -> list[tuple[Any, ...]]:
    """Sorted rows of an Arrow result (pyarrow or arro3), views as plain types."""
    table = without_views(pa.table(result))
    out = [tuple(r.values()) for r in table.to_pylist()]
    return sorted(out, key=lambda r: tuple((v is None, repr(v)) for v in r))


def both(path: str, sql: str, name: str = "t") -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    mine = QueryBuilder().register(name, DeltaTable(path)).execute(sql).read_all()
    theirs = deltalake.QueryBuilder().register(name, deltalake.DeltaTable(path)).execute(sql).read_all()
    assert pa.table(mine).column_names == pa.table(theirs).column_names
    return rows(mine), rows(theirs)


def same_rows(mine: list[tuple[Any, ...]], theirs: list[tuple[Any, ...]]) -> bool:
    """Equal rows, floats to 1e-12 relative: a float sum's last bit depends on the order DataFusion merges the
    partitions' partial aggregates, which varies from run to run (sum(a_float) of basic_partitioned: 23.1, and
    23.099999999999998 or 23.100000000000005 in 1 of 30 runs before the link scans, 3 of 30 after)."""
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs, strict=True):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-12) and not (math.isnan(x) and math.isnan(y)):
                    return False
            elif x != y:
                return False
    return True


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def queries(path: str) -> list[str]:
    """SQL for this table's schema; literals come from the table's own data."""
    full = without_views(DeltaTable(path).to_pyarrow_table())
    out = ["SELECT * FROM t", "SELECT count(*) AS n FROM t"]
    for field in full.schema:
        col, t = q(field.name), field.type
        values = sorted(v for v in full.column(field.name).to_pylist() if v is not None)
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            if values:
                out.append(f"SELECT * FROM t WHERE {col} >= {values[len(values) // 2]!r}")
            out.append(f"SELECT * FROM t WHERE {col} < (SELECT avg({col}) FROM t)")
            out.append(f"SELECT sum({col}) AS s, min({col}) AS lo, max({col}) AS hi, count({col}) AS c FROM t")
        elif pa.types.is_string(t):
            if values:
                literal = values[len(values) // 2].replace("'", "''")
                out.append(f"SELECT * FROM t WHERE {col} = '{literal}'")
                out.append(f"SELECT * FROM t WHERE {col} <> '{literal}' OR {col} IS NULL")
            out.append(f"SELECT {col}, count(*) AS n FROM t GROUP BY {col}")
    return out


@pytest.mark.parametrize("table", TABLES)
def test_same_rows_as_deltalake(table: str) -> None:
    path = str(CONFORMANCE / table)
    if not (CONFORMANCE / table / "_delta_log").exists():
        pytest.skip("conformance corpus not available")
    checked = 0
    for sql in queries(path):
        mine, theirs = both(path, sql)
        assert same_rows(mine, theirs), (sql, mine, theirs)
        checked += 1
    assert checked >= 3


@pytest.fixture()
def orders_and_customers(tmp_path: Path) -> tuple[str, str]:
    """Kernel-written tables: `orders` partitioned by region over several appends, `customers` plain."""
    orders, customers = str(tmp_path / "orders"), str(tmp_path / "customers")
    regions = ["north", "south", "east"]
    for i in range(3):
        n = 300
        write_deltalake(orders, pa.table({
            "order_id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
            "customer_id": pa.array([(j * 7 + i) % 50 for j in range(n)], pa.int32()),
            "amount": pa.array([round((j % 97) * 1.25 + i, 2) for j in range(n)], pa.float64()),
            "region": [regions[(j + i) % 3] for j in range(n)],
        }), mode="append", partition_by=["region"])
    write_deltalake(customers, pa.table({
        "customer_id": pa.array(range(60), pa.int32()),
        "name": [f"c{k:02d}" if k % 11 else None for k in range(60)],
        "tier": [["gold", "silver", "bronze"][k % 3] for k in range(60)],
    }))
    return orders, customers


def test_partitioned_kernel_table(orders_and_customers: tuple[str, str]) -> None:
    orders, _ = orders_and_customers
    for sql in [
        *queries(orders),
        "SELECT region, count(*) AS n, sum(amount) AS total FROM t WHERE region <> 'east' GROUP BY region",
        "SELECT * FROM t WHERE region = 'south' AND amount > 100",
        "SELECT customer_id, avg(amount) AS a FROM t WHERE region IN ('north', 'east') GROUP BY customer_id",
    ]:
        mine, theirs = both(orders, sql)
        assert mine == theirs, sql


def test_join_of_two_registered_tables(orders_and_customers: tuple[str, str]) -> None:
    orders, customers = orders_and_customers
    sqls = [
        "SELECT c.tier, o.region, count(*) AS n, sum(o.amount) AS total FROM orders o "
        "JOIN customers c ON o.customer_id = c.customer_id WHERE o.amount > 50 GROUP BY c.tier, o.region",
        "SELECT o.order_id, c.name FROM orders o LEFT JOIN customers c ON o.customer_id = c.customer_id "
        "WHERE o.region = 'north' AND (c.name IS NULL OR c.name < 'c20')",
    ]
    mine_qb = QueryBuilder().register("orders", DeltaTable(orders)).register("customers", DeltaTable(customers))
    theirs_qb = (deltalake.QueryBuilder().register("orders", deltalake.DeltaTable(orders))
                 .register("customers", deltalake.DeltaTable(customers)))
    for sql in sqls:
        mine, theirs = rows(mine_qb.execute(sql).read_all()), rows(theirs_qb.execute(sql).read_all())
        assert mine == theirs and mine, sql


def test_registered_table_stays_pinned(tmp_path: Path) -> None:
    """As in deltalake, the loaded version is what queries see; a later commit needs a new register()."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"x": [1, 2, 3]}))
    dt = DeltaTable(path)
    qb = QueryBuilder().register("t", dt)
    write_deltalake(path, pa.table({"x": [4]}), mode="append")
    assert qb.execute("SELECT sum(x) AS s FROM t").read_all().to_pylist() == [{"s": 6}]
    qb.register("t", DeltaTable(path))  # re-registering a name replaces it
    assert qb.execute("SELECT sum(x) AS s FROM t").read_all().to_pylist() == [{"s": 10}]
    old = DeltaTable(path, version=0)
    assert QueryBuilder().register("t", old).execute("SELECT count(*) AS n FROM t").read_all().to_pylist() == [{"n": 3}]


def test_result_is_a_streaming_record_batch_reader(orders_and_customers: tuple[str, str]) -> None:
    orders, _ = orders_and_customers
    reader = QueryBuilder().register("t", DeltaTable(orders)).execute("SELECT order_id, region FROM t")
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["order_id", "region"]
    ids = sorted(i for batch in reader for i in batch.column(0).to_pylist())
    assert ids == list(range(900))


def test_accepts_a_deltalake_table(orders_and_customers: tuple[str, str]) -> None:
    orders, _ = orders_and_customers
    dl = deltalake.DeltaTable(orders, version=1)
    got = QueryBuilder().register("t", dl).execute("SELECT count(*) AS n FROM t").read_all().to_pylist()
    assert got == [{"n": 600}]


def test_session_config_and_context(orders_and_customers: tuple[str, str]) -> None:
    orders, _ = orders_and_customers
    config = {"datafusion.execution.batch_size": "128", "datafusion.catalog.information_schema": "true"}
    qb = QueryBuilder(config).register("t", DeltaTable(orders))
    assert qb.context.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 900}]
    settings = qb.execute("SELECT value FROM information_schema.df_settings "
                          "WHERE name = 'datafusion.execution.batch_size'").read_all()
    assert without_views(settings).column(0).to_pylist() == ["128"]


def test_bad_sql_is_a_delta_error(orders_and_customers: tuple[str, str]) -> None:
    orders, _ = orders_and_customers
    qb = QueryBuilder().register("t", DeltaTable(orders))
    with pytest.raises(QueryError, match="nope"):
        qb.execute("SELECT nope FROM t")
    with pytest.raises(DeltaError, match="(?i)syntax|expected"):
        qb.execute("SELEC * FROM t")
    with pytest.raises(DeltaError, match="(?i)cast"):  # fails while running, raised by the reader
        qb.execute("SELECT CAST(region AS INT) FROM t").read_all()
    with pytest.raises(DeltaError, match="DeltaTable"):
        qb.register("u", object())


def test_missing_datafusion_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datafusion", None)  # import datafusion -> ImportError
    with pytest.raises(DeltaError, match=r"deltakernel\[datafusion\]"):
        QueryBuilder()


def test_exported_like_deltalake() -> None:
    assert deltakernel.QueryBuilder is QueryBuilder
    assert "QueryBuilder" in deltakernel.__all__


def test_dml_on_a_registered_deltalake_table(tmp_path: Path) -> None:
    """A `deltalake.DeltaTable` registration is a DML target too (by URI, at its loaded version): the
    statement commits a version deltalake reads, and its metrics row comes back like a query result."""
    uri = str(tmp_path / "t")
    deltalake.write_deltalake(uri, pa.table({"id": pa.array(range(10), pa.int64()), "g": ["a", "b"] * 5}))
    qb = QueryBuilder().register("t", deltalake.DeltaTable(uri))
    result = qb.execute("DELETE FROM t WHERE g = 'a' AND id > 2")
    assert isinstance(result, pa.RecordBatchReader)
    assert result.read_all().to_pylist() == [{"num_affected_rows": 3}]
    after = deltalake.DeltaTable(uri)
    assert after.version() == 1
    assert sorted(after.to_pyarrow_table().column("id").to_pylist()) == [0, 1, 2, 3, 5, 7, 9]
    assert rows(qb.execute("SELECT id FROM t WHERE g = 'a'").read_all()) == [(0,), (2,)]
