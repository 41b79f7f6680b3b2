"""Shredded variants through Spark (both session kinds): a Spark-written shredded table reads as VariantType with
Spark's own values, and a variant round trip (Spark writes, deltakernel and Spark read) keeps every value."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable
from deltakernel.kernel.variant.render import to_json_column

FIX = Path(__file__).resolve().parents[1] / "unit" / "variant_fixtures"
SPARK_JSON = [json.loads(line) for line in (FIX / "spark_to_json.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def shredded_table(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("shredded")
    (root / "_delta_log").mkdir()
    shutil.copy(FIX / "shredded.parquet", root / "part-0.parquet")
    fields = [{"name": n, "type": t, "nullable": True, "metadata": {}}
              for n, t in (("id", "integer"), ("v", "variant"), ("t", "variant"))]
    features = ["variantType", "variantShredding-preview"]
    actions = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                      "writerFeatures": features}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                      "schemaString": json.dumps({"type": "struct", "fields": fields}), "configuration": {}}},
        {"add": {"path": "part-0.parquet", "partitionValues": {}, "modificationTime": 0, "dataChange": True,
                 "size": (root / "part-0.parquet").stat().st_size}},
    ]
    (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(root)


def test_shredded_table_reads_as_variant_type(spark, shredded_table: str) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    df = spark.read.format("delta").load(shredded_table)
    assert df.schema["v"].dataType.typeName() == "variant"
    rows = df.selectExpr("id", "to_json(v) AS v", "to_json(t) AS t").orderBy("id").collect()
    assert [(r["id"], r["v"], r["t"]) for r in rows] == [(e["id"], e["v"], e["t"]) for e in SPARK_JSON]


def test_variant_round_trip_through_spark(spark, shredded_table: str, tmp_path: Path) -> None:
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    path = str(tmp_path / "rt")
    src = spark.read.format("delta").load(shredded_table)
    src.write.format("delta").save(path)
    # deltakernel reads what Spark wrote, with the values Spark prints
    t = DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert to_json_column(t.column("v").combine_chunks()).to_pylist() == [e["v"] for e in SPARK_JSON]
    back = spark.read.format("delta").load(path).selectExpr("id", "to_json(t) AS t").orderBy("id").collect()
    assert [r["t"] for r in back] == [e["t"] for e in SPARK_JSON]
    # the files hold each variant as delta-spark writes it (an optional group, required metadata / value), so
    # deltalake reads the null variant row too
    for f in Path(path).rglob("*.parquet"):
        text = str(pq.ParquetFile(f).schema)
        assert "optional binary field_id=-1 metadata" not in text and "required binary field_id=-1 metadata" in text
    deltalake = pytest.importorskip("deltalake")
    assert deltalake.DeltaTable(path).to_pyarrow_table().sort_by("id").column("v").to_pylist() == \
        t.column("v").to_pylist()


# ----------------------------------------------------------------------------- shredded writes
def _source(spark, n: int, start: int = 0):
    return spark.range(start, start + n).selectExpr(
        "cast(id as int) AS id",
        "parse_json(format_string('{\"a\": %d, \"b\": \"s%d\", \"c\": {\"d\": %d.5, \"e\": [%d]}}', id, id, id, id))"
        " AS v")


def _files(path: str) -> list[Path]:
    return sorted(Path(path).rglob("*.parquet"))


def _shredded(f: Path) -> bool:
    return pq.ParquetFile(f).schema_arrow.field("v").type.get_field_index("typed_value") >= 0


def test_spark_writes_shredded_variants_that_every_reader_reads(spark, tmp_path: Path) -> None:
    # df.write with the property, then SQL INSERT: files shredded as Spark 4.3 infers, the feature in the protocol
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    path = str(tmp_path / "t")
    _source(spark, 30).write.format("delta").option("delta.enableVariantShredding", "true").save(path)
    _source(spark, 20, 30).createOrReplaceTempView("more_variants")
    spark.sql(f"INSERT INTO delta.`{path}` SELECT * FROM more_variants")
    table = DeltaTable(path)
    assert table.metadata().configuration["delta.enableVariantShredding"] == "true"
    assert "variantShredding" in table.protocol().reader_features
    files = _files(path)
    assert files and all(_shredded(f) for f in files)
    typed = pq.ParquetFile(files[0]).schema_arrow.field("v").type.field("typed_value").type
    assert [f.name for f in typed] == ["a", "b", "c"]
    expected = [json.dumps({"a": i, "b": f"s{i}", "c": {"d": i + 0.5, "e": [i]}}, separators=(",", ":"))
                for i in range(50)]
    # through deltakernel on Spark (VariantType), Spark's own Parquet reader on the files, and the embedded reader
    df = spark.read.format("delta").load(path)
    assert df.schema["v"].dataType.typeName() == "variant"
    assert [r["j"] for r in df.selectExpr("id", "to_json(v) AS j").orderBy("id").collect()] == expected
    native = spark.read.parquet(*[str(f) for f in files])
    assert native.schema["v"].dataType.typeName() == "variant"
    assert [r["j"] for r in native.selectExpr("id", "to_json(v) AS j").orderBy("id").collect()] == expected
    got = table.to_pyarrow_table().sort_by("id")
    assert to_json_column(got.column("v").combine_chunks()).to_pylist() == expected


def test_spark_forced_shredding_schema_and_disabled_shredding(spark, tmp_path: Path) -> None:
    # (a forced schema on a table without the property fails: the embedded write's test, the same code path)
    path = str(tmp_path / "t")
    spark.conf.set("spark.sql.variant.forceShreddingSchemaForTest", "a long")
    try:
        _source(spark, 10).write.format("delta").option("delta.enableVariantShredding", "true").save(path)
    finally:
        spark.conf.unset("spark.sql.variant.forceShreddingSchemaForTest")
    first = _files(path)
    for f in first:
        assert [x.name for x in pq.ParquetFile(f).schema_arrow.field("v").type.field("typed_value").type] == ["a"]
    spark.conf.set("spark.sql.variant.writeShredding.enabled", "false")  # Spark's switch: no shredding
    try:
        _source(spark, 10, 10).write.format("delta").mode("append").save(path)
    finally:
        spark.conf.unset("spark.sql.variant.writeShredding.enabled")
    later = [f for f in _files(path) if f not in first]
    assert later and not any(_shredded(f) for f in later)
    got = DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert to_json_column(got.column("v").combine_chunks()).to_pylist() == [
        json.dumps({"a": i, "b": f"s{i}", "c": {"d": i + 0.5, "e": [i]}}, separators=(",", ":")) for i in range(20)]
