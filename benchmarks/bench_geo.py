"""Geospatial costs as ratios (issue 34): WKB bounds, geometry writes, bounding-box skipping.

- bounds: `kernel/geo/wkb.bounds` on N 2D points (one numpy gather) vs the per-value walk other shapes take;
- write: N rows with a geometry column (Parquet GEOMETRY logical type + footer bbox stats) vs the same bytes
  as a plain binary column;
- skip: a box meeting 1 of 16 files vs reading all 16 (the files the stats rule out are never opened).
Contenders alternate round by round (background load hits both alike); medians and their ratio are printed
with the load average. Run: `python benchmarks/bench_geo.py [--rows N] [--rounds R]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import struct
import tempfile
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from deltakernel import DeltaTable, write_deltalake
from deltakernel.geo import intersects
from deltakernel.kernel.geo import wkb

GEOM = {b"ARROW:extension:name": b"geoarrow.wkb", b"ARROW:extension:metadata": b'{"crs":"OGC:CRS84"}'}


def points(n: int, x0: float = -180, x1: float = 180) -> pa.Array:
    rng = np.random.default_rng(1)
    xs, ys = rng.uniform(x0, x1, n), rng.uniform(-90, 90, n)
    return pa.array([struct.pack("<BIdd", 1, 1, x, y) for x, y in zip(xs, ys)], pa.binary())


def walk_all(values: pa.Array) -> None:
    for v in values.to_pylist():
        wkb._walk(v, 0, [np.inf, np.inf, -np.inf, -np.inf])


def paired(a: Callable[[], object], b: Callable[[], object], rounds: int) -> tuple[float, float]:
    ta, tb = [], []
    for _ in range(rounds):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    return statistics.median(ta), statistics.median(tb)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    n, rounds = args.rows, args.rounds
    print(f"load average {os.getloadavg()}, rows {n}, rounds {rounds}")
    vals = points(n)
    a, b = paired(lambda: wkb.bounds(vals), lambda: walk_all(vals), rounds)
    print(f"bounds  numpy points {a * 1e3:8.1f} ms  per-value walk {b * 1e3:8.1f} ms  ratio {a / b:.3f}")
    lines = pa.array([struct.pack("<BII", 1, 2, 4) + v[5:] * 4 for v in vals.to_pylist()], pa.binary())
    t = time.perf_counter()
    wkb.bounds(lines)
    print(f"bounds  4-vertex lines (per-value walk) {(time.perf_counter() - t) / n * 1e6:.2f} us/value")

    tmp = tempfile.mkdtemp()
    geo_schema = pa.schema([pa.field("id", pa.int64()), pa.field("g", pa.binary(), metadata=GEOM)])
    plain_schema = pa.schema([pa.field("id", pa.int64()), pa.field("g", pa.binary())])
    ids = pa.array(np.arange(n))
    geo_t = pa.Table.from_arrays([ids, vals], schema=geo_schema)
    plain_t = pa.Table.from_arrays([ids, vals], schema=plain_schema)
    k = [0]

    def write(t: pa.Table) -> None:
        k[0] += 1
        write_deltalake(os.path.join(tmp, f"w{k[0]}"), t)

    a, b = paired(lambda: write(geo_t), lambda: write(plain_t), rounds)
    print(f"write   geometry     {a * 1e3:8.1f} ms  plain binary   {b * 1e3:8.1f} ms  ratio {a / b:.3f}")

    path = os.path.join(tmp, "skip")
    per = max(1, n // 16)
    for i in range(16):  # file i holds points with x in [-180 + 22.5 i, -180 + 22.5 (i + 1))
        v = points(per, -180 + 22.5 * i, -180 + 22.5 * (i + 1) - 1e-9)
        write_deltalake(path, pa.Table.from_arrays([pa.array(np.arange(per)), v], schema=geo_schema), mode="append")
    dt = DeltaTable(path)
    box = (-179.0, -90.0, -170.0, 90.0)
    a, b = paired(lambda: dt.to_pyarrow_table(filters=intersects("g", box)), lambda: dt.to_pyarrow_table(), rounds)
    print(f"skip    1 of 16 files {a * 1e3:7.1f} ms  all 16 files   {b * 1e3:8.1f} ms  ratio {a / b:.3f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
