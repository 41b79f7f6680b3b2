"""Random sequences of appends and deletes (with and without deletion vectors and change data feed) against
an in-memory model: the table equals the model at every version (time travel included), and the change
data feed equals the model's changes. UPDATE and MERGE join the rules as they land (MERGE: an upsert by
`id`)."""

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
#: (UPDATE's SET list, the model's row -> new row)
update_st = st.one_of(
    st.builds(lambda d: ({"v": f"v + {d}"}, lambda r: (r[0], r[1], None if r[2] is None else r[2] + d)),
              st.integers(-3, 3)),
    st.just(({"v": "NULL"}, lambda r: (r[0], r[1], None))),
    st.just(({"v": "CASE WHEN v IS NULL THEN 0 ELSE -v END"},
             lambda r: (r[0], r[1], 0 if r[2] is None else -r[2]))),
    st.builds(lambda g: ({"grp": f"'{g}'", "id": "id + 1"}, lambda r: (r[0] + 1, g, r[2])),
              st.sampled_from(GROUPS)),  # moves rows between partitions
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

    @precondition(lambda self: hasattr(DeltaTable, "update"))
    @rule(pred=st.one_of(st.none(), predicate_st), assignment=update_st)
    def update(self, pred: tuple[str, Any] | None, assignment: tuple[dict[str, str], Any]) -> None:
        """Matching rows take the new values (NULL predicate = not matched); CDF: pre/post images."""
        updates, apply = assignment
        text, matches = pred if pred is not None else (None, lambda r: True)
        current = self.versions[-1]
        hit = Counter({r: n for r, n in current.items() if matches(r)})
        post: Counter[tuple[Any, ...]] = Counter()
        for r, n in hit.items():
            post[apply(r)] += n
        before = DeltaTable(self.path).version()
        metrics = DeltaTable(self.path).update(updates=updates, predicate=text)
        assert metrics["num_updated_rows"] == sum(hit.values())
        if DeltaTable(self.path).version() == before:  # nothing matched: no commit
            assert not hit
            return
        self.versions.append(current - hit + post)
        self.changes.append([("update_preimage", r) for r, n in hit.items() for _ in range(n)]
                            + [("update_postimage", apply(r)) for r, n in hit.items() for _ in range(n)])

    @precondition(lambda self: hasattr(DeltaTable, "merge"))
    @rule(source=st.dictionaries(st.integers(0, 70), st.tuples(st.sampled_from(GROUPS),
                                                              st.one_of(st.none(), st.integers(-5, 5))),
                                 min_size=1, max_size=8))
    def merge(self, source: dict[int, tuple[Any, Any]]) -> None:
        """Upsert by `id` (source ids unique): every target row with a source id takes the source's
        values, source rows without a target row are inserted."""
        current = self.versions[-1]
        src_rows = [(i, g, v) for i, (g, v) in source.items()]
        updated = Counter({r: n for r, n in current.items() if r[0] in source})
        post = Counter()
        for r, n in updated.items():
            post[(r[0], *source[r[0]])] += n
        present = {r[0] for r in current}
        inserted = [r for r in src_rows if r[0] not in present]
        metrics = DeltaTable(self.path).merge(self._table(src_rows), "t.id = s.id", source_alias="s",
                                              target_alias="t") \
            .when_matched_update_all().when_not_matched_insert_all().execute()
        assert metrics["num_target_rows_updated"] == sum(updated.values())
        assert metrics["num_target_rows_inserted"] == len(inserted)
        self.versions.append(current - updated + post + Counter(inserted))
        self.changes.append([("update_preimage", r) for r, n in updated.items() for _ in range(n)]
                            + [("update_postimage", (r[0], *source[r[0]])) for r, n in updated.items()
                               for _ in range(n)]
                            + [("insert", r) for r in inserted])

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
