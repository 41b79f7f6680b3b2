"""Connect sessions keep their catalog answers a few seconds (`kinds/catalog_cache.py`); no answer may be wrong.

Every change a session makes through any route - SQL DDL (CREATE / DROP / ALTER ... RENAME / USE / CREATE TEMP
VIEW / DROP VIEW), `spark.catalog.*` (setCurrentDatabase, createTable, dropTempView), `saveAsTable`, `writeTo`,
`createOrReplaceTempView` - is seen by the next statement naming the table: the same cases run on classic sessions
(which ask the JVM every time) and must agree. Changes by ANOTHER Connect client of the same server are seen after
`REFRESH TABLE` / `spark.catalog.refreshTable`, after the answers' lifetime, and at once with the lifetime 0.
A warm statement over a catalog name asks the server nothing about the catalog (counted on the client).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import spark_database

import deltakernel.spark as dks
from deltakernel.operations.write.api import write_deltalake
from deltakernel.spark.kinds.catalog_cache import LIFETIME_CONF, CatalogCache, first_keyword


def _ids(df) -> list[int]:
    return sorted(r[0] for r in df.collect())


def _table(path: Path, ids: range) -> str:
    write_deltalake(str(path), pa.table({"id": pa.array(list(ids), pa.int64())}))
    return str(path)


@pytest.fixture()
def db(spark, tmp_path):
    with spark_database(spark, tmp_path / "warehouse", prefix="dk_cache_") as name:
        yield name


def test_own_ddl_is_seen_at_once(spark, db, tmp_path):
    a, b = _table(tmp_path / "a", range(0, 3)), _table(tmp_path / "b", range(10, 12))
    t = f"{db}.t"
    assert spark.catalog.tableExists(t) is False
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        spark.sql(f"SELECT id FROM {t}").collect()  # the missing name is asked (and may be kept) ...
    spark.sql(f"CREATE TABLE {t} USING delta LOCATION '{a}'")  # ... and CREATE makes it exist
    assert _ids(spark.sql(f"SELECT id FROM {t} WHERE id >= 0")) == [0, 1, 2]
    assert _ids(spark.table(t)) == [0, 1, 2]
    # dropped and re-created at another location by this session: never read at the old one
    spark.sql(f"DROP TABLE {t}")
    spark.sql(f"CREATE TABLE {t} USING delta LOCATION '{b}'")
    assert _ids(spark.sql(f"SELECT id FROM {t} WHERE id >= 0")) == [10, 11]
    assert _ids(spark.table(t)) == [10, 11]
    # dropped: the name is unknown again (the external table's files stay where they are)
    spark.sql(f"DROP TABLE {t}")
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        spark.sql(f"SELECT id FROM {t}").collect()
    # renamed (a Parquet table: RENAME of a Delta table is not supported over Connect): the old name is gone, the
    # new one is the table, a Delta table may take the old name
    spark.sql(f"CREATE TABLE {db}.p USING parquet AS SELECT 5L AS id")
    assert _ids(spark.sql(f"SELECT id FROM {db}.p")) == [5]
    spark.sql(f"ALTER TABLE {db}.p RENAME TO {db}.q")
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        spark.table(f"{db}.p").collect()
    assert _ids(spark.sql(f"SELECT id FROM {db}.q")) == [5]
    spark.sql(f"CREATE TABLE {db}.p USING delta LOCATION '{a}'")
    assert _ids(spark.sql(f"SELECT id FROM {db}.p")) == [0, 1, 2]


def test_writer_and_catalog_api_changes_are_seen(spark, db, tmp_path):
    b = _table(tmp_path / "b", range(10, 12))
    name = f"{db}.w"
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        spark.table(name).collect()
    spark.createDataFrame([(1,), (2,)], "id long").write.format("delta").saveAsTable(name)
    assert _ids(spark.sql(f"SELECT id FROM {name}")) == [1, 2]
    spark.sql(f"DROP TABLE {name}")
    spark.catalog.createTable(name, path=b, source="delta")
    assert _ids(spark.sql(f"SELECT id FROM {name}")) == [10, 11]
    spark.sql(f"DROP TABLE {name}")
    spark.createDataFrame([(7,)], "id long").writeTo(name).using("delta").create()
    assert _ids(spark.table(name)) == [7]
    spark.sql(f"DROP TABLE {name}")
    # a non-Delta table under a name first looked up as missing, then a Delta one again
    spark.createDataFrame([(5,)], "id long").write.format("parquet").saveAsTable(name)
    assert _ids(spark.sql(f"SELECT id FROM {name}")) == [5]
    spark.sql(f"DROP TABLE {name}")
    spark.createDataFrame([(6,)], "id long").write.format("delta").saveAsTable(name)
    assert _ids(spark.sql(f"SELECT id FROM {name}")) == [6]


def test_temp_views_and_current_database(spark, db, tmp_path):
    a = _table(tmp_path / "a", range(0, 3))
    spark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{a}'")
    current = spark.catalog.currentDatabase()
    try:
        spark.catalog.setCurrentDatabase(db)
        assert _ids(spark.sql("SELECT id FROM t")) == [0, 1, 2]  # the one-part name in this database
        # a temporary view shadows the one-part name, and stops shadowing it when dropped
        spark.createDataFrame([(42,)], "id long").createOrReplaceTempView("t")
        assert _ids(spark.sql("SELECT id FROM t")) == [42]
        assert _ids(spark.table("t")) == [42]
        assert _ids(spark.sql(f"SELECT id FROM {db}.t")) == [0, 1, 2]
        spark.catalog.dropTempView("t")
        assert _ids(spark.sql("SELECT id FROM t")) == [0, 1, 2]
        spark.sql("CREATE TEMPORARY VIEW t AS SELECT 43L AS id")
        assert _ids(spark.sql("SELECT id FROM t")) == [43]
        spark.sql("DROP VIEW t")
        assert _ids(spark.table("t")) == [0, 1, 2]
        # the current database as Spark answers it, whatever was asked before (upper case, a failed switch, USE)
        assert spark.catalog.currentDatabase() == db
        spark.catalog.setCurrentDatabase(current)
        spark.catalog.setCurrentDatabase(db.upper())  # not a plain lower-case name: Spark's answer is asked
        assert spark.catalog.currentDatabase().lower() == db
        spark.catalog.setCurrentDatabase(db)
        with pytest.raises(Exception, match="(?i)not found|cannot be found"):
            spark.catalog.setCurrentDatabase("dk_cache_no_such_database")
        assert spark.catalog.currentDatabase() == db
        assert _ids(spark.table("t")) == [0, 1, 2]
        # another current database: the one-part name is not there (USE and setCurrentDatabase alike)
        spark.sql(f"USE {current}")
        assert spark.catalog.currentDatabase() == current
        with pytest.raises(Exception, match="(?i)not found|cannot be found"):
            spark.sql("SELECT id FROM t").collect()
        spark.sql(f"USE {db}")
        assert _ids(spark.sql("SELECT id FROM t")) == [0, 1, 2]
        spark.catalog.setCurrentDatabase(current)
        with pytest.raises(Exception, match="(?i)not found|cannot be found"):
            spark.table("t").collect()
    finally:
        spark.catalog.setCurrentDatabase(current)


# ----------------------------------------------------------------------------- two clients of one server
@pytest.fixture()
def other_client(connect_spark, classic_spark):
    """A second Connect client (its own server session) of the suite's Connect server."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    port = classic_spark.conf.get("spark.connect.grpc.binding.port")
    made = []

    def make(lifetime: float | None = None):
        session = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
        if lifetime is not None:
            session.conf.set(LIFETIME_CONF, str(lifetime))
        dks.enable(session)
        made.append(session)
        return session

    yield make
    for session in made:
        dks.disable(session)
        session.client.close()


@pytest.fixture()
def connect_db(connect_spark, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    with spark_database(connect_spark, tmp_path / "warehouse", prefix="dk_cache_") as name:
        yield name


def _recreate(session, name: str, location: str) -> None:
    session.sql(f"DROP TABLE {name}")
    session.sql(f"CREATE TABLE {name} USING delta LOCATION '{location}'")


def test_other_client_ddl_seen_after_refresh(connect_spark, connect_db, other_client, tmp_path):
    a, b, c = (_table(tmp_path / x, range(i * 10, i * 10 + 2)) for i, x in enumerate("abc"))
    name = f"{connect_db}.t"
    connect_spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{a}'")
    reader = other_client(lifetime=3600)
    assert _ids(reader.sql(f"SELECT id FROM {name}")) == [0, 1]
    _recreate(connect_spark, name, b)  # another client drops it and registers the name at another location
    reader.sql(f"REFRESH TABLE {name}")
    assert _ids(reader.sql(f"SELECT id FROM {name}")) == [10, 11]
    assert _ids(reader.table(name)) == [10, 11]
    _recreate(connect_spark, name, c)
    reader.catalog.refreshTable(name)
    assert _ids(reader.sql(f"SELECT id FROM {name}")) == [20, 21]
    connect_spark.sql(f"DROP TABLE {name}")
    reader.catalog.clearCache()
    with pytest.raises(Exception, match="(?i)not found|cannot be found"):
        reader.sql(f"SELECT id FROM {name}").collect()


def test_other_client_ddl_seen_after_the_lifetime(connect_spark, connect_db, other_client, tmp_path):
    a, b = _table(tmp_path / "a", range(0, 2)), _table(tmp_path / "b", range(10, 12))
    name = f"{connect_db}.t"
    connect_spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{a}'")
    uncached, short = other_client(lifetime=0), other_client(lifetime=1)
    assert _ids(uncached.sql(f"SELECT id FROM {name}")) == [0, 1]
    assert _ids(short.sql(f"SELECT id FROM {name}")) == [0, 1]
    asked = time.monotonic()
    _recreate(connect_spark, name, b)
    assert _ids(uncached.sql(f"SELECT id FROM {name}")) == [10, 11]  # lifetime 0: asked every time
    time.sleep(max(0.0, 1.2 - (time.monotonic() - asked)))  # past the 1 s lifetime of `short`'s answer
    assert _ids(short.sql(f"SELECT id FROM {name}")) == [10, 11]
    assert _ids(short.table(name)) == [10, 11]


def test_view_replaced_by_another_client_is_seen(connect_spark, connect_db, other_client, tmp_path):
    """A permanent view replaced by another client is seen within the answers' lifetime (here 2 s): at once by a
    statement after the lifetime, and after the background re-ask a use past half the lifetime starts."""
    from deltakernel.spark.kinds.catalog_cache import cache_for

    a = _table(tmp_path / "a", range(0, 10))
    t, v = f"{connect_db}.t", f"{connect_db}.v"
    connect_spark.sql(f"CREATE TABLE {t} USING delta LOCATION '{a}'")
    connect_spark.sql(f"CREATE VIEW {v} AS SELECT id FROM {t} WHERE id < 3")
    reader = other_client(lifetime=2)
    query = f"SELECT id FROM {v} WHERE id >= 0"
    assert _ids(reader.sql(query)) == [0, 1, 2]
    asked = time.monotonic()
    connect_spark.sql(f"CREATE OR REPLACE VIEW {v} AS SELECT id FROM {t} WHERE id >= 8")
    time.sleep(max(0.0, 1.1 - (time.monotonic() - asked)))  # past half the lifetime: re-asked in the background
    assert _ids(reader.sql(query)) in ([0, 1, 2], [8, 9])  # the kept answer (or a fresh one, on a slow machine)
    assert cache_for(reader).settle(30)
    assert _ids(reader.sql(query)) == [8, 9]
    connect_spark.sql(f"CREATE OR REPLACE VIEW {v} AS SELECT id FROM {t} WHERE id = 5")
    asked = time.monotonic()
    time.sleep(max(0.0, 2.1 - (time.monotonic() - asked)))  # past the lifetime: asked before the statement runs
    assert _ids(reader.sql(query)) == [5]


def test_warm_catalog_statement_asks_nothing(connect_db, other_client, tmp_path, monkeypatch):
    """The point of the cache: a repeated statement over a catalog name sends no catalog statement (counted at the
    client: SHOW TABLE EXTENDED commands and catalog calls)."""
    from pyspark.sql.connect.catalog import Catalog
    from pyspark.sql.connect.client.core import SparkConnectClient

    a = _table(tmp_path / "a", range(0, 3))
    session = other_client(lifetime=3600)
    session.sql(f"CREATE TABLE {connect_db}.t USING delta LOCATION '{a}'")
    sent: list[str] = []
    execute, fetch = SparkConnectClient.execute_command, Catalog._execute_and_fetch

    def count_commands(self, command, *args, **kwargs):
        if command.WhichOneof("command_type") == "sql_command":
            sent.append(first_keyword(command.sql_command.input.sql.query) + " " + command.sql_command.input.sql.query)
        return execute(self, command, *args, **kwargs)

    def count_catalog(self, plan):
        sent.append(type(plan).__name__)
        return fetch(self, plan)

    monkeypatch.setattr(SparkConnectClient, "execute_command", count_commands)
    monkeypatch.setattr(Catalog, "_execute_and_fetch", count_catalog)
    query = f"SELECT id FROM {connect_db}.t WHERE id = 1"
    assert _ids(session.sql(query)) == [1]
    assert any("SHOW TABLE EXTENDED" in s for s in sent)  # cold: asked
    sent.clear()
    assert _ids(session.sql(query)) == [1]
    assert _ids(session.table(f"{connect_db}.t").where("id = 2")) == [2]
    assert not [s for s in sent if "SHOW TABLE" in s or s in ("DatabaseExists", "CurrentDatabase")], sent
    # a temporary view the session made is known to shadow its name: not asked either
    session.table(f"{connect_db}.t").createOrReplaceTempView("dk_cache_view")
    sent.clear()
    assert _ids(session.sql("SELECT id FROM dk_cache_view WHERE id = 0")) == [0]
    assert not [s for s in sent if "SHOW TABLE" in s], sent


# ----------------------------------------------------------------------------- the pieces, without Spark
def test_first_keyword():
    assert first_keyword("  select 1") == "SELECT"
    assert first_keyword("-- a comment\n /* another */ ((WITH x AS (SELECT 1) SELECT * FROM x))") == "WITH"
    assert first_keyword("create table t (a int)") == "CREATE"
    assert first_keyword("/* unterminated") == ""
    assert first_keyword("") == ""


def test_cache_epochs_and_bounds():
    cache = CatalogCache(lifetime=3600, capacity=2)
    assert cache.answer(("entry", ("t",)), lambda: "a") == "a"
    assert cache.answer(("entry", ("t",)), lambda: "b") == "a"  # kept
    cache.forget_name("T")  # a temporary view named t came or went
    assert cache.answer(("entry", ("t",)), lambda: "c") == "c"
    # an answer asked before a clear is not kept after it (a lookup racing a DDL)
    epoch, asked = cache.epoch, time.monotonic()
    cache.clear()
    cache.put(("entry", ("u",)), "stale", epoch, asked)
    assert cache.answer(("entry", ("u",)), lambda: "fresh") == "fresh"
    cache.answer(("entry", ("db", "v")), lambda: "v")
    cache.answer(("current_database",), lambda: "db")
    assert len(cache) == 2  # bounded: the least recently used went
    cache.forget_unqualified()
    assert cache.answer(("entry", ("db", "v")), lambda: "other") == "v"  # multipart: independent of the database
    assert cache.answer(("current_database",), lambda: "db2") == "db2"
    off = CatalogCache(lifetime=0)
    assert off.answer(("entry", ("t",)), lambda: 1) == 1 and off.answer(("entry", ("t",)), lambda: 2) == 2


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_answers_refreshed_ahead_never_used_past_the_lifetime():
    """An answer used after half its lifetime is returned and asked again in the background; one older than the
    lifetime is never returned (asked at once); a re-ask racing a clear is not kept."""
    clock, started = _Clock(), []
    cache = CatalogCache(lifetime=10, clock=clock, spawn=started.append)
    asked = iter(range(100))

    def ask() -> int:  # each ask a new answer
        return next(asked)

    key = ("entry", ("db", "v"))
    assert cache.answer(key, ask) == 0
    clock.now = 4.9
    assert cache.answer(key, ask) == 0 and started == []  # young: nothing asked
    clock.now = 5.1
    assert cache.answer(key, ask) == 0 and len(started) == 1  # kept answer now, its re-ask started
    assert cache.answer(key, ask) == 0 and len(started) == 1  # one re-ask per key at a time
    started.pop()()  # the re-ask runs (asked at 5.1)
    assert cache.answer(key, ask) == 1 and cache.settle(0)
    clock.now = 15.2  # the re-asked answer is 10.1 s old: asked at once, never returned
    assert cache.answer(key, ask) == 2 and started == []
    clock.now = 21
    assert cache.answer(key, ask) == 2 and len(started) == 1
    cache.clear()  # a DDL while the re-ask is out: its answer (3) is not kept
    started.pop()()
    assert cache.answer(key, ask) == 4
    # a failing re-ask leaves the kept answer to expire as before
    clock.now = 27

    def broken():
        raise RuntimeError("server gone")

    assert cache.answer(key, broken) == 4 and len(started) == 1
    started.pop()()
    assert cache.answer(key, ask) == 4 and len(started) == 1  # due again: re-asked
    clock.now = 31.1
    started.clear()
    assert cache.answer(key, ask) == 5


def test_session_state_never_expires():
    clock = _Clock()
    cache = CatalogCache(lifetime=10, clock=clock, spawn=lambda fn: pytest.fail("nothing to refresh"))
    cache.answer(("current_database",), lambda: "db")
    cache.put(("entry", ("tv",)), None, cache.epoch, clock(), lasting=True)  # a temporary view this client made
    cache.put(("statement", "SELECT 1"), True, cache.epoch, clock())
    clock.now = 3600
    assert cache.answer(("current_database",), lambda: "other") == "db"
    assert cache.answer(("entry", ("tv",)), lambda: "asked") is None
    assert cache.get(("statement", "SELECT 1")) is True
    cache.forget_unqualified()
    assert cache.answer(("current_database",), lambda: "db2") == "db2"


def test_background_refresh_thread():
    """The default spawn: a daemon thread; `settle` waits for it."""
    import threading

    clock, gate = _Clock(), threading.Event()
    cache = CatalogCache(lifetime=10, clock=clock)
    cache.answer(("database", "db"), lambda: True)
    clock.now = 6

    def slow():
        gate.wait(5)
        return False

    assert cache.answer(("database", "db"), slow) is True
    assert cache.settle(0) is False  # still out
    gate.set()
    assert cache.settle(5) is True
    assert cache.get(("database", "db")) is False
