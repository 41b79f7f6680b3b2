"""A classic Delta scan's driver work per query is a fixed handful of py4j round trips, whatever the number of
filters Spark pushes to it (issue 32, TPC-H per query: the Delta cost per scan and query).

`DeltaFileIndex.listFiles` runs inside a JVM callback once per scan and query; every call it makes back into the
JVM is a socket round trip on the query's critical path (0.3-3 ms each on a loaded driver). The filters are read
in bulk (`catalyst.translate_all`: one `CreateArray` of them, one `toJSON`), date literals from that text, and the
listing decoded in one call, so a TPC-H-like filter list costs what one filter costs. Counted on the callback's
thread only (py4j's finalizer thread sends its deletes on its own, at its own time) and without `note_callback`'s
bookkeeping of a new JVM pool thread (2 round trips at its first callback). Skipping by these filters is tested in
test_spark_skipping.py.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from deltakernel import write_deltalake
from deltakernel.spark.scan import catalyst, file_index
from deltakernel.spark.scan.callbacks import note_callback
from deltakernel.spark.scan.file_index import DeltaFileIndex

pytestmark = pytest.mark.classic_only("counts the py4j round trips of the classic file index's callbacks")

FEW = "SELECT count(*) FROM delta.`{p}` WHERE n > 1"
MANY = ("SELECT count(*) FROM delta.`{p}` WHERE n > 1 AND n < 24 AND d >= DATE'2020-01-01' AND d < DATE'2021-01-01' "
        "AND x BETWEEN 1.5 AND 9.5 AND s >= 'a' AND s < 'z' AND f < 3.0")


@pytest.fixture()
def listing_round_trips(classic_spark, monkeypatch):
    """Run a query; the round trips each `listFiles` of it made (on the callback's own thread)."""
    client = classic_spark._jvm._gateway_client
    send = client.send_command
    active = threading.local()

    def counted(*a, **kw):
        if getattr(active, "n", None) is not None and not getattr(active, "paused", False):
            active.n += 1
        return send(*a, **kw)

    original = DeltaFileIndex.listFiles

    def list_files(self, partition_filters, data_filters):
        active.n = 0
        try:
            return original(self, partition_filters, data_filters)
        finally:
            counts.append(active.n)
            active.n = None

    def note(jvm):  # a new JVM pool thread's connection is remembered (2 round trips, then 0): not counted here
        active.paused = True
        try:
            return note_callback(jvm)
        finally:
            active.paused = False

    counts: list[int] = []
    monkeypatch.setattr(client, "send_command", counted)
    monkeypatch.setattr(DeltaFileIndex, "listFiles", list_files)
    monkeypatch.setattr(file_index, "note_callback", note)

    def run(sql: str) -> list[int]:
        counts.clear()
        classic_spark.sql(sql).collect()
        return list(counts)

    return run


def test_listing_round_trips_do_not_grow_with_filters(classic_spark, tmp_path, listing_round_trips):
    import datetime as dt
    import decimal

    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({
        "n": pa.array([1, 5, 30], pa.int64()),
        "d": pa.array([dt.date(2020, 5, 1), dt.date(2020, 6, 1), dt.date(2022, 1, 1)]),
        "x": pa.array([decimal.Decimal("2.50"), decimal.Decimal("3.25"), decimal.Decimal("7.00")], pa.decimal128(9, 2)),
        "s": ["b", "c", "d"], "f": [1.0, 2.0, 4.0]}))
    listing_round_trips(FEW.format(p=path))  # once-per-gateway lookups out of the way
    few = listing_round_trips(FEW.format(p=path))
    many = listing_round_trips(MANY.format(p=path))
    assert len(few) == len(many) == 1
    dates = 2 * 5  # a date literal fetched from its node when the JVM's zone is not a fixed offset (catalyst.py)
    allowed = 0 if catalyst._fixed_default_zone(classic_spark._jvm) else dates
    assert many[0] <= few[0] + allowed, (few, many)
    assert few[0] <= 8, few  # partition filters' size, the stats-skipping conf, the filters (2), the listing (4)
    assert classic_spark.sql(MANY.format(p=path)).collect()[0][0] == 1
