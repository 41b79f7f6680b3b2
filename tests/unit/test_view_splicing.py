"""A closed view is spliced into the statement as a derived table (`relations._expand`; docs/decisions.md
"Connect: a closed view spliced into the statement") - no server needed: a stand-in relation kind finds the uses.

Spliced: the view's rewritten text replaces its name, its scans travel with the statement, and the statement's
conjuncts on the view only choose files (they reach the view's tables through the wrapped text the kind analyses,
and are not sent inside the derived table). Kept as a nested reference: a view reading anything but rewritten Delta
uses, a view defining a CTE name the statement defines too, any view of a kind that cannot scope its relations.
"""

from __future__ import annotations

import pytest

from deltakernel.spark.catalog.tables import DeltaRef
from deltakernel.spark.sql import relations as R
from deltakernel.spark.sql import text_plans as T


class _Kind:
    """A scoped relation kind over fixed texts: `views` maps a view name to its text; each table name `t*` read
    by a text is a Delta path use; conditions: the text's `WHERE (...)` conjuncts for its tables, the statement's
    `WHERE` conjuncts for its view uses."""

    resolves_catalog_names = False
    bounded = True

    def __init__(self, views: dict[str, str], scoped: bool = True, closed: bool = True,
                 view_ctes: frozenset[str] = frozenset()) -> None:
        self.views = views
        self.scoped = scoped
        self.closed = closed
        self.view_ctes = view_ctes
        self.found: list[str] = []  # texts `find` was asked about
        self.queries: list[str] = []  # view texts made nested references (`query`)
        self.bound: list[list[str]] = []  # the conditions each table use was bound with

    def _uses(self, text: str) -> list[R.RelationUse]:
        import re

        uses = []
        for m in re.finditer(r"\bFROM (\w+)", text):
            name = m.group(1)
            if name.startswith("t"):
                uses.append(R.RelationUse(m.start(1), m.end(1), DeltaRef(f"/tables/{name}", name), {}, name))
            elif name in self.views:
                inner = self._uses(self.views[name])
                for u in inner:
                    u.start = u.stop = -1
                uses.append(R.RelationUse(m.start(1), m.end(1), None, {}, name,
                                          view=R.StoredView(None, name, self.views[name], None),
                                          inner=inner, closed=self.closed, names=self.view_ctes))
        return uses

    def find(self, text, run_sql):
        import re

        self.found.append(text)
        ctes = frozenset(m.group(1).lower() for m in re.finditer(r"WITH (\w+) AS", text))
        return R.Found(self._uses(text), state=text, names=ctes)

    def push_conditions(self, found, uses, bases):
        text = found.state
        where = text.rsplit(" WHERE ", 1)[1] if " WHERE " in text else ""
        conjuncts = [c.strip().strip("()") for c in where.split(" AND ")] if where else []
        for use in uses:
            use.conditions = list(conjuncts)

    def bind(self, use, base):
        self.bound.append(list(use.conditions))
        return f"scan of {use.ref.location} with {use.conditions}", (use.ref.location, tuple(use.conditions))

    def register(self, name, frame):
        raise AssertionError("a scoped statement registers no view")

    def query(self, text, relations):
        self.queries.append(text)
        return f"query {text}"

    def qualify(self, text, database):
        return text

    def after(self, found):
        pass


@pytest.fixture(autouse=True)
def _no_tables(monkeypatch):
    import deltakernel.spark.catalog.table_frames as tf

    monkeypatch.setattr(tf, "latest_frame", lambda spark, location, options=None, table=None: f"table {location}")


def _rewrite(kind: _Kind, text: str) -> R.Rewritten:
    done = R.rewrite(None, text, kind, kind.find(text, None), lambda *a: None)
    assert done is not None
    return done


def test_a_closed_view_is_spliced_as_a_derived_table():
    kind = _Kind({"v": "SELECT id, s FROM t1"})
    done = _rewrite(kind, "SELECT id FROM v WHERE id = 5")
    [(name, frame)] = done.relations.items()
    assert done.text == f"SELECT id FROM (\nSELECT id, s FROM {name} AS `t1`\n) AS `v` WHERE id = 5"
    assert frame == "scan of /tables/t1 with ['id = 5']"  # the statement's conjuncts chose the table's files
    assert kind.found[1] == "SELECT * FROM (\nSELECT id, s FROM t1\n) AS __dk_view WHERE (id = 5)"
    assert kind.queries == [] and not done.registered


def test_views_over_views_and_without_conditions():
    kind = _Kind({"v": "SELECT id, s FROM t1", "w": "SELECT id FROM v"})
    done = _rewrite(kind, "SELECT id FROM w")
    [name] = done.relations
    assert done.text == f"SELECT id FROM (\nSELECT id FROM (\nSELECT id, s FROM {name} AS `t1`\n) AS `v`\n) AS `w`"
    assert kind.queries == []


def test_a_column_list_stays_on_the_spliced_text():
    kind = _Kind({})
    view = R.StoredView(None, "v", "SELECT id, s FROM t1", None, ["k", "label"], renames=True)
    use = R.RelationUse(14, 15, None, {}, "v", view=view, inner=kind._uses(view.text), closed=True)
    text = "SELECT k FROM v WHERE k = 5"
    done = R.rewrite(None, text, kind, R.Found([use], state=text), lambda *a: None)
    assert done is not None
    [name] = done.relations
    assert done.text == ("SELECT k FROM (\nSELECT * FROM (\n"
                         f"SELECT id, s FROM {name} AS `t1`\n) AS __dk_view(`k`, `label`)\n) AS `v` WHERE k = 5")


@pytest.mark.parametrize("kind", [
    _Kind({"v": "SELECT id, s FROM t1"}, closed=False),  # the view reads something else too (a Parquet table)
    _Kind({"v": "SELECT id, s FROM t1"}, view_ctes=frozenset({"c"})),  # its CTE `c` is defined around it too
], ids=["not closed", "a CTE name defined around it"])
def test_views_kept_as_nested_references(kind):
    done = _rewrite(kind, "WITH c AS (SELECT 1 AS k) SELECT id FROM v WHERE id = 5")
    assert len(done.relations) == 1 and kind.queries  # the view's text as a reference of its own
    [(name, frame)] = done.relations.items()
    assert name.startswith("__delta_view_") and done.text.endswith(f"FROM {name} AS `v` WHERE id = 5")
    assert frame == f"query {kind.queries[0]}" and kind.queries[0].endswith("WHERE (id = 5)")


def test_a_cte_name_the_statement_does_not_define_is_spliced():
    kind = _Kind({"v": "SELECT id, s FROM t1"}, view_ctes=frozenset({"d"}))
    done = _rewrite(kind, "WITH c AS (SELECT 1 AS k) SELECT id FROM v WHERE id = 5")
    assert kind.queries == [] and "(\nSELECT id, s FROM __delta_" in done.text


def test_shared_trees_are_kept_per_text_and_bounded():
    text = "SELECT id FROM dk_shared_tree_view_text"
    first = T.shared_tree(text)
    assert T.shared_tree(text) is first
    for i in range(T.shared_tree.cache_info().maxsize):
        T.shared_tree(f"SELECT {i} FROM dk_shared_tree_other")
    assert T.shared_tree(text) is not first  # evicted, parsed again
    with pytest.raises(Exception):
        T.shared_tree("SELECT FROM WHERE (")
