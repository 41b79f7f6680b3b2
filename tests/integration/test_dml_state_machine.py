"""Random sequences of appends and deletes (with and without deletion vectors and change data feed) against
an in-memory model: the table equals the model at every version (time travel included), and the change
data feed equals the model's changes. UPDATE and MERGE join the rules as they land."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from deltakernel import DeltaTable, write_deltalake

pytestmark = pytest.mark.skipif(not hasattr(DeltaTable, "delete"), reason="DeltaTable.delete not built yet")

SCHEMA = pa.schema([("id", pa.int64()), ("grp", pa.string()), ("v", pa.int64())])
GROUPS = ["a", "b", "c"]

rows_st = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from(GROUPS), st.one_of(st.none(), st.integers(-5, 5))),
    min_size=1, max_size=12,
)
predicate_st = st.one_of(
    st.builds(lambda lo, hi: (f"id >= {lo} AND id < {hi}", lambda r: r[0] is not None and lo <= r[0] < hi),
              st.integers(0, 60), st.integers(0, 70)),
    st.builds(lambda g: (f"grp = '{g}'", lambda r: r[1] == g), st.sampled_from(GROUPS)),
    st.builds(lambda x: (f"v > {x}", lambda r: r[2] is not None and r[2] > x), st.integers(-5, 5)),
    st.just(("v IS NULL", lambda r: r[2] is None)),
)


class DmlMachine(RuleBasedStateMachine):
    """The model: the table's rows (a multiset of tuples) at every version, and each version's changes."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="dk-dml-")
        self.path = f"{self.dir}/t"
        self.versions: list[Counter[tuple[Any, ...]]] = []
        self.changes: list[list[tuple[str, tuple[Any, ...]]]] = []

    @initialize(rows=rows_st, dvs=st.booleans(), cdf=st.booleans(), partitioned=st.booleans())
    def create(self, rows: list[tuple[Any, ...]], dvs: bool, cdf: bool, partitioned: bool) -> None:
        conf = {}
        if dvs:
            conf["delta.enableDeletionVectors"] = "true"
        if cdf:
            conf["delta.enableChangeDataFeed"] = "true"
        self.cdf = cdf
        write_deltalake(self.path, self._table(rows), partition_by=["grp"] if partitioned else None,
                        configuration=conf or None)
        self.versions.append(Counter(rows))
        self.changes.append([("insert", r) for r in rows])

    @staticmethod
    def _table(rows: list[tuple[Any, ...]]) -> pa.Table:
        return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)

    @rule(rows=rows_st)
    def append(self, rows: list[tuple[Any, ...]]) -> None:
        write_deltalake(self.path, self._table(rows), mode="append")
        self.versions.append(self.versions[-1] + Counter(rows))
        self.changes.append([("insert", r) for r in rows])

    @rule(pred=predicate_st)
    def delete(self, pred: tuple[str, Any]) -> None:
        text, matches = pred
        current = self.versions[-1]
        gone = Counter({r: n for r, n in current.items() if matches(r)})
        before = DeltaTable(self.path).version()
        metrics = DeltaTable(self.path).delete(text)
        assert metrics["num_deleted_rows"] == sum(gone.values())
        if DeltaTable(self.path).version() == before:  # nothing matched: no commit (delta-spark and deltalake)
            assert not gone
            return
        self.versions.append(current - gone)
        self.changes.append([("delete", r) for r, n in gone.items() for _ in range(n)])

    @precondition(lambda self: len(self.versions) > 0)
    @invariant()
    def table_equals_model_at_every_version(self) -> None:
        latest = DeltaTable(self.path)
        assert latest.version() == len(self.versions) - 1
        for v in {0, len(self.versions) // 2, len(self.versions) - 1}:
            got = DeltaTable(self.path, version=v).to_pyarrow_table().select(SCHEMA.names).to_pylist()
            assert Counter(tuple(r.values()) for r in got) == self.versions[v], f"version {v}"

    @precondition(lambda self: len(self.versions) > 0)
    @invariant()
    def change_feed_equals_model(self) -> None:
        if not self.cdf:
            return
        feed = DeltaTable(self.path).load_cdf(starting_version=0).read_all().to_pylist()
        got = Counter((r["_change_type"], r["_commit_version"], r["id"], r["grp"], r["v"]) for r in feed)
        want = Counter((kind, v, *row) for v, ch in enumerate(self.changes) for kind, row in ch)
        assert got == want

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


DmlMachine.TestCase.settings = settings(max_examples=12, stateful_step_count=6, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
test_dml_state_machine = pytest.mark.slow(DmlMachine.TestCase)
