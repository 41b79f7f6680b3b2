"""Collated string columns (the `collations` writer feature): written as delta-spark writes them, and never
skipped on binary statistics a collation-aware filter could contradict ('a' = 'A' under UTF8_LCASE)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from deltakernel import DeltaTable, write_deltalake
from deltakernel.kernel.expressions.predicate import Column, Comparison, Literal
from deltakernel.kernel.scan.skipping import file_skipping_mask


def _table(ids: list[int], names: list[str], collation: str = "spark.UTF8_LCASE", part: str | None = None) -> pa.Table:
    meta = {b"__COLLATIONS": json.dumps({"name": collation}).encode()}
    cols = {"id": pa.array(ids, pa.int64()), "name": pa.array(names, pa.string())}
    fields = [pa.field("id", pa.int64()), pa.field("name", pa.string(), metadata=meta)]
    if part is not None:
        cols["p"] = pa.array([part] * len(ids))
        fields.append(pa.field("p", pa.string(), metadata={b"__COLLATIONS": b'{"p":"spark.UTF8_LCASE"}'}))
    return pa.Table.from_arrays(list(cols.values()), schema=pa.schema(fields))


def _log(path: str, version: int = 0) -> list[dict]:
    text = Path(path, "_delta_log", f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _keep(path: str, expr) -> list[bool]:
    snap = DeltaTable(path)._snapshot
    return file_skipping_mask(snap, snap.files, expr).to_pylist()


def test_written_like_delta_spark(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _table([1], ["A"]))
    write_deltalake(path, _table([2], ["b"]), mode="append")
    log = _log(path)
    proto = next(a["protocol"] for a in log if "protocol" in a)
    assert proto["minReaderVersion"] == 1 and sorted(proto["writerFeatures"]) == ["collations", "domainMetadata"]
    field = json.loads(next(a["metaData"] for a in log if "metaData" in a)["schemaString"])["fields"][1]
    assert field["metadata"] == {"__COLLATIONS": {"name": "spark.UTF8_LCASE"}}  # an object, as Spark writes it
    assert sorted(DeltaTable(path).to_pyarrow_table().column("id").to_pylist()) == [1, 2]


def test_preview_feature_is_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _table([1], ["A"]), configuration={"delta.feature.collations-preview": "supported"})
    write_deltalake(path, _table([2], ["b"]), mode="append")
    proto = next(a["protocol"] for a in _log(path) if "protocol" in a)
    assert "collations-preview" in proto["writerFeatures"] and "collations" not in proto["writerFeatures"]
    assert DeltaTable(path).to_pyarrow_table().num_rows == 2


def test_no_binary_stats_skipping_on_a_non_binary_collation(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _table([1], ["A"]))
    write_deltalake(path, _table([2], ["b"]), mode="append")
    # the first file's binary bounds are [A, A]: binary skipping would rule it out for name = 'a', but a
    # UTF8_LCASE filter matches 'A' there
    assert _keep(path, Comparison("=", Column("name"), Literal("a"))) == [True, True]
    assert _keep(path, Comparison(">", Column("name"), Literal("z"))) == [True, True]
    assert _keep(path, Comparison("=", Column("id"), Literal(2))) == [False, True]  # other columns still skip
    binary = str(tmp_path / "binary")
    write_deltalake(binary, _table([1], ["A"], collation="spark.UTF8_BINARY"))
    write_deltalake(binary, _table([2], ["b"], collation="spark.UTF8_BINARY"), mode="append")
    assert _keep(binary, Comparison("=", Column("name"), Literal("a"))) == [False, False]


def test_no_partition_pruning_on_a_non_binary_collation(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, _table([1], ["x"], part="A"), partition_by=["p"])
    write_deltalake(path, _table([2], ["y"], part="b"), mode="append")
    assert _keep(path, Comparison("=", Column("p"), Literal("a"))) == [True, True]
