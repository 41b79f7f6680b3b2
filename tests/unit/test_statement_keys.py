"""Statement keys of Spark Connect's one-request path (`spark/sql/statement_keys.py`), without Spark: which values
leave the key (only those compared with, each kept as its Spark type) and which statements get no key."""

from __future__ import annotations

from sqlglot import exp

from deltakernel.spark.sql import statement_keys as K
from deltakernel.spark.sql import text_plans as T


def _shape(text: str) -> str:
    return K.shape(T.parse(text))


def test_compared_values_leave_the_key_as_their_type():
    base = "SELECT id, s FROM delta.`/t` WHERE id = {v} AND s LIKE {p} AND d IN ({v}, 2)"
    assert _shape(base.format(v=1134, p="'k0%'")) == _shape(base.format(v=7, p="'x'"))
    assert _shape("SELECT id FROM t WHERE id = 1") != _shape("SELECT id FROM t WHERE id = 3000000000")  # INT, BIGINT
    assert _shape("SELECT id FROM t WHERE id = 1") != _shape("SELECT id FROM t WHERE id = 1.5")  # INT, DECIMAL
    assert _shape("SELECT id FROM t WHERE id = 1") != _shape("SELECT id FROM t WHERE id = '1'")  # INT, STRING
    assert _shape("SELECT id FROM t WHERE id BETWEEN 1 AND 5") == _shape("SELECT id FROM t WHERE id BETWEEN 7 AND 9")


def test_other_values_stay_in_the_key():
    assert _shape("SELECT id FROM t WHERE id = 1 LIMIT 1") != _shape("SELECT id FROM t WHERE id = 1 LIMIT 2")
    assert _shape("SELECT 1 AS a FROM t") != _shape("SELECT 2 AS a FROM t")
    assert _shape("SELECT id FROM t WHERE d = DATE'2020-01-01'") != _shape("SELECT id FROM t WHERE d = DATE'x'")
    assert _shape("SELECT id FROM t WHERE id = -1") != _shape("SELECT id FROM t WHERE id = -2")
    assert _shape("SELECT substr(s, 1, 2) FROM t") != _shape("SELECT substr(s, 1, 3) FROM t")
    assert _shape("SELECT id FROM t WHERE id IN (1)") != _shape("SELECT id FROM t WHERE id IN (1, 2)")


def test_reads_only_the_given_relations_and_known_functions():
    def reads(text: str, *names: str) -> bool:
        tree = T.parse(text)
        return K.reads_only(tree, [t for t in tree.find_all(exp.Table) if t.name in names])

    assert reads("SELECT a.id FROM t a JOIN u b ON a.id = b.id", "t", "u")
    assert not reads("SELECT a.id FROM t a JOIN u b ON a.id = b.id", "t")  # u: not planned by the router
    assert reads("WITH x AS (SELECT * FROM t) SELECT id FROM x WHERE id = 1", "t")  # a CTE
    assert not reads("SELECT * FROM db.x", "t")  # not a CTE name: qualified
    assert not reads("SELECT my_udf(id) FROM t", "t")  # a function sqlglot does not know
    assert not reads("SELECT * FROM range(10)")  # a table function
    tree = T.parse("SELECT * FROM t")
    assert not K.reads_only(tree, [None])  # a use without a node (table_changes)
