"""`spark/scan/frame_keys.plan_key`: the analysis key of a Spark Connect plan over Delta leaves (no server needed:
Connect plans are Python objects until sent).

The same chain built twice (fresh plan ids) has one key; a different expression, another table schema, or (for
Spark's copy of a view) another version gives another; what the key cannot vouch for - a function sqlglot does
not know (a UDF registered by name), SQL text reading a table, a named table leaf - gives none.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

pytest.importorskip("pyspark.sql.connect.plan")

from pyspark.sql.connect import expressions as X
from pyspark.sql.connect import plan as P
from pyspark.sql.connect.column import Column

from deltakernel import write_deltalake
from deltakernel.kernel.snapshot import Snapshot
from deltakernel.spark.scan.connect_plan import DeltaScan
from deltakernel.spark.scan.frame_keys import plan_key
from deltakernel.storage import storage_for_uri


@pytest.fixture
def table(tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]}))
    return path


def _leaf(path: str) -> DeltaScan:
    return DeltaScan(None, Snapshot.load(storage_for_uri(path)))


def _chain(leaf: DeltaScan, factor: int = 2, where: str = "id = 5", fn: str = "upper") -> P.LogicalPlan:
    x = Column(X.UnresolvedFunction("*", [X.ColumnReference("id", plan_id=leaf._plan_id),
                                          X.LiteralExpression._from_value(factor)]))
    chain = P.WithColumns(leaf, ["x"], [x])
    chain = P.Filter(chain, Column(X.SQLExpression(where)))
    return P.Project(chain, [Column(X.ColumnReference("x")),
                             Column(X.UnresolvedFunction(fn, [X.ColumnReference("s")]))])


def test_the_same_chain_has_one_key(table):
    key = plan_key(_chain(_leaf(table)), None)
    assert key is not None
    assert plan_key(_chain(_leaf(table)), None) == key  # fresh plan ids, the same key
    assert plan_key(_chain(_leaf(table), factor=3), None) != key
    assert plan_key(_chain(_leaf(table), where="id = 6"), None) != key
    assert plan_key(_chain(_leaf(table), fn="lower"), None) != key


def test_versions_count_only_when_asked(table):
    before = (plan_key(_chain(_leaf(table)), None), plan_key(_chain(_leaf(table)), None, versions=True))
    write_deltalake(table, pa.table({"id": pa.array([3], pa.int64()), "s": ["c"]}), mode="append")
    assert plan_key(_chain(_leaf(table)), None) == before[0]  # analysis sees the schema, not the version
    assert plan_key(_chain(_leaf(table)), None, versions=True) != before[1]  # Spark's copy of a view: per version
    write_deltalake(table, pa.table({"id": pa.array([4], pa.int64()), "s": ["d"], "n": [1]}), mode="append",
                    schema_mode="merge")
    assert plan_key(_chain(_leaf(table)), None) != before[0]  # a new schema


def test_what_the_key_cannot_vouch_for(table):
    assert plan_key(_chain(_leaf(table), fn="my_udf"), None) is None  # registered by name: may change
    assert plan_key(_chain(_leaf(table), where="my_udf(id) = 1"), None) is None
    assert plan_key(_chain(_leaf(table), where="id IN (SELECT id FROM other)"), None) is None
    assert plan_key(P.Project(P.Read("some_table"), [Column(X.ColumnReference("id"))]), None) is None
    assert plan_key(P.Project(P.Range(0, 3, 1, None), [Column(X.ColumnReference("id"))]), None) is None  # no Delta
    join = P.Join(_leaf(table), P.Range(0, 3, 1, None), None, "inner")
    assert plan_key(join, None) is not None  # local data beside a Delta leaf
