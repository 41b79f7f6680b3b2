"""Shredded variant column vs its unshredded twin (issue 34): one typed path, the whole column, and the write.

Tables (built under benchmarks/data/ on first use, untimed), both *written by deltakernel* (`write_deltalake`):
`variant_shredded` (`delta.enableVariantShredding=true`: the file writer infers Spark's shredding schema and
shreds) and `variant_unshredded`, the same N rows (default 1M, 4 appends) of a variant
`v` = {"a": long, "b": string, "c": {"d": double}}; 2 % of rows lack `a` and hold a field `x` instead (left in
the binary `value`, a residual object, next to the typed columns).

* one typed path: the value at `$.a` for every row - shredded reads `v.metadata`, `v.value` and
  `v.typed_value.a` only (`paths.path_columns`) and rebuilds `$.a` column-wise; unshredded reads `v` and looks
  `a` up in each row's binary (per row). Goal (issue 34): shredded <= 1.0x.
* whole column: `DeltaTable(path).to_pyarrow_table(columns=["v"])` - shredded pays the unshredding.
* write: `write_deltalake` of the N rows (the unshredded column as input) into a new table, with shredding on
  (inference + shredding) vs off.

Usage: ``.venv/bin/python benchmarks/bench_variant.py [--rows N] [--repeat N]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import PRELOAD_DELTAKERNEL, ROOT, Contender, load_average, measure_all

DATA = ROOT / "benchmarks" / "data"
KEYS = ["a", "b", "c", "d", "x"]
SHREDDING = {"delta.enableVariantShredding": "true"}


def _metadata() -> bytes:
    body = "".join(KEYS).encode()
    return bytes([0x01, len(KEYS), *range(len(KEYS) + 1)]) + body


def _rows(n: int, start: int):  # type: ignore[no-untyped-def]
    """N rows as an unshredded variant column, built column-wise: the shredded layout assembled with numpy,
    then unshredded by the reader's code (itself checked byte for byte against Spark's files)."""
    import numpy as np
    import pyarrow as pa

    from deltakernel.kernel.variant import unshred
    from deltakernel.kernel.variant.binary import encode_object

    i = np.arange(start, start + n)
    odd = i % 50 == 7  # 2 %: no `a`, a field `x` = "abc" instead (residual object in `value`)
    residual = encode_object([("x", 4, b"\x0dabc")])
    group = lambda value, typed: pa.StructArray.from_arrays([value, typed], names=["value", "typed_value"])  # noqa: E731
    nulls = pa.nulls(n, pa.binary())
    c = pa.StructArray.from_arrays([group(nulls, pa.array(i * 0.5))], names=["d"])
    typed = pa.StructArray.from_arrays(
        [group(nulls, pa.array(np.where(odd, 0, i * 7), pa.int64(), mask=odd)),
         group(nulls, pa.array([f"name{k % 1000}" for k in i])), group(nulls, c)], names=["a", "b", "c"])
    value = pa.array([residual if o else None for o in odd], pa.binary())
    v = pa.StructArray.from_arrays([pa.array([_metadata()] * n, pa.binary()), value, typed],
                                   names=["metadata", "value", "typed_value"])
    tag = {b"ARROW:extension:name": b"arrow.parquet.variant", b"ARROW:extension:metadata": b""}
    plain = unshred(v)
    return pa.Table.from_arrays([pa.array(i, pa.int64()), plain], schema=pa.schema(
        [pa.field("id", pa.int64()), pa.field("v", plain.type, metadata=tag)]))


def build(rows: int) -> tuple[str, str]:
    from deltakernel import write_deltalake

    out = []
    for kind, conf in (("shredded", SHREDDING), ("unshredded", {})):
        root = DATA / f"variant_dk_{kind}_{rows}"
        out.append(str(root))
        if (root / "_delta_log").exists():
            continue
        per = rows // 4
        for f in range(4):
            write_deltalake(str(root), _rows(per, f * per), mode="append", configuration=conf or None)
    return out[0], out[1]


_SETUP = """
import pyarrow.parquet as pq
from deltakernel import DeltaTable
from deltakernel.kernel.variant.paths import extract_path, path_columns
files = DeltaTable(PARAMS["path"]).file_uris()
"""
_PATH_OP = """
found = 0
for f in files:
    pf = pq.ParquetFile(f)
    cols = path_columns("v", pf.schema_arrow.field("v").type, ("a",))
    col = pf.read(columns=cols).column("v").combine_chunks()
    found += len(col) - extract_path(col, ("a",)).null_count
result = found
"""
_FULL_OP = """
result = DeltaTable(PARAMS["path"]).to_pyarrow_table(columns=["v"]).num_rows
"""


def _alternate(cs: list[Contender], paths: dict[str, str], repeat: int, label: str) -> list:  # type: ignore[type-arg]
    """Paired runs: shredded then unshredded, `repeat` times (each run a fresh process)."""
    out = [measure_all([c], {"path": paths[c.name]}, 1, tag=label + " ")[0] for c in cs]
    for _ in range(repeat - 1):
        for m, c in zip(out, cs):
            nxt = measure_all([c], {"path": paths[c.name]}, 1, tag=label + " ")[0]
            m.seconds += nxt.seconds
            m.cpu += nxt.cpu
    return out


_WRITE_SETUP = """
import tempfile
from deltakernel import DeltaTable, write_deltalake
data = DeltaTable(PARAMS["source"]).to_pyarrow_table()
conf = PARAMS["conf"]
"""
_WRITE_OP = """
write_deltalake(tempfile.mkdtemp(dir=PARAMS["scratch"]), data, configuration=conf or None)
result = data.num_rows
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    shredded, plain = build(args.rows)
    print(f"load before: {load_average()}", file=sys.stderr)
    report = {}
    for label, op in (("one typed path ($.a)", _PATH_OP), ("whole column", _FULL_OP)):
        # setup: modules preloaded and the op run once untimed (numpy / pyarrow first-call costs, page cache)
        contenders = [Contender(name, PRELOAD_DELTAKERNEL + _SETUP + op, op) for name in ("shredded", "unshredded")]
        s, u = _alternate(contenders, {"shredded": shredded, "unshredded": plain}, args.repeat, label)
        if s.result != u.result:
            raise SystemExit(f"{label}: results differ: {s.result} vs {u.result}")
        report[label] = {"shredded_best_s": round(s.best, 4), "unshredded_best_s": round(u.best, 4),
                         "shredded_median_s": round(s.median, 4), "unshredded_median_s": round(u.median, 4),
                         "ratio_best": round(s.best / u.best, 2), "ratio_median": round(s.median / u.median, 2),
                         "result": s.result}
    import shutil
    import tempfile

    scratch = tempfile.mkdtemp(dir=DATA)
    try:
        params = {"shredded": {"source": plain, "conf": SHREDDING, "scratch": scratch},
                  "unshredded": {"source": plain, "conf": {}, "scratch": scratch}}
        ws = [Contender(name, PRELOAD_DELTAKERNEL + _WRITE_SETUP, _WRITE_OP) for name in ("shredded", "unshredded")]
        out = [measure_all([c], params[c.name], 1, tag="write ")[0] for c in ws]
        for _ in range(args.repeat - 1):
            for m, c in zip(out, ws):
                nxt = measure_all([c], params[c.name], 1, tag="write ")[0]
                m.seconds += nxt.seconds
                m.cpu += nxt.cpu
        s, u = out
        report["write"] = {"shredded_best_s": round(s.best, 4), "unshredded_best_s": round(u.best, 4),
                           "shredded_median_s": round(s.median, 4), "unshredded_median_s": round(u.median, 4),
                           "ratio_best": round(s.best / u.best, 2), "ratio_median": round(s.median / u.median, 2),
                           "result": s.result}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"load after: {load_average()}", file=sys.stderr)
    print(json.dumps({"rows": args.rows, "results": report}, indent=1))


if __name__ == "__main__":
    main()
