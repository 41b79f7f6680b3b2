"""The public DeltaTable surface beyond plain reads: scans, streaming, datasets, add actions, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from deltakernel import DeltaTable
from deltakernel.cli import main as cli_main
from deltakernel.errors import InvalidFilterError, SchemaError, UnsupportedFeatureError

deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def parted(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = str(tmp_path_factory.mktemp("api") / "t")
    for i in range(4):
        deltalake.write_deltalake(
            p,
            pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                      "p": [f"k{i % 2}"] * 100, "v": [float(j) for j in range(100)]}),
            partition_by=["p"], mode="append",
        )
    return p


def test_scan_metrics_and_pruning(parted: str) -> None:
    t = DeltaTable(parted)
    scan = t.scan(filters=[("p", "=", "k1")])
    out = scan.to_table()
    assert out.num_rows == 200 and set(out.column("p").to_pylist()) == {"k1"}
    assert scan.metrics.files_total == 4 and scan.metrics.files_skipped == 2
    stats_scan = t.scan(filters=pc.field("id") >= 350)
    assert stats_scan.to_table().num_rows == 50
    assert stats_scan.metrics.files_skipped == 3  # only the file with ids 300..399 can match


def test_columns_filters_and_count(parted: str) -> None:
    t = DeltaTable(parted)
    out = t.to_pyarrow_table(columns=["v", "id"], filters=[("id", "<", 5)])
    assert out.column_names == ["v", "id"] and out.num_rows == 5
    assert t.count() == 400
    assert t.count(filters=[("p", "=", "k0")]) == 200
    assert t.to_pandas(columns=["id"]).shape == (400, 1)
    with pytest.raises(SchemaError):
        t.to_pyarrow_table(columns=["nope"])
    with pytest.raises(InvalidFilterError):
        t.to_pyarrow_table(filters=[("nope", "=", 1)])


def test_to_batches_streams(parted: str) -> None:
    t = DeltaTable(parted)
    seen = 0
    schemas = set()
    for batch in t.to_batches(batch_size=30):
        assert batch.num_rows <= 30
        seen += batch.num_rows
        schemas.add(batch.schema)
    assert seen == 400 and len(schemas) == 1
    reader = t.to_pyarrow_reader(columns=["id"])
    assert reader.read_all().num_rows == 400
    assert pa.table(t).num_rows == 400  # __arrow_c_stream__


def test_dataset_view(parted: str) -> None:
    ds = DeltaTable(parted).to_pyarrow_dataset()
    got = ds.to_table(filter=pc.field("p") == "k0")
    assert got.num_rows == 200 and set(got.column("p").to_pylist()) == {"k0"}
    assert ds.count_rows() == 400


def test_dataset_view_refuses_deletion_vectors(conformance_dir: Path) -> None:
    t = DeltaTable(str(conformance_dir / "tables/kernel-rs/data/table-with-dv-small"))
    with pytest.raises(UnsupportedFeatureError) as e:
        t.to_pyarrow_dataset()
    assert e.value.feature == "deletionVectors"
    assert t.to_pyarrow_table().num_rows == 8  # 10 rows, 2 deleted


def test_dataset_view_refuses_column_mapping(conformance_dir: Path) -> None:
    t = DeltaTable(str(conformance_dir / "tables/dat/column_mapping/delta"))
    with pytest.raises(UnsupportedFeatureError):
        t.to_pyarrow_dataset()


def test_files_and_add_actions(parted: str) -> None:
    t = DeltaTable(parted)
    assert len(t.files()) == 4
    assert sorted(t.file_uris()) == sorted(deltalake.DeltaTable(parted).file_uris())
    assert len(t.files(partition_filters=[("p", "=", "k1")])) == 2
    with pytest.raises(InvalidFilterError):
        t.files(partition_filters=[("id", "=", 1)])  # not a partition column
    actions = t.get_add_actions(flatten=True)
    assert set(actions.column("partition.p").to_pylist()) == {"k0", "k1"}
    assert sum(actions.column("num_records").to_pylist()) == 400
    assert sorted(actions.column("min.id").to_pylist()) == [0, 100, 200, 300]
    theirs = pa.table(deltalake.DeltaTable(parted).get_add_actions(flatten=True))
    assert sorted(actions.column("max.v").to_pylist()) == sorted(theirs.column("max.v").to_pylist())


def test_is_deltatable(parted: str, tmp_path: Path) -> None:
    assert DeltaTable.is_deltatable(parted)
    assert not DeltaTable.is_deltatable(str(tmp_path))


def test_cli(parted: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["info", parted, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["version"] == 3 and info["partition_columns"] == ["p"] and info["num_files"] == 4
    assert cli_main(["history", parted, "--limit", "2", "--json"]) == 0
    assert [e["version"] for e in json.loads(capsys.readouterr().out)] == [3, 2]  # one JSON array
    assert cli_main(["history", parted, "--limit", "2"]) == 0  # for people: a header, then one line per commit
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:3] == ["version", "timestamp", "operation"]
    assert [int(x.split()[0]) for x in lines[1:]] == [3, 2]
    assert cli_main(["files", parted]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 4
    assert cli_main(["schema", parted, "--json"]) == 0
    assert [f["name"] for f in json.loads(capsys.readouterr().out)["fields"]] == ["id", "p", "v"]
    assert cli_main(["head", parted, "-n", "3", "--version", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 4  # header + 3 rows
    assert cli_main(["count", parted]) == 0
    assert capsys.readouterr().out.strip() == "400"
    assert cli_main(["info", parted + "-missing"]) == 1
    assert "TableNotFoundError" in capsys.readouterr().err
