"""Spark reads of the geospatial and collations features (both session kinds): geometry/geography columns
arrive as their WKB bytes; a UTF8_LCASE column keeps its collation in Spark, and a filter that matches by
that collation ('a' = 'A') finds the row even though the file's binary min/max ([A, A]) would rule it out."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from deltakernel import write_deltalake


def _pt(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _geo_table() -> pa.Table:
    geom = pa.field("geom", pa.binary(), metadata={b"ARROW:extension:name": b"geoarrow.wkb",
                                                   b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84"}'})
    geog = pa.field("geog", pa.binary(), metadata={b"ARROW:extension:name": b"geoarrow.wkb",
                                                   b"ARROW:extension:metadata":
                                                       b'{"crs":"OGC:CRS84","edges":"spherical"}'})
    return pa.Table.from_arrays(
        [pa.array([1, 2, 3], pa.int64()), pa.array([_pt(1, 2), None, _pt(-179.5, 10)], pa.binary()),
         pa.array([_pt(5, 6), _pt(7, 8), None], pa.binary())],
        schema=pa.schema([pa.field("id", pa.int64()), geom, geog]))


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("geo_coll")
    geo = str(root / "geo")
    write_deltalake(geo, _geo_table())
    coll = str(root / "coll")
    name = pa.field("name", pa.string(), metadata={b"__COLLATIONS": b'{"name":"spark.UTF8_LCASE"}'})
    schema = pa.schema([pa.field("id", pa.int64()), name])
    write_deltalake(coll, pa.Table.from_arrays([pa.array([1]), pa.array(["A"])], schema=schema))
    write_deltalake(coll, pa.Table.from_arrays([pa.array([2]), pa.array(["b"])], schema=schema), mode="append")
    return geo, coll


def test_geospatial_reads_as_wkb_binary(spark, tables):
    geo, _ = tables
    df = spark.read.format("delta").load(geo)
    assert [f.dataType.typeName() for f in df.schema.fields] == ["long", "binary", "binary"]
    rows = sorted((r["id"], r["geom"], r["geog"]) for r in df.collect())
    got = [(i, bytes(g) if g is not None else None, bytes(h) if h is not None else None) for i, g, h in rows]
    assert got == [(1, _pt(1, 2), _pt(5, 6)), (2, None, _pt(7, 8)), (3, _pt(-179.5, 10), None)]


def test_collated_filter_is_not_skipped_away(spark, tables):
    _, coll = tables
    df = spark.read.format("delta").load(coll)
    assert "UTF8_LCASE" in df.schema["name"].dataType.simpleString().upper()
    assert sorted(r["id"] for r in df.where("name = 'a'").collect()) == [1]
    assert sorted(r["id"] for r in df.where("name = 'B'").collect()) == [2]
