"""The geospatial feature on the embedded engine: geometry/geography types round-trip, WKB written with
Parquet's geospatial logical types, bounding-box statistics, and `deltakernel.geo.intersects` skipping that
is sound across the antimeridian (checked by deleting the files it must skip, and against a brute-force
answer computed here from the generated coordinates)."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltakernel import DeltaTable, write_deltalake
from deltakernel.errors import InvalidFilterError
from deltakernel.geo import intersects
from deltakernel.kernel.expressions.predicate import And, Column, Comparison, Literal
from deltakernel.kernel.geo.wkb import UnsupportedWkbError, bounds
from deltakernel.kernel.schema import from_arrow_schema, to_arrow_schema
from deltakernel.kernel.schema.types import parse_schema_string, schema_to_json
from deltakernel.table import read

GEOM = {b"ARROW:extension:name": b"geoarrow.wkb", b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84"}'}
GEOG = {b"ARROW:extension:name": b"geoarrow.wkb",
        b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84","edges":"spherical"}'}


def pt(x: float, y: float, order: str = "<") -> bytes:
    return struct.pack(order + "BIdd", 1 if order == "<" else 0, 1, x, y)


def line(*pts: tuple[float, float]) -> bytes:
    return struct.pack("<BII", 1, 2, len(pts)) + b"".join(struct.pack("<dd", *p) for p in pts)


def geo_table(ids: list[int], geoms: list[bytes | None], geogs: list[bytes | None] | None = None) -> pa.Table:
    fields = [pa.field("id", pa.int64()), pa.field("geom", pa.binary(), metadata=GEOM)]
    cols = [pa.array(ids, pa.int64()), pa.array(geoms, pa.binary())]
    if geogs is not None:
        fields.append(pa.field("geog", pa.binary(), metadata=GEOG))
        cols.append(pa.array(geogs, pa.binary()))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def adds(path: str) -> list[dict]:
    out = []
    for f in sorted(Path(path, "_delta_log").glob("*.json")):
        out += [json.loads(line)["add"] for line in f.read_text().splitlines() if '"add"' in line]
    return out


def test_schema_types_round_trip_exactly() -> None:
    text = ('{"type":"struct","fields":[{"name":"a","type":"geometry(EPSG:3857)","nullable":true,"metadata":{}},'
            '{"name":"b","type":"geography(OGC:CRS84, karney)","nullable":false,"metadata":{}},'
            '{"name":"s","type":{"type":"struct","fields":[{"name":"g","type":"geometry(srid:4326)",'
            '"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}')
    schema = parse_schema_string(text)
    assert schema_to_json(schema) == text
    arrow = to_arrow_schema(schema)
    assert arrow.field("a").type == pa.binary()
    assert json.loads(arrow.field("b").metadata[b"ARROW:extension:metadata"]) == {"crs": "OGC:CRS84",
                                                                                   "edges": "karney"}
    assert schema_to_json(from_arrow_schema(arrow)) == text


def independent_rows(path: Path) -> tuple[list[str], list[dict]]:
    """A table's columns and rows derived without deltakernel: the log's JSON commits replayed here (adds minus
    removes, no checkpoints: the tables this is used on have none) and each live file read with pyarrow."""
    live: dict[str, dict] = {}
    schema_string = None
    for commit in sorted((path / "_delta_log").glob("*.json")):
        for line_ in commit.read_text().splitlines():
            action = json.loads(line_)
            if "metaData" in action:
                schema_string = action["metaData"]["schemaString"]
            elif "add" in action:
                live[action["add"]["path"]] = action["add"]
            elif "remove" in action:
                live.pop(action["remove"]["path"], None)
    assert not list((path / "_delta_log").glob("*.checkpoint*.parquet"))
    names = [f["name"] for f in json.loads(schema_string)["fields"]]
    rows: list[dict] = []
    for add in live.values():
        rows += pq.read_table(path / add["path"], columns=names).to_pylist()
    return names, rows


def test_conformance_table_with_geo_reads(conformance_dir: Path) -> None:
    """`kernel-rs/data/table-with-geo` has no expected result in the corpus: the rows are derived independently
    (`independent_rows`). Its log has a protocol and a metaData action and no add (upstream ships no data files
    either), so the right answer is its schema with zero rows."""
    path = conformance_dir / "tables/kernel-rs/data/table-with-geo"
    names, rows = independent_rows(path)
    assert names == ["geom", "geog"] and rows == []
    t = read(str(path))
    assert t.schema.names == names and t.to_pylist() == rows
    assert t.schema.types == [pa.binary(), pa.binary()]
    assert t.schema.field("geog").metadata[b"ARROW:extension:name"] == b"geoarrow.wkb"
    log = json.loads((path / "_delta_log/00000000000000000000.json").read_text().splitlines()[1])
    assert DeltaTable(str(path)).schema().to_json() == log["metaData"]["schemaString"]


def test_independent_rows_match_a_written_table(tmp_path: Path) -> None:
    """The derivation `test_conformance_table_with_geo_reads` trusts, on a table with data: two commits, one
    file removed by an overwrite of part of it, geometry and geography values."""
    path = tmp_path / "t"
    write_deltalake(str(path), geo_table([1, 2], [pt(1, 2), None], [pt(3, 4), pt(5, 6)]))
    write_deltalake(str(path), geo_table([3], [line((0, 0), (1, 1))], [None]), mode="append")
    write_deltalake(str(path), geo_table([2], [pt(9, 9)], [pt(8, 8)]), mode="overwrite", predicate="id <= 2")
    names, rows = independent_rows(path)
    assert sorted(r["id"] for r in rows) == [2, 3]
    got = DeltaTable(str(path)).to_pyarrow_table()
    assert got.schema.names == names
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(rows, key=lambda r: r["id"])


def test_write_uses_parquet_geospatial_types_and_bbox_stats(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, geo_table([1, 2, 3], [pt(1, 2), line((-3, 5), (4, -6)), None], [pt(1, 1), None, None]))
    log = [json.loads(x) for x in next(Path(path, "_delta_log").glob("*.json")).read_text().splitlines()]
    proto = next(a["protocol"] for a in log if "protocol" in a)
    assert "geospatial" in proto["readerFeatures"] and "geospatial" in proto["writerFeatures"]
    schema = json.loads(next(a["metaData"] for a in log if "metaData" in a)["schemaString"])
    assert [f["type"] for f in schema["fields"]] == ["long", "geometry(OGC:CRS84)", "geography(OGC:CRS84, spherical)"]
    (add,) = adds(path)
    stats = json.loads(add["stats"])
    assert stats["minValues"]["geom"] == "POINT(-3 -6)" and stats["maxValues"]["geom"] == "POINT(4 5)"
    assert "geog" not in stats["minValues"] and stats["nullCount"] == {"id": 0, "geom": 1, "geog": 2}
    parquet_schema = str(pq.ParquetFile(Path(path, add["path"])).metadata.schema)
    assert "geom (Geometry(crs=))" in parquet_schema  # OGC:CRS84 is Parquet's default CRS
    assert "geog (Geography(crs=, algorithm=spherical))" in parquet_schema
    back = DeltaTable(path).to_pyarrow_table().sort_by("id")
    assert back.column("geom").to_pylist() == [pt(1, 2), line((-3, 5), (4, -6)), None]
    assert back.schema.field("geom").metadata[b"ARROW:extension:name"] == b"geoarrow.wkb"


def test_skipping_deletes_ruled_out_files_and_wraps_the_antimeridian(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    files = {"europe": [pt(2, 48), pt(13, 52)], "east": [pt(175, -5), pt(179, 5)], "west": [pt(-179, 0)],
             "america": [line((-120, 30), (-70, 45))]}
    for i, geoms in enumerate(files.values()):
        write_deltalake(path, geo_table([i] * len(geoms), geoms), mode="append")
    written = dict(zip(files, (Path(path, a["path"]) for a in adds(path))))
    dt = DeltaTable(path)
    # a box across the antimeridian (xmin > xmax): only the files at x = 175..179 and x = -179 can match
    box = (170.0, -10.0, -170.0, 10.0)
    for name in ("europe", "america"):
        written[name].unlink()  # a file that was not skipped would now fail the read
    got = dt.to_pyarrow_table(filters=intersects("geom", box))
    assert sorted(got.column("id").to_pylist()) == [1, 1, 2]
    # combined with another predicate, and a plain box
    assert DeltaTable(path).to_pyarrow_table(
        filters=And(intersects("geom", (-180, -1, -178, 1)), Comparison(">=", Column("id"), Literal(0)))
    ).column("id").to_pylist() == [2]
    with pytest.raises(Exception):  # the deleted files really are needed when nothing rules them out
        dt.to_pyarrow_table(filters=intersects("geom", (0, 40, 20, 60)))


def test_skipping_matches_brute_force(tmp_path: Path) -> None:
    rnd = random.Random(7)
    path = str(tmp_path / "t")
    boxes: dict[int, tuple[float, float, float, float]] = {}
    next_id = 0
    for _ in range(6):
        ids, geoms = [], []
        cx, cy = rnd.uniform(-180, 180), rnd.uniform(-80, 80)
        for _ in range(5):
            a = (max(-180.0, min(180.0, cx + rnd.uniform(-8, 8))), cy + rnd.uniform(-5, 5))
            b = (max(-180.0, min(180.0, cx + rnd.uniform(-8, 8))), cy + rnd.uniform(-5, 5))
            ids.append(next_id)
            geoms.append(line(a, b))
            boxes[next_id] = (min(a[0], b[0]), min(a[1], b[1]), max(a[0], b[0]), max(a[1], b[1]))
            next_id += 1
        write_deltalake(path, geo_table(ids, geoms), mode="append")
    dt = DeltaTable(path)

    def meets(g: tuple[float, float, float, float], q: tuple[float, float, float, float]) -> bool:
        xs = [(q[0], 1e300), (-1e300, q[2])] if q[0] > q[2] else [(q[0], q[2])]
        return g[1] <= q[3] and q[1] <= g[3] and any(g[0] <= hi and lo <= g[2] for lo, hi in xs)

    for _ in range(40):
        x0, x1 = rnd.uniform(-180, 180), rnd.uniform(-180, 180)
        y0 = rnd.uniform(-90, 80)
        q = (x0, y0, x1, y0 + rnd.uniform(0, 40))
        got = sorted(dt.to_pyarrow_table(filters=intersects("geom", q)).column("id").to_pylist())
        assert got == sorted(i for i, g in boxes.items() if meets(g, q)), q


def test_geography_filter_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, geo_table([1], [pt(0, 0)], [pt(0, 0)]))
    with pytest.raises(InvalidFilterError, match="geometry column"):
        DeltaTable(path).to_pyarrow_table(filters=intersects("geog", (-1, -1, 1, 1)))
    with pytest.raises(InvalidFilterError):
        intersects("geom", (0, 5, 1, 4))  # ymin > ymax


def test_wkb_bounds_shapes() -> None:
    multipolygon_z = (struct.pack("<BII", 1, 1006, 1) + struct.pack("<BII", 1, 1003, 1) + struct.pack("<I", 4)
                      + b"".join(struct.pack("<ddd", x, y, 9.0) for x, y in [(0, 0), (4, 0), (4, 3), (0, 0)]))
    ewkb_srid = struct.pack("<BIIdd", 1, 0x20000001, 4326, -7.5, 8.5)
    empty = pt(float("nan"), float("nan"))
    xmin, ymin, xmax, ymax = bounds(pa.array([multipolygon_z, ewkb_srid, pt(3, 4, ">"), empty, None]))
    assert list(xmin[:3]) == [0, -7.5, 3] and list(ymax[:3]) == [3, 8.5, 4] and list(xmax[:3]) == [4, -7.5, 3]
    assert all(v != v for v in (xmin[3], xmin[4]))
    with pytest.raises(UnsupportedWkbError):
        bounds(pa.array([struct.pack("<BI", 1, 8) + b"\0" * 8]))  # CircularString: not bounded, never guessed


def test_unsupported_wkb_gets_no_bounds(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    curve = struct.pack("<BII", 1, 8, 1) + struct.pack("<dd", 500, 500)
    # footer statistics come from pyarrow; a value it cannot bound must not narrow the file's box
    write_deltalake(path, geo_table([1, 2], [pt(0, 0), curve]))
    stats = json.loads(adds(path)[0]["stats"])
    box = (stats.get("minValues", {}).get("geom"), stats.get("maxValues", {}).get("geom"))
    assert box == (None, None) or box[1] != "POINT(0 0)"


def test_checkpoint_keeps_geometry_skipping(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    conf = {"delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "true"}
    write_deltalake(path, geo_table([1], [pt(10, 10)]), configuration=conf)
    write_deltalake(path, geo_table([2], [pt(-10, -10)]), mode="append")
    DeltaTable(path).create_checkpoint()
    for f in Path(path, "_delta_log").glob("*.json"):
        f.unlink()  # only the checkpoint describes the files now
    got = DeltaTable(path).to_pyarrow_table(filters=intersects("geom", (5, 5, 15, 15)))
    assert got.column("id").to_pylist() == [1]
    from deltakernel.kernel.scan.scan import Scan

    scan = Scan(DeltaTable(path)._snapshot, predicate=intersects("geom", (5, 5, 15, 15)))
    scan.plan()
    assert scan.metrics.files_skipped == 1
