"""Shredded variant column vs its unshredded twin (issue 34): one typed path, and the whole column.

Tables (built under benchmarks/data/ on first use, untimed): `variant_shredded` and `variant_unshredded`, the same
N rows (default 1M, 4 files) of a variant `v` = {"a": long, "b": string, "c": {"d": double}}; 2 % of rows hold a
string in `a` (kept in the binary `value` next to the typed column). The shredded table stores `a`, `b`, `c.d` as
typed Parquet columns (the Parquet variant shredding layout Spark writes); the twin holds the same values as
`struct<metadata, value>` (built with `kernel.variant.unshred`, which reproduces Spark's bytes: tests/unit).

* one typed path: the value at `$.a` for every row - shredded reads `v.metadata`, `v.value` and `v.typed_value.a`
  only (`paths.path_columns`) and rebuilds `$.a` column-wise; unshredded reads `v` and looks `a` up in each row's
  binary (per row). Goal (issue 34): shredded <= 1.0x.
* whole column: `DeltaTable(path).to_pyarrow_table(columns=["v"])` - shredded pays the unshredding.

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
KEYS = ["a", "b", "c", "d"]


def _metadata() -> bytes:
    body = "".join(KEYS).encode()
    offs = [0, 1, 2, 3, 4]
    return bytes([0x01, len(KEYS), *offs]) + body


def _shredded(n: int, start: int):  # type: ignore[no-untyped-def]
    import numpy as np
    import pyarrow as pa

    i = np.arange(start, start + n)
    odd = i % 50 == 7  # 2 %: `a` is a string, held in the binary value
    a_typed = pa.array(np.where(odd, 0, i * 7), pa.int64(), mask=odd)
    a_value = pa.array([b"\x0dabc" if o else None for o in odd], pa.binary())  # short string "abc"
    group = lambda value, typed: pa.StructArray.from_arrays([value, typed], names=["value", "typed_value"])  # noqa: E731
    nulls = pa.nulls(n, pa.binary())
    c = pa.StructArray.from_arrays([group(nulls, pa.array(i * 0.5))], names=["d"])
    typed = pa.StructArray.from_arrays(
        [group(a_value, a_typed), group(nulls, pa.array([f"name{k % 1000}" for k in i])), group(nulls, c)],
        names=["a", "b", "c"])
    v = pa.StructArray.from_arrays([pa.array([_metadata()] * n, pa.binary()), nulls, typed],
                                   names=["metadata", "value", "typed_value"])
    return pa.table({"id": pa.array(i, pa.int64()), "v": v})


def build(rows: int) -> tuple[str, str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deltakernel.kernel.variant import unshred

    out = []
    for kind, features in (("shredded", ["variantType", "variantShredding"]), ("unshredded", ["variantType"])):
        root = DATA / f"variant_{kind}_{rows}"
        out.append(str(root))
        if (root / "_delta_log").exists():
            continue
        (root / "_delta_log").mkdir(parents=True)
        fields = [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                  {"name": "v", "type": "variant", "nullable": True, "metadata": {}}]
        actions: list[dict[str, object]] = [
            {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": features,
                          "writerFeatures": features}},
            {"metaData": {"id": kind, "format": {"provider": "parquet", "options": {}}, "partitionColumns": [],
                          "schemaString": json.dumps({"type": "struct", "fields": fields}), "configuration": {}}}]
        per = rows // 4
        for f in range(4):
            t = _shredded(per, f * per)
            if kind == "unshredded":
                v = unshred(t.column("v").combine_chunks())
                t = pa.table({"id": t.column("id"), "v": v})
            name = f"part-{f}.parquet"
            pq.write_table(t, root / name)
            actions.append({"add": {"path": name, "partitionValues": {}, "modificationTime": 0, "dataChange": True,
                                    "size": (root / name).stat().st_size,
                                    "stats": json.dumps({"numRecords": per})}})
        (root / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
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
    print(f"load after: {load_average()}", file=sys.stderr)
    print(json.dumps({"rows": args.rows, "results": report}, indent=1))


if __name__ == "__main__":
    main()
