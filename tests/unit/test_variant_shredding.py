"""Shredded variants (Delta `variantShredding`): Spark-written shredded Parquet reads back as the unshredded twin.

The fixtures in `variant_fixtures/` are written by real Spark 4.3 (scripts/variant_fixtures.py): the same rows as
unshredded and as shredded Parquet, and Spark's `to_json` of every value. The Delta logs around them are built
here, so the same files serve the `variantShredding` and `variantShredding-preview` feature names.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable
from deltakernel.errors import DeltaError
from deltakernel.kernel.variant import MalformedVariantError, decode, unshred
from deltakernel.kernel.variant.binary import encode_object
from deltakernel.kernel.variant.render import java_float_str, to_json, to_json_column

FIX = Path(__file__).parent / "variant_fixtures"
SPARK_JSON = [json.loads(line) for line in (FIX / "spark_to_json.jsonl").read_text().splitlines()]
V = "variant"


def _field(name: str, typ: Any) -> dict[str, Any]:
    return {"name": name, "type": typ, "nullable": True, "metadata": {}}


def _table(tmp: Path, data: Path | pa.Table, fields: list[dict[str, Any]], features: list[str]) -> str:
    log = tmp / "_delta_log"
    log.mkdir(parents=True)
    if isinstance(data, Path):
        shutil.copy(data, tmp / "part-0.parquet")
    else:
        pq.write_table(data, tmp / "part-0.parquet")
    actions = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                      "writerFeatures": features}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps({"type": "struct", "fields": fields}),
                      "partitionColumns": [], "configuration": {}}},
        {"add": {"path": "part-0.parquet", "partitionValues": {}, "size": (tmp / "part-0.parquet").stat().st_size,
                 "modificationTime": 0, "dataChange": True}},
    ]
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(tmp)


def _read(path: str) -> pa.Table:
    return DeltaTable(path).to_pyarrow_table().sort_by("id")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    fields = [_field("id", "integer"), _field("v", V),
              _field("s", {"type": "struct", "fields": [_field("n", "integer"), _field("sv", V)]}),
              _field("arr", {"type": "array", "elementType": V, "containsNull": True}),
              _field("m", {"type": "map", "keyType": "string", "valueType": V, "valueContainsNull": True}),
              _field("t", V)]
    return _read(_table(tmp_path_factory.mktemp("unshredded"), FIX / "unshredded.parquet", fields, ["variantType"]))


@pytest.mark.parametrize("feature", ["variantShredding", "variantShredding-preview"])
def test_shredded_table_reads_the_same_variant_bytes_as_its_unshredded_twin(
        tmp_path: Path, twin: pa.Table, feature: str) -> None:
    path = _table(tmp_path, FIX / "shredded.parquet", [_field("id", "integer"), _field("v", V), _field("t", V)],
                  ["variantType", feature])
    got = _read(path)
    for col in ("v", "t"):
        # the fixture's JSON keys are in key order, so even the bytes match what Spark wrote before shredding
        assert got.column(col).to_pylist() == twin.column(col).to_pylist()
    assert got.column("v").null_count == 1


def test_to_json_matches_spark_for_every_corpus_value(twin: pa.Table) -> None:
    def render(x: dict[str, bytes] | None) -> str | None:
        return None if x is None else to_json(x["metadata"], x["value"])

    rows = twin.to_pylist()
    assert [r["id"] for r in rows] == [e["id"] for e in SPARK_JSON]
    for r, e in zip(rows, SPARK_JSON):
        assert render(r["v"]) == e["v"]
        assert render(r["t"]) == e["t"]
        assert render(r["s"]["sv"]) == e["sv"]
        assert (None if r["arr"] is None else "[" + ",".join(str(render(x)) for x in r["arr"]) + "]") == e["arr"]
        assert "{" + ",".join(f'"{k}":{render(x) or "null"}' for k, x in r["m"]) + "}" == e["m"]
    assert to_json_column(twin.column("t").combine_chunks()).to_pylist() == [e["t"] for e in SPARK_JSON]


def test_shredded_variants_nested_in_struct_array_and_map(tmp_path: Path, twin: pa.Table) -> None:
    shredded = pq.read_table(FIX / "shredded.parquet").sort_by("id")
    v = shredded.column("v").combine_chunks()
    n = len(v)
    data = pa.table({
        "id": shredded.column("id"),
        "s": pa.StructArray.from_arrays([pa.array(range(n), pa.int32()), v], names=["n", "sv"]),
        "arr": pa.ListArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2), pa.int32()),
                                        pa.concat_arrays([v.take(np.repeat(np.arange(n), 2))])),
        "m": pa.MapArray.from_arrays(pa.array(np.arange(n + 1), pa.int32()), pa.array(["k"] * n), v),
    })
    fields = [_field("id", "integer"), _field("s", {"type": "struct", "fields": [_field("n", "integer"),
                                                                                  _field("sv", V)]}),
              _field("arr", {"type": "array", "elementType": V, "containsNull": True}),
              _field("m", {"type": "map", "keyType": "string", "valueType": V, "valueContainsNull": True})]
    got = _read(_table(tmp_path, data, fields, ["variantType", "variantShredding"])).to_pylist()
    expected = twin.column("v").to_pylist()
    for row, exp in zip(got, expected):
        assert row["s"]["sv"] == exp
        assert row["arr"] == [exp, exp]
        assert row["m"] == [("k", exp)]


def _meta(*keys: str) -> bytes:
    body = b"".join(k.encode() for k in keys)
    offs, o = [0], 0
    for k in keys:
        o += len(k.encode())
        offs.append(o)
    size = 1 if o <= 0xFF and len(keys) <= 0xFF else 2
    return bytes([0x01 | ((size - 1) << 6)]) + b"".join(x.to_bytes(size, "little") for x in [len(keys), *offs]) + body


def _shredded(typed: pa.Array, metadata: bytes = b"\x01\x00\x00") -> pa.StructArray:
    n = len(typed)
    return pa.StructArray.from_arrays(
        [pa.array([metadata] * n, pa.binary()), pa.nulls(n, pa.binary()), typed],
        names=["metadata", "value", "typed_value"])


@pytest.mark.parametrize(("typed", "expected"), [
    (pa.array([0, 127, 128, -129, 2**15, -2**31, 2**31, -2**63], pa.int64()),
     [0, 127, 128, -129, 2**15, -2**31, 2**31, -2**63]),
    (pa.array([1, -2], pa.int8()), [1, -2]),
    (pa.array([1.5, -0.0], pa.float32()), [1.5, -0.0]),
    (pa.array([True, False]), [True, False]),
    (pa.array([Decimal("1.50"), Decimal("-12345678901.23"), Decimal("123456789012345678901.00")],
              pa.decimal128(38, 2)), [Decimal("1.50"), Decimal("-12345678901.23"), Decimal("123456789012345678901.00")]),
    (pa.array([dt.date(2024, 2, 29), dt.date(1900, 1, 1)]), [dt.date(2024, 2, 29), dt.date(1900, 1, 1)]),
    (pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 4)], pa.timestamp("us", tz="UTC")),
     [dt.datetime(2024, 1, 1, 1, 2, 3, 4, tzinfo=dt.timezone.utc)]),
    (pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 4)], pa.timestamp("us")), [dt.datetime(2024, 1, 1, 1, 2, 3, 4)]),
    (pa.array(["", "x" * 63, "y" * 64, "é"]), ["", "x" * 63, "y" * 64, "é"]),
    (pa.array([b"\x00\xff", b""]), [b"\x00\xff", b""]),
    (pa.array([uuid.UUID(int=7).bytes], pa.binary(16)), [uuid.UUID(int=7)]),
])
def test_typed_scalars_unshred_to_the_same_values(typed: pa.Array, expected: list[Any]) -> None:
    out = unshred(_shredded(typed)).to_pylist()
    assert [decode(r["metadata"], r["value"]) for r in out] == expected


def test_integers_and_decimals_take_the_smallest_encoding() -> None:
    out = unshred(_shredded(pa.array([1, 300, 70000, 5_000_000_000], pa.int64()))).field("value").to_pylist()
    assert [v[0] >> 2 for v in out] == [3, 4, 5, 6]  # int8, int16, int32, int64
    dec = unshred(_shredded(pa.array([Decimal("1.5"), Decimal("12345678901.5")], pa.decimal128(30, 1))))
    assert [v[0] >> 2 for v in dec.field("value").to_pylist()] == [8, 9]  # decimal4, decimal8


def test_wide_object_with_large_ids_and_offsets() -> None:
    keys = [f"k{i:03d}" for i in range(300)]
    meta = _meta(*keys)
    fields = [pa.StructArray.from_arrays([pa.nulls(2, pa.binary()), pa.array([i, None] if i % 2 else [i, i])],
                                         names=["value", "typed_value"]) for i in range(300)]
    typed = pa.StructArray.from_arrays(fields, names=keys)
    out = unshred(_shredded(typed, meta)).to_pylist()
    assert decode(out[0]["metadata"], out[0]["value"]) == {k: i for i, k in enumerate(keys)}
    assert decode(out[1]["metadata"], out[1]["value"]) == {k: i for i, k in enumerate(keys) if i % 2 == 0}
    # the same bytes as encoding the object one value at a time
    ref = encode_object([(k, i, bytes([3 << 2, i & 0xFF]) if i < 128 else bytes([4 << 2]) + i.to_bytes(2, "little"))
                         for i, k in enumerate(keys)])
    assert out[0]["value"] == ref


def test_shredded_field_missing_from_metadata_is_refused() -> None:
    f = pa.StructArray.from_arrays([pa.nulls(1, pa.binary()), pa.array([1])], names=["value", "typed_value"])
    bad = _shredded(pa.StructArray.from_arrays([f], names=["a"]), _meta("b"))
    with pytest.raises(MalformedVariantError) as e:
        unshred(bad)
    assert isinstance(e.value, DeltaError)


@pytest.mark.parametrize(("x", "single", "text"), [
    (1e300, False, "1.0E300"), (1e7, False, "1.0E7"), (9999999.0, False, "9999999.0"), (0.001, False, "0.001"),
    (1e-4, False, "1.0E-4"), (-2.5e-5, False, "-2.5E-5"), (100.0, False, "100.0"), (0.1, True, "0.1"),
    (1.5, True, "1.5"), (-0.0, False, "-0.0"),
])
def test_floats_print_like_java(x: float, single: bool, text: str) -> None:
    assert java_float_str(x, single) == text


def _files_table(tmp: Path, files: list[tuple[pa.Table, dict[str, Any]]], conf: dict[str, str] | None = None) -> str:
    (tmp / "_delta_log").mkdir(parents=True)
    features = ["variantType", "variantShredding"]
    fields = [_field("id", "integer"), _field("v", V)]
    actions: list[dict[str, Any]] = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                      "writerFeatures": features}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                      "schemaString": json.dumps({"type": "struct", "fields": fields}),
                      "configuration": conf or {}}}]
    for i, (data, stats) in enumerate(files):
        pq.write_table(data, tmp / f"f{i}.parquet")
        actions.append({"add": {"path": f"f{i}.parquet", "partitionValues": {}, "modificationTime": 0,
                                "dataChange": True, "size": (tmp / f"f{i}.parquet").stat().st_size,
                                "stats": json.dumps(stats)}})
    (tmp / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return str(tmp)


def test_variant_null_count_skips_files_and_variant_min_max_are_ignored(tmp_path: Path) -> None:
    shredded = pq.read_table(FIX / "shredded.parquet").sort_by("id")
    ids, v = shredded.column("id").combine_chunks(), shredded.column("v").combine_chunks()
    nulls = [i for i in range(len(v)) if not v[i].is_valid]
    full = [i for i in range(len(v)) if v[i].is_valid]
    # min/max of a variant column are z85 variants (PROTOCOL.md example); deltakernel does not use them
    z85 = {"v": {"metadata": "0rSr50S#>uv/", "value": "0S&u501fz*ze0(tB98CpzF61K0SSog3i"}}
    path = _files_table(tmp_path, [
        (pa.table({"id": ids.take(full), "v": v.take(full)}),
         {"numRecords": len(full), "minValues": {"id": 0, **z85}, "maxValues": {"id": 13, **z85},
          "nullCount": {"id": 0, "v": 0}}),
        (pa.table({"id": ids.take(nulls), "v": v.take(nulls)}),
         {"numRecords": len(nulls), "minValues": {"id": 10}, "maxValues": {"id": 10},
          "nullCount": {"id": 0, "v": len(nulls)}}),
    ])
    (tmp_path / "f1.parquet").unlink()  # only nulls: `v IS NOT NULL` must never open it
    got = DeltaTable(path).to_pyarrow_table(filters=pc.field("v").is_valid())
    assert sorted(got.column("id").to_pylist()) == ids.take(full).to_pylist()
    pq.write_table(pa.table({"id": ids.take(nulls), "v": v.take(nulls)}), tmp_path / "f1.parquet")
    (tmp_path / "f0.parquet").unlink()  # no nulls: `v IS NULL` must never open it
    assert DeltaTable(path).to_pyarrow_table(filters=pc.field("v").is_null()).column("id").to_pylist() == [10]
    # a predicate on another column still uses its bounds next to the variant's stats
    pq.write_table(pa.table({"id": ids.take(full), "v": v.take(full)}), tmp_path / "f0.parquet")
    (tmp_path / "f1.parquet").unlink()
    assert DeltaTable(path).to_pyarrow_table(filters=[("id", "<", 10)]).num_rows == 10


def test_checkpoint_keeps_variant_stats_and_shredded_files(tmp_path: Path, twin: pa.Table) -> None:
    shredded = pq.read_table(FIX / "shredded.parquet").sort_by("id").select(["id", "v"])
    valid = shredded.column("v").is_valid()
    with_nulls, without = shredded.filter(pc.invert(valid)), shredded.filter(valid)
    path = _files_table(tmp_path, [
        (without, {"numRecords": without.num_rows, "nullCount": {"id": 0, "v": 0}}),
        (with_nulls, {"numRecords": with_nulls.num_rows, "nullCount": {"id": 0, "v": with_nulls.num_rows}}),
    ], {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"})
    DeltaTable(path).create_checkpoint()
    cp = pq.read_table(tmp_path / "_delta_log" / f"{0:020d}.checkpoint.parquet").column("add").combine_chunks()
    parsed = [a["stats_parsed"] for a in cp.to_pylist() if a is not None]
    assert sorted(p["nullCount"]["v"] for p in parsed) == [0, with_nulls.num_rows]
    for f in tmp_path.glob("_delta_log/*.json"):
        f.unlink()  # state reconstruction from the checkpoint alone
    dt_ = DeltaTable(path)
    assert dt_.to_pyarrow_table().sort_by("id").column("v").to_pylist() == twin.column("v").to_pylist()
    (tmp_path / "f0.parquet").unlink()  # no nulls: skipped by `v IS NULL` using stats_parsed
    assert dt_.to_pyarrow_table(filters=pc.field("v").is_null()).num_rows == with_nulls.num_rows


@pytest.mark.parametrize("path", [("a",), ("b",), ("c", "d"), ("c", "e"), ("extra",), ("extra", "p"), ("zz",)])
def test_one_path_reads_the_same_from_shredded_and_unshredded_columns(path: tuple[str, ...]) -> None:
    from deltakernel.kernel.variant.paths import extract_path, path_columns

    shredded = pq.read_table(FIX / "shredded.parquet").sort_by("id").column("v").combine_chunks()
    plain = pq.read_table(FIX / "unshredded.parquet").sort_by("id").column("v").combine_chunks()

    def values(arr: pa.Array) -> list[Any]:
        return [None if r is None else decode(r["metadata"], r["value"]) for r in extract_path(arr, path).to_pylist()]

    expected = []
    for r in plain.to_pylist():
        cur = None if r is None else decode(r["metadata"], r["value"])
        for key in path:
            cur = cur.get(key) if isinstance(cur, dict) else None
        expected.append(cur)
    assert values(plain) == values(shredded)
    assert [x for x in values(plain)] == [x for x in expected]
    cols = path_columns("v", shredded.type, path)
    assert cols[0] == "v.metadata" and (path != ("c", "d") or cols[-1] == "v.typed_value.c.typed_value.d")


def test_other_readers_refuse_shredded_tables(tmp_path: Path) -> None:
    # deltalake 1.6.6 and DuckDB's delta extension (bundled 1.5.5) do not support `variantShredding`: they refuse
    # the table (rather than misreading it); deltakernel writes unshredded files, which they read
    deltalake = pytest.importorskip("deltalake")
    path = _table(tmp_path, FIX / "shredded.parquet", [_field("id", "integer"), _field("v", V), _field("t", V)],
                  ["variantType", "variantShredding"])
    with pytest.raises(Exception, match="variantShredding"):
        deltalake.DeltaTable(path).to_pyarrow_table()
    pytest.importorskip("duckdb_extension_delta")
    import helpers

    with pytest.raises(Exception, match="variantShredding"):
        helpers.duckdb_connection().execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchall()


def test_datafusion_reads_shredded_variants_as_the_struct(tmp_path: Path, twin: pa.Table) -> None:
    datafusion = pytest.importorskip("datafusion")
    from deltakernel import datafusion as dkdf

    path = _table(tmp_path, FIX / "shredded.parquet", [_field("id", "integer"), _field("v", V), _field("t", V)],
                  ["variantType", "variantShredding"])
    ctx = datafusion.SessionContext()
    dkdf.register(ctx, "t", path)
    got = ctx.sql("SELECT id, v FROM t ORDER BY id").to_arrow_table()
    assert got.column("v").to_pylist() == twin.column("v").to_pylist()


def test_pyarrow_dataset_refuses_shredded_tables(tmp_path: Path) -> None:
    # a plain Parquet dataset would hand out the raw metadata / value / typed_value structs
    from deltakernel.errors import UnsupportedFeatureError

    path = _table(tmp_path, FIX / "shredded.parquet", [_field("id", "integer"), _field("v", V), _field("t", V)],
                  ["variantType", "variantShredding-preview"])
    with pytest.raises(UnsupportedFeatureError, match="unshred") as e:
        DeltaTable(path).to_pyarrow_dataset()
    assert e.value.feature == "variantShredding"


def test_written_variants_have_required_children_and_round_trip_with_their_tag(tmp_path: Path, twin: pa.Table) -> None:
    # the twin holds null variant rows at the top level, in a struct, as array elements and map values
    from deltakernel import write_deltalake

    assert twin.schema.field("v").metadata[b"ARROW:extension:name"] == b"arrow.parquet.variant"
    first, second = str(tmp_path / "first"), str(tmp_path / "second")
    write_deltalake(first, twin)
    back = _read(first)
    assert back.to_pylist() == twin.to_pylist()
    write_deltalake(second, back)  # to_pyarrow_table keeps the variant tag: the copy's columns are variants too
    assert DeltaTable(second).schema() == DeltaTable(first).schema()
    assert str(DeltaTable(second).schema().field("v").type) == "VariantType()"
    # as delta-spark writes them: an optional group with required metadata / value (any depth)
    parquet = pq.ParquetFile(next((tmp_path / "first").glob("*.parquet"))).schema
    text = str(parquet)
    assert text.count("required binary field_id=-1 metadata") == 5 and "optional binary field_id=-1 metadata" not in text
    deltalake = pytest.importorskip("deltalake")
    dl = deltalake.DeltaTable(first).to_pyarrow_table().sort_by("id")
    assert dl.column("v").to_pylist() == twin.column("v").to_pylist()
    assert dl.column("v").null_count == twin.column("v").null_count == 1
