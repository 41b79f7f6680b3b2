"""Spark and the geospatial and collations features (both session kinds): geometry/geography columns arrive as
their WKB bytes, or - with Spark's geospatial types enabled (`spark.sql.geospatial.enabled`) - as Spark's
GEOMETRY / GEOGRAPHY types where Spark names the CRS, and Spark geometry/geography columns are written as the
protocol's types (WKB, Parquet's logical types, bounding-box statistics, the `geospatial` feature); a UTF8_LCASE
column keeps its collation in Spark, and a filter that matches by that collation ('a' = 'A') finds the row even
though the file's binary min/max ([A, A]) would rule it out."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.spark.common.geo_types import GEOSPATIAL_CONF, pyspark_has_geo_types


def _pt(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _wkb_field(name: str, meta: bytes) -> pa.Field:
    return pa.field(name, pa.binary(), metadata={b"ARROW:extension:name": b"geoarrow.wkb",
                                                 b"ARROW:extension:metadata": meta})


def _geo_table(utm: bool = False) -> pa.Table:
    fields = [pa.field("id", pa.int64()), _wkb_field("geom", b'{"crs":"OGC:CRS84"}'),
              _wkb_field("geog", b'{"crs":"OGC:CRS84","edges":"spherical"}')]
    cols = [pa.array([1, 2, 3], pa.int64()), pa.array([_pt(1, 2), None, _pt(-179.5, 10)], pa.binary()),
            pa.array([_pt(5, 6), _pt(7, 8), None], pa.binary())]
    if utm:  # a CRS Spark does not name: stays binary
        fields.append(_wkb_field("utm", b'{"crs":"EPSG:32633"}'))
        cols.append(pa.array([_pt(500000, 1), None, None], pa.binary()))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


@pytest.fixture
def geo_on(spark):
    """Spark's geospatial types on for this test (restored after)."""
    if not pyspark_has_geo_types():
        pytest.skip("this pyspark shows geospatial columns as binary only")
    old = spark.conf.get(GEOSPATIAL_CONF, None)
    spark.conf.set(GEOSPATIAL_CONF, "true")
    yield spark
    spark.conf.set(GEOSPATIAL_CONF, old) if old is not None else spark.conf.unset(GEOSPATIAL_CONF)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("geo_coll")
    geo = str(root / "geo")
    write_deltalake(geo, _geo_table(utm=True))
    coll = str(root / "coll")
    name = pa.field("name", pa.string(), metadata={b"__COLLATIONS": b'{"name":"spark.UTF8_LCASE"}'})
    schema = pa.schema([pa.field("id", pa.int64()), name])
    write_deltalake(coll, pa.Table.from_arrays([pa.array([1]), pa.array(["A"])], schema=schema))
    write_deltalake(coll, pa.Table.from_arrays([pa.array([2]), pa.array(["b"])], schema=schema), mode="append")
    return geo, coll


EXPECTED = [(1, _pt(1, 2), _pt(5, 6)), (2, None, _pt(7, 8)), (3, _pt(-179.5, 10), None)]


def _b(v):
    return bytes(v) if v is not None else None


def test_geospatial_reads_as_wkb_binary(spark, tables):
    geo, _ = tables
    old = spark.conf.get(GEOSPATIAL_CONF, None)
    spark.conf.set(GEOSPATIAL_CONF, "false")  # Spark's geospatial types off: the WKB bytes
    try:
        df = spark.read.format("delta").load(geo)
        assert [f.dataType.typeName() for f in df.schema.fields] == ["long", "binary", "binary", "binary"]
        got = sorted((r["id"], _b(r["geom"]), _b(r["geog"])) for r in df.collect())
    finally:
        spark.conf.set(GEOSPATIAL_CONF, old) if old is not None else spark.conf.unset(GEOSPATIAL_CONF)
    assert got == EXPECTED


def test_geospatial_reads_as_spark_types(geo_on, tables):
    spark = geo_on
    geo, _ = tables
    df = spark.read.format("delta").load(geo)
    assert [f.dataType.simpleString() for f in df.schema.fields] == \
        ["bigint", "geometry(4326)", "geography(4326)", "binary"]
    rows = df.selectExpr("id", "geom", "st_asbinary(geom) AS g", "st_asbinary(geog) AS h", "st_srid(geog) AS s",
                         "utm").collect()
    assert sorted((r["id"], _b(r["g"]), _b(r["h"])) for r in rows) == EXPECTED
    assert {r["s"] for r in rows if r["h"] is not None} == {4326}
    assert [_b(r["utm"]) for r in sorted(rows, key=lambda r: r["id"])] == [_pt(500000, 1), None, None]
    # collected values are pyspark's Geometry objects over the same WKB and the column's SRID
    one = next(r["geom"] for r in rows if r["id"] == 1)
    assert bytes(one.getBytes()) == _pt(1, 2) and one.getSrid() == 4326
    # a temporary view (on Connect: over the Python data source) and SQL over the path show the same types
    df.createOrReplaceTempView("dk_geo_view")
    (v,) = spark.sql("SELECT geom, st_asbinary(geom) AS g FROM dk_geo_view WHERE id = 3").collect()
    assert v["geom"].getSrid() == 4326 and _b(v["g"]) == _pt(-179.5, 10)
    assert spark.sql(f"SELECT * FROM delta.`{geo}`").schema["geog"].dataType.simpleString() == "geography(4326)"
    described = {r["col_name"]: r["data_type"] for r in spark.sql(f"DESCRIBE delta.`{geo}`").collect()}
    assert described["geom"] == "geometry(4326)" and described["utm"] == "binary"


def test_spark_geometry_columns_write_as_the_protocol_types(geo_on, tmp_path):
    spark = geo_on
    path = str(tmp_path / "w")
    src = spark.createDataFrame([(1, _pt(1, 2)), (2, None), (3, _pt(-3, 7))], "id long, wkb binary")
    df = src.selectExpr("id", "st_geomfromwkb(wkb, 4326) AS geom", "st_geogfromwkb(wkb) AS geog")
    df.write.format("delta").save(path)
    log = [json.loads(x) for x in (Path(path) / "_delta_log" / f"{0:020d}.json").read_text().splitlines()]
    proto = next(a["protocol"] for a in log if "protocol" in a)
    assert "geospatial" in proto["readerFeatures"] and "geospatial" in proto["writerFeatures"]
    schema = json.loads(next(a["metaData"] for a in log if "metaData" in a)["schemaString"])
    assert [f["type"] for f in schema["fields"]] == ["long", "geometry(OGC:CRS84)", "geography(OGC:CRS84, spherical)"]
    adds = [a["add"] for a in log if "add" in a]
    boxes = [json.loads(a["stats"]) for a in adds if json.loads(a["stats"])["numRecords"]]
    xs = [float(b["minValues"]["geom"].split("(")[1].split()[0]) for b in boxes if "geom" in b["minValues"]]
    assert xs and min(xs) == -3.0  # bounding boxes from the WKB
    assert all("geog" not in b["minValues"] for b in boxes)  # geography: null counts only
    text = str(pq.ParquetFile(Path(path) / adds[0]["path"]).metadata.schema)
    assert "Geometry" in text and "Geography" in text
    # the embedded reader sees the WKB; Spark reads the types back
    ours = DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert ours.column("geom").to_pylist() == [_pt(1, 2), None, _pt(-3, 7)]
    assert ours.column("geog").to_pylist() == [_pt(1, 2), None, _pt(-3, 7)]
    back = spark.read.format("delta").load(path)
    assert [f.dataType.simpleString() for f in back.schema.fields] == ["bigint", "geometry(4326)", "geography(4326)"]
    got = sorted((r["id"], _b(r["g"])) for r in back.selectExpr("id", "st_asbinary(geom) AS g").collect())
    assert got == [(1, _pt(1, 2)), (2, None), (3, _pt(-3, 7))]


def test_collated_filter_is_not_skipped_away(spark, tables):
    _, coll = tables
    df = spark.read.format("delta").load(coll)
    assert "UTF8_LCASE" in df.schema["name"].dataType.simpleString().upper()
    assert sorted(r["id"] for r in df.where("name = 'a'").collect()) == [1]
    assert sorted(r["id"] for r in df.where("name = 'B'").collect()) == [2]
