"""Tables deltakernel writes with the geospatial, collations and (unshredded) variant features, read by the other
readers.

deltalake 1.6.6 and DuckDB's bundled delta extension (both on delta-kernel-rs versions without geospatial
types) refuse a geometry table and a geography table ("Unsupported Delta table type"): tested as that refusal, so
the day they read them this test fails and is turned into a row comparison. Both read collated tables (a writer
feature). DuckDB reads unshredded variants as its VARIANT type (compared through its JSON rendering: DuckDB's
Python Arrow export of VARIANT is not implemented); deltalake's variant read is tested in
`tests/unit/test_variant_shredding.py`.
"""

from __future__ import annotations

import struct

import helpers
import pyarrow as pa
import pytest

from deltakernel import DeltaTable, write_deltalake

GEOM = {b"ARROW:extension:name": b"geoarrow.wkb", b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84"}'}
GEOG = {b"ARROW:extension:name": b"geoarrow.wkb",
        b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84","edges":"spherical"}'}
VARIANT = {b"ARROW:extension:name": b"arrow.parquet.variant", b"ARROW:extension:metadata": b""}
_EMPTY = b"\x01\x00\x00"  # variant metadata: version 1, no keys
#: (metadata, value) of variants (Parquet variant encoding): 7 (int8), "hi", {"a": 1}, a variant null
VARIANTS = [(_EMPTY, b"\x0c\x07"), (_EMPTY, b"\x09hi"), (b"\x01\x01\x00\x01a", b"\x02\x01\x00\x00\x02\x0c\x01"),
            (_EMPTY, b"\x00"), None]


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


@pytest.fixture(scope="module")
def geog_table(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("interop_geog") / "geog")
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("geog", pa.binary(), metadata=GEOG)])
    write_deltalake(path, pa.Table.from_arrays(
        [pa.array([1]), pa.array([struct.pack("<BIdd", 1, 1, 1.0, 2.0)], pa.binary())], schema=schema))
    return path


@pytest.fixture(scope="module")
def variant_table(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("interop_variant") / "variant")
    vt = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])
    values = pa.array([None if x is None else {"metadata": x[0], "value": x[1]} for x in VARIANTS], vt)
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("v", vt, metadata=VARIANT)])
    write_deltalake(path, pa.Table.from_arrays([pa.array(range(1, len(VARIANTS) + 1)), values], schema=schema))
    return path


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


def test_geography_refused(geog_table: str) -> None:
    with pytest.raises(Exception, match="geography"):
        helpers.deltalake_table(geog_table)
    pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_delta")
    with pytest.raises(Exception, match="geography"):
        helpers.duckdb_table(geog_table)


def test_duckdb_reads_unshredded_variants(variant_table: str) -> None:
    pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_delta")
    from deltakernel.kernel.variant.render import to_json_column

    ours = DeltaTable(variant_table).to_pyarrow_table().sort_by("id")
    assert ours.num_rows == len(VARIANTS)
    # DuckDB has no separate variant null: a variant holding null reads as SQL NULL there
    expected = [None if j in (None, "null") else j for j in to_json_column(ours.column("v").combine_chunks()).to_pylist()]
    assert expected == ["7", '"hi"', '{"a":1}', None, None]
    sql = ("SELECT id, CASE WHEN v IS NULL THEN NULL ELSE CAST(v::JSON AS VARCHAR) END FROM delta_scan('{}') "
           "ORDER BY id").format(variant_table.replace("'", "''"))
    got = helpers.duckdb_connection().execute(sql).fetchall()
    assert got == list(zip(ours.column("id").to_pylist(), expected))
