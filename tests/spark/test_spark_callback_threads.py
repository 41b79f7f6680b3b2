"""The file index's Arrow work runs on deltakernel's bounded worker threads, whatever JVM thread calls back
(issue 31, item 4; the memory itself is measured by benchmarks/long_session.py).

Spark lists a join's build side on `broadcast-exchange` threads and adaptive result stages on
`ResultQueryStageExecution` threads: new JVM threads, each served by a Python thread of its own. Arrow's
allocator keeps per-thread heaps, so the listing's Arrow work (building the listing document) must run on the
few `arrow_workers` threads, while the JVM calls stay on the serving thread; an error in that work reaches the
query as before.
"""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from deltakernel import write_deltalake
from deltakernel.errors import DeltaError

pytestmark = pytest.mark.classic_only("the file index is called back over py4j by the driver JVM")

QUERIES = 4


def _table(path: str, start: int) -> None:
    for i in range(2):
        ids = pa.array(range(start + i * 10, start + (i + 1) * 10), pa.int64())
        write_deltalake(path, pa.table({"id": ids, "v": ids}), mode="append")


def test_listing_arrow_work_runs_on_bounded_workers(spark, tmp_path, monkeypatch):
    from deltakernel.spark.scan import arrow_workers, file_index, jvm_files

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    _table(a, 0)
    _table(b, 0)
    serving: list[str] = []
    working: list[tuple[int, str]] = []
    note_callback, listing_xml = file_index.note_callback, jvm_files.listing_xml

    def noting(jvm):
        serving.append(threading.current_thread().name)
        return note_callback(jvm)

    def building(*args):
        working.append((threading.get_ident(), threading.current_thread().name))
        return listing_xml(*args)

    monkeypatch.setattr(file_index, "note_callback", noting)
    monkeypatch.setattr(jvm_files, "listing_xml", building)
    for k in range(QUERIES):
        rows = spark.sql(f"SELECT x.id, y.v FROM delta.`{a}` x JOIN delta.`{b}` y ON x.id = y.id "
                         f"WHERE x.id = {k}").collect()
        assert [(r.id, r.v) for r in rows] == [(k, k)]
    assert len(serving) >= 2 * QUERIES  # both sides of every join were listed
    assert not any(name.startswith("deltakernel-arrow") for name in serving)
    assert len(working) == len(serving)
    assert all(name.startswith("deltakernel-arrow") for _ident, name in working), working
    assert len({ident for ident, _name in working}) <= arrow_workers.MAX_WORKERS


def test_an_error_in_the_listing_reaches_the_query(spark, tmp_path, monkeypatch):
    from deltakernel.spark.scan import jvm_files

    path = str(tmp_path / "t")
    _table(path, 0)

    def failing(*args):
        raise DeltaError("listing failed on purpose")

    monkeypatch.setattr(jvm_files, "listing_xml", failing)
    with pytest.raises(Exception, match="listing failed on purpose"):
        spark.sql(f"SELECT * FROM delta.`{path}` WHERE id = 3").collect()
