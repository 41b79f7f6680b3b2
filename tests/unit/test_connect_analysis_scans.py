"""A plan serialized for Spark Connect's eager analysis of a routed query names no data file
(`connect_plan.analysis_scans`): every Delta leaf in it - unfiltered, filtered by the statement, pushed to by the
pass - is sent as the Python source's read; any other serialization sends the leaves' planned scans as before. No
server: Connect plans are Python objects until sent.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("pyspark.sql.connect.plan")

from pyspark.sql.connect import functions as CF
from pyspark.sql.connect import plan as P
from pyspark.sql.connect import proto

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.expressions import sql as ksql
from deltakernel.spark.scan import connect_plan as cp


class _Named(P.LogicalPlan):
    """A stand-in for a scan's plan: a relation naming what it stands for."""

    def __init__(self, text: str) -> None:
        super().__init__(None)
        self.text = text

    def plan(self, session):
        rel = proto.Relation()
        rel.common.plan_id = self._plan_id
        rel.sql.query = self.text
        return rel


class _Frame:
    def __init__(self, text: str) -> None:
        self._plan = _Named(text)


@pytest.fixture
def leaves(tmp_path, monkeypatch):
    """Three leaves over one table (unfiltered, filtered by its statement, a row-tracking read); their planned
    scans stand in as "files", the Python source's read as "source"."""
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    snap = DeltaTable(path).snapshot
    monkeypatch.setattr(cp.DeltaScan, "planned", lambda self, pushed: (_Frame("files"), 1))
    monkeypatch.setattr(cp, "_source_frame", lambda spark, snapshot: _Frame("source"))
    predicate = ksql.to_predicate(ksql.parse_sql("id = 2"), snap.schema)
    return [cp.DeltaScan(None, snap), cp.DeltaScan(None, snap, predicate=predicate),
            cp.DeltaScan(None, snap, row_tracking=True)]


def _sent(leaves) -> list[str]:
    """What each leaf is sent as inside a SQL statement carrying them as references (the router's statement),
    one of them filtered above by the DataFrame API."""
    send = cp.serialize_hook(P.SQL.command)  # what `enable()` wraps each command's serialization with
    refs = [P.SubqueryAlias(leaves[0], "a"), P.SubqueryAlias(P.Filter(leaves[1], CF.expr("id > 1")), "b"),
            P.SubqueryAlias(leaves[2], "c")]
    rels = send(P.SQL("SELECT * FROM a, b, c", views=refs), None).sql_command.input.with_relations.references
    out = []
    for rel in rels:
        rel = rel.subquery_alias.input
        out.append((rel.filter.input if rel.HasField("filter") else rel).sql.query)
    return out


def test_an_analysis_sends_no_planned_scan(leaves):
    assert _sent(leaves) == ["files", "files", "files"]  # a statement sent to run: the scans of the kept files
    with cp.analysis_scans():
        assert _sent(leaves) == ["source", "source", "files"]  # only analysed: no file named (row tracking apart)
    assert _sent(leaves) == ["files", "files", "files"]


def test_only_the_outermost_serialization_decides(leaves):
    """A plan serialized while another one is (the source registered on the way, a nested command) follows the
    outer pass; a pass started outside the block keeps sending scans inside it."""
    send = cp.serialize_hook(lambda plan, session: plan.plan(session))
    with cp.analysis_scans():
        assert send(leaves[0], None).sql.query == "source"
    assert send(leaves[0], None).sql.query == "files"
    nested = []

    class Outer(_Named):
        def plan(self, session):
            with cp.analysis_scans():
                nested.append(send(leaves[0], session).sql.query)
            return super().plan(session)

    send(Outer("outer"), None)
    assert nested == ["files"]
