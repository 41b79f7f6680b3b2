"""Issue 9 section 9 through the PySpark engine: a hand-built local shallow clone (absolute `file:` paths
into the source table, one file with an absolute-path deletion vector) reads the source's rows."""

from __future__ import annotations

import json
import urllib.parse
import uuid

import pyarrow as pa

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.deletion_vectors import encode_dv_file, serialize_roaring_bitmap_array


def test_spark_reads_local_shallow_clone(spark, tmp_path):
    src = tmp_path / "src dir"
    data = pa.table({"id": pa.array(range(30), pa.int64()), "p": [f"v {i % 3}" for i in range(30)]})
    write_deltalake(str(src), data, partition_by=["p"], configuration={"delta.enableDeletionVectors": "true"})
    lines = (src / "_delta_log" / "00000000000000000000.json").read_text().splitlines()
    actions = [json.loads(x) for x in lines if x.strip()]
    enc = urllib.parse.quote(str(src))
    blob = serialize_roaring_bitmap_array([0])
    dv_bytes, offsets = encode_dv_file([blob])
    (src / "dv.bin").write_bytes(dv_bytes)
    out, first = [], True
    for a in actions:
        if "add" in a:
            add = dict(a["add"], path=f"file:{enc}/{a['add']['path']}")
            if first:  # row 0 of this file deleted through an absolute 'p' DV outside the clone's root
                add["deletionVector"] = {"storageType": "p", "pathOrInlineDv": f"file:{enc}/dv.bin",
                                         "offset": offsets[0], "sizeInBytes": len(blob), "cardinality": 1}
                first = False
            out.append({"add": add})
        elif "metaData" in a:
            out.append({"metaData": dict(a["metaData"], id=str(uuid.uuid4()))})
        elif "protocol" in a:
            out.append(a)
    clone = tmp_path / "clone"
    (clone / "_delta_log").mkdir(parents=True)
    (clone / "_delta_log" / "00000000000000000000.json").write_text("\n".join(json.dumps(x) for x in out))
    expected = sorted(DeltaTable(str(clone)).to_pyarrow_table().column("id").to_pylist())
    assert len(expected) == 29  # the kernel path applied the DV
    df = spark.read.format("delta").load(str(clone))
    assert sorted(r["id"] for r in df.select("id").collect()) == expected
    assert sorted(r["id"] for r in df.where("p = 'v 1'").select("id").collect()) == [
        i for i in expected if i % 3 == 1]
