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
