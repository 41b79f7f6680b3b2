"""Regenerate tests/unit/variant_fixtures/ with real Spark (not run by the suite; needs pyspark 4.1+ and Java).

Spark writes the same rows twice as plain Parquet: unshredded, and shredded with a forced shredding schema
(`a long, b string, c struct<d double, e array<long>>, z boolean`) for the top-level variants `v` and `t`.
`spark_to_json.jsonl` is Spark's `to_json` of every variant of the unshredded twin (session time zone UTC).
Usage: python scripts/variant_fixtures.py /tmp/out && copy out/{shredded,unshredded}/part-*.parquet and
out/expected_json.jsonl (as spark_to_json.jsonl) into tests/unit/variant_fixtures/.
"""
import sys
from pyspark.sql import SparkSession
out = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1").config("spark.sql.session.timeZone", "UTC").getOrCreate())
rows = [
    '{"a": 1, "b": "x", "c": {"d": 1.5, "e": [1, 2, 3]}, "z": true}',
    '{"a": 300, "b": "a string that is longer than sixty-three bytes, so it is not a short string at all", "c": {"d": 2.25, "e": []}}',
    '{"a": 70000, "b": null, "c": {"d": -0.5}}',
    '{"a": 5000000000, "c": {"e": [1, "two", null, {"k": 3}]}}',
    '{"a": "not an int", "b": "y", "extra": {"p": 1}}',
    '{"b": "only b", "c": 7}',
    '12',
    '"top string"',
    '[1, {"a": 2}]',
    'null',
    None,
    '{"a": -1, "b": "", "c": {"d": 1e300, "e": [1.25, 100000000000]}, "extra2": [true, false]}',
    '{"a": 12345678901234567890123, "b": "\\u00e9\\u4e2d\\ud83d\\ude00 \\"q\\" \\\\ \\n"}',
    '{}',
]
df = spark.createDataFrame([(i, r) for i, r in enumerate(rows)], "id int, j string")
df.createOrReplaceTempView("src")
q = """select id, parse_json(j) as v,
  named_struct('n', id, 'sv', parse_json(j)) as s,
  case when j is null then null else array(parse_json(j), parse_json('{"a": 9, "b": "e"}')) end as arr,
  map('k1', parse_json(j)) as m,
  case id when 0 then cast(date'2024-02-29' as variant) when 1 then cast(timestamp'2024-01-01 12:34:56.789' as variant)
          when 2 then cast(timestamp_ntz'2024-01-01 12:34:56.789' as variant) when 3 then cast(cast(12.345 as decimal(10,3)) as variant)
          when 4 then cast(cast(12345678901234.5 as decimal(30,1)) as variant) when 5 then cast(X'0102ff' as variant)
          when 6 then cast(cast(1.5 as float) as variant) when 7 then cast(true as variant)
          when 8 then cast(cast(3 as tinyint) as variant) else to_variant_object(named_struct('dt', date'2020-01-01', 'f', 1.5f)) end as t
  from src"""
spark.conf.set("spark.sql.variant.writeShredding.enabled", "false")
spark.sql(q).coalesce(1).write.mode("overwrite").parquet(out + "/unshredded")
spark.conf.set("spark.sql.variant.writeShredding.enabled", "true")
spark.conf.set("spark.sql.variant.forceShreddingSchemaForTest",
  "a long, b string, c struct<d double, e array<long>>, z boolean")
spark.sql(q).select("id", "v", "t").coalesce(1).write.mode("overwrite").parquet(out + "/shredded")
import json
rows = spark.read.parquet(out + "/unshredded").orderBy("id").selectExpr("id", "to_json(v) as v", "to_json(t) as t", "to_json(s.sv) as sv", "to_json(arr) as arr", "to_json(m) as m").collect()
with open(out + "/expected_json.jsonl", "w") as fh:
    for r in rows:
        fh.write(json.dumps(r.asDict()) + "\n")
spark.stop()
