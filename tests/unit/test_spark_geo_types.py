"""Which Delta geospatial columns reach Spark as its own geometry/geography types, and Spark's Arrow form of
those values back to the WKB the kernel writer stores (`spark/common/geo_types.py`; no Spark session needed)."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from deltakernel.kernel.schema.geospatial import parse_geo_type
from deltakernel.kernel.schema.types import parse_schema_string
from deltakernel.spark.common import geo_types as gt


def _pt(x: float, y: float) -> bytes:
    return struct.pack("<BIdd", 1, 1, x, y)


def _spark_geo(values: list[bytes | None], srid: int = 4326) -> pa.StructArray:
    """What pyspark's Arrow conversion hands a task for a geometry column: struct<srid, wkb>, null structs for
    null values (the children of a null slot hold anything)."""
    wkb_field = pa.field("wkb", pa.binary(), False, metadata={b"geometry": b"true", b"srid": str(srid).encode()})
    srids = pa.array([srid] * len(values), pa.int32())
    wkbs = pa.array([v if v is not None else b"" for v in values], pa.binary())
    mask = pa.array([v is None for v in values])
    return pa.StructArray.from_arrays([srids, wkbs], fields=[pa.field("srid", pa.int32(), False), wkb_field],
                                      mask=mask)


def test_spark_types_for_the_crs_spark_names():
    pytest.importorskip("pyspark")
    if gt.pyspark_version() < gt.MIN_PYSPARK:
        pytest.skip("this pyspark has no geospatial types Spark can read and write")
    assert gt.spark_geo_type(parse_geo_type("geometry(OGC:CRS84)")).srid == 4326
    assert gt.spark_geo_type(parse_geo_type("geometry(EPSG:3857)")).srid == 3857
    assert gt.spark_geo_type(parse_geo_type("geography(OGC:CRS84, spherical)")).srid == 4326
    # Spark names no other CRS and only the spherical algorithm: those columns stay binary
    assert gt.spark_geo_type(parse_geo_type("geometry(EPSG:32633)")) is None
    assert gt.spark_geo_type(parse_geo_type("geography(OGC:CRS84, vincenty)")) is None
    assert gt.spark_type_json(parse_geo_type("geography(OGC:CRS84, spherical)")) == \
        "geography(OGC:CRS84, SPHERICAL)"


def test_older_pyspark_keeps_binary(monkeypatch):
    """pyspark 4.1 / 4.2 have GeometryType, but this engine shows geometry as binary there (MIN_PYSPARK)."""
    pyspark = pytest.importorskip("pyspark")
    for old in ("4.0.1", "4.1.1", "4.2.0"):
        monkeypatch.setattr(pyspark, "__version__", old)
        assert not gt.pyspark_has_geo_types()
        assert gt.spark_geo_type(parse_geo_type("geometry(OGC:CRS84)")) is None
        schema = parse_schema_string('{"type":"struct","fields":[{"name":"g","type":"geometry(OGC:CRS84)",'
                                     '"nullable":true,"metadata":{}}]}')
        assert gt.top_level_geo(schema) == {}
        assert gt.session_geo_types(object(), schema) == {}  # not even the conf is asked


def test_session_geo_types_asks_nothing_for_tables_without_geo():
    schema = parse_schema_string('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,'
                                 '"metadata":{}}]}')
    assert gt.session_geo_types(object(), schema) == {}  # an object() session would fail any conf call


def test_wkb_batches_top_level_and_nested():
    schema = parse_schema_string(
        '{"type":"struct","fields":['
        '{"name":"id","type":"long","nullable":true,"metadata":{}},'
        '{"name":"g","type":"geometry(OGC:CRS84)","nullable":true,"metadata":{}},'
        '{"name":"s","type":{"type":"struct","fields":['
        '{"name":"h","type":"geography(OGC:CRS84, spherical)","nullable":true,"metadata":{}},'
        '{"name":"srid_like","type":{"type":"struct","fields":['
        '{"name":"srid","type":"integer","nullable":true,"metadata":{}},'
        '{"name":"wkb","type":"binary","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]},'
        '"nullable":true,"metadata":{}}]}')
    g = _spark_geo([_pt(1, 2), None, _pt(-179.5, 10)])
    h = _spark_geo([None, _pt(5, 6), _pt(7, 8)])
    # a user struct that looks like Spark's form but is a struct column in the table: left alone
    like = pa.StructArray.from_arrays([pa.array([1, 2, 3], pa.int32()), pa.array([b"a", b"b", b"c"])],
                                      names=["srid", "wkb"])
    s = pa.StructArray.from_arrays([h, like], names=["h", "srid_like"], mask=pa.array([False, False, True]))
    batch = pa.RecordBatch.from_arrays([pa.array([1, 2, 3], pa.int64()), g, s], names=["id", "g", "s"])
    (out,) = list(gt.wkb_batches(iter([batch]), schema))
    assert out.schema.field("g").type == pa.binary()
    assert out.column(1).to_pylist() == [_pt(1, 2), None, _pt(-179.5, 10)]
    assert out.column(2).to_pylist() == [
        {"h": None, "srid_like": {"srid": 1, "wkb": b"a"}},
        {"h": _pt(5, 6), "srid_like": {"srid": 2, "wkb": b"b"}},
        None,
    ]
    assert out.schema.field("s").type.field("srid_like").type == like.type


def test_wkb_batches_pass_through_without_geo():
    schema = parse_schema_string('{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,'
                                 '"metadata":{}}]}')
    batch = pa.RecordBatch.from_arrays([pa.array([1, 2])], names=["id"])
    (out,) = list(gt.wkb_batches(iter([batch]), schema))
    assert out is batch
