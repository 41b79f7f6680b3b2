"""WriterProperties / ColumnProperties / BloomFilterProperties (deltalake's names) mapped onto pyarrow's
Parquet writer, checked on the files written (footers read by pyarrow, bloom filters probed by DuckDB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import deltakernel
from deltakernel import BloomFilterProperties, ColumnProperties, DeltaTable, WriterProperties


def _data(n: int = 2_000) -> pa.Table:
    return pa.table({"id": pa.array(range(n), pa.int64()), "cat": [f"c{i % 5}" for i in range(n)],
                     "st": pa.array([{"x": i, "y": str(i)} for i in range(n)])})


def _columns(path: Path) -> dict[str, Any]:
    """Logical leaf path -> first row group's column chunk metadata (physical names mapped back)."""
    t = DeltaTable(str(path))
    files = t.file_uris()
    assert len(files) == 1
    md = pq.ParquetFile(files[0]).metadata
    phys_to_logical: dict[str, str] = {}
    for f in t.snapshot.schema.fields:
        pn = str(f.metadata.get("delta.columnMapping.physicalName", f.name))
        phys_to_logical[pn] = f.name
        for g in getattr(f.type, "fields", ()):
            phys_to_logical[pn + "." + str(g.metadata.get("delta.columnMapping.physicalName", g.name))] = \
                f"{f.name}.{g.name}"
    rg = md.row_group(0)
    return {phys_to_logical[rg.column(i).path_in_schema]: rg.column(i) for i in range(rg.num_columns)}


@pytest.mark.parametrize("mapping", ["none", "name"])
def test_column_properties_reach_the_files(tmp_path: Path, mapping: str) -> None:
    duckdb = pytest.importorskip("duckdb")
    wp = WriterProperties(
        compression="ZSTD", compression_level=3, max_row_group_size=500,
        default_column_properties=ColumnProperties(dictionary_enabled=False),
        column_properties={
            "cat": ColumnProperties(dictionary_enabled=True, statistics_enabled="NONE"),
            "id": ColumnProperties(bloom_filter_properties=BloomFilterProperties(True, 0.01, 2_000)),
            "st.x": ColumnProperties(encoding="DELTA_BINARY_PACKED"),
        })
    deltakernel.write_deltalake(str(tmp_path), _data(), writer_properties=wp,
                                configuration={"delta.columnMapping.mode": mapping})
    cols = _columns(tmp_path)
    assert pq.ParquetFile(DeltaTable(str(tmp_path)).file_uris()[0]).metadata.num_row_groups == 4
    assert {c.compression for c in cols.values()} == {"ZSTD"}
    assert "RLE_DICTIONARY" in cols["cat"].encodings and not cols["cat"].is_stats_set
    assert "RLE_DICTIONARY" not in cols["id"].encodings and cols["id"].is_stats_set
    assert "DELTA_BINARY_PACKED" in cols["st.x"].encodings
    assert "RLE_DICTIONARY" not in cols["st.y"].encodings
    assert cols["id"].bloom_filter_offset is not None and cols["cat"].bloom_filter_offset is None
    # the bloom filter works: DuckDB proves absent values absent, never present ones
    file = DeltaTable(str(tmp_path)).file_uris()[0]
    column = cols["id"].path_in_schema
    probe = duckdb.sql(f"select bloom_filter_excludes from parquet_bloom_probe('{file}', '{column}', 1234)")
    assert [r[0] for r in probe.fetchall()] == [True, True, False, True]  # only row group 2 may hold 1234
    absent = duckdb.sql(f"select bloom_filter_excludes from parquet_bloom_probe('{file}', '{column}', 987654321)")
    assert [r[0] for r in absent.fetchall()] == [True] * 4
    # Delta statistics are unaffected by Parquet statistics settings
    assert DeltaTable(str(tmp_path)).get_add_actions(flatten=True).column("max.cat").to_pylist() == ["c4"]
    assert DeltaTable(str(tmp_path)).to_pyarrow_table().sort_by("id").equals(_data())


def test_default_properties_keep_dictionary_planning(tmp_path: Path) -> None:
    opts = WriterProperties().parquet_options()
    assert opts["use_dictionary"] is True and opts["write_statistics"] is True and opts["compression"] == "snappy"
    deltakernel.write_deltalake(str(tmp_path), _data(40_000))
    cols = _columns(tmp_path)
    assert "RLE_DICTIONARY" not in cols["id"].encodings  # nearly unique: planned plain (file_writer)
    assert "RLE_DICTIONARY" in cols["cat"].encodings


def test_dictionary_planning_waits_for_a_row_group_large_enough(tmp_path: Path) -> None:
    """A stream that starts with a few rows (a MERGE's first updated rows) is planned on its first row group,
    not on that first batch: unique columns are still written plain."""
    data = _data(40_000)
    batches = [*data.slice(0, 3).to_batches(), *data.slice(3).to_batches(max_chunksize=5_000)]
    deltakernel.write_deltalake(str(tmp_path), pa.RecordBatchReader.from_batches(data.schema, iter(batches)))
    cols = _columns(tmp_path)
    assert "RLE_DICTIONARY" not in cols["id"].encodings
    assert "RLE_DICTIONARY" in cols["cat"].encodings
    assert DeltaTable(str(tmp_path)).to_pyarrow_table().sort_by("id").equals(data)


def test_deltalake_objects_are_accepted(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    theirs = deltalake.WriterProperties(
        compression="GZIP", compression_level=7, max_row_group_size=300,
        column_properties={"cat": deltalake.ColumnProperties(
            dictionary_enabled=False, bloom_filter_properties=deltalake.BloomFilterProperties(True, 0.1))})
    ours = WriterProperties.coerce(theirs)
    assert (ours.codec(), ours.compression_level, ours.max_row_group_size) == ("gzip", 7, 300)
    assert ours.column_properties is not None and ours.column_properties["cat"].bloom_filter_properties == \
        BloomFilterProperties(True, 0.1)
    deltakernel.write_deltalake(str(tmp_path), _data(), writer_properties=theirs)
    cols = _columns(tmp_path)
    assert cols["cat"].compression == "GZIP" and cols["cat"].bloom_filter_offset is not None
    assert "RLE_DICTIONARY" not in cols["cat"].encodings


def test_validation_like_deltalake() -> None:
    deltalake = pytest.importorskip("deltalake")
    for kwargs in ({"compression_level": 3}, {"compression": "ZSTD", "compression_level": 30},
                   {"compression": "nope"}):
        with pytest.raises(ValueError):
            deltalake.WriterProperties(**kwargs)
        with pytest.raises(ValueError):
            WriterProperties(**kwargs)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError):
            BloomFilterProperties(True, bad)
        with pytest.raises(ValueError):
            deltalake.BloomFilterProperties(True, bad)
    with pytest.raises(ValueError):
        ColumnProperties(dictionary_enabled=True, encoding="PLAIN")
    assert WriterProperties(compression="ZSTD(4)").compression_level == 4
    assert WriterProperties(compression="ZSTD", compression_level=4) == WriterProperties(compression="zstd(4)")


def test_page_statistics_write_page_index() -> None:
    from deltakernel.kernel.schema.arrow import from_arrow_schema
    from deltakernel.operations.files.layout import make_layout

    layout = make_layout(from_arrow_schema(_data(1).schema), [], "none")
    opts = WriterProperties(column_properties={"id": ColumnProperties(statistics_enabled="PAGE"),
                                               "st": ColumnProperties(statistics_enabled="NONE")}
                            ).parquet_options(layout)
    assert opts["write_page_index"] is True
    assert opts["write_statistics"] == ["id", "cat"]  # a struct name covers its leaves


def test_decimals_are_stored_as_integers_like_spark(tmp_path: Path) -> None:
    """Decimals of precision <= 9 / <= 18 are INT32 / INT64 in the files (as Spark and parquet-rs write them; Arrow's
    default FIXED_LEN_BYTE_ARRAY decodes slower), wider ones FIXED_LEN_BYTE_ARRAY; values, statistics and the
    other readers are unchanged."""
    import decimal

    from deltalake import DeltaTable as RsTable

    from tests.helpers import duckdb_table

    if not getattr(pq.ParquetWriter.__init__, "__code__", None) or "store_decimal_as_integer" not in \
            pq.ParquetWriter.__init__.__code__.co_varnames:
        pytest.skip("this pyarrow cannot store decimals as integers (pyarrow < 18)")
    d = decimal.Decimal
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()),
                     "p5": pa.array([d("-1.5"), None, d("3.1")], pa.decimal128(5, 1)),
                     "p15": pa.array([d("-250.00"), d("1.10"), None], pa.decimal128(15, 2)),
                     "p38": pa.array([d(10**30), d(-(10**30)), d(7)], pa.decimal128(38, 0))})
    deltakernel.write_deltalake(str(tmp_path), data)
    cols = _columns(tmp_path)
    assert (cols["p5"].physical_type, cols["p15"].physical_type, cols["p38"].physical_type) == \
        ("INT32", "INT64", "FIXED_LEN_BYTE_ARRAY")
    t = DeltaTable(str(tmp_path))
    assert t.to_pyarrow_table().sort_by("id").equals(data)
    stats = t.get_add_actions(flatten=True).to_pylist()[0]
    assert (stats["min.p5"], stats["max.p5"], stats["min.p15"], stats["max.p15"]) == \
        (d("-1.5"), d("3.1"), d("-250.00"), d("1.10"))
    assert RsTable(str(tmp_path)).to_pyarrow_table().sort_by("id").equals(data)
    assert duckdb_table(tmp_path).sort_by("id").to_pylist() == data.to_pylist()
