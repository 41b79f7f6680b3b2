"""The Delta-only statement grammar of `deltakernel.spark.sql` (no Spark needed): what each statement parses
to, what is left to Spark's parser, and syntax errors as DeltaSqlSyntaxError."""

from __future__ import annotations

import pytest

from deltakernel.errors import DeltaError
from deltakernel.spark.sql import grammar as g
from deltakernel.spark.sql.grammar import DeltaSqlSyntaxError, parse_delta_statement, tokenize


def test_statements_parse():
    v = parse_delta_statement("VACUUM delta.`/tmp/x` RETAIN 0.5 HOURS DRY RUN;")
    assert isinstance(v, g.Vacuum) and v.table.parts == ("delta", "/tmp/x") and v.retain_hours == 0.5 and v.dry_run
    v = parse_delta_statement("vacuum '/data/t'")
    assert isinstance(v, g.Vacuum) and v.table.path == "/data/t" and v.retain_hours is None and not v.dry_run
    v = parse_delta_statement("VACUUM db.t LITE RETAIN 10 HOURS")
    assert isinstance(v, g.Vacuum) and v.mode == "LITE" and v.retain_hours == 10
    h = parse_delta_statement("DESCRIBE HISTORY `my db`.`t``x` LIMIT 3")
    assert isinstance(h, g.DescribeHistory) and h.table.parts == ("my db", "t`x") and h.limit == 3
    d = parse_delta_statement("desc detail '/a/b'")
    assert isinstance(d, g.DescribeDetail) and d.table.path == "/a/b"
    o = parse_delta_statement("OPTIMIZE t WHERE p = 'a' AND (x > 1) ZORDER BY (a, b.c)")
    assert isinstance(o, g.Optimize) and o.where == "p = 'a' AND (x > 1)" and o.zorder_by == ("a", "b.c")
    o = parse_delta_statement("OPTIMIZE t ZORDER BY a, b")
    assert isinstance(o, g.Optimize) and o.where is None and o.zorder_by == ("a", "b")
    o = parse_delta_statement("OPTIMIZE t WHERE date >= '2024-01-01'")
    assert isinstance(o, g.Optimize) and o.where == "date >= '2024-01-01'" and o.zorder_by == ()
    r = parse_delta_statement("RESTORE TABLE db.t TO VERSION AS OF 3")
    assert isinstance(r, g.Restore) and r.table.parts == ("db", "t") and r.version == 3
    r = parse_delta_statement("RESTORE t TIMESTAMP AS OF '2024-01-01 10:00:00'")
    assert isinstance(r, g.Restore) and r.timestamp == "2024-01-01 10:00:00" and r.version is None
    r = parse_delta_statement("RESTORE t TO TIMESTAMP AS OF current_timestamp() - INTERVAL 1 DAY")
    assert isinstance(r, g.Restore) and r.timestamp is None
    assert r.timestamp_expression == "current_timestamp() - INTERVAL 1 DAY"
    c = parse_delta_statement("CONVERT TO DELTA parquet.`/p` NO STATISTICS PARTITIONED BY (a INT, b DECIMAL(10, 2))")
    assert isinstance(c, g.ConvertToDelta) and c.no_statistics and c.partition_schema == "a INT, b DECIMAL(10, 2)"
    gen = parse_delta_statement("GENERATE symlink_format_manifest FOR TABLE delta.`/p`")
    assert isinstance(gen, g.Generate) and gen.mode == "symlink_format_manifest"
    a = parse_delta_statement("ALTER TABLE t ADD CONSTRAINT c1 CHECK (a > 0 AND b IN (1, 2))")
    assert isinstance(a, g.AddConstraint) and a.name == "c1" and a.expression == "a > 0 AND b IN (1, 2)"
    dc = parse_delta_statement("ALTER TABLE t DROP CONSTRAINT IF EXISTS c1")
    assert isinstance(dc, g.DropConstraint) and dc.if_exists and dc.name == "c1"
    df = parse_delta_statement("ALTER TABLE t DROP FEATURE 'deletionVectors' TRUNCATE HISTORY")
    assert isinstance(df, g.DropFeature) and df.feature == "deletionVectors" and df.truncate_history
    cb = parse_delta_statement("ALTER TABLE t CLUSTER BY (a, b)")
    assert isinstance(cb, g.ClusterBy) and cb.columns == ("a", "b")
    cb = parse_delta_statement("ALTER TABLE t CLUSTER BY NONE")
    assert isinstance(cb, g.ClusterBy) and cb.columns is None


@pytest.mark.parametrize("text", [
    "SELECT * FROM t", "DESCRIBE t", "DESC EXTENDED t", "DESCRIBE history", "DESCRIBE detail.col",
    "ALTER TABLE t ADD COLUMNS (x INT)", "ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')",
    "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", "-- only a comment", "",
    "CONVERT(x)", "/* c */ INSERT INTO t VALUES (1)",
    "SELECT 'unterminated", "ALTER TABLE t SET TBLPROPERTIES ('a' = 'unterminated)",  # Spark's own errors
])
def test_other_statements_go_to_spark(text):
    assert parse_delta_statement(text) is None


@pytest.mark.parametrize("text", [
    "VACUUM", "VACUUM t RETAIN x HOURS", "VACUUM t RETAIN 1", "VACUUM t USING INVENTORY inv",
    "OPTIMIZE t ZORDER (a)", "OPTIMIZE t WHERE", "RESTORE t TO VERSION AS OF", "DESCRIBE HISTORY t LIMIT",
    "DESCRIBE DETAIL t extra", "GENERATE x FOR t", "CONVERT TO DELTA parquet.`/p` PARTITIONED BY ()",
    "ALTER TABLE t ADD CONSTRAINT c CHECK a > 0", "ALTER TABLE t CLUSTER BY a", "VACUUM 'unterminated",
])
def test_syntax_errors(text):
    with pytest.raises(DeltaSqlSyntaxError) as info:
        parse_delta_statement(text)
    assert isinstance(info.value, DeltaError) and "syntax error" in str(info.value)


def test_tokens_keep_offsets_and_unescape():
    text = "VACUUM 'it\\'s' -- c\n`a``b`.c 1.5e3D"
    toks = tokenize(text)
    assert [(t.kind, t.text) for t in toks] == [("word", "VACUUM"), ("string", "it's"), ("quoted", "a`b"),
                                                ("op", "."), ("word", "c"), ("number", "1.5e3D")]
    assert all(text[t.start:t.end] for t in toks)
    assert text[toks[2].start:toks[2].end] == "`a``b`"
