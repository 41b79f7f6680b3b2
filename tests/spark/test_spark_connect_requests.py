"""Spark Connect point queries cost one request (issue 31: every point-query shape <= 1.2x classic).

Counted at the client (every ExecutePlan, AnalyzePlan and Config request the Connect client sends), on the suite's
Connect session:
- a SQL query over Delta relations whose shape Spark already analysed in this session (same text but the values
  its conditions compare with, same schemas) is returned unsent: its action is its only request;
- a statement of a new shape is still analysed by `spark.sql()` (an analysis error raises there, as on classic);
  a schema change, DDL or a statement reading a relation the router did not plan is analysed again;
- `createOrReplaceTempView` of the same Delta table and version again sends nothing; a new version, another
  definition or a dropped view makes Spark's copy again; the same for a view over a chain
  (`spark.table(t).withColumn(...)`), whose SQL reads are one request too;
- a permanent view's point query stays one request when its catalog answers are past their refresh point (they
  are asked again in the background, not before the statement);
- `spark.table(view).where(...)` of a permanent view or of a temporary view made by SQL is one request too.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from deltakernel import write_deltalake

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import spark_database

ROWS = 10


@pytest.fixture
def cspark(connect_spark, monkeypatch):
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return connect_spark


class _Sent(list):
    background: list[str]

    def __init__(self) -> None:
        super().__init__()
        self.background = []


@pytest.fixture
def requests(cspark, monkeypatch):
    """The requests the Connect client sends from now on in this thread: ("execute", "command" | "root") /
    ("analyze", method) / ("config", ""); `.background`: those sent by other threads."""
    from pyspark.sql.connect.client.core import SparkConnectClient

    main = threading.current_thread()

    sent = _Sent()

    def counted(name, kind):
        original = getattr(SparkConnectClient, name)

        def wrapper(self, *args, **kwargs):
            if threading.current_thread() is not main:  # the catalog cache's background re-asks
                sent.background.append(name)
                return original(self, *args, **kwargs)
            if kind == "execute":
                req = args[0] if args else kwargs.get("req")
                sent.append((kind, req.plan.WhichOneof("op_type")))
            elif kind == "analyze":
                sent.append((kind, str(kwargs.get("method") or (args[0] if args else ""))))
            else:
                sent.append((kind, ""))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(SparkConnectClient, name, wrapper)

    counted("_execute_and_fetch_as_iterator", "execute")
    counted("_execute", "execute")
    counted("_analyze", "analyze")
    counted("config", "config")
    return sent


def _sent(requests: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The requests but pyspark's own conf read in `collect()` (`binaryAsBytes`: plain Parquet pays it too)."""
    return [r for r in requests if r != ("config", "")]


def _table(path: str, files: int = 3) -> str:
    for i in range(files):
        ids = list(range(i * ROWS, (i + 1) * ROWS))
        write_deltalake(path, pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{x}" for x in ids]}),
                        mode="append")
    return path


def test_a_query_of_an_analysed_shape_is_one_request(cspark, requests, tmp_path):
    path = _table(str(tmp_path / "t"))
    first = cspark.sql(f"SELECT id, s FROM delta.`{path}` WHERE id = 3")
    assert ("execute", "command") in requests  # a new shape: analysed now
    assert [tuple(r) for r in first.collect()] == [(3, "s3")]
    for key in (17, 25, 3):
        requests.clear()
        df = cspark.sql(f"SELECT id, s FROM delta.`{path}` WHERE id = {key}")
        assert requests == [], requests  # nothing sent by spark.sql()
        assert [tuple(r) for r in df.collect()] == [(key, f"s{key}")]
        assert _sent(requests) == [("execute", "root")], requests  # the action: one request
    # a wrong column is a new shape: spark.sql() raises, as on a classic session
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="nope"):
        cspark.sql(f"SELECT nope FROM delta.`{path}` WHERE id = 3")
    # the table's schema changed: analysed again (the new column resolves)
    write_deltalake(path, pa.table({"id": pa.array([99], pa.int64()), "s": ["s99"], "x": [1]}), mode="append",
                    schema_mode="merge")
    requests.clear()
    df = cspark.sql(f"SELECT id, s FROM delta.`{path}` WHERE id = 99")
    assert ("execute", "command") in requests
    assert [tuple(r) for r in df.collect()] == [(99, "s99")]


def test_statements_the_key_cannot_vouch_for_are_analysed(cspark, requests, tmp_path):
    path = _table(str(tmp_path / "t"))
    cspark.range(3).createOrReplaceTempView("dk_req_plain")
    try:
        for text in (f"SELECT a.id FROM delta.`{path}` a JOIN dk_req_plain b ON a.id = b.id WHERE a.id = 2",
                     f"SELECT id FROM delta.`{path}` WHERE id = 1 LIMIT 1"):
            for _ in range(2):
                requests.clear()
                assert [r.id for r in cspark.sql(text).collect()] in ([2], [1])
                if "dk_req_plain" in text:  # a relation the router did not plan: always analysed at once
                    assert ("execute", "command") in requests, (text, requests)
        requests.clear()
        cspark.sql(f"SELECT id FROM delta.`{path}` WHERE id = 4 LIMIT 1").collect()
        assert _sent(requests) == [("execute", "root")], requests  # LIMIT's value is part of the shape
        from deltakernel.spark import scan_report

        scan_report(cspark.sql(f"SELECT id FROM delta.`{path}` WHERE id = 4 LIMIT 1"))  # sets its own confs: kept
        requests.clear()
        cspark.sql(f"SELECT id FROM delta.`{path}` WHERE id = 4 LIMIT 1").collect()
        assert _sent(requests) == [("execute", "root")], requests
        for change in (lambda: cspark.sql("SET spark.sql.shuffle.partitions=2"),  # a command
                       lambda: cspark.conf.set("spark.sql.caseSensitive", "false")):  # a conf: may change analysis
            change()
            requests.clear()
            cspark.sql(f"SELECT id FROM delta.`{path}` WHERE id = 5 LIMIT 1").collect()
            assert ("execute", "command") in requests, requests
    finally:
        cspark.catalog.dropTempView("dk_req_plain")


def test_a_temp_view_made_again_sends_nothing(cspark, requests, tmp_path):
    path = _table(str(tmp_path / "t"))
    view = "dk_req_view"

    def made(expected_requests: int) -> None:
        requests.clear()
        cspark.read.format("delta").load(path).createOrReplaceTempView(view)
        assert len([r for r in requests if r == ("execute", "command")]) == expected_requests, requests

    try:
        made(1)
        made(0)  # the same table and version: Spark's copy is already this view
        assert [r.id for r in cspark.sql(f"SELECT id FROM {view} WHERE id = 12").collect()] == [12]
        assert [r.id for r in cspark.table(view).where("id = 13").collect()] == [13]
        write_deltalake(path, pa.table({"id": pa.array([77], pa.int64()), "s": ["s77"]}), mode="append")
        made(1)  # a new version
        assert [r.id for r in cspark.sql(f"SELECT id FROM {view} WHERE id = 77").collect()] == [77]
        assert cspark.table(view).where("id = 77").count() == 1
        cspark.catalog.dropTempView(view)
        made(1)  # dropped: made again
        assert view in [t.name for t in cspark.catalog.listTables()]
        cspark.read.format("delta").load(path).where("id > 5").createOrReplaceTempView(view)  # another definition
        made(1)
        assert cspark.sql(f"SELECT count(*) AS c FROM {view}").first().c == 3 * ROWS + 1
    finally:
        cspark.catalog.dropTempView(view)


def test_a_temp_view_over_a_chain(cspark, requests, tmp_path):
    """A view over `spark.table(t).withColumn(...)` made again before every query: the same chain over the same
    version sends nothing, and a SQL point query over it is one request once its shape analysed."""
    from pyspark.sql import functions as F

    path = _table(str(tmp_path / "t"))
    view = "dk_req_chain"

    def made() -> int:
        requests.clear()
        d = cspark.read.format("delta").load(path)
        d.withColumn("x", d["id"] * 2).withColumn("y", F.upper("s")).select("id", "x", "y") \
            .createOrReplaceTempView(view)
        return len([r for r in requests if r == ("execute", "command")])

    try:
        assert made() == 1
        assert [tuple(r) for r in cspark.sql(f"SELECT id, x, y FROM {view} WHERE id = 4").collect()] == [(4, 8, "S4")]
        for key in (7, 21):
            assert made() == 0  # the same chain, table and version: Spark's copy is this view already
            requests.clear()
            df = cspark.sql(f"SELECT id, x, y FROM {view} WHERE id = {key}")
            assert requests == [], requests  # a shape Spark analysed: nothing sent by spark.sql()
            assert [tuple(r) for r in df.collect()] == [(key, 2 * key, f"S{key}")]
            assert _sent(requests) == [("execute", "root")], requests
        # another chain under the same name: made again, analysed again
        requests.clear()
        cspark.read.format("delta").load(path).withColumn("x", F.lit(1)).createOrReplaceTempView(view)
        assert ("execute", "command") in requests
        from pyspark.errors import AnalysisException

        with pytest.raises(AnalysisException):  # `y` is gone: raised by spark.sql(), as on classic
            cspark.sql(f"SELECT id, x, y FROM {view} WHERE id = 4")
        assert [tuple(r) for r in cspark.sql(f"SELECT id, x FROM {view} WHERE id = 4").collect()] == [(4, 1)]
        # a new version of the table: made again
        write_deltalake(path, pa.table({"id": pa.array([77], pa.int64()), "s": ["s77"]}), mode="append")
        assert made() == 1
        assert [tuple(r) for r in cspark.sql(f"SELECT id, x, y FROM {view} WHERE id = 77").collect()] == \
            [(77, 154, "S77")]
        # a join with local data (output names the client cannot tell: asked once per plan)
        for key in (5, 6, 7):
            d = cspark.read.format("delta").load(path)
            d.join(cspark.createDataFrame([(5, "a"), (6, "b"), (7, "c")], "k long, tag string"), d["id"] == F.col("k")) \
                .createOrReplaceTempView(view)
            requests.clear()
            rows = cspark.sql(f"SELECT id, tag FROM {view} WHERE id = {key}").collect()
            assert [tuple(r) for r in rows] == [(key, "abc"[key - 5])]
            if key > 5:
                assert _sent(requests) == [("execute", "root")], requests
    finally:
        cspark.catalog.dropTempView(view)


def test_a_permanent_view_past_its_refresh_point_is_one_request(cspark, requests, tmp_path, monkeypatch):
    from deltakernel.spark.kinds.catalog_cache import cache_for

    path = _table(str(tmp_path / "t"))
    with spark_database(cspark, tmp_path / "warehouse", prefix="dk_req_") as db:
        cspark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{path}'")
        cspark.sql(f"CREATE VIEW {db}.v AS SELECT id, s FROM {db}.t")
        query = f"SELECT id FROM {db}.v WHERE id = "
        cache = cache_for(cspark)
        monkeypatch.setattr(cache, "lifetime", 3600.0)  # a slow machine's statements cannot expire the answers
        assert [r.id for r in cspark.sql(query + "3").collect()] == [3]
        requests.clear()
        assert [r.id for r in cspark.sql(query + "4").collect()] == [4]
        assert _sent(requests) == [("execute", "root")], requests  # answers and shape kept
        # the answers past their refresh point (not past the lifetime): still one request, the re-asks apart
        later = time.monotonic() + 2000.0
        monkeypatch.setattr(cache, "_clock", lambda: later)
        requests.clear()
        assert [r.id for r in cspark.sql(query + "5").collect()] == [5]
        assert _sent(requests) == [("execute", "root")], requests
        assert cache.settle(30)
        assert requests.background, "the view's and its table's answers are asked again in the background"


def test_conditions_chained_after_a_view_are_one_request(cspark, requests, tmp_path, monkeypatch):
    """`spark.table(view).where(...)` (and a `spark.sql()` frame filtered so): the view's statement of an analysed
    shape is not sent by `spark.table()`, and the chained conditions are planned into it when the action sends it
    (`connect_plan.RoutedQuery`): one request per point query."""
    from deltakernel.spark import scan_report
    from deltakernel.spark.kinds.catalog_cache import cache_for

    path = _table(str(tmp_path / "t"))
    with spark_database(cspark, tmp_path / "warehouse", prefix="dk_req_") as db:
        cspark.sql(f"CREATE TABLE {db}.t USING delta LOCATION '{path}'")
        cspark.sql(f"CREATE VIEW {db}.v AS SELECT id, s FROM {db}.t")
        monkeypatch.setattr(cache_for(cspark), "lifetime", 3600.0)  # a slow machine cannot expire the answers
        assert [r.id for r in cspark.table(f"{db}.v").where("id = 3").collect()] == [3]
        for key in (4, 25):
            requests.clear()
            df = cspark.table(f"{db}.v").where(f"id = {key}")
            assert requests == [], requests  # nothing sent by spark.table()
            assert [tuple(r) for r in df.collect()] == [(key, f"s{key}")]
            assert _sent(requests) == [("execute", "root")], requests
        [report] = scan_report(cspark.sql(f"SELECT * FROM {db}.t").where("id = 17"))
        assert (report.files_kept, report.files_total) == (1, 3)
        # a temporary view made by SQL: `spark.table()` reads it through the router too
        cspark.sql(f"CREATE OR REPLACE TEMPORARY VIEW dk_req_tv AS SELECT id, s FROM {db}.t")
        try:
            assert [r.id for r in cspark.table("dk_req_tv").where("id = 3").collect()] == [3]
            for key in (4, 25):
                requests.clear()
                df = cspark.table("dk_req_tv").where(f"id = {key}")
                assert requests == [], requests
                assert [tuple(r) for r in df.collect()] == [(key, f"s{key}")]
                assert _sent(requests) == [("execute", "root")], requests
            [report] = scan_report(df)
            assert (report.files_kept, report.files_total) == (1, 3)
        finally:
            cspark.catalog.dropTempView("dk_req_tv")


def test_a_delta_read_plan_records_no_call_sites(cspark, tmp_path, monkeypatch):
    """The Parquet scan a Connect Delta read sends is built with PySpark's call-site capture off: each Column
    function would record a deltakernel frame as its origin - and try `import IPython`, a failed import per call
    where IPython is not installed (docs/decisions.md, "Connect: the last two point-query shapes")."""
    import pyspark.errors.utils as pyspark_errors

    captured: list[int] = []
    original = pyspark_errors._capture_call_site

    def capture(depth: int) -> str:
        captured.append(depth)
        return original(depth)

    monkeypatch.setattr(pyspark_errors, "_capture_call_site", capture)
    path = _table(str(tmp_path / "t"))
    df = cspark.read.format("delta").load(path).where("id = 13")
    captured.clear()
    assert [tuple(r) for r in df.collect()] == [(13, "s13")]  # the leaf's files and plan are built here
    assert captured == []
