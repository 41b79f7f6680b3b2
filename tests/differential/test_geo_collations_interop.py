"""Tables deltakernel writes with the geospatial and collations features, read by the other readers.

deltalake 1.6.6 and DuckDB's bundled delta extension (both on delta-kernel-rs versions without geospatial
types) refuse a geometry table ("Unsupported Delta table type"): tested as that refusal, so the day they
read it this test fails and is turned into a row comparison. Both read collated tables (a writer feature).
"""

from __future__ import annotations

import struct

import helpers
import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake

GEOM = {b"ARROW:extension:name": b"geoarrow.wkb", b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84"}'}


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("interop")
    geo = str(root / "geo")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("geom", pa.binary(), metadata=GEOM)])
    write_deltalake(geo, pa.Table.from_arrays(
        [pa.array([1, 2]), pa.array([struct.pack("<BIdd", 1, 1, 1.0, 2.0), None], pa.binary())], schema=schema))
    coll = str(root / "coll")
    name = pa.field("name", pa.string(), metadata={b"__COLLATIONS": b'{"name":"spark.UTF8_LCASE"}'})
    write_deltalake(coll, pa.Table.from_arrays([pa.array([1, 2]), pa.array(["A", "b"])],
                                               schema=pa.schema([pa.field("id", pa.int64()), name])))
    return geo, coll


def test_deltalake(tables: tuple[str, str]) -> None:
    geo, coll = tables
    with pytest.raises(Exception, match="geometry"):
        helpers.deltalake_table(geo)
    helpers.assert_same_rows(helpers.deltalake_table(coll), DeltaTable(coll).to_pyarrow_table(), "collations")


def test_duckdb(tables: tuple[str, str]) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_delta")
    geo, coll = tables
    with pytest.raises(Exception, match="geometry"):
        helpers.duckdb_table(geo)
    helpers.assert_same_rows(helpers.duckdb_table(coll), DeltaTable(coll).to_pyarrow_table(), "collations")
