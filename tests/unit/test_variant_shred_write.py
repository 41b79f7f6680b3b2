"""Shredded variant writes (issue 34 item 1, writes): `delta.enableVariantShredding`, Spark's shredding-schema
inference, and the column-wise shredder, checked against Spark 4.3's own shredded file and against the reader.

The Spark oracle: `variant_fixtures/shredded.parquet` is what Spark wrote for the fixture rows with a forced
schema (scripts/variant_fixtures.py); deltakernel shredding the same rows to the same schema must write the same
cells. Everything else round-trips through deltakernel's reader (`kernel/variant/unshred.py`, itself checked
byte for byte against Spark's files in test_variant_shredding.py).
"""

from __future__ import annotations

import datetime as dt
import json
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import DeltaError
from deltakernel.kernel.variant import binary as vb
from deltakernel.kernel.variant import decode, unshred
from deltakernel.kernel.variant.shred import shred
from deltakernel.kernel.variant.shred_schema import ShapeSyntaxError, file_type, infer_shapes, parse_shape

FIX = Path(__file__).parent / "variant_fixtures"
SPARK_SCHEMA = "a long, b string, c struct<d double, e array<long>>, z boolean"
VARIANT_META = {b"ARROW:extension:name": b"arrow.parquet.variant", b"ARROW:extension:metadata": b""}


# ----------------------------------------------------------------------------- a small variant encoder
class F32(float):
    """A value to encode as a variant float (not double)."""


def _enc(v: Any, keys: dict[str, int]) -> bytes:
    if v is None:
        return b"\x00"
    if isinstance(v, bool):
        return bytes([(vb.TRUE if v else vb.FALSE) << 2])
    if isinstance(v, int):
        for tid, w in ((vb.INT8, 1), (vb.INT16, 2), (vb.INT32, 4), (vb.INT64, 8)):
            if -(1 << (8 * w - 1)) <= v < 1 << (8 * w - 1):
                return bytes([tid << 2]) + v.to_bytes(w, "little", signed=True)
    if isinstance(v, F32):
        return bytes([vb.FLOAT << 2]) + struct.pack("<f", v)
    if isinstance(v, float):
        return bytes([vb.DOUBLE << 2]) + struct.pack("<d", v)
    if isinstance(v, Decimal):
        sign, digits, exp = v.as_tuple()
        scale = -int(exp)
        unscaled = int(v.scaleb(scale))
        tid, w = (vb.DECIMAL4, 4) if len(digits) <= 9 else (vb.DECIMAL8, 8) if len(digits) <= 18 else (vb.DECIMAL16, 16)
        return bytes([tid << 2, scale]) + unscaled.to_bytes(w, "little", signed=True)
    if isinstance(v, str):
        b = v.encode()
        if len(b) <= vb.MAX_SHORT_STRING:
            return bytes([(len(b) << 2) | vb.SHORT_STRING]) + b
        return bytes([vb.STRING << 2]) + len(b).to_bytes(4, "little") + b
    if isinstance(v, bytes):
        return bytes([vb.BINARY << 2]) + len(v).to_bytes(4, "little") + v
    if isinstance(v, dt.datetime):
        micros = (v.replace(tzinfo=None) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return bytes([(vb.TIMESTAMP if v.tzinfo else vb.TIMESTAMP_NTZ) << 2]) + micros.to_bytes(8, "little",
                                                                                               signed=True)
    if isinstance(v, dt.date):
        return bytes([vb.DATE << 2]) + (v - dt.date(1970, 1, 1)).days.to_bytes(4, "little", signed=True)
    if isinstance(v, dict):
        for k in v:
            keys.setdefault(k, len(keys))
        return vb.encode_object([(k, keys[k], _enc(x, keys)) for k, x in v.items()])
    if isinstance(v, list):
        parts = [_enc(x, keys) for x in v]
        size = sum(map(len, parts))
        osize = vb.integer_size(size)
        large = len(parts) > 0xFF
        out = bytearray([((1 if large else 0) << 2 | (osize - 1)) << 2 | vb.ARRAY])
        out += len(parts).to_bytes(4 if large else 1, "little")
        off = 0
        for p in parts:
            out += off.to_bytes(osize, "little")
            off += len(p)
        out += off.to_bytes(osize, "little")
        return bytes(out) + b"".join(parts)
    raise TypeError(v)


def _metadata(keys: dict[str, int]) -> bytes:
    names = [k.encode() for k in sorted(keys, key=keys.__getitem__)]
    offs, total = [0], 0
    for n in names:
        total += len(n)
        offs.append(total)
    osize = vb.integer_size(max(total, len(names)))
    head = bytes([0x01 | ((osize - 1) << 6)]) + len(names).to_bytes(osize, "little")
    return head + b"".join(o.to_bytes(osize, "little") for o in offs) + b"".join(names)


def variants(values: list[Any]) -> pa.StructArray:
    """Variant column of Python values (None: SQL NULL); one metadata dictionary per row, as Spark builds."""
    metas, vals = [], []
    for v in values:
        keys: dict[str, int] = {}
        body = _enc(v, keys) if v is not None else b""
        metas.append(_metadata(keys))
        vals.append(body)
    mask = pa.array([v is None for v in values])
    return pa.StructArray.from_arrays([pa.array(metas, pa.binary()), pa.array(vals, pa.binary())],
                                      fields=[pa.field("metadata", pa.binary(), False),
                                              pa.field("value", pa.binary(), False)], mask=mask)


def _decoded(col: pa.Array) -> list[Any]:
    return [None if x is None else decode(x["metadata"], x["value"]) for x in col.to_pylist()]


def _table(cols: dict[str, pa.Array]) -> pa.Table:
    fields = [pa.field(n, c.type, metadata=VARIANT_META if pa.types.is_struct(c.type) else None)
              for n, c in cols.items()]
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


ROWS: list[Any] = [
    {"a": i, "b": f"name{i}", "c": {"d": i * 0.5, "e": [i, i + 1]}, "price": Decimal(f"{i}.25"),
     "day": dt.date(2024, 1, 1) + dt.timedelta(days=i), "ts": dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
     + dt.timedelta(seconds=i), "ntz": dt.datetime(2024, 1, 1, 12), "f": F32(1.5), "bin": b"\x00\x01",
     "ok": i % 2 == 0, "mixed": i if i % 3 else "three", "nul": None,
     "objs": [{"k": i, "s": "x" * 70}, {"k": -i}], "long_s": "y" * (64 + i % 3)}
    for i in range(40)
]
ROWS[7]["rare"] = 1  # in fewer than a tenth of the rows
ROWS[8].pop("b")  # a missing field
ROWS[9]["price"] = Decimal("1.5")  # another scale: merged to decimal(18, 2), kept in `value` (exact types only)
ROWS[10]["a"] = 2**40  # a wider integer, still a long
ROWS += [None, {}]
#: rows a schema inferred from ROWS does not fit: a type mismatch, a non-object where an object is shredded
ODD = [{"a": "not a number", "c": 7, "objs": [1, {"k": "s"}]}, [1, 2, 3], "top level string"]


# ----------------------------------------------------------------------------- tests
def test_forced_schema_writes_the_cells_spark_writes() -> None:
    # the same rows, the same shredding schema: deltakernel's shredded columns equal Spark 4.3's, cell for cell
    plain = pq.read_table(FIX / "unshredded.parquet").sort_by("id")
    spark = pq.read_table(FIX / "shredded.parquet").sort_by("id")
    shape = parse_shape(SPARK_SCHEMA)
    for name in ("v", "t"):
        mine = shred(plain.column(name).combine_chunks(), shape)
        assert mine.type == spark.schema.field(name).type
        assert mine.to_pylist() == spark.column(name).to_pylist()
        assert unshred(mine).to_pylist() == plain.column(name).to_pylist()


def test_inferred_schema_follows_sparks_rules() -> None:
    (shape,) = infer_shapes([variants(ROWS)])
    typed = file_type(shape).field("typed_value").type
    got = {f.name: f.type.field("typed_value").type if f.type.get_field_index("typed_value") >= 0 else None
           for f in typed}
    assert "rare" not in got  # in fewer than a tenth of the rows
    assert got["a"] == pa.int64() and got["b"] == pa.string() and got["ok"] == pa.bool_()
    assert got["mixed"] is None and got["nul"] is None  # long and string, only nulls: no typed column
    assert got["price"] == pa.decimal128(18, 2)  # decimals widen to the largest scale, stored as decimal(18, s)
    assert got["day"] == pa.date32() and got["ts"] == pa.timestamp("us", tz="UTC")
    assert got["ntz"] == pa.timestamp("us") and got["f"] == pa.float32() and got["bin"] == pa.binary()
    c = got["c"]
    assert c.field("d").type.field("typed_value").type == pa.float64()
    assert c.field("e").type.field("typed_value").type == pa.list_(
        pa.field("element", pa.struct([pa.field("value", pa.binary()), pa.field("typed_value", pa.int64())]),
                 nullable=False))
    obj = got["objs"].value_type.field("typed_value").type
    assert [f.name for f in obj] == ["k", "s"]
    # the file schema's field budget (300 per file, shared by the columns) and a top level that is not an object
    assert infer_shapes([variants(ROWS)], max_fields=3)[0].kind in ("object", "variant")
    assert infer_shapes([variants([1, 2, 3])])[0].arrow == pa.int64()
    assert infer_shapes([variants([1, "x"])])[0].kind == "variant"


def test_shredding_round_trips_every_value_exactly() -> None:
    (shape,) = infer_shapes([variants(ROWS)])
    col = variants(ROWS + ODD)
    out = shred(col, shape)
    back = unshred(out)
    assert _decoded(back) == _decoded(col)
    assert back.to_pylist() == col.to_pylist()  # key order, smallest widths: the very bytes
    # values that do not fit the typed column stay in `value`, the rest leave it
    a = out.field("typed_value").field("a")
    assert a.field("typed_value")[42].as_py() is None and a.field("value")[42].as_py() is not None
    assert a.field("typed_value")[10].as_py() == 2**40 and a.field("value")[10].as_py() is None
    assert out.field("typed_value").field("price").field("typed_value")[9].as_py() is None
    # objects keep their unshredded fields as a residual object; non-objects are whole in `value`
    assert decode(col[7]["metadata"].as_py(), out.field("value")[7].as_py()) == {"rare": 1}
    assert out.field("value")[0].as_py() is None  # every field of row 0 has its own column
    mixed = out.field("typed_value").field("mixed")  # a field kept without a typed column: its own `value`
    assert mixed.type.get_field_index("typed_value") < 0
    assert decode(col[0]["metadata"].as_py(), mixed.field("value")[0].as_py()) == "three"
    assert decode(col[43]["metadata"].as_py(), out.field("value")[43].as_py()) == [1, 2, 3]
    assert out.field("typed_value")[43].as_py() is None
    assert out.null_count == 1 and out.field("typed_value")[41].is_valid  # `{}` is an object, nothing in it
    assert infer_shapes([col])[0].kind == "variant"  # objects next to an array and a string: not shredded


@pytest.mark.parametrize("ddl", ["long", "array<string>", "x int, y decimal(38, 2)", "v variant, w binary"])
def test_forced_shapes_of_every_kind_round_trip(ddl: str) -> None:
    vals = [1, 300, "s", [1, "a", None], {"x": 5, "y": Decimal("1.25"), "z": True}, {"x": 2**40, "y": 3},
            {"v": [1], "w": b"\xff"}, None, [], {}]
    col = variants(vals)
    out = shred(col, parse_shape(ddl))
    assert _decoded(unshred(out)) == _decoded(col)


def test_wide_objects_and_large_arrays() -> None:
    wide = [{f"k{j:03d}": j for j in range(300)} | {"keep": i} for i in range(4)]
    arr = [list(range(300)), ["x" * 100] * 3]
    col = variants(wide + arr)
    for shape in (parse_shape("keep long, k001 long"), parse_shape("array<long>"), *infer_shapes([col])):
        assert _decoded(unshred(shred(col, shape))) == _decoded(col)


def test_bad_shredding_schemas_are_refused() -> None:
    for bad in ("map<string, long>", "a long,", "struct<a long", "a interval"):
        with pytest.raises(ShapeSyntaxError):
            parse_shape(bad)


def _log(path: str, version: int = 0) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def test_embedded_write_shreds_when_the_table_asks(tmp_path: Path) -> None:
    data = _table({"id": pa.array(range(len(ROWS)), pa.int64()), "v": variants(ROWS)})
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    write_deltalake(on, data, configuration={"delta.enableVariantShredding": "true"})
    write_deltalake(off, data)
    (proto,) = [a["protocol"] for a in _log(on) if "protocol" in a]
    assert "variantShredding" in proto["readerFeatures"] and "variantShredding" in proto["writerFeatures"]
    assert all("variantShredding" not in json.dumps(a) for a in _log(off) if "protocol" in a)
    shredded_file = pq.ParquetFile(next(Path(on).glob("*.parquet")))
    assert shredded_file.schema_arrow.field("v").type.get_field_index("typed_value") >= 0
    # Spark's row-schema footer key: spark.read.parquet of the file sees a VARIANT column (tests/spark)
    row_schema = json.loads(shredded_file.metadata.metadata[b"org.apache.spark.sql.parquet.row.metadata"])
    assert [(f["name"], f["type"]) for f in row_schema["fields"]] == [("id", "long"), ("v", "variant")]
    assert pq.ParquetFile(next(Path(off).glob("*.parquet"))).schema_arrow.field("v").type.num_fields == 2
    got = DeltaTable(on).to_pyarrow_table().sort_by("id")
    assert got.column("v").to_pylist() == data.column("v").to_pylist()
    # stats: the variant's nullCount only (PROTOCOL.md defines per-path min/max; deltakernel writes none)
    stats = json.loads(next(a["add"]["stats"] for a in _log(on) if "add" in a))
    assert stats["nullCount"]["v"] == 1 and "v" not in stats.get("minValues", {})
    # a later append and a DML rewrite shred too; the property off writes unshredded (never downgrading)
    write_deltalake(on, data.slice(0, 3), mode="append")
    DeltaTable(on).delete("id = 2")
    got = DeltaTable(on).to_pyarrow_table().sort_by("id")
    assert len(got) == len(ROWS) + 1  # 3 appended, id 2 deleted twice
    rows = data.to_pylist()
    assert got.to_pylist() == sorted([r for r in rows + rows[:3] if r["id"] != 2], key=lambda r: r["id"])
    for f in Path(on).glob("*.parquet"):
        assert pq.ParquetFile(f).schema_arrow.field("v").type.get_field_index("typed_value") >= 0
    DeltaTable(on).alter.set_table_properties({"delta.enableVariantShredding": "false"})
    write_deltalake(on, data.slice(0, 2), mode="append")
    last = [a["add"]["path"] for a in _log(on, DeltaTable(on).version()) if "add" in a]
    assert pq.ParquetFile(Path(on) / last[0]).schema_arrow.field("v").type.num_fields == 2
    assert "variantShredding" in DeltaTable(on).protocol().reader_features


def test_forced_schema_and_its_refusal(tmp_path: Path) -> None:
    plain = pq.read_table(FIX / "unshredded.parquet").select(["id", "v", "t"])
    data = pa.Table.from_arrays(plain.columns, schema=pa.schema(
        [plain.schema.field(0)] + [pa.field(n, plain.schema.field(n).type, metadata=VARIANT_META) for n in ("v", "t")]))
    path = str(tmp_path / "t")
    write_deltalake(path, data, configuration={"delta.enableVariantShredding": "true"},
                    variant_shredding_schema=SPARK_SCHEMA)
    mine = pq.read_table(next(Path(path).glob("*.parquet"))).sort_by("id")
    spark = pq.read_table(FIX / "shredded.parquet").sort_by("id")
    assert mine.column("v").to_pylist() == spark.column("v").to_pylist()
    assert DeltaTable(path).to_pyarrow_table().sort_by("id").column("t").to_pylist() == \
        plain.sort_by("id").column("t").to_pylist()
    with pytest.raises(DeltaError, match="DELTA_SHREDDING_TABLE_PROPERTY_DISABLED"):
        write_deltalake(str(tmp_path / "u"), data, variant_shredding_schema=SPARK_SCHEMA)
    with pytest.raises(DeltaError, match="enableVariantShreding"):
        write_deltalake(str(tmp_path / "w"), data, configuration={"delta.enableVariantShreding": "true"})


def test_property_keeps_a_preview_feature(tmp_path: Path) -> None:
    path = str(tmp_path / "p")
    data = _table({"id": pa.array([1, 2], pa.int64()), "v": variants([{"a": 1}, {"a": 2}])})
    write_deltalake(path, data, configuration={"delta.feature.variantShredding-preview": "supported"})
    DeltaTable(path).alter.set_table_properties({"delta.enableVariantShredding": "true"})
    feats = DeltaTable(path).protocol().writer_features
    assert "variantShredding-preview" in feats and "variantShredding" not in feats
    write_deltalake(path, data, mode="append")
    assert len(DeltaTable(path).to_pyarrow_table()) == 4


def test_other_readers_refuse_a_table_deltakernel_shredded(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "t")
    write_deltalake(path, _table({"id": pa.array([1], pa.int64()), "v": variants([{"a": 1}])}),
                    configuration={"delta.enableVariantShredding": "true"})
    with pytest.raises(Exception, match="variantShredding"):
        deltalake.DeltaTable(path).to_pyarrow_table()
    pytest.importorskip("duckdb_extension_delta")
    import helpers

    with pytest.raises(Exception, match="variantShredding"):
        helpers.duckdb_connection().execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchall()


def test_variants_in_structs_shred_under_column_mapping(tmp_path: Path) -> None:
    # Spark shreds variants at the top level and inside structs (not in arrays or maps); a null struct row too
    v = variants(ROWS)
    n = len(ROWS)
    s = pa.StructArray.from_arrays([pa.array(range(n), pa.int32()), v],
                                   fields=[pa.field("n", pa.int32()), pa.field("sv", v.type, metadata=VARIANT_META)],
                                   mask=pa.array([i == 3 for i in range(n)]))
    arr = pa.ListArray.from_arrays(pa.array(range(0, n + 1), pa.int32()), v,
                                   type=pa.list_(pa.field("element", v.type, metadata=VARIANT_META)))
    data = pa.Table.from_arrays([pa.array(range(n), pa.int64()), s, arr], schema=pa.schema(
        [pa.field("id", pa.int64()), pa.field("s", s.type), pa.field("arr", arr.type)]))
    path = str(tmp_path / "t")
    write_deltalake(path, data, configuration={"delta.enableVariantShredding": "true",
                                               "delta.columnMapping.mode": "name"})
    file_schema = pq.ParquetFile(next(Path(path).rglob("*.parquet"))).schema_arrow
    struct_type, list_type = file_schema.field(1).type, file_schema.field(2).type
    assert struct_type.field(1).type.get_field_index("typed_value") >= 0
    assert list_type.value_type.num_fields == 2  # array elements stay unshredded
    got = DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert got.column("s").to_pylist() == data.column("s").to_pylist()
    assert got.column("arr").to_pylist() == data.column("arr").to_pylist()
